//! `list_files`: the files and folders under a path, filtered by a glob.

use std::sync::Arc;

use globset::{Glob, GlobMatcher};
use serde_json::{json, Value};

use super::walk::{cut_note, walk};
use super::{Outcome, Workspace};
use crate::error::Result;
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// Entries listed at most; the rest is counted.
pub const MAX_ENTRIES: usize = 200;
/// Depth when none is given.
const DEFAULT_DEPTH: usize = 10;

/// Builds the tool on `ws`.
pub fn tool(ws: Arc<Workspace>) -> Result<Tool> {
    Tool::with_output(
        "list_files",
        "List files and folders in the workspace (folders end with /). Skips .git, \
         target, node_modules and what .gitignore ignores.",
        json!({
            "type": "object",
            "properties": {
                "path": {"type": "string", "description": "Folder to list, relative to the workspace (default: all of it)"},
                "pattern": {"type": "string", "description": "Glob the paths must match, e.g. **/*.rs"},
                "depth": {"type": "integer", "minimum": 1, "maximum": 100, "description": "How deep to go (default 10)"}
            },
            "additionalProperties": false
        }),
        move |args, ctx| list(&ws, &args, ctx),
    )
}

fn list(ws: &Workspace, args: &Value, ctx: &ToolContext) -> Outcome {
    let path = args.get("path").and_then(Value::as_str).unwrap_or(".");
    let start = ws.resolve_existing(path).map_err(|e| e.to_string())?;
    if !start.is_dir() {
        return Err(format!("'{path}' is a file, not a folder; use read_file"));
    }
    let matcher = glob(args.get("pattern").and_then(Value::as_str))?;
    let depth = args
        .get("depth")
        .and_then(Value::as_u64)
        .map_or(DEFAULT_DEPTH, |d| d as usize);
    let mut entries = Vec::new();
    let mut more = 0usize;
    let cut = walk(
        ws.root(),
        &start,
        Some(depth),
        ctx.cancel_token(),
        |entry, relative| {
            let is_dir = entry.file_type().is_some_and(|t| t.is_dir());
            if matcher.as_ref().is_none_or(|m| m.is_match(relative)) {
                if entries.len() < MAX_ENTRIES {
                    entries.push(if is_dir {
                        format!("{relative}/")
                    } else {
                        relative.to_owned()
                    });
                } else {
                    more += 1;
                }
            }
            true
        },
    );
    let mut text = if entries.is_empty() {
        "No files match.".to_owned()
    } else {
        entries.join("\n")
    };
    if more > 0 {
        text.push_str(&format!(
            "\n[{more} more not shown; narrow the path or pattern]"
        ));
    }
    if let Some(note) = cut_note(cut) {
        text.push_str(&format!("\n{note}"));
    }
    Ok(ToolOutput::text(text)
        .with_details(json!({"path": path, "count": entries.len(), "more": more})))
}

/// A glob over paths relative to the workspace; a pattern without a `/`
/// also matches in any folder (`*.rs` finds `src/main.rs`).
pub(super) fn glob(pattern: Option<&str>) -> std::result::Result<Option<GlobMatcher>, String> {
    let Some(pattern) = pattern.filter(|p| !p.is_empty()) else {
        return Ok(None);
    };
    let full = if pattern.contains('/') {
        pattern.to_owned()
    } else {
        format!("**/{pattern}")
    };
    Glob::new(&full)
        .map(|g| Some(g.compile_matcher()))
        .map_err(|e| format!("invalid glob '{pattern}': {e}"))
}
