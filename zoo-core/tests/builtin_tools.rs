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
    assert_eq!(all["details"]["total_lines"], 10);
    assert!(all["text"]
        .as_str()
        .unwrap()
        .starts_with("     1\tline 1\n"));
    let page = call(&read, json!({"path": "a.txt", "offset": 4, "limit": 2})).unwrap();
    assert_eq!(
        page["text"],
        "     4\tline 4\n     5\tline 5\n[10 lines in all; continue with offset 6]\n"
    );
    assert_eq!(page["details"]["lines_shown"], 2);
}

#[test]
fn read_file_refuses_big_and_binary_files() {
    let dir = TempDir::new();
    let big = "x".repeat(100) + "\n";
    std::fs::write(dir.0.join("big.txt"), big.repeat(11_000)).unwrap();
    std::fs::write(dir.0.join("bin"), b"ab\0cd").unwrap();
    let read = tool(&dir, "read_file");
    let err = call(&read, json!({"path": "big.txt"})).unwrap_err();
    assert!(err.contains("offset and limit"), "{err}");
    let page = call(
        &read,
        json!({"path": "big.txt", "offset": 10_999, "limit": 5}),
    )
    .unwrap();
    assert_eq!(page["details"]["lines_shown"], 2);
    assert_eq!(page["details"]["total_lines"], 11_000);
    assert!(call(&read, json!({"path": "bin"}))
        .unwrap_err()
        .contains("binary"));
}

#[test]
fn read_file_cuts_a_huge_line() {
    let dir = TempDir::new();
    std::fs::write(dir.0.join("min.js"), "y".repeat(50_000) + "\nend\n").unwrap();
    let out = call(&tool(&dir, "read_file"), json!({"path": "min.js"})).unwrap();
    assert_eq!(out["details"]["total_lines"], 2);
    let text = out["text"].as_str().unwrap();
    assert!(text.len() < 2100 + 20, "{}", text.len());
    assert!(text.ends_with("     2\tend\n"));
}

#[test]
fn write_file_creates_folders_and_stays_inside() {
    let dir = TempDir::new();
    let write = tool(&dir, "write_file");
    let out = call(&write, json!({"path": "x/y/z.txt", "content": "hi"})).unwrap();
    assert_eq!(out["details"]["bytes"], 2);
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
    assert_eq!(out["details"]["line"], 4);
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
            Ok(false)
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
    assert_eq!(page["details"]["lines_shown"], 5);
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
        Ok(true)
    }));
    let write = builtin_tools(&["write_file"], &options).unwrap().remove(0);
    let ctx = ToolContext::detached("call_1", "write_file", token);
    let err = write
        .call_with(json!({"path": "late.txt", "content": "x"}), &ctx)
        .unwrap_err();
    assert!(err.contains("the call was cancelled"), "{err}");
    assert!(!dir.0.join("late.txt").exists());
}

/// A PNG header of `width` x `height` (signature and IHDR chunk, then
/// filler): what `read_file` and the dimension reader look at.
fn png(width: u32, height: u32, filler: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    bytes.extend_from_slice(&width.to_be_bytes());
    bytes.extend_from_slice(&height.to_be_bytes());
    bytes.extend_from_slice(&[8, 6, 0, 0, 0, 0, 0, 0, 0]);
    bytes.extend(std::iter::repeat_n(7u8, filler));
    bytes
}

#[test]
fn read_file_returns_an_image_as_image_content() {
    use base64::Engine;
    let dir = TempDir::new();
    let bytes = png(3, 2, 100);
    std::fs::write(dir.0.join("logo.png"), &bytes).unwrap();
    let out = call(&tool(&dir, "read_file"), json!({"path": "logo.png"})).unwrap();
    assert_eq!(
        out["text"],
        format!(
            "'logo.png' is a PNG image (3x2, {} bytes); it is attached.",
            bytes.len()
        )
    );
    assert_eq!(
        out["details"],
        json!({"path": "logo.png", "mime_type": "image/png", "bytes": bytes.len(),
               "width": 3, "height": 2})
    );
    let image = &out["images"][0];
    assert_eq!(image["mime_type"], "image/png");
    let data = base64::engine::general_purpose::STANDARD
        .decode(image["data"].as_str().unwrap())
        .unwrap();
    assert_eq!(data, bytes);
}

#[test]
fn an_image_over_20_mb_is_refused_before_it_is_read() {
    let dir = TempDir::new();
    let path = dir.0.join("huge.png");
    std::fs::write(&path, png(10, 10, 0)).unwrap();
    // Sparse: 21 MB on paper, nothing on disk.
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(21 * 1024 * 1024).unwrap();
    let err = call(&tool(&dir, "read_file"), json!({"path": "huge.png"})).unwrap_err();
    assert_eq!(
        err,
        "tool `read_file` failed: 'huge.png' is a PNG image of 22020096 bytes, over the 20 MB image limit"
    );
}

#[test]
fn a_failing_confirmation_refuses_and_says_why() {
    let dir = TempDir::new();
    let mut options = options(&dir);
    options.confirm = Some(Arc::new(|_: &str, _: &Value| {
        Err("the terminal is gone".into())
    }));
    let write = builtin_tools(&["write_file"], &options).unwrap().remove(0);
    let err = call(&write, json!({"path": "x.txt", "content": "x"})).unwrap_err();
    assert!(
        err.ends_with(
            "the write_file call was refused: the confirmation callback failed: the terminal is gone"
        ),
        "{err}"
    );
    assert!(!dir.0.join("x.txt").exists());
}

#[test]
fn builtin_options_read_from_json_with_clear_errors() {
    use zoo_core::tools::builtin::BuiltinToolsConfig;
    let config = BuiltinToolsConfig::from_json(
        r#"{"tools": ["read_file"], "workspace": "/tmp", "bash_deny": ["rm -rf"]}"#,
    )
    .unwrap();
    assert_eq!(config.tools, ["read_file"]);
    assert_eq!(config.options(None).bash_deny, ["rm -rf"]);
    let err = BuiltinToolsConfig::from_json("[").unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidJson);
    let err = BuiltinToolsConfig::from_json(r#"{"tools": ["read_file"]}"#).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(
        err.to_string().contains("missing field `workspace`"),
        "{err}"
    );
    let err = BuiltinToolsConfig::from_json(r#"{"tools": [1], "workspace": "."}"#).unwrap_err();
    assert!(err.to_string().contains("`tools[0]`"), "{err}");
    let err = BuiltinToolsConfig::from_json(r#"{"tools": [], "workspace": ".", "confirm": 1}"#)
        .unwrap_err();
    assert!(err.to_string().contains("unknown field `confirm`"), "{err}");
}

/// The model reads a built-in tool's text; the response's record and the
/// `tool_call_finished` event keep its details; an image stays in the
/// history's tool message and out of the record.
#[test]
fn the_model_reads_the_text_and_the_host_gets_the_details() {
    use std::sync::Mutex;
    use zoo_core::{Agent, ChatOptions, Config, EventKind, MockBackend, MockReply, Role};
    let dir = TempDir::new();
    std::fs::write(dir.0.join("pic.png"), png(4, 4, 10)).unwrap();
    let mock = MockBackend::with_script([
        MockReply::tool_call("bash", json!({"command": "echo hello"})),
        MockReply::tool_call("read_file", json!({"path": "pic.png"})),
        MockReply::text("done"),
    ]);
    let agent = Agent::with_backend(mock, Config::default()).unwrap();
    agent
        .add_builtin_tools(&["bash", "read_file"], options(&dir))
        .unwrap();
    let finished = Arc::new(Mutex::new(Vec::new()));
    let sink = finished.clone();
    let chat = ChatOptions::new().on_event(move |e| {
        if let EventKind::ToolCallFinished { result, .. } = &e.kind {
            sink.lock().unwrap().push(result.clone().unwrap());
        }
    });
    let response = agent.chat("go", chat).wait().unwrap();
    let bash = response.tool_calls[0].result.clone().unwrap();
    assert_eq!(
        bash,
        json!({"text": "exit code: 0\nstdout:\nhello\n", "details": {
            "exit_code": 0, "timed_out": false, "stdout": "hello\n", "stderr": "",
            "stdout_truncated_bytes": 0, "stderr_truncated_bytes": 0}})
    );
    let image = response.tool_calls[1].result.clone().unwrap();
    assert!(image.get("images").is_none(), "{image}");
    assert_eq!(image["details"]["width"], 4);
    assert_eq!(*finished.lock().unwrap(), [bash, image]);
    let results: Vec<_> = agent
        .history()
        .into_iter()
        .filter(|m| m.role == Role::Tool)
        .collect();
    assert_eq!(results[0].content, "exit code: 0\nstdout:\nhello\n");
    assert!(results[0].images.is_empty());
    assert_eq!(results[1].images.len(), 1);
    assert_eq!(results[1].images[0].mime_type, "image/png");
    assert_eq!(
        results[1].text_with_placeholders(),
        "'pic.png' is a PNG image (4x4, 43 bytes); it is attached.\n\
         [image: image/png, 4x4, 43 bytes; not shown, this model reads text only]"
    );
}

#[test]
fn a_restored_image_is_checked() {
    use zoo_core::{Agent, Config, ImageContent, Message, MockBackend, ToolCall};
    let agent = Agent::with_backend(MockBackend::new(), Config::default()).unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.png"}),
    };
    let with_image = |image: ImageContent| {
        let mut result = Message::tool("call_1", "read_file", "an image");
        result.images.push(image);
        vec![
            Message::user("look"),
            Message::assistant_with_tool_calls("", vec![call.clone()]),
            result,
        ]
    };
    agent
        .set_history(with_image(ImageContent::from_bytes(
            "image/png",
            &png(1, 1, 0),
        )))
        .unwrap();
    assert_eq!(agent.history()[2].images.len(), 1);
    let bmp = ImageContent::from_bytes("image/bmp", b"BM");
    let err = agent.set_history(with_image(bmp)).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(err.to_string().contains("image/png, image/jpeg"), "{err}");
    let broken = ImageContent {
        mime_type: "image/png".into(),
        data: "not base64!".into(),
    };
    let err = agent.set_history(with_image(broken)).unwrap_err();
    assert!(err.to_string().contains("standard base64"), "{err}");
    let mut user = Message::user("look");
    user.images
        .push(ImageContent::from_bytes("image/png", &png(1, 1, 0)));
    let err = agent.set_history(vec![user]).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidMessageSequence);
    assert_eq!(agent.history().len(), 3, "the old history stays");
}
