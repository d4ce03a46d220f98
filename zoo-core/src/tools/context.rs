//! The context of one tool call: its id, its own cancel token, and the
//! reports (`update`, `progress`) that become the chat's
//! `tool_call_update` and `tool_call_progress` events.
//!
//! A handler runs on a tool thread while events are emitted on the
//! inference thread, in order. Reports therefore wait in the call's queue
//! until the inference thread, which drains every running call's queue
//! while it waits for their results, turns them into events; a report wakes
//! it at once. When the call finishes (a result, an error, a timeout or a
//! stop) its queue is drained one last time, before `tool_call_finished`,
//! and closed: a report made after that, from a thread the handler left
//! running or from a context kept past its call, is dropped and the report
//! function returns `false`.
//!
//! Memory stays bounded whatever a tool does: at most
//! [`MAX_PENDING_REPORTS`] reports of a call wait at once, and when a new
//! one comes while the queue is full, the oldest waiting report is dropped.
//! A tool that reports faster than the events are handled therefore loses
//! intermediate reports, never its latest one.

use std::collections::VecDeque;
use std::sync::mpsc::SyncSender;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use crate::cancel::CancelToken;
use crate::response::Usage;

/// Reports of one call that wait at most for the inference thread; past
/// this, the oldest waiting one is dropped.
pub const MAX_PENDING_REPORTS: usize = 256;

/// What a running call reported, waiting for the inference thread.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Report {
    /// A partial result (`tool_call_update`).
    Update(Value),
    /// A line of progress (`tool_call_progress`).
    Progress(String),
}

/// The reports of one call, and whether the call is still running.
#[derive(Debug, Default)]
struct Queue {
    reports: VecDeque<Report>,
    /// Tokens spent by the call (a sub-agent's replies), added to the
    /// chat's usage; summed, so never dropped.
    usage: Usage,
    /// Reports dropped because the queue was full, for the logs.
    dropped: u64,
    closed: bool,
}

/// What the inference thread takes from a call's queue.
#[derive(Debug, Default)]
pub(crate) struct Drained {
    pub(crate) reports: Vec<Report>,
    pub(crate) usage: Usage,
}

struct Call {
    id: String,
    tool: String,
    cancel: CancelToken,
    queue: Mutex<Queue>,
    /// Wakes the inference thread when a report comes.
    wake: Option<SyncSender<()>>,
}

/// What a tool handler can reach of the call it serves: the call's id, its
/// cancel token, and [`update`](Self::update) and
/// [`progress`](Self::progress) reports that the chat's event stream shows
/// while the call runs. Cheap to clone; every clone is the same call. Any
/// thread may use it.
///
/// The cancel token is the call's own: the engine sets it when the chat is
/// stopped (within 5 ms) and when the tool's `timeout_ms` passes, once it
/// has finished with the call. A handler that can take long should look at
/// it (or [`wait_cancelled`](Self::wait_cancelled)) and return early: its
/// result is discarded, and so is anything it reports from then on.
#[derive(Clone)]
pub struct ToolContext {
    call: Arc<Call>,
}

impl std::fmt::Debug for ToolContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolContext")
            .field("call_id", &self.call.id)
            .field("tool", &self.call.tool)
            .field("cancelled", &self.is_cancelled())
            .finish_non_exhaustive()
    }
}

impl ToolContext {
    /// The context of a call the engine runs: `wake` is rung on each report.
    pub(crate) fn new(
        id: impl Into<String>,
        tool: impl Into<String>,
        cancel: CancelToken,
        wake: SyncSender<()>,
    ) -> Self {
        Self::build(id.into(), tool.into(), cancel, Some(wake), false)
    }

    /// A context outside any chat (a tool called directly, a test): its
    /// reports go nowhere and return `false`; `cancel` is its token.
    pub fn detached(id: impl Into<String>, tool: impl Into<String>, cancel: CancelToken) -> Self {
        Self::build(id.into(), tool.into(), cancel, None, true)
    }

    fn build(
        id: String,
        tool: String,
        cancel: CancelToken,
        wake: Option<SyncSender<()>>,
        closed: bool,
    ) -> Self {
        let queue = Mutex::new(Queue {
            closed,
            ..Queue::default()
        });
        ToolContext {
            call: Arc::new(Call {
                id,
                tool,
                cancel,
                queue,
                wake,
            }),
        }
    }

    /// The call's id (`call_1`, ...), as its events and its tool message
    /// carry it.
    pub fn call_id(&self) -> &str {
        &self.call.id
    }

    /// The name of the tool called.
    pub fn tool_name(&self) -> &str {
        &self.call.tool
    }

    /// The call's cancel token (set by the chat's stop and by the tool's
    /// time limit).
    pub fn cancel_token(&self) -> &CancelToken {
        &self.call.cancel
    }

    /// Whether the call should stop: the chat was stopped or the tool's
    /// time limit passed.
    pub fn is_cancelled(&self) -> bool {
        self.call.cancel.is_cancelled()
    }

    /// Blocks until the call is cancelled or `timeout` passes (`None`: no
    /// limit); returns whether it is cancelled.
    pub fn wait_cancelled(&self, timeout: Option<Duration>) -> bool {
        self.call.cancel.wait(timeout)
    }

    /// Reports a partial result, shown as a `tool_call_update` event of the
    /// call. Returns whether it was taken: `false` once the call has
    /// finished (the report is dropped).
    pub fn update(&self, partial: Value) -> bool {
        self.report(Report::Update(partial))
    }

    /// Reports progress in words, shown as a `tool_call_progress` event of
    /// the call. Returns whether it was taken: `false` once the call has
    /// finished (the report is dropped).
    pub fn progress(&self, text: impl Into<String>) -> bool {
        self.report(Report::Progress(text.into()))
    }

    /// Adds tokens the call spent (a sub-agent's replies) to the chat's
    /// usage. Returns whether they were taken (`false` once the call has
    /// finished).
    pub(crate) fn add_usage(&self, usage: Usage) -> bool {
        let taken = {
            let mut queue = self.call.queue.lock();
            if !queue.closed {
                queue.usage.add(usage);
            }
            !queue.closed
        };
        self.ring(taken)
    }

    fn report(&self, report: Report) -> bool {
        let taken = {
            let mut queue = self.call.queue.lock();
            if !queue.closed {
                if queue.reports.len() == MAX_PENDING_REPORTS {
                    queue.reports.pop_front();
                    queue.dropped += 1;
                }
                queue.reports.push_back(report);
            }
            !queue.closed
        };
        self.ring(taken)
    }

    /// Wakes the inference thread (a ring already waiting is enough).
    fn ring(&self, taken: bool) -> bool {
        if taken {
            if let Some(wake) = &self.call.wake {
                let _ = wake.try_send(());
            }
        }
        taken
    }

    /// Wakes the inference thread, for the tool thread when the call ends.
    pub(crate) fn wake(&self) {
        self.ring(true);
    }

    /// Takes the reports waiting, in order.
    pub(crate) fn drain(&self) -> Drained {
        let mut queue = self.call.queue.lock();
        Drained {
            reports: queue.reports.drain(..).collect(),
            usage: std::mem::take(&mut queue.usage),
        }
    }

    /// Takes the last reports and closes the queue: later reports are
    /// dropped.
    pub(crate) fn finish(&self) -> Drained {
        let mut queue = self.call.queue.lock();
        queue.closed = true;
        if queue.dropped > 0 {
            tracing::debug!(
                call = %self.call.id,
                tool = %self.call.tool,
                dropped = queue.dropped,
                "reports of a tool call were dropped: more than {MAX_PENDING_REPORTS} waited at once"
            );
        }
        Drained {
            reports: queue.reports.drain(..).collect(),
            usage: std::mem::take(&mut queue.usage),
        }
    }

    /// Releases what the token's callbacks hold, once the call is over.
    pub(crate) fn release(&self) {
        self.call.cancel.forget_callbacks();
    }

    /// Whether `other` is a clone of this context.
    pub(crate) fn is_same_call(&self, other: &ToolContext) -> bool {
        Arc::ptr_eq(&self.call, &other.call)
    }

    /// Whether the call has finished (its reports are dropped).
    pub fn is_finished(&self) -> bool {
        self.call.queue.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn context() -> (ToolContext, std::sync::mpsc::Receiver<()>) {
        let (wake, rung) = std::sync::mpsc::sync_channel(1);
        (
            ToolContext::new("call_1", "t", CancelToken::new(), wake),
            rung,
        )
    }

    #[test]
    fn reports_wait_in_order_and_ring() {
        let (ctx, rung) = context();
        assert!(ctx.progress("one"));
        assert!(ctx.update(json!({"n": 2})));
        assert!(rung.try_recv().is_ok());
        let drained = ctx.drain();
        assert_eq!(
            drained.reports,
            vec![
                Report::Progress("one".into()),
                Report::Update(json!({"n": 2}))
            ]
        );
        assert!(ctx.drain().reports.is_empty());
    }

    #[test]
    fn a_full_queue_drops_the_oldest_and_keeps_the_latest() {
        let (ctx, _rung) = context();
        for i in 0..10 * MAX_PENDING_REPORTS {
            assert!(ctx.progress(i.to_string()));
        }
        let reports = ctx.finish().reports;
        assert_eq!(reports.len(), MAX_PENDING_REPORTS);
        assert_eq!(
            reports.last(),
            Some(&Report::Progress(
                (10 * MAX_PENDING_REPORTS - 1).to_string()
            ))
        );
        assert_eq!(
            reports[0],
            Report::Progress((9 * MAX_PENDING_REPORTS).to_string())
        );
    }

    #[test]
    fn reports_after_the_finish_are_dropped() {
        let (ctx, _rung) = context();
        assert!(ctx.progress("before"));
        assert_eq!(ctx.finish().reports.len(), 1);
        assert!(ctx.is_finished());
        assert!(!ctx.progress("after"));
        assert!(!ctx.update(json!(1)));
        assert!(!ctx.add_usage(Usage::default()));
        assert!(ctx.drain().reports.is_empty());
        let detached = ToolContext::detached("x", "t", CancelToken::new());
        assert!(!detached.progress("nowhere"));
    }

    #[test]
    fn usage_is_summed_never_dropped() {
        let (ctx, _rung) = context();
        let usage = Usage {
            prompt_tokens: 3,
            cached_tokens: 1,
            completion_tokens: 2,
            total_tokens: 5,
        };
        for _ in 0..2 * MAX_PENDING_REPORTS {
            ctx.progress("spam");
        }
        assert!(ctx.add_usage(usage));
        assert!(ctx.add_usage(usage));
        assert_eq!(ctx.finish().usage.total_tokens, 10);
    }
}
