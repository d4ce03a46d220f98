//! Sub-agents on the mock: the child's answer is the tool's result, the
//! child may call the tools it was given, the parent's stop reaches it, an
//! empty answer has a fallback, its steps are updates of the parent's call
//! and its usage joins the parent's, and bad specs are typed errors.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use zoo_core::{
    Agent, ChatOptions, Config, ErrorCode, EventKind, MockBackend, MockProvider, MockReply, Role,
    StopReason, SubAgent, SubAgentStep, SubAgentUpdate, Tool, Usage,
};

fn child(replies: Vec<MockReply>, delay_ms: u32) -> Config {
    Config::default()
        .system_prompt("You research.")
        .provider(MockProvider::new(replies).piece_delay_ms(delay_ms))
}

fn delegate(task: &str) -> MockReply {
    MockReply::tool_call("researcher", json!({"task": task}))
}

fn spec(config: Config, tools: Vec<String>) -> SubAgent {
    SubAgent {
        name: "researcher".into(),
        description: "Looks things up".into(),
        config,
        tools,
    }
}

#[test]
fn the_childs_answer_is_the_result_and_it_may_use_the_tools_it_was_given() {
    let parent = Agent::with_backend(
        MockBackend::with_script([delegate("weather in Oslo"), MockReply::text("Done.")]),
        Config::default(),
    )
    .unwrap();
    let runs = Arc::new(AtomicUsize::new(0));
    let counter = runs.clone();
    parent.register_tool(
        Tool::new("weather", "Weather", json!({"type": "object"}), move |_| {
            counter.fetch_add(1, Ordering::SeqCst);
            Ok(json!("cold"))
        })
        .unwrap(),
    );
    let replies = vec![
        MockReply::tool_call("weather", json!({})),
        MockReply::text("It is cold in Oslo."),
    ];
    parent
        .add_subagent(spec(child(replies, 0), vec!["weather".into()]))
        .unwrap();
    let response = parent.chat("Oslo?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Done.");
    let result = response.tool_calls[0].result.clone().unwrap();
    assert_eq!(result["text"], "It is cold in Oslo.");
    assert_eq!(result["details"]["stop_reason"], "stop");
    // The parent's model reads the answer alone.
    let history = parent.history();
    let tool_message = history.iter().find(|m| m.role == Role::Tool).unwrap();
    assert_eq!(tool_message.content, "It is cold in Oslo.");
    assert!(
        result["details"]["usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
            > 0
    );
    assert_eq!(
        runs.load(Ordering::SeqCst),
        1,
        "the child ran the parent's tool"
    );
}

#[test]
fn an_empty_answer_has_a_fallback_and_each_call_is_a_fresh_task() {
    let parent = Agent::with_backend(
        MockBackend::with_script([
            delegate("one"),
            MockReply::text("ok"),
            delegate("two"),
            MockReply::text("ok"),
        ]),
        Config::default(),
    )
    .unwrap();
    parent
        .add_subagent(spec(child(vec![MockReply::text("")], 0), Vec::new()))
        .unwrap();
    let first = parent.chat("a", ChatOptions::new()).wait().unwrap();
    let answer = first.tool_calls[0].result.clone().unwrap()["text"].clone();
    assert_eq!(answer, "(the sub-agent finished without an answer)");
    let second = parent.chat("b", ChatOptions::new()).wait().unwrap();
    // After its script the mock echoes: the child saw only the new task.
    assert_eq!(
        second.tool_calls[0].result.clone().unwrap()["text"],
        "echo: two"
    );
}

#[test]
fn the_parents_stop_reaches_the_child() {
    let parent = Agent::with_backend(
        MockBackend::with_script([delegate("a long job")]),
        Config::default(),
    )
    .unwrap();
    // The child calls `started` (a parent tool it was given), then writes
    // 2,000 words at 50 ms each: 100 s unless the stop reaches it.
    let (started, seen) = std::sync::mpsc::channel();
    let started = std::sync::Mutex::new(started);
    parent.register_tool(
        Tool::new("started", "Signals", json!({"type": "object"}), move |_| {
            let _ = started.lock().unwrap().send(());
            Ok(json!("ok"))
        })
        .unwrap(),
    );
    let long = vec!["word"; 2000].join(" ");
    let replies = vec![
        MockReply::tool_call("started", json!({})),
        MockReply::text(long.as_str()),
    ];
    parent
        .add_subagent(spec(child(replies, 50), vec!["started".into()]))
        .unwrap();
    let handle = parent.chat("go", ChatOptions::new());
    seen.recv_timeout(Duration::from_secs(60)).unwrap();
    let stopped = Instant::now();
    handle.cancel();
    let response = handle.wait().unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    // Dropping the parent waits for the tool still running, the child.
    drop(parent);
    assert!(
        stopped.elapsed() < Duration::from_secs(20),
        "{:?}",
        stopped.elapsed()
    );
}

#[test]
fn bad_specs_are_typed_errors() {
    let parent = Agent::with_backend(MockBackend::new(), Config::default()).unwrap();
    let err = parent
        .add_subagent(spec(child(Vec::new(), 0), vec!["missing".into()]))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::ToolNotFound);
    let err = parent
        .add_subagent(spec(Config::default(), Vec::new()))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidArgument);
    assert!(
        err.to_string().contains("give the sub-agent a provider"),
        "{err}"
    );
    let err = parent
        .add_subagent(spec(child(Vec::new(), 0).temperature(-1.0), Vec::new()))
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
}

#[test]
fn the_childs_steps_are_updates_of_the_parents_call_and_its_usage_joins_the_parents() {
    let parent = Agent::with_backend(
        MockBackend::with_script([delegate("weather in Oslo"), MockReply::text("Done.")]),
        Config::default(),
    )
    .unwrap();
    parent.register_tool(
        Tool::new("weather", "Weather", json!({"type": "object"}), |_| {
            Ok(json!("cold"))
        })
        .unwrap(),
    );
    let replies = vec![
        MockReply::tool_call("weather", json!({})),
        MockReply::text("It is cold in Oslo."),
    ];
    parent
        .add_subagent(spec(child(replies, 0), vec!["weather".into()]))
        .unwrap();
    let events = Arc::new(std::sync::Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new().on_event(move |e| sink.lock().unwrap().push(e.clone()));
    let response = parent.chat("Oslo?", options).wait().unwrap();
    let events = events.lock().unwrap();

    let updates: Vec<SubAgentUpdate> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallUpdate { id, name, update } => {
                assert_eq!((id.as_str(), name.as_str()), ("call_1", "researcher"));
                Some(serde_json::from_value(update.clone()).unwrap())
            }
            _ => None,
        })
        .collect();
    let steps: Vec<String> = updates
        .iter()
        .map(|u| {
            assert_eq!(u.subagent, "researcher");
            match &u.step {
                SubAgentStep::TurnFinished { turn, .. } => format!("turn {turn}"),
                SubAgentStep::ToolCallStarted { id, name } => format!("start {id} {name}"),
                SubAgentStep::ToolCallFinished { id, name, ok, .. } => {
                    format!("finish {id} {name} {ok}")
                }
            }
        })
        .collect();
    assert_eq!(
        steps,
        [
            "turn 1",
            "start call_1 weather",
            "finish call_1 weather true",
            "turn 2"
        ]
    );
    // The shape the README documents.
    let first = serde_json::to_value(&updates[0]).unwrap();
    assert_eq!(first["event"], "turn_finished");
    assert_eq!(first["subagent"], "researcher");
    assert!(first["usage"]["total_tokens"].as_u64().unwrap() > 0);

    // The child's usage joins the parent's.
    let own: u32 = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::TurnFinished { usage, .. } => Some(usage.total_tokens),
            _ => None,
        })
        .sum();
    let child_usage: Usage = serde_json::from_value(
        response.tool_calls[0].result.clone().unwrap()["details"]["usage"].clone(),
    )
    .unwrap();
    assert!(child_usage.total_tokens > 0);
    assert_eq!(response.usage.total_tokens, own + child_usage.total_tokens);
    assert_eq!(
        response.usage.completion_tokens,
        events
            .iter()
            .filter_map(|e| match &e.kind {
                EventKind::TurnFinished { usage, .. } => Some(usage.completion_tokens),
                _ => None,
            })
            .sum::<u32>()
            + child_usage.completion_tokens
    );
    match &events.last().unwrap().kind {
        EventKind::ChatFinished { usage, .. } => assert_eq!(*usage, response.usage),
        other => panic!("{other:?}"),
    }
}

/// The parent delegates once, then answers with what it read.
fn parent_that_delegates() -> Agent {
    Agent::with_backend(
        MockBackend::with_script([delegate("look it up"), MockReply::text("I see.")]),
        Config::default(),
    )
    .unwrap()
}

/// The tool message the parent's model read.
fn what_the_parent_read(parent: &Agent) -> String {
    let history = parent.history();
    let message = history.iter().find(|m| m.role == Role::Tool).unwrap();
    message.content.clone()
}

#[test]
fn a_child_whose_backend_fails_is_a_tool_error_the_parent_reads() {
    let parent = parent_that_delegates();
    let replies = vec![MockReply::Fail(zoo_core::Error::InferenceFailed(
        "the server is down".into(),
    ))];
    parent
        .add_subagent(spec(child(replies, 0), Vec::new()))
        .unwrap();
    let response = parent.chat("go", ChatOptions::new()).wait().unwrap();
    // The parent goes on: its model read the error and answered.
    assert_eq!(response.text, "I see.");
    let call = &response.tool_calls[0];
    assert!(call.result.is_none(), "{call:?}");
    let error = call.error.clone().unwrap();
    assert_eq!(
        error,
        "tool `researcher` failed: the sub-agent `researcher` did not answer: \
         inference failed: the server is down"
    );
    assert_eq!(
        what_the_parent_read(&parent),
        "Error: `researcher` failed: the sub-agent `researcher` did not answer: \
         inference failed: the server is down"
    );
}

#[test]
fn a_child_that_reaches_a_limit_is_a_tool_error_with_what_it_wrote() {
    let parent = parent_that_delegates();
    parent.register_tool(
        Tool::new("weather", "Weather", json!({"type": "object"}), |_| {
            Ok(json!("cold"))
        })
        .unwrap(),
    );
    // One reply allowed; the child's first reply calls a tool, so its task
    // is cut before it answers.
    let replies = vec![
        MockReply::text(
            "Let me check.\n<tool_call>\n{\"name\": \"weather\", \"arguments\": {}}\n</tool_call>",
        ),
        MockReply::text("It is cold."),
    ];
    parent
        .add_subagent(spec(child(replies, 0).max_turns(1), vec!["weather".into()]))
        .unwrap();
    let response = parent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "I see.");
    let error = response.tool_calls[0].error.clone().unwrap();
    assert!(
        error.starts_with(
            "tool `researcher` failed: the sub-agent `researcher` did not answer: \
             it reached its max_turns limit (1) before it finished; its last text: Let me check."
        ),
        "{error}"
    );
    assert!(what_the_parent_read(&parent).contains("max_turns limit (1)"));
}
