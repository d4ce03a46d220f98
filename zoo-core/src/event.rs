//! Events a chat reports while it runs, for progress displays and logs.

use serde::{Deserialize, Serialize};

use crate::message::Message;
use crate::response::ToolErrorRecord;

/// Something that happened during a chat. Delivered in order on the
/// inference thread to the chat's `on_event` callback; serialized as JSON
/// with a `type` field for other languages.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum AgentEvent {
    /// A model reply is about to be generated (1 for the first).
    IterationStarted {
        /// Which reply of the chat this is.
        iteration: u32,
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
    /// Old turns were removed from the history to fit the context window.
    HistoryPruned {
        /// The removed messages, oldest first.
        messages: Vec<Message>,
    },
}

impl AgentEvent {
    /// The event as JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("AgentEvent serializes")
    }
}
