//! The `zoo` binary as a script and a person use it: `run` on the mock
//! (argument, stdin, --json, errors), a config file with flags on top,
//! sessions, the REPL fed line by line, and `run` on the real model.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-cli-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    fn file(&self, name: &str, text: &str) -> PathBuf {
        let path = self.0.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs `zoo` with `args`, `stdin` piped in, and a home of its own (so no
/// user config or history is read or written).
fn zoo(home: &Path, args: &[&str], stdin: &str) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zoo"))
        .args(args)
        .env("HOME", home)
        .env_remove("XDG_CONFIG_HOME")
        .env_remove("XDG_DATA_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(stdin.as_bytes())
        .unwrap();
    child.wait_with_output().unwrap()
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

const MOCK: &str = "[provider]\ntype = \"mock\"\nreplies = [\"Hello there.\"]\n";

#[test]
fn run_answers_from_the_argument_or_stdin() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", MOCK);
    let config = config.to_str().unwrap();
    let out = zoo(&dir.0, &["run", "--config", config, "hi"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello there.\n");
    // A mock without a script echoes: the question came from stdin.
    let echo = dir.file("echo.toml", "[provider]\ntype = \"mock\"\n");
    let out = zoo(
        &dir.0,
        &["run", "--config", echo.to_str().unwrap()],
        "from stdin\n",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "echo: from stdin\n");
    let out = zoo(&dir.0, &["run", "--config", config, "--json", "hi"], "");
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(response["text"], "Hello there.");
    assert_eq!(response["stop_reason"], "stop");
}

#[test]
fn errors_go_to_stderr_with_a_failing_status() {
    let dir = TempDir::new();
    let bad = dir.file("bad.toml", "temprature = 0.5\n");
    let out = zoo(
        &dir.0,
        &["run", "--config", bad.to_str().unwrap(), "hi"],
        "",
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).starts_with("zoo: invalid config `temprature`: unknown key"),
        "{}",
        text(&out.stderr)
    );
    let out = zoo(
        &dir.0,
        &["run", "--config", "/nonexistent/zoo.toml", "hi"],
        "",
    );
    assert!(
        text(&out.stderr).contains("/nonexistent/zoo.toml"),
        "{}",
        text(&out.stderr)
    );
    let config = dir.file("zoo.toml", MOCK);
    let out = zoo(
        &dir.0,
        &["run", "--config", config.to_str().unwrap()],
        "   \n",
    );
    assert!(
        text(&out.stderr).contains("no question"),
        "{}",
        text(&out.stderr)
    );
    let out = zoo(
        &dir.0,
        &["run", "--model", "/nonexistent/model.gguf", "hi"],
        "",
    );
    assert!(
        text(&out.stderr).contains("failed to load model"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn the_default_config_file_flags_on_top_and_sessions() {
    let dir = TempDir::new();
    std::fs::create_dir_all(dir.0.join(".config/zoo")).unwrap();
    std::fs::write(
        dir.0.join(".config/zoo/config.toml"),
        "[provider]\ntype = \"mock\"\n",
    )
    .unwrap();
    let store = dir.0.join("chats.db");
    let store = store.to_str().unwrap();
    let args = [
        "run",
        "--system",
        "Be brief.",
        "--store",
        store,
        "--session",
        "s1",
        "first question",
    ];
    let out = zoo(&dir.0, &args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "echo: first question\n");
    let out = zoo(&dir.0, &["sessions", "--store", store], "");
    let listed = text(&out.stdout);
    assert!(
        listed.starts_with("s1  ") && listed.contains("2 messages  first question"),
        "{listed}"
    );
}

#[test]
fn chat_streams_replies_and_takes_slash_commands() {
    let dir = TempDir::new();
    let config = dir.file(
        "zoo.toml",
        "[provider]\ntype = \"mock\"\nreplies = [\"Hi! How can I help?\"]\n",
    );
    let input = "hello\n/help\n/clear\nagain\n/quit\nnot read\n";
    let out = zoo(
        &dir.0,
        &["chat", "--config", config.to_str().unwrap()],
        input,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let screen = text(&out.stdout);
    assert!(screen.contains("Hi! How can I help?"), "{screen}");
    assert!(
        screen.contains("/clear  forget the conversation"),
        "{screen}"
    );
    assert!(screen.contains("echo: again"), "{screen}");
    assert!(!screen.contains("not read"), "{screen}");
    assert!(!screen.contains('\x1b'), "colors on a pipe: {screen}");
}

#[test]
fn run_on_the_real_model() {
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.exists(),
        "{} is missing: run scripts/fetch-models",
        model.display()
    );
    let dir = TempDir::new();
    let args = [
        "run",
        "--model",
        model.to_str().unwrap(),
        "--temperature",
        "0",
        "--max-tokens",
        "12",
        "Say hello.",
    ];
    let out = zoo(&dir.0, &args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(!text(&out.stdout).trim().is_empty());
}
