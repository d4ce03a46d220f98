//! `ChatHandle`: the caller's side of a chat that runs on the inference
//! thread. It can be waited on (with or without a timeout), polled,
//! cancelled, or awaited as a `Future`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::cancel::CancelToken;
use crate::error::Result;
use crate::response::Response;

/// A one-shot slot filled by the inference thread and read by any thread.
pub(crate) struct Completion<T> {
    slot: Mutex<Slot<T>>,
    filled: Condvar,
}

struct Slot<T> {
    value: Option<T>,
    wakers: Vec<Waker>,
}

impl<T: Clone> Completion<T> {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(Completion {
            slot: Mutex::new(Slot {
                value: None,
                wakers: Vec::new(),
            }),
            filled: Condvar::new(),
        })
    }

    /// Fills the slot once; later calls are ignored.
    pub(crate) fn complete(&self, value: T) {
        let wakers = {
            let mut slot = self.slot.lock();
            if slot.value.is_some() {
                return;
            }
            slot.value = Some(value);
            std::mem::take(&mut slot.wakers)
        };
        self.filled.notify_all();
        wakers.into_iter().for_each(Waker::wake);
    }

    pub(crate) fn get(&self) -> Option<T> {
        self.slot.lock().value.clone()
    }

    pub(crate) fn wait(&self) -> T {
        let mut slot = self.slot.lock();
        loop {
            if let Some(v) = &slot.value {
                return v.clone();
            }
            self.filled.wait(&mut slot);
        }
    }

    pub(crate) fn wait_timeout(&self, timeout: Duration) -> Option<T> {
        let deadline = Instant::now() + timeout;
        let mut slot = self.slot.lock();
        loop {
            if let Some(v) = &slot.value {
                return Some(v.clone());
            }
            if self.filled.wait_until(&mut slot, deadline).timed_out() {
                return slot.value.clone();
            }
        }
    }

    fn poll_with(&self, cx: &Context<'_>) -> Poll<T> {
        let mut slot = self.slot.lock();
        match &slot.value {
            Some(v) => Poll::Ready(v.clone()),
            None => {
                if !slot.wakers.iter().any(|w| w.will_wake(cx.waker())) {
                    slot.wakers.push(cx.waker().clone());
                }
                Poll::Pending
            }
        }
    }
}

/// A chat in flight (or queued). Dropping the handle does not cancel the
/// chat; call [`ChatHandle::cancel`] for that.
#[derive(Clone)]
pub struct ChatHandle {
    pub(crate) completion: Arc<Completion<Result<Response>>>,
    pub(crate) cancel: CancelToken,
}

impl std::fmt::Debug for ChatHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatHandle")
            .field("finished", &self.is_finished())
            .finish()
    }
}

impl ChatHandle {
    /// Blocks until the chat ends.
    pub fn wait(&self) -> Result<Response> {
        self.completion.wait()
    }

    /// Blocks until the chat ends or `timeout` passes (`None` then).
    pub fn wait_timeout(&self, timeout: Duration) -> Option<Result<Response>> {
        self.completion.wait_timeout(timeout)
    }

    /// The result if the chat has ended, without blocking.
    pub fn poll(&self) -> Option<Result<Response>> {
        self.completion.get()
    }

    /// Whether the chat has ended.
    pub fn is_finished(&self) -> bool {
        self.completion.slot.lock().value.is_some()
    }

    /// Asks the chat to stop. A queued chat ends as `cancelled` without
    /// running; a running one stops within about 100 ms with its partial text.
    pub fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Stops the chat and fails it with [`Error::Cancelled`](crate::Error)
    /// carrying `reason`, leaving the history as it was before the chat
    /// (for a front door whose callback failed mid-chat). A chat that has
    /// already finished is not changed.
    pub fn abort(&self, reason: impl Into<String>) {
        self.cancel.abort(reason);
    }

    /// The chat's cancel token.
    pub fn cancel_token(&self) -> CancelToken {
        self.cancel.clone()
    }
}

impl Future for ChatHandle {
    type Output = Result<Response>;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        self.completion.poll_with(cx)
    }
}
