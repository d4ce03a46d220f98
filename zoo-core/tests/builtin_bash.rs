//! The built-in `bash` tool: output, exit code, caps, deny list, timeout and
//! the process-group kill.
#![cfg(unix)]

use std::path::PathBuf;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zoo_core::tools::builtin::{builtin_tools, BuiltinOptions};
use zoo_core::Tool;

/// A fresh folder under the system temp dir, removed on drop.
struct TempDir(PathBuf);

impl TempDir {
    fn new() -> Self {
        static NEXT: AtomicUsize = AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::SeqCst);
        let dir = std::env::temp_dir().join(format!("zoo-bash-{}-{n}", std::process::id()));
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

fn bash(dir: &TempDir, deny: &[&str]) -> Tool {
    let options = BuiltinOptions {
        workspace: dir.0.clone(),
        confirm: None,
        bash_deny: deny.iter().map(|d| d.to_string()).collect(),
    };
    builtin_tools(&["bash"], &options).unwrap().remove(0)
}

fn call(tool: &Tool, args: Value) -> Result<Value, String> {
    tool.invoke_validated(args).map_err(|e| e.to_string())
}

/// True while `pid` is a live (not zombie) process.
fn alive(pid: &str) -> bool {
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => !stat
            .rsplit(')')
            .next()
            .unwrap_or("")
            .trim_start()
            .starts_with('Z'),
        Err(_) => false,
    }
}

/// Whether `pid` is gone within a generous bound: SIGKILL is sent before the
/// tool returns, but the kernel finishes the process's exit asynchronously.
fn dies(pid: &str) -> bool {
    let deadline = Instant::now() + Duration::from_secs(20);
    while Instant::now() < deadline {
        if !alive(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

#[test]
fn runs_in_the_workspace_with_exit_code_and_both_streams() {
    let dir = TempDir::new();
    let out = call(
        &bash(&dir, &[]),
        json!({"command": "pwd; echo oops >&2; exit 3"}),
    )
    .unwrap();
    assert_eq!(out["details"]["exit_code"], 3);
    assert_eq!(
        out["details"]["stdout"].as_str().unwrap().trim(),
        dir.0.canonicalize().unwrap().to_str().unwrap()
    );
    assert_eq!(out["details"]["stderr"], "oops\n");
    assert_eq!(out["details"]["timed_out"], false);
    assert!(out["text"].as_str().unwrap().starts_with("exit code: 3\n"));
}

#[test]
fn output_is_capped_at_256_kb_with_a_note() {
    let dir = TempDir::new();
    let out = call(
        &bash(&dir, &[]),
        json!({"command": "head -c 300000 /dev/zero | tr '\\0' a"}),
    )
    .unwrap();
    assert_eq!(out["details"]["stdout"].as_str().unwrap().len(), 256 * 1024);
    assert_eq!(
        out["details"]["stdout_truncated_bytes"],
        300_000 - 256 * 1024
    );
    assert!(out["text"].as_str().unwrap().contains("cut at 256 KB"));
}

#[test]
fn the_deny_list_is_checked_before_anything_runs() {
    let dir = TempDir::new();
    let tool = bash(&dir, &["rm -rf", "sudo"]);
    let err = call(&tool, json!({"command": "touch made; rm   -rf x"})).unwrap_err();
    assert!(err.contains("not allowed"), "{err}");
    assert!(!dir.0.join("made").exists());
    call(&tool, json!({"command": "touch made"})).unwrap();
    assert!(dir.0.join("made").exists());
}

#[test]
fn a_timeout_kills_the_whole_process_group() {
    let dir = TempDir::new();
    let start = Instant::now();
    // The shell starts a grandchild in the background, records its pid and waits.
    let command = "sleep 300 & echo $! > grandchild.pid; wait";
    let out = call(
        &bash(&dir, &[]),
        json!({"command": command, "timeout_ms": 5000}),
    )
    .unwrap();
    assert_eq!(out["details"]["timed_out"], true);
    assert!(out["details"]["exit_code"].is_null());
    assert!(start.elapsed() < Duration::from_secs(60));
    let pid = std::fs::read_to_string(dir.0.join("grandchild.pid")).unwrap();
    assert!(dies(pid.trim()), "grandchild {pid} outlived the timeout");
}

#[test]
fn a_background_process_does_not_outlive_a_finished_command() {
    let dir = TempDir::new();
    let command = "sleep 300 & echo $! > bg.pid; echo done";
    let out = call(&bash(&dir, &[]), json!({"command": command})).unwrap();
    assert_eq!(out["details"]["exit_code"], 0);
    let pid = std::fs::read_to_string(dir.0.join("bg.pid")).unwrap();
    assert!(
        dies(pid.trim()),
        "background process {pid} outlived the command"
    );
}

#[test]
fn nohup_and_disown_stay_in_the_group_and_setsid_leaves_it() {
    // What the README says of commands that try to outlive the call:
    // `nohup ... & disown` changes neither the process group nor the
    // session, so the kill reaches it; `setsid` starts a new session, so it
    // is out of reach (and killed here by the test itself).
    struct KillOnDrop(String);
    impl Drop for KillOnDrop {
        fn drop(&mut self) {
            let _ = std::process::Command::new("kill")
                .args(["-KILL", self.0.trim()])
                .status();
        }
    }
    let dir = TempDir::new();
    // The setsid'd shell writes its pid once it has its own session; the
    // command waits for that, so the kill at its end finds it gone already.
    let command = "nohup sleep 300 >/dev/null 2>&1 & disown; echo $! > nohup.pid; \
                   setsid sh -c 'echo $$ > setsid.tmp; mv setsid.tmp setsid.pid; exec sleep 301' \
                   >/dev/null 2>&1 & \
                   while [ ! -e setsid.pid ]; do sleep 0.01; done";
    let out = call(&bash(&dir, &[]), json!({"command": command})).unwrap();
    assert_eq!(out["details"]["exit_code"], 0);
    let escaped = KillOnDrop(std::fs::read_to_string(dir.0.join("setsid.pid")).unwrap());
    let nohup = std::fs::read_to_string(dir.0.join("nohup.pid")).unwrap();
    assert!(
        dies(nohup.trim()),
        "nohup'd process {nohup} outlived the command"
    );
    assert!(
        alive(escaped.0.trim()),
        "setsid's process {} was killed: update the README",
        escaped.0
    );
}

#[test]
fn stopping_the_chat_kills_a_running_command() {
    use zoo_core::{Agent, ChatOptions, Config, MockBackend, MockReply};
    let dir = TempDir::new();
    let command = "sleep 300 & echo $! > running.pid; wait";
    let mock = MockBackend::with_script([
        MockReply::tool_call("bash", json!({"command": command})),
        MockReply::text("never reached"),
    ]);
    let agent = Agent::with_backend(mock, Config::default()).unwrap();
    let options = BuiltinOptions {
        workspace: dir.0.clone(),
        confirm: None,
        bash_deny: Vec::new(),
    };
    agent.add_builtin_tools(&["bash"], options).unwrap();
    let handle = agent.chat("run it", ChatOptions::default());
    // The pid file appears once the command is running.
    let pid_file = dir.0.join("running.pid");
    let deadline = Instant::now() + Duration::from_secs(60);
    let pid = loop {
        match std::fs::read_to_string(&pid_file) {
            Ok(pid) if pid.ends_with('\n') => break pid,
            _ if Instant::now() > deadline => panic!("the command never started"),
            _ => std::thread::sleep(Duration::from_millis(5)),
        }
    };
    handle.cancel();
    let waited = handle.wait_timeout(Duration::from_secs(60));
    assert!(waited.is_some(), "the chat did not end after cancel");
    assert!(dies(pid.trim()), "process {pid} outlived the stopped chat");
}

#[test]
fn the_tools_time_limit_kills_a_running_command_which_reports_progress_meanwhile() {
    use std::sync::{Arc, Mutex};
    use zoo_core::{Agent, ChatOptions, Config, EventKind, MockBackend, MockReply};
    let dir = TempDir::new();
    let command = "sleep 300 & echo $! > limited.pid; wait";
    let mock = MockBackend::with_script([
        MockReply::tool_call("bash", json!({"command": command})),
        MockReply::text("it took too long"),
    ]);
    let agent = Agent::with_backend(mock, Config::default()).unwrap();
    // The call's own limit, not the command's: its token kills the group.
    agent.register_tool(bash(&dir, &[]).timeout(Some(Duration::from_millis(5000))));
    let progress = Arc::new(Mutex::new(Vec::new()));
    let sink = progress.clone();
    let options = ChatOptions::new().on_event(move |e| {
        if let EventKind::ToolCallProgress { text, .. } = &e.kind {
            sink.lock().unwrap().push(text.clone());
        }
    });
    let response = agent.chat("run it", options).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].error.as_deref(),
        Some("tool `bash` failed: it did not finish within 5000 ms")
    );
    let pid = std::fs::read_to_string(dir.0.join("limited.pid")).unwrap();
    assert!(dies(pid.trim()), "process {pid} outlived the call's limit");
    let progress = progress.lock().unwrap();
    assert!(
        progress
            .first()
            .is_some_and(|p| p.starts_with("running for ") && p.ends_with(" bytes of output")),
        "{progress:?}"
    );
}
