//! Why a path given to a built-in tool was refused: the text is what the
//! model reads as the tool error.

use std::fmt;

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
    /// The path names a folder, a named pipe or another thing that is not
    /// a regular file (the second field names which), where a file is needed.
    NotRegularFile(String, &'static str),
    /// A folder on the path or the file itself became a symbolic link
    /// between the check and the open (a symlink race): nothing was opened.
    Swapped(String),
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
            PathRefused::NotRegularFile(p, kind) => {
                write!(f, "'{p}' is a {kind}, not a regular file")
            }
            PathRefused::Swapped(p) => write!(
                f,
                "'{p}' was swapped for a symbolic link after it was checked; it was not opened"
            ),
            PathRefused::Io(m) => write!(f, "{m}"),
        }
    }
}

impl std::error::Error for PathRefused {}
