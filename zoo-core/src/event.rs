//! Events a chat reports while it runs, for progress displays and logs.
//!
//! Every chat reports one ordered stream: `chat_started` first and
//! `chat_finished` last (on success, limit, rejection, cancel and error
//! alike; a failed chat's says `error`), each `turn_started` followed by
//! its `turn_finished` before the next turn starts, each
//! `tool_call_started` by its `tool_call_finished`, with the call's
//! `tool_call_update` and `tool_call_progress` events (reports of its
//! handler, in the order made) between the two, never after; a
//! `retry` (a remote request failed and is tried again) comes between a
//! `turn_started` and its `turn_finished`, before the wait. `seq`
//! counts the chat's events from 0 without gaps. Reply text is not an event:
//! tokens have their own, cheaper callback.

use serde::{Deserialize, Serialize};

use crate::backend::RetryInfo;
use crate::context::CompactionLevel;
use crate::message::Message;
use crate::response::{StopReason, ToolErrorRecord, Usage};

/// Something that happened during a chat, with the identity of the chat.
/// Serialized as one flat JSON object: `type`, `agent_id`, `chat_id`, `seq`
/// and the fields of its kind.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentEvent {
    /// The agent, unique in the process (the first agent is 1).
    pub agent_id: u64,
    /// The chat, unique in its agent (the first chat is 1).
    pub chat_id: u64,
    /// The event's place in its chat's stream, from 0.
    pub seq: u64,
    /// What happened.
    #[serde(flatten)]
    pub kind: EventKind,
}

/// What happened, by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum EventKind {
    /// The chat began: its user message is about to join the history.
    ChatStarted {
        /// The user's message; absent when the chat continues or
        /// regenerates from the history as it stands.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        message: Option<String>,
    },
    /// A model reply is about to be generated.
    TurnStarted {
        /// Which reply of the chat this is (1 for the first).
        turn: u32,
    },
    /// A model reply ended (before its tool calls run).
    TurnFinished {
        /// Which reply of the chat this was.
        turn: u32,
        /// The reply's own token counts.
        usage: Usage,
    },
    /// A tool is about to run.
    ToolCallStarted {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// Its arguments.
        arguments: serde_json::Value,
    },
    /// A running tool reported a partial result (`ToolContext::update`).
    ToolCallUpdate {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The partial result, as the tool gave it.
        update: serde_json::Value,
    },
    /// A running tool reported progress in words (`ToolContext::progress`).
    ToolCallProgress {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// What the tool said.
        text: String,
    },
    /// A tool finished, with a result or an error.
    ToolCallFinished {
        /// The call's id.
        id: String,
        /// The tool's name.
        name: String,
        /// The result, on success.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        result: Option<serde_json::Value>,
        /// The error, on failure.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        error: Option<String>,
        /// Time in the tool, in milliseconds.
        duration_ms: f64,
    },
    /// A tool error was sent back to the model.
    ToolError(ToolErrorRecord),
    /// A request to a remote model failed in a way worth another try (a
    /// rate limit, a server error, a connection failure); the backend
    /// waits `delay_ms`, then sends it again.
    Retry(RetryInfo),
    /// The history was compacted to make room in the context window: old
    /// turns dropped (`fifo`), or a level of the compaction cascade.
    HistoryCompacted {
        /// What the pass did.
        level: CompactionLevel,
        /// The messages removed or rewritten, oldest first, as they were.
        removed: Vec<Message>,
        /// The history's tokens before the pass.
        tokens_before: u32,
        /// The history's tokens after it.
        tokens_after: u32,
    },
    /// A message sent with `steer()` joined the conversation before the
    /// next reply.
    SteeringReceived {
        /// The message.
        message: String,
    },
    /// A message queued with `follow_up()` started a new round of the chat,
    /// which would otherwise have ended.
    FollowUpStarted {
        /// The message.
        message: String,
    },
    /// An input filter rejected the user's message; the chat ends with stop
    /// reason `rejected` and the history is unchanged.
    InputRejected {
        /// Why, as the filter said.
        reason: String,
    },
    /// A limit of the chat was reached; the chat ends with stop reason `limit`.
    LimitReached {
        /// Which: `max_turns`, `max_total_tokens` or `max_duration_ms`.
        limit: String,
        /// The limit's value.
        value: u64,
    },
    /// The chat ended.
    ChatFinished {
        /// Why.
        stop_reason: StopReason,
        /// Token counts over the whole chat.
        usage: Usage,
    },
}

impl AgentEvent {
    /// The event as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("AgentEvent serializes")
    }
}
