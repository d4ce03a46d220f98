//! A host's own context strategy (the `context_strategy` hook) in place
//! of the config's: it sees the conversation, the exact token counts and
//! the budget, and what it keeps replaces the history when it keeps the
//! rules; anything else is a hook failure and the config's strategy runs.

use std::sync::{Arc, Mutex};

use serde_json::json;
use zoo_core::context::CompactionLevel;
use zoo_core::{
    Agent, AgentEvent, ChatOptions, Config, ContextRequest, Error, EventKind, Hooks, Message,
    MockBackend, MockReply, Role, SessionStore, Tool,
};

/// A strategy written as a closure, recording what it was shown and what
/// `on_error` received.
struct Strategy<F> {
    decide: F,
    requests: Mutex<Vec<ContextRequest>>,
    errors: Mutex<Vec<String>>,
}

impl<F> Hooks for Strategy<F>
where
    F: Fn(&ContextRequest) -> Result<Option<Vec<Message>>, String> + Send + Sync,
{
    fn context_strategy(&self, request: &ContextRequest) -> Result<Option<Vec<Message>>, String> {
        self.requests.lock().unwrap().push(request.clone());
        (self.decide)(request)
    }

    fn on_error(&self, error: &Error) {
        self.errors.lock().unwrap().push(error.to_string());
    }
}

fn strategy<F>(decide: F) -> Arc<Strategy<F>>
where
    F: Fn(&ContextRequest) -> Result<Option<Vec<Message>>, String> + Send + Sync,
{
    Arc::new(Strategy {
        decide,
        requests: Mutex::new(Vec::new()),
        errors: Mutex::new(Vec::new()),
    })
}

/// A mock agent whose window is 120 tokens (a budget of 90 after the
/// reply's reserve), with these hooks; each message below is 11 tokens.
fn agent_with(hooks: Arc<dyn Hooks>, config: Config) -> (Agent, MockBackend) {
    let backend = MockBackend::new();
    backend.set_context_size(120);
    let agent = Agent::with_backend(backend.clone(), config).unwrap();
    agent.set_hooks(Some(hooks));
    (agent, backend)
}

/// Chats `text`, returning the `history_compacted` events.
fn chat(agent: &Agent, text: &str) -> Vec<(CompactionLevel, Vec<Message>, u32, u32)> {
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let options = ChatOptions::new().on_event(move |event: &AgentEvent| {
        if let EventKind::HistoryCompacted {
            level,
            removed,
            tokens_before,
            tokens_after,
        } = &event.kind
        {
            seen.lock()
                .unwrap()
                .push((*level, removed.clone(), *tokens_before, *tokens_after));
        }
    });
    agent.chat(text, options).wait().unwrap();
    let events = events.lock().unwrap().clone();
    events
}

fn numbered(n: usize) -> String {
    format!("message number {n} with a few words")
}

/// The last `n` messages before the current turn, and the current turn.
fn keep_last(request: &ContextRequest, n: usize) -> Vec<Message> {
    let start = request.current_turn.saturating_sub(n);
    request.messages[start..].to_vec()
}

#[test]
fn the_hooks_strategy_replaces_the_configs_and_is_reported_as_custom() {
    let hooks = strategy(|request: &ContextRequest| Ok(Some(keep_last(request, 2))));
    let (agent, backend) = agent_with(hooks.clone(), Config::default());
    let mut compacted = Vec::new();
    for n in 0..6 {
        compacted.extend(chat(&agent, &numbered(n)));
    }
    // 8 messages (4 turns, 84 tokens) fit; the fifth question does not.
    let requests = hooks.requests.lock().unwrap().clone();
    let first = &requests[0];
    assert_eq!(first.messages.len(), 9);
    assert_eq!(first.current_turn, 8);
    assert_eq!(first.budget, 90);
    assert_eq!(first.system_tokens, 0);
    assert_eq!(first.tokens, [11, 12, 11, 12, 11, 12, 11, 12, 11]);
    let (level, removed, before, after) = &compacted[0];
    assert_eq!(*level, CompactionLevel::Custom);
    assert_eq!(removed.len(), 6);
    assert_eq!(removed[0].content, numbered(0));
    assert_eq!((*before, *after), (103, 34));
    // The model was given what the strategy kept, and so is the history.
    let sent = &backend.calls()[4].messages;
    assert_eq!(sent.len(), 3);
    assert_eq!(sent[0].content, numbered(3));
    let history = agent.history();
    assert_eq!(history[0].content, numbered(3));
    assert!(hooks.errors.lock().unwrap().is_empty());
}

#[test]
fn new_messages_it_writes_are_counted_and_a_session_keeps_the_whole_transcript() {
    let dir = std::env::temp_dir().join(format!("zoo-host-strategy-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("chats.db").to_string_lossy().into_owned();
    // A summary in place of what goes, then the last turn and the new one.
    let hooks = strategy(|request: &ContextRequest| {
        let gone = request.current_turn - 2;
        let mut kept = vec![Message::assistant(format!("(summary of {gone} messages)"))];
        kept.extend(keep_last(request, 2));
        Ok(Some(kept))
    });
    let config = Config::default().session_store(db.clone()).session("s");
    let (agent, _) = agent_with(hooks.clone(), config.clone());
    let mut compacted = Vec::new();
    for n in 0..7 {
        compacted.extend(chat(&agent, &numbered(n)));
    }
    assert!(hooks.errors.lock().unwrap().is_empty());
    let history = agent.history();
    assert!(
        history[0].content.starts_with("(summary of "),
        "{history:#?}"
    );
    // "(summary of 6 messages)" is 4 words and the markup's 4.
    let (_, _, _, after) = compacted[0];
    assert_eq!(after, 8 + 23 + 11);
    // The store has every message at its place, and no summary.
    let stored = SessionStore::open(&db).unwrap().load("s").unwrap().messages;
    assert_eq!(stored.len(), 14);
    for (n, turn) in stored.chunks(2).enumerate() {
        assert_eq!(turn[0], Message::user(numbered(n)));
        assert_eq!(turn[1].role, Role::Assistant);
    }
    drop(agent);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Runs a chat that needs compacting under `decide`, with FIFO as the
/// config's strategy: the events and what `on_error` received.
fn refused<F>(decide: F) -> (Vec<CompactionLevel>, Vec<String>)
where
    F: Fn(&ContextRequest) -> Result<Option<Vec<Message>>, String> + Send + Sync + 'static,
{
    let hooks = strategy(decide);
    let (agent, _) = agent_with(hooks.clone(), Config::default());
    let mut levels = Vec::new();
    for n in 0..5 {
        levels.extend(chat(&agent, &numbered(n)).into_iter().map(|c| c.0));
    }
    let errors = hooks.errors.lock().unwrap().clone();
    (levels, errors)
}

#[test]
fn a_result_that_breaks_a_rule_is_a_hook_failure_and_fifo_runs() {
    let failed = |why: &str| format!("internal error: the context_strategy hook failed: {why}");
    // Everything kept: over the budget.
    let (levels, errors) = refused(|r: &ContextRequest| Ok(Some(r.messages.clone())));
    assert_eq!(levels, [CompactionLevel::Fifo]);
    assert_eq!(
        errors,
        [failed(
            "the messages it returned take 103 tokens with the system prompt, over the budget of 90"
        )]
    );
    // The current turn left out.
    let (levels, errors) =
        refused(|r: &ContextRequest| Ok(Some(r.messages[..r.current_turn].to_vec())));
    assert_eq!(levels, [CompactionLevel::Fifo]);
    assert_eq!(
        errors,
        [failed(
            "the messages it returned must end with the current turn, unchanged (the last 1 of \
             the history)"
        )]
    );
    // Two user messages in a row.
    let (levels, errors) = refused(|r: &ContextRequest| {
        let mut kept = vec![r.messages[0].clone()];
        kept.extend(keep_last(r, 0));
        Ok(Some(kept))
    });
    assert_eq!(levels, [CompactionLevel::Fifo]);
    assert!(errors[0].contains("out of order: invalid message sequence: a user message cannot follow another user message"), "{errors:?}");
    // The hook fails.
    let (levels, errors) = refused(|_: &ContextRequest| Err("no idea".to_string()));
    assert_eq!(levels, [CompactionLevel::Fifo]);
    assert_eq!(errors, [failed("no idea")]);
    // It declines: the config's strategy, and no failure.
    let (levels, errors) = refused(|_: &ContextRequest| Ok(None));
    assert_eq!(levels, [CompactionLevel::Fifo]);
    assert!(errors.is_empty());
}

#[test]
fn a_call_kept_without_its_result_is_refused() {
    let weather = Tool::new(
        "get_weather",
        "Weather",
        json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        |_| Ok(json!("sunny")),
    )
    .unwrap();
    let hooks = strategy(|r: &ContextRequest| {
        // The call of the first turn, its result left out.
        let mut kept = vec![r.messages[0].clone(), r.messages[1].clone()];
        kept.extend(keep_last(r, 0));
        Ok(Some(kept))
    });
    let backend = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Oslo"})),
        MockReply::text("Sunny."),
    ]);
    backend.set_context_size(120);
    let agent = Agent::with_backend(backend, Config::default()).unwrap();
    agent.set_hooks(Some(hooks.clone()));
    agent.register_tool(weather);
    let mut levels = Vec::new();
    for n in 0..5 {
        levels.extend(chat(&agent, &numbered(n)).into_iter().map(|c| c.0));
    }
    assert_eq!(levels, [CompactionLevel::Fifo]);
    let errors = hooks.errors.lock().unwrap().clone();
    assert!(
        errors[0].contains(
            "out of order: invalid message sequence: tool call `call_1` has no result yet"
        ),
        "{errors:?}"
    );
}
