//! The backend boundary. A backend speaks in messages, not tokens, so that
//! llama.cpp, the test mock and a remote endpoint share one trait: given
//! the conversation, the tools and the sampling limits it streams one
//! assistant reply and reports its usage. A backend may also be written in
//! the host language (`host`: C callbacks, a Python or Node object).

pub mod host;
#[cfg(feature = "llama")]
pub mod llama;
pub mod mock;
pub mod remote;

use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;
use crate::error::Result;
use crate::message::Message;
use crate::thinking::ThinkingFormat;
use crate::tools::ToolChoice;
use crate::tools::{ToolCallFormat, ToolDefinition};

/// What the engine tells the backend about the KV cache: how many leading
/// messages are exactly those of the previous request. A backend may reuse
/// its cache for them; 0 means the history was edited at the start (a new
/// system prompt, a clear) and nothing carries over. `LlamaBackend` also
/// diffs tokens itself, so the hint is advice, never a promise to trust blindly.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CacheHint {
    /// Leading messages unchanged since the previous request.
    pub stable_prefix: usize,
}

/// One reply to generate.
#[derive(Debug, Clone)]
pub struct GenerateRequest<'a> {
    /// The whole conversation to answer, system prompt first.
    pub messages: &'a [Message],
    /// Tools the model may call (empty when none may be called).
    pub tools: &'a [ToolDefinition],
    /// `Required` or a tool name constrain the whole reply to a call; `Auto`
    /// lets the model choose, constraining a call once it begins.
    pub tool_choice: &'a ToolChoice,
    /// Upper bound on generated tokens; `None` means the context's room.
    pub max_tokens: Option<u32>,
    /// Most tool calls the reply may hold (at least 1). A backend that
    /// constrains calls with a grammar admits up to this many, one after
    /// the other; one that receives calls as data may ignore it.
    pub max_calls: u32,
    /// Strings that end the reply.
    pub stop: &'a [String],
    /// KV-cache advice.
    pub cache_hint: CacheHint,
    /// When the chat's time limit ends the reply, which then finishes as
    /// `Length` with the text so far (`None`: no time limit).
    pub deadline: Option<Instant>,
}

/// Why a reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FinishReason {
    /// End-of-generation token or stop string.
    Stop,
    /// `max_tokens`, the context window or the request's deadline was reached.
    Length,
    /// The cancel token was set.
    Cancelled,
}

/// A finished reply.
#[derive(Debug, Clone, PartialEq)]
pub struct Generation {
    /// The reply's text (stop strings removed).
    pub text: String,
    /// Reasoning the backend received apart from the text (a remote API's
    /// reasoning or thinking); empty when there is none or when the model
    /// writes its reasoning in the text (see [`Backend::thinking_format`]).
    pub thinking: String,
    /// Why it ended.
    pub finish: FinishReason,
    /// Prompt tokens, including the cached ones.
    pub prompt_tokens: u32,
    /// Prompt tokens reused from the KV cache.
    pub cached_tokens: u32,
    /// Generated tokens.
    pub completion_tokens: u32,
    /// Time evaluating the prompt.
    pub prompt_time: Duration,
    /// Time generating.
    pub generation_time: Duration,
}

/// A tool call that a provider returned as data (OpenAI's `tool_calls`),
/// not written in the reply's text for the engine to parse.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NativeToolCall {
    /// The tool's name as the model gave it (not yet checked).
    pub name: String,
    /// The arguments as the model wrote them: JSON text, not yet parsed.
    pub arguments: String,
}

/// A failed request to a remote model that is about to be tried again
/// (the `retry` event of a chat carries it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryInfo {
    /// Which retry this is: 1 for the first.
    pub attempt: u32,
    /// The retries allowed (the provider's `max_retries`).
    pub max_retries: u32,
    /// How long the backend waits before trying, in milliseconds: the
    /// server's `Retry-After`, or the backoff.
    pub delay_ms: u64,
    /// The HTTP status of the failed answer; `None` when there was none
    /// (the server could not be reached, the connection broke).
    pub status: Option<u16>,
    /// What failed, in a few words: `HTTP 429: Rate limit reached`.
    pub reason: String,
}

/// An inference engine. Called only from the agent's inference thread.
pub trait Backend {
    /// Generates one assistant reply, passing text pieces to `on_piece` as
    /// they are produced (never splitting a UTF-8 character), and stopping
    /// promptly once `cancel` is set.
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation>;

    /// [`generate`](Self::generate), also reporting each retry of a
    /// failed request to `on_retry`, in order, before the backend waits to
    /// try again. The agentic loop calls this one, so that a chat's events
    /// show retries as they happen. Only remote backends retry; the
    /// default reports nothing.
    fn generate_with_retries(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        on_retry: &mut dyn FnMut(&RetryInfo),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        let _ = on_retry;
        self.generate(request, on_piece, cancel)
    }

    /// Tokens this message takes in a prompt, template markup included.
    fn count_tokens(&mut self, message: &Message) -> Result<u32>;

    /// The context window in tokens.
    fn context_size(&self) -> u32;

    /// The call format the model is taught (from its chat template).
    fn tool_call_format(&self) -> ToolCallFormat;

    /// How the model marks reasoning in its reply text, which the engine
    /// then keeps apart from the answer. Backends whose API returns the
    /// reasoning apart (in [`Generation::thinking`]) have none.
    fn thinking_format(&self) -> ThinkingFormat {
        ThinkingFormat::None
    }

    /// Takes the tool calls that the last [`generate`](Self::generate)
    /// returned as data (a remote provider's native calls). When there are
    /// any, the engine uses them instead of parsing the reply's text.
    /// Local models write their calls in the text, so the default has none.
    fn take_tool_calls(&mut self) -> Vec<NativeToolCall> {
        Vec::new()
    }

    /// Writes what the backend's cache holds to `path`, for a later
    /// [`load_snapshot`](Self::load_snapshot) on the same model: returns
    /// the bytes written, or `None` for a backend that keeps no cache of
    /// its own (the default; remote models and the mock).
    fn save_snapshot(&mut self, _path: &std::path::Path) -> Result<Option<u64>> {
        Ok(None)
    }

    /// Loads a snapshot written by [`save_snapshot`](Self::save_snapshot)
    /// if it matches this backend's model; false when there is none or it
    /// does not match (then nothing is loaded).
    fn load_snapshot(&mut self, _path: &std::path::Path) -> Result<bool> {
        Ok(false)
    }
}
