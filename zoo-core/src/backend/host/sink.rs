//! [`HostSink`]: where a host backend puts its reply, from any thread, and
//! where it learns that the reply is no longer wanted.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TrySendError};
use std::sync::Arc;
use std::time::Duration;

use super::output::HostOutput;
use crate::cancel::CancelToken;

/// Items a host may have given that the inference thread has not read yet:
/// past that, an emit waits (a host faster than the chat's callbacks
/// cannot pile up memory).
const QUEUE: usize = 1024;

/// What travels from the host to the inference thread, in order.
pub(crate) enum Delivery {
    /// An item of the reply.
    Output(HostOutput),
    /// The host's `generate` returned: the reply is complete, or failed
    /// with the host's message.
    Done(std::result::Result<(), String>),
}

/// The sink of one reply. Cheap to clone, `Send` and `Sync`: a host may
/// emit from the thread `generate` runs on or from threads of its own,
/// while `generate` runs. Once the reply has ended every emit is dropped
/// and returns false. When the engine ends it early (a stop, the chat's
/// time limit, a stop string, an `error` item),
/// [`is_cancelled`](Self::is_cancelled) also turns true: the host should
/// then return soon (the agent does not wait for it, but the backend's
/// next call does).
#[derive(Clone)]
pub struct HostSink {
    shared: Arc<Shared>,
}

struct Shared {
    sender: SyncSender<Delivery>,
    /// Set when the reply has ended; emits are dropped from then on.
    closed: AtomicBool,
    /// Set when the engine no longer wants the reply.
    cancel: CancelToken,
}

impl std::fmt::Debug for HostSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostSink")
            .field("closed", &self.shared.closed.load(Ordering::Acquire))
            .finish_non_exhaustive()
    }
}

impl HostSink {
    /// A sink and the receiving end the inference thread reads.
    pub(crate) fn new() -> (Self, Receiver<Delivery>) {
        let (sender, receiver) = sync_channel(QUEUE);
        let shared = Shared {
            sender,
            closed: AtomicBool::new(false),
            cancel: CancelToken::new(),
        };
        (
            HostSink {
                shared: Arc::new(shared),
            },
            receiver,
        )
    }

    /// Gives one item of the reply; false when the reply has ended and the
    /// item was dropped. An `error` item ends the reply at once: what
    /// follows it is dropped. Waits while the inference thread has
    /// [`QUEUE`] items still to read.
    pub fn emit(&self, output: HostOutput) -> bool {
        match self.try_emit(output) {
            Ok(taken) => taken,
            Err(output) => {
                let ends = output.ends_the_reply();
                // The receiver goes away once the reply has ended, which
                // wakes this.
                let taken = self.shared.sender.send(Delivery::Output(output)).is_ok();
                if ends {
                    self.shared.closed.store(true, Ordering::Release);
                }
                taken
            }
        }
    }

    /// [`emit`](Self::emit) without waiting: `Err` gives the item back
    /// when the queue is full, for a front door to wait without the lock
    /// the inference thread may need (Python's GIL).
    pub fn try_emit(&self, output: HostOutput) -> Result<bool, HostOutput> {
        if self.shared.closed.load(Ordering::Acquire) {
            return Ok(false);
        }
        let ends = output.ends_the_reply();
        match self.shared.sender.try_send(Delivery::Output(output)) {
            Ok(()) => {
                if ends {
                    self.shared.closed.store(true, Ordering::Release);
                }
                Ok(true)
            }
            Err(TrySendError::Full(Delivery::Output(output))) => Err(output),
            Err(_) => Ok(false),
        }
    }

    /// Gives a piece of the reply's text; false when it was dropped.
    pub fn text(&self, text: impl Into<String>) -> bool {
        self.emit(HostOutput::Text { text: text.into() })
    }

    /// Whether the engine no longer wants the reply: the chat was stopped,
    /// its time limit passed, a stop string ended the text, or an `error`
    /// item failed it.
    pub fn is_cancelled(&self) -> bool {
        self.shared.cancel.is_cancelled()
    }

    /// Blocks until the reply is no longer wanted or `timeout` passes
    /// (`None`: no limit); returns [`is_cancelled`](Self::is_cancelled).
    pub fn wait_cancelled(&self, timeout: Option<Duration>) -> bool {
        self.shared.cancel.wait(timeout)
    }

    /// The token set when the reply is no longer wanted, for hosts that
    /// react to it (`on_cancel`: an `AbortSignal`, a task's cancel).
    pub fn cancel_token(&self) -> &CancelToken {
        &self.shared.cancel
    }

    /// Ends the reply from the engine's side: later emits are dropped and
    /// the host is told (its token is set).
    pub(crate) fn close(&self) {
        self.shared.closed.store(true, Ordering::Release);
        self.shared.cancel.cancel();
    }

    /// Whether the reply has ended (a reply given up while its call queued
    /// is never started).
    pub(crate) fn is_closed(&self) -> bool {
        self.shared.closed.load(Ordering::Acquire)
    }

    /// Reports that `generate` returned, after everything it emitted, and
    /// closes the sink: a host that keeps a clone cannot emit any more.
    pub(crate) fn done(&self, result: std::result::Result<(), String>) {
        if !self.shared.closed.swap(true, Ordering::AcqRel) {
            // Waits for room like an item: the inference thread reads until
            // this arrives, or drops the receiver.
            let _ = self.shared.sender.send(Delivery::Done(result));
        }
        // Drops the callbacks a front door registered (its handle on the
        // host's runtime) without running them: the reply ended normally.
        self.shared.cancel.forget_callbacks();
    }
}
