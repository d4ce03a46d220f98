//! The HTTP client of remote backends: a blocking `ureq` agent (the
//! backend runs on the agent's inference thread, so no async runtime is
//! needed), and a watcher that makes a cancel interrupt it.
//!
//! A blocked socket read cannot look at a flag, so while a request runs a
//! small watcher thread polls the cancel token (and the chat's deadline)
//! every few milliseconds and, once it is set, shuts the `ureq` agent down, which closes its sockets
//! and makes the blocked read return at once. A shut agent takes no more
//! requests, so a new one replaces it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::time::Duration;

/// How often the watcher looks at the cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// A `ureq` agent that a cancel can interrupt.
pub(crate) struct Client {
    agent: ureq::Agent,
    timeout: Duration,
}

impl Client {
    /// A client whose connects, waits for an answer and silences within
    /// an answer are each bounded by `timeout`. A reply that keeps
    /// streaming is never cut.
    pub(crate) fn new(timeout: Duration) -> Self {
        Client {
            agent: new_agent(timeout),
            timeout,
        }
    }

    /// Runs `request` with the agent; if `stop` says so meanwhile (a
    /// cancel, a deadline; it is asked every few milliseconds), the agent
    /// is shut down, so that a read or write blocked in `request` fails at
    /// once (the caller asks `stop` again and reports why it ended).
    pub(crate) fn watched<T>(
        &mut self,
        stop: &(dyn Fn() -> bool + Sync),
        request: impl FnOnce(&ureq::Agent) -> T,
    ) -> T {
        let (done, finished) = mpsc::channel::<()>();
        let shut = AtomicBool::new(false);
        let watched = self.agent.clone();
        let result = std::thread::scope(|scope| {
            let shut = &shut;
            scope.spawn(move || loop {
                match finished.recv_timeout(CANCEL_POLL) {
                    Err(RecvTimeoutError::Timeout) if stop() => {
                        shut.store(true, Ordering::Release);
                        watched.shutdown();
                        return;
                    }
                    Err(RecvTimeoutError::Timeout) => {}
                    // `request` returned: nothing to watch any more.
                    Ok(()) | Err(RecvTimeoutError::Disconnected) => return,
                }
            });
            let result = request(&self.agent);
            drop(done);
            result
        });
        if shut.load(Ordering::Acquire) {
            self.agent = new_agent(self.timeout);
        }
        result
    }
}

fn new_agent(timeout: Duration) -> ureq::Agent {
    ureq::Agent::config_builder()
        // Error statuses carry the server's reason, which errors quote.
        .http_status_as_error(false)
        .timeout_connect(Some(timeout))
        .timeout_send_request(Some(timeout))
        .timeout_send_body(Some(timeout))
        .timeout_recv_response(Some(timeout))
        .timeout_per_read(Some(timeout))
        .user_agent(concat!("zoo-keeper/", env!("CARGO_PKG_VERSION")))
        .build()
        .new_agent()
}
