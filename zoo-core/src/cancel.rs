//! Cancellation flags shared between a caller and the inference thread.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

/// A callback run once when a token is cancelled.
type OnCancel = Box<dyn FnOnce() + Send>;

/// A flag that, once set, asks a chat (or one tool call) to stop. Cheap to
/// clone; every clone sees the same flag. The backend checks it between
/// tokens, and llama.cpp checks it inside a decode.
///
/// A plain [`cancel`](Self::cancel) ends the chat as `cancelled` and keeps
/// what it completed; an [`abort`](Self::abort) (a front door whose callback
/// failed) fails the chat with [`Error::Cancelled`](crate::Error::Cancelled)
/// and undoes the whole turn, because the host never saw it through.
///
/// Each tool call has a token of its own, which the engine sets when the
/// call's chat is stopped or its time limit passes, once it has finished
/// with the call (see [`ToolContext`](crate::tools::ToolContext)).
#[derive(Clone, Default)]
pub struct CancelToken {
    flag: Arc<AtomicBool>,
    abort: Arc<Mutex<Option<String>>>,
    /// Wakes [`wait`](Self::wait) and holds the callbacks of
    /// [`on_cancel`](Self::on_cancel) not run yet.
    signal: Arc<Signal>,
}

#[derive(Default)]
struct Signal {
    callbacks: Mutex<Vec<OnCancel>>,
    woken: Condvar,
    /// The tokens made by [`child`](CancelToken::child), held weakly: a
    /// child dropped before this token is cancelled is simply forgotten.
    children: Mutex<Vec<WeakToken>>,
}

/// A child token, not kept alive by its parent.
struct WeakToken {
    flag: Weak<AtomicBool>,
    abort: Weak<Mutex<Option<String>>>,
    signal: Weak<Signal>,
}

impl WeakToken {
    fn of(token: &CancelToken) -> Self {
        WeakToken {
            flag: Arc::downgrade(&token.flag),
            abort: Arc::downgrade(&token.abort),
            signal: Arc::downgrade(&token.signal),
        }
    }

    fn upgrade(&self) -> Option<CancelToken> {
        Some(CancelToken {
            flag: self.flag.upgrade()?,
            abort: self.abort.upgrade()?,
            signal: self.signal.upgrade()?,
        })
    }
}

impl std::fmt::Debug for CancelToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CancelToken")
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl CancelToken {
    /// A fresh, unset token.
    pub fn new() -> Self {
        Self::default()
    }

    /// A token that is cancelled when this one is (an abort passes its
    /// reason on), and that can also be cancelled alone: one reply of a
    /// chat, which a steering message ends early without stopping the chat.
    pub fn child(&self) -> CancelToken {
        let child = CancelToken::new();
        {
            let mut children = self.signal.children.lock();
            children.retain(|c| c.flag.strong_count() > 0);
            children.push(WeakToken::of(&child));
        }
        // A cancel that came before the child was listed did not reach it.
        if self.is_cancelled() {
            self.pass_on(&child);
        }
        child
    }

    /// Asks the chat to stop, wakes the threads in [`wait`](Self::wait),
    /// runs the [`on_cancel`](Self::on_cancel) callbacks (on this thread)
    /// and cancels the token's [`child`](Self::child) tokens.
    pub fn cancel(&self) {
        self.flag.store(true, Ordering::Release);
        let callbacks = {
            let mut pending = self.signal.callbacks.lock();
            self.signal.woken.notify_all();
            std::mem::take(&mut *pending)
        };
        for callback in callbacks {
            callback();
        }
        let children = std::mem::take(&mut *self.signal.children.lock());
        for child in children.iter().filter_map(WeakToken::upgrade) {
            self.pass_on(&child);
        }
    }

    /// Cancels `child` as this token was cancelled: aborted with the same
    /// reason, or cancelled.
    fn pass_on(&self, child: &CancelToken) {
        match self.abort_reason() {
            Some(reason) => child.abort(reason),
            None => child.cancel(),
        }
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

    /// Blocks until the token is cancelled or `timeout` passes (`None`:
    /// no limit); returns whether it is cancelled.
    pub fn wait(&self, timeout: Option<Duration>) -> bool {
        let deadline = timeout.and_then(|t| Instant::now().checked_add(t));
        let mut pending = self.signal.callbacks.lock();
        while !self.is_cancelled() {
            match deadline {
                None => self.signal.woken.wait(&mut pending),
                Some(deadline) => {
                    if self
                        .signal
                        .woken
                        .wait_until(&mut pending, deadline)
                        .timed_out()
                    {
                        return self.is_cancelled();
                    }
                }
            }
        }
        true
    }

    /// Runs `f` once when [`cancel`](Self::cancel) is called on this token,
    /// on the thread that cancels it; at once, on this thread, if the
    /// token already is cancelled.
    pub fn on_cancel(&self, f: impl FnOnce() + Send + 'static) {
        {
            let mut pending = self.signal.callbacks.lock();
            if !self.is_cancelled() {
                pending.push(Box::new(f));
                return;
            }
        }
        f();
    }

    /// Drops the callbacks not run yet (a finished call's), so that what
    /// they hold (a front door's handle on the host's runtime) is released.
    pub(crate) fn forget_callbacks(&self) {
        let callbacks = std::mem::take(&mut *self.signal.callbacks.lock());
        drop(callbacks);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wait_wakes_on_cancel_and_times_out_otherwise() {
        let token = CancelToken::new();
        assert!(!token.wait(Some(Duration::from_millis(1))));
        assert!(!token.wait(Some(Duration::ZERO)));
        let other = token.clone();
        let waiter = std::thread::spawn(move || other.wait(None));
        token.cancel();
        assert!(waiter.join().unwrap());
    }

    #[test]
    fn callbacks_run_once_on_cancel_or_at_once_when_already_cancelled() {
        let token = CancelToken::new();
        let runs = Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let counter = runs.clone();
        token.on_cancel(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        token.cancel();
        token.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        let counter = runs.clone();
        token.on_cancel(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        assert_eq!(runs.load(Ordering::SeqCst), 2);
        let forgotten = CancelToken::new();
        let counter = runs.clone();
        forgotten.on_cancel(move || {
            counter.fetch_add(1, Ordering::SeqCst);
        });
        forgotten.forget_callbacks();
        forgotten.cancel();
        assert_eq!(runs.load(Ordering::SeqCst), 2);
    }

    #[test]
    fn a_child_follows_its_parent_but_not_the_other_way() {
        let parent = CancelToken::new();
        let alone = parent.child();
        alone.cancel();
        assert!(!parent.is_cancelled());
        let child = parent.child();
        let grandchild = child.child();
        parent.abort("the callback failed");
        assert!(child.is_cancelled() && grandchild.is_cancelled());
        assert_eq!(
            grandchild.abort_reason().as_deref(),
            Some("the callback failed")
        );
        // Made after the cancel, a child starts cancelled.
        assert!(parent.child().is_cancelled());
    }

    #[test]
    fn dropped_children_are_not_kept() {
        let parent = CancelToken::new();
        for _ in 0..1000 {
            drop(parent.child());
        }
        let _kept = parent.child();
        assert_eq!(parent.signal.children.lock().len(), 1);
    }
}
