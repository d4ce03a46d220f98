//! What a chat returns: the reply, the tool calls made on the way, the tool
//! errors the model recovered from (or did not), token usage and timings.

use serde::{Deserialize, Serialize};

use crate::error::ErrorCode;

/// Why a chat ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    /// The model finished its reply (end-of-generation token or a stop string).
    Stop,
    /// The reply hit `max_tokens` or the end of the context window.
    Length,
    /// `max_tool_iterations` replies with tool calls were reached.
    ToolLimit,
    /// A limit of the chat (`max_turns`, `max_total_tokens`,
    /// `max_duration_ms`) was reached; the `limit_reached` event says which.
    Limit,
    /// An input filter rejected the user's message; nothing was decoded
    /// and the history is unchanged.
    Rejected,
    /// The chat was cancelled; the text is what was generated until then.
    Cancelled,
    /// The chat failed; see the error.
    Error,
}

impl StopReason {
    /// The reason's name, as it is written in JSON (`"tool_limit"`).
    pub fn name(self) -> &'static str {
        match self {
            StopReason::Stop => "stop",
            StopReason::Length => "length",
            StopReason::ToolLimit => "tool_limit",
            StopReason::Limit => "limit",
            StopReason::Rejected => "rejected",
            StopReason::Cancelled => "cancelled",
            StopReason::Error => "error",
        }
    }
}

/// One tool call the agent executed (or tried to) during a chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// The call's id, as used in the history.
    pub id: String,
    /// The tool's name as the model wrote it.
    pub name: String,
    /// The arguments as the model wrote them.
    pub arguments: serde_json::Value,
    /// The handler's result, when the call succeeded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub result: Option<serde_json::Value>,
    /// What went wrong, when it did not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Time spent in validation and the handler, in milliseconds.
    pub duration_ms: f64,
}

/// One tool error met during a chat; the model was told about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolErrorRecord {
    /// The tool's name, or an empty string when the call could not be parsed.
    pub tool: String,
    /// What kind of error: `tool_not_found`, `tool_validation_failed`,
    /// `tool_handler_failed`, `tool_retries_exhausted` or `invalid_json`.
    pub kind: ErrorCode,
    /// The message the model saw.
    pub message: String,
    /// 1 for the first attempt at this tool in the chat, 2 for the first retry, …
    pub attempt: u32,
}

/// Token counts, summed over every model reply in the chat.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Usage {
    /// Prompt tokens, including the cached ones.
    pub prompt_tokens: u32,
    /// Prompt tokens reused from the KV cache (not decoded again).
    pub cached_tokens: u32,
    /// Generated tokens.
    pub completion_tokens: u32,
    /// `prompt_tokens + completion_tokens`.
    pub total_tokens: u32,
}

impl Usage {
    /// Adds another reply's counts.
    pub fn add(&mut self, other: Usage) {
        self.prompt_tokens += other.prompt_tokens;
        self.cached_tokens += other.cached_tokens;
        self.completion_tokens += other.completion_tokens;
        self.total_tokens += other.total_tokens;
    }
}

/// Timings of a chat, in milliseconds.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Metrics {
    /// From the start of the chat to the first generated token.
    pub time_to_first_token_ms: f64,
    /// Spent evaluating prompts.
    pub prompt_ms: f64,
    /// Spent generating tokens.
    pub generation_ms: f64,
    /// Wall time of the whole chat, tools included.
    pub total_ms: f64,
    /// Generated tokens per second of generation time.
    pub tokens_per_second: f64,
    /// Model replies produced (1 for a chat without tool calls).
    pub iterations: u32,
}

/// The result of a chat.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The final reply's text.
    pub text: String,
    /// The final reply's reasoning, for a model that reasons before it
    /// answers (never part of `text`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
    /// Why the chat ended.
    pub stop_reason: StopReason,
    /// Every tool call executed or attempted, in order.
    pub tool_calls: Vec<ToolCallRecord>,
    /// Every tool error the model was told about, in order.
    pub tool_errors: Vec<ToolErrorRecord>,
    /// Token counts.
    pub usage: Usage,
    /// Timings.
    pub metrics: Metrics,
}

impl Response {
    /// The response as JSON, the shape every language shares.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("Response serializes")
    }
}
