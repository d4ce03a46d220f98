//! Hostile-path battery for the built-in tools' workspace confinement.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};

use zoo_core::tools::builtin::{PathRefused, Workspace};

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-ws-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A workspace folder `ws` inside a temp dir, with `outside.txt` next to it.
fn setup() -> (TempDir, Workspace) {
    let tmp = TempDir::new();
    std::fs::create_dir(tmp.0.join("ws")).unwrap();
    std::fs::create_dir(tmp.0.join("ws/sub")).unwrap();
    std::fs::write(tmp.0.join("ws/sub/a.txt"), "inside").unwrap();
    std::fs::write(tmp.0.join("outside.txt"), "secret").unwrap();
    let ws = Workspace::new(tmp.0.join("ws")).unwrap();
    (tmp, ws)
}

fn is_outside(r: Result<PathBuf, PathRefused>) -> bool {
    matches!(r, Err(PathRefused::OutsideWorkspace(_)))
}

#[test]
fn inside_paths_resolve() {
    let (_tmp, ws) = setup();
    let real = ws.resolve_existing("sub/a.txt").unwrap();
    assert_eq!(real, ws.root().join("sub/a.txt"));
    assert_eq!(ws.resolve_existing("sub/../sub/a.txt").unwrap(), real);
    let abs = ws.root().join("sub/a.txt");
    assert_eq!(ws.resolve_existing(abs.to_str().unwrap()).unwrap(), real);
    assert_eq!(
        ws.resolve_for_write("new/deeper/b.txt").unwrap(),
        ws.root().join("new/deeper/b.txt")
    );
    assert!(matches!(
        ws.resolve_existing("nope.txt"),
        Err(PathRefused::NotFound(_))
    ));
}

#[test]
fn traversal_is_refused() {
    let (_tmp, ws) = setup();
    assert!(is_outside(ws.resolve_existing("../outside.txt")));
    assert!(is_outside(ws.resolve_existing("sub/../../outside.txt")));
    assert!(is_outside(ws.resolve_for_write("../new.txt")));
    assert!(is_outside(ws.resolve_for_write("sub/../../new.txt")));
    assert!(is_outside(ws.resolve_for_write("missing/../../new.txt")));
    assert!(is_outside(ws.resolve_for_write("missing/..")));
    assert!(is_outside(ws.resolve_existing("..")));
}

#[test]
fn absolute_paths_outside_are_refused() {
    let (tmp, ws) = setup();
    assert!(is_outside(ws.resolve_existing("/etc/passwd")));
    let outside = tmp.0.join("outside.txt");
    assert!(is_outside(ws.resolve_existing(outside.to_str().unwrap())));
    assert!(is_outside(ws.resolve_for_write("/tmp/zoo-new-file")));
    let err = ws.resolve_existing("/etc/passwd").unwrap_err().to_string();
    assert!(err.contains("outside the workspace"), "{err}");
}

#[cfg(unix)]
#[test]
fn symlinks_leading_outside_are_refused() {
    use std::os::unix::fs::symlink;
    let (tmp, ws) = setup();
    symlink("/etc", ws.root().join("etc")).unwrap();
    symlink(tmp.0.join("outside.txt"), ws.root().join("link.txt")).unwrap();
    symlink("/nonexistent/zoo-target", ws.root().join("dangling")).unwrap();
    symlink("sub/a.txt", ws.root().join("good.txt")).unwrap();
    assert!(is_outside(ws.resolve_existing("etc/passwd")));
    assert!(is_outside(ws.resolve_existing("link.txt")));
    assert!(is_outside(ws.resolve_for_write("etc/zoo-new")));
    assert!(is_outside(ws.resolve_for_write("link.txt")));
    assert!(is_outside(ws.resolve_for_write("dangling")));
    assert!(ws.open_write("link.txt").is_err());
    assert_eq!(
        std::fs::read_to_string(tmp.0.join("outside.txt")).unwrap(),
        "secret"
    );
    // A symlink that stays inside is fine.
    let mut text = String::new();
    ws.open_read("good.txt")
        .unwrap()
        .read_to_string(&mut text)
        .unwrap();
    assert_eq!(text, "inside");
}

#[cfg(target_os = "linux")]
#[test]
fn a_symlink_swapped_in_after_the_check_is_caught_at_open() {
    use std::os::unix::fs::symlink;
    let (tmp, ws) = setup();
    // The check passes on the real file; then the file is swapped for a
    // symlink to outside before it is opened: the opened file is checked.
    let checked = ws.resolve_existing("sub/a.txt").unwrap();
    std::fs::remove_file(&checked).unwrap();
    symlink(tmp.0.join("outside.txt"), &checked).unwrap();
    assert!(matches!(
        ws.open_resolved_read("sub/a.txt", &checked),
        Err(PathRefused::OutsideWorkspace(_))
    ));
    // The folder itself swapped for a symlink to outside: writes are refused
    // and nothing is written there.
    std::fs::remove_dir_all(ws.root().join("sub")).unwrap();
    symlink(&tmp.0, ws.root().join("sub")).unwrap();
    assert!(ws.open_write("sub/outside.txt").is_err());
    assert_eq!(
        std::fs::read_to_string(tmp.0.join("outside.txt")).unwrap(),
        "secret"
    );
}

#[test]
fn control_characters_and_long_paths_are_refused() {
    let (_tmp, ws) = setup();
    assert_eq!(
        ws.resolve_existing("a\0b"),
        Err(PathRefused::ControlCharacter)
    );
    assert_eq!(
        ws.resolve_for_write("a\nb"),
        Err(PathRefused::ControlCharacter)
    );
    assert_eq!(
        ws.resolve_for_write("a\rb"),
        Err(PathRefused::ControlCharacter)
    );
    assert_eq!(ws.resolve_existing(""), Err(PathRefused::Empty));
    let long_name = "x".repeat(256);
    assert_eq!(ws.resolve_for_write(&long_name), Err(PathRefused::TooLong));
    let long_path = "d/".repeat(2100);
    assert_eq!(ws.resolve_for_write(&long_path), Err(PathRefused::TooLong));
}

#[test]
fn open_write_creates_parents_and_replaces_content() {
    let (_tmp, ws) = setup();
    ws.open_write("a/b/c.txt")
        .unwrap()
        .write_all(b"long text")
        .unwrap();
    ws.open_write("a/b/c.txt")
        .unwrap()
        .write_all(b"short")
        .unwrap();
    let text = std::fs::read_to_string(ws.root().join("a/b/c.txt")).unwrap();
    assert_eq!(text, "short");
}

#[test]
fn a_missing_or_file_root_is_an_invalid_argument() {
    let (tmp, _ws) = setup();
    let err = Workspace::new(tmp.0.join("missing")).unwrap_err();
    assert_eq!(err.code(), zoo_core::ErrorCode::InvalidArgument);
    let err = Workspace::new(tmp.0.join("outside.txt")).unwrap_err();
    assert_eq!(err.code(), zoo_core::ErrorCode::InvalidArgument);
}
