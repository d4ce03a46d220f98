//! Path confinement: every path a built-in tool touches is resolved against
//! the workspace root, canonicalized, and refused unless it stays inside.
//!
//! This is a guard against a model wandering off, not a sandbox: a process
//! with the same rights can still reach anything those rights allow (and
//! `bash` is not confined by it at all).

use std::fmt;
use std::fs::{File, OpenOptions};
use std::io;
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// Longest path (in bytes) a tool may name; Linux's PATH_MAX.
pub const MAX_PATH_BYTES: usize = 4096;
/// Longest single name in a path; the common file-system limit.
pub const MAX_NAME_BYTES: usize = 255;

/// Why a path was refused. Its text is what the model reads as the tool error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PathRefused {
    /// The path was empty.
    Empty,
    /// The path holds a NUL, newline or other control character.
    ControlCharacter,
    /// The path, or one name in it, is longer than the limits above.
    TooLong,
    /// The path resolves (through `..`, an absolute path or a symlink) to a
    /// place outside the workspace.
    OutsideWorkspace(String),
    /// The path does not exist (for reading).
    NotFound(String),
    /// Another I/O error while resolving or opening the path.
    Io(String),
}

impl fmt::Display for PathRefused {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathRefused::Empty => write!(f, "the path is empty"),
            PathRefused::ControlCharacter => {
                write!(
                    f,
                    "the path contains a NUL, newline or other control character"
                )
            }
            PathRefused::TooLong => write!(
                f,
                "the path is too long (at most {MAX_PATH_BYTES} bytes, {MAX_NAME_BYTES} per name)"
            ),
            PathRefused::OutsideWorkspace(p) => write!(
                f,
                "'{p}' is outside the workspace; only paths inside the workspace root can be used"
            ),
            PathRefused::NotFound(p) => write!(f, "'{p}' does not exist in the workspace"),
            PathRefused::Io(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for PathRefused {}

/// A workspace root: an existing folder, held canonicalized.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    root: PathBuf,
}

impl Workspace {
    /// Opens `root`, which must be an existing folder.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when `root` does not exist or is not a folder.
    pub fn new(root: impl AsRef<Path>) -> Result<Self> {
        let given = root.as_ref();
        let root = given
            .canonicalize()
            .map_err(|e| Error::InvalidArgument(format!("workspace '{}': {e}", given.display())))?;
        if !root.is_dir() {
            return Err(Error::InvalidArgument(format!(
                "workspace '{}' is not a folder",
                given.display()
            )));
        }
        Ok(Workspace { root })
    }

    /// The canonical root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Resolves an existing path (relative to the root, or absolute inside
    /// it) to its canonical form, following symlinks, and checks it is inside.
    /// A missing path that would lie outside is refused as outside: what
    /// exists beyond the root is none of the model's business.
    pub fn resolve_existing(&self, path: &str) -> std::result::Result<PathBuf, PathRefused> {
        let joined = self.join(path)?;
        let real = joined.canonicalize().map_err(|e| {
            match (not_found_or_io(path, &e), self.resolve_for_write(path)) {
                (PathRefused::NotFound(_), Err(outside @ PathRefused::OutsideWorkspace(_))) => {
                    outside
                }
                (refused, _) => refused,
            }
        })?;
        self.inside(path, real)
    }

    /// Resolves a path that may not exist yet (for writing): its deepest
    /// existing ancestor is canonicalized and must be inside; the names after
    /// it may not contain `..`. An existing target (or a dangling symlink,
    /// which could point anywhere) is resolved as a whole.
    pub fn resolve_for_write(&self, path: &str) -> std::result::Result<PathBuf, PathRefused> {
        let joined = self.join(path)?;
        if joined.symlink_metadata().is_ok() {
            let real = joined.canonicalize().map_err(|_| outside(path))?;
            return self.inside(path, real);
        }
        let mut existing = joined.as_path();
        let mut tail = Vec::new();
        while existing.symlink_metadata().is_err() {
            let name = match existing.components().next_back() {
                Some(Component::Normal(name)) => name,
                _ => return Err(outside(path)),
            };
            tail.push(name.to_owned());
            existing = existing.parent().ok_or_else(|| outside(path))?;
        }
        // A `..` in the missing part has no file name, so it is refused
        // above: only plain names are appended to the canonical ancestor.
        let mut real = existing.canonicalize().map_err(|e| io_error(path, &e))?;
        real.extend(tail.iter().rev());
        self.inside(path, real)
    }

    /// Opens an existing file for reading, then checks the opened file is
    /// still inside (a symlink swapped in after the check is caught here).
    pub fn open_read(&self, path: &str) -> std::result::Result<File, PathRefused> {
        let real = self.resolve_existing(path)?;
        self.open_resolved_read(path, &real)
    }

    /// Opens for reading a path resolved earlier by [`Self::resolve_existing`]
    /// (`path` is the name the model gave, for messages). Whatever was swapped
    /// in since the check, the opened file must be inside the root.
    pub fn open_resolved_read(
        &self,
        path: &str,
        real: &Path,
    ) -> std::result::Result<File, PathRefused> {
        let file = File::open(real).map_err(|e| not_found_or_io(path, &e))?;
        self.check_opened(path, &file)?;
        Ok(file)
    }

    /// Opens (creating if needed, never truncating before the check) a file
    /// for writing, with its parent folders created; the opened file is
    /// checked to be inside before it is emptied.
    pub fn open_write(&self, path: &str) -> std::result::Result<File, PathRefused> {
        let real = self.resolve_for_write(path)?;
        if let Some(parent) = real.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(path, &e))?;
            // The parents might have been swapped for a symlink meanwhile.
            let parent_real = parent.canonicalize().map_err(|e| io_error(path, &e))?;
            self.inside(path, parent_real)?;
        }
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(&real)
            .map_err(|e| io_error(path, &e))?;
        self.check_opened(path, &file)?;
        file.set_len(0).map_err(|e| io_error(path, &e))?;
        Ok(file)
    }

    fn join(&self, path: &str) -> std::result::Result<PathBuf, PathRefused> {
        if path.is_empty() {
            return Err(PathRefused::Empty);
        }
        if path.chars().any(char::is_control) {
            return Err(PathRefused::ControlCharacter);
        }
        let too_long_name = Path::new(path)
            .components()
            .any(|c| c.as_os_str().len() > MAX_NAME_BYTES);
        if path.len() > MAX_PATH_BYTES || too_long_name {
            return Err(PathRefused::TooLong);
        }
        Ok(self.root.join(path))
    }

    fn inside(&self, path: &str, real: PathBuf) -> std::result::Result<PathBuf, PathRefused> {
        if real.starts_with(&self.root) {
            Ok(real)
        } else {
            Err(outside(path))
        }
    }

    /// Where the kernel says an open file is, on Linux through /proc; other
    /// systems keep the check made before opening.
    fn check_opened(&self, path: &str, file: &File) -> std::result::Result<(), PathRefused> {
        #[cfg(target_os = "linux")]
        {
            use std::os::fd::AsRawFd;
            let link = format!("/proc/self/fd/{}", file.as_raw_fd());
            if let Ok(real) = std::fs::read_link(link) {
                self.inside(path, real)?;
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (path, file);
        Ok(())
    }
}

fn outside(path: &str) -> PathRefused {
    PathRefused::OutsideWorkspace(path.to_string())
}

fn io_error(path: &str, e: &io::Error) -> PathRefused {
    PathRefused::Io(format!("'{path}': {e}"))
}

fn not_found_or_io(path: &str, e: &io::Error) -> PathRefused {
    if e.kind() == io::ErrorKind::NotFound {
        PathRefused::NotFound(path.to_string())
    } else {
        io_error(path, e)
    }
}
