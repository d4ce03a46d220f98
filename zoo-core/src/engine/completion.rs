//! `Completion`: a one-shot slot the inference thread fills and any thread
//! reads, by waiting (with or without a timeout), polling, or as a future's
//! waker. Chat handles and the agent's blocking calls are built on it.

use std::sync::Arc;
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

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

    /// Whether the slot is filled.
    pub(crate) fn is_filled(&self) -> bool {
        self.slot.lock().value.is_some()
    }

    /// The value, if filled.
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

    /// Ready with the value, or registers the task's waker.
    pub(crate) fn poll_with(&self, cx: &Context<'_>) -> Poll<T> {
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
