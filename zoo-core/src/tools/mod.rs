//! Tools: the registry, typed tools, a call's context, argument
//! validation, tool-call parsing and the call formats models are taught.

pub mod builtin;
pub mod call_format;
pub mod choice;
pub mod context;
pub mod function_gemma;
pub mod output;
pub mod parser;
pub mod pythonic;
pub mod registry;
pub mod typed;
pub mod validate;

pub use call_format::{CallSyntax, ToolCallFormat};
pub use choice::ToolChoice;
pub use context::ToolContext;
pub use output::ToolOutput;

use serde::{Deserialize, Serialize};

/// What the model is told about a tool: its name, what it does and the JSON
/// schema of its arguments.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDefinition {
    /// Unique name, matching `^[A-Za-z0-9_-]{1,64}$`.
    pub name: String,
    /// What the tool does, in words the model reads.
    pub description: String,
    /// JSON schema of the arguments object.
    pub parameters: serde_json::Value,
}
