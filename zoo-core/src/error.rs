//! The one error type of Zoo-Keeper.
//!
//! Every variant carries a stable [`ErrorCode`]. The code is the contract
//! with other languages: it is the C `zoo_status`, the Python exception class
//! and `err.code` in Node, so codes are never renumbered or reused.

use serde::{Deserialize, Serialize};

/// Result alias used throughout `zoo-core`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Stable numeric codes, one per [`Error`] variant (0 is success in C).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[repr(i32)]
pub enum ErrorCode {
    /// A null pointer, bad UTF-8 or an out-of-range argument.
    InvalidArgument = 1,
    /// A configuration value is out of range or inconsistent.
    InvalidConfig = 2,
    /// Text that should be JSON is not, or has the wrong shape.
    InvalidJson = 3,
    /// The model file is missing, unreadable or not a usable GGUF.
    ModelLoadFailed = 4,
    /// A message would break the role order of the conversation.
    InvalidMessageSequence = 5,
    /// A single message or the prompt cannot fit the context window.
    ContextOverflow = 6,
    /// The backend failed while evaluating or sampling.
    InferenceFailed = 7,
    /// The operation was cancelled before it finished.
    Cancelled = 8,
    /// No tool is registered under that name.
    ToolNotFound = 9,
    /// Tool arguments or a tool definition do not satisfy their schema.
    ToolValidationFailed = 10,
    /// The model kept producing a failing call past the retry limit.
    ToolRetriesExhausted = 11,
    /// A tool handler reported an error.
    ToolHandlerFailed = 12,
    /// The agent has stopped or failed and takes no more requests.
    AgentNotRunning = 13,
    /// An MCP server or transport failed.
    Mcp = 14,
    /// An operating-system I/O error.
    Io = 15,
    /// A bug: a caught panic or a broken invariant.
    Internal = 16,
    /// A remote model provider failed: an error status, a broken
    /// connection, a stream that could not be read.
    ProviderFailed = 17,
    /// A remote model provider refused the credentials (HTTP 401 or 403).
    AuthenticationFailed = 18,
}

impl ErrorCode {
    /// Every code, in numeric order.
    pub const ALL: [ErrorCode; 18] = [
        ErrorCode::InvalidArgument,
        ErrorCode::InvalidConfig,
        ErrorCode::InvalidJson,
        ErrorCode::ModelLoadFailed,
        ErrorCode::InvalidMessageSequence,
        ErrorCode::ContextOverflow,
        ErrorCode::InferenceFailed,
        ErrorCode::Cancelled,
        ErrorCode::ToolNotFound,
        ErrorCode::ToolValidationFailed,
        ErrorCode::ToolRetriesExhausted,
        ErrorCode::ToolHandlerFailed,
        ErrorCode::AgentNotRunning,
        ErrorCode::Mcp,
        ErrorCode::Io,
        ErrorCode::Internal,
        ErrorCode::ProviderFailed,
        ErrorCode::AuthenticationFailed,
    ];

    /// The numeric value shared with C, Python and Node.
    pub fn as_i32(self) -> i32 {
        self as i32
    }

    /// The code for a numeric value, if there is one.
    pub fn from_i32(value: i32) -> Option<Self> {
        Self::ALL.iter().copied().find(|c| c.as_i32() == value)
    }

    /// The snake_case name used in JSON and in messages.
    pub fn name(self) -> &'static str {
        match self {
            ErrorCode::InvalidArgument => "invalid_argument",
            ErrorCode::InvalidConfig => "invalid_config",
            ErrorCode::InvalidJson => "invalid_json",
            ErrorCode::ModelLoadFailed => "model_load_failed",
            ErrorCode::InvalidMessageSequence => "invalid_message_sequence",
            ErrorCode::ContextOverflow => "context_overflow",
            ErrorCode::InferenceFailed => "inference_failed",
            ErrorCode::Cancelled => "cancelled",
            ErrorCode::ToolNotFound => "tool_not_found",
            ErrorCode::ToolValidationFailed => "tool_validation_failed",
            ErrorCode::ToolRetriesExhausted => "tool_retries_exhausted",
            ErrorCode::ToolHandlerFailed => "tool_handler_failed",
            ErrorCode::AgentNotRunning => "agent_not_running",
            ErrorCode::Mcp => "mcp",
            ErrorCode::Io => "io",
            ErrorCode::Internal => "internal",
            ErrorCode::ProviderFailed => "provider_failed",
            ErrorCode::AuthenticationFailed => "authentication_failed",
        }
    }
}

impl std::fmt::Display for ErrorCode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Everything that can go wrong in Zoo-Keeper.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum Error {
    /// A null pointer, bad UTF-8 or an out-of-range argument.
    #[error("invalid argument: {0}")]
    InvalidArgument(String),
    /// A configuration value is wrong; names the key and why.
    #[error("invalid config `{key}`: {reason}")]
    InvalidConfig {
        /// The configuration key, as spelled in JSON.
        key: String,
        /// What is wrong with its value.
        reason: String,
    },
    /// Text that should be JSON is not, or has the wrong shape.
    #[error("invalid JSON: {0}")]
    InvalidJson(String),
    /// The model could not be loaded; names the path and the reason.
    #[error("failed to load model `{path}`: {reason}")]
    ModelLoadFailed {
        /// The path as given.
        path: String,
        /// What went wrong.
        reason: String,
    },
    /// A message would break the role order of the conversation.
    #[error("invalid message sequence: {0}")]
    InvalidMessageSequence(String),
    /// The prompt cannot fit the context window even after pruning.
    #[error("context overflow: {0}")]
    ContextOverflow(String),
    /// The backend failed while evaluating or sampling.
    #[error("inference failed: {0}")]
    InferenceFailed(String),
    /// The operation was cancelled before it finished.
    #[error("cancelled: {0}")]
    Cancelled(String),
    /// No tool is registered under that name.
    #[error("tool not found: `{0}`")]
    ToolNotFound(String),
    /// Arguments or a definition do not satisfy the schema.
    #[error("tool `{tool}` validation failed: {message}")]
    ToolValidationFailed {
        /// The tool's name.
        tool: String,
        /// Every violation, in one line each.
        message: String,
    },
    /// The model kept producing a failing call past the retry limit.
    #[error("tool `{tool}` failed {attempts} times; retries exhausted")]
    ToolRetriesExhausted {
        /// The tool's name.
        tool: String,
        /// How many attempts were made.
        attempts: u32,
    },
    /// A tool handler reported an error.
    #[error("tool `{tool}` failed: {message}")]
    ToolHandlerFailed {
        /// The tool's name.
        tool: String,
        /// The handler's message.
        message: String,
    },
    /// The agent has stopped or failed and takes no more requests.
    #[error("agent not running: {0}")]
    AgentNotRunning(String),
    /// An MCP server or its transport failed: it could not start, broke the
    /// protocol, timed out, or answered with a JSON-RPC error (whose code is
    /// kept in `rpc_code`).
    #[error("MCP server `{server}`: {message}{}", rpc_code_suffix(*.rpc_code))]
    Mcp {
        /// The name the server was added under (or its command or URL).
        server: String,
        /// The JSON-RPC error code the server answered with, if it did.
        rpc_code: Option<i64>,
        /// What went wrong, in the server's words when it said.
        message: String,
    },
    /// An operating-system I/O error.
    #[error("I/O error: {0}")]
    Io(String),
    /// A bug: a caught panic or a broken invariant.
    #[error("internal error: {0}")]
    Internal(String),
    /// A remote model provider failed: it answered with an error status,
    /// the connection broke, or its stream could not be read.
    #[error("provider {provider} failed{}: {message}", http_status_suffix(*.status))]
    ProviderFailed {
        /// The provider's type and address, e.g. `openai (http://127.0.0.1:8080/v1)`.
        provider: String,
        /// The HTTP status it answered with, if it answered.
        status: Option<u16>,
        /// What went wrong, with the server's own error text when it gave one.
        message: String,
    },
    /// A remote model provider refused the credentials (HTTP 401 or 403).
    /// The message never holds the API key.
    #[error("provider {provider} refused the credentials (HTTP {status}): {message}")]
    AuthenticationFailed {
        /// The provider's type and address.
        provider: String,
        /// 401 or 403.
        status: u16,
        /// The server's own error text.
        message: String,
    },
}

impl Error {
    /// The stable code of this error.
    pub fn code(&self) -> ErrorCode {
        match self {
            Error::InvalidArgument(_) => ErrorCode::InvalidArgument,
            Error::InvalidConfig { .. } => ErrorCode::InvalidConfig,
            Error::InvalidJson(_) => ErrorCode::InvalidJson,
            Error::ModelLoadFailed { .. } => ErrorCode::ModelLoadFailed,
            Error::InvalidMessageSequence(_) => ErrorCode::InvalidMessageSequence,
            Error::ContextOverflow(_) => ErrorCode::ContextOverflow,
            Error::InferenceFailed(_) => ErrorCode::InferenceFailed,
            Error::Cancelled(_) => ErrorCode::Cancelled,
            Error::ToolNotFound(_) => ErrorCode::ToolNotFound,
            Error::ToolValidationFailed { .. } => ErrorCode::ToolValidationFailed,
            Error::ToolRetriesExhausted { .. } => ErrorCode::ToolRetriesExhausted,
            Error::ToolHandlerFailed { .. } => ErrorCode::ToolHandlerFailed,
            Error::AgentNotRunning(_) => ErrorCode::AgentNotRunning,
            Error::Mcp { .. } => ErrorCode::Mcp,
            Error::Io(_) => ErrorCode::Io,
            Error::Internal(_) => ErrorCode::Internal,
            Error::ProviderFailed { .. } => ErrorCode::ProviderFailed,
            Error::AuthenticationFailed { .. } => ErrorCode::AuthenticationFailed,
        }
    }

    /// Shorthand for [`Error::InvalidConfig`].
    pub fn config(key: impl Into<String>, reason: impl Into<String>) -> Self {
        Error::InvalidConfig {
            key: key.into(),
            reason: reason.into(),
        }
    }

    /// The error every front door gives for a numeric argument outside its
    /// range (a per-chat `max_tokens` of -1, say), worded once here.
    pub fn out_of_range(name: &str, min: i64, max: i64, got: impl std::fmt::Display) -> Self {
        Error::InvalidArgument(format!(
            "`{name}` must be an integer from {min} to {max}, got {got}"
        ))
    }

    /// Shorthand for an [`Error::Mcp`] that is not a JSON-RPC error.
    pub fn mcp(server: impl Into<String>, message: impl Into<String>) -> Self {
        Error::Mcp {
            server: server.into(),
            rpc_code: None,
            message: message.into(),
        }
    }

    /// Turns a caught panic payload into [`Error::Internal`].
    pub fn from_panic(payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "unknown panic".to_string());
        Error::Internal(format!("panic: {message}"))
    }
}

/// " (JSON-RPC error -32602)" when the server gave a code, else nothing.
fn rpc_code_suffix(code: Option<i64>) -> String {
    code.map(|c| format!(" (JSON-RPC error {c})"))
        .unwrap_or_default()
}

/// " with HTTP 500" when the provider answered with a status, else nothing.
fn http_status_suffix(status: Option<u16>) -> String {
    status
        .map(|s| format!(" with HTTP {s}"))
        .unwrap_or_default()
}

impl From<serde_json::Error> for Error {
    fn from(e: serde_json::Error) -> Self {
        Error::InvalidJson(e.to_string())
    }
}

impl From<std::io::Error> for Error {
    fn from(e: std::io::Error) -> Self {
        Error::Io(e.to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_round_trip_and_are_unique() {
        for (i, code) in ErrorCode::ALL.iter().enumerate() {
            assert_eq!(code.as_i32(), i as i32 + 1);
            assert_eq!(ErrorCode::from_i32(code.as_i32()), Some(*code));
        }
        assert_eq!(ErrorCode::from_i32(0), None);
        assert_eq!(ErrorCode::from_i32(99), None);
    }

    #[test]
    fn messages_name_what_was_wrong() {
        let e = Error::config("temperature", "must be >= 0, got -1");
        assert_eq!(e.code(), ErrorCode::InvalidConfig);
        assert_eq!(
            e.to_string(),
            "invalid config `temperature`: must be >= 0, got -1"
        );
    }
}
