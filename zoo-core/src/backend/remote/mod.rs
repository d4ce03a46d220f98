//! `RemoteBackend`: a model behind an HTTP API instead of a local GGUF, so
//! that the same agent (tools, hooks, sessions) runs on a GPU box, a vLLM
//! or llama.cpp server cluster, or a hosted API. Chosen by the `provider`
//! config key, it speaks OpenAI-compatible Chat Completions
//! (`{"type": "openai"}`, which llama.cpp's server, vLLM, Ollama, LM
//! Studio, TGI, LiteLLM and OpenAI itself all serve), Anthropic Messages
//! (`{"type": "anthropic"}`) and Gemini `streamGenerateContent`
//! (`{"type": "gemini"}`); each API's rules are in its module.
//!
//! - Replies stream over server-sent events; text goes to `on_piece` as it
//!   arrives. Tools go to the server as data (no grammar): its tool calls
//!   come back as data, are put together from their pieces, and reach the
//!   agentic loop through [`Backend::take_tool_calls`], where validation
//!   and self-correction treat them like parsed ones. A server that does
//!   not parse calls and returns them as text still works: the loop parses
//!   the text as it does for local models.
//! - Reasoning and thinking are never part of the text; the last reply's
//!   is kept until the next ([`RemoteBackend::last_reasoning`]) and logged
//!   at debug level (the history has no thinking field). What an API wants
//!   back of it (signed thinking with the calls that followed it) is kept
//!   by the backend (`signed`).
//! - Failures are retried or reported as described in `retry`; each retry
//!   is reported ([`Backend::generate_with_retries`]) before its wait; a
//!   cancel stops a stream or a backoff within milliseconds.
//! - Token counts are estimates (see [`RemoteBackend::estimate_tokens`]):
//!   the server's tokenizer is not here. History pruning therefore works
//!   from estimates, and `context_size` should be set a little below the
//!   server's real window.

mod anthropic;
mod gemini;
mod gemini_schema;
mod http;
mod openai;
mod protocol;
mod reply;
mod retry;
mod signed;
mod sse;

pub use crate::provider::remote::{
    AnthropicProvider, GeminiProvider, MaxTokensField, OpenAiProvider, ThinkingLevel,
    ANTHROPIC_BASE_URL, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, GEMINI_BASE_URL,
};

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use self::http::{Client, Exchange, Io, StreamBody};
use self::protocol::{Decoder, Protocol, Sampling};
use self::reply::{ChunkError, Reply, ReportedUsage};
use self::retry::Failure;
use self::sse::{EventReader, SseError};
use super::{Backend, FinishReason, GenerateRequest, Generation, NativeToolCall, RetryInfo};
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::logs::targets;
use crate::message::Message;
use crate::tools::ToolCallFormat;

/// What an image is counted as: about the most the providers charge for
/// one (Anthropic's cap is near 1,600; OpenAI's high detail near 1,100).
pub const IMAGE_TOKENS: u32 = 1_600;

/// The window assumed when `context_size` is 0: what most served models
/// of today offer at least.
pub const DEFAULT_CONTEXT_SIZE: u32 = 32_768;
/// The largest stream event (one chunk) taken.
const MAX_EVENT_BYTES: usize = 16 * 1024 * 1024;
/// The largest reply (text, reasoning and call arguments together) or
/// non-streamed answer taken; a server that sends more is failing.
const MAX_REPLY_BYTES: usize = 64 * 1024 * 1024;
/// `MAX_REPLY_BYTES` in MiB, for messages.
const MAX_REPLY_MIB: usize = MAX_REPLY_BYTES / (1024 * 1024);
/// How much of an error answer is read for its message.
const MAX_ERROR_BYTES: u64 = 64 * 1024;

/// How much of a server's error text a `retry` event quotes.
const MAX_RETRY_REASON_CHARS: usize = 200;

/// A model served over an HTTP API: OpenAI-compatible, Anthropic or Gemini.
pub struct RemoteBackend {
    /// `openai (http://host:port/v1)`, as errors name the provider.
    label: String,
    url: String,
    model: Option<String>,
    api_key: Option<String>,
    headers: Vec<(String, String)>,
    max_retries: u32,
    protocol: Protocol,
    sampling: Sampling,
    context_size: u32,
    client: Client,
    /// The tool calls of the last reply, until the loop takes them.
    calls: Vec<NativeToolCall>,
    reasoning: String,
}

impl std::fmt::Debug for RemoteBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers: Vec<&str> = self.headers.iter().map(|(n, _)| n.as_str()).collect();
        f.debug_struct("RemoteBackend")
            .field("provider", &self.label)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("headers", &headers)
            .field("max_retries", &self.max_retries)
            .field("context_size", &self.context_size)
            .finish_non_exhaustive()
    }
}

impl RemoteBackend {
    /// A backend on an OpenAI-compatible server, with the sampling
    /// settings (`temperature`, `top_p`, `seed`) and `context_size` of
    /// `config`. The API key is read here (from `api_key_env` if so set).
    pub fn openai(provider: &OpenAiProvider, config: &Config) -> Result<Self> {
        let api_key = provider.resolve_api_key()?;
        let base = provider.base_url.trim_end_matches('/');
        if base.is_empty() {
            return Err(Error::config(
                "provider.base_url",
                "is required: the address of the server's API, such as http://127.0.0.1:8080/v1",
            ));
        }
        let url = if base.ends_with("/chat/completions") {
            base.to_string()
        } else {
            format!("{base}/chat/completions")
        };
        let protocol = Protocol::OpenAi {
            max_tokens_field: provider.max_tokens_field,
        };
        let connection = Connection {
            base,
            url,
            model: provider.model.clone(),
            api_key,
            headers: &provider.headers,
            max_retries: provider.max_retries,
            timeout: provider.timeout(),
        };
        Ok(Self::new(protocol, connection, config))
    }

    /// A backend on Anthropic's Messages API (`provider.model` is required).
    pub fn anthropic(provider: &AnthropicProvider, config: &Config) -> Result<Self> {
        let api_key = provider.resolve_api_key()?;
        let base = provider.base_url.trim_end_matches('/');
        let connection = Connection {
            base,
            url: anthropic::url(base),
            model: Some(required_model(&provider.model)?),
            api_key,
            headers: &provider.headers,
            max_retries: provider.max_retries,
            timeout: provider.timeout(),
        };
        let protocol = Protocol::Anthropic(anthropic::Anthropic::new(provider.thinking));
        Ok(Self::new(protocol, connection, config))
    }

    /// A backend on the Gemini API (`provider.model` is required).
    pub fn gemini(provider: &GeminiProvider, config: &Config) -> Result<Self> {
        let api_key = provider.resolve_api_key()?;
        let base = provider.base_url.trim_end_matches('/');
        let model = required_model(&provider.model)?;
        let connection = Connection {
            base,
            url: gemini::url(base, &model),
            model: Some(model),
            api_key,
            headers: &provider.headers,
            max_retries: provider.max_retries,
            timeout: provider.timeout(),
        };
        let protocol = Protocol::Gemini(gemini::Gemini::new(provider.thinking));
        Ok(Self::new(protocol, connection, config))
    }

    fn new(protocol: Protocol, connection: Connection<'_>, config: &Config) -> Self {
        RemoteBackend {
            label: format!(
                "{} ({})",
                protocol.name(),
                without_credentials(connection.base)
            ),
            url: connection.url,
            model: connection.model,
            api_key: connection.api_key,
            headers: connection
                .headers
                .iter()
                .map(|(n, v)| (n.clone(), v.clone()))
                .collect(),
            max_retries: connection.max_retries,
            protocol,
            sampling: Sampling {
                temperature: config.temperature,
                top_p: config.top_p,
                seed: config.seed,
            },
            context_size: match config.context_size {
                0 => DEFAULT_CONTEXT_SIZE,
                n => n,
            },
            client: Client::new(connection.timeout),
            calls: Vec::new(),
            reasoning: String::new(),
        }
    }

    /// The reasoning the model gave with its last reply (empty if none).
    pub fn last_reasoning(&self) -> &str {
        &self.reasoning
    }

    /// The estimate behind [`Backend::count_tokens`]: a token per 4 bytes
    /// of text (call names and arguments included), rounded up, plus 4 for
    /// the role markup. English prose averages about 4 bytes per token in
    /// the common BPE vocabularies; code and other scripts take more
    /// tokens, so leave some margin in `context_size`. An image counts
    /// as [`IMAGE_TOKENS`], whatever its size (never its base64).
    pub fn estimate_tokens(message: &Message) -> u32 {
        let calls: usize = message
            .tool_calls
            .iter()
            .map(|c| c.name.len() + c.arguments.to_string().len())
            .sum();
        let bytes = message.content.len() + calls;
        let images = IMAGE_TOKENS.saturating_mul(message.images.len() as u32);
        (4 + u32::try_from(bytes.div_ceil(4)).unwrap_or(u32::MAX - 4)).saturating_add(images)
    }

    /// One request, with its retries.
    fn request(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        on_retry: &mut dyn FnMut(&RetryInfo),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        let started = Instant::now();
        let interrupt = Interrupt {
            cancel,
            deadline: request.deadline,
        };
        let body = self
            .protocol
            .body(self.model.as_deref(), request, &self.sampling)
            .to_string();
        // The request as sent; the key travels in a header, never here.
        tracing::debug!(target: targets::PROMPT, form = "request_body", "{body}");
        let body: Arc<str> = Arc::from(body);
        let mut retries = 0;
        loop {
            if let Some(cut) = interrupt.check() {
                return Ok(cut_before_reply(cut, started));
            }
            match self.attempt(&body, on_piece, interrupt, started) {
                Ok(reply) => return Ok(self.finish(reply, request, started)),
                Err(Failure::Fatal(error)) => return Err(error),
                Err(Failure::Transient { error, retry_after }) => {
                    if retries == self.max_retries {
                        return Err(gave_up(error, retries + 1));
                    }
                    if let Some(after) = retry_after.filter(|a| *a > retry::MAX_RETRY_AFTER) {
                        return Err(append(
                            error,
                            &format!(
                                " (the server asked to wait {} s before trying again, longer \
                                 than the {} s a chat waits)",
                                after.as_secs(),
                                retry::MAX_RETRY_AFTER.as_secs()
                            ),
                        ));
                    }
                    let delay = retry::delay(retries, retry_after);
                    tracing::warn!(
                        provider = %self.label,
                        error = %error,
                        delay_ms = delay.as_millis() as u64,
                        attempt = retries + 1,
                        "remote model request failed; trying again"
                    );
                    on_retry(&retry_info(&error, retries + 1, self.max_retries, delay));
                    if !retry::wait(delay, || interrupt.check().is_some()) {
                        let cut = interrupt.check().unwrap_or(FinishReason::Cancelled);
                        return Ok(cut_before_reply(cut, started));
                    }
                }
            }
            retries += 1;
        }
    }

    /// One HTTP exchange: the reply when it completed or was cut short
    /// (by a cancel or the deadline), else how it failed.
    fn attempt(
        &mut self,
        body: &Arc<str>,
        on_piece: &mut dyn FnMut(&str),
        interrupt: Interrupt<'_>,
        started: Instant,
    ) -> Result<Attempt, Failure> {
        let mut headers = self.headers.clone();
        for (name, value) in self.protocol.fixed_headers() {
            if !headers.iter().any(|(n, _)| n.eq_ignore_ascii_case(name)) {
                headers.push((name.to_string(), value.to_string()));
            }
        }
        if let Some(key) = &self.api_key {
            headers.push(self.protocol.auth_header(key));
        }
        let request = http::Request {
            url: self.url.clone(),
            headers,
            body: Arc::clone(body),
            max_error_bytes: MAX_ERROR_BYTES,
            max_body_bytes: MAX_REPLY_BYTES as u64,
        };
        let secrets = Secrets {
            key: self.api_key.as_deref(),
            headers: &self.headers,
        };
        let label = self.label.as_str();
        let stop = || interrupt.check().is_some();
        let mut exchange = self.client.start(request).map_err(|e| {
            Failure::Fatal(Error::Internal(format!(
                "cannot start the HTTP thread: {e}"
            )))
        })?;
        let cut = |reply| Ok(Attempt::cut(reply, interrupt));
        let (status, retry_after, is_stream) = match exchange.next(&stop) {
            None => return cut(Reply::default()),
            Some(Io::Head {
                status,
                retry_after,
                is_stream,
            }) => (status, retry_after, is_stream),
            Some(Io::Failed(e)) => return Err(transport_failure(label, e)),
            Some(_) => return Err(unexpected(label)),
        };
        let ok = (200..300).contains(&status);
        if ok && is_stream {
            let decoder = self.protocol.decoder();
            return read_stream(label, exchange, decoder, on_piece, interrupt, started);
        }
        let body = match exchange.next(&stop) {
            None => return cut(Reply::default()),
            Some(Io::Body(body)) => body,
            Some(_) => return Err(unexpected(label)),
        };
        if !ok {
            // A failure to read an error answer leaves the message
            // without the server's words.
            let text = String::from_utf8_lossy(&body.unwrap_or_default()).into_owned();
            return Err(status_failure(label, &secrets, status, retry_after, &text));
        }
        match body {
            Ok(body) => read_whole(label, &self.protocol, &body, on_piece),
            Err(e) => Err(broken(
                label,
                &Reply::default(),
                &format!("the connection broke: {e}"),
            )),
        }
    }

    /// The generation of a finished (or cut) reply.
    fn finish(
        &mut self,
        attempt: Attempt,
        request: &GenerateRequest<'_>,
        started: Instant,
    ) -> Generation {
        let Attempt {
            reply,
            first_chunk,
            cut,
        } = attempt;
        let total = started.elapsed();
        let prompt_time = first_chunk.unwrap_or(total);
        if !reply.reasoning.is_empty() {
            tracing::debug!(provider = %self.label, reasoning = %reply.reasoning, "the model's reasoning");
        }
        self.reasoning = reply.reasoning.clone();
        let finish = cut.unwrap_or_else(|| reply.finish());
        // Calls are taken only from a reply that ended: half a call is none.
        if finish == FinishReason::Stop {
            self.calls = reply.tool_calls();
            if !self.calls.is_empty() {
                self.protocol.remember(&reply);
            }
        }
        let usage = reply.usage.unwrap_or_else(|| ReportedUsage {
            prompt_tokens: request.messages.iter().map(Self::estimate_tokens).sum(),
            cached_tokens: 0,
            completion_tokens: Self::estimate_tokens(&Message::assistant(reply.text.clone()))
                .saturating_sub(4),
        });
        Generation {
            text: reply.text,
            thinking: reply.reasoning,
            finish,
            prompt_tokens: usage.prompt_tokens,
            cached_tokens: usage.cached_tokens.min(usage.prompt_tokens),
            completion_tokens: usage.completion_tokens,
            prompt_time,
            generation_time: total.saturating_sub(prompt_time),
        }
    }
}

impl Backend for RemoteBackend {
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        self.generate_with_retries(request, on_piece, &mut |_| {}, cancel)
    }

    fn generate_with_retries(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        on_retry: &mut dyn FnMut(&RetryInfo),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        self.calls.clear();
        self.reasoning.clear();
        self.request(request, on_piece, on_retry, cancel)
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32> {
        Ok(Self::estimate_tokens(message))
    }

    fn context_size(&self) -> u32 {
        self.context_size
    }

    /// Calls come back as data; this is the format the loop falls back to
    /// for a server that returns them as text (and hides from `on_token`).
    fn tool_call_format(&self) -> ToolCallFormat {
        ToolCallFormat::Hermes
    }

    fn take_tool_calls(&mut self) -> Vec<NativeToolCall> {
        std::mem::take(&mut self.calls)
    }
}

/// What may cut a reply short: the chat's cancel token, and the deadline
/// of its time limit.
#[derive(Clone, Copy)]
struct Interrupt<'a> {
    cancel: &'a CancelToken,
    deadline: Option<Instant>,
}

impl Interrupt<'_> {
    /// How the reply ends if it must end now: `Cancelled` on a cancel,
    /// `Length` past the deadline (as a local model's reply would).
    fn check(&self) -> Option<FinishReason> {
        if self.cancel.is_cancelled() {
            Some(FinishReason::Cancelled)
        } else if self.deadline.is_some_and(|d| Instant::now() >= d) {
            Some(FinishReason::Length)
        } else {
            None
        }
    }
}

/// What one exchange produced.
struct Attempt {
    reply: Reply,
    /// When the first chunk arrived, from the start of the request.
    first_chunk: Option<Duration>,
    /// How the reply was cut short, if it was.
    cut: Option<FinishReason>,
}

impl Attempt {
    /// The reply so far, cut short by `interrupt`.
    fn cut(reply: Reply, interrupt: Interrupt<'_>) -> Self {
        Attempt {
            reply,
            first_chunk: None,
            cut: Some(interrupt.check().unwrap_or(FinishReason::Cancelled)),
        }
    }
}

/// Values that must never reach an error message: the API key, and the
/// configured headers' values (they often carry credentials too).
struct Secrets<'a> {
    key: Option<&'a str>,
    headers: &'a [(String, String)],
}

impl Secrets<'_> {
    /// `text` with every secret replaced by `[redacted]`. Header values
    /// under 8 bytes are left: they are not secrets, and replacing a
    /// short word everywhere would garble the message.
    fn scrub(&self, text: &str) -> String {
        let mut text = text.to_string();
        let key = self.key.filter(|k| !k.is_empty());
        let values = self
            .headers
            .iter()
            .map(|(_, v)| v.as_str())
            .filter(|v| v.len() >= 8);
        for secret in key.into_iter().chain(values) {
            text = text.replace(secret, "[redacted]");
        }
        text
    }
}

/// Reads a streamed reply to its end, or until it is cut short.
fn read_stream(
    label: &str,
    mut exchange: Exchange<'_>,
    mut decoder: Decoder,
    on_piece: &mut dyn FnMut(&str),
    interrupt: Interrupt<'_>,
    started: Instant,
) -> Result<Attempt, Failure> {
    let stop = || interrupt.check().is_some();
    let mut events = EventReader::new(StreamBody::new(&mut exchange, &stop), MAX_EVENT_BYTES);
    let mut reply = Reply::default();
    let mut first_chunk = None;
    loop {
        let data =
            match events.next_data() {
                Ok(Some(data)) => data,
                Ok(None) if reply.done || reply.finished() => break,
                Ok(None) => return Err(broken(
                    label,
                    &reply,
                    "the stream ended before the reply did (no reason why it ended, no end marker)",
                )),
                // A stop reads as an error of the body: it is a cut, not a break.
                Err(_) if interrupt.check().is_some() => {
                    return Ok(Attempt {
                        first_chunk,
                        ..Attempt::cut(reply, interrupt)
                    })
                }
                Err(SseError::Io(e)) => {
                    return Err(broken(label, &reply, &format!("the connection broke: {e}")))
                }
                Err(SseError::TooLarge(max)) => {
                    return Err(Failure::Fatal(provider_error(
                        label,
                        Some(200),
                        format!("a stream event was larger than {} MiB", max / (1024 * 1024)),
                    )))
                }
            };
        first_chunk.get_or_insert_with(|| started.elapsed());
        match decoder.push(&mut reply, &data, on_piece) {
            Ok(()) => {}
            Err(ChunkError::Malformed(message)) => {
                return Err(Failure::Fatal(provider_error(label, Some(200), message)))
            }
            Err(ChunkError::Server(text)) => return Err(stream_error(label, &reply, text)),
        }
        if reply.held_bytes() > MAX_REPLY_BYTES {
            return Err(Failure::Fatal(provider_error(
                label,
                Some(200),
                format!("the reply passed {MAX_REPLY_MIB} MiB without ending"),
            )));
        }
        if reply.done {
            events.reader_mut().finish();
            break;
        }
    }
    Ok(Attempt {
        reply,
        first_chunk,
        cut: None,
    })
}

/// Reads an answer that was not streamed (a server that ignores `stream`).
fn read_whole(
    label: &str,
    protocol: &Protocol,
    body: &[u8],
    on_piece: &mut dyn FnMut(&str),
) -> Result<Attempt, Failure> {
    if body.len() > MAX_REPLY_BYTES {
        return Err(Failure::Fatal(provider_error(
            label,
            Some(200),
            format!("the answer passed {MAX_REPLY_MIB} MiB"),
        )));
    }
    match protocol.read_whole(&String::from_utf8_lossy(body), on_piece) {
        Ok(reply) => Ok(Attempt {
            reply,
            first_chunk: None,
            cut: None,
        }),
        Err(ChunkError::Malformed(message)) => {
            Err(Failure::Fatal(provider_error(label, Some(200), message)))
        }
        Err(ChunkError::Server(text)) => Err(stream_error(label, &Reply::default(), text)),
    }
}

/// The I/O thread broke its order of reports (a bug, not the server's).
fn unexpected(label: &str) -> Failure {
    Failure::Fatal(Error::Internal(format!(
        "the HTTP exchange with {label} reported out of order"
    )))
}

/// A stream that broke: worth another try only if nothing of the reply
/// had arrived (a retry would otherwise repeat text the caller has seen).
fn broken(label: &str, reply: &Reply, what: &str) -> Failure {
    if reply.started() {
        Failure::Fatal(provider_error(
            label,
            Some(200),
            format!("{what}, after {} bytes of the reply", reply.held_bytes()),
        ))
    } else {
        Failure::Transient {
            error: provider_error(label, Some(200), what.to_string()),
            retry_after: None,
        }
    }
}

/// An error the server reported inside its stream.
fn stream_error(label: &str, reply: &Reply, text: String) -> Failure {
    if retry::mentions_context_overflow(&text) {
        return Failure::Fatal(Error::ContextOverflow(format!(
            "{label} said the prompt does not fit: {text}"
        )));
    }
    broken(
        label,
        reply,
        &format!("the server reported an error: {text}"),
    )
}

/// A request that got no answer.
fn transport_failure(label: &str, error: ureq::Error) -> Failure {
    let message = match &error {
        ureq::Error::Timeout(what) => format!("no answer in time ({what})"),
        other => format!("cannot reach the server: {other}"),
    };
    let error_kind_is_transient = matches!(
        error,
        ureq::Error::Timeout(_)
            | ureq::Error::Io(_)
            | ureq::Error::HostNotFound
            | ureq::Error::ConnectionFailed
    );
    let error = provider_error(label, None, message);
    if error_kind_is_transient {
        Failure::Transient {
            error,
            retry_after: None,
        }
    } else {
        Failure::Fatal(error)
    }
}

/// An answer with an error status; `body` is the start of its body.
fn status_failure(
    label: &str,
    secrets: &Secrets<'_>,
    status: u16,
    retry_after: Option<Duration>,
    body: &str,
) -> Failure {
    let text = secrets.scrub(&reply::error_body_text(body));
    if status == 401 || status == 403 {
        return Failure::Fatal(Error::AuthenticationFailed {
            provider: label.to_string(),
            status,
            message: text,
        });
    }
    if retry::is_context_overflow(status, &text) {
        return Failure::Fatal(Error::ContextOverflow(format!(
            "{label} answered HTTP {status}: {text}"
        )));
    }
    let error = provider_error(label, Some(status), text);
    if retry::is_transient(status) {
        let retry_after = retry_after.or_else(|| retry::retry_delay_in_body(body));
        Failure::Transient { error, retry_after }
    } else {
        Failure::Fatal(error)
    }
}

fn provider_error(label: &str, status: Option<u16>, message: String) -> Error {
    Error::ProviderFailed {
        provider: label.to_string(),
        status,
        message,
    }
}

/// What a `retry` event says of a failure about to be tried again.
fn retry_info(error: &Error, attempt: u32, max_retries: u32, delay: Duration) -> RetryInfo {
    let (status, message) = match error {
        Error::ProviderFailed {
            status, message, ..
        } => (*status, message.as_str()),
        _ => (None, ""),
    };
    // A stream that broke before its reply began failed after a 200: no
    // status is to blame.
    let status = status.filter(|s| !(200..300).contains(s));
    let short = match message.char_indices().nth(MAX_RETRY_REASON_CHARS) {
        Some((at, _)) => format!("{}...", &message[..at]),
        None => message.to_string(),
    };
    let reason = match status {
        Some(status) => format!("HTTP {status}: {short}"),
        None => short,
    };
    RetryInfo {
        attempt,
        max_retries,
        delay_ms: u64::try_from(delay.as_millis()).unwrap_or(u64::MAX),
        status,
        reason,
    }
}

/// The settings every API's backend is built from.
struct Connection<'a> {
    /// The base URL as configured, without a trailing `/` (errors show it).
    base: &'a str,
    url: String,
    model: Option<String>,
    api_key: Option<String>,
    headers: &'a BTreeMap<String, String>,
    max_retries: u32,
    timeout: Duration,
}

/// The model's name where the API needs one; its `models/` prefix and
/// surrounding space are the caller's to keep or not.
fn required_model(model: &str) -> Result<String> {
    if model.trim().is_empty() {
        return Err(Error::config(
            "provider.model",
            "is required: the model's name, such as claude-sonnet-4-5 or gemini-2.5-flash",
        ));
    }
    Ok(model.to_string())
}

/// A transient error that ran out of tries, saying how many were made.
fn gave_up(error: Error, attempts: u32) -> Error {
    if attempts < 2 {
        return error;
    }
    append(error, &format!(" (gave up after {attempts} attempts)"))
}

fn append(error: Error, text: &str) -> Error {
    match error {
        Error::ProviderFailed {
            provider,
            status,
            message,
        } => Error::ProviderFailed {
            provider,
            status,
            message: message + text,
        },
        other => other,
    }
}

/// A reply cut short before anything of it arrived.
fn cut_before_reply(finish: FinishReason, started: Instant) -> Generation {
    Generation {
        text: String::new(),
        thinking: String::new(),
        finish,
        prompt_tokens: 0,
        cached_tokens: 0,
        completion_tokens: 0,
        prompt_time: started.elapsed(),
        generation_time: Duration::ZERO,
    }
}

/// `base` without a `user:password@` in its authority, for messages.
fn without_credentials(base: &str) -> String {
    let Some((scheme, rest)) = base.split_once("://") else {
        return base.to_string();
    };
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    match authority.rsplit_once('@') {
        Some((_, host)) => format!("{scheme}://{host}{path}"),
        None => base.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn credentials_never_reach_messages() {
        assert_eq!(
            without_credentials("https://user:pw@example.com/v1"),
            "https://example.com/v1"
        );
        assert_eq!(
            without_credentials("http://127.0.0.1:8080/v1"),
            "http://127.0.0.1:8080/v1"
        );
        let headers = vec![
            ("X-Key".to_string(), "header-secret".to_string()),
            ("X-Org".to_string(), "acme".to_string()),
        ];
        let secrets = Secrets {
            key: Some("sk-1"),
            headers: &headers,
        };
        assert_eq!(
            secrets.scrub("bad key sk-1, header header-secret for acme"),
            "bad key [redacted], header [redacted] for acme"
        );
    }

    #[test]
    fn estimates_are_a_token_per_four_bytes_plus_markup() {
        assert_eq!(RemoteBackend::estimate_tokens(&Message::user("")), 4);
        assert_eq!(RemoteBackend::estimate_tokens(&Message::user("abcd")), 5);
        assert_eq!(RemoteBackend::estimate_tokens(&Message::user("abcde")), 6);
    }
}
