//! TH-001 … TH-010: the history manager.

use std::sync::{Arc, Mutex};

use serde_json::json;
use zoo_core::engine::history::History;
use zoo_core::{
    ChatOptions, Config, ErrorCode, EventKind, Message, MockBackend, MockReply, Role, ToolCall,
};

fn call(id: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "t".into(),
        arguments: json!({}),
    }
}

#[test]
fn th_001_messages_of_every_role_kept_in_order() {
    let mut h = History::new();
    h.push(Message::system("sys"), 2).unwrap();
    h.push(Message::user("hi"), 2).unwrap();
    h.push(Message::assistant_with_tool_calls("", vec![call("c1")]), 3)
        .unwrap();
    h.push(Message::tool("c1", "t", "42"), 2).unwrap();
    h.push(Message::assistant("done"), 2).unwrap();
    let roles: Vec<Role> = h.messages().iter().map(|m| m.role).collect();
    assert_eq!(
        roles,
        [
            Role::System,
            Role::User,
            Role::Assistant,
            Role::Tool,
            Role::Assistant
        ]
    );
    assert_eq!(h.messages()[3].content, "42");
    assert_eq!(h.system_prompt(), Some("sys"));
}

#[test]
fn th_002_consecutive_user_messages_rejected() {
    let mut h = History::new();
    h.push(Message::user("one"), 1).unwrap();
    let e = h.push(Message::user("two"), 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidMessageSequence);
    assert!(
        e.to_string().contains("cannot follow another user message"),
        "{e}"
    );
    assert_eq!(h.len(), 1, "the rejected message is not stored");
}

#[test]
fn th_003_assistant_after_user_accepted() {
    let mut h = History::new();
    h.push(Message::user("q"), 1).unwrap();
    h.push(Message::assistant("a"), 1).unwrap();
    h.push(Message::user("q2"), 1).unwrap();
    assert_eq!(h.len(), 3);
}

#[test]
fn th_004_tool_message_without_matching_call_rejected() {
    let mut h = History::new();
    h.push(Message::user("q"), 1).unwrap();
    let e = h.push(Message::tool("c1", "t", "x"), 1).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidMessageSequence);
    h.push(Message::assistant_with_tool_calls("", vec![call("c1")]), 1)
        .unwrap();
    let e = h.push(Message::tool("c9", "t", "x"), 1).unwrap_err();
    assert!(e.to_string().contains("c9"), "{e}");
    h.push(Message::tool("c1", "t", "x"), 1).unwrap();
    let e = h.push(Message::tool("c1", "t", "x"), 1).unwrap_err();
    assert_eq!(
        e.code(),
        ErrorCode::InvalidMessageSequence,
        "a call is answered once"
    );
}

#[test]
fn th_005_token_counts_per_message_sum_to_total() {
    let mut h = History::new();
    h.set_system_prompt(Some(("sys".into(), 7)));
    h.push(Message::user("a"), 5).unwrap();
    h.push(Message::assistant("b"), 11).unwrap();
    assert_eq!(h.token_counts(), vec![7, 5, 11]);
    assert_eq!(h.total_tokens(), 23);
    assert_eq!(h.token_counts().iter().sum::<u32>(), h.total_tokens());
}

fn conversation(turns: usize) -> History {
    let mut h = History::new();
    h.set_system_prompt(Some(("system".into(), 10)));
    for i in 0..turns {
        h.push(Message::user(format!("q{i}")), 10).unwrap();
        h.push(Message::assistant(format!("a{i}")), 10).unwrap();
    }
    h
}

#[test]
fn th_006_exceeding_the_window_prunes_the_oldest_pair() {
    let mut h = conversation(3); // 10 + 60
    h.push(Message::user("now"), 10).unwrap();
    let current = h.len() - 1;
    let pruned = h.prune_to_fit(70, current);
    let texts: Vec<&str> = pruned.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["q0", "a0"]);
    assert_eq!(h.total_tokens(), 60);
    assert_eq!(h.messages()[1].content, "q1");
}

#[test]
fn th_007_exceeding_by_a_lot_prunes_several_pairs() {
    let mut h = conversation(5);
    h.push(Message::user("now"), 10).unwrap();
    let current = h.len() - 1;
    let pruned = h.prune_to_fit(40, current);
    assert_eq!(pruned.len(), 8, "four pairs removed");
    let texts: Vec<String> = h.messages().iter().map(|m| m.content.clone()).collect();
    assert_eq!(texts, ["system", "q4", "a4", "now"]);
    assert!(h.total_tokens() <= 40);
}

#[test]
fn th_008_pruning_keeps_the_system_prompt_and_tool_results_with_their_calls() {
    let mut h = History::new();
    h.set_system_prompt(Some(("system".into(), 10)));
    h.push(Message::user("q0"), 10).unwrap();
    h.push(Message::assistant_with_tool_calls("", vec![call("c1")]), 10)
        .unwrap();
    h.push(Message::tool("c1", "t", "r"), 10).unwrap();
    h.push(Message::assistant("a0"), 10).unwrap();
    h.push(Message::user("q1"), 10).unwrap();
    let pruned = h.prune_to_fit(25, h.len() - 1);
    assert_eq!(
        pruned.len(),
        4,
        "the call, its result and the reply go together"
    );
    assert_eq!(h.messages()[0].role, Role::System);
    assert_eq!(h.messages()[0].content, "system");
    assert!(h.messages().iter().all(|m| m.role != Role::Tool));
    // Even a huge overflow never removes the system prompt or the current turn.
    let pruned = h.prune_to_fit(0, h.len() - 1);
    assert!(pruned.is_empty());
    assert_eq!(h.messages().len(), 2);
}

#[test]
fn th_009_prune_callback_receives_the_pruned_messages() {
    let mock = MockBackend::new();
    mock.set_context_size(64);
    let config = Config::default().max_tokens(8);
    let agent = zoo_core::Agent::with_backend(mock.clone(), config).unwrap();
    let pruned = Arc::new(Mutex::new(Vec::new()));
    for i in 0..4 {
        let sink = pruned.clone();
        let question = format!("question number {i} with a few more words to fill the window");
        let options = ChatOptions::new().on_event(move |e| {
            if let EventKind::HistoryCompacted {
                removed: messages,
                level,
                tokens_before,
                tokens_after,
            } = &e.kind
            {
                assert_eq!(*level, zoo_core::context::CompactionLevel::Fifo);
                assert!(tokens_after < tokens_before);
                sink.lock()
                    .unwrap()
                    .extend(messages.iter().map(|m| m.content.clone()));
            }
        });
        agent.chat(question, options).wait().unwrap();
    }
    let pruned = pruned.lock().unwrap().clone();
    assert!(pruned.len() >= 2, "{pruned:?}");
    assert_eq!(
        pruned[0],
        "question number 0 with a few more words to fill the window"
    );
    assert!(pruned[1].starts_with("echo: question number 0"));
    let history = agent.history();
    assert!(history.iter().all(|m| !m.content.contains("number 0")));
}

#[test]
fn th_010_rag_context_used_for_the_turn_but_not_stored() {
    let mock = MockBackend::with_script([MockReply::text("Paris")]);
    let agent = super::agent_on(&mock);
    let options = ChatOptions::new().rag_context("The capital of France is Paris.");
    agent.chat("What is the capital?", options).wait().unwrap();
    let sent = &mock.calls()[0].messages;
    let last_user = sent.iter().rev().find(|m| m.role == Role::User).unwrap();
    assert!(last_user
        .content
        .contains("The capital of France is Paris."));
    assert!(last_user.content.contains("What is the capital?"));
    let history = agent.history();
    assert_eq!(history[0].content, "What is the capital?");
    assert!(history
        .iter()
        .all(|m| !m.content.contains("capital of France")));
}

#[test]
fn history_setters_are_visible_when_they_return() {
    let agent = super::agent_on(&MockBackend::new());
    for i in 0..300 {
        let prompt = format!("prompt {i}");
        agent.set_system_prompt(Some(prompt.clone())).unwrap();
        assert_eq!(agent.history()[0].content, prompt);
        agent
            .set_history(vec![
                Message::user(format!("q{i}")),
                Message::assistant("a"),
            ])
            .unwrap();
        assert_eq!(agent.history()[0].content, format!("q{i}"));
    }
}
