//! Walking the workspace the way a developer expects: `.gitignore` and
//! `.ignore` honoured (in a git repository or not), `.git`, `target` and
//! `node_modules` skipped, symlinks not followed (so a link cannot lead the
//! walk out of the workspace), with a time bound and the call's cancel
//! token (the chat's stop, the tool's time limit).

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use ignore::{DirEntry, WalkBuilder};

use crate::cancel::CancelToken;

/// Folders never listed or searched: tools' output, not the project.
const SKIPPED: &[&str] = &[".git", "target", "node_modules"];

/// How long one walk may take.
pub const WALK_TIME_LIMIT: Duration = Duration::from_secs(10);

/// Why a walk ended before it saw everything.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The time bound.
    Time,
    /// The call was cancelled (the chat was stopped or the tool's time
    /// limit passed).
    Stopped,
}

/// Walks `start` (inside `root`) to `depth`, calling `visit` with each
/// entry's path relative to `root` until it returns false, `cancel` is set
/// or [`WALK_TIME_LIMIT`] has passed.
pub fn walk(
    root: &Path,
    start: &Path,
    depth: Option<usize>,
    cancel: &CancelToken,
    visit: impl FnMut(&DirEntry, &str) -> bool,
) -> Option<Cut> {
    walk_within(root, start, depth, cancel, WALK_TIME_LIMIT, visit)
}

/// [`walk`] with another time bound (a test's short one): the walk ends
/// before the first entry met once `time_limit` has passed.
pub fn walk_within(
    root: &Path,
    start: &Path,
    depth: Option<usize>,
    cancel: &CancelToken,
    time_limit: Duration,
    mut visit: impl FnMut(&DirEntry, &str) -> bool,
) -> Option<Cut> {
    let started = Instant::now();
    let walker = WalkBuilder::new(start)
        .hidden(false)
        .require_git(false)
        .follow_links(false)
        .max_depth(depth)
        .sort_by_file_path(|a, b| a.cmp(b))
        .filter_entry(|e| !SKIPPED.iter().any(|s| e.file_name() == *s))
        .build();
    for entry in walker.flatten() {
        if cancel.is_cancelled() {
            return Some(Cut::Stopped);
        }
        if started.elapsed() > time_limit {
            return Some(Cut::Time);
        }
        if entry.depth() == 0 {
            continue;
        }
        let relative = relative(root, entry.path());
        if !visit(&entry, &relative) {
            break;
        }
    }
    None
}

/// `path` relative to `root`, with `/` separators.
fn relative(root: &Path, path: &Path) -> String {
    let rel: PathBuf = path.strip_prefix(root).unwrap_or(path).to_path_buf();
    rel.to_string_lossy().replace('\\', "/")
}

/// What a cut walk adds to a result's text.
pub fn cut_note(cut: Option<Cut>) -> Option<&'static str> {
    match cut? {
        Cut::Time => Some("[stopped after 10 s; narrow the path or pattern]"),
        Cut::Stopped => Some("[stopped: the call was cancelled]"),
    }
}
