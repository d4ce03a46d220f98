//! The bounded queue between the threads that emit records and the
//! `zoo-logs` thread that hands them to the host's handler.

use std::collections::VecDeque;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use serde_json::{Map, Value};

use super::{targets, LogHandler, LogLevel, LogRecord};
use crate::error::{Error, Result};

/// Records the queue holds at most.
pub const QUEUE_RECORDS: usize = 1024;
/// Bytes of record text the queue holds at most (one larger record is
/// still accepted into an empty queue, so a huge prompt is not lost).
pub const QUEUE_BYTES: usize = 4 << 20;

struct State {
    records: VecDeque<LogRecord>,
    bytes: usize,
    handler: Option<Arc<dyn LogHandler>>,
    /// Dropped since the handler was last told.
    unreported: u64,
    /// The `zoo-logs` thread is handing a batch to the handler.
    busy: bool,
    /// The `zoo-logs` thread, once started.
    thread: Option<ThreadId>,
}

struct Queue {
    state: Mutex<State>,
    /// Records (or a drop to report) are waiting.
    ready: Condvar,
    /// The queue is empty and the handler idle.
    idle: Condvar,
}

static QUEUE: Queue = Queue {
    state: Mutex::new(State {
        records: VecDeque::new(),
        bytes: 0,
        handler: None,
        unreported: 0,
        busy: false,
        thread: None,
    }),
    ready: Condvar::new(),
    idle: Condvar::new(),
};

static DROPPED: AtomicU64 = AtomicU64::new(0);

fn lock() -> MutexGuard<'static, State> {
    // A panic never happens while the lock is held (handlers run outside
    // it), but a poisoned queue must not silence logs for good.
    QUEUE.state.lock().unwrap_or_else(|e| e.into_inner())
}

/// Sets the handler, starting the `zoo-logs` thread the first time;
/// returns the previous one. Removing it drops the queued records.
pub(super) fn replace_handler(
    handler: Option<Arc<dyn LogHandler>>,
) -> Result<Option<Arc<dyn LogHandler>>> {
    let mut state = lock();
    if handler.is_none() {
        state.records.clear();
        state.bytes = 0;
        state.unreported = 0;
        QUEUE.idle.notify_all();
    } else if state.thread.is_none() {
        let thread = std::thread::Builder::new()
            .name("zoo-logs".into())
            .spawn(pump)
            .map_err(|e| Error::Internal(format!("cannot start the zoo-logs thread: {e}")))?;
        state.thread = Some(thread.thread().id());
    }
    Ok(std::mem::replace(&mut state.handler, handler))
}

pub(super) fn has_handler() -> bool {
    lock().handler.is_some()
}

pub(super) fn dropped() -> u64 {
    DROPPED.load(Ordering::Relaxed)
}

/// Queues a record for the handler, or drops and counts it if the queue is
/// full. Never blocks on the handler.
pub(super) fn push(record: LogRecord) {
    let size = record.message.len() + record.target.len() + 64;
    let mut state = lock();
    if state.handler.is_none() {
        return;
    }
    let full = state.records.len() >= QUEUE_RECORDS
        || (!state.records.is_empty() && state.bytes + size > QUEUE_BYTES);
    if full {
        state.unreported += 1;
        DROPPED.fetch_add(1, Ordering::Relaxed);
        return;
    }
    state.bytes += size;
    state.records.push_back(record);
    QUEUE.ready.notify_one();
}

/// The `zoo-logs` thread: hands each batch of queued records to the
/// handler, outside the lock.
fn pump() {
    loop {
        let (handler, batch) = {
            let mut state = lock();
            while state.records.is_empty() && state.unreported == 0 {
                state.busy = false;
                QUEUE.idle.notify_all();
                state = QUEUE.ready.wait(state).unwrap_or_else(|e| e.into_inner());
            }
            state.busy = true;
            state.bytes = 0;
            let mut batch: Vec<LogRecord> = Vec::with_capacity(state.records.len() + 1);
            if state.unreported > 0 {
                batch.push(dropped_record(std::mem::take(&mut state.unreported)));
            }
            batch.extend(state.records.drain(..));
            (state.handler.clone(), batch)
        };
        if let Some(handler) = handler {
            // A handler that panics loses its batch, not the thread.
            let _ = catch_unwind(AssertUnwindSafe(|| handler.log_batch(&batch)));
        }
    }
}

/// The warning the handler reads after records were dropped.
fn dropped_record(count: u64) -> LogRecord {
    let mut fields = Map::new();
    fields.insert("dropped".into(), Value::from(count));
    LogRecord {
        level: LogLevel::Warn,
        target: targets::LOGS.into(),
        message: format!(
            "{count} log records were dropped: the log handler was slower than the engine \
             (the queue holds {QUEUE_RECORDS} records)"
        ),
        fields,
    }
}

pub(super) fn flush(timeout: Duration) -> bool {
    let deadline = Instant::now() + timeout;
    let mut state = lock();
    if state.thread == Some(std::thread::current().id()) {
        return false;
    }
    while state.thread.is_some()
        && (state.busy || !state.records.is_empty() || state.unreported > 0)
    {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return false;
        }
        state = QUEUE
            .idle
            .wait_timeout(state, left)
            .unwrap_or_else(|e| e.into_inner())
            .0;
    }
    true
}
