//! The agent's tool threads: tool handlers run here while the inference
//! thread waits for their results or for a stop. Sequential calls all run on
//! the first thread (lane 0), one at a time; the calls of one reply under
//! `parallel` or `batched` execution each take a lane of their own.
//!
//! A handler is user code and may block (a sleep, a network call, a stuck
//! lock). Running it on a thread of its own is what lets `stop()` end the
//! chat within its promise even then: the inference thread stops waiting,
//! answers the call with an error and moves on, and the handler finishes in
//! the background, its result dropped. A lane's calls never overlap: the
//! next call queues behind one that was given up on, so under sequential
//! execution a handler written for one caller at a time stays correct. The
//! threads end when the runner is dropped, after the handlers in progress
//! return; the agent's shutdown waits for that, so no handler runs after the
//! agent is freed.

use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::tools::registry::Tool;

/// How often a waiting inference thread looks at the cancel flag: well
/// inside the 100 ms a stop promises.
const CANCEL_POLL: Duration = Duration::from_millis(5);
/// Tool threads an agent keeps at most; calls of a wider batch queue behind
/// the lanes' earlier calls.
pub(crate) const MAX_LANES: usize = 16;

/// How a handler call ended, and when.
type Outcome = (Result<Value>, Instant);

/// One handler call for the tool thread.
struct ToolJob {
    tool: Tool,
    arguments: Value,
    /// The chat's token: a call given up while it queued never runs.
    cancel: CancelToken,
    reply: SyncSender<Outcome>,
}

/// How a handler call ended, seen from the inference thread.
pub(crate) enum ToolRun {
    /// The handler returned (a result or its error).
    Finished(Result<Value>),
    /// The chat was stopped first; the handler may still be running.
    Abandoned,
    /// The tool's time limit passed first; the handler may still be running.
    TimedOut(Duration),
}

/// A call handed to a lane, not yet waited for.
pub(crate) struct Pending {
    result: std::result::Result<Receiver<Outcome>, Error>,
    /// When the call was handed over: its time limit counts from here, not
    /// from when the inference thread gets round to waiting for it (under
    /// `parallel`, after the calls before it in the reply).
    started: Instant,
}

impl Pending {
    /// Waits for the handler, until `cancel` is set or `timeout` (counted
    /// from the call's start) passes. A handler that returned after its
    /// limit is timed out too, even when its result was already waiting:
    /// the outcome does not depend on how long the calls before it took.
    pub(crate) fn wait(self, cancel: &CancelToken, timeout: Option<Duration>) -> ToolRun {
        match self.result {
            // A limit too far to be an instant is no limit.
            Ok(result) => {
                let limit = timeout.and_then(|t| Some((t, self.started.checked_add(t)?)));
                wait(&result, cancel, limit)
            }
            Err(error) => ToolRun::Finished(Err(error)),
        }
    }
}

/// Starts tool threads on first use and hands them calls.
pub(crate) struct ToolRunner {
    thread_started: Box<dyn Fn(ThreadId) + Send>,
    lanes: Vec<(Sender<ToolJob>, JoinHandle<()>)>,
}

impl ToolRunner {
    /// A runner whose thread, once started, is reported to `on_start` (the
    /// agent counts it as one of its own threads).
    pub(crate) fn new(on_start: impl Fn(ThreadId) + Send + 'static) -> Self {
        ToolRunner {
            thread_started: Box::new(on_start),
            lanes: Vec::new(),
        }
    }

    /// Hands the call to lane `lane` (modulo [`MAX_LANES`]) and returns at once.
    pub(crate) fn start(
        &mut self,
        lane: usize,
        tool: &Tool,
        arguments: Value,
        cancel: &CancelToken,
    ) -> Pending {
        let started = Instant::now();
        let (reply, result) = sync_channel(1);
        let job = ToolJob {
            tool: tool.clone(),
            arguments,
            cancel: cancel.clone(),
            reply,
        };
        let sent = self
            .lane(lane % MAX_LANES)
            .and_then(|jobs| jobs.send(job).map_err(|_| thread_gone()));
        Pending {
            result: sent.map(|()| result),
            started,
        }
    }

    /// The lane's queue, starting its thread (and those before it) on first use.
    fn lane(&mut self, lane: usize) -> Result<&Sender<ToolJob>> {
        while self.lanes.len() <= lane {
            let (jobs, queue) = channel::<ToolJob>();
            let thread = std::thread::Builder::new()
                .name(format!("zoo-tools-{}", self.lanes.len()))
                .spawn(move || serve(queue))
                .map_err(|e| Error::Internal(format!("cannot start a tool thread: {e}")))?;
            (self.thread_started)(thread.thread().id());
            self.lanes.push((jobs, thread));
        }
        Ok(&self.lanes[lane].0)
    }
}

impl Drop for ToolRunner {
    /// Closes the queues and waits for the handlers in progress, if any.
    fn drop(&mut self) {
        let lanes = std::mem::take(&mut self.lanes);
        let threads: Vec<JoinHandle<()>> = lanes.into_iter().map(|(_, thread)| thread).collect();
        for thread in threads {
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

fn serve(queue: Receiver<ToolJob>) {
    while let Ok(job) = queue.recv() {
        if job.cancel.is_cancelled() {
            continue;
        }
        let outcome = crate::cancel::with_current_call(&job.cancel, || {
            job.tool.invoke_validated(job.arguments)
        });
        // The inference thread may have stopped waiting: then nobody reads it.
        let _ = job.reply.send((outcome, Instant::now()));
    }
}

fn wait(
    result: &Receiver<Outcome>,
    cancel: &CancelToken,
    limit: Option<(Duration, Instant)>,
) -> ToolRun {
    loop {
        if cancel.is_cancelled() {
            return ToolRun::Abandoned;
        }
        // Wake at the deadline, not up to a poll later.
        let slice = limit.map_or(CANCEL_POLL, |(_, deadline)| {
            deadline
                .saturating_duration_since(Instant::now())
                .min(CANCEL_POLL)
        });
        match result.recv_timeout(slice) {
            // Judged by when the handler returned, not when it is read: a
            // call that finished in time is never timed out for being
            // waited for late, and one that finished past its limit is
            // timed out even if its result was already waiting.
            Ok((outcome, finished)) => {
                return match limit {
                    Some((timeout, deadline)) if finished > deadline => ToolRun::TimedOut(timeout),
                    _ => ToolRun::Finished(outcome),
                }
            }
            Err(RecvTimeoutError::Timeout) => {
                if let Some((timeout, deadline)) = limit {
                    if Instant::now() >= deadline {
                        return ToolRun::TimedOut(timeout);
                    }
                }
            }
            // A call given up while it queued is dropped unrun: that is the
            // stop, not a broken thread.
            Err(RecvTimeoutError::Disconnected) if cancel.is_cancelled() => {
                return ToolRun::Abandoned
            }
            Err(RecvTimeoutError::Disconnected) => return ToolRun::Finished(Err(thread_gone())),
        }
    }
}

fn thread_gone() -> Error {
    Error::Internal("the tool thread ended unexpectedly".into())
}
