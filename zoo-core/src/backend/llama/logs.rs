//! llama.cpp's log output, routed to `tracing` (silent unless the program
//! installs a subscriber). The last error lines are also kept, so that a
//! failed load can say why.

use std::collections::VecDeque;
use std::ffi::{c_char, c_void, CStr};
use std::sync::Once;

use parking_lot::Mutex;

static RECENT_ERRORS: Mutex<VecDeque<String>> = Mutex::new(VecDeque::new());
const KEPT_ERRORS: usize = 8;

/// Installs the log hook once per process.
pub(crate) fn install() {
    static INSTALL: Once = Once::new();
    INSTALL.call_once(|| {
        // SAFETY: `forward` matches `ggml_log_callback`, never unwinds (it
        // catches panics) and ignores `user_data`, so a null pointer is fine.
        unsafe { llama_cpp_sys_2::llama_log_set(Some(forward), std::ptr::null_mut()) };
    });
}

/// Takes the error lines logged since the last call.
pub(crate) fn take_recent_errors() -> Vec<String> {
    RECENT_ERRORS.lock().drain(..).collect()
}

unsafe extern "C" fn forward(
    level: llama_cpp_sys_2::ggml_log_level,
    text: *const c_char,
    _: *mut c_void,
) {
    if text.is_null() {
        return;
    }
    // SAFETY: llama.cpp passes a valid NUL-terminated string for the duration of the call.
    let text = unsafe { CStr::from_ptr(text) }.to_string_lossy();
    let _ = std::panic::catch_unwind(|| {
        let line = text.trim_end();
        if line.is_empty() {
            return;
        }
        match level {
            llama_cpp_sys_2::GGML_LOG_LEVEL_ERROR => {
                tracing::error!(target: "llama.cpp", "{line}");
                let mut recent = RECENT_ERRORS.lock();
                if recent.len() == KEPT_ERRORS {
                    recent.pop_front();
                }
                recent.push_back(line.to_string());
            }
            llama_cpp_sys_2::GGML_LOG_LEVEL_WARN => tracing::warn!(target: "llama.cpp", "{line}"),
            llama_cpp_sys_2::GGML_LOG_LEVEL_INFO => tracing::debug!(target: "llama.cpp", "{line}"),
            _ => tracing::trace!(target: "llama.cpp", "{line}"),
        }
    });
}
