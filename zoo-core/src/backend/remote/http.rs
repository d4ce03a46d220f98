//! The HTTP exchange of remote backends, on a thread of its own.
//!
//! A blocking `ureq` agent does the I/O (no async runtime is needed), but
//! never on the inference thread: each request runs on a short-lived I/O
//! thread that reports what it reads (the answer's head, then the body:
//! whole, or a stream's bytes as each read returns them) through a bounded
//! channel. The inference thread waits on that channel in slices of a few
//! milliseconds and asks its stop condition (a cancel, the chat's deadline)
//! between them, so a stop is seen at once whatever the I/O is doing, even
//! while a name is resolved or a connect hangs. A stream's events are cut
//! and parsed on the inference thread ([`StreamBody`] reads the bytes as
//! they come): one hand-over per read of the socket, not per event, is what
//! keeps a fast stream cheap. On a stop the `ureq` agent is shut
//! down, which closes its sockets so the I/O thread ends promptly too (a
//! connect in progress ends at its timeout), and a new agent replaces it.

use std::io::{self, BufRead, Read};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::sync::Arc;
use std::time::Duration;

use super::retry;

/// How often a wait asks its stop condition.
const STOP_POLL: Duration = Duration::from_millis(10);
/// Reads of a stream held ahead of the inference thread at most
/// (backpressure, so a fast server cannot fill memory while callbacks run):
/// with `READ_BYTES` each, at most 1 MiB.
const READ_AHEAD: usize = 16;
/// The most one read of a stream takes.
const READ_BYTES: usize = 64 * 1024;
/// How long a finished reply waits for the end of its body, so that the
/// connection can be kept for the next request.
const END_GRACE: Duration = Duration::from_secs(1);

/// One request to send.
pub(crate) struct Request {
    pub(crate) url: String,
    pub(crate) headers: Vec<(String, String)>,
    pub(crate) body: Arc<str>,
    /// The largest error body or whole answer taken.
    pub(crate) max_error_bytes: u64,
    pub(crate) max_body_bytes: u64,
}

/// What the I/O thread reports, in order: `Failed`, or `Head` then either
/// `Body` or `Bytes` ending with `Bytes(Ok(empty))` (the end) or `Bytes(Err(_))`.
pub(crate) enum Io {
    /// The request got no answer.
    Failed(ureq::Error),
    /// The answer's status and what its headers say.
    Head {
        status: u16,
        /// `Retry-After` (seconds) or `retry-after-ms`, when given.
        retry_after: Option<Duration>,
        /// Whether the body is an event stream (else it is read whole).
        is_stream: bool,
    },
    /// The body of an error status (its start) or of an answer that does
    /// not stream (at most one byte more than the bound, to tell).
    Body(io::Result<Vec<u8>>),
    /// The next bytes of a streamed body as one read returned them; none
    /// at its end.
    Bytes(io::Result<Vec<u8>>),
}

/// A `ureq` agent whose exchanges a stop can cut short.
pub(crate) struct Client {
    agent: ureq::Agent,
    timeout: Duration,
}

impl Client {
    /// A client whose connects, waits for an answer and silences within
    /// an answer are each bounded by `timeout`. A reply that keeps
    /// streaming is never cut.
    pub(crate) fn new(timeout: Duration) -> Self {
        Client {
            agent: new_agent(timeout),
            timeout,
        }
    }

    /// Sends `request` from a new I/O thread; read its reports with
    /// [`Exchange::next`].
    pub(crate) fn start(&mut self, request: Request) -> io::Result<Exchange<'_>> {
        let (reports, received) = mpsc::sync_channel(READ_AHEAD);
        let agent = self.agent.clone();
        std::thread::Builder::new()
            .name("zoo-remote-io".into())
            .spawn(move || exchange(&agent, &request, &reports))?;
        Ok(Exchange {
            client: self,
            received,
            ended: false,
        })
    }

    /// Closes every connection (interrupting the I/O thread's reads and
    /// writes) and takes a fresh agent for the next request.
    fn reset(&mut self) {
        let old = std::mem::replace(&mut self.agent, new_agent(self.timeout));
        old.shutdown();
    }
}

/// One request in flight.
pub(crate) struct Exchange<'a> {
    client: &'a mut Client,
    received: Receiver<Io>,
    /// Whether the I/O thread made its last report.
    ended: bool,
}

impl Exchange<'_> {
    /// The next report, or `None` if `stop` said to stop first (asked
    /// every few milliseconds); then the exchange is cut short.
    pub(crate) fn next(&mut self, stop: &dyn Fn() -> bool) -> Option<Io> {
        loop {
            if stop() {
                self.cut();
                return None;
            }
            match self.received.recv_timeout(STOP_POLL) {
                Ok(io) => {
                    self.ended |= is_last(&io);
                    return Some(io);
                }
                Err(RecvTimeoutError::Timeout) => {}
                // The thread ended without its last report: it panicked.
                Err(RecvTimeoutError::Disconnected) => {
                    self.ended = true;
                    return Some(Io::Bytes(Err(io::Error::other(
                        "the HTTP thread ended unexpectedly",
                    ))));
                }
            }
        }
    }

    /// After a complete reply (`[DONE]`): waits briefly for the end of the
    /// body, so that the connection goes back to the pool for the next
    /// request instead of being closed.
    pub(crate) fn finish(&mut self, stop: &dyn Fn() -> bool) {
        let until = std::time::Instant::now() + END_GRACE;
        while !self.ended && std::time::Instant::now() < until {
            if self.next(stop).is_none() {
                return;
            }
        }
    }

    fn cut(&mut self) {
        if !self.ended {
            self.client.reset();
            self.ended = true;
        }
    }
}

impl Drop for Exchange<'_> {
    /// An exchange left before its end (a failure found in the stream, a
    /// stop) closes its connection, so the I/O thread does not linger.
    fn drop(&mut self) {
        self.cut();
    }
}

fn is_last(io: &Io) -> bool {
    match io {
        Io::Failed(_) | Io::Body(_) | Io::Bytes(Err(_)) => true,
        Io::Bytes(Ok(bytes)) => bytes.is_empty(),
        Io::Head { .. } => false,
    }
}

/// A streamed body as the inference thread reads it: the I/O thread's
/// reads, handed over one at a time. A stop (asked between waits) reads as
/// an error; the caller tells it from a broken connection by asking its
/// stop condition again.
pub(crate) struct StreamBody<'e, 'c> {
    exchange: &'e mut Exchange<'c>,
    stop: &'e dyn Fn() -> bool,
    chunk: Vec<u8>,
    at: usize,
}

impl<'e, 'c> StreamBody<'e, 'c> {
    /// The body of `exchange`, whose head has been read.
    pub(crate) fn new(exchange: &'e mut Exchange<'c>, stop: &'e dyn Fn() -> bool) -> Self {
        StreamBody {
            exchange,
            stop,
            chunk: Vec::new(),
            at: 0,
        }
    }

    /// After a complete reply: lets the body end (see [`Exchange::finish`]).
    pub(crate) fn finish(&mut self) {
        self.exchange.finish(self.stop);
    }
}

impl Read for StreamBody<'_, '_> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let available = self.fill_buf()?;
        let n = available.len().min(out.len());
        out[..n].copy_from_slice(&available[..n]);
        self.consume(n);
        Ok(n)
    }
}

impl BufRead for StreamBody<'_, '_> {
    fn fill_buf(&mut self) -> io::Result<&[u8]> {
        while self.at == self.chunk.len() {
            if self.exchange.ended {
                return Ok(&[]);
            }
            match self.exchange.next(self.stop) {
                None => return Err(io::Error::other("the request was stopped")),
                Some(Io::Bytes(Ok(bytes))) => {
                    self.chunk = bytes;
                    self.at = 0;
                    if self.chunk.is_empty() {
                        return Ok(&[]);
                    }
                }
                Some(Io::Bytes(Err(e))) => return Err(e),
                Some(_) => return Err(io::Error::other("the HTTP thread reported out of order")),
            }
        }
        Ok(&self.chunk[self.at..])
    }

    fn consume(&mut self, amount: usize) {
        self.at = (self.at + amount).min(self.chunk.len());
    }
}

/// The I/O thread: sends the request and reports what comes back. A report
/// that cannot be delivered (the inference thread left) ends it.
fn exchange(agent: &ureq::Agent, request: &Request, reports: &SyncSender<Io>) {
    let mut post = agent
        .post(request.url.as_str())
        .header("Content-Type", "application/json")
        .header("Accept", "text/event-stream");
    for (name, value) in &request.headers {
        post = post.header(name.as_str(), value.as_str());
    }
    let response = match post.send(&*request.body) {
        Ok(response) => response,
        Err(e) => {
            let _ = reports.send(Io::Failed(e));
            return;
        }
    };
    let status = response.status().as_u16();
    let header = |name: &str| {
        response
            .headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_string)
    };
    let retry_after = retry::parse_retry_after(
        header("retry-after").as_deref(),
        header("retry-after-ms").as_deref(),
    );
    let is_stream = header("content-type")
        .is_some_and(|v| v.to_ascii_lowercase().contains("text/event-stream"));
    let ok = (200..300).contains(&status);
    let head = Io::Head {
        status,
        retry_after,
        is_stream,
    };
    if reports.send(head).is_err() {
        return;
    }
    let reader = response.into_body().into_reader();
    if !ok || !is_stream {
        // Only the start of an error answer is read: it is for a message.
        let limit = if ok {
            request.max_body_bytes.saturating_add(1)
        } else {
            request.max_error_bytes
        };
        let mut body = Vec::new();
        let read = reader.take(limit).read_to_end(&mut body).map(|_| body);
        let _ = reports.send(Io::Body(read));
        return;
    }
    let mut reader = reader;
    let mut buffer = vec![0; READ_BYTES];
    loop {
        let read = loop {
            match reader.read(&mut buffer) {
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                other => break other,
            }
        };
        let report = read.map(|n| buffer[..n].to_vec());
        let last = !matches!(&report, Ok(bytes) if !bytes.is_empty());
        if reports.send(Io::Bytes(report)).is_err() || last {
            return;
        }
    }
}

fn new_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        // Error statuses carry the server's reason, which errors quote.
        .http_status_as_error(false)
        .timeout_connect(Some(timeout))
        .timeout_send_request(Some(timeout))
        .timeout_send_body(Some(timeout))
        .timeout_recv_response(Some(timeout))
        .timeout_per_read(Some(timeout))
        .user_agent(concat!("zoo-keeper/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}
