//! The compaction cascade: each level and its boundaries on hand-built
//! histories (a token is a word here), a property test that the result
//! fits and keeps calls with their results, a long chat on the mock whose
//! history stays bounded, and tool-result hygiene.

use proptest::prelude::*;
use serde_json::json;
use zoo_core::context::{compact, CompactSettings, CompactionLevel, Entry};
use zoo_core::{
    Agent, ChatOptions, Config, EventKind, Message, MockBackend, MockReply, Role, Tool, ToolCall,
};

fn words(message: &Message) -> u32 {
    let calls: usize = message
        .tool_calls
        .iter()
        .map(|c| 2 + c.arguments.to_string().split_whitespace().count())
        .sum();
    (message.content.split_whitespace().count() + calls + 1) as u32
}

fn entry(message: Message) -> Entry {
    Entry {
        tokens: words(&message),
        message,
        position: None,
    }
}

fn call(id: &str, name: &str) -> Message {
    Message::assistant_with_tool_calls(
        "",
        vec![ToolCall {
            id: id.into(),
            name: name.into(),
            arguments: json!({"city": "Paris"}),
        }],
    )
}

fn result(id: &str, text: &str) -> Message {
    Message::tool(id, "weather", text)
}

/// A turn with a tool call whose result has `size` words.
fn tool_turn(n: usize, size: usize) -> Vec<Message> {
    let id = format!("call_{n}");
    vec![
        Message::user(format!("question {n}")),
        call(&id, "weather"),
        result(&id, &vec!["sunshine"; size].join(" ")),
        Message::assistant(format!("answer {n}")),
    ]
}

fn total(entries: &[Entry]) -> u32 {
    entries.iter().map(|e| e.tokens).sum()
}

fn run(
    messages: Vec<Message>,
    budget: u32,
    keep_from: usize,
    settings: CompactSettings,
) -> (Vec<Entry>, zoo_core::context::Compaction) {
    let mut entries: Vec<Entry> = messages.into_iter().map(entry).collect();
    let done = compact(&mut entries, 0, budget, keep_from, &settings, &mut |m| {
        Ok(words(m))
    })
    .unwrap();
    (entries, done)
}

fn levels(done: &zoo_core::context::Compaction) -> Vec<CompactionLevel> {
    done.passes.iter().map(|p| p.level).collect()
}

fn settings(keep_recent: u32, keep_first: u32, tool_result_tokens: u32) -> CompactSettings {
    CompactSettings {
        keep_recent,
        keep_first,
        tool_result_tokens,
        target_percent: 100,
    }
}

#[test]
fn level_1_cuts_old_tool_results_to_head_and_tail() {
    let mut messages: Vec<Message> = (0..3).flat_map(|n| tool_turn(n, 300)).collect();
    messages.push(Message::user("now"));
    let keep_from = messages.len() - 1;
    let before: u32 = messages.iter().map(words).sum();
    let (entries, done) = run(messages, before - 300, keep_from, settings(4, 2, 50));
    assert_eq!(levels(&done), [CompactionLevel::TruncateToolResults]);
    let pass = &done.passes[0];
    assert_eq!(pass.removed.len(), 2, "the newest turn's result is kept");
    assert!(pass.tokens_after < pass.tokens_before);
    assert!(entries[2].message.content.contains("tokens cut"));
    assert!(entries[2].tokens <= 50, "{}", entries[2].tokens);
    assert_eq!(
        entries[10].tokens, 301,
        "keep_recent protects the last turn"
    );
    assert_eq!(entries.last().unwrap().message.content, "now");
    assert_eq!(done.first_changed, Some(2));
}

#[test]
fn level_2_summarizes_old_calls_into_the_reply_that_follows() {
    let mut messages: Vec<Message> = (0..4).flat_map(|n| tool_turn(n, 40)).collect();
    messages.push(Message::user("now"));
    let keep_from = messages.len() - 1;
    let before: u32 = messages.iter().map(words).sum();
    let (entries, done) = run(messages, before - 40, keep_from, settings(2, 2, 1000));
    assert_eq!(levels(&done), [CompactionLevel::Summarize]);
    // Turns 0-2 summarized (user + one assistant each), turn 3 whole, "now".
    let roles: Vec<Role> = entries.iter().map(|e| e.message.role).collect();
    assert_eq!(
        roles[..6],
        [
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant,
            Role::User,
            Role::Assistant
        ]
    );
    let summary = &entries[1].message.content;
    assert!(
        summary.starts_with("[called weather({\"city\":\"Paris\"}) -> sunshine sunshine"),
        "{summary}"
    );
    assert!(summary.ends_with("answer 0"), "{summary}");
    assert!(entries[1].message.tool_calls.is_empty());
    assert_eq!(done.removed_before_turn, 6);
}

#[test]
fn level_3_drops_the_middle_and_says_so() {
    let mut messages = Vec::new();
    for n in 0..10 {
        messages.push(Message::user(format!("question {n} with some words in it")));
        messages.push(Message::assistant(format!(
            "answer {n} with some words too"
        )));
    }
    messages.push(Message::user("now"));
    let keep_from = messages.len() - 1;
    let (entries, done) = run(messages, 60, keep_from, settings(4, 2, 1000));
    assert_eq!(levels(&done), [CompactionLevel::DropMiddle]);
    assert_eq!(
        entries[0].message.content,
        "question 0 with some words in it"
    );
    assert!(entries[1]
        .message
        .content
        .ends_with("[14 earlier messages were removed to fit the context window]"));
    assert_eq!(
        entries[2].message.content,
        "question 8 with some words in it"
    );
    assert_eq!(entries.len(), 7);
    assert!(total(&entries) <= 60);
}

#[test]
fn level_4_keeps_the_newest_when_nothing_else_is_left() {
    // Fewer messages than keep_recent: no level but the last applies.
    let messages = vec![
        Message::user(vec!["x"; 100].join(" ")),
        Message::assistant("ok"),
        Message::user("now"),
    ];
    let (entries, done) = run(messages, 10, 2, settings(6, 2, 1000));
    assert_eq!(levels(&done), [CompactionLevel::KeepNewest]);
    assert_eq!(entries.len(), 1);
    assert_eq!(entries[0].message.content, "now");
}

#[test]
fn exactly_at_the_budget_nothing_happens() {
    let messages: Vec<Message> = tool_turn(0, 30);
    let budget: u32 = messages.iter().map(words).sum();
    let (entries, done) = run(messages.clone(), budget, 4, settings(0, 0, 5));
    assert!(done.passes.is_empty());
    assert_eq!(entries.len(), messages.len());
    let (_, done) = run(messages, budget - 1, 4, settings(0, 0, 5));
    assert_eq!(levels(&done), [CompactionLevel::TruncateToolResults]);
}

#[test]
fn the_current_turn_is_never_touched_even_when_it_does_not_fit() {
    let mut messages = tool_turn(0, 10);
    messages.extend(tool_turn(1, 500));
    let (entries, done) = run(messages, 100, 4, settings(0, 0, 20));
    assert!(levels(&done).contains(&CompactionLevel::KeepNewest));
    assert_eq!(entries.len(), 4, "only the current turn is left");
    assert_eq!(entries[2].tokens, 501, "its result is whole");
}

/// Histories of whole turns: a user message, then replies, some with calls
/// answered by results.
fn turns() -> impl Strategy<Value = Vec<Message>> {
    prop::collection::vec((0usize..3, 0usize..60, 0usize..30), 1..25).prop_map(|turns| {
        let mut messages = Vec::new();
        for (n, (calls, result_size, text)) in turns.into_iter().enumerate() {
            messages.push(Message::user(vec!["u"; text + 1].join(" ")));
            for c in 0..calls {
                let id = format!("call_{n}_{c}");
                messages.push(call(&id, "weather"));
                messages.push(result(&id, &vec!["r"; result_size + 1].join(" ")));
            }
            messages.push(Message::assistant(vec!["a"; text + 1].join(" ")));
        }
        messages
    })
}

proptest! {
    #[test]
    fn the_result_fits_and_keeps_calls_with_their_results(
        messages in turns(),
        budget in 20u32..800,
        keep_recent in 0u32..8,
        keep_first in 0u32..6,
        tool_result_tokens in 16u32..80,
    ) {
        let keep_from = messages.iter().rposition(|m| m.role == Role::User).unwrap();
        let current: Vec<Message> = messages[keep_from..].to_vec();
        let current_tokens: u32 = current.iter().map(words).sum();
        let settings = CompactSettings { keep_recent, keep_first, tool_result_tokens, target_percent: 100 };
        let (entries, done) = run(messages, budget, keep_from, settings);
        let kept: Vec<Message> = entries[keep_from - done.removed_before_turn..]
            .iter().map(|e| e.message.clone()).collect();
        prop_assert_eq!(kept, current, "the current turn changed");
        prop_assert!(total(&entries) <= budget.max(current_tokens));
        for (i, e) in entries.iter().enumerate() {
            if let Some(id) = &e.message.tool_call_id {
                let answered = entries[..i].iter().rev()
                    .find(|p| p.message.role == Role::Assistant)
                    .is_some_and(|p| p.message.tool_calls.iter().any(|c| &c.id == id));
                prop_assert!(answered, "result {} lost its call", id);
            }
        }
    }
}

fn weather_tool(size: usize) -> Tool {
    Tool::new(
        "weather",
        "Weather report",
        json!({"type": "object"}),
        move |_| Ok(json!(vec!["sunny"; size].join(" "))),
    )
    .unwrap()
}

#[test]
fn a_long_chat_with_compaction_stays_bounded() {
    let backend = MockBackend::new();
    backend.set_context_size(2000);
    let mut script = Vec::new();
    for _ in 0..1000 {
        script.push(MockReply::tool_call("weather", json!({})));
        script.push(MockReply::text("It is sunny."));
    }
    backend.push_replies(script);
    let config = Config::default().max_tokens(32).context_strategy(
        zoo_core::context::ContextStrategy::Compact(CompactSettings::default()),
    );
    let agent = Agent::with_backend(backend, config).unwrap();
    agent.register_tool(weather_tool(300));
    let mut levels = std::collections::BTreeSet::new();
    let mut longest = 0;
    for turn in 0..1000 {
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let sink = seen.clone();
        let options = ChatOptions::new().on_event(move |e| {
            if let EventKind::HistoryCompacted { level, .. } = &e.kind {
                sink.lock().unwrap().push(*level);
            }
        });
        let response = agent
            .chat(format!("weather for day {turn}?"), options)
            .wait()
            .unwrap();
        assert_eq!(response.text, "It is sunny.");
        levels.extend(seen.lock().unwrap().iter().copied());
        longest = longest.max(agent.history().len());
    }
    assert!(longest < 60, "the history grew to {longest} messages");
    assert!(
        levels.contains(&CompactionLevel::TruncateToolResults),
        "{levels:?}"
    );
    let history = agent.history();
    assert_eq!(history.last().unwrap().content, "It is sunny.");
}

#[test]
fn a_huge_tool_result_is_cut_before_it_enters_the_history() {
    let backend = MockBackend::with_script([
        MockReply::tool_call("weather", json!({})),
        MockReply::text("Done."),
    ]);
    let config = Config::default().max_tool_result_tokens(40);
    let agent = Agent::with_backend(backend, config).unwrap();
    agent.register_tool(weather_tool(5000));
    agent.chat("weather?", ChatOptions::new()).wait().unwrap();
    let stored = &agent.history()[2];
    assert_eq!(stored.role, Role::Tool);
    assert!(stored.content.contains("tokens cut"), "{}", stored.content);
    assert!(
        stored.content.len() < 1000,
        "{} bytes kept",
        stored.content.len()
    );
    assert!(
        stored.content.starts_with("sunny sunny"),
        "{}",
        stored.content
    );
    assert!(stored.content.ends_with("sunny"), "{}", stored.content);
}

#[test]
fn config_json_reads_the_strategy_and_names_bad_keys() {
    let config =
        Config::from_json(r#"{"context_strategy": {"compact": {"keep_recent": 3}}}"#).unwrap();
    assert_eq!(
        config.context_strategy,
        zoo_core::context::ContextStrategy::Compact(CompactSettings {
            keep_recent: 3,
            ..CompactSettings::default()
        })
    );
    let err =
        Config::from_json(r#"{"context_strategy": {"compact": {"keep_recnt": 3}}}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid config `context_strategy.compact.keep_recnt`: unknown key"),
        "{err}"
    );
    let err = Config::from_json(r#"{"context_strategy": "lru"}"#).unwrap_err();
    assert!(
        err.to_string()
            .starts_with("invalid config `context_strategy`: expected \"fifo\" or"),
        "{err}"
    );
}
