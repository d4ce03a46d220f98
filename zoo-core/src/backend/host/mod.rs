//! `HostBackend`: a model written in the host language. A C program, a
//! Python object or a Node object receives the conversation, the tools and
//! the settings of each reply ([`HostRequest`]) and streams the reply back
//! ([`HostOutput`] items into a [`HostSink`]), so that users can plug in
//! their own gateway or a test double while the agentic loop, validation
//! with self-correction, hooks, limits, steering, events and sessions work
//! on it unchanged.
//!
//! Each front door implements [`HostModel`], the small trait below; this
//! module turns it into a [`Backend`]:
//!
//! - The host's calls run on a thread of the backend's own (see `thread`),
//!   one at a time. The inference thread reads the items as they come,
//!   streams text to the chat's tokens and watches the chat's stop and time
//!   limit. A stop ends the reply at once, whatever the host is doing: the
//!   sink is closed (what the host emits after is dropped) and its cancel
//!   token set, so a host that polls [`HostSink::is_cancelled`] returns
//!   soon; the backend's next call waits for it.
//! - The host's failure (an `error` item, a failing `generate`: a C status,
//!   a Python exception, a Node rejection) fails the chat with
//!   `provider_failed` and the host's message; the history is as before.
//! - Tool calls come as data (`tool_call` items, validated and run as
//!   parsed calls are) or written in the text in the Hermes format
//!   (`<tool_call>{"name": ..., "arguments": {...}}</tool_call>`), which
//!   the engine parses as it does a local model's.
//! - Token counts: a host that reports `usage` gives the reply's counts; a
//!   reply without it is estimated as for remote models (see
//!   [`RemoteBackend::estimate_tokens`]), and so is every message the
//!   history manager counts, unless the host counts them itself
//!   ([`HostModel::counts_tokens`]). Compaction budgets then work from
//!   those estimates: set `context_size` a little below the real window (0
//!   assumes 32,768).

mod output;
mod request;
mod sink;
mod thread;

pub use output::{HostFinish, HostOutput, HostUsage};
pub use request::{HostRequest, Sampling};
pub use sink::HostSink;

use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use self::sink::Delivery;
use self::thread::{HostThread, Job};
use super::remote::{RemoteBackend, ThinkingLevel, DEFAULT_CONTEXT_SIZE};
use super::{Backend, FinishReason, GenerateRequest, Generation, NativeToolCall};
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::logs::targets;
use crate::message::Message;
use crate::provider::Provider;
use crate::tools::ToolCallFormat;

/// How often the inference thread, waiting for the host, looks at the
/// chat's stop and time limit: well inside the 100 ms a stop promises.
const CANCEL_POLL: Duration = Duration::from_millis(5);

/// How errors name a host backend: `provider host failed: ...`.
const LABEL: &str = "host";

/// The largest reply (text, thinking and call arguments together) taken,
/// as for remote models: a host that sends more is failing.
const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;

/// A model the host provides: what each front door implements (C's
/// `zoo_backend`, a Python object with `generate`, a Node object with
/// `generate`). Its calls run on the backend's own thread, one at a time.
pub trait HostModel: Send + 'static {
    /// Generates one reply to `request`, giving its items to `sink` (from
    /// this thread or others) and returning when the reply is complete;
    /// `Err` with a message fails it (`provider_failed`). A host should
    /// watch [`HostSink::is_cancelled`] while it works and return soon once
    /// it is set.
    fn generate(
        &mut self,
        request: &HostRequest,
        sink: &HostSink,
    ) -> std::result::Result<(), String>;

    /// Whether [`count_tokens`](Self::count_tokens) counts; when not (the
    /// default), the engine estimates.
    fn counts_tokens(&self) -> bool {
        false
    }

    /// The tokens `message` takes in a prompt, markup included; called only
    /// when [`counts_tokens`](Self::counts_tokens) says so.
    fn count_tokens(&mut self, message: &Message) -> std::result::Result<u32, String> {
        let _ = message;
        Err("this host backend counts no tokens".into())
    }
}

pub use crate::provider::host::HostProvider;

/// What an agent created by config alone is told when its provider is
/// `host`: the object has to be given.
pub(crate) fn needs_an_object() -> Error {
    Error::config(
        "provider.type",
        "`host` needs the backend object itself: Agent::with_host_backend in Rust, \
         zoo_agent_create_with_backend in C, Agent(backend=...) in Python, \
         Agent.create({backend}) in Node",
    )
}

/// A [`Backend`] on a [`HostModel`].
pub struct HostBackend {
    thread: HostThread,
    counts_tokens: bool,
    sampling: Sampling,
    thinking: ThinkingLevel,
    context_size: u32,
    /// The tool calls of the last reply, until the loop takes them.
    calls: Vec<NativeToolCall>,
    /// The thinking of the last reply.
    last_thinking: String,
}

impl std::fmt::Debug for HostBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostBackend")
            .field("counts_tokens", &self.counts_tokens)
            .field("thinking", &self.thinking)
            .field("context_size", &self.context_size)
            .finish_non_exhaustive()
    }
}

impl HostBackend {
    /// A backend on `host` with the sampling settings, `context_size` and
    /// `host` provider settings of `config` (whose `provider` is unset or
    /// `host`). Starts the host's thread.
    pub fn new(host: impl HostModel, config: &Config) -> Result<Self> {
        let thinking = match &config.provider {
            None => ThinkingLevel::Off,
            Some(Provider::Host(host)) => host.thinking,
            Some(other) => {
                return Err(Error::config(
                    "provider",
                    format!(
                        "an agent on a host backend takes no other provider (got `{}`)",
                        other.type_name()
                    ),
                ))
            }
        };
        let counts_tokens = host.counts_tokens();
        Ok(HostBackend {
            thread: HostThread::start(Box::new(host))?,
            counts_tokens,
            sampling: Sampling::of(config),
            thinking,
            context_size: match config.context_size {
                0 => DEFAULT_CONTEXT_SIZE,
                n => n,
            },
            calls: Vec::new(),
            last_thinking: String::new(),
        })
    }

    /// The thread the host's calls run on.
    pub fn thread_id(&self) -> ThreadId {
        self.thread.id()
    }

    /// The thinking the host gave with its last reply (empty if none).
    pub fn last_thinking(&self) -> &str {
        &self.last_thinking
    }

    /// Reads the reply until the host is done, the reply fails, or the
    /// engine ends it (stop, time limit, stop string).
    fn read(
        deliveries: &Receiver<Delivery>,
        reply: &mut Reply<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
        deadline: Option<Instant>,
    ) -> Ending {
        loop {
            if cancel.is_cancelled() {
                return Ending::Cut(FinishReason::Cancelled);
            }
            let mut slice = CANCEL_POLL;
            if let Some(deadline) = deadline {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return Ending::Cut(FinishReason::Length);
                }
                slice = slice.min(left);
            }
            match deliveries.recv_timeout(slice) {
                Ok(Delivery::Output(item)) => {
                    if let Some(ending) = reply.take(item, on_piece) {
                        return ending;
                    }
                }
                Ok(Delivery::Done(Ok(()))) => return Ending::Complete,
                Ok(Delivery::Done(Err(message))) => return Ending::Failed(message),
                Err(RecvTimeoutError::Timeout) => {}
                // The sink holds a sender until the reply ends: not reached.
                Err(RecvTimeoutError::Disconnected) => {
                    return Ending::Failed("the host backend's thread has ended".into())
                }
            }
        }
    }
}

impl HostBackend {
    /// Takes the items the host gave before the reply was cut and the
    /// sink closed (nothing more can arrive), up to a stop string.
    fn take_queued(
        deliveries: &Receiver<Delivery>,
        reply: &mut Reply<'_>,
        on_piece: &mut dyn FnMut(&str),
    ) {
        while let Ok(Delivery::Output(item)) = deliveries.try_recv() {
            // An error given before the cut does not outweigh the stop.
            if !matches!(item, HostOutput::Error { .. }) && reply.take(item, on_piece).is_some() {
                return;
            }
        }
    }
}

impl Backend for HostBackend {
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        self.calls.clear();
        self.last_thinking.clear();
        let started = Instant::now();
        let host_request = HostRequest::new(request, &self.sampling, self.thinking);
        tracing::debug!(
            target: targets::PROMPT,
            form = "host_request",
            "{}",
            host_request.to_json()
        );
        let (sink, deliveries) = HostSink::new();
        self.thread.send(Job::Generate {
            request: Box::new(host_request),
            sink: sink.clone(),
        })?;
        let mut reply = Reply::new(request.stop, started);
        let ending = Self::read(&deliveries, &mut reply, on_piece, cancel, request.deadline);
        // Whatever the host emits from now on is dropped; a host still
        // working sees its token set.
        if !matches!(ending, Ending::Complete) {
            sink.close();
        }
        if matches!(ending, Ending::Cut(_)) {
            // What the host gave before the cut is part of the reply.
            Self::take_queued(&deliveries, &mut reply, on_piece);
        }
        let finish = match ending {
            Ending::Failed(message) => {
                return Err(Error::ProviderFailed {
                    provider: LABEL.into(),
                    status: None,
                    message,
                })
            }
            Ending::Cut(finish) => finish,
            Ending::Stopped => FinishReason::Stop,
            Ending::Complete => reply.finish,
        };
        if !reply.thinking.is_empty() {
            tracing::debug!(thinking = %reply.thinking, "the host model's thinking");
        }
        if finish == FinishReason::Stop {
            self.calls = std::mem::take(&mut reply.calls);
        }
        let generation = reply.generation(request, finish, started);
        self.last_thinking = std::mem::take(&mut reply.thinking);
        Ok(generation)
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32> {
        if !self.counts_tokens {
            return Ok(RemoteBackend::estimate_tokens(message));
        }
        let (reply, counted) = sync_channel(1);
        self.thread.send(Job::Count {
            message: message.clone(),
            reply,
        })?;
        let counted = counted
            .recv()
            .map_err(|_| Error::Internal("the host backend's thread has ended".into()))?;
        counted.map_err(|message| Error::ProviderFailed {
            provider: LABEL.into(),
            status: None,
            message: format!("count_tokens failed: {message}"),
        })
    }

    fn context_size(&self) -> u32 {
        self.context_size
    }

    /// The format of calls written in the text, which the engine parses
    /// (and hides from the chat's tokens).
    fn tool_call_format(&self) -> ToolCallFormat {
        ToolCallFormat::Hermes
    }

    fn take_tool_calls(&mut self) -> Vec<NativeToolCall> {
        std::mem::take(&mut self.calls)
    }
}

/// How reading a reply ended.
enum Ending {
    /// The host returned.
    Complete,
    /// A stop string ended the text (the host may still be working).
    Stopped,
    /// The engine cut the reply short: `Cancelled` or `Length`.
    Cut(FinishReason),
    /// The host failed, with its message.
    Failed(String),
}

/// The failure of a reply past [`MAX_REPLY_BYTES`].
fn too_large() -> Ending {
    Ending::Failed(format!(
        "the reply passed {} MiB without ending",
        MAX_REPLY_BYTES / (1024 * 1024)
    ))
}

/// A reply as it is read.
struct Reply<'a> {
    stop: &'a [String],
    text: String,
    thinking: String,
    calls: Vec<NativeToolCall>,
    usage: Option<HostUsage>,
    finish: FinishReason,
    /// Bytes of text, thinking and call arguments taken so far.
    held: usize,
    /// When the first item came, from the start of the request.
    first_item: Option<Duration>,
    started: Instant,
}

impl<'a> Reply<'a> {
    fn new(stop: &'a [String], started: Instant) -> Self {
        Reply {
            stop,
            text: String::new(),
            thinking: String::new(),
            calls: Vec::new(),
            usage: None,
            finish: FinishReason::Stop,
            held: 0,
            first_item: None,
            started,
        }
    }

    /// Takes one item; returns how the reply ends if this item ends it.
    fn take(&mut self, item: HostOutput, on_piece: &mut dyn FnMut(&str)) -> Option<Ending> {
        self.first_item
            .get_or_insert_with(|| self.started.elapsed());
        match item {
            HostOutput::Text { text } => {
                self.held += text.len();
                if self.held > MAX_REPLY_BYTES {
                    return Some(too_large());
                }
                return self.push_text(&text, on_piece);
            }
            HostOutput::Thinking { text } => {
                self.held += text.len();
                self.thinking.push_str(&text);
            }
            HostOutput::ToolCall { name, arguments } => {
                let arguments = HostOutput::arguments_text(&arguments);
                self.held += name.len() + arguments.len();
                self.calls.push(NativeToolCall { name, arguments });
            }
            HostOutput::Usage(usage) => self.usage = Some(usage),
            HostOutput::Finish { reason } => {
                self.finish = match reason {
                    HostFinish::Stop => FinishReason::Stop,
                    HostFinish::Length => FinishReason::Length,
                }
            }
            HostOutput::Error { message } => return Some(Ending::Failed(message)),
        }
        (self.held > MAX_REPLY_BYTES).then(too_large)
    }

    /// Appends a piece of text and streams it, up to the first stop
    /// string, which ends the reply.
    fn push_text(&mut self, piece: &str, on_piece: &mut dyn FnMut(&str)) -> Option<Ending> {
        let before = self.text.len();
        self.text.push_str(piece);
        match self.stop_at(before) {
            None => {
                if !piece.is_empty() {
                    on_piece(piece);
                }
                None
            }
            Some(at) => {
                self.text.truncate(at);
                if at > before {
                    on_piece(&self.text[before..]);
                }
                Some(Ending::Stopped)
            }
        }
    }

    /// Where the first stop string begins, looking only where one could
    /// have been completed by the bytes after `before`.
    fn stop_at(&self, before: usize) -> Option<usize> {
        let longest = self.stop.iter().map(String::len).max()?;
        let mut from = before.saturating_sub(longest.saturating_sub(1));
        while !self.text.is_char_boundary(from) {
            from -= 1;
        }
        self.stop
            .iter()
            .filter(|s| !s.is_empty())
            .filter_map(|s| self.text[from..].find(s.as_str()).map(|at| from + at))
            .min()
    }

    /// The finished reply: the host's usage, or estimates.
    fn generation(
        &self,
        request: &GenerateRequest<'_>,
        finish: FinishReason,
        started: Instant,
    ) -> Generation {
        let usage = self.usage.unwrap_or_else(|| HostUsage {
            prompt_tokens: request
                .messages
                .iter()
                .map(RemoteBackend::estimate_tokens)
                .fold(0, u32::saturating_add),
            cached_tokens: 0,
            completion_tokens: RemoteBackend::estimate_tokens(&Message::assistant(
                self.text.clone(),
            ))
            .saturating_sub(4),
        });
        let total = started.elapsed();
        let prompt_time = self.first_item.unwrap_or(total);
        Generation {
            text: self.text.clone(),
            thinking: self.thinking.clone(),
            finish,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens.min(usage.prompt_tokens),
            completion_tokens: usage.completion_tokens,
            prompt_time,
            generation_time: total.saturating_sub(prompt_time),
        }
    }
}
