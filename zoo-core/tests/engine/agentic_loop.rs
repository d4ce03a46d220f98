//! TA-001 … TA-010: the agentic loop, through the agent.

use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use zoo_core::{ChatOptions, EventKind, MockBackend, MockReply, Role, StopReason, Tool};

use super::{agent_on, weather_tool};

#[test]
fn ta_001_chat_returns_a_handle_immediately() {
    let _timing = super::timing_lock();
    let mock = MockBackend::with_script([MockReply::text("slow reply with several words")]);
    let agent = agent_on(&mock);
    // The reply cannot finish until the test says so: its first token waits
    // for `release` (dropped below; the 10 s limit only ends a broken test).
    let (release, released) = mpsc::channel::<()>();
    let started = Instant::now();
    let handle = agent.chat(
        "hello",
        ChatOptions::new().on_token(move |_| {
            let _ = released.recv_timeout(Duration::from_secs(10));
        }),
    );
    // A chat() that waited for its reply would take the 10 s of the gate;
    // queueing takes microseconds, and a loaded machine stays far below.
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "chat() blocked for {:?}",
        started.elapsed()
    );
    assert!(!handle.is_finished());
    assert!(handle.poll().is_none());
    drop(release);
    assert_eq!(handle.wait().unwrap().text, "slow reply with several words");
    assert!(handle.is_finished());
}

#[test]
fn ta_002_awaited_handle_resolves_with_content() {
    let mock = MockBackend::with_script([MockReply::text("Hello there!")]);
    let agent = agent_on(&mock);
    let response = agent.chat("hi", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Hello there!");
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.metrics.iterations, 1);
    assert!(response.usage.prompt_tokens > 0 && response.usage.completion_tokens == 2);
    assert_eq!(
        response.usage.total_tokens,
        response.usage.prompt_tokens + 2
    );
    // The same handle works as a Future.
    let response = pollster_block_on(agent.chat("again", ChatOptions::new())).unwrap();
    assert_eq!(response.text, "echo: again");
}

/// A minimal executor, so the test needs no async runtime.
fn pollster_block_on<F: std::future::Future>(future: F) -> F::Output {
    use std::sync::Arc;
    use std::task::{Context, Poll, Wake};
    struct Unpark(std::thread::Thread);
    impl Wake for Unpark {
        fn wake(self: Arc<Self>) {
            self.0.unpark();
        }
    }
    let waker = Arc::new(Unpark(std::thread::current())).into();
    let mut cx = Context::from_waker(&waker);
    let mut future = std::pin::pin!(future);
    loop {
        if let Poll::Ready(v) = future.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::park_timeout(Duration::from_millis(100));
    }
}

#[test]
fn ta_003_tool_call_json_is_detected_and_parsed() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Paris", "unit": "celsius"})),
        MockReply::text("It is 21 degrees."),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let response = agent
        .chat("Weather in Paris?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(response.tool_calls.len(), 1);
    let call = &response.tool_calls[0];
    assert_eq!(call.name, "get_weather");
    assert_eq!(call.arguments, json!({"city": "Paris", "unit": "celsius"}));
    assert!(call.error.is_none());
}

#[test]
fn ta_004_reply_without_tool_call_returned_directly() {
    let mock = MockBackend::with_script([MockReply::text("Just prose {not json}.")]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let response = agent.chat("hi", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Just prose {not json}.");
    assert!(response.tool_calls.is_empty());
    assert_eq!(mock.calls().len(), 1, "one inference, no loop");
}

#[test]
fn ta_005_detected_call_invokes_the_registered_handler() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let sink = seen.clone();
    let mock = MockBackend::with_script([
        MockReply::tool_call("record", json!({"value": 7})),
        MockReply::text("recorded"),
    ]);
    let agent = agent_on(&mock);
    agent
        .register_fn(
            "record",
            "Records a value",
            &[("value", "the value")],
            move |value: i64| {
                sink.lock()
                    .unwrap()
                    .push((value, std::thread::current().name().map(String::from)));
                "ok"
            },
        )
        .unwrap();
    agent.chat("record 7", ChatOptions::new()).wait().unwrap();
    let seen = seen.lock().unwrap();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].0, 7);
    // Sequential handlers run on the agent's first tool thread, so that a
    // stop never waits for one that blocks.
    assert_eq!(
        seen[0].1.as_deref(),
        Some("zoo-tools-0"),
        "handlers run on the agent's tool thread"
    );
}

#[test]
fn ta_006_result_injected_and_inference_continues() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Oslo"})),
        MockReply::text("Oslo is at 21."),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let response = agent
        .chat("Weather in Oslo?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(response.text, "Oslo is at 21.");
    assert_eq!(response.metrics.iterations, 2);
    let second = &mock.calls()[1].messages;
    let tool_msg = second
        .iter()
        .find(|m| m.role == Role::Tool)
        .expect("result injected");
    assert_eq!(tool_msg.name.as_deref(), Some("get_weather"));
    assert_eq!(tool_msg.content, r#"{"city":"Oslo","temperature":21}"#);
    let assistant = second.iter().find(|m| m.role == Role::Assistant).unwrap();
    assert_eq!(
        assistant.tool_calls[0].id,
        *tool_msg.tool_call_id.as_ref().unwrap()
    );
    let history = agent.history();
    assert_eq!(
        history.iter().map(|m| m.role).collect::<Vec<_>>(),
        [Role::User, Role::Assistant, Role::Tool, Role::Assistant]
    );
}

#[test]
fn ta_007_several_tools_execute_in_order() {
    let order = Arc::new(Mutex::new(Vec::new()));
    let mock = MockBackend::with_script([
        MockReply::tool_calls(&[("first", json!({})), ("second", json!({}))]),
        MockReply::tool_call("third", json!({})),
        MockReply::text("all done"),
    ]);
    let agent = agent_on(&mock);
    for name in ["first", "second", "third"] {
        let order = order.clone();
        agent.register_tool(
            Tool::new(name, name, json!({"type": "object"}), move |_| {
                order.lock().unwrap().push(name);
                Ok(json!(name))
            })
            .unwrap(),
        );
    }
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(*order.lock().unwrap(), ["first", "second", "third"]);
    assert_eq!(
        response
            .tool_calls
            .iter()
            .map(|c| c.name.as_str())
            .collect::<Vec<_>>(),
        ["first", "second", "third"]
    );
    let second_call = &mock.calls()[1].messages;
    let results: Vec<&str> = second_call
        .iter()
        .filter(|m| m.role == Role::Tool)
        .map(|m| m.content.as_str())
        .collect();
    assert_eq!(
        results,
        ["first", "second"],
        "both results injected before the next inference"
    );
    assert_eq!(response.text, "all done");
}

#[test]
fn ta_008_stop_aborts_inference_within_100ms() {
    let _timing = super::timing_lock();
    let long = (0..500)
        .map(|i| format!("w{i}"))
        .collect::<Vec<_>>()
        .join(" ");
    let mock = MockBackend::with_script([MockReply::text(long)]);
    mock.set_piece_delay(Duration::from_millis(20));
    let agent = agent_on(&mock);
    let tokens = Arc::new(Mutex::new(0));
    let counter = tokens.clone();
    let handle = agent.chat(
        "talk",
        ChatOptions::new().on_token(move |_| *counter.lock().unwrap() += 1),
    );
    while *tokens.lock().unwrap() < 3 {
        std::thread::sleep(Duration::from_millis(1));
    }
    let stopped = Instant::now();
    agent.stop();
    let response = handle.wait().unwrap();
    let latency = stopped.elapsed();
    assert!(
        latency < Duration::from_millis(100),
        "stop took {latency:?}"
    );
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert!(
        response.text.starts_with("w0 w1 w2"),
        "partial text kept: {}",
        response.text
    );
    assert!(response.text.len() < 200);
}

#[test]
fn ta_009_request_after_cancellation_processes_normally() {
    let mock = MockBackend::with_script([
        MockReply::text("a b c d e f g h i j k l m n o p"),
        MockReply::text("fresh answer"),
    ]);
    let agent = agent_on(&mock);
    // The first token reports that the chat runs, then holds the reply
    // until the test has cancelled it, so the cancel lands mid-reply.
    let (running, first_token) = mpsc::channel();
    let (release, released) = mpsc::channel::<()>();
    let handle = agent.chat(
        "first",
        ChatOptions::new().on_token(move |_| {
            let _ = running.send(());
            let _ = released.recv_timeout(Duration::from_secs(10));
        }),
    );
    first_token
        .recv_timeout(Duration::from_secs(30))
        .expect("the first chat streams");
    handle.cancel();
    drop(release);
    let cancelled = handle.wait().unwrap();
    assert_eq!(cancelled.stop_reason, StopReason::Cancelled);
    assert_eq!(cancelled.text, "a", "the reply stopped at the cancel");
    let response = agent.chat("second", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(response.text, "fresh answer");
    assert_eq!(agent.state(), zoo_core::AgentState::Idle);
}

#[test]
fn ta_010_streaming_callback_invoked_for_each_token() {
    let mock = MockBackend::with_script([MockReply::text("one two three four")]);
    let agent = agent_on(&mock);
    let pieces = Arc::new(Mutex::new(Vec::new()));
    let sink = pieces.clone();
    let events = Arc::new(Mutex::new(Vec::new()));
    let event_sink = events.clone();
    let response = agent
        .chat(
            "count",
            ChatOptions::new()
                .on_token(move |t| sink.lock().unwrap().push(t.to_string()))
                .on_event(move |e| event_sink.lock().unwrap().push(e.clone())),
        )
        .wait()
        .unwrap();
    let pieces = pieces.lock().unwrap();
    assert_eq!(*pieces, ["one", " two", " three", " four"]);
    assert_eq!(pieces.concat(), response.text);
    let events = events.lock().unwrap();
    assert_eq!(
        events[0].kind,
        EventKind::ChatStarted {
            message: Some("count".into())
        }
    );
    assert_eq!(events[1].kind, EventKind::TurnStarted { turn: 1 });
}

#[test]
fn tool_call_markup_is_not_streamed() {
    let mock = MockBackend::with_script([
        MockReply::text("Let me check. <tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Rome\"}}</tool_call>"),
        MockReply::text("Sunny in Rome."),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let streamed = Arc::new(Mutex::new(String::new()));
    let sink = streamed.clone();
    let response = agent
        .chat(
            "Rome?",
            ChatOptions::new().on_token(move |t| sink.lock().unwrap().push_str(t)),
        )
        .wait()
        .unwrap();
    assert_eq!(*streamed.lock().unwrap(), "Let me check. Sunny in Rome.");
    assert_eq!(response.text, "Sunny in Rome.");
}

#[test]
fn tool_limit_ends_the_turn_and_keeps_history_valid() {
    // Different arguments each time: a word-for-word repeat is refused
    // before the limit (see the scenario repeated_call_is_not_run_again).
    let mock = MockBackend::with_script(
        (0..5).map(|n| MockReply::tool_call("get_weather", json!({"city": format!("X{n}")}))),
    );
    let config = zoo_core::Config::default().max_tool_iterations(2);
    let agent = zoo_core::Agent::with_backend(mock.clone(), config).unwrap();
    agent.register_tool(weather_tool());
    let response = agent.chat("loop", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.stop_reason, StopReason::ToolLimit);
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(mock.calls().len(), 3);
    // Every call in the history has its result, so the next chat is accepted.
    let next = agent.chat("next", ChatOptions::new()).wait().unwrap();
    assert_eq!(next.text, "echo: next");
    assert_eq!(
        next.tool_calls.len(),
        2,
        "the two remaining scripted calls ran"
    );
}

#[test]
fn required_tool_choice_is_passed_until_a_call_succeeds() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({})),
        MockReply::tool_call("get_weather", json!({"city": "Lima"})),
        MockReply::text("done"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    let options = ChatOptions::new().tool_choice(zoo_core::ToolChoice::Required);
    agent.chat("Lima?", options).wait().unwrap();
    let choices: Vec<_> = mock.calls().iter().map(|c| c.tool_choice.clone()).collect();
    assert_eq!(
        choices,
        [
            zoo_core::ToolChoice::Required,
            zoo_core::ToolChoice::Required,
            zoo_core::ToolChoice::Auto
        ]
    );
    let none = agent
        .chat(
            "no tools",
            ChatOptions::new().tool_choice(zoo_core::ToolChoice::None),
        )
        .wait()
        .unwrap();
    assert_eq!(none.text, "echo: no tools");
    assert!(mock.calls().last().unwrap().tools.is_empty());
}

#[test]
fn backend_error_fails_the_chat_and_undoes_the_turn() {
    let mock = MockBackend::with_script([
        MockReply::Fail(zoo_core::Error::InferenceFailed("boom".into())),
        MockReply::text("recovered"),
    ]);
    let agent = agent_on(&mock);
    let e = agent.chat("first", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(e.code(), zoo_core::ErrorCode::InferenceFailed);
    assert!(
        agent.history().is_empty(),
        "the failed turn left nothing behind"
    );
    let ok = agent.chat("second", ChatOptions::new()).wait().unwrap();
    assert_eq!(ok.text, "recovered");
}

#[test]
fn panicking_callback_is_an_internal_error_not_a_dead_agent() {
    let mock = MockBackend::with_script([MockReply::text("a b"), MockReply::text("fine")]);
    let agent = agent_on(&mock);
    let e = agent
        .chat("x", ChatOptions::new().on_token(|_| panic!("callback bug")))
        .wait()
        .unwrap_err();
    assert_eq!(e.code(), zoo_core::ErrorCode::Internal);
    assert!(e.to_string().contains("callback bug"));
    assert_eq!(
        agent.chat("y", ChatOptions::new()).wait().unwrap().text,
        "fine"
    );
    assert_eq!(agent.history().len(), 2);
}

/// A reasoning model's thinking streams on its own channel and never
/// reaches the text, whether a piece boundary falls inside a tag or not.
#[test]
fn thinking_streams_apart_from_the_text() {
    let mock = MockBackend::with_script([MockReply::text(
        "<think>Two plus two is four.</think>\n\nThe answer is 4.",
    )]);
    let agent = agent_on(&mock);
    let (text, thinking) = (
        Arc::new(Mutex::new(String::new())),
        Arc::new(Mutex::new(String::new())),
    );
    let (t, k) = (text.clone(), thinking.clone());
    let response = agent
        .chat(
            "2+2?",
            ChatOptions::new()
                .on_token(move |piece| t.lock().unwrap().push_str(piece))
                .on_thinking(move |piece| k.lock().unwrap().push_str(piece)),
        )
        .wait()
        .unwrap();
    assert_eq!(response.text, "The answer is 4.");
    assert_eq!(response.thinking.as_deref(), Some("Two plus two is four."));
    assert_eq!(text.lock().unwrap().trim(), "The answer is 4.");
    assert_eq!(thinking.lock().unwrap().trim(), "Two plus two is four.");
    let history = agent.history();
    let last = history.last().unwrap();
    assert_eq!(last.content, "The answer is 4.");
    assert_eq!(last.thinking.as_deref(), Some("Two plus two is four."));
    // A reply without reasoning has none.
    let plain = agent.chat("again", ChatOptions::new()).wait().unwrap();
    assert_eq!(plain.thinking, None);
}
