//! The agent's tool thread: tool handlers run here, one at a time, while the
//! inference thread waits for the result or for a stop.
//!
//! A handler is user code and may block (a sleep, a network call, a stuck
//! lock). Running it on its own thread is what lets `stop()` end the chat
//! within its promise even then: the inference thread stops waiting, answers
//! the call with an error and moves on, and the handler finishes in the
//! background, its result dropped. Handlers still never overlap: the next
//! call queues behind one that was given up on, so a handler written for
//! one caller at a time stays correct. The thread ends when the runner is
//! dropped, after the handler in progress returns; the agent's shutdown
//! waits for that, so no handler runs after the agent is freed.

use std::sync::mpsc::{channel, sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender};
use std::thread::{JoinHandle, ThreadId};
use std::time::Duration;

use serde_json::Value;

use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::tools::registry::Tool;

/// How often a waiting inference thread looks at the cancel flag: well
/// inside the 100 ms a stop promises.
const CANCEL_POLL: Duration = Duration::from_millis(5);

/// One handler call for the tool thread.
struct ToolJob {
    tool: Tool,
    arguments: Value,
    /// The chat's token: a call given up while it queued never runs.
    cancel: CancelToken,
    reply: SyncSender<Result<Value>>,
}

/// How a handler call ended, seen from the inference thread.
pub(crate) enum ToolRun {
    /// The handler returned (a result or its error).
    Finished(Result<Value>),
    /// The chat was stopped first; the handler may still be running.
    Abandoned,
}

/// Starts the tool thread on first use and hands it calls.
pub(crate) struct ToolRunner {
    thread_started: Box<dyn Fn(ThreadId) + Send>,
    worker: Option<(Sender<ToolJob>, JoinHandle<()>)>,
}

impl ToolRunner {
    /// A runner whose thread, once started, is reported to `on_start` (the
    /// agent counts it as one of its own threads).
    pub(crate) fn new(on_start: impl Fn(ThreadId) + Send + 'static) -> Self {
        ToolRunner {
            thread_started: Box::new(on_start),
            worker: None,
        }
    }

    /// Runs the tool's handler (arguments already validated) on the tool
    /// thread and waits for it, or until `cancel` is set.
    pub(crate) fn run(&mut self, tool: &Tool, arguments: Value, cancel: &CancelToken) -> ToolRun {
        let (reply, result) = sync_channel(1);
        let job = ToolJob {
            tool: tool.clone(),
            arguments,
            cancel: cancel.clone(),
            reply,
        };
        let sent = self
            .sender()
            .and_then(|jobs| jobs.send(job).map_err(|_| thread_gone()));
        if let Err(error) = sent {
            return ToolRun::Finished(Err(error));
        }
        wait(&result, cancel)
    }

    fn sender(&mut self) -> Result<&Sender<ToolJob>> {
        if self.worker.is_none() {
            let (jobs, queue) = channel::<ToolJob>();
            let thread = std::thread::Builder::new()
                .name("zoo-tools".into())
                .spawn(move || serve(queue))
                .map_err(|e| Error::Internal(format!("cannot start the tool thread: {e}")))?;
            (self.thread_started)(thread.thread().id());
            self.worker = Some((jobs, thread));
        }
        Ok(&self.worker.as_ref().expect("started above").0)
    }
}

impl Drop for ToolRunner {
    /// Closes the queue and waits for the handler in progress, if any.
    fn drop(&mut self) {
        if let Some((jobs, thread)) = self.worker.take() {
            drop(jobs);
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
        let outcome = job.tool.invoke_validated(job.arguments);
        // The inference thread may have stopped waiting: then nobody reads it.
        let _ = job.reply.send(outcome);
    }
}

fn wait(result: &Receiver<Result<Value>>, cancel: &CancelToken) -> ToolRun {
    loop {
        if cancel.is_cancelled() {
            return ToolRun::Abandoned;
        }
        match result.recv_timeout(CANCEL_POLL) {
            Ok(outcome) => return ToolRun::Finished(outcome),
            Err(RecvTimeoutError::Timeout) => {}
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
