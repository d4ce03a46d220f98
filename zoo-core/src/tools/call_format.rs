//! The textual formats in which models write tool calls.

use serde::{Deserialize, Serialize};

/// How a model writes a tool call. Chosen from the chat template's family;
/// used to teach the model, to build the grammar and to find the trigger of a
/// lazy grammar. The parser accepts every format whatever is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallFormat {
    /// Hermes / Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    Hermes,
    /// Llama 3.x: `<|python_tag|>{"name": …, "parameters": {…}}` or the bare object.
    Llama3,
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]`.
    Mistral,
}

impl ToolCallFormat {
    /// The text that opens a call in this format.
    pub fn trigger(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "<tool_call>",
            ToolCallFormat::Llama3 => "<|python_tag|>",
            ToolCallFormat::Mistral => "[TOOL_CALLS]",
        }
    }
}
