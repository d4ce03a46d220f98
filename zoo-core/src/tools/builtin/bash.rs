//! `bash`: runs a command with `bash -c` in the workspace, in its own
//! process group, which is killed whole when the command ends or times out
//! (so nothing it started in the background outlives the call), or when
//! its call is cancelled (the chat's stop, the tool's `timeout_ms`). While
//! the command runs, the call reports its progress once a second
//! (`running for N s, B bytes of output`).

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::{confirmed, str_arg, ConfirmFn, Outcome, Workspace};
use crate::error::Result;
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// Bytes kept of stdout and of stderr each; the rest is counted, not kept.
pub const MAX_STREAM_BYTES: usize = 256 * 1024;
/// Time limit when the call names none.
pub const DEFAULT_TIMEOUT_MS: u64 = 120_000;
/// The longest time limit a call may ask for.
pub const MAX_TIMEOUT_MS: u64 = 600_000;
/// How often a running command is looked at.
const POLL: Duration = Duration::from_millis(10);
/// How often a running command's progress is reported.
const PROGRESS_EVERY: Duration = Duration::from_secs(1);

/// Builds the tool on `ws`: `deny` holds text no command may contain,
/// `confirm` is asked before each command that passes it.
pub fn tool(ws: Arc<Workspace>, deny: Vec<String>, confirm: Option<ConfirmFn>) -> Result<Tool> {
    let tool = Tool::with_output(
        "bash",
        "Run a shell command in the workspace folder with bash -c. Returns stdout, stderr \
         and the exit code; the command is killed after timeout_ms.",
        json!({
            "type": "object",
            "properties": {
                "command": {"type": "string", "minLength": 1, "description": "The command line"},
                "timeout_ms": {"type": "integer", "minimum": 1, "maximum": MAX_TIMEOUT_MS,
                               "description": "Time limit in milliseconds (default 120000)"}
            },
            "required": ["command"],
            "additionalProperties": false
        }),
        move |args, ctx| run(&ws, &deny, &confirm, &args, ctx),
    )?;
    Ok(tool.exclusive(true))
}

fn run(
    ws: &Workspace,
    deny: &[String],
    confirm: &Option<ConfirmFn>,
    args: &Value,
    ctx: &ToolContext,
) -> Outcome {
    let command = str_arg(args, "command")?;
    check_deny(command, deny)?;
    confirmed(confirm, "bash", args, ctx)?;
    let timeout = args
        .get("timeout_ms")
        .and_then(Value::as_u64)
        .unwrap_or(DEFAULT_TIMEOUT_MS)
        .clamp(1, MAX_TIMEOUT_MS);
    let mut child = Command::new("bash")
        .arg("-c")
        .arg(command)
        .current_dir(ws.root())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .map_err(|e| format!("could not start bash: {e}"))?;
    let output = Arc::new(AtomicU64::new(0));
    let out = capture(child.stdout.take(), output.clone());
    let err = capture(child.stderr.take(), output.clone());
    let (code, timed_out) = wait(&mut child, Duration::from_millis(timeout), ctx, &output)?;
    kill_group(child.id());
    let (stdout, out_dropped) = out.join().unwrap_or_default();
    let (stderr, err_dropped) = err.join().unwrap_or_default();
    let mut text = format!(
        "exit code: {}\n",
        code.map_or("none (killed)".into(), |c| c.to_string())
    );
    if timed_out {
        text.push_str(&format!(
            "the command timed out after {timeout} ms and was killed\n"
        ));
    }
    push_stream(&mut text, "stdout", &stdout, out_dropped);
    push_stream(&mut text, "stderr", &stderr, err_dropped);
    Ok(ToolOutput::text(text).with_details(json!({
        "exit_code": code, "timed_out": timed_out,
        "stdout": stdout, "stderr": stderr,
        "stdout_truncated_bytes": out_dropped, "stderr_truncated_bytes": err_dropped
    })))
}

/// Refuses a command holding any deny-list entry (whitespace runs count as
/// one space on both sides, so `rm  -rf` matches `rm -rf`).
fn check_deny(command: &str, deny: &[String]) -> std::result::Result<(), String> {
    let squash = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
    let command = squash(command);
    match deny
        .iter()
        .find(|d| !d.trim().is_empty() && command.contains(&squash(d)))
    {
        Some(d) => Err(format!(
            "this command is not allowed here (it contains `{d}`)"
        )),
        None => Ok(()),
    }
}

/// Reads a stream to its end, keeping the first [`MAX_STREAM_BYTES`]; also
/// returns how many bytes were dropped. Every byte read is counted in `seen`.
fn capture(
    stream: Option<impl Read + Send + 'static>,
    seen: Arc<AtomicU64>,
) -> JoinHandle<(String, u64)> {
    std::thread::spawn(move || {
        let Some(mut stream) = stream else {
            return (String::new(), 0);
        };
        let (mut kept, mut dropped, mut buf) = (Vec::new(), 0u64, [0u8; 8192]);
        while let Ok(n) = stream.read(&mut buf) {
            if n == 0 {
                break;
            }
            seen.fetch_add(n as u64, Ordering::Relaxed);
            let room = (MAX_STREAM_BYTES - kept.len()).min(n);
            kept.extend_from_slice(&buf[..room]);
            dropped += (n - room) as u64;
        }
        (String::from_utf8_lossy(&kept).into_owned(), dropped)
    })
}

/// Waits for the command up to `timeout` or until the call is cancelled,
/// reporting progress meanwhile: its exit code (None when killed by a
/// signal) and whether it timed out.
fn wait(
    child: &mut Child,
    timeout: Duration,
    ctx: &ToolContext,
    output: &AtomicU64,
) -> std::result::Result<(Option<i32>, bool), String> {
    let start = Instant::now();
    let mut reported = start;
    loop {
        if let Some(status) = child
            .try_wait()
            .map_err(|e| format!("waiting for bash: {e}"))?
        {
            return Ok((status.code(), false));
        }
        let cancelled = ctx.is_cancelled();
        if cancelled || start.elapsed() >= timeout {
            kill_group(child.id());
            child.wait().map_err(|e| format!("waiting for bash: {e}"))?;
            if cancelled {
                return Err(
                    "the call was cancelled (the chat was stopped or its time ran out); \
                     the command was killed"
                        .into(),
                );
            }
            return Ok((None, true));
        }
        if reported.elapsed() >= PROGRESS_EVERY {
            reported = Instant::now();
            ctx.progress(format!(
                "running for {} s, {} bytes of output",
                start.elapsed().as_secs(),
                output.load(Ordering::Relaxed)
            ));
        }
        ctx.wait_cancelled(Some(POLL));
    }
}

/// Kills the whole process group led by `pid`, with bash's own `kill`
/// builtin: std has no call for a group, this crate keeps `unsafe` to the
/// backend, and bash is there whenever this tool is (a `kill` binary may not be).
fn kill_group(pid: u32) {
    let _ = Command::new("bash")
        .args(["-c", &format!("kill -KILL -- -{pid}")])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status();
}

fn push_stream(text: &mut String, name: &str, body: &str, dropped: u64) {
    if body.is_empty() && dropped == 0 {
        return;
    }
    text.push_str(&format!("{name}:\n{body}"));
    if !body.ends_with('\n') {
        text.push('\n');
    }
    if dropped > 0 {
        text.push_str(&format!(
            "[{name} cut at 256 KB; {dropped} more bytes not shown]\n"
        ));
    }
}
