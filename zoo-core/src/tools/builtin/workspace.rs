//! Path confinement: every path a built-in tool touches is resolved against
//! the workspace root, canonicalized, and refused unless it stays inside.
//!
//! This is a guard against a model wandering off, not a sandbox: a process
//! with the same rights can still reach anything those rights allow (and
//! `bash` is not confined by it at all).

use std::fs::File;
use std::io;
#[cfg(unix)]
use std::os::fd::AsRawFd;
use std::path::{Component, Path, PathBuf};

#[cfg(unix)]
use super::beneath::{self, Access};
pub use super::refused::{PathRefused, MAX_NAME_BYTES, MAX_PATH_BYTES};

use crate::error::{Error, Result};

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
    /// in since the check, the opened file must be inside the root: see
    /// [`Self::open_resolved_write`].
    pub fn open_resolved_read(
        &self,
        path: &str,
        real: &Path,
    ) -> std::result::Result<File, PathRefused> {
        #[cfg(unix)]
        return self.open_beneath(path, real, Access::Read);
        #[cfg(not(unix))]
        return self.open_whole(path, real, false);
    }

    /// Opens (creating it and its missing parent folders) a file for
    /// writing, emptied once it is known to be inside.
    pub fn open_write(&self, path: &str) -> std::result::Result<File, PathRefused> {
        let real = self.resolve_for_write(path)?;
        self.open_resolved_write(path, &real)
    }

    /// Opens for writing a path resolved earlier by
    /// [`Self::resolve_for_write`] or [`Self::resolve_existing`], creating
    /// missing folders and the file, then empties it.
    ///
    /// A folder or the file swapped for a symlink since the check is refused
    /// ([`PathRefused::Swapped`]) and nothing is created or changed outside
    /// the root: on Unix the folders are opened one name at a time from the
    /// root without following symlinks and the file is opened relative to
    /// its folder, whose real place is checked first (on Linux); on other
    /// systems the path is opened whole and only the check made before holds.
    pub fn open_resolved_write(
        &self,
        path: &str,
        real: &Path,
    ) -> std::result::Result<File, PathRefused> {
        #[cfg(unix)]
        let file = self.open_beneath(path, real, Access::Write)?;
        #[cfg(not(unix))]
        let file = self.open_whole(path, real, true)?;
        file.set_len(0).map_err(|e| io_error(path, &e))?;
        Ok(file)
    }

    #[cfg(unix)]
    fn open_beneath(
        &self,
        path: &str,
        real: &Path,
        access: Access,
    ) -> std::result::Result<File, PathRefused> {
        let rel = real.strip_prefix(&self.root).map_err(|_| outside(path))?;
        let (dir, name) = beneath::open_parent(&self.root, rel, path, access)?;
        // A folder on the way may have been moved out of the root (a rename
        // is no symlink): where the opened folder is now is what counts.
        self.check_opened(path, &dir)?;
        let file = beneath::open_file(&dir, name, path, access)?;
        self.check_opened(path, &file)?;
        Ok(file)
    }

    /// Without `openat` and `O_NOFOLLOW` the path is opened whole: only the
    /// check made before holds.
    #[cfg(not(unix))]
    fn open_whole(
        &self,
        path: &str,
        real: &Path,
        write: bool,
    ) -> std::result::Result<File, PathRefused> {
        self.inside(path, real.to_path_buf())?;
        if !write {
            return File::open(real).map_err(|e| not_found_or_io(path, &e));
        }
        if let Some(parent) = real.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io_error(path, &e))?;
        }
        std::fs::OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(false)
            .open(real)
            .map_err(|e| io_error(path, &e))
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

    /// Where the kernel says an open file or folder is, on Linux through
    /// /proc. Without /proc (a chroot that lacks it) the name-by-name open
    /// still refused every symlink on the way; only a folder renamed out of
    /// the root during the open would go unseen, so the check is skipped
    /// rather than refusing every file.
    #[cfg(unix)]
    fn check_opened(&self, path: &str, fd: &impl AsRawFd) -> std::result::Result<(), PathRefused> {
        #[cfg(target_os = "linux")]
        {
            let link = format!("/proc/self/fd/{}", fd.as_raw_fd());
            if let Ok(real) = std::fs::read_link(link) {
                self.inside(path, real)?;
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = (path, fd);
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
