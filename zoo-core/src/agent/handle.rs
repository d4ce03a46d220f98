//! `ChatHandle`: the caller's side of a chat that runs on the inference
//! thread. It can be waited on (with or without a timeout), polled,
//! cancelled, or awaited as a `Future`.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::cancel::CancelToken;
use crate::engine::completion::Completion;
use crate::error::Result;
use crate::response::Response;

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
        self.completion.is_filled()
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
