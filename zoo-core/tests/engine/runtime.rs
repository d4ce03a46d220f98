//! The agent runtime on the mock: the event stream's ordering invariant on
//! every path a chat can end by, steering and follow-ups from other threads,
//! and queued messages that a stopped or failed chat gives back.

use std::collections::HashSet;
use std::sync::mpsc;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::json;
use zoo_core::backend::{GenerateRequest, Generation};
use zoo_core::tools::ToolCallFormat;
use zoo_core::{
    AgentEvent, Backend, CancelToken, ChatOptions, ErrorCode, EventKind, MockBackend, MockReply,
    Role, StopReason, Tool,
};

use super::agent_on;

/// Generous bound for a chat on a loaded machine; only a broken test waits it.
const PROMPTLY: Duration = Duration::from_secs(30);

fn call(name: &str) -> MockReply {
    MockReply::text(format!(
        "<tool_call>{{\"name\": \"{name}\", \"arguments\": {{}}}}</tool_call>"
    ))
}

fn recorder() -> (Arc<Mutex<Vec<AgentEvent>>>, ChatOptions) {
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new().on_event(move |e| sink.lock().unwrap().push(e.clone()));
    (events, options)
}

/// The invariant of `zoo_core::event`: `chat_started` first, `chat_finished`
/// last, `seq` from 0 without gaps, one chat's identity throughout, turns
/// that never overlap, every started call finished, and a call's updates
/// and progress only between its start and its finish.
pub(super) fn assert_well_formed(events: &[AgentEvent], stop_reason: StopReason) {
    let types: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["type"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    assert!(
        matches!(
            events.first().map(|e| &e.kind),
            Some(EventKind::ChatStarted { .. })
        ),
        "{types:?}"
    );
    match events.last().map(|e| &e.kind) {
        Some(EventKind::ChatFinished {
            stop_reason: got, ..
        }) => {
            assert_eq!(*got, stop_reason, "{types:?}")
        }
        other => panic!("the last event is {other:?}: {types:?}"),
    }
    let (agent, chat) = (events[0].agent_id, events[0].chat_id);
    let mut open_turn = None;
    let mut open_calls = HashSet::new();
    for (i, event) in events.iter().enumerate() {
        assert_eq!(
            (event.seq, event.agent_id, event.chat_id),
            (i as u64, agent, chat)
        );
        match &event.kind {
            EventKind::TurnStarted { turn } => {
                assert_eq!(
                    open_turn.replace(*turn),
                    None,
                    "overlapping turns: {types:?}"
                )
            }
            EventKind::TurnFinished { turn, .. } => {
                assert_eq!(open_turn.take(), Some(*turn), "{types:?}")
            }
            EventKind::ToolCallStarted { id, .. } => assert!(open_calls.insert(id.clone())),
            EventKind::ToolCallFinished { id, .. } => assert!(open_calls.remove(id)),
            EventKind::ToolCallUpdate { id, .. } | EventKind::ToolCallProgress { id, .. } => {
                assert!(
                    open_calls.contains(id),
                    "a report outside its call: {types:?}"
                )
            }
            EventKind::ChatStarted { .. } | EventKind::ChatFinished { .. }
                if i > 0 && i + 1 < events.len() =>
            {
                panic!("chat_started or chat_finished inside the stream: {types:?}")
            }
            _ => {}
        }
    }
    assert_eq!(open_turn, None, "{types:?}");
    assert!(open_calls.is_empty(), "{types:?}");
}

fn echo_tool(name: &str) -> Tool {
    Tool::new(name, "test tool", json!({"type": "object"}), |_| {
        Ok(json!("ok"))
    })
    .unwrap()
}

#[test]
fn the_event_stream_is_well_formed_on_every_path() {
    // Success with a tool call, a failing tool, a limit.
    let mock = MockBackend::with_script([call("ok"), MockReply::text("done")]);
    let agent = agent_on(&mock);
    agent.register_tool(echo_tool("ok"));
    let failing = Tool::new("bad", "fails", json!({"type": "object"}), |_| {
        Err::<serde_json::Value, _>("broken".to_string())
    })
    .unwrap();
    agent.register_tool(failing);
    let (events, options) = recorder();
    agent.chat("go", options).wait().unwrap();
    assert_well_formed(&events.lock().unwrap(), StopReason::Stop);

    mock.push_replies([call("bad"), MockReply::text("sorry")]);
    let (events, options) = recorder();
    agent.chat("go", options).wait().unwrap();
    assert_well_formed(&events.lock().unwrap(), StopReason::Stop);

    mock.push_replies([call("ok"), MockReply::text("unused")]);
    let (events, options) = recorder();
    let response = agent.chat("go", options.max_turns(1)).wait().unwrap();
    assert_eq!(response.stop_reason, StopReason::Limit);
    assert_well_formed(&events.lock().unwrap(), StopReason::Limit);
    mock.clear_script();

    // A backend error: the chat fails, and its stream still closes.
    mock.push_replies([
        call("ok"),
        MockReply::Fail(zoo_core::Error::InferenceFailed("out of memory".into())),
    ]);
    let (events, options) = recorder();
    let error = agent.chat("go", options).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::InferenceFailed);
    assert_well_formed(&events.lock().unwrap(), StopReason::Error);

    // Cancelled before it started, and while a tool ran.
    let token = CancelToken::new();
    token.cancel();
    let (events, options) = recorder();
    agent
        .chat("go", options.cancel_token(token))
        .wait()
        .unwrap();
    assert_well_formed(&events.lock().unwrap(), StopReason::Cancelled);

    let token = CancelToken::new();
    let stopper = token.clone();
    agent.register_tool(
        Tool::new("stop", "stops", json!({"type": "object"}), move |_| {
            stopper.cancel();
            Ok(json!("stopped"))
        })
        .unwrap(),
    );
    mock.push_replies([call("stop"), MockReply::text("unused")]);
    let (events, options) = recorder();
    let response = agent
        .chat("go", options.cancel_token(token))
        .wait()
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_well_formed(&events.lock().unwrap(), StopReason::Cancelled);
}

#[test]
fn chats_and_agents_have_their_own_ids() {
    let mock = MockBackend::new();
    let (first, second) = (agent_on(&mock), agent_on(&mock));
    assert_ne!(first.id(), second.id());
    let mut chat_ids = Vec::new();
    for _ in 0..3 {
        let (events, options) = recorder();
        first.chat("hi", options).wait().unwrap();
        let events = events.lock().unwrap();
        assert!(events.iter().all(|e| e.agent_id == first.id()));
        chat_ids.push(events[0].chat_id);
    }
    assert_eq!(chat_ids, [1, 2, 3]);
}

#[test]
fn a_steer_from_another_thread_ends_the_reply_at_once_and_is_answered_in_the_same_chat() {
    let mock = MockBackend::with_script([
        MockReply::text("a long first answer with many words"),
        MockReply::text("corrected answer"),
    ]);
    mock.set_piece_delay(Duration::from_millis(5));
    let agent = Arc::new(agent_on(&mock));
    // The reply holds at its first token until the steer is in, so the
    // steer lands during the reply however slowly the test's threads run.
    let (first_token, token_seen) = mpsc::channel();
    let (steered, steer_done) = mpsc::channel::<()>();
    let gate = Mutex::new(Some((first_token, steer_done)));
    let (events, options) = recorder();
    let handle = agent.chat(
        "question",
        options.on_token(move |piece| {
            if let Some((tx, done)) = gate.lock().unwrap().take() {
                let _ = tx.send(piece.to_string());
                let _ = done.recv_timeout(PROMPTLY);
            }
        }),
    );
    let first = token_seen
        .recv_timeout(PROMPTLY)
        .expect("the reply streams");
    let steerer = Arc::clone(&agent);
    std::thread::spawn(move || steerer.steer("be brief"))
        .join()
        .unwrap();
    steered.send(()).unwrap();
    let response = handle.wait().unwrap();
    assert_eq!(response.text, "corrected answer");
    assert_eq!(response.metrics.iterations, 2);
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Stop);
    assert!(events.iter().any(|e| e.kind
        == EventKind::SteeringReceived {
            message: "be brief".into()
        }));
    // The reply ended at the token it had streamed; what it said is kept.
    let history: Vec<(Role, String)> = agent
        .history()
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect();
    assert_eq!(
        history,
        [
            (Role::User, "question".into()),
            (Role::Assistant, first),
            (Role::User, "be brief".into()),
            (Role::Assistant, "corrected answer".into()),
        ]
    );
}

/// The mock, except that its first reply says nothing until its token is
/// cancelled, and reports when it has begun.
struct SilentFirstReply {
    inner: MockBackend,
    began: Option<mpsc::Sender<()>>,
}

impl Backend for SilentFirstReply {
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> zoo_core::Result<Generation> {
        if let Some(began) = self.began.take() {
            began.send(()).unwrap();
            assert!(cancel.wait(Some(PROMPTLY)), "a steer ends the reply");
        }
        self.inner.generate(request, on_piece, cancel)
    }

    fn count_tokens(&mut self, message: &zoo_core::Message) -> zoo_core::Result<u32> {
        self.inner.count_tokens(message)
    }

    fn context_size(&self) -> u32 {
        self.inner.context_size()
    }

    fn tool_call_format(&self) -> ToolCallFormat {
        self.inner.tool_call_format()
    }
}

#[test]
fn a_steer_before_the_reply_says_anything_joins_the_users_message() {
    let mock = MockBackend::with_script([
        MockReply::text("never said"),
        MockReply::text("both answered"),
    ]);
    let (began, reply_began) = mpsc::channel();
    let backend = SilentFirstReply {
        inner: mock.clone(),
        began: Some(began),
    };
    let agent = zoo_core::Agent::with_backend(backend, zoo_core::Config::default()).unwrap();
    let (events, options) = recorder();
    let handle = agent.chat("question", options);
    reply_began
        .recv_timeout(PROMPTLY)
        .expect("the reply begins");
    agent.steer("and be brief");
    let response = handle.wait().unwrap();
    assert_eq!(response.text, "both answered");
    assert_eq!(response.metrics.iterations, 2);
    assert_well_formed(&events.lock().unwrap(), StopReason::Stop);
    let joined = "question\n\nand be brief";
    let last_prompt = mock.calls().pop().unwrap().messages;
    assert_eq!(last_prompt.last().unwrap().content, joined);
    let history: Vec<(Role, String)> = agent
        .history()
        .into_iter()
        .map(|m| (m.role, m.content))
        .collect();
    assert_eq!(
        history,
        [
            (Role::User, joined.into()),
            (Role::Assistant, "both answered".into())
        ]
    );
}

#[test]
fn a_follow_up_that_a_stop_cuts_off_goes_back_to_its_queue() {
    let mock = MockBackend::with_script([MockReply::text("first")]);
    let agent = agent_on(&mock);
    agent.follow_up("later");
    // Stop the chat the moment the follow-up starts its round: its user
    // message must leave the history again, and wait for the next chat.
    let token = CancelToken::new();
    let stopper = token.clone();
    let options = ChatOptions::new().cancel_token(token).on_event(move |e| {
        if matches!(e.kind, EventKind::FollowUpStarted { .. }) {
            stopper.cancel();
        }
    });
    let response = agent.chat("now", options).wait().unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    let last = agent.history().pop().unwrap();
    assert_eq!(
        (last.role, last.content.as_str()),
        (Role::Assistant, "first")
    );

    mock.push_replies([MockReply::text("second"), MockReply::text("answered later")]);
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "answered later");
    let contents: Vec<String> = agent.history().into_iter().map(|m| m.content).collect();
    assert_eq!(
        contents,
        ["now", "first", "again", "second", "later", "answered later"]
    );
}

#[test]
fn a_failed_chat_gives_back_the_messages_it_took() {
    let mock = MockBackend::with_script([
        MockReply::text("first"),
        MockReply::Fail(zoo_core::Error::InferenceFailed("down".into())),
    ]);
    let agent = agent_on(&mock);
    agent.follow_up("later");
    let error = agent.chat("now", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::InferenceFailed);
    assert!(agent.history().is_empty(), "the failed chat is undone");

    mock.push_replies([MockReply::text("hello"), MockReply::text("answered later")]);
    let response = agent.chat("hi", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "answered later");
    assert_eq!(agent.history().len(), 4);
}

#[test]
fn a_steer_queued_between_chats_waits_for_the_chats_own_reply() {
    // A steer queued between chats is taken by the next chat after its own
    // message is answered, never as two user messages in a row.
    let mock = MockBackend::with_script([MockReply::text("one"), MockReply::text("two")]);
    let agent = agent_on(&mock);
    agent.steer("also this");
    let response = agent.chat("first", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "two");
    let roles: Vec<Role> = agent.history().into_iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [Role::User, Role::Assistant, Role::User, Role::Assistant]
    );
}

/// Two tools that each wait for the other to start: they can only both
/// succeed when they run at the same time. The wait's bound only ends a
/// sequential run, where the first call waits alone.
fn rendezvous_tools(agent: &zoo_core::Agent, wait: Duration) {
    let barrier = Arc::new((Mutex::new(0u32), std::sync::Condvar::new()));
    for name in ["left", "right"] {
        let barrier = barrier.clone();
        let tool = Tool::new(
            name,
            "meets the other",
            json!({"type": "object"}),
            move |_| {
                let (count, arrived) = &*barrier;
                let mut count = count.lock().unwrap();
                *count += 1;
                arrived.notify_all();
                let (count, timeout) = arrived.wait_timeout_while(count, wait, |n| *n < 2).unwrap();
                drop(count);
                if timeout.timed_out() {
                    Err("ran alone".to_string())
                } else {
                    Ok(json!("met"))
                }
            },
        )
        .unwrap();
        agent.register_tool(tool);
    }
}

fn two_calls() -> MockReply {
    MockReply::tool_calls(&[("left", json!({})), ("right", json!({}))])
}

#[test]
fn parallel_calls_of_one_reply_run_at_the_same_time_and_answer_in_order() {
    let mock = MockBackend::with_script([two_calls(), MockReply::text("both met")]);
    let config = zoo_core::Config::default().tool_execution(zoo_core::ToolExecution::Parallel);
    let agent = zoo_core::Agent::with_backend(mock.clone(), config).unwrap();
    rendezvous_tools(&agent, PROMPTLY);
    let (events, options) = recorder();
    let response = agent.chat("meet", options).wait().unwrap();
    let results: Vec<_> = response
        .tool_calls
        .iter()
        .map(|c| (c.name.as_str(), c.result.clone()))
        .collect();
    assert_eq!(
        results,
        [("left", Some(json!("met"))), ("right", Some(json!("met")))]
    );
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Stop);
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match &e.kind {
            EventKind::ToolCallStarted { .. } => Some("started"),
            EventKind::ToolCallFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["started", "started", "finished", "finished"]);
    let ids: Vec<Option<String>> = agent
        .history()
        .into_iter()
        .map(|m| m.tool_call_id)
        .collect();
    assert_eq!(ids[2..4], [Some("call_1".into()), Some("call_2".into())]);
}

#[test]
fn sequential_and_exclusive_calls_run_one_at_a_time() {
    // Sequential: the first call waits alone and gives up.
    let mock = MockBackend::with_script([two_calls(), MockReply::text("done")]);
    let agent = agent_on(&mock);
    rendezvous_tools(&agent, Duration::from_millis(50));
    let response = agent.chat("meet", ChatOptions::new()).wait().unwrap();
    assert!(response.tool_calls[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("ran alone")));

    // Parallel, but `right` is exclusive: it never runs beside `left`.
    let mock = MockBackend::with_script([two_calls(), MockReply::text("done")]);
    let config = zoo_core::Config::default().tool_execution(zoo_core::ToolExecution::Parallel);
    let agent = zoo_core::Agent::with_backend(mock, config).unwrap();
    rendezvous_tools(&agent, Duration::from_millis(50));
    let right = agent
        .tools()
        .into_iter()
        .find(|t| t.name == "right")
        .unwrap();
    let exclusive = Tool::new(&right.name, &right.description, right.parameters, |_| {
        Ok(json!("alone"))
    })
    .unwrap()
    .exclusive(true);
    agent.register_tool(exclusive);
    let response = agent.chat("meet", ChatOptions::new()).wait().unwrap();
    assert!(response.tool_calls[0]
        .error
        .as_deref()
        .is_some_and(|e| e.contains("ran alone")));
    assert_eq!(response.tool_calls[1].result, Some(json!("alone")));
}

#[test]
fn a_call_past_its_time_limit_is_a_tool_error_and_the_chat_goes_on() {
    let mock = MockBackend::with_script([call("stuck"), MockReply::text("gave up")]);
    let agent = agent_on(&mock);
    let (release, released) = mpsc::channel::<()>();
    let released = Mutex::new(released);
    let stuck = Tool::new(
        "stuck",
        "never answers in time",
        json!({"type": "object"}),
        move |_| {
            let _ = released.lock().unwrap().recv_timeout(PROMPTLY);
            Ok(json!("late"))
        },
    )
    .unwrap()
    .timeout(Some(Duration::from_millis(20)));
    agent.register_tool(stuck);
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "gave up");
    assert_eq!(
        response.tool_calls[0].error.as_deref(),
        Some("tool `stuck` failed: it did not finish within 20 ms")
    );
    drop(release);
}

/// Hooks for the tests below, each point scripted.
#[derive(Default)]
struct Scripted {
    filter: Option<zoo_core::InputDecision>,
    end_before_turn: Option<u32>,
    tool_call: Option<zoo_core::ToolCallDecision>,
    replace_result: Option<serde_json::Value>,
    fail_every_hook: bool,
    seen_turns: Mutex<Vec<(u32, String)>>,
    errors: Mutex<Vec<String>>,
}

impl zoo_core::Hooks for Scripted {
    fn filter_input(&self, _message: &str) -> Result<zoo_core::InputDecision, String> {
        if self.fail_every_hook {
            return Err("filter broke".into());
        }
        Ok(self.filter.clone().unwrap_or_default())
    }
    fn before_turn(&self, turn: u32) -> Result<zoo_core::TurnDecision, String> {
        if self.fail_every_hook {
            return Err("before_turn broke".into());
        }
        Ok(match self.end_before_turn {
            Some(at) if at == turn => zoo_core::TurnDecision::End,
            _ => zoo_core::TurnDecision::Continue,
        })
    }
    fn after_turn(&self, turn: u32, text: &str) -> Result<(), String> {
        self.seen_turns
            .lock()
            .unwrap()
            .push((turn, text.to_string()));
        Ok(())
    }
    fn before_tool_call(
        &self,
        _call: &zoo_core::ToolCall,
    ) -> Result<zoo_core::ToolCallDecision, String> {
        if self.fail_every_hook {
            return Err("veto broke".into());
        }
        Ok(self.tool_call.clone().unwrap_or_default())
    }
    fn after_tool_call(
        &self,
        _call: &zoo_core::ToolCall,
        _outcome: &Result<serde_json::Value, String>,
    ) -> Result<Option<serde_json::Value>, String> {
        Ok(self.replace_result.clone())
    }
    fn transform_context(
        &self,
        mut messages: Vec<zoo_core::Message>,
    ) -> Result<Vec<zoo_core::Message>, String> {
        if let Some(last) = messages.last_mut() {
            last.content.push_str(" [seen by transform_context]");
        }
        Ok(messages)
    }
    fn on_error(&self, error: &zoo_core::Error) {
        self.errors.lock().unwrap().push(error.to_string());
    }
}

#[test]
fn a_rejecting_input_filter_ends_the_chat_before_anything_is_decoded() {
    let mock = MockBackend::new();
    let agent = agent_on(&mock);
    let hooks = Arc::new(Scripted {
        filter: Some(zoo_core::InputDecision::Reject {
            reason: "no secrets".into(),
        }),
        ..Scripted::default()
    });
    let (events, options) = recorder();
    let response = agent
        .chat("my password is hunter2", options.hooks(hooks))
        .wait()
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Rejected);
    assert!(agent.history().is_empty());
    assert_eq!(mock.call_count(), 0);
    let events = events.lock().unwrap();
    assert_well_formed(&events, StopReason::Rejected);
    assert!(events.iter().any(|e| e.kind
        == EventKind::InputRejected {
            reason: "no secrets".into()
        }));
}

#[test]
fn a_warning_filter_appends_to_the_message_and_transform_context_edits_only_the_request() {
    let mock = MockBackend::with_script([MockReply::text("ok")]);
    let agent = agent_on(&mock);
    agent.set_hooks(Some(Arc::new(Scripted {
        filter: Some(zoo_core::InputDecision::Warn {
            warning: "(be careful)".into(),
        }),
        ..Scripted::default()
    })));
    agent.chat("delete it", ChatOptions::new()).wait().unwrap();
    assert_eq!(agent.history()[0].content, "delete it\n\n(be careful)");
    let sent = &mock.calls()[0].messages;
    assert_eq!(
        sent.last().unwrap().content,
        "delete it\n\n(be careful) [seen by transform_context]"
    );
}

#[test]
fn before_tool_call_denies_or_rewrites_and_after_tool_call_replaces_results() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Rome"})),
        MockReply::text("denied"),
        MockReply::tool_call("get_weather", json!({"city": "Rome"})),
        MockReply::text("rewritten"),
    ]);
    let agent = agent_on(&mock);
    let cities = Arc::new(Mutex::new(Vec::new()));
    let seen = cities.clone();
    agent.register_tool(
        Tool::new("get_weather", "weather", json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}), move |args| {
            seen.lock().unwrap().push(args["city"].clone());
            Ok(json!("sunny"))
        })
        .unwrap(),
    );
    let deny = Arc::new(Scripted {
        tool_call: Some(zoo_core::ToolCallDecision::Deny {
            reason: "not today".into(),
        }),
        ..Scripted::default()
    });
    let response = agent
        .chat("weather?", ChatOptions::new().hooks(deny))
        .wait()
        .unwrap();
    assert_eq!(
        response.tool_calls[0].error.as_deref(),
        Some("tool `get_weather` failed: the call was denied: not today")
    );
    assert!(cities.lock().unwrap().is_empty());

    let rewrite = Arc::new(Scripted {
        tool_call: Some(zoo_core::ToolCallDecision::Rewrite {
            arguments: json!({"city": "Paris"}),
        }),
        replace_result: Some(json!("replaced")),
        ..Scripted::default()
    });
    let response = agent
        .chat("weather?", ChatOptions::new().hooks(rewrite.clone()))
        .wait()
        .unwrap();
    assert_eq!(*cities.lock().unwrap(), [json!("Paris")]);
    assert_eq!(response.tool_calls[0].result, Some(json!("replaced")));
    let turns = rewrite.seen_turns.lock().unwrap();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[1], (2, "rewritten".to_string()));
}

#[test]
fn before_turn_may_end_the_chat_and_failing_hooks_fail_safe() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({})),
        MockReply::text("unused"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(echo_tool("get_weather"));
    let end = Arc::new(Scripted {
        end_before_turn: Some(2),
        ..Scripted::default()
    });
    let response = agent
        .chat("go", ChatOptions::new().hooks(end))
        .wait()
        .unwrap();
    assert_eq!(
        (response.stop_reason, response.metrics.iterations),
        (StopReason::Stop, 1)
    );
    mock.clear_script();

    // A filter that fails rejects; the failure reaches on_error.
    let broken = Arc::new(Scripted {
        fail_every_hook: true,
        ..Scripted::default()
    });
    let response = agent
        .chat("go", ChatOptions::new().hooks(broken.clone()))
        .wait()
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Rejected);
    assert_eq!(
        *broken.errors.lock().unwrap(),
        ["internal error: the filter_input hook failed: filter broke"]
    );
    // And the agent goes on.
    assert_eq!(
        agent.chat("hi", ChatOptions::new()).wait().unwrap().text,
        "echo: hi"
    );
}
