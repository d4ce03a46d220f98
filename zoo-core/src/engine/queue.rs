//! The request queue: many producers (any thread calling the agent), one
//! consumer (the inference thread), FIFO, with a depth for monitoring.

use std::collections::VecDeque;

use parking_lot::{Condvar, Mutex};

/// A multi-producer, single-consumer FIFO queue that can be closed.
#[derive(Debug)]
pub struct RequestQueue<T> {
    inner: Mutex<Inner<T>>,
    ready: Condvar,
}

#[derive(Debug)]
struct Inner<T> {
    items: VecDeque<T>,
    closed: bool,
}

impl<T> Default for RequestQueue<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> RequestQueue<T> {
    /// An empty, open queue.
    pub fn new() -> Self {
        RequestQueue {
            inner: Mutex::new(Inner {
                items: VecDeque::new(),
                closed: false,
            }),
            ready: Condvar::new(),
        }
    }

    /// Appends an item; gives it back when the queue is closed.
    pub fn push(&self, item: T) -> Result<(), T> {
        let mut inner = self.inner.lock();
        if inner.closed {
            return Err(item);
        }
        inner.items.push_back(item);
        drop(inner);
        self.ready.notify_one();
        Ok(())
    }

    /// Takes the oldest item, blocking while the queue is empty; `None` once
    /// the queue is closed and drained.
    pub fn pop(&self) -> Option<T> {
        let mut inner = self.inner.lock();
        loop {
            if let Some(item) = inner.items.pop_front() {
                return Some(item);
            }
            if inner.closed {
                return None;
            }
            self.ready.wait(&mut inner);
        }
    }

    /// Takes the oldest item without blocking.
    pub fn try_pop(&self) -> Option<T> {
        self.inner.lock().items.pop_front()
    }

    /// Items waiting to be taken. Never blocks for long.
    pub fn depth(&self) -> usize {
        self.inner.lock().items.len()
    }

    /// Refuses further pushes, wakes the consumer and returns the items that
    /// were still waiting, so the caller can resolve them.
    pub fn close(&self) -> Vec<T> {
        let mut inner = self.inner.lock();
        inner.closed = true;
        let rest = inner.items.drain(..).collect();
        drop(inner);
        self.ready.notify_all();
        rest
    }

    /// Whether `close` was called.
    pub fn is_closed(&self) -> bool {
        self.inner.lock().closed
    }
}
