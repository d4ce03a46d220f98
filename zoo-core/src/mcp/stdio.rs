//! The stdio transport: the server is a child process; messages are lines
//! of JSON on its stdin and stdout, and its stderr goes to the logs (the
//! last lines are kept for error messages).

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::time::{Duration, Instant};

use parking_lot::Mutex;
use serde_json::Value;

use super::router::Router;
use super::rpc::Transport;
use super::transport_config::StdioTransport;
use crate::error::{Error, Result};

/// How long a server may take to exit by itself once its stdin is closed,
/// before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How much of stderr is kept for error messages.
const STDERR_LINES: usize = 20;

/// Our end of the server's stdin. On Unix it is a socket pair rather than
/// a pipe: writing to a server that has exited then fails with EPIPE (std
/// sends with `MSG_NOSIGNAL`), where a pipe would raise SIGPIPE, which
/// kills a C host that has not ignored it (Rust, Python and Node programs
/// ignore it; C programs usually do not).
#[cfg(unix)]
type StdinWriter = std::os::unix::net::UnixStream;
#[cfg(not(unix))]
type StdinWriter = std::process::ChildStdin;

/// A running server process.
pub(crate) struct StdioConnection {
    server: String,
    stdin: Mutex<Option<StdinWriter>>,
    child: Arc<Mutex<Option<Child>>>,
    closing: Arc<AtomicBool>,
}

/// The last lines the server wrote to stderr.
#[derive(Default)]
pub(crate) struct StderrTail {
    lines: Mutex<VecDeque<String>>,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut lines = self.lines.lock();
        if lines.len() == STDERR_LINES {
            lines.pop_front();
        }
        lines.push_back(line);
    }

    /// "; its stderr ended with: …" or nothing.
    fn describe(&self) -> String {
        let lines = self.lines.lock();
        if lines.is_empty() {
            "; it wrote nothing on stderr".to_string()
        } else {
            let text: Vec<&str> = lines.iter().map(String::as_str).collect();
            format!("; it wrote on stderr:\n{}", text.join("\n"))
        }
    }
}

impl StdioConnection {
    /// Starts the server; its output is delivered to `router` by two reader
    /// threads (stdout, stderr) that end when the pipes close.
    pub(crate) fn spawn(
        server: &str,
        config: &StdioTransport,
        router: Arc<Router>,
    ) -> Result<Self> {
        let (ours, theirs) = stdin_channel(server)?;
        let mut command = Command::new(&config.command);
        command
            .args(&config.args)
            .envs(&config.env)
            .stdin(theirs)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if let Some(dir) = &config.cwd {
            command.current_dir(dir);
        }
        let mut child = command.spawn().map_err(|e| {
            let mut message = format!("cannot start `{}`: {e}", config.command_line());
            if let Some(dir) = &config.cwd {
                message.push_str(&format!(" (working directory {})", dir.display()));
            }
            Error::mcp(server, message)
        })?;
        // The command holds our copy of the child's end of stdin: close it,
        // or a write to a server that has exited would never fail.
        drop(command);
        let Some(stdin) = our_stdin(ours, &mut child) else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Internal("a child process has no stdin".into()));
        };
        let (Some(stdout), Some(stderr)) = (child.stdout.take(), child.stderr.take()) else {
            // Cannot happen with piped stdio; reap the child rather than leak it.
            let _ = child.kill();
            let _ = child.wait();
            return Err(Error::Internal("a piped child process has no pipes".into()));
        };
        let tail = Arc::new(StderrTail::default());
        let child = Arc::new(Mutex::new(Some(child)));
        let closing = Arc::new(AtomicBool::new(false));
        let stderr_done = spawn_stderr_reader(server, stderr, tail.clone())?;
        let reader = StdoutReader {
            server: server.to_string(),
            command: config.command_line(),
            router,
            tail,
            child: child.clone(),
            closing: closing.clone(),
            stderr_done,
        };
        std::thread::Builder::new()
            .name(format!("zoo-mcp-{server}"))
            .spawn(move || reader.run(stdout))
            .map_err(|e| Error::Internal(format!("cannot start an MCP reader thread: {e}")))?;
        Ok(StdioConnection {
            server: server.to_string(),
            stdin: Mutex::new(Some(stdin)),
            child,
            closing,
        })
    }
}

impl Transport for StdioConnection {
    fn send(&self, message: &Value) -> Result<()> {
        let mut line = message.to_string();
        line.push('\n');
        let mut stdin = self.stdin.lock();
        let pipe = stdin
            .as_mut()
            .ok_or_else(|| Error::mcp(&self.server, "the connection is closed"))?;
        pipe.write_all(line.as_bytes())
            .and_then(|()| pipe.flush())
            .map_err(|e| {
                Error::mcp(
                    &self.server,
                    format!("cannot write to the server's stdin (it has probably exited): {e}"),
                )
            })
    }

    /// Ends stdin, gives the server [`EXIT_GRACE`] to exit, kills it if it
    /// has not, and reaps it.
    fn close(&self) {
        self.closing.store(true, Ordering::SeqCst);
        drop(self.stdin.lock().take());
        let Some(mut child) = self.child.lock().take() else {
            return;
        };
        let deadline = Instant::now() + EXIT_GRACE;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break,
            }
        }
        tracing::debug!(target: "zoo_core::mcp", server = %self.server, "killing the server: it did not exit after its stdin closed");
        let _ = child.kill();
        let _ = child.wait();
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        self.close();
    }
}

/// The server's stdin: our end (`None` when it is the child's own pipe,
/// taken after the spawn) and what the child gets.
#[cfg(unix)]
fn stdin_channel(server: &str) -> Result<(Option<StdinWriter>, Stdio)> {
    let (ours, theirs) = std::os::unix::net::UnixStream::pair()
        .map_err(|e| Error::mcp(server, format!("cannot create the server's stdin: {e}")))?;
    Ok((Some(ours), Stdio::from(std::os::fd::OwnedFd::from(theirs))))
}

#[cfg(not(unix))]
fn stdin_channel(_server: &str) -> Result<(Option<StdinWriter>, Stdio)> {
    Ok((None, Stdio::piped()))
}

#[cfg(unix)]
fn our_stdin(ours: Option<StdinWriter>, _child: &mut Child) -> Option<StdinWriter> {
    ours
}

#[cfg(not(unix))]
fn our_stdin(_ours: Option<StdinWriter>, child: &mut Child) -> Option<StdinWriter> {
    child.stdin.take()
}

fn spawn_stderr_reader(
    server: &str,
    stderr: impl Read + Send + 'static,
    tail: Arc<StderrTail>,
) -> Result<Receiver<()>> {
    let (done, done_rx) = channel();
    let server = server.to_string();
    std::thread::Builder::new()
        .name(format!("zoo-mcp-{server}-stderr"))
        .spawn(move || {
            let mut reader = BufReader::new(stderr);
            let mut buf = Vec::new();
            loop {
                buf.clear();
                match reader.read_until(b'\n', &mut buf) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {
                        let line = String::from_utf8_lossy(&buf).trim_end().to_string();
                        tracing::info!(target: "zoo_core::mcp", server = %server, "stderr: {line}");
                        tail.push(line);
                    }
                }
            }
            let _ = done.send(());
        })
        .map_err(|e| Error::Internal(format!("cannot start an MCP reader thread: {e}")))?;
    Ok(done_rx)
}

struct StdoutReader {
    server: String,
    command: String,
    router: Arc<Router>,
    tail: Arc<StderrTail>,
    child: Arc<Mutex<Option<Child>>>,
    closing: Arc<AtomicBool>,
    stderr_done: Receiver<()>,
}

impl StdoutReader {
    fn run(self, stdout: impl Read) {
        let mut reader = BufReader::new(stdout);
        let mut buf = Vec::new();
        let ended = loop {
            buf.clear();
            match reader.read_until(b'\n', &mut buf) {
                Ok(0) => break "closed its stdout".to_string(),
                Err(e) => break format!("could not be read from ({e})"),
                Ok(_) => {
                    let line = String::from_utf8_lossy(&buf);
                    if !line.trim().is_empty() {
                        self.router.deliver_text(&line);
                    }
                }
            }
        };
        if self.closing.load(Ordering::SeqCst) {
            self.router.close("the server was closed".into());
            return;
        }
        // The process is gone or going: give stderr a moment to drain so the
        // message can say what the server printed before it died.
        let _ = self.stderr_done.recv_timeout(Duration::from_millis(500));
        let status = self.exit_status(Duration::from_millis(500));
        let what = match status {
            Some(status) => format!("exited ({status})"),
            None => format!("{ended} but is still running"),
        };
        let reason = format!(
            "the server (`{}`) {what}{}",
            self.command,
            self.tail.describe()
        );
        tracing::warn!(target: "zoo_core::mcp", server = %self.server, "{reason}");
        self.router.close(reason);
    }

    /// The exit status, if the process ends within `wait`. Leaves the child
    /// to `close` to reap when it does not.
    fn exit_status(&self, wait: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + wait;
        loop {
            if let Some(child) = self.child.lock().as_mut() {
                if let Ok(Some(status)) = child.try_wait() {
                    return Some(status);
                }
            } else {
                return None;
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}
