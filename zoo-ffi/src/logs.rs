//! Logs for the host: one process-wide callback receiving the engine's
//! records (`zoo_core::logs`) with their level, target, message and
//! structured fields as JSON.

use std::ffi::{c_char, c_void, CString};
use std::sync::Arc;

use zoo_core::logs::{self, LogHandler, LogLevel, LogRecord};

use crate::boundary::{guard, guard_void};
use crate::status::zoo_status;
use crate::tool::{zoo_free_fn, UserData};

/// How much the engine logs; each level includes those above it.
#[repr(C)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum zoo_log_level {
    /// Nothing.
    ZOO_LOG_OFF = 0,
    /// Failures.
    ZOO_LOG_ERROR = 1,
    /// Problems the engine worked around (a hook failed, records dropped).
    ZOO_LOG_WARN = 2,
    /// One record per chat, model reply and tool call.
    ZOO_LOG_INFO = 3,
    /// Adds each reply's prompt as rendered (`zoo::prompt`) and the model's
    /// raw output (`zoo::raw_output`), and the backend's decisions.
    ZOO_LOG_DEBUG = 4,
    /// Everything, llama.cpp's own chatter included.
    ZOO_LOG_TRACE = 5,
}

impl From<LogLevel> for zoo_log_level {
    fn from(level: LogLevel) -> Self {
        match level {
            LogLevel::Off => zoo_log_level::ZOO_LOG_OFF,
            LogLevel::Error => zoo_log_level::ZOO_LOG_ERROR,
            LogLevel::Warn => zoo_log_level::ZOO_LOG_WARN,
            LogLevel::Info => zoo_log_level::ZOO_LOG_INFO,
            LogLevel::Debug => zoo_log_level::ZOO_LOG_DEBUG,
            LogLevel::Trace => zoo_log_level::ZOO_LOG_TRACE,
        }
    }
}

/// Receives one log record on the library's `zoo-logs` thread (never on a
/// thread of the engine, which a slow callback therefore never slows).
/// `target` (NUL-terminated) is where it comes from: `zoo::chat`,
/// `zoo::turn`, `zoo::tool`, `zoo::hook`, `zoo::prompt`, `zoo::raw_output`,
/// `zoo::logs`, `zoo::backend`, `zoo::session` (debug: one transaction of a
/// session store), or a module path (`llama.cpp`, `zoo_core::mcp`, ...).
/// `message` (`message_len` bytes, also NUL-terminated; a NUL inside
/// becomes U+FFFD) is readable on its own. `fields_json` (`fields_len`
/// bytes, also NUL-terminated) is a JSON object of the structured fields:
/// `agent_id` and `chat_id` for a record emitted inside a chat, `tool`,
/// `call_id`, `latency_ms`, `ok` for a tool call, and so on (README: Logs).
/// All are valid only during the call.
pub type zoo_log_fn = Option<
    unsafe extern "C" fn(
        user_data: *mut c_void,
        level: zoo_log_level,
        target: *const c_char,
        message: *const c_char,
        message_len: usize,
        fields_json: *const c_char,
        fields_len: usize,
    ),
>;

/// The C callback as a `zoo_core::logs::LogHandler`.
struct CLogHandler {
    callback: unsafe extern "C" fn(
        *mut c_void,
        zoo_log_level,
        *const c_char,
        *const c_char,
        usize,
        *const c_char,
        usize,
    ),
    data: Arc<UserData>,
}

/// `text` as a C string, a NUL inside replaced (C could not see past it).
fn c_text(text: &str) -> CString {
    CString::new(text.replace('\0', "\u{fffd}")).unwrap_or_default()
}

impl LogHandler for CLogHandler {
    fn log(&self, record: &LogRecord) {
        let target = c_text(&record.target);
        let message = c_text(&record.message);
        let fields = c_text(&record.fields_json());
        // SAFETY: the caller's callback with its own user_data; the strings
        // live until it returns, as documented.
        unsafe {
            (self.callback)(
                self.data.ptr(),
                record.level.into(),
                target.as_ptr(),
                message.as_ptr(),
                message.as_bytes().len(),
                fields.as_ptr(),
                fields.as_bytes().len(),
            )
        };
    }
}

/// Sends the engine's log records at `level` and above (a `zoo_log_level`
/// value) to `callback`, for the whole process, replacing any earlier
/// callback; a NULL callback (or `ZOO_LOG_OFF`) turns logs off. Silent
/// until called. `free_user_data` (may be NULL) runs exactly once: after
/// the callback's last call, once it is replaced or removed, or right away
/// if this call fails.
///
/// Records are handed over on a thread of the library's own, through a
/// queue of at most 1024 records (and 4 MiB of text): a callback slower
/// than the engine makes it drop records, never wait or grow without bound.
/// `zoo_log_dropped` counts them, and the next record the callback receives
/// is a `zoo::logs` warning saying how many were lost.
///
/// @param level The lowest level sent, a `zoo_log_level` value.
/// @param callback Receives the records, or NULL to turn logs off.
/// @param user_data Passed to `callback`.
/// @param free_user_data Frees `user_data`, or NULL.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a level outside 0 to 5, or when the program
/// has installed a Rust `tracing` subscriber of its own.
#[no_mangle]
pub extern "C" fn zoo_log_set_callback(
    level: i32,
    callback: zoo_log_fn,
    user_data: *mut c_void,
    free_user_data: zoo_free_fn,
    out_error: *mut *mut c_char,
) -> zoo_status {
    // Owned from the first line, so every early return releases it.
    let data = UserData::new(user_data, free_user_data);
    guard(out_error, move || {
        let level = LogLevel::from_i32(level)?;
        let handler = callback.map(|callback| Arc::new(CLogHandler { callback, data }) as _);
        logs::set_handler(level, handler)
    })
}

/// Changes the level of the callback set with `zoo_log_set_callback`,
/// keeping the callback (no effect without one).
///
/// @param level The lowest level sent, a `zoo_log_level` value.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a level outside 0 to 5.
#[no_mangle]
pub extern "C" fn zoo_log_set_level(level: i32, out_error: *mut *mut c_char) -> zoo_status {
    guard(out_error, || {
        logs::set_level(LogLevel::from_i32(level)?);
        Ok(())
    })
}

/// Records dropped so far in this process because the callback could not
/// keep up (see `zoo_log_set_callback`).
///
/// @return The number of records dropped since the process started.
#[no_mangle]
pub extern "C" fn zoo_log_dropped() -> u64 {
    let mut dropped = 0;
    guard_void(|| dropped = logs::dropped());
    dropped
}

/// Waits up to `timeout_ms` until every record emitted so far has been
/// handed to the callback and the callback has returned (before exiting,
/// or in a test).
///
/// @param timeout_ms Milliseconds to wait at most.
/// @return Whether every record was handed over in time; false at once when called from the
/// callback itself.
#[no_mangle]
pub extern "C" fn zoo_log_flush(timeout_ms: u32) -> bool {
    let mut done = false;
    guard_void(|| done = logs::flush(std::time::Duration::from_millis(timeout_ms.into())));
    done
}
