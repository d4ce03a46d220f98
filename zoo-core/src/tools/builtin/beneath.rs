//! Opening a file beneath the workspace root one name at a time, never
//! following a symbolic link.
//!
//! [`super::Workspace`] checks a path (canonicalized, inside the root) before
//! a tool uses it; between that check and the open, a folder on the way or
//! the file itself can be swapped for a symlink to somewhere else. Opening
//! the canonical path whole would follow it (and, for a write, create a file
//! or folders out there). Here every folder is opened relative to the one
//! before it with `O_NOFOLLOW`, missing folders are made with `mkdirat` in the
//! folder already held, and the file is opened with `openat` and
//! `O_NOFOLLOW`: a symlink met anywhere on the way is refused, and nothing is
//! created outside. The canonical path has no symlinks in it, so a symlink
//! met here was put there after the check.

use std::ffi::OsStr;
use std::fs::File;
use std::io;
use std::os::fd::{AsFd, OwnedFd};
use std::path::{Component, Path};

use rustix::fs::{self as rfs, AtFlags, FileType, Mode, OFlags};
use rustix::io::Errno;

use super::refused::PathRefused;

/// What the file is opened for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Access {
    /// Reading an existing file.
    Read,
    /// Writing, creating the file and its missing folders.
    Write,
}

/// How every folder on the way is opened: a symlink fails with `ELOOP` (or
/// `ENOTDIR`) instead of being followed.
const FOLDER: OFlags = OFlags::RDONLY
    .union(OFlags::DIRECTORY)
    .union(OFlags::NOFOLLOW)
    .union(OFlags::CLOEXEC);

/// Opens the folder that holds `rel` (a canonical path relative to `root`,
/// so plain names only), creating missing folders for [`Access::Write`];
/// returns it with the file's own name. `path` is the model's name, for
/// messages.
pub(super) fn open_parent<'a>(
    root: &Path,
    rel: &'a Path,
    path: &str,
    access: Access,
) -> Result<(OwnedFd, &'a OsStr), PathRefused> {
    let mut names = rel
        .components()
        .map(|c| match c {
            Component::Normal(name) => Ok(name),
            _ => Err(PathRefused::OutsideWorkspace(path.to_string())),
        })
        .collect::<Result<Vec<_>, _>>()?;
    // An empty `rel` is the root itself, a folder.
    let name = names
        .pop()
        .ok_or_else(|| PathRefused::NotRegularFile(path.to_string(), "folder"))?;
    let mut dir = rfs::open(root, FOLDER, Mode::empty()).map_err(|e| io_error(path, e))?;
    for folder in names {
        dir = open_folder(&dir, folder, path, access)?;
    }
    Ok((dir, name))
}

/// Opens the regular file `name` in `dir` without following a symlink; for
/// [`Access::Write`] it is created if missing (never truncated here).
pub(super) fn open_file(
    dir: &OwnedFd,
    name: &OsStr,
    path: &str,
    access: Access,
) -> Result<File, PathRefused> {
    let how = match access {
        Access::Read => OFlags::RDONLY,
        Access::Write => OFlags::WRONLY | OFlags::CREATE,
    };
    // NONBLOCK: opening a named pipe would otherwise wait for its other end
    // (forever, for a pipe nobody uses); it changes nothing for a regular
    // file, and anything else is refused below.
    let flags = how | OFlags::NOFOLLOW | OFlags::CLOEXEC | OFlags::NONBLOCK;
    let fd = rfs::openat(dir, name, flags, Mode::from_bits_truncate(0o666))
        .map_err(|e| refused(dir, name, path, e))?;
    let stat = rfs::fstat(&fd).map_err(|e| io_error(path, e))?;
    match FileType::from_raw_mode(stat.st_mode) {
        FileType::RegularFile => Ok(File::from(fd)),
        other => Err(PathRefused::NotRegularFile(
            path.to_string(),
            kind_name(other),
        )),
    }
}

/// Opens the folder `name` in `dir`, making it first when it is missing and
/// the access writes.
fn open_folder(
    dir: &OwnedFd,
    name: &OsStr,
    path: &str,
    access: Access,
) -> Result<OwnedFd, PathRefused> {
    match rfs::openat(dir, name, FOLDER, Mode::empty()) {
        Err(Errno::NOENT) if access == Access::Write => {
            // Another writer may make it meanwhile: that is fine, it is
            // opened below like any existing folder.
            match rfs::mkdirat(dir, name, Mode::from_bits_truncate(0o777)) {
                Ok(()) | Err(Errno::EXIST) => {}
                Err(e) => return Err(io_error(path, e)),
            }
            rfs::openat(dir, name, FOLDER, Mode::empty()).map_err(|e| refused(dir, name, path, e))
        }
        opened => opened.map_err(|e| refused(dir, name, path, e)),
    }
}

/// The refusal for a failed open of `name` in `dir`: what is there now (not
/// following it) says whether it was swapped for a symlink, is not a regular
/// file or folder, or is missing.
fn refused(dir: impl AsFd, name: &OsStr, path: &str, e: Errno) -> PathRefused {
    if e == Errno::NOENT {
        return PathRefused::NotFound(path.to_string());
    }
    if e == Errno::ISDIR {
        return PathRefused::NotRegularFile(path.to_string(), "folder");
    }
    match rfs::statat(dir, name, AtFlags::SYMLINK_NOFOLLOW) {
        Ok(stat) => match FileType::from_raw_mode(stat.st_mode) {
            FileType::Symlink => PathRefused::Swapped(path.to_string()),
            FileType::RegularFile | FileType::Directory => io_error(path, e),
            other => PathRefused::NotRegularFile(path.to_string(), kind_name(other)),
        },
        Err(_) => io_error(path, e),
    }
}

/// How a kind of file is named in a refusal.
fn kind_name(kind: FileType) -> &'static str {
    match kind {
        FileType::Directory => "folder",
        FileType::Fifo => "named pipe",
        FileType::Socket => "socket",
        FileType::CharacterDevice | FileType::BlockDevice => "device",
        FileType::Symlink => "symbolic link",
        _ => "special file",
    }
}

fn io_error(path: &str, e: Errno) -> PathRefused {
    PathRefused::Io(format!("'{path}': {}", io::Error::from(e)))
}
