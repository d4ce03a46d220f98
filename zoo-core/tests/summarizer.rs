//! A model-written summary (config `summarizer`) for level 2 of the
//! compaction cascade and for tool results over `max_tool_result_tokens`,
//! on the mock: the summarizer's text replaces the one-line summary and the
//! head-and-tail cut, it is shown the messages as a transcript, and when it
//! fails the built-in summary or cut is used instead.

use std::sync::{Arc, Mutex};

use serde_json::json;
use zoo_core::context::{CompactSettings, CompactionLevel, ContextStrategy, SummarizerConfig};
use zoo_core::{
    Agent, ChatOptions, Config, ErrorCode, EventKind, Message, MockBackend, MockProvider,
    MockReply, Tool, ToolCall,
};

fn call(id: &str, city: &str) -> Message {
    Message::assistant_with_tool_calls(
        "",
        vec![ToolCall {
            id: id.into(),
            name: "get_weather".into(),
            arguments: json!({"city": city}),
        }],
    )
}

/// Two old tool turns and a short one; about 260 mock tokens.
fn history() -> Vec<Message> {
    vec![
        Message::user("What is the weather in Oslo?"),
        call("call_1", "Oslo"),
        Message::tool("call_1", "get_weather", vec!["sunny"; 120].join(" ")),
        Message::assistant("It is sunny in Oslo."),
        Message::user("And in Bergen?"),
        call("call_2", "Bergen"),
        Message::tool("call_2", "get_weather", vec!["rain"; 40].join(" ")),
        Message::assistant("It rains in Bergen."),
        Message::user("Thanks."),
        Message::assistant("You are welcome."),
    ]
}

fn summarizer(replies: Vec<MockReply>) -> SummarizerConfig {
    SummarizerConfig {
        provider: Some(MockProvider::new(replies).into()),
        ..SummarizerConfig::default()
    }
}

/// An agent on a 200-token mock window (a budget of 150) running the
/// cascade with level 1 off (its limit above every result), so that
/// level 2 runs on whole results.
fn compacting_agent(summarizer: Option<SummarizerConfig>) -> Agent {
    let backend = MockBackend::new();
    backend.set_context_size(200);
    let mut config =
        Config::default().context_strategy(ContextStrategy::Compact(CompactSettings {
            keep_recent: 2,
            keep_first: 0,
            tool_result_tokens: 1000,
            target_percent: 100,
        }));
    config.summarizer = summarizer;
    let agent = Agent::with_backend(backend, config).unwrap();
    agent.set_history(history()).unwrap();
    agent
}

/// Chats once, returning the levels of the passes.
fn chat_levels(agent: &Agent) -> Vec<CompactionLevel> {
    let levels = Arc::new(Mutex::new(Vec::new()));
    let seen = levels.clone();
    let options = ChatOptions::new().on_event(move |event| {
        if let EventKind::HistoryCompacted { level, .. } = event.kind {
            seen.lock().unwrap().push(level);
        }
    });
    agent.chat("One more question.", options).wait().unwrap();
    let levels = levels.lock().unwrap().clone();
    levels
}

#[test]
fn level_2_takes_the_summarizers_text_for_each_call() {
    let agent = compacting_agent(Some(summarizer(vec![
        MockReply::text("Oslo was sunny."),
        MockReply::text("Bergen had rain."),
    ])));
    assert_eq!(chat_levels(&agent), [CompactionLevel::Summarize]);
    let history = agent.history();
    assert_eq!(history[1], Message::assistant("[summary] Oslo was sunny."));
    assert_eq!(history[3], Message::assistant("[summary] Bergen had rain."));
    assert_eq!(history.len(), 8);
}

#[test]
fn the_summarizer_is_shown_the_span_as_a_transcript() {
    // A mock without replies echoes what it was asked.
    let agent = compacting_agent(Some(summarizer(Vec::new())));
    // The echoed requests are long, so the last resort then drops the
    // first turn: the Bergen call's summary is left.
    assert_eq!(
        chat_levels(&agent),
        [CompactionLevel::Summarize, CompactionLevel::KeepNewest]
    );
    let summary = &agent.history()[1].content;
    assert!(
        summary.starts_with(
            "[summary] echo: Summarize this part of the conversation in at most 60 words:\n"
        ),
        "{summary}"
    );
    assert!(
        summary.contains("assistant called get_weather({\"city\":\"Bergen\"})"),
        "{summary}"
    );
    assert!(
        summary.contains("result of get_weather: rain rain"),
        "{summary}"
    );
    assert!(
        summary.ends_with("assistant: It rains in Bergen."),
        "{summary}"
    );
}

#[test]
fn a_failing_summarizer_leaves_the_one_line_summary() {
    let agent = compacting_agent(Some(summarizer(vec![MockReply::Fail(
        zoo_core::Error::InferenceFailed("the summarizer is down".into()),
    )])));
    assert_eq!(chat_levels(&agent), [CompactionLevel::Summarize]);
    let first = &agent.history()[1].content;
    assert!(
        first.starts_with("[called get_weather({\"city\":\"Oslo\"}) -> sunny sunny"),
        "{first}"
    );
}

fn weather_report() -> Tool {
    Tool::new(
        "get_weather",
        "Weather report",
        json!({"type": "object", "properties": {}}),
        |_| Ok(json!(vec!["sunny"; 3000].join(" "))),
    )
    .unwrap()
}

/// The tool message a 3000-word result becomes under a 40-token limit.
fn stored_result(summarizer: Option<SummarizerConfig>) -> String {
    let backend = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({})),
        MockReply::text("Done."),
    ]);
    let mut config = Config::default().max_tool_result_tokens(40);
    config.summarizer = summarizer;
    let agent = Agent::with_backend(backend, config).unwrap();
    agent.register_tool(weather_report());
    agent.chat("weather?", ChatOptions::new()).wait().unwrap();
    agent.history()[2].content.clone()
}

#[test]
fn a_long_tool_result_is_summarized_when_there_is_a_summarizer() {
    let summary = stored_result(Some(summarizer(vec![MockReply::text("Sunny all week.")])));
    assert_eq!(summary, "[summary of a 3004-token result] Sunny all week.");
    // Without one, or when it fails, the head and tail.
    let cut = stored_result(None);
    assert!(cut.contains("tokens cut"), "{cut}");
    let failed = stored_result(Some(summarizer(vec![MockReply::Fail(
        zoo_core::Error::InferenceFailed("down".into()),
    )])));
    assert!(failed.contains("tokens cut"), "{failed}");
    // A summary longer than the limit is cut too.
    let long = stored_result(Some(summarizer(vec![MockReply::text(
        vec!["cloudy"; 200].join(" "),
    )])));
    assert!(
        long.starts_with("[summary of a 3004-token result] cloudy"),
        "{long}"
    );
    assert!(long.contains("tokens cut"), "{long}");
}

#[test]
fn the_summarizer_config_is_checked() {
    let err = Config::from_json(r#"{"summarizer": {"max_tokens": 2}}"#).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert!(err.to_string().contains("`summarizer.max_tokens`"), "{err}");
    let err = Config::from_json(r#"{"summarizer": {"model": "x"}}"#).unwrap_err();
    assert!(
        err.to_string().contains("`summarizer.model`: unknown key"),
        "{err}"
    );
    let err = Config::from_json(r#"{"summarizer": "yes"}"#).unwrap_err();
    assert!(err.to_string().contains("expected null or {"), "{err}");
    let config = Config::from_json(
        r#"{"summarizer": {"provider": {"type": "mock", "replies": ["ok"]}, "max_tokens": 64}}"#,
    )
    .unwrap();
    assert_eq!(config.summarizer.as_ref().unwrap().max_tokens, 64);
    // Without a provider it runs on the agent's own model: an agent on a
    // backend given in code has none.
    let config = Config::default().summarizer(Some(SummarizerConfig::default()));
    let err = Agent::with_backend(MockBackend::new(), config).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert!(err.to_string().contains("`summarizer`"), "{err}");
}

/// Without a `provider`, an agent on a provider (here the mock, which
/// echoes what it is asked) has its summaries written on a connection of
/// its own to that provider.
#[test]
fn without_a_provider_the_summarizer_is_the_agents_own_provider() {
    let mut config = Config::default()
        .provider(MockProvider::new(Vec::<MockReply>::new()))
        .context_size(400)
        .context_strategy(ContextStrategy::Compact(CompactSettings {
            keep_recent: 2,
            keep_first: 0,
            tool_result_tokens: 1000,
            target_percent: 100,
        }));
    config.summarizer = Some(SummarizerConfig {
        max_tokens: 16,
        ..SummarizerConfig::default()
    });
    let agent = Agent::create(config).unwrap();
    let mut long = history();
    // A window of 400 holds the old turns: make them longer than its
    // budget (400 less the 100 kept for the reply).
    long[2] = Message::tool("call_1", "get_weather", vec!["sunny"; 300].join(" "));
    agent.set_history(long).unwrap();
    let levels = chat_levels(&agent);
    assert_eq!(levels[0], CompactionLevel::Summarize, "{levels:?}");
    let history = agent.history();
    let summaries: Vec<&str> = history
        .iter()
        .filter_map(|m| m.content.strip_prefix("[summary] echo: "))
        .collect();
    assert!(!summaries.is_empty(), "{history:#?}");
    assert!(
        summaries
            .iter()
            .all(|s| s.starts_with("Summarize this part of the conversation in at most 12 words:")),
        "{summaries:?}"
    );
}

/// A host written in the host's language with nothing to say.
struct Silent;

impl zoo_core::HostModel for Silent {
    fn generate(
        &mut self,
        _request: &zoo_core::HostRequest,
        _sink: &zoo_core::HostSink,
    ) -> Result<(), String> {
        Ok(())
    }
}

/// An agent on a host backend has no model to share: a summarizer
/// without a provider is refused when the agent is created, naming the key.
#[test]
fn a_summarizer_without_a_provider_needs_a_model_to_share() {
    let mut config = Config::default().summarizer(Some(SummarizerConfig::default()));
    let err = Agent::with_host_backend(Silent, config.clone()).unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
    assert!(
        err.to_string()
            .starts_with("invalid config `summarizer`: without a `provider`"),
        "{err}"
    );
    // With a provider of its own, the host's agent summarizes.
    config.summarizer = Some(summarizer(vec![MockReply::text("ok")]));
    Agent::with_host_backend(Silent, config).unwrap();
}

/// Stops the chat from the hook that runs just before the window is fitted.
struct StopBeforeTheFit(zoo_core::CancelToken);

impl zoo_core::Hooks for StopBeforeTheFit {
    fn before_turn(&self, _turn: u32) -> Result<zoo_core::TurnDecision, String> {
        self.0.cancel();
        Ok(zoo_core::TurnDecision::Continue)
    }
}

/// A chat stopped while its history is being compacted does not wait for
/// the summary (here a reply of a minute a word): the summarizer's reply is
/// cancelled with the chat, which ends as stopped with its history as it
/// was.
#[test]
fn a_stop_does_not_wait_for_the_summary() {
    let mut slow = MockProvider::new(vec![MockReply::text("Oslo was sunny all week.")]);
    slow.piece_delay_ms = 60_000;
    let agent = compacting_agent(Some(SummarizerConfig {
        provider: Some(slow.into()),
        ..SummarizerConfig::default()
    }));
    let token = zoo_core::CancelToken::new();
    let events = Arc::new(Mutex::new(Vec::new()));
    let seen = events.clone();
    let options = ChatOptions::new()
        .cancel_token(token.clone())
        .hooks(Arc::new(StopBeforeTheFit(token)))
        .on_event(move |event| seen.lock().unwrap().push(event.kind.clone()));
    let started = std::time::Instant::now();
    let response = agent.chat("One more question.", options).wait().unwrap();
    assert_eq!(response.stop_reason, zoo_core::StopReason::Cancelled);
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    // Level 2 ran (and asked the summarizer); a stopped chat's
    // compaction is not kept, and no summary entered the history.
    assert!(events.lock().unwrap().iter().any(|kind| matches!(
        kind,
        EventKind::HistoryCompacted {
            level: CompactionLevel::Summarize,
            ..
        }
    )));
    let kept = agent.history();
    assert_eq!(kept[..10], history()[..]);
    assert!(
        kept.iter().all(|m| !m.content.starts_with("[summary]")),
        "{kept:#?}"
    );
}
