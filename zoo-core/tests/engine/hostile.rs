//! Hostile and concurrent cases of the reliability issue: a cancel at every
//! step of the loop, a stop while a handler blocks, huge limits, restored
//! histories that could break the next chat, callbacks that fail, and a
//! mock that must not grow without bound. Each asserts the exact error and
//! that the agent works afterwards.

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use zoo_core::backend::{GenerateRequest, Generation};
use zoo_core::tools::ToolCallFormat;
use zoo_core::{
    Agent, Backend, CancelToken, ChatOptions, Config, ErrorCode, EventKind, Message, MockBackend,
    MockReply, Result, Role, StopReason, Tool, ToolCall,
};

use super::{agent_on, weather_tool};

/// Generous bound for "promptly" on a loaded 2-core machine; the promise
/// is 100 ms, and a failure here means the engine waited for the handler.
const PROMPTLY: Duration = Duration::from_secs(5);

/// Every tool call in `history` has exactly one result after it, ids are
/// unique, and the conversation does not end on an unanswered user message.
fn assert_consistent(history: &[Message]) {
    let mut ids = HashSet::new();
    let mut pending: Vec<String> = Vec::new();
    for message in history {
        match message.role {
            Role::Assistant => {
                assert!(
                    pending.is_empty(),
                    "calls {pending:?} unanswered in {history:#?}"
                );
                for call in &message.tool_calls {
                    assert!(ids.insert(call.id.clone()), "id {} reused", call.id);
                    pending.push(call.id.clone());
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.clone().unwrap();
                let at = pending.iter().position(|p| *p == id);
                assert!(at.is_some(), "result for {id} answers no pending call");
                pending.remove(at.unwrap());
            }
            Role::User => assert!(pending.is_empty(), "user message before results"),
            Role::System => {}
        }
    }
    assert!(
        pending.is_empty(),
        "calls {pending:?} unanswered at the end"
    );
    let last = history.iter().rev().find(|m| m.role != Role::System);
    assert!(
        !matches!(last, Some(m) if m.role == Role::User),
        "history ends on a user message: {history:#?}"
    );
}

/// A backend that sets a cancel token at its `trigger`-th step (a token
/// count, the start of a reply, or a streamed piece), counting from 1.
struct CancelAtStep {
    inner: MockBackend,
    steps: Arc<AtomicUsize>,
    trigger: Arc<AtomicUsize>,
    token: Arc<Mutex<Option<CancelToken>>>,
}

impl CancelAtStep {
    fn step(&self) {
        let n = self.steps.fetch_add(1, Ordering::SeqCst) + 1;
        if n == self.trigger.load(Ordering::SeqCst) {
            if let Some(token) = self.token.lock().unwrap().as_ref() {
                token.cancel();
            }
        }
    }
}

impl Backend for CancelAtStep {
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        self.step();
        let mut inner = self.inner.clone();
        let steps = Arc::clone(&self.steps);
        let trigger = Arc::clone(&self.trigger);
        let token = Arc::clone(&self.token);
        inner.generate(
            request,
            &mut |piece| {
                let n = steps.fetch_add(1, Ordering::SeqCst) + 1;
                if n == trigger.load(Ordering::SeqCst) {
                    if let Some(token) = token.lock().unwrap().as_ref() {
                        token.cancel();
                    }
                }
                on_piece(piece)
            },
            cancel,
        )
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32> {
        self.step();
        self.inner.count_tokens(message)
    }

    fn context_size(&self) -> u32 {
        self.inner.context_size()
    }

    fn tool_call_format(&self) -> ToolCallFormat {
        self.inner.tool_call_format()
    }
}

/// One run of the every-step test: a chat whose cancel lands at backend
/// step `trigger` or at event `event_trigger` (0: never). Returns whether
/// the cancel fired.
fn cancel_once(trigger: usize, event_trigger: usize) -> bool {
    let mock = MockBackend::new();
    let backend = CancelAtStep {
        inner: mock.clone(),
        steps: Arc::default(),
        trigger: Arc::default(),
        token: Arc::default(),
    };
    let (steps, trigger_at, token) = (
        Arc::clone(&backend.steps),
        Arc::clone(&backend.trigger),
        Arc::clone(&backend.token),
    );
    let agent = Agent::with_backend(backend, Config::default()).unwrap();
    let handler_token = Arc::clone(&token);
    let handler_steps = Arc::clone(&steps);
    let handler_trigger = Arc::clone(&trigger_at);
    agent.register_tool(
        Tool::new(
            "get_weather",
            "Current weather for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            move |args| {
                // The handler is a step too: a cancel while it runs.
                let n = handler_steps.fetch_add(1, Ordering::SeqCst) + 1;
                if n == handler_trigger.load(Ordering::SeqCst) {
                    if let Some(t) = handler_token.lock().unwrap().as_ref() {
                        t.cancel();
                    }
                }
                Ok(json!({"city": args["city"], "temperature": 21}))
            },
        )
        .unwrap(),
    );

    // A first, complete exchange, so that an undo has something to keep.
    mock.push_replies([MockReply::text("Hello there.")]);
    agent.chat("hi", ChatOptions::new()).wait().unwrap();
    let before = agent.history();

    // The chat under test: two calls in one reply, then an answer.
    mock.push_replies([
        MockReply::tool_calls(&[
            ("get_weather", json!({"city": "Paris"})),
            ("get_weather", json!({"city": "Rome"})),
        ]),
        MockReply::text("Paris and Rome are both 21 degrees today."),
    ]);
    let cancel = CancelToken::new();
    *token.lock().unwrap() = Some(cancel.clone());
    steps.store(0, Ordering::SeqCst);
    trigger_at.store(trigger, Ordering::SeqCst);
    let events = Arc::new(AtomicUsize::new(0));
    let event_cancel = cancel.clone();
    let seen = Arc::clone(&events);
    let options = ChatOptions::new()
        .cancel_token(cancel.clone())
        .on_event(move |_| {
            if seen.fetch_add(1, Ordering::SeqCst) + 1 == event_trigger {
                event_cancel.cancel();
            }
        });
    let response = agent.chat("weather in Paris and Rome?", options).wait();
    let response = response.expect("a cancel is never an error");
    let fired = cancel.is_cancelled();
    let history = agent.history();
    assert_consistent(&history);
    if fired && response.stop_reason == StopReason::Stop {
        // The cancel landed after the final reply was made (while it was
        // counted for the history): the turn is complete.
        assert_eq!(response.text, "Paris and Rome are both 21 degrees today.");
        assert_eq!(history.last().unwrap().content, response.text);
    } else if fired {
        assert_eq!(response.stop_reason, StopReason::Cancelled);
        assert!(history.starts_with(&before), "the earlier exchange is kept");
        if !history[before.len()..]
            .iter()
            .any(|m| m.role == Role::Assistant)
        {
            assert_eq!(history, before, "a turn with no reply is undone entirely");
        }
    } else {
        assert_eq!(response.stop_reason, StopReason::Stop);
    }

    // Whatever happened, the agent takes the next message.
    *token.lock().unwrap() = None;
    mock.clear_script();
    mock.push_replies([MockReply::text("Still here.")]);
    let next = agent
        .chat("are you there?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(next.stop_reason, StopReason::Stop);
    assert_eq!(next.text, "Still here.");
    assert_consistent(&agent.history());
    fired
}

#[test]
fn a_cancel_at_every_backend_step_leaves_the_agent_usable() {
    // Count upwards until a trigger past the last step no longer fires.
    let mut trigger = 1;
    while cancel_once(trigger, 0) {
        trigger += 1;
        assert!(trigger < 200, "the chat should have fewer steps than this");
    }
    assert!(
        trigger > 10,
        "only {trigger} steps: the test did not reach the tools"
    );
}

#[test]
fn a_cancel_at_every_event_leaves_the_agent_usable() {
    let mut trigger = 1;
    while cancel_once(0, trigger) {
        trigger += 1;
        assert!(trigger < 100);
    }
    assert!(trigger > 4, "only {trigger} events");
}

#[test]
fn a_stop_in_a_loop_beside_a_chatting_thread_never_breaks_the_history() {
    // The reliability issue's case: one thread chats, another stops in a
    // loop; before the fix most chats then failed with
    // INVALID_MESSAGE_SEQUENCE.
    let mock = MockBackend::new();
    mock.set_piece_delay(Duration::from_micros(200));
    let agent = Arc::new(agent_on(&mock));
    agent.register_tool(weather_tool());
    let done = Arc::new(AtomicBool::new(false));
    let stopper = {
        let (agent, done) = (Arc::clone(&agent), Arc::clone(&done));
        std::thread::spawn(move || {
            while !done.load(Ordering::Relaxed) {
                agent.stop();
                std::thread::yield_now();
            }
        })
    };
    for i in 0..200 {
        mock.push_replies([
            MockReply::tool_call("get_weather", json!({"city": "Oslo"})),
            MockReply::text("It is cold in Oslo today, as it often is."),
        ]);
        let r = agent
            .chat(format!("question {i}"), ChatOptions::new())
            .wait();
        let r = r.unwrap_or_else(|e| panic!("chat {i} failed: {e}"));
        assert!(matches!(
            r.stop_reason,
            StopReason::Stop | StopReason::Cancelled
        ));
        // Replies a cancel left unused would answer the next question.
        mock.clear_script();
    }
    done.store(true, Ordering::Relaxed);
    stopper.join().unwrap();
    assert_consistent(&agent.history());
    let r = agent.chat("last", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.text, "echo: last");
}

/// A tool that blocks until the test releases it, reporting when it starts
/// and how many of its calls overlap.
struct Gate {
    started: Receiver<()>,
    release: Sender<()>,
    finished: Arc<AtomicUsize>,
    overlapped: Arc<AtomicBool>,
}

fn gated_tool(name: &str) -> (Tool, Gate) {
    let (started_tx, started) = channel();
    let (release, release_rx) = channel::<()>();
    let release_rx = Mutex::new(release_rx);
    let started_tx = Mutex::new(started_tx);
    let finished = Arc::new(AtomicUsize::new(0));
    let overlapped = Arc::new(AtomicBool::new(false));
    let running = Arc::new(AtomicUsize::new(0));
    let (done, overlap) = (Arc::clone(&finished), Arc::clone(&overlapped));
    let tool = Tool::new(
        name,
        "Waits for the test",
        json!({"type": "object", "properties": {}}),
        move |_| {
            if running.fetch_add(1, Ordering::SeqCst) > 0 {
                overlap.store(true, Ordering::SeqCst);
            }
            started_tx.lock().unwrap().send(()).unwrap();
            release_rx.lock().unwrap().recv().unwrap();
            running.fetch_sub(1, Ordering::SeqCst);
            done.fetch_add(1, Ordering::SeqCst);
            Ok(json!("released"))
        },
    )
    .unwrap();
    (
        tool,
        Gate {
            started,
            release,
            finished,
            overlapped,
        },
    )
}

#[test]
fn a_stop_during_a_blocked_tool_ends_the_chat_without_waiting_for_it() {
    let mock = MockBackend::with_script([MockReply::tool_call("wait", json!({}))]);
    let agent = agent_on(&mock);
    let (tool, gate) = gated_tool("wait");
    agent.register_tool(tool);
    let handle = agent.chat("wait for it", ChatOptions::new());
    gate.started
        .recv_timeout(PROMPTLY)
        .expect("the handler starts");
    agent.stop();
    let r = handle
        .wait_timeout(PROMPTLY)
        .expect("the chat ends while the handler still blocks")
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Cancelled);
    assert_eq!(
        gate.finished.load(Ordering::SeqCst),
        0,
        "the handler still runs"
    );
    let record = &r.tool_calls[0];
    assert!(record.result.is_none());
    assert_eq!(
        record.error.as_deref(),
        Some("the chat was stopped while `wait` was running; its result was discarded")
    );
    let history = agent.history();
    assert_consistent(&history);
    assert!(history.last().unwrap().content.contains("was stopped"));

    // The next call of a tool queues behind the abandoned one: handlers
    // never overlap. Releasing the first lets the second start.
    mock.push_replies([
        MockReply::tool_call("wait", json!({})),
        MockReply::text("ok"),
    ]);
    let second = agent.chat("again", ChatOptions::new());
    gate.release.send(()).unwrap();
    gate.started
        .recv_timeout(PROMPTLY)
        .expect("the second call starts");
    gate.release.send(()).unwrap();
    let r = second.wait_timeout(PROMPTLY).expect("finishes").unwrap();
    assert_eq!(r.stop_reason, StopReason::Stop);
    assert_eq!(r.tool_calls[0].result, Some(json!("released")));
    assert_eq!(gate.finished.load(Ordering::SeqCst), 2);
    assert!(
        !gate.overlapped.load(Ordering::SeqCst),
        "handlers overlapped"
    );
}

#[test]
fn dropping_the_agent_waits_for_a_handler_abandoned_by_a_stop() {
    let mock = MockBackend::with_script([MockReply::tool_call("wait", json!({}))]);
    let agent = agent_on(&mock);
    let (tool, gate) = gated_tool("wait");
    agent.register_tool(tool);
    let handle = agent.chat("wait for it", ChatOptions::new());
    gate.started.recv_timeout(PROMPTLY).unwrap();
    agent.stop();
    handle.wait_timeout(PROMPTLY).expect("ends").unwrap();
    let (dropped_tx, dropped) = channel();
    let finished = Arc::clone(&gate.finished);
    let dropper = std::thread::spawn(move || {
        drop(agent);
        // No handler may run once the agent is gone.
        dropped_tx.send(finished.load(Ordering::SeqCst)).unwrap();
    });
    // The drop must wait for the handler. (A machine slower than this wait
    // can only let a broken drop pass, never fail a correct one.)
    assert!(dropped.recv_timeout(Duration::from_millis(300)).is_err());
    gate.release.send(()).unwrap();
    assert_eq!(dropped.recv_timeout(PROMPTLY * 2).unwrap(), 1);
    dropper.join().unwrap();
}

#[test]
fn a_stop_while_a_call_queues_behind_an_abandoned_handler_is_prompt() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("wait", json!({})),
        MockReply::tool_call("wait", json!({})),
    ]);
    let agent = agent_on(&mock);
    let (tool, gate) = gated_tool("wait");
    agent.register_tool(tool);
    let first = agent.chat("one", ChatOptions::new());
    gate.started.recv_timeout(PROMPTLY).unwrap();
    agent.stop();
    first.wait_timeout(PROMPTLY).expect("ends").unwrap();
    let (event_tx, event_rx) = channel();
    let event_tx = Mutex::new(event_tx);
    let second = agent.chat(
        "two",
        ChatOptions::new().on_event(move |e| {
            if matches!(e.kind, EventKind::ToolCallStarted { .. }) {
                let _ = event_tx.lock().unwrap().send(());
            }
        }),
    );
    event_rx
        .recv_timeout(PROMPTLY)
        .expect("the second call is waiting");
    agent.stop();
    let r = second.wait_timeout(PROMPTLY).expect("ends").unwrap();
    assert_eq!(r.stop_reason, StopReason::Cancelled);
    assert_consistent(&agent.history());
    gate.release.send(()).unwrap();
    // The second call never ran: it was given up while it queued.
    drop(agent);
    assert_eq!(gate.finished.load(Ordering::SeqCst), 1);
}

#[test]
fn a_huge_max_tokens_means_the_room_left() {
    for with_tool in [false, true] {
        let mock = MockBackend::with_script([MockReply::text("fine")]);
        let agent = agent_on(&mock);
        if with_tool {
            agent.register_tool(weather_tool());
        }
        let r = agent
            .chat("hi", ChatOptions::new().max_tokens(u32::MAX))
            .wait()
            .unwrap_or_else(|e| panic!("with_tool={with_tool}: {e}"));
        assert_eq!(r.text, "fine");
        let config = Config {
            max_tokens: Some(u32::MAX - 1),
            ..Config::default()
        };
        let agent = Agent::with_backend(MockBackend::new(), config).unwrap();
        if with_tool {
            agent.register_tool(weather_tool());
        }
        let r = agent.chat("hello", ChatOptions::new()).wait().unwrap();
        assert_eq!(r.text, "echo: hello");
    }
}

#[test]
fn a_zero_max_tokens_per_chat_keeps_the_agents_limit() {
    let config = Config {
        max_tokens: Some(2),
        ..Config::default()
    };
    let agent = Agent::with_backend(MockBackend::new(), config).unwrap();
    let r = agent
        .chat("one two three four", ChatOptions::new().max_tokens(0))
        .wait()
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Length);
    assert_eq!(r.usage.completion_tokens, 2);
}

#[test]
fn call_ids_stay_unique_after_a_restored_history() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Paris"})),
        MockReply::text("21 degrees."),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let call = ToolCall {
        id: "call_7".into(),
        name: "get_weather".into(),
        arguments: json!({"city": "Rome"}),
    };
    agent
        .set_history(vec![
            Message::user("Rome?"),
            Message::assistant_with_tool_calls("", vec![call]),
            Message::tool("call_7", "get_weather", "{\"temperature\": 20}"),
            Message::assistant("20 degrees."),
            Message::user("And call_1?"),
            Message::assistant_with_tool_calls(
                "",
                vec![ToolCall {
                    id: "call_1".into(),
                    name: "get_weather".into(),
                    arguments: json!({"city": "Oslo"}),
                }],
            ),
            Message::tool("call_1", "get_weather", "{\"temperature\": 2}"),
        ])
        .unwrap();
    let r = agent.chat("Paris?", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.tool_calls.len(), 1);
    assert_eq!(r.tool_calls[0].id, "call_8");
    assert_consistent(&agent.history());
}

#[test]
fn a_restored_history_that_cannot_take_a_new_message_is_rejected() {
    let agent = agent_on(&MockBackend::new());
    // An unanswered user message at the end is taken: the next chat adds
    // its message to it (and continue_chat would answer it alone).
    agent
        .set_history(vec![
            Message::user("hi"),
            Message::assistant("hello"),
            Message::user("unanswered"),
        ])
        .unwrap();
    let r = agent.chat("and this", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.text, "echo: unanswered\n\nand this");
    assert_eq!(agent.history().len(), 4);
    agent.clear_history().unwrap();
    let call = ToolCall {
        id: "call_1".into(),
        name: "get_weather".into(),
        arguments: json!({}),
    };
    let error = agent
        .set_history(vec![
            Message::user("hi"),
            Message::assistant_with_tool_calls("", vec![call]),
        ])
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid message sequence: the history ends with tool call `call_1`, which has no \
         result; add its tool message or leave the call out"
    );
    // The old history stays and the agent answers.
    assert!(agent.history().is_empty());
    let r = agent
        .chat("still fine?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(r.text, "echo: still fine?");
}

#[test]
fn an_aborted_chat_fails_and_leaves_the_history_as_it_was() {
    // A front door whose streaming callback failed aborts the chat: the
    // partial turn must not stay behind (Python's on_token that raises).
    let mock = MockBackend::with_script([
        MockReply::text("first answer"),
        MockReply::text("a long reply that the host gives up on"),
    ]);
    let agent = agent_on(&mock);
    agent.chat("one", ChatOptions::new()).wait().unwrap();
    let before = agent.history();
    let cancel = CancelToken::new();
    let abort = cancel.clone();
    let r = agent
        .chat(
            "two",
            ChatOptions::new()
                .cancel_token(cancel)
                .on_token(move |_| abort.abort("on_token raised ValueError: boom")),
        )
        .wait();
    let error = r.unwrap_err();
    assert_eq!(error.code(), ErrorCode::Cancelled);
    assert_eq!(
        error.to_string(),
        "cancelled: on_token raised ValueError: boom"
    );
    assert_eq!(agent.history(), before);
    let r = agent.chat("three", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.text, "echo: three");
}

#[test]
fn an_abort_during_a_tool_call_undoes_the_turn() {
    let mock = MockBackend::with_script([MockReply::tool_call("wait", json!({}))]);
    let agent = agent_on(&mock);
    let (tool, gate) = gated_tool("wait");
    agent.register_tool(tool);
    let handle = agent.chat("wait", ChatOptions::new());
    gate.started.recv_timeout(PROMPTLY).unwrap();
    handle.abort("on_event raised");
    let error = handle.wait_timeout(PROMPTLY).expect("ends").unwrap_err();
    assert_eq!(error.code(), ErrorCode::Cancelled);
    assert!(agent.history().is_empty());
    gate.release.send(()).unwrap();
}

#[test]
fn a_queued_chat_that_was_aborted_fails_without_running() {
    let mock = MockBackend::with_script([MockReply::tool_call("wait", json!({}))]);
    let agent = agent_on(&mock);
    let (tool, gate) = gated_tool("wait");
    agent.register_tool(tool);
    let first = agent.chat("wait", ChatOptions::new());
    gate.started.recv_timeout(PROMPTLY).unwrap();
    let queued = agent.chat("queued", ChatOptions::new());
    queued.abort("gave up");
    gate.release.send(()).unwrap();
    first.wait_timeout(PROMPTLY).unwrap().unwrap();
    let error = queued.wait_timeout(PROMPTLY).unwrap().unwrap_err();
    assert_eq!(error.to_string(), "cancelled: gave up");
}

#[test]
fn the_mock_keeps_a_bounded_record_of_its_calls() {
    let mock = MockBackend::new();
    let agent = agent_on(&mock);
    for i in 0..1_000 {
        agent
            .chat(format!("m{i}"), ChatOptions::new())
            .wait()
            .unwrap();
    }
    assert_eq!(mock.call_count(), 1_000);
    assert_eq!(
        mock.calls().len(),
        zoo_core::backend::mock::DEFAULT_RECORD_LIMIT
    );
    let last = mock.calls().pop().unwrap();
    assert_eq!(last.messages.last().unwrap().content, "m999");
    assert!(mock.threads().len() <= 1_000);
    mock.set_record_limit(0);
    agent.chat("unrecorded", ChatOptions::new()).wait().unwrap();
    assert!(mock.calls().is_empty());
    assert_eq!(mock.call_count(), 1_001);
}

#[test]
fn a_reply_cut_off_inside_a_call_keeps_only_its_prose() {
    // The token limit lands inside a call the model had begun: the call
    // cannot run, and its markup must reach neither the user nor the
    // history (the next turn would read it as the model's own words).
    let mock = MockBackend::with_script([MockReply::text(
        "Let me check. <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Pa",
    )]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let r = agent
        .chat("weather?", ChatOptions::new().max_tokens(6))
        .wait()
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Length);
    assert_eq!(r.text, "Let me check.");
    let history = agent.history();
    assert_eq!(history.last().unwrap().content, "Let me check.");
    assert_consistent(&history);
}
