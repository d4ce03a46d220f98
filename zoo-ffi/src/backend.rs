//! Backends written in C: a `zoo_backend` struct of callbacks sharing one
//! `user_data` (with an optional finalizer), given the request of each
//! reply as JSON and streaming the reply into a `zoo_backend_sink` through
//! the `zoo_backend_sink_*` functions (so no memory crosses allocators).

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use zoo_core::{
    Agent, Error, HostFinish, HostModel, HostOutput, HostRequest, HostSink, HostUsage, Message,
};

use crate::agent::{boxed, config_arg, zoo_agent};
use crate::boundary::{guard, handle_arg, opt_str_arg, out_arg, str_arg, FfiResult};
use crate::status::zoo_status;
use crate::tool::{zoo_free_fn, UserData};

/// Generates one reply. Runs on the agent's host thread (one call at a
/// time, never beside `count_tokens`). `request_json` (`request_len`
/// bytes, also NUL-terminated, valid only during the call) is the request:
/// `{"messages", "tools", "tool_choice", "max_tokens", "max_calls", "stop",
/// "sampling": {"temperature", "top_p", "top_k", "min_p",
/// "repeat_penalty", "seed"}, "thinking", "stable_prefix",
/// "time_left_ms"}` (see the README's host backends). Stream the reply
/// into `sink` with the `zoo_backend_sink_*` functions, from this thread or
/// others, and return when it is complete; `sink` is valid only until then.
/// Report a failure with `zoo_backend_sink_set_error`: the chat fails with
/// `ZOO_PROVIDER_FAILED` and that message. A stop does not wait for the
/// callback: the chat ends as `cancelled` at once, later emits are dropped
/// and `zoo_backend_sink_is_cancelled` turns true, so poll it (or wait on
/// `zoo_backend_sink_wait_cancelled`) and return soon; the agent's next
/// call waits for this one, and so does `zoo_agent_free`.
pub type zoo_backend_generate_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        request_json: *const c_char,
        request_len: usize,
        sink: *const zoo_backend_sink,
    ),
>;

/// Counts the tokens one message takes in a prompt, markup included.
/// Runs on the agent's host thread. `message_json` (`message_len` bytes,
/// also NUL-terminated, valid only during the call) is one message of the
/// request's shape. Write the count to `*out_tokens` and return true; false
/// fails the chat with `ZOO_PROVIDER_FAILED`.
pub type zoo_backend_count_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        message_json: *const c_char,
        message_len: usize,
        out_tokens: *mut u32,
    ) -> bool,
>;

/// A model written in C. Zero-initialise (`zoo_backend b = {0};`) and set
/// `generate` (required) and what else you need.
#[repr(C)]
pub struct zoo_backend {
    /// Generates each reply (required).
    pub generate: zoo_backend_generate_fn,
    /// Counts the tokens of a message for the history's budget (may be
    /// NULL: the engine then estimates 4 bytes a token plus 4 a message,
    /// as for remote models; set `context_size` a little below the real
    /// window).
    pub count_tokens: zoo_backend_count_fn,
    /// Passed to every callback.
    pub user_data: *mut c_void,
    /// Frees `user_data` (may be NULL). Runs exactly once: when the agent
    /// is freed (after the last callback returned), or right away if
    /// `zoo_agent_create_with_backend` fails.
    pub free_user_data: zoo_free_fn,
}

/// Why a backend's reply ended (the values of `zoo_backend_sink_set_finish`).
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zoo_finish_reason {
    /// The model ended its reply (the default).
    ZOO_FINISH_STOP = 0,
    /// The model's token limit cut the reply.
    ZOO_FINISH_LENGTH = 1,
}

/// Where a backend puts one reply (opaque; valid only during the
/// `generate` call it is passed to, from any thread).
pub struct zoo_backend_sink {
    sink: HostSink,
}

/// The C callbacks as the engine's `HostModel`.
struct CBackend {
    generate: unsafe extern "C" fn(*mut c_void, *const c_char, usize, *const zoo_backend_sink),
    count_tokens: zoo_backend_count_fn,
    data: Arc<UserData>,
}

impl HostModel for CBackend {
    fn generate(&mut self, request: &HostRequest, sink: &HostSink) -> Result<(), String> {
        // JSON text from serde never holds a raw NUL (it would be escaped).
        let json = request.to_json();
        let len = json.len();
        let json = CString::new(json).map_err(|e| e.to_string())?;
        let sink = zoo_backend_sink { sink: sink.clone() };
        // SAFETY: the caller's callback with its own user_data; the request
        // and the sink live until it returns, as documented.
        unsafe { (self.generate)(self.data.ptr(), json.as_ptr(), len, &sink) };
        Ok(())
    }

    fn counts_tokens(&self) -> bool {
        self.count_tokens.is_some()
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32, String> {
        let count = self.count_tokens.ok_or("this backend counts no tokens")?;
        let json = serde_json::to_string(message).map_err(|e| e.to_string())?;
        let len = json.len();
        let json = CString::new(json).map_err(|e| e.to_string())?;
        let mut tokens = 0u32;
        // SAFETY: as in `generate`; the message and the output slot live
        // until the callback returns.
        let counted = unsafe { count(self.data.ptr(), json.as_ptr(), len, &mut tokens) };
        if counted {
            Ok(tokens)
        } else {
            Err("the backend's count_tokens returned false".into())
        }
    }
}

/// Creates an agent on a backend written in C. `config_json` (may be NULL
/// for the defaults) takes every config key but `model_path`; its
/// `provider` is unset or `{"type": "host", "thinking": ...}` (the
/// thinking level each request carries). `backend` is read during the
/// call and need not outlive it; its `user_data` is kept until
/// `free_user_data` runs (see `zoo_backend`).
///
/// Returns `ZOO_INVALID_ARGUMENT` (NULL `backend`, `generate` or
/// `out_agent`), `ZOO_INVALID_JSON` or `ZOO_INVALID_CONFIG` (another
/// provider is refused).
///
/// @param config_json The agent's config JSON, or NULL for the defaults.
/// @param backend The backend's callbacks and user data.
/// @param out_agent On success, the agent; free it with `zoo_agent_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or the status named above.
#[no_mangle]
pub extern "C" fn zoo_agent_create_with_backend(
    config_json: *const c_char,
    backend: *const zoo_backend,
    out_agent: *mut *mut zoo_agent,
    out_error: *mut *mut c_char,
) -> zoo_status {
    // SAFETY: NULL or the caller's struct, read during this call only.
    let backend = unsafe { backend.as_ref() };
    // Owned from the first line, so every early return releases it.
    let data = backend.map(|b| UserData::new(b.user_data, b.free_user_data));
    guard(out_error, move || {
        let out = out_arg(out_agent, "out_agent")?;
        let (backend, data) = backend
            .zip(data)
            .ok_or_else(|| Error::InvalidArgument("`backend` is NULL".into()))?;
        let generate = backend
            .generate
            .ok_or_else(|| Error::InvalidArgument("`backend->generate` is NULL".into()))?;
        let config = config_arg(config_json)?;
        let host = CBackend {
            generate,
            count_tokens: backend.count_tokens,
            data,
        };
        out.write(boxed(Agent::with_host_backend(host, config)?));
        Ok(())
    })
}

fn sink_arg<'a>(sink: *const zoo_backend_sink) -> FfiResult<&'a HostSink> {
    handle_arg(sink, "sink").map(|s| &s.sink)
}

/// A text argument given as pointer and length.
fn text_arg<'a>(text: *const c_char, len: usize) -> FfiResult<&'a str> {
    if text.is_null() {
        return Err(Error::InvalidArgument("`text` is NULL".into()));
    }
    // SAFETY: non-NULL, and the caller promises `len` readable bytes.
    let bytes = unsafe { std::slice::from_raw_parts(text.cast::<u8>(), len) };
    std::str::from_utf8(bytes)
        .map_err(|e| Error::InvalidArgument(format!("`text` is not valid UTF-8: {e}")))
}

/// Emits `output` and writes whether it was taken to `out_accepted` (may
/// be NULL).
fn emit(sink: &HostSink, output: HostOutput, out_accepted: *mut bool) {
    let accepted = sink.emit(output);
    if !out_accepted.is_null() {
        // SAFETY: non-NULL, pointing to the caller's bool.
        unsafe { *out_accepted = accepted };
    }
}

/// Emits a piece of the reply's text: `len` bytes of UTF-8 at `text` (not
/// necessarily NUL-terminated; whole characters). It streams to the chat's
/// tokens at once. `*out_accepted` (may be NULL) tells whether it was
/// taken: false once the reply has ended (a stop, the chat's time limit, a
/// stop string), when it is dropped. Returns `ZOO_INVALID_ARGUMENT` for a
/// NULL argument or text that is not UTF-8.
///
/// @param sink The sink the backend's `generate` was given.
/// @param text The text's bytes (UTF-8).
/// @param len The number of bytes at `text`.
/// @param out_accepted Whether it was taken (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_emit_text(
    sink: *const zoo_backend_sink,
    text: *const c_char,
    len: usize,
    out_accepted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let sink = sink_arg(sink)?;
        let text = text_arg(text, len)?.to_owned();
        emit(sink, HostOutput::Text { text }, out_accepted);
        Ok(())
    })
}

/// Emits a piece of the model's thinking (`len` bytes of UTF-8), which
/// never enters the reply's text or the history. Arguments and
/// `*out_accepted` as for `zoo_backend_sink_emit_text`.
///
/// @param sink The sink the backend's `generate` was given.
/// @param text The thinking's bytes (UTF-8).
/// @param len The number of bytes at `text`.
/// @param out_accepted Whether it was taken (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_emit_thinking(
    sink: *const zoo_backend_sink,
    text: *const c_char,
    len: usize,
    out_accepted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let sink = sink_arg(sink)?;
        let text = text_arg(text, len)?.to_owned();
        emit(sink, HostOutput::Thinking { text }, out_accepted);
        Ok(())
    })
}

/// Emits a tool call returned as data: the tool's `name` and its
/// arguments as JSON text (`arguments_json`, NULL for `{}`), as the model
/// wrote them. The engine gives the call its id, validates it against the
/// tool's schema (a bad call goes back to the model to correct) and runs
/// it once the reply is complete; the calls of a reply cut short are
/// dropped. `*out_accepted` as for `zoo_backend_sink_emit_text`. Returns
/// `ZOO_INVALID_ARGUMENT` for a NULL sink or name, or text that is not
/// UTF-8.
///
/// @param sink The sink the backend's `generate` was given.
/// @param name The tool's name (NUL-terminated UTF-8).
/// @param arguments_json The call's arguments as JSON text, or NULL for `{}`.
/// @param out_accepted Whether it was taken (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_emit_tool_call(
    sink: *const zoo_backend_sink,
    name: *const c_char,
    arguments_json: *const c_char,
    out_accepted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let sink = sink_arg(sink)?;
        let name = str_arg(name, "name")?.to_owned();
        let arguments = opt_str_arg(arguments_json, "arguments_json")?.unwrap_or("{}");
        let arguments = Value::String(arguments.to_owned());
        emit(sink, HostOutput::ToolCall { name, arguments }, out_accepted);
        Ok(())
    })
}

/// Emits one item of the reply in its JSON form, the shape every language
/// shares: `{"type": "text", "text": ...}`, `{"type": "thinking", "text":
/// ...}`, `{"type": "tool_call", "name": ..., "arguments": {...}}`,
/// `{"type": "usage", "prompt_tokens": N, "cached_tokens": N,
/// "completion_tokens": N}`, `{"type": "finish", "reason": "stop" |
/// "length"}` or `{"type": "error", "message": ...}`. `*out_accepted` as
/// for `zoo_backend_sink_emit_text`. Returns `ZOO_INVALID_JSON` for JSON
/// of another shape (the message says what was wrong), nothing emitted.
///
/// @param sink The sink the backend's `generate` was given.
/// @param item_json The item, a JSON object of one of the shapes above.
/// @param out_accepted Whether it was taken (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_JSON` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_emit_json(
    sink: *const zoo_backend_sink,
    item_json: *const c_char,
    out_accepted: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let sink = sink_arg(sink)?;
        let item = HostOutput::from_json(str_arg(item_json, "item_json")?)?;
        emit(sink, item, out_accepted);
        Ok(())
    })
}

/// Sets the reply's token counts (the last call counts): prompt tokens
/// (the cached ones included), prompt tokens read from a cache, and
/// generated tokens. Without it the counts are estimated. Returns
/// `ZOO_INVALID_ARGUMENT` for a NULL sink.
///
/// @param sink The sink the backend's `generate` was given.
/// @param prompt_tokens The prompt's tokens, the cached ones included.
/// @param cached_tokens The prompt tokens read from a cache.
/// @param completion_tokens The generated tokens.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_set_usage(
    sink: *const zoo_backend_sink,
    prompt_tokens: u32,
    cached_tokens: u32,
    completion_tokens: u32,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let usage = HostUsage {
            prompt_tokens,
            cached_tokens,
            completion_tokens,
        };
        sink_arg(sink)?.emit(HostOutput::Usage(usage));
        Ok(())
    })
}

/// Sets why the reply ended: a `zoo_finish_reason` value
/// (`ZOO_FINISH_LENGTH` when the model's own token limit cut it).
/// Returns `ZOO_INVALID_ARGUMENT` for a NULL sink or another value.
///
/// @param sink The sink the backend's `generate` was given.
/// @param reason A `zoo_finish_reason` value.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_set_finish(
    sink: *const zoo_backend_sink,
    reason: i32,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let sink = sink_arg(sink)?;
        const STOP: i32 = zoo_finish_reason::ZOO_FINISH_STOP as i32;
        const LENGTH: i32 = zoo_finish_reason::ZOO_FINISH_LENGTH as i32;
        let reason = match reason {
            STOP => HostFinish::Stop,
            LENGTH => HostFinish::Length,
            other => {
                return Err(Error::InvalidArgument(format!(
                    "`reason` must be a zoo_finish_reason (0 or 1), got {other}"
                )))
            }
        };
        sink.emit(HostOutput::Finish { reason });
        Ok(())
    })
}

/// Fails the reply with `message`: the chat fails with
/// `ZOO_PROVIDER_FAILED` ("provider host failed: <message>") and its
/// history is as before; the agent takes the next chat normally. The reply
/// ends at once: later emits are dropped. Returns `ZOO_INVALID_ARGUMENT`
/// for a NULL argument or a message that is not UTF-8.
///
/// @param sink The sink the backend's `generate` was given.
/// @param message What failed (NUL-terminated UTF-8).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_set_error(
    sink: *const zoo_backend_sink,
    message: *const c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let sink = sink_arg(sink)?;
        let message = str_arg(message, "message")?.to_owned();
        sink.emit(HostOutput::Error { message });
        Ok(())
    })
}

/// Writes whether the reply is no longer wanted to `*out_cancelled`: the
/// chat was stopped, its time limit passed, a stop string ended the text
/// or an error failed it. Emits are dropped from then on: return soon.
///
/// @param sink The sink the backend's `generate` was given.
/// @param out_cancelled On success, whether the reply is no longer wanted.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_is_cancelled(
    sink: *const zoo_backend_sink,
    out_cancelled: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_cancelled, "out_cancelled")?;
        out.write(sink_arg(sink)?.is_cancelled());
        Ok(())
    })
}

/// Blocks until the reply is no longer wanted or `timeout_ms` milliseconds
/// pass (0 looks without waiting) and writes whether it is no longer
/// wanted to `*out_cancelled`. Returns `ZOO_INVALID_ARGUMENT` for a NULL
/// argument or a negative `timeout_ms`.
///
/// @param sink The sink the backend's `generate` was given.
/// @param timeout_ms The longest wait in milliseconds (0 or more).
/// @param out_cancelled On success, whether the reply is no longer wanted.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK` or `ZOO_INVALID_ARGUMENT`.
#[no_mangle]
pub extern "C" fn zoo_backend_sink_wait_cancelled(
    sink: *const zoo_backend_sink,
    timeout_ms: i64,
    out_cancelled: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_cancelled, "out_cancelled")?;
        let sink = sink_arg(sink)?;
        let timeout = u64::try_from(timeout_ms).map_err(|_| {
            Error::InvalidArgument(format!(
                "`timeout_ms` must be 0 or more milliseconds, got {timeout_ms}"
            ))
        })?;
        out.write(sink.wait_cancelled(Some(Duration::from_millis(timeout))));
        Ok(())
    })
}
