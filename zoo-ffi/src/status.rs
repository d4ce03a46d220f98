//! `zoo_status`: the result of every fallible call, one value per
//! `zoo_core::ErrorCode`.

use std::ffi::c_char;

use zoo_core::ErrorCode;

/// The result of a fallible call. 0 is success; every other value is one
/// kind of `zoo_core::Error`, with the same number in Python (`.code`) and
/// Node (`err.code`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zoo_status {
    /// Success.
    ZOO_OK = 0,
    /// A NULL pointer, text that is not UTF-8, or an out-of-range value.
    ZOO_INVALID_ARGUMENT = 1,
    /// A configuration key has a bad value (the message names the key).
    ZOO_INVALID_CONFIG = 2,
    /// Text that should be JSON is not, or has the wrong shape.
    ZOO_INVALID_JSON = 3,
    /// The model file is missing, unreadable or not a usable GGUF.
    ZOO_MODEL_LOAD_FAILED = 4,
    /// A message would break the conversation's role order.
    ZOO_INVALID_MESSAGE_SEQUENCE = 5,
    /// The prompt cannot fit the context window.
    ZOO_CONTEXT_OVERFLOW = 6,
    /// llama.cpp failed while evaluating or sampling.
    ZOO_INFERENCE_FAILED = 7,
    /// The operation was cancelled.
    ZOO_CANCELLED = 8,
    /// No tool has that name.
    ZOO_TOOL_NOT_FOUND = 9,
    /// Tool arguments or a tool's schema are invalid.
    ZOO_TOOL_VALIDATION_FAILED = 10,
    /// A tool kept failing past the retry limit.
    ZOO_TOOL_RETRIES_EXHAUSTED = 11,
    /// A tool handler reported an error.
    ZOO_TOOL_HANDLER_FAILED = 12,
    /// The agent has shut down.
    ZOO_AGENT_NOT_RUNNING = 13,
    /// An MCP server or transport failed.
    ZOO_MCP = 14,
    /// An operating-system I/O error.
    ZOO_IO = 15,
    /// A bug in Zoo-Keeper (a caught panic).
    ZOO_INTERNAL = 16,
    /// A remote model provider failed (an error status, a broken
    /// connection, an unreadable stream); the message names the provider,
    /// the HTTP status and the server's own error text.
    ZOO_PROVIDER_FAILED = 17,
    /// A remote model provider refused the credentials (HTTP 401 or 403).
    ZOO_AUTHENTICATION_FAILED = 18,
}

impl From<ErrorCode> for zoo_status {
    fn from(code: ErrorCode) -> Self {
        match code {
            ErrorCode::InvalidArgument => zoo_status::ZOO_INVALID_ARGUMENT,
            ErrorCode::InvalidConfig => zoo_status::ZOO_INVALID_CONFIG,
            ErrorCode::InvalidJson => zoo_status::ZOO_INVALID_JSON,
            ErrorCode::ModelLoadFailed => zoo_status::ZOO_MODEL_LOAD_FAILED,
            ErrorCode::InvalidMessageSequence => zoo_status::ZOO_INVALID_MESSAGE_SEQUENCE,
            ErrorCode::ContextOverflow => zoo_status::ZOO_CONTEXT_OVERFLOW,
            ErrorCode::InferenceFailed => zoo_status::ZOO_INFERENCE_FAILED,
            ErrorCode::Cancelled => zoo_status::ZOO_CANCELLED,
            ErrorCode::ToolNotFound => zoo_status::ZOO_TOOL_NOT_FOUND,
            ErrorCode::ToolValidationFailed => zoo_status::ZOO_TOOL_VALIDATION_FAILED,
            ErrorCode::ToolRetriesExhausted => zoo_status::ZOO_TOOL_RETRIES_EXHAUSTED,
            ErrorCode::ToolHandlerFailed => zoo_status::ZOO_TOOL_HANDLER_FAILED,
            ErrorCode::AgentNotRunning => zoo_status::ZOO_AGENT_NOT_RUNNING,
            ErrorCode::Mcp => zoo_status::ZOO_MCP,
            ErrorCode::Io => zoo_status::ZOO_IO,
            ErrorCode::Internal => zoo_status::ZOO_INTERNAL,
            ErrorCode::ProviderFailed => zoo_status::ZOO_PROVIDER_FAILED,
            ErrorCode::AuthenticationFailed => zoo_status::ZOO_AUTHENTICATION_FAILED,
        }
    }
}

/// A static, NUL-terminated description of a status (never NULL; unknown
/// values give "unknown status"). Do not free it.
///
/// @param status A `zoo_status` value.
/// @return The description.
#[no_mangle]
pub extern "C" fn zoo_status_str(status: i32) -> *const c_char {
    let text: &'static [u8] = match status {
        0 => b"ok\0",
        1 => b"invalid argument\0",
        2 => b"invalid config\0",
        3 => b"invalid JSON\0",
        4 => b"model load failed\0",
        5 => b"invalid message sequence\0",
        6 => b"context overflow\0",
        7 => b"inference failed\0",
        8 => b"cancelled\0",
        9 => b"tool not found\0",
        10 => b"tool validation failed\0",
        11 => b"tool retries exhausted\0",
        12 => b"tool handler failed\0",
        13 => b"agent not running\0",
        14 => b"MCP error\0",
        15 => b"I/O error\0",
        16 => b"internal error\0",
        17 => b"provider failed\0",
        18 => b"authentication failed\0",
        _ => b"unknown status\0",
    };
    text.as_ptr().cast()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_match_error_codes_one_to_one() {
        for code in ErrorCode::ALL {
            assert_eq!(zoo_status::from(code) as i32, code.as_i32());
        }
    }
}
