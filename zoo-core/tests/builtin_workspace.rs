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
    // symlink to outside before it is opened: the symlink is not followed.
    let checked = ws.resolve_existing("sub/a.txt").unwrap();
    std::fs::remove_file(&checked).unwrap();
    symlink(tmp.0.join("outside.txt"), &checked).unwrap();
    assert!(matches!(
        ws.open_resolved_read("sub/a.txt", &checked),
        Err(PathRefused::Swapped(_))
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

fn is_swapped<T: std::fmt::Debug>(r: Result<T, PathRefused>) -> bool {
    let swapped = matches!(r, Err(PathRefused::Swapped(_)));
    if !swapped {
        eprintln!("not refused as swapped: {r:?}");
    }
    swapped
}

/// The names a folder holds, sorted.
fn names_in(dir: &std::path::Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    names
}

#[cfg(unix)]
#[test]
fn a_file_swapped_for_a_symlink_between_check_and_write_is_not_followed() {
    use std::os::unix::fs::symlink;
    let (tmp, ws) = setup();
    // A new file: checked while missing, then a symlink to a missing file
    // outside appears in its place. Nothing may be created out there.
    let checked = ws.resolve_for_write("sub/new.txt").unwrap();
    symlink(tmp.0.join("planted.txt"), ws.root().join("sub/new.txt")).unwrap();
    assert!(is_swapped(ws.open_resolved_write("sub/new.txt", &checked)));
    assert!(!tmp.0.join("planted.txt").exists());
    // An existing file swapped for a symlink to an existing file outside:
    // that file is neither emptied nor written.
    let checked = ws.resolve_existing("sub/a.txt").unwrap();
    std::fs::remove_file(&checked).unwrap();
    symlink(tmp.0.join("outside.txt"), &checked).unwrap();
    assert!(is_swapped(ws.open_resolved_write("sub/a.txt", &checked)));
    assert!(is_swapped(ws.open_resolved_read("sub/a.txt", &checked)));
    assert_eq!(
        std::fs::read_to_string(tmp.0.join("outside.txt")).unwrap(),
        "secret"
    );
    assert_eq!(names_in(&tmp.0), ["outside.txt", "ws"]);
}

#[cfg(unix)]
#[test]
fn a_folder_swapped_for_a_symlink_between_check_and_write_gets_nothing_created_in_it() {
    use std::os::unix::fs::symlink;
    let (tmp, ws) = setup();
    std::fs::create_dir(tmp.0.join("elsewhere")).unwrap();
    std::fs::write(tmp.0.join("elsewhere/a.txt"), "theirs").unwrap();
    // Folders that do not exist yet under `sub`, and a file that does.
    let deep = ws.resolve_for_write("sub/deeper/still/new.txt").unwrap();
    let existing = ws.resolve_existing("sub/a.txt").unwrap();
    std::fs::rename(ws.root().join("sub"), ws.root().join("moved")).unwrap();
    symlink(tmp.0.join("elsewhere"), ws.root().join("sub")).unwrap();
    assert!(is_swapped(
        ws.open_resolved_write("sub/deeper/still/new.txt", &deep)
    ));
    assert!(is_swapped(ws.open_resolved_write("sub/a.txt", &existing)));
    assert!(is_swapped(ws.open_resolved_read("sub/a.txt", &existing)));
    assert_eq!(names_in(&tmp.0.join("elsewhere")), ["a.txt"]);
    assert_eq!(
        std::fs::read_to_string(tmp.0.join("elsewhere/a.txt")).unwrap(),
        "theirs"
    );
    // A folder deeper down swapped the same way.
    std::fs::remove_file(ws.root().join("sub")).unwrap();
    std::fs::create_dir_all(ws.root().join("sub/deeper")).unwrap();
    let deep = ws.resolve_for_write("sub/deeper/still/new.txt").unwrap();
    std::fs::remove_dir(ws.root().join("sub/deeper")).unwrap();
    symlink(tmp.0.join("elsewhere"), ws.root().join("sub/deeper")).unwrap();
    assert!(is_swapped(
        ws.open_resolved_write("sub/deeper/still/new.txt", &deep)
    ));
    assert_eq!(names_in(&tmp.0.join("elsewhere")), ["a.txt"]);
}

#[cfg(unix)]
#[test]
fn a_named_pipe_or_a_folder_is_refused_without_waiting() {
    let (_tmp, ws) = setup();
    let status = std::process::Command::new("mkfifo")
        .arg(ws.root().join("pipe"))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        ws.open_write("pipe").unwrap_err(),
        PathRefused::NotRegularFile("pipe".into(), "named pipe")
    );
    assert_eq!(
        ws.open_read("pipe").unwrap_err().to_string(),
        "'pipe' is a named pipe, not a regular file"
    );
    assert_eq!(
        ws.open_write("sub").unwrap_err(),
        PathRefused::NotRegularFile("sub".into(), "folder")
    );
    assert_eq!(
        ws.open_read(".").unwrap_err(),
        PathRefused::NotRegularFile(".".into(), "folder")
    );
}

/// A confirmation callback that swaps `what` for a symlink to `to` while the
/// host is being asked (after the tool checked the path, before it opens it).
#[cfg(unix)]
fn swapping_confirm(
    what: std::path::PathBuf,
    to: std::path::PathBuf,
) -> zoo_core::tools::builtin::ConfirmFn {
    std::sync::Arc::new(move |_: &str, _: &serde_json::Value| {
        if what.is_dir() {
            std::fs::remove_dir_all(&what).unwrap();
        } else {
            std::fs::remove_file(&what).unwrap();
        }
        std::os::unix::fs::symlink(&to, &what).unwrap();
        Ok(true)
    })
}

#[cfg(unix)]
fn builtin(
    ws: &Workspace,
    name: &str,
    confirm: zoo_core::tools::builtin::ConfirmFn,
) -> zoo_core::Tool {
    use zoo_core::tools::builtin::{builtin_tools, BuiltinOptions};
    let options = BuiltinOptions {
        workspace: ws.root().to_path_buf(),
        confirm: Some(confirm),
        bash_deny: Vec::new(),
    };
    builtin_tools(&[name], &options).unwrap().remove(0)
}

#[cfg(unix)]
#[test]
fn write_file_and_edit_file_refuse_a_swap_made_while_the_host_confirms() {
    use serde_json::json;
    let (tmp, ws) = setup();
    std::fs::create_dir(tmp.0.join("elsewhere")).unwrap();
    std::fs::write(ws.root().join("sub/b.txt"), "inside b").unwrap();
    let cases = [
        // (tool, arguments, what is swapped, for what outside)
        (
            "write_file",
            json!({"path": "sub/a.txt", "content": "pwned"}),
            ws.root().join("sub/a.txt"),
            tmp.0.join("outside.txt"),
        ),
        (
            "write_file",
            json!({"path": "sub/fresh.txt", "content": "pwned"}),
            ws.root().join("sub"),
            tmp.0.join("elsewhere"),
        ),
    ];
    for (name, args, what, to) in cases {
        let tool = builtin(&ws, name, swapping_confirm(what.clone(), to));
        let err = tool.invoke_validated(args.clone()).unwrap_err().to_string();
        assert!(
            err.contains("was swapped for a symbolic link after it was checked"),
            "{name} {args}: {err}"
        );
        // Undo the swap for the next case.
        std::fs::remove_file(&what).unwrap();
        std::fs::create_dir_all(ws.root().join("sub")).unwrap();
        std::fs::write(ws.root().join("sub/a.txt"), "inside").unwrap();
        std::fs::write(ws.root().join("sub/b.txt"), "inside b").unwrap();
    }
    let edits = [
        (ws.root().join("sub/b.txt"), tmp.0.join("outside.txt")),
        (ws.root().join("sub"), tmp.0.join("elsewhere")),
    ];
    for (what, to) in edits {
        let tool = builtin(&ws, "edit_file", swapping_confirm(what.clone(), to));
        let args = json!({"path": "sub/b.txt", "old_text": "inside", "new_text": "pwned"});
        let err = tool.invoke_validated(args).unwrap_err().to_string();
        assert!(
            err.contains("'sub/b.txt' was swapped for a symbolic link"),
            "{err}"
        );
        std::fs::remove_file(&what).unwrap();
        std::fs::create_dir_all(ws.root().join("sub")).unwrap();
        std::fs::write(ws.root().join("sub/b.txt"), "inside b").unwrap();
    }
    assert_eq!(
        std::fs::read_to_string(tmp.0.join("outside.txt")).unwrap(),
        "secret"
    );
    assert!(names_in(&tmp.0.join("elsewhere")).is_empty());
}
