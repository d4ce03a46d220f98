//! The stdio transport: the server is a child process; messages are lines
//! of JSON on its stdin and stdout, and its stderr goes to the logs (the
//! last lines are kept for error messages).
//!
//! Three threads watch a server: one reads stdout, one reads stderr, and
//! (on Unix) one waits for the server to close its stdin. Whichever sees
//! the server go first (stdout or stdin closed, which is also what an exit
//! looks like) reports it once, with the exit status and the stderr tail,
//! and every request in flight fails at once with that report.

use std::collections::VecDeque;
use std::io::{BufReader, ErrorKind, Read, Write};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};
use serde_json::Value;

use super::lines::{read_line, size_text, skip_line, Line};
use super::router::{excerpt, Router};
use super::rpc::{seconds, Transport};
use super::transport_config::StdioTransport;
use crate::error::{Error, Result};

/// How long a server may take to exit by itself once its stdin is closed,
/// before it is killed.
const EXIT_GRACE: Duration = Duration::from_secs(2);
/// How many of the last stderr lines are kept for error messages.
const STDERR_LINES: usize = 20;
/// How much of one stderr line is kept (and logged); so the tail holds at
/// most `STDERR_LINES * STDERR_LINE_BYTES` bytes whatever the server writes.
const STDERR_LINE_BYTES: usize = 1024;
/// Once the server is seen going, how long its stderr may take to reach
/// its end (it does at once when the process exits, unless a child of it
/// holds stderr open), so the report can say what it printed last.
const STDERR_DRAIN: Duration = Duration::from_secs(1);
/// The largest line buffer kept between two stdout lines.
const KEEP_LINE_BUFFER: usize = 1024 * 1024;
/// Once stderr has ended, how long the process may take to become
/// waitable: the kernel closes its files just before it marks it exited.
const EXIT_STATUS_WAIT: Duration = Duration::from_secs(2);

/// Our end of the server's stdin. On Unix it is a socket pair rather than
/// a pipe: writing to a server that has exited then fails with EPIPE (std
/// sends with `MSG_NOSIGNAL`), where a pipe would raise SIGPIPE, which
/// kills a C host that has not ignored it (Rust, Python and Node programs
/// ignore it; C programs usually do not). A socket also tells a reader of
/// our end when the server has closed its own: that is how a server that
/// stopped reading is noticed while nothing is being written.
#[cfg(unix)]
type StdinWriter = std::os::unix::net::UnixStream;
#[cfg(not(unix))]
type StdinWriter = std::process::ChildStdin;

/// A running server process.
pub(crate) struct StdioConnection {
    server: String,
    stdin: Mutex<Option<StdinWriter>>,
    timeout: Duration,
    watch: Arc<Watch>,
}

/// The last lines the server wrote to stderr, each cut to
/// [`STDERR_LINE_BYTES`], and whether stderr has ended.
#[derive(Default)]
struct StderrTail {
    state: Mutex<TailState>,
    changed: Condvar,
}

#[derive(Default)]
struct TailState {
    lines: VecDeque<String>,
    ended: bool,
}

impl StderrTail {
    fn push(&self, line: String) {
        let mut state = self.state.lock();
        if state.lines.len() == STDERR_LINES {
            state.lines.pop_front();
        }
        state.lines.push_back(line);
    }

    fn end(&self) {
        self.state.lock().ended = true;
        self.changed.notify_all();
    }

    /// Waits at most `wait` for stderr to end; whether it has.
    fn wait_end(&self, wait: Duration) -> bool {
        let deadline = Instant::now() + wait;
        let mut state = self.state.lock();
        while !state.ended {
            if self.changed.wait_until(&mut state, deadline).timed_out() {
                return state.ended;
            }
        }
        true
    }

    /// "; it wrote on stderr: …" or "; it wrote nothing on stderr".
    fn describe(&self) -> String {
        let state = self.state.lock();
        if state.lines.is_empty() {
            "; it wrote nothing on stderr".to_string()
        } else {
            let text: Vec<&str> = state.lines.iter().map(String::as_str).collect();
            format!("; it wrote on stderr:\n{}", text.join("\n"))
        }
    }
}

/// What the watching threads share: enough to report, once, how the
/// server went.
struct Watch {
    server: String,
    command: String,
    router: Arc<Router>,
    tail: StderrTail,
    child: Mutex<Option<Child>>,
    /// Set when this side closes the connection: the pipes then end
    /// because we ended them, which is no news.
    closing: AtomicBool,
    /// The report, made by the first thread to see the server go; later
    /// ones wait for it and use the same.
    report: OnceLock<String>,
}

impl Watch {
    /// The server was seen going: `what` it did ("closed its stdout").
    /// Fails every request in flight with the report and returns it; `None`
    /// when this side is closing the connection.
    fn ended(&self, what: &str) -> Option<String> {
        if self.closing.load(Ordering::SeqCst) {
            return None;
        }
        let reason = self.report.get_or_init(|| {
            let drained = self.tail.wait_end(STDERR_DRAIN);
            // A process whose stderr is still open after the drain is most
            // likely alive; one whose stderr ended is exiting, or has.
            let status = self.exit_status(if drained {
                EXIT_STATUS_WAIT
            } else {
                Duration::ZERO
            });
            let how = match status {
                Some(status) => format!("exited ({status})"),
                None => format!("{what} but is still running"),
            };
            format!(
                "the server (`{}`) {how}{}",
                self.command,
                self.tail.describe()
            )
        });
        if self.closing.load(Ordering::SeqCst) {
            return None;
        }
        tracing::warn!(target: "zoo_core::mcp", server = %self.server, "{reason}");
        self.router.lost(reason.clone());
        Some(reason.clone())
    }

    /// The exit status, if the process ends within `wait`. Leaves the child
    /// to `close` to reap when it does not.
    fn exit_status(&self, wait: Duration) -> Option<ExitStatus> {
        let deadline = Instant::now() + wait;
        loop {
            match self.child.lock().as_mut() {
                Some(child) => {
                    if let Ok(Some(status)) = child.try_wait() {
                        return Some(status);
                    }
                }
                None => return None,
            }
            if Instant::now() >= deadline {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl StdioConnection {
    /// Starts the server; its output is delivered to `router` by reader
    /// threads that end when the pipes close. No line longer than
    /// `max_message_bytes` is ever held; a write to the server's stdin
    /// that cannot proceed for `timeout` gives up.
    pub(crate) fn spawn(
        server: &str,
        config: &StdioTransport,
        router: Arc<Router>,
        timeout: Duration,
        max_message_bytes: u64,
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
        let watch = Arc::new(Watch {
            server: server.to_string(),
            command: config.command_line(),
            router,
            tail: StderrTail::default(),
            child: Mutex::new(Some(child)),
            closing: AtomicBool::new(false),
            report: OnceLock::new(),
        });
        let connection = StdioConnection {
            server: server.to_string(),
            stdin: Mutex::new(None),
            timeout,
            watch: watch.clone(),
        };
        // From here on, dropping `connection` reaps the child.
        let max_line = usize::try_from(max_message_bytes).unwrap_or(usize::MAX);
        let thread =
            |suffix: &str| std::thread::Builder::new().name(format!("zoo-mcp-{server}{suffix}"));
        let spawned = thread("-stderr")
            .spawn({
                let watch = watch.clone();
                move || read_stderr(&watch, stderr)
            })
            .and_then(|_| {
                let watch = watch.clone();
                thread("").spawn(move || read_stdout(&watch, stdout, max_line))
            })
            .and_then(|_| watch_stdin(&watch, &stdin, thread("-stdin")));
        if let Err(e) = spawned {
            drop(stdin);
            connection.abort();
            return Err(Error::Internal(format!(
                "cannot start an MCP reader thread: {e}"
            )));
        }
        set_write_timeout(&stdin, timeout);
        *connection.stdin.lock() = Some(stdin);
        Ok(connection)
    }

    /// Ends the connection: stdin first, so a polite server exits by
    /// itself; then, after `grace`, the process is killed; it is reaped.
    fn shut_down(&self, grace: Duration) {
        self.watch.closing.store(true, Ordering::SeqCst);
        if let Some(stdin) = self.stdin.lock().take() {
            end_stdin(&stdin);
        }
        let Some(mut child) = self.watch.child.lock().take() else {
            return;
        };
        let deadline = Instant::now() + grace;
        loop {
            match child.try_wait() {
                Ok(Some(_)) => return,
                Ok(None) if Instant::now() < deadline => {
                    std::thread::sleep(Duration::from_millis(10))
                }
                _ => break,
            }
        }
        if !grace.is_zero() {
            tracing::debug!(target: "zoo_core::mcp", server = %self.server, "killing the server: it did not exit after its stdin closed");
        }
        let _ = child.kill();
        let _ = child.wait();
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
        let written = pipe.write_all(line.as_bytes()).and_then(|()| pipe.flush());
        let Err(e) = written else {
            return Ok(());
        };
        if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) {
            // The server has not read for a whole timeout, and part of a
            // line may be written: nothing sent after it could be read
            // right, so the connection is over.
            if let Some(stdin) = stdin.take() {
                end_stdin(&stdin);
            }
            drop(stdin);
            let reason = format!(
                "the server (`{}`) did not read its stdin for {} (the request timeout); \
                 the connection is closed",
                self.watch.command,
                seconds(self.timeout)
            );
            tracing::warn!(target: "zoo_core::mcp", server = %self.server, "{reason}");
            self.watch.router.lost(reason.clone());
            return Err(Error::mcp(&self.server, reason));
        }
        drop(stdin);
        // A socket refuses writes once its peer is closed: the server
        // closed its stdin, or exited. Report it as the watcher would, so
        // the message is the same whichever noticed first.
        let reason = self.watch.ended("closed its stdin").unwrap_or_else(|| {
            format!("cannot write to the server's stdin (it closed its stdin or exited): {e}")
        });
        Err(Error::mcp(&self.server, reason))
    }

    /// Ends stdin, gives the server [`EXIT_GRACE`] to exit, kills it if it
    /// has not, and reaps it.
    fn close(&self) {
        self.shut_down(EXIT_GRACE);
    }

    /// Kills the server at once: it never became usable, so there is
    /// nothing for it to finish.
    fn abort(&self) {
        self.shut_down(Duration::ZERO);
    }
}

impl Drop for StdioConnection {
    fn drop(&mut self) {
        self.close();
    }
}

fn read_stderr(watch: &Watch, stderr: impl Read) {
    let mut reader = BufReader::new(stderr);
    let mut buf = Vec::new();
    loop {
        let line = match read_line(&mut reader, &mut buf, STDERR_LINE_BYTES) {
            Ok(Line::Eof) | Err(_) => break,
            Ok(Line::Complete) => String::from_utf8_lossy(&buf).trim_end().to_string(),
            Ok(Line::TooLong { ended }) => {
                let kept = String::from_utf8_lossy(&buf).to_string();
                if !ended && !skip_line(&mut reader).unwrap_or(false) {
                    watch.tail.push(format!("{kept}… (cut)"));
                    break;
                }
                format!("{kept}… (cut at {})", size_text(STDERR_LINE_BYTES as u64))
            }
        };
        tracing::info!(target: "zoo_core::mcp", server = %watch.server, "stderr: {line}");
        watch.tail.push(line);
    }
    watch.tail.end();
}

fn read_stdout(watch: &Watch, stdout: impl Read, max_line: usize) {
    let mut reader = BufReader::new(stdout);
    let mut buf = Vec::new();
    let ended = loop {
        // One big message must not keep its buffer for the server's life.
        if buf.capacity() > KEEP_LINE_BUFFER {
            buf = Vec::new();
        }
        match read_line(&mut reader, &mut buf, max_line) {
            Ok(Line::Eof) => break "closed its stdout".to_string(),
            Err(e) => break format!("could not be read from ({e})"),
            Ok(Line::Complete) => {
                let line = String::from_utf8_lossy(&buf);
                if !line.trim().is_empty() {
                    watch.router.deliver_text(&line);
                }
            }
            Ok(Line::TooLong { ended }) => {
                watch.router.malformed(format!(
                    "the server wrote a message larger than {} (the transport's \
                     max_message_bytes), which was discarded: {}",
                    size_text(max_line as u64),
                    excerpt(&String::from_utf8_lossy(&buf))
                ));
                // The rest goes by without being kept; the server keeps
                // serving if it goes on with whole lines.
                if !ended {
                    match skip_line(&mut reader) {
                        Ok(true) => {}
                        Ok(false) => break "closed its stdout".to_string(),
                        Err(e) => break format!("could not be read from ({e})"),
                    }
                }
            }
        }
    };
    if watch.ended(&ended).is_none() {
        watch.router.close("the server was closed".into());
    }
}

/// Starts the thread that notices the server closing its stdin (on Unix,
/// where our end is a socket whose reads end when the server's end is
/// closed). The server never writes there, so a read returns only then,
/// or when `end_stdin` shuts our end down.
#[cfg(unix)]
fn watch_stdin(
    watch: &Arc<Watch>,
    stdin: &StdinWriter,
    thread: std::thread::Builder,
) -> std::io::Result<()> {
    let mut socket = stdin.try_clone()?;
    let watch = watch.clone();
    thread.spawn(move || {
        let mut byte = [0u8; 64];
        loop {
            match socket.read(&mut byte) {
                Ok(0) => break,
                Ok(_) => continue,
                Err(e) if e.kind() == ErrorKind::Interrupted => continue,
                Err(_) => break,
            }
        }
        watch.ended("closed its stdin");
    })?;
    Ok(())
}

#[cfg(not(unix))]
fn watch_stdin(
    _watch: &Arc<Watch>,
    _stdin: &StdinWriter,
    _thread: std::thread::Builder,
) -> std::io::Result<()> {
    Ok(())
}

/// So a server that stops reading cannot block a write forever.
#[cfg(unix)]
fn set_write_timeout(stdin: &StdinWriter, timeout: Duration) {
    let _ = stdin.set_write_timeout(Some(timeout));
}

#[cfg(not(unix))]
fn set_write_timeout(_stdin: &StdinWriter, _timeout: Duration) {}

/// Ends our side of stdin for every copy of it (the stdin watcher holds
/// one): the server reads end-of-file and the watcher wakes.
#[cfg(unix)]
fn end_stdin(stdin: &StdinWriter) {
    let _ = stdin.shutdown(std::net::Shutdown::Both);
}

#[cfg(not(unix))]
fn end_stdin(_stdin: &StdinWriter) {}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_stderr_tail_is_bounded_in_lines_and_bytes() {
        let watch = Watch {
            server: "s".into(),
            command: "cmd".into(),
            router: Router::new("s"),
            tail: StderrTail::default(),
            child: Mutex::new(None),
            closing: AtomicBool::new(false),
            report: OnceLock::new(),
        };
        // 50 lines of 100 KB, the last one never ended.
        let mut text = Vec::new();
        for i in 0..50 {
            text.extend(std::iter::repeat_n(b'a' + (i % 26) as u8, 100_000));
            if i < 49 {
                text.push(b'\n');
            }
        }
        read_stderr(&watch, &text[..]);
        let tail = watch.tail.describe();
        assert!(
            tail.len() < STDERR_LINES * (STDERR_LINE_BYTES + 64),
            "{}",
            tail.len()
        );
        assert_eq!(watch.tail.state.lock().lines.len(), STDERR_LINES);
        assert!(tail.contains("… (cut"), "{}", excerpt(&tail));
        assert!(watch.tail.wait_end(Duration::ZERO));
    }
}
