//! Cancellation flags shared between a caller and the inference thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

/// A flag that, once set, asks a chat to stop. Cheap to clone; every clone
/// sees the same flag. The backend checks it between tokens, and llama.cpp
/// checks it inside a decode.
///
/// A plain [`cancel`](Self::cancel) ends the chat as `cancelled` and keeps
/// what it completed; an [`abort`](Self::abort) (a front door whose callback
/// failed) fails the chat with [`Error::Cancelled`](crate::Error::Cancelled)
/// and undoes the whole turn, because the host never saw it through.
#[derive(Debug, Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    abort: Arc<Mutex<Option<String>>>,
}

impl CancelToken {
    /// A fresh, unset token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the chat to stop.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
    }

    /// Asks the chat to stop and fail with `reason`, leaving the history as
    /// it was before the chat. The first reason given wins.
    pub fn abort(&self, reason: impl Into<String>) {
        self.abort.lock().get_or_insert_with(|| reason.into());
        self.cancel();
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.flag.load(Ordering::Acquire)
    }

    /// Why the chat was aborted, if it was.
    pub fn abort_reason(&self) -> Option<String> {
        self.abort.lock().clone()
    }

    /// The flag itself, for llama.cpp's abort callback to read while a
    /// decode runs.
    #[cfg(feature = "llama")]
    pub(crate) fn shared_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.flag)
    }
}

thread_local! {
    /// The cancel token of the chat whose tool call this thread is running.
    static CURRENT_CALL: std::cell::RefCell<Option<CancelToken>> =
        const { std::cell::RefCell::new(None) };
}

/// Runs a tool handler with `token` as the current call's token, so built-in
/// tools (whose handlers take only their arguments) can stop when the chat
/// is stopped.
pub(crate) fn with_current_call<R>(token: &CancelToken, run: impl FnOnce() -> R) -> R {
    let previous = CURRENT_CALL.with(|c| c.replace(Some(token.clone())));
    let result = run();
    CURRENT_CALL.with(|c| *c.borrow_mut() = previous);
    result
}

/// The cancel token of the chat whose tool call this thread runs.
pub(crate) fn current_call() -> Option<CancelToken> {
    CURRENT_CALL.with(|c| c.borrow().clone())
}

/// Whether the chat whose tool call this thread runs has been stopped
/// (false outside a chat's tool call).
pub(crate) fn current_call_cancelled() -> bool {
    CURRENT_CALL.with(|c| c.borrow().as_ref().is_some_and(CancelToken::is_cancelled))
}
