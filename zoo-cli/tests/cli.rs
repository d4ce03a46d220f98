//! The `zoo` binary as a script uses it: `run` on the mock (argument,
//! stdin, --json, errors), a config file with flags on top, sessions and
//! `--resume`, tools refused without a terminal, MCP servers from a Claude
//! Desktop file, the REPL fed line by line (its slash commands, /debug's
//! output), `run` against a fake OpenAI-compatible server, `--version`, and
//! `models`, `run` and `/model` on the real model. tests/terminal.rs drives
//! the REPL in a real terminal.

#[allow(dead_code)]
#[path = "../../zoo-core/tests/remote/fake_server.rs"]
mod fake_server;

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

/// Runs `zoo` with `args`, `stdin` piped in, and a home of its own, which
/// is also its current folder (so no user config or history is read or
/// written).
fn zoo(home: &Path, args: &[&str], stdin: &str) -> Output {
    zoo_with_env(home, args, stdin, &[])
}

/// [`zoo`] with more environment variables.
fn zoo_with_env(home: &Path, args: &[&str], stdin: &str, env: &[(&str, &str)]) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_zoo"))
        .args(args)
        .envs(env.iter().copied())
        .current_dir(home)
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
fn verbose_shows_the_prompt_and_the_raw_output_on_stderr() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", MOCK);
    let config = config.to_str().unwrap();
    let out = zoo(&dir.0, &["run", "--config", config, "--verbose", "hi"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello there.\n");
    let err = text(&out.stderr);
    // The mock renders nothing: its prompt is the messages it received.
    assert!(err.contains("--- zoo::prompt ---"), "{err}");
    assert!(err.contains(r#"[{"role":"user","content":"hi"}]"#), "{err}");
    assert!(
        err.contains("--- zoo::raw_output ---\nHello there."),
        "{err}"
    );
    // Without --verbose, nothing of it.
    let out = zoo(&dir.0, &["run", "--config", config, "hi"], "");
    assert!(!text(&out.stderr).contains("zoo::prompt"));
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
    // A remote backend needs its model's name; the error names the key.
    let out = zoo(&dir.0, &["run", "--backend", "gemini", "hi"], "");
    assert!(
        text(&out.stderr).contains("provider.model"),
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
        screen.contains("/clear           forget the conversation"),
        "{screen}"
    );
    assert!(screen.contains("echo: again"), "{screen}");
    assert!(!screen.contains("not read"), "{screen}");
    assert!(!screen.contains('\x1b'), "colors on a pipe: {screen}");
}

#[test]
fn run_on_the_real_model_answers() {
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

/// A mock whose first reply calls `write_file`, then says it is done.
const WRITES_A_NOTE: &str = r#"[provider]
type = "mock"
replies = ["<tool_call>{\"name\": \"write_file\", \"arguments\": {\"path\": \"note.txt\", \"content\": \"hi\"}}</tool_call>", "Done."]
"#;

#[test]
fn tools_that_need_confirmation_are_refused_without_a_terminal_unless_allowed() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", WRITES_A_NOTE);
    let workspace = dir.0.join("ws");
    std::fs::create_dir_all(&workspace).unwrap();
    let base = [
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--tools",
        "write_file",
        "--workspace",
        workspace.to_str().unwrap(),
    ];
    let out = zoo(&dir.0, &[&base[..], &["write a note"]].concat(), "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let error = response["tool_calls"][0]["error"]
        .as_str()
        .unwrap_or_default();
    assert!(
        error.contains("no terminal to ask on") && error.contains("--allow-tools"),
        "{response}"
    );
    assert!(!workspace.join("note.txt").exists());
    assert_eq!(response["text"], "Done.");

    let out = zoo(
        &dir.0,
        &[&base[..], &["--allow-tools", "write a note"]].concat(),
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(response["tool_calls"][0]["error"].is_null(), "{response}");
    assert_eq!(
        std::fs::read_to_string(workspace.join("note.txt")).unwrap(),
        "hi"
    );
    // `[cli] confirm = []` asks about nothing: the tool runs.
    std::fs::remove_file(workspace.join("note.txt")).unwrap();
    let trusting = dir.file(
        "trusting.toml",
        &format!("{WRITES_A_NOTE}\n[cli]\nconfirm = []\n"),
    );
    let mut args = base.to_vec();
    args[3] = trusting.to_str().unwrap();
    args.push("write a note");
    let out = zoo(&dir.0, &args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(workspace.join("note.txt").exists());
    // A misspelt `[cli]` key is named.
    let bad = dir.file("bad.toml", "[cli]\nconfrim = []\n");
    let out = zoo(
        &dir.0,
        &["run", "--config", bad.to_str().unwrap(), "hi"],
        "",
    );
    assert!(
        text(&out.stderr).contains("[cli]: unknown field `confrim`"),
        "{}",
        text(&out.stderr)
    );
}

fn fake_mcp_server() -> String {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../tests/mcp/fake_server.py")
        .to_str()
        .unwrap()
        .to_owned()
}

/// A mock whose first reply calls the fake MCP server's `echo`.
const CALLS_ECHO: &str = r#"[provider]
type = "mock"
replies = ["<tool_call>{\"name\": \"fake__echo\", \"arguments\": {\"text\": \"hi\"}}</tool_call>", "It echoed."]
"#;

#[test]
fn mcp_servers_come_from_a_claude_desktop_file_as_it_is() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", CALLS_ECHO);
    // As Claude Desktop writes it: other keys, a host's own keys, a
    // disabled server.
    let hosts = dir.file(
        "claude_desktop_config.json",
        &serde_json::json!({
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "fake": {"command": "python3", "args": [fake_mcp_server()], "autoApprove": ["echo"]},
                "broken": {"command": "/nonexistent/server", "disabled": true}
            }
        })
        .to_string(),
    );
    let args = [
        "run",
        "--json",
        "--config",
        config.to_str().unwrap(),
        "--mcp-config",
        hosts.to_str().unwrap(),
        "echo hi",
    ];
    let out = zoo(&dir.0, &args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        response["tool_calls"][0]["result"], "echo: hi",
        "{response}"
    );
    assert!(
        text(&out.stderr).contains("mcp: fake: "),
        "{}",
        text(&out.stderr)
    );

    // The same shape inline in the TOML file.
    let inline = dir.file(
        "inline.toml",
        &format!(
            "{CALLS_ECHO}\n[mcpServers.fake]\ncommand = \"python3\"\nargs = [\"{}\"]\n",
            fake_mcp_server()
        ),
    );
    let out = zoo(
        &dir.0,
        &[
            "run",
            "--json",
            "--config",
            inline.to_str().unwrap(),
            "echo hi",
        ],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let response: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        response["tool_calls"][0]["result"], "echo: hi",
        "{response}"
    );

    // An entry that cannot work is refused before anything starts.
    let bad = dir.file(
        "bad.json",
        r#"{"mcpServers": {"x": {"type": "sse", "url": "http://h/sse"}}}"#,
    );
    let out = zoo(
        &dir.0,
        &[
            "run",
            "--config",
            config.to_str().unwrap(),
            "--mcp-config",
            bad.to_str().unwrap(),
            "hi",
        ],
        "",
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("old SSE transport"),
        "{}",
        text(&out.stderr)
    );
}

#[test]
fn resume_continues_the_latest_session() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", "[provider]\ntype = \"mock\"\n");
    let store = dir.0.join("chats.db");
    let store = store.to_str().unwrap();
    let config = config.to_str().unwrap();
    for (session, question) in [("s1", "first"), ("s2", "second")] {
        let args = [
            "run",
            "--config",
            config,
            "--store",
            store,
            "--session",
            session,
            question,
        ];
        let out = zoo(&dir.0, &args, "");
        assert!(out.status.success(), "{}", text(&out.stderr));
    }
    let args = [
        "run", "--config", config, "--store", store, "--resume", "third",
    ];
    let out = zoo(&dir.0, &args, "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    let out = zoo(&dir.0, &["sessions", "--store", store], "");
    let listed = text(&out.stdout);
    let first = listed.lines().next().unwrap_or_default();
    assert!(
        first.starts_with("s2  ") && first.contains("4 messages"),
        "{listed}"
    );
    // --resume needs a store to resume from.
    let out = zoo(&dir.0, &["run", "--config", config, "--resume", "hi"], "");
    assert!(
        text(&out.stderr).contains("--resume needs a session store"),
        "{}",
        text(&out.stderr)
    );
    // `zoo sessions` takes the store from the config file too.
    let with_store = dir.file("store.toml", &format!("session_store = \"{store}\"\n"));
    let out = zoo(
        &dir.0,
        &["sessions", "--config", with_store.to_str().unwrap()],
        "",
    );
    assert_eq!(text(&out.stdout), listed);
}

#[test]
fn chat_commands_for_sessions_skills_and_saving() {
    let dir = TempDir::new();
    let skills = dir.0.join("skills/haiku");
    std::fs::create_dir_all(&skills).unwrap();
    std::fs::write(
        skills.join("SKILL.md"),
        "---\nname: haiku\ndescription: Answer in a haiku.\n---\nWrite three lines.\n",
    )
    .unwrap();
    let config = dir.file(
        "zoo.toml",
        &format!(
            "skills = [\"{}\"]\n[provider]\ntype = \"mock\"\n",
            dir.0.join("skills").display()
        ),
    );
    let saved = dir.0.join("saved.json");
    let input = format!(
        "hello\n/session\n/sessions\n/skills\n/skill haiku\n/skill off\n/skill nope\n/save {}\n/model /nonexistent.gguf\nstill there?\n/debug\n/quit\n",
        saved.display()
    );
    let store = dir.0.join("chats.db");
    let args = [
        "chat",
        "--config",
        config.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--session",
        "kitchen",
    ];
    let out = zoo(&dir.0, &args, &input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let screen = text(&out.stdout);
    for expected in [
        "session kitchen in",
        "echo: hello",
        "\nkitchen\n",
        "kitchen  ",
        "haiku  Answer in a haiku.",
        "Skill haiku is active.",
        "No skill is active.",
        "nope",
        "Saved to",
        "does not exist",
        "echo: still there?",
        "Debug output is on.",
    ] {
        assert!(screen.contains(expected), "{expected:?} not in:\n{screen}");
    }
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(saved["id"], "kitchen", "{saved}");
}

#[test]
fn chat_keeps_conversations_in_the_users_store_by_default() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", "[provider]\ntype = \"mock\"\n");
    let config = config.to_str().unwrap();
    let out = zoo(&dir.0, &["chat", "--config", config], "remember me\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert!(dir.0.join(".local/share/zoo/sessions.db").exists());
    let out = zoo(&dir.0, &["sessions"], "");
    assert!(
        text(&out.stdout).contains("2 messages  remember me"),
        "{}",
        text(&out.stdout)
    );
    // --resume picks it up.
    let out = zoo(
        &dir.0,
        &["chat", "--config", config, "--resume"],
        "/session\n",
    );
    let screen = text(&out.stdout);
    let first_id = text(&zoo(&dir.0, &["sessions"], "").stdout)
        .split_whitespace()
        .next()
        .unwrap_or_default()
        .to_owned();
    assert!(screen.contains(&format!("\n{first_id}\n")), "{screen}");
    // And the line history is kept across runs.
    let history = std::fs::read_to_string(dir.0.join(".local/share/zoo/history.txt")).unwrap();
    assert!(
        history.contains("remember me") && history.contains("/session"),
        "{history}"
    );
}

#[test]
fn real_model_files_are_listed_with_their_metadata_without_loading_them() {
    let models = Path::new(env!("CARGO_MANIFEST_DIR")).join("../models");
    let smol = models.join("SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        smol.exists(),
        "{} is missing: run scripts/fetch-models",
        smol.display()
    );
    let dir = TempDir::new();
    let config = dir.file(
        "zoo.toml",
        &format!("model_path = \"{}\"\n", smol.display()),
    );
    let not_gguf = dir.0.join("models");
    std::fs::create_dir_all(&not_gguf).unwrap();
    std::fs::write(not_gguf.join("fake.gguf"), "not a model").unwrap();
    let out = zoo(
        &dir.0,
        &[
            "models",
            "--config",
            config.to_str().unwrap(),
            "--dir",
            models.to_str().unwrap(),
        ],
        "",
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let listed = text(&out.stdout);
    assert!(
        listed.contains("SmolLM2-135M-Instruct.Q4_1.gguf  (default)"),
        "{listed}"
    );
    assert!(
        listed.contains("llama 135M, Q4_1") && listed.contains("trained context 8192"),
        "{listed}"
    );
    assert!(
        listed.contains("fake.gguf\n  does not load") && listed.contains("not a GGUF file"),
        "{listed}"
    );
    // Listed once, though found both as the default and in --dir.
    assert_eq!(
        listed.matches("SmolLM2-135M-Instruct.Q4_1.gguf").count(),
        1,
        "{listed}"
    );
}

#[test]
fn version_says_which_zoo_this_is() {
    let dir = TempDir::new();
    let out = zoo(&dir.0, &["--version"], "");
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(
        text(&out.stdout),
        format!("zoo {}\n", env!("CARGO_PKG_VERSION"))
    );
}

/// The blocks `--verbose` or `/debug` printed under `target` (the text
/// between the block's header and its closing `---`).
fn debug_blocks(stderr: &str, target: &str) -> Vec<String> {
    let header = format!("--- {target} ---\n");
    stderr
        .split(&header)
        .skip(1)
        .map(|rest| rest.split("\n---").next().unwrap_or_default().to_owned())
        .collect()
}

#[test]
fn system_sets_the_prompt_and_debug_shows_what_the_model_gets_and_says() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", "[provider]\ntype = \"mock\"\n");
    let input = "/debug on\n/system Be brief.\nhi\n/system\nagain\n/debug off\nlast\n/quit\n";
    let out = zoo(
        &dir.0,
        &["chat", "--config", config.to_str().unwrap()],
        input,
    );
    assert!(out.status.success(), "{}", text(&out.stderr));
    let screen = text(&out.stdout);
    assert!(screen.contains("Debug output is on."), "{screen}");
    assert!(screen.contains("Debug output is off."), "{screen}");
    for answer in ["echo: hi", "echo: again", "echo: last"] {
        assert!(screen.contains(answer), "{answer:?} not in:\n{screen}");
    }
    let err = text(&out.stderr);
    assert!(!err.contains('\x1b'), "colors on a pipe: {err}");
    // The mock's prompt is the messages it got: with the system prompt for
    // the first question, without it once /system alone removed it.
    let prompts = debug_blocks(&err, "zoo::prompt");
    assert_eq!(prompts.len(), 2, "one prompt per question while on: {err}");
    assert!(
        prompts[0].starts_with(
            r#"[{"role":"system","content":"Be brief."},{"role":"user","content":"hi"}]"#
        ),
        "{}",
        prompts[0]
    );
    assert!(
        prompts[1].starts_with(r#"[{"role":"user","content":"hi"},"#)
            && prompts[1].contains(r#"{"role":"user","content":"again"}"#)
            && !prompts[1].contains("system"),
        "{}",
        prompts[1]
    );
    // The raw output, before parsing; nothing once debug is off.
    let raw = debug_blocks(&err, "zoo::raw_output");
    assert_eq!(raw.len(), 2, "{err}");
    assert!(raw[0].starts_with("echo: hi"), "{}", raw[0]);
    assert!(raw[1].starts_with("echo: again"), "{}", raw[1]);
    assert!(!err.contains("last"), "{err}");
}

#[test]
fn a_bare_save_writes_the_session_next_to_you_and_says_where() {
    let dir = TempDir::new();
    let config = dir.file("zoo.toml", "[provider]\ntype = \"mock\"\n");
    let store = dir.0.join("chats.db");
    let args = [
        "chat",
        "--config",
        config.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--session",
        "trip/plans",
    ];
    let out = zoo(&dir.0, &args, "where to?\n/save\n/quit\n");
    assert!(out.status.success(), "{}", text(&out.stderr));
    // The session's name, made safe for a file name, in the current folder.
    let file = dir
        .0
        .canonicalize()
        .unwrap()
        .join("zoo-chat-trip_plans.json");
    let screen = text(&out.stdout);
    assert!(
        screen.contains(&format!("Saved to {}.", file.display())),
        "{screen}"
    );
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&file).unwrap()).unwrap();
    assert_eq!(saved["id"], "trip/plans", "{saved}");
    assert!(saved.to_string().contains("echo: where to?"), "{saved}");
}

/// An OpenAI-compatible stream of these text pieces.
fn openai_stream(pieces: &[&str]) -> Vec<String> {
    let mut events: Vec<String> = pieces
        .iter()
        .map(|p| {
            let chunk = serde_json::json!({"choices": [{"index": 0, "delta": {"content": p}}]});
            format!("data: {chunk}")
        })
        .collect();
    events.push(r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.into());
    events.push("data: [DONE]".into());
    events
}

#[test]
fn run_talks_to_an_openai_compatible_server() {
    use fake_server::{Answer, FakeServer};
    let dir = TempDir::new();
    let server = FakeServer::start(vec![
        Answer::Stream(openai_stream(&["Hello from ", "the server."])),
        Answer::status(401, r#"{"error": {"message": "bad key"}}"#),
    ]);
    let args = [
        "run",
        "--backend",
        "openai",
        "--base-url",
        &server.base_url,
        "--api-key-env",
        "ZOO_TEST_KEY",
        "--model",
        "qwen-test",
        "--system",
        "Be brief.",
        "Hi",
    ];
    let env = [("ZOO_TEST_KEY", "sk-test")];
    let out = zoo_with_env(&dir.0, &args, "", &env);
    assert!(out.status.success(), "{}", text(&out.stderr));
    assert_eq!(text(&out.stdout), "Hello from the server.\n");
    let request = &server.requests()[0];
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.headers["authorization"], "Bearer sk-test");
    assert_eq!(request.body["model"], "qwen-test");
    assert_eq!(
        request.body["messages"],
        serde_json::json!([
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Hi"}
        ])
    );
    // The server refuses the next one: the message on stderr, a failure.
    let out = zoo_with_env(&dir.0, &args, "", &env);
    assert!(!out.status.success());
    assert!(out.stdout.is_empty(), "{}", text(&out.stdout));
    let err = text(&out.stderr);
    assert!(
        err.starts_with(&format!(
            "zoo: provider openai ({}) refused the credentials (HTTP 401): bad key",
            server.base_url
        )),
        "{err}"
    );
}

#[test]
fn model_switches_to_a_real_model_keeping_the_conversation() {
    let model =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(
        model.exists(),
        "{} is missing: run scripts/fetch-models",
        model.display()
    );
    let dir = TempDir::new();
    let config = dir.file(
        "zoo.toml",
        "temperature = 0.0\nmax_tokens = 12\n[provider]\ntype = \"mock\"\n",
    );
    let store = dir.0.join("chats.db");
    let saved = dir.0.join("saved.json");
    let input = format!(
        "My name is Ada.\n/model {}\nWhat is my name?\n/save {}\n/quit\n",
        model.display(),
        saved.display()
    );
    let args = [
        "chat",
        "--config",
        config.to_str().unwrap(),
        "--store",
        store.to_str().unwrap(),
        "--session",
        "switch",
    ];
    let out = zoo(&dir.0, &args, &input);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let screen = text(&out.stdout);
    assert!(screen.contains("echo: My name is Ada."), "{screen}");
    assert!(
        screen.contains(&format!("Now on {}.", model.display())),
        "{screen}"
    );
    // The real model answered the second question, after the first
    // question and the mock's answer: the conversation went along.
    let saved: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    let messages = saved["messages"].as_array().expect("a session export");
    let said: Vec<(&str, &str)> = messages
        .iter()
        .map(|m| (m["role"].as_str().unwrap(), m["content"].as_str().unwrap()))
        .collect();
    assert_eq!(said.len(), 4, "{said:?}");
    assert_eq!(
        &said[..3],
        [
            ("user", "My name is Ada."),
            ("assistant", "echo: My name is Ada."),
            ("user", "What is my name?")
        ]
    );
    assert_eq!(said[3].0, "assistant");
    assert!(!said[3].1.trim().is_empty() && !said[3].1.starts_with("echo:"));
    assert!(screen.contains(said[3].1.trim()), "{screen}");
}
