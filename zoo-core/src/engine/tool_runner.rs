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
//!
//! Each call has its own [`ToolContext`] with a cancel token of its own.
//! While the inference thread waits, it drains the reports of every call
//! still running and hands them over to become events; a report or a
//! result wakes it at once (the runner's doorbell). When a call ends its
//! last reports are drained and its context closed, and only then, if it
//! was cut short by the chat's stop (seen within a poll, 5 ms) or its time
//! limit, its token is set: so whatever a handler reports once it sees its
//! token is dropped, never an event after `tool_call_finished`.

use std::sync::mpsc::{
    channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender, TryRecvError,
};
use std::thread::{JoinHandle, ThreadId};
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::tools::context::{Drained, ToolContext};
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
    /// The call's context; a call whose token was set while it queued
    /// never runs.
    context: ToolContext,
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
    context: ToolContext,
}

/// What a call reported, handed to the inference thread with its context.
pub(crate) type OnReports<'a> = dyn FnMut(&ToolContext, Drained) + 'a;

/// Starts tool threads on first use and hands them calls.
pub(crate) struct ToolRunner {
    thread_started: Box<dyn Fn(ThreadId) + Send>,
    lanes: Vec<(Sender<ToolJob>, JoinHandle<()>)>,
    /// Rung by a report or a result; one ring waiting is enough to wake.
    doorbell: (SyncSender<()>, Receiver<()>),
    /// The contexts of the calls started and not yet waited for to the end.
    running: Vec<ToolContext>,
}

impl ToolRunner {
    /// A runner whose thread, once started, is reported to `on_start` (the
    /// agent counts it as one of its own threads).
    pub(crate) fn new(on_start: impl Fn(ThreadId) + Send + 'static) -> Self {
        ToolRunner {
            thread_started: Box::new(on_start),
            lanes: Vec::new(),
            doorbell: sync_channel(1),
            running: Vec::new(),
        }
    }

    /// Hands the call `id` to lane `lane` (modulo [`MAX_LANES`]) with a
    /// context of its own, and returns at once. The call's token is set by
    /// [`wait`](Self::wait) when the chat's is, or when its limit passes.
    pub(crate) fn start(
        &mut self,
        lane: usize,
        id: &str,
        tool: &Tool,
        arguments: Value,
    ) -> Pending {
        let started = Instant::now();
        let context =
            ToolContext::new(id, tool.name(), CancelToken::new(), self.doorbell.0.clone());
        let (reply, result) = sync_channel(1);
        let job = ToolJob {
            tool: tool.clone(),
            arguments,
            context: context.clone(),
            reply,
        };
        let sent = self
            .lane(lane % MAX_LANES)
            .and_then(|jobs| jobs.send(job).map_err(|_| thread_gone()));
        self.running.push(context.clone());
        Pending {
            result: sent.map(|()| result),
            started,
            context,
        }
    }

    /// Waits for the handler, until `cancel` is set or `timeout` (counted
    /// from the call's start) passes, handing the reports of every running
    /// call to `on_reports` meanwhile. A handler that returned after its
    /// limit is timed out too, even when its result was already waiting:
    /// the outcome does not depend on how long the calls before it took.
    /// The call's last reports are handed over before this returns, and its
    /// token is set if it was cut short.
    pub(crate) fn wait(
        &mut self,
        pending: Pending,
        cancel: &CancelToken,
        timeout: Option<Duration>,
        on_reports: &mut OnReports<'_>,
    ) -> ToolRun {
        let run = match &pending.result {
            Ok(result) => {
                // A limit too far to be an instant is no limit.
                let limit = timeout.and_then(|t| Some((t, pending.started.checked_add(t)?)));
                self.wait_for(result, cancel, limit, on_reports)
            }
            Err(error) => ToolRun::Finished(Err(error.clone())),
        };
        self.end(&pending.context, &run, on_reports);
        run
    }

    fn wait_for(
        &self,
        result: &Receiver<Outcome>,
        cancel: &CancelToken,
        limit: Option<(Duration, Instant)>,
        on_reports: &mut OnReports<'_>,
    ) -> ToolRun {
        loop {
            if cancel.is_cancelled() {
                return ToolRun::Abandoned;
            }
            for context in &self.running {
                on_reports(context, context.drain());
            }
            match result.try_recv() {
                // Judged by when the handler returned, not when it is read:
                // a call that finished in time is never timed out for being
                // waited for late, and one that finished past its limit is
                // timed out even if its result was already waiting.
                Ok((outcome, finished)) => {
                    return match limit {
                        Some((timeout, deadline)) if finished > deadline => {
                            ToolRun::TimedOut(timeout)
                        }
                        _ => ToolRun::Finished(outcome),
                    }
                }
                Err(TryRecvError::Empty) => {}
                // A call given up while it queued is dropped unrun: that is
                // the stop, not a broken thread.
                Err(TryRecvError::Disconnected) if cancel.is_cancelled() => {
                    return ToolRun::Abandoned
                }
                Err(TryRecvError::Disconnected) => return ToolRun::Finished(Err(thread_gone())),
            }
            // Wake at the deadline, not up to a poll later.
            let mut slice = CANCEL_POLL;
            if let Some((timeout, deadline)) = limit {
                let left = deadline.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    return ToolRun::TimedOut(timeout);
                }
                slice = slice.min(left);
            }
            match self.doorbell.1.recv_timeout(slice) {
                Ok(()) | Err(RecvTimeoutError::Timeout) => {}
                // The runner holds a sender itself: never disconnected.
                Err(RecvTimeoutError::Disconnected) => std::thread::sleep(slice),
            }
        }
    }

    /// Closes and cancels the calls started and not waited for (a chat
    /// that failed between starting a reply's calls and answering them).
    pub(crate) fn abandon_running(&mut self) {
        for context in std::mem::take(&mut self.running) {
            context.finish();
            context.cancel_token().cancel();
            context.release();
        }
    }

    /// Closes a call that ended: its last reports go to `on_reports`, then
    /// a call cut short has its token set (after the close, so nothing it
    /// reports on seeing it can follow `tool_call_finished`).
    fn end(&mut self, context: &ToolContext, run: &ToolRun, on_reports: &mut OnReports<'_>) {
        self.running.retain(|c| !c.is_same_call(context));
        on_reports(context, context.finish());
        if matches!(run, ToolRun::Abandoned | ToolRun::TimedOut(_)) {
            context.cancel_token().cancel();
        }
        context.release();
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
        if job.context.is_cancelled() {
            job.context.wake();
            continue;
        }
        let outcome = job.tool.invoke_validated_with(job.arguments, &job.context);
        // The inference thread may have stopped waiting: then nobody reads it.
        let _ = job.reply.send((outcome, Instant::now()));
        job.context.wake();
    }
}

fn thread_gone() -> Error {
    Error::Internal("the tool thread ended unexpectedly".into())
}
