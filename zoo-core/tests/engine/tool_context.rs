//! Tool contexts on the mock: a handler's `update` and `progress` become
//! events of its call, in order and only while it runs; a tool spamming
//! reports cannot grow memory; the call's own token is set by its time
//! limit and by the chat's stop; reports after the call are dropped.

use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{json, Value};
use zoo_core::tools::context::MAX_PENDING_REPORTS;
use zoo_core::{
    AgentEvent, ChatOptions, Config, EventKind, MockBackend, MockReply, StopReason, Tool,
    ToolContext, ToolExecution,
};

use super::agent_on;
use super::runtime::assert_well_formed;

/// Generous bound for a chat on a loaded machine; only a broken test waits it.
const PROMPTLY: Duration = Duration::from_secs(30);

fn call(name: &str) -> MockReply {
    MockReply::tool_call(name, json!({}))
}

fn recorder() -> (Arc<Mutex<Vec<AgentEvent>>>, ChatOptions) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new().on_event(move |e| sink.lock().unwrap().push(e.clone()));
    (events, options)
}

/// The events of one call after its start, up to its finish, as
/// `(kind, payload)`.
fn call_events(events: &[AgentEvent], id: &str) -> Vec<(&'static str, Value)> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStarted { id: i, .. } if i == id => Some(("started", json!(null))),
            EventKind::ToolCallUpdate { id: i, update, .. } if i == id => {
                Some(("update", update.clone()))
            }
            EventKind::ToolCallProgress { id: i, text, .. } if i == id => {
                Some(("progress", json!(text)))
            }
            EventKind::ToolCallFinished { id: i, result, .. } if i == id => {
                Some(("finished", result.clone().unwrap_or(Value::Null)))
            }
            _ => None,
        })
        .collect()
}

fn reporter(name: &str, steps: usize) -> Tool {
    Tool::with_context(name, "reports", json!({"type": "object"}), move |_, ctx| {
        for i in 1..=steps {
            assert!(ctx.progress(format!("step {i}")));
            assert!(ctx.update(json!({"done": i})));
        }
        Ok(json!(ctx.call_id()))
    })
    .unwrap()
}

#[test]
fn reports_become_events_of_their_call_in_order() {
    let mock = MockBackend::with_script([call("work"), MockReply::text("done")]);
    let agent = agent_on(&mock);
    agent.register_tool(reporter("work", 3));
    let (events, options) = recorder();
    let response = agent.chat("go", options).wait().unwrap();
    assert_eq!(response.tool_calls[0].result, Some(json!("call_1")));
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Stop);
    assert_eq!(
        call_events(&events, "call_1"),
        [
            ("started", json!(null)),
            ("progress", json!("step 1")),
            ("update", json!({"done": 1})),
            ("progress", json!("step 2")),
            ("update", json!({"done": 2})),
            ("progress", json!("step 3")),
            ("update", json!({"done": 3})),
            ("finished", json!("call_1")),
        ]
    );
    let json = serde_json::to_value(&events[4]).unwrap();
    assert_eq!(json["type"], "tool_call_progress");
    assert_eq!(json["name"], "work");
    assert_eq!(json["text"], "step 1");
}

#[test]
fn parallel_calls_report_while_they_run_each_between_its_start_and_finish() {
    let mock = MockBackend::with_script([
        MockReply::tool_calls(&[("slow", json!({})), ("quick", json!({}))]),
        MockReply::text("done"),
    ]);
    let config = Config::default().tool_execution(ToolExecution::Parallel);
    let agent = zoo_core::Agent::with_backend(mock, config).unwrap();
    // `slow` waits until `quick`'s report has become an event: reports of
    // a call are shown while an earlier call of the reply still runs.
    let (seen, quick_reported) = mpsc::channel::<()>();
    let quick_reported = Mutex::new(quick_reported);
    agent.register_tool(
        Tool::with_context("slow", "", json!({"type": "object"}), move |_, ctx| {
            ctx.progress("waiting");
            let shown = quick_reported
                .lock()
                .unwrap()
                .recv_timeout(PROMPTLY)
                .is_ok();
            Ok(json!(shown))
        })
        .unwrap(),
    );
    agent.register_tool(reporter("quick", 1));
    let seen = Mutex::new(Some(seen));
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new().on_event(move |e| {
        if matches!(&e.kind, EventKind::ToolCallUpdate { name, .. } if name == "quick") {
            if let Some(seen) = seen.lock().unwrap().take() {
                let _ = seen.send(());
            }
        }
        sink.lock().unwrap().push(e.clone());
    });
    let response = agent.chat("go", options).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!(true)),
        "quick's update was shown while slow ran"
    );
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Stop);
    assert_eq!(call_events(&events, "call_2").len(), 4);
    let finished_slow = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::ToolCallFinished { id, .. } if id == "call_1"))
        .unwrap();
    let quick_update = events
        .iter()
        .position(|e| matches!(&e.kind, EventKind::ToolCallUpdate { id, .. } if id == "call_2"))
        .unwrap();
    assert!(quick_update < finished_slow);
}

#[test]
fn a_tool_spamming_reports_keeps_at_most_the_bound_waiting_and_its_latest_arrives() {
    const SENT: usize = 200_000;
    let mock = MockBackend::with_script([call("spam"), MockReply::text("done")]);
    let agent = agent_on(&mock);
    // The event callback holds the inference thread at the first report
    // until the tool has sent everything: all but what was drained before
    // must wait in the call's queue, which keeps at most the bound.
    let (open, gate) = mpsc::channel::<()>();
    let open = Mutex::new(open);
    agent.register_tool(
        Tool::with_context("spam", "", json!({"type": "object"}), move |_, ctx| {
            for i in 0..SENT {
                ctx.progress(i.to_string());
            }
            open.lock().unwrap().send(()).unwrap();
            Ok(json!("sent"))
        })
        .unwrap(),
    );
    let gate = Mutex::new(Some(gate));
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new().on_event(move |e| {
        if matches!(e.kind, EventKind::ToolCallProgress { .. }) {
            if let Some(gate) = gate.lock().unwrap().take() {
                gate.recv_timeout(PROMPTLY)
                    .expect("the tool finishes sending");
            }
        }
        sink.lock().unwrap().push(e.clone());
    });
    agent.chat("go", options).wait().unwrap();
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Stop);
    let texts: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallProgress { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    // One drain before the gate, at most the bound after it.
    assert!(
        texts.len() <= 2 * MAX_PENDING_REPORTS,
        "{} progress events for {SENT} reports",
        texts.len()
    );
    assert_eq!(texts.last(), Some(&(SENT - 1).to_string().as_str()));
    let numbers: Vec<usize> = texts.iter().map(|t| t.parse().unwrap()).collect();
    assert!(numbers.windows(2).all(|w| w[0] < w[1]), "in order");
}

/// A tool that waits for its own cancel token, then tells the test whether
/// it saw it and whether a report made after it was taken.
fn waiter(name: &str, seen: mpsc::Sender<(bool, bool)>) -> Tool {
    let seen = Mutex::new(seen);
    Tool::with_context(name, "waits", json!({"type": "object"}), move |_, ctx| {
        ctx.progress("waiting for my token");
        let cancelled = ctx.wait_cancelled(Some(PROMPTLY));
        let late_report_taken = ctx.progress("after my token was set");
        let _ = seen.lock().unwrap().send((cancelled, late_report_taken));
        Ok(json!("ignored"))
    })
    .unwrap()
}

fn progress_texts(events: &[AgentEvent]) -> Vec<String> {
    events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallProgress { text, .. } => Some(text.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn the_time_limit_sets_the_calls_token_and_later_reports_are_dropped() {
    let mock = MockBackend::with_script([call("wait"), MockReply::text("gave up")]);
    let agent = agent_on(&mock);
    let (seen, saw) = mpsc::channel();
    agent.register_tool(waiter("wait", seen).timeout(Some(Duration::from_millis(50))));
    let (events, options) = recorder();
    let response = agent.chat("go", options).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].error.as_deref(),
        Some("tool `wait` failed: it did not finish within 50 ms")
    );
    assert_eq!(
        saw.recv_timeout(PROMPTLY).unwrap(),
        (true, false),
        "the handler saw its token, and its report after that was dropped"
    );
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Stop);
    assert_eq!(progress_texts(&events), ["waiting for my token"]);
    // The agent goes on.
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "echo: again");
}

#[test]
fn the_chats_stop_sets_the_calls_token() {
    let mock = MockBackend::with_script([call("wait")]);
    let agent = Arc::new(agent_on(&mock));
    let (seen, saw) = mpsc::channel();
    agent.register_tool(waiter("wait", seen));
    let stopper = Arc::clone(&agent);
    let options = ChatOptions::new().on_event(move |e| {
        if matches!(e.kind, EventKind::ToolCallProgress { .. }) {
            stopper.stop();
        }
    });
    let response = agent.chat("go", options).wait().unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(saw.recv_timeout(PROMPTLY).unwrap(), (true, false));
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "echo: again");
}

#[test]
fn a_token_is_per_call_and_a_finished_calls_context_reports_nothing() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("keep", json!({"n": 1})),
        MockReply::tool_call("keep", json!({"n": 2})),
        MockReply::text("done"),
    ]);
    let agent = agent_on(&mock);
    let kept: Arc<Mutex<Vec<ToolContext>>> = Arc::default();
    let slot = kept.clone();
    agent.register_tool(
        Tool::with_context("keep", "", json!({"type": "object"}), move |_, ctx| {
            slot.lock().unwrap().push(ctx.clone());
            Ok(json!(ctx.call_id()))
        })
        .unwrap(),
    );
    let (events, options) = recorder();
    agent.chat("go", options).wait().unwrap();
    let kept = kept.lock().unwrap();
    let ids: Vec<&str> = kept.iter().map(|c| c.call_id()).collect();
    assert_eq!(ids, ["call_1", "call_2"]);
    for ctx in kept.iter() {
        assert!(ctx.is_finished());
        assert!(
            !ctx.is_cancelled(),
            "a call that ended in time is not cancelled"
        );
        assert!(!ctx.update(json!("stale")));
        assert!(!ctx.progress("stale"));
    }
    let count = events.lock().unwrap().len();
    assert!(events
        .lock()
        .unwrap()
        .iter()
        .all(|e| !matches!(e.kind, EventKind::ToolCallUpdate { .. })));
    // A later chat shows nothing of them either.
    let (later, options) = recorder();
    agent.chat("more", options).wait().unwrap();
    assert!(later
        .lock()
        .unwrap()
        .iter()
        .all(|e| !matches!(e.kind, EventKind::ToolCallUpdate { .. })));
    assert_eq!(events.lock().unwrap().len(), count);
}

#[test]
fn a_thread_the_handler_left_running_cannot_report_after_the_finish() {
    let mock = MockBackend::with_script([call("leave"), MockReply::text("done")]);
    let agent = agent_on(&mock);
    let (go, wait_for_go) = mpsc::channel::<()>();
    let (reported, taken) = mpsc::channel::<bool>();
    let wait_for_go = Arc::new(Mutex::new(wait_for_go));
    let reported = Mutex::new(reported);
    agent.register_tool(
        Tool::with_context("leave", "", json!({"type": "object"}), move |_, ctx| {
            let (ctx, go, reported) = (
                ctx.clone(),
                wait_for_go.clone(),
                reported.lock().unwrap().clone(),
            );
            std::thread::spawn(move || {
                let _ = go.lock().unwrap().recv_timeout(PROMPTLY);
                let _ = reported.send(ctx.update(json!("from the thread")));
            });
            Ok(json!("left"))
        })
        .unwrap(),
    );
    let (events, options) = recorder();
    agent.chat("go", options).wait().unwrap();
    go.send(()).unwrap();
    assert!(!taken.recv_timeout(PROMPTLY).unwrap());
    assert!(events
        .lock()
        .unwrap()
        .iter()
        .all(|e| !matches!(e.kind, EventKind::ToolCallUpdate { .. })));
}

#[test]
fn a_tool_called_outside_a_chat_has_a_detached_context() {
    let tool = reporter("solo", 0);
    assert_eq!(tool.call(json!({})), Ok(json!("")));
    let token = zoo_core::CancelToken::new();
    token.cancel();
    let ctx = ToolContext::detached("mine", "solo", token);
    assert!(ctx.is_cancelled());
    assert!(!ctx.progress("nowhere"));
    assert_eq!(tool.call_with(json!({}), &ctx), Ok(json!("mine")));
}
