//! Cancellation flags shared between a caller and the inference thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A flag that, once set, asks a chat to stop. Cheap to clone; every clone
/// sees the same flag. The backend checks it between tokens, and llama.cpp
/// checks it inside a decode.
#[derive(Debug, Clone, Default)]
pub struct CancelToken(Arc<AtomicBool>);

impl CancelToken {
    /// A fresh, unset token.
    pub fn new() -> Self {
        Self::default()
    }

    /// Asks the chat to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::Release);
    }

    /// Whether cancellation was asked for.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Acquire)
    }

    /// The flag itself, for llama.cpp's abort callback to read while a
    /// decode runs.
    #[cfg(feature = "llama")]
    pub(crate) fn shared_flag(&self) -> Arc<AtomicBool> {
        Arc::clone(&self.0)
    }
}
