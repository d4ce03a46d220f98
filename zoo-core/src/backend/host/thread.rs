//! The host thread: where a host backend's code runs, one call at a time,
//! while the inference thread reads the reply and watches for a stop.
//!
//! Host code may block (a network call, a stuck lock). Running it on a
//! thread of its own is what lets a stop end the chat within its promise
//! even then: the inference thread stops reading, the sink drops what
//! comes after, and the call finishes in the background. The next call
//! queues behind it, so a host written for one caller at a time stays
//! correct; dropping the backend waits for the call in progress.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::mpsc::{channel, Sender, SyncSender};
use std::thread::{JoinHandle, ThreadId};

use super::request::HostRequest;
use super::sink::HostSink;
use super::HostModel;
use crate::error::{Error, Result};
use crate::message::Message;

/// One call for the host thread.
pub(crate) enum Job {
    /// Generate a reply into `sink`.
    Generate {
        request: Box<HostRequest>,
        sink: HostSink,
    },
    /// Count the tokens of a message.
    Count {
        message: Message,
        reply: SyncSender<std::result::Result<u32, String>>,
    },
}

/// The thread that runs a host backend's calls.
pub(crate) struct HostThread {
    jobs: Option<Sender<Job>>,
    thread: Option<JoinHandle<()>>,
    id: ThreadId,
}

impl HostThread {
    /// Starts the thread; it owns `host` until the backend is dropped.
    pub(crate) fn start(host: Box<dyn HostModel>) -> Result<Self> {
        let (jobs, queue) = channel::<Job>();
        let thread = std::thread::Builder::new()
            .name("zoo-host".into())
            .spawn(move || {
                let mut host = host;
                for job in queue {
                    run(host.as_mut(), job);
                }
            })
            .map_err(|e| Error::Internal(format!("cannot start the host backend's thread: {e}")))?;
        Ok(HostThread {
            id: thread.thread().id(),
            jobs: Some(jobs),
            thread: Some(thread),
        })
    }

    /// The thread's id (the agent counts it as one of its own).
    pub(crate) fn id(&self) -> ThreadId {
        self.id
    }

    /// Queues a call behind the one in progress.
    pub(crate) fn send(&self, job: Job) -> Result<()> {
        self.jobs
            .as_ref()
            .and_then(|jobs| jobs.send(job).ok())
            .ok_or_else(|| Error::Internal("the host backend's thread has ended".into()))
    }
}

impl Drop for HostThread {
    fn drop(&mut self) {
        // Closing the queue ends the thread after the call in progress.
        self.jobs.take();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Runs one call; a panic in host code is the call's failure, never the
/// thread's end.
fn run(host: &mut dyn HostModel, job: Job) {
    match job {
        Job::Generate { request, sink } => {
            // A reply given up while it waited behind another never starts.
            if sink.is_closed() {
                return;
            }
            let result = catch_unwind(AssertUnwindSafe(|| host.generate(&request, &sink)))
                .unwrap_or_else(|panic| Err(panic_message("generate", panic.as_ref())));
            sink.done(result);
        }
        Job::Count { message, reply } => {
            let result = catch_unwind(AssertUnwindSafe(|| host.count_tokens(&message)))
                .unwrap_or_else(|panic| Err(panic_message("count_tokens", panic.as_ref())));
            // The inference thread always waits for a count.
            let _ = reply.send(result);
        }
    }
}

fn panic_message(call: &str, payload: &(dyn std::any::Any + Send)) -> String {
    let what = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "a panic".into());
    format!("the host backend's {call} panicked: {what}")
}
