//! The built-in file tools: behaviour, limits, confinement and confirmation.

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use serde_json::{json, Value};
use zoo_core::tools::builtin::{builtin_tools, BuiltinOptions};
use zoo_core::{ErrorCode, Tool};

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-bt-{}-{n}", std::process::id()));
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

fn options(dir: &TempDir) -> BuiltinOptions {
    BuiltinOptions {
        workspace: dir.0.clone(),
        confirm: None,
        bash_deny: Vec::new(),
    }
}

fn tool(dir: &TempDir, name: &str) -> Tool {
    builtin_tools(&[name], &options(dir)).unwrap().remove(0)
}

/// Calls through validation, as the engine does; a tool error is its text.
fn call(tool: &Tool, args: Value) -> Result<Value, String> {
    tool.invoke_validated(args).map_err(|e| e.to_string())
}

#[test]
fn read_file_numbers_lines_and_pages() {
    let dir = TempDir::new();
    let text: String = (1..=10).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.0.join("a.txt"), text).unwrap();
    let read = tool(&dir, "read_file");
    let all = call(&read, json!({"path": "a.txt"})).unwrap();
    assert_eq!(all["total_lines"], 10);
    assert!(all["text"]
        .as_str()
        .unwrap()
        .starts_with("     1\tline 1\n"));
    let page = call(&read, json!({"path": "a.txt", "offset": 4, "limit": 2})).unwrap();
    assert_eq!(
        page["text"],
        "     4\tline 4\n     5\tline 5\n[10 lines in all; continue with offset 6]\n"
    );
    assert_eq!(page["lines_shown"], 2);
}

#[test]
fn read_file_refuses_big_binary_and_image_files() {
    let dir = TempDir::new();
    let big = "x".repeat(100) + "\n";
    std::fs::write(dir.0.join("big.txt"), big.repeat(11_000)).unwrap();
    std::fs::write(dir.0.join("bin"), b"ab\0cd").unwrap();
    std::fs::write(dir.0.join("p.png"), b"\x89PNG\r\n\x1a\nrest").unwrap();
    let read = tool(&dir, "read_file");
    let err = call(&read, json!({"path": "big.txt"})).unwrap_err();
    assert!(err.contains("offset and limit"), "{err}");
    let page = call(
        &read,
        json!({"path": "big.txt", "offset": 10_999, "limit": 5}),
    )
    .unwrap();
    assert_eq!(page["lines_shown"], 2);
    assert_eq!(page["total_lines"], 11_000);
    assert!(call(&read, json!({"path": "bin"}))
        .unwrap_err()
        .contains("binary"));
    assert!(call(&read, json!({"path": "p.png"}))
        .unwrap_err()
        .contains("PNG image"));
}

#[test]
fn read_file_cuts_a_huge_line() {
    let dir = TempDir::new();
    std::fs::write(dir.0.join("min.js"), "y".repeat(50_000) + "\nend\n").unwrap();
    let out = call(&tool(&dir, "read_file"), json!({"path": "min.js"})).unwrap();
    assert_eq!(out["total_lines"], 2);
    let text = out["text"].as_str().unwrap();
    assert!(text.len() < 2100 + 20, "{}", text.len());
    assert!(text.ends_with("     2\tend\n"));
}

#[test]
fn write_file_creates_folders_and_stays_inside() {
    let dir = TempDir::new();
    let write = tool(&dir, "write_file");
    let out = call(&write, json!({"path": "x/y/z.txt", "content": "hi"})).unwrap();
    assert_eq!(out["bytes"], 2);
    assert_eq!(
        std::fs::read_to_string(dir.0.join("x/y/z.txt")).unwrap(),
        "hi"
    );
    let err = call(&write, json!({"path": "../escape.txt", "content": "no"})).unwrap_err();
    assert!(err.contains("outside the workspace"), "{err}");
    assert!(!dir.0.parent().unwrap().join("escape.txt").exists());
}

#[test]
fn edit_file_replaces_exactly_one_match() {
    let dir = TempDir::new();
    std::fs::write(
        dir.0.join("f.rs"),
        "fn a() {\n    1 + 1\n}\nfn b() {\n    1 + 1\n}\n",
    )
    .unwrap();
    let edit = tool(&dir, "edit_file");
    let twice = call(
        &edit,
        json!({"path": "f.rs", "old_text": "1 + 1", "new_text": "2"}),
    );
    assert!(twice.unwrap_err().contains("occurs 2 times"));
    let missing = call(
        &edit,
        json!({"path": "f.rs", "old_text": "fn c() {", "new_text": ""}),
    );
    assert!(missing.unwrap_err().contains("closest line is 1: fn a() {"));
    let old = "fn b() {\n    1 + 1";
    let out = call(
        &edit,
        json!({"path": "f.rs", "old_text": old, "new_text": "fn b() {\n    2"}),
    )
    .unwrap();
    assert_eq!(out["line"], 4);
    let text = std::fs::read_to_string(dir.0.join("f.rs")).unwrap();
    assert_eq!(text, "fn a() {\n    1 + 1\n}\nfn b() {\n    2\n}\n");
}

#[test]
fn a_refused_confirmation_is_a_tool_error_and_changes_nothing() {
    let dir = TempDir::new();
    std::fs::write(dir.0.join("keep.txt"), "old").unwrap();
    let asked = Arc::new(AtomicUsize::new(0));
    let seen = asked.clone();
    let opts = BuiltinOptions {
        workspace: dir.0.clone(),
        confirm: Some(Arc::new(move |name: &str, args: &Value| {
            seen.fetch_add(1, Ordering::SeqCst);
            assert!(
                args.get("path").is_some() || (name == "bash" && args.get("command").is_some()),
                "{name} got {args}"
            );
            false
        })),
        bash_deny: Vec::new(),
    };
    let tools = builtin_tools(&["write_file", "edit_file", "bash"], &opts).unwrap();
    let err = call(&tools[0], json!({"path": "keep.txt", "content": "new"})).unwrap_err();
    assert!(err.contains("refused"), "{err}");
    let err = call(
        &tools[1],
        json!({"path": "keep.txt", "old_text": "old", "new_text": "new"}),
    );
    assert!(err.unwrap_err().contains("refused"));
    let err = call(&tools[2], json!({"command": "echo new > keep.txt"})).unwrap_err();
    assert!(err.contains("refused"), "{err}");
    assert_eq!(asked.load(Ordering::SeqCst), 3);
    assert_eq!(
        std::fs::read_to_string(dir.0.join("keep.txt")).unwrap(),
        "old"
    );
}

#[test]
fn unknown_names_and_bad_workspaces_are_invalid_arguments() {
    let dir = TempDir::new();
    let err = builtin_tools(&["rm_rf"], &options(&dir)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(err.to_string().contains("read_file"), "{err}");
    let bad = BuiltinOptions {
        workspace: dir.0.join("missing"),
        confirm: None,
        bash_deny: Vec::new(),
    };
    let agent =
        zoo_core::Agent::with_backend(zoo_core::MockBackend::new(), zoo_core::Config::default())
            .unwrap();
    let err = agent.add_builtin_tools(&["read_file"], bad).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(agent.tools().is_empty());
    agent
        .add_builtin_tools(&["read_file", "edit_file"], options(&dir))
        .unwrap();
    let names: Vec<String> = agent.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names, ["read_file", "edit_file"]);
}

#[test]
fn a_long_read_stops_once_its_call_is_cancelled() {
    use zoo_core::{CancelToken, ToolContext};
    let dir = TempDir::new();
    let lines: String = (0..20_000).map(|i| format!("line {i}\n")).collect();
    std::fs::write(dir.0.join("big.txt"), lines).unwrap();
    let tool = tool(&dir, "read_file");
    let args = json!({"path": "big.txt", "offset": 19_990, "limit": 5});
    let token = CancelToken::new();
    let ctx = ToolContext::detached("call_1", "read_file", token.clone());
    let page = tool.call_with(args.clone(), &ctx).unwrap();
    assert_eq!(page["lines_shown"], 5);
    token.cancel();
    let err = tool.call_with(args, &ctx).unwrap_err();
    assert!(err.contains("the call was cancelled"), "{err}");
}

#[test]
fn a_write_cancelled_while_it_was_being_confirmed_does_not_happen() {
    use zoo_core::{CancelToken, ToolContext};
    let dir = TempDir::new();
    let token = CancelToken::new();
    let stopper = token.clone();
    let mut options = options(&dir);
    // The host takes its time; the chat is stopped meanwhile; it says yes.
    options.confirm = Some(std::sync::Arc::new(move |_, _| {
        stopper.cancel();
        true
    }));
    let write = builtin_tools(&["write_file"], &options).unwrap().remove(0);
    let ctx = ToolContext::detached("call_1", "write_file", token);
    let err = write
        .call_with(json!({"path": "late.txt", "content": "x"}), &ctx)
        .unwrap_err();
    assert!(err.contains("the call was cancelled"), "{err}");
    assert!(!dir.0.join("late.txt").exists());
}
