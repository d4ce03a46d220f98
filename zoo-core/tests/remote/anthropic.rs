//! The Anthropic Messages backend on the fake server, with streams shaped
//! like the API's own (`event:` and `data:` lines, `message_start` ...
//! `message_stop`, pings between): text, two parallel calls, thinking,
//! cache usage, retries and their events, a dropped stream, a malformed
//! event, overflow with compaction, cancellation and credentials.

use super::*;
use zoo_core::{AnthropicProvider, ThinkingLevel};

const MODEL: &str = "claude-sonnet-4-5";

fn provider(server: &FakeServer) -> AnthropicProvider {
    AnthropicProvider::new(MODEL).base_url(&server.root)
}

fn agent_on(server: &FakeServer) -> Agent {
    Agent::create(Config::default().provider(provider(server))).expect("agent starts")
}

/// A stream of these text pieces, as Anthropic sends one.
fn text_stream(pieces: &[&str]) -> Vec<String> {
    let mut events = vec![
        r#"event: message_start
data: {"type":"message_start","message":{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-5-20250929","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":20,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}}"#
            .to_string(),
        r#"event: content_block_start
data: {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}"#
            .to_string(),
    ];
    for piece in pieces {
        events.push(format!(
            "event: content_block_delta\ndata: {}",
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": piece}})
        ));
    }
    events.push(
        "event: content_block_stop\ndata: {\"type\":\"content_block_stop\",\"index\":0}".into(),
    );
    events.push(r#"event: message_delta
data: {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":5}}"#.into());
    events.push("event: message_stop\ndata: {\"type\":\"message_stop\"}".into());
    events
}

fn error_body(kind: &str, message: &str) -> String {
    json!({"type": "error", "error": {"type": kind, "message": message}}).to_string()
}

#[test]
fn text_streams_in_pieces_with_cache_usage_and_the_agents_settings() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("anthropic_text_split"))]);
    let config = Config::default()
        .temperature(0.2)
        .top_p(0.9)
        .seed(7)
        .max_tokens(100)
        .stop(vec!["</end>".to_string()])
        .system_prompt("Be brief.")
        .provider(
            provider(&server)
                .api_key("sk-ant-test-key")
                .header("X-Team", "zoo"),
        );
    let agent = Agent::create(config).unwrap();
    let chat = chat_recording(&agent, "Say hello");
    assert_eq!(chat.kinds(), PLAIN_CHAT);
    let response = chat.result.as_ref().unwrap();
    assert_eq!(response.text, "Hello, world ☀!");
    assert_eq!(chat.pieces, ["Hello", ", wo", "rld ☀", "!"]);
    assert_eq!(response.stop_reason, StopReason::Stop);
    // input 10 + cache write 200 + cache read 1024.
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.cached_tokens,
            response.usage.completion_tokens,
            response.usage.total_tokens
        ),
        (1234, 1024, 6, 1240)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.path, "/v1/messages");
    assert_eq!(request.headers["x-api-key"], "sk-ant-test-key");
    assert_eq!(request.headers["anthropic-version"], "2023-06-01");
    assert_eq!(request.headers["x-team"], "zoo");
    assert!(!request.headers.contains_key("authorization"));
    assert_eq!(
        request.body,
        json!({
            "model": MODEL,
            "max_tokens": 100,
            "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": [{"type": "text", "text": "Say hello"}]}],
            "stream": true,
            "temperature": 0.2,
            "stop_sequences": ["</end>"],
        })
    );
}

#[test]
fn two_parallel_calls_from_split_input_json_both_run_and_results_go_back_in_one_message() {
    let server = FakeServer::start(vec![
        Answer::Stream(fixture("anthropic_two_calls")),
        Answer::Stream(fixture("anthropic_answer_after_tools")),
    ]);
    let agent = agent_on(&server);
    agent.register_tool(weather_tool());
    agent.register_tool(add_tool());
    let chat = chat_recording(&agent, "Weather in Paris, and 2 + 40?");
    assert_eq!(
        chat.kinds(),
        [
            "chat_started",
            "turn_started",
            "turn_finished",
            "tool_call_started",
            "tool_call_finished",
            "tool_call_started",
            "tool_call_finished",
            "turn_started",
            "turn_finished",
            "chat_finished"
        ]
    );
    let response = chat.result.as_ref().unwrap();
    assert_eq!(response.text, "It is 17 degrees in Paris, and 2 + 40 = 42.");
    assert_eq!(
        chat.pieces.concat(),
        "I'll check both.It is 17 degrees in Paris, and 2 + 40 = 42."
    );
    let calls: Vec<(&str, &str, Value, Option<Value>)> = response
        .tool_calls
        .iter()
        .map(|c| {
            (
                c.id.as_str(),
                c.name.as_str(),
                c.arguments.clone(),
                c.result.clone(),
            )
        })
        .collect();
    assert_eq!(
        calls,
        [
            (
                "call_1",
                "get_weather",
                json!({"city": "Paris"}),
                Some(json!({"city": "Paris", "temperature_celsius": 17}))
            ),
            ("call_2", "add", json!({"a": 2, "b": 40}), Some(json!(42))),
        ]
    );
    assert!(
        response.tool_errors.is_empty(),
        "{:?}",
        response.tool_errors
    );
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.cached_tokens,
            response.usage.completion_tokens
        ),
        (150 + 128 + 230, 128, 40 + 15)
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert_eq!(
        requests[0].body["tools"],
        json!([
            {"name": "get_weather", "description": "Current weather for a city",
             "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            {"name": "add", "description": "Add two integers",
             "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                              "required": ["a", "b"]},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
    assert_eq!(requests[0].body["tool_choice"], json!({"type": "auto"}));
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Weather in Paris, and 2 + 40?"}]},
            {"role": "assistant", "content": [
                {"type": "text", "text": "I'll check both."},
                {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                {"type": "tool_use", "id": "call_2", "name": "add", "input": {"a": 2, "b": 40},
                 "cache_control": {"type": "ephemeral"}},
            ]},
            {"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": "call_1", "content": "{\"city\":\"Paris\",\"temperature_celsius\":17}"},
                {"type": "tool_result", "tool_use_id": "call_2", "content": "42"},
            ]},
        ])
    );
    assert_eq!(
        roles(&agent.history()),
        ["user", "assistant", "tool", "tool", "assistant"]
    );
}

#[test]
fn thinking_stays_out_of_the_text_and_its_signed_block_goes_back_with_the_call() {
    let server = FakeServer::start(vec![
        Answer::Stream(fixture("anthropic_thinking_call")),
        Answer::Stream(fixture("anthropic_thinking_answer")),
        Answer::Stream(fixture("anthropic_thinking_call")),
    ]);
    let agent = Agent::create(
        Config::default()
            .temperature(0.5)
            .provider(provider(&server).thinking(ThinkingLevel::Low)),
    )
    .unwrap();
    agent.register_tool(weather_tool());
    let chat = chat_recording(&agent, "Weather in Paris?");
    let response = chat.result.as_ref().unwrap();
    assert_eq!(response.text, "17 degrees in Paris.");
    assert_eq!(chat.pieces, ["17 degrees in Paris."]);
    assert_eq!(response.tool_calls.len(), 1);
    let requests = server.requests();
    for request in &requests {
        assert_eq!(
            request.body["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(request.body["max_tokens"], 4096 + 1024);
        assert!(request.body.get("temperature").is_none());
    }
    assert_eq!(
        requests[1].body["messages"][1]["content"],
        json!([
            {"type": "thinking", "thinking": "The user wants the weather in Paris.",
             "signature": "EvQBCkYICxgCKkAxhD4NUKFzudtZ6NzbZdEiBACIScTzqjPViM596iWLZIk4EFKYYBj3B6Ptl3b0dcQv"},
            {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"},
             "cache_control": {"type": "ephemeral"}},
        ])
    );
    // The history keeps the reply, not its thinking.
    assert_eq!(agent.history()[1].content, "");
    assert!(agent
        .history()
        .iter()
        .all(|m| !m.content.contains("The user wants")));

    // The backend alone: the thinking is its last reasoning.
    let mut backend = RemoteBackend::anthropic(
        &provider(&server).thinking(ThinkingLevel::Low),
        &Config::default(),
    )
    .unwrap();
    let messages = [Message::user("Weather in Paris?")];
    let tools = [weather_tool().definition().clone()];
    let request = GenerateRequest {
        messages: &messages,
        tools: &tools,
        tool_choice: &ToolChoice::Auto,
        max_tokens: None,
        max_calls: 1,
        stop: &[],
        cache_hint: CacheHint::default(),
        deadline: None,
    };
    let generation = backend
        .generate(&request, &mut |_| {}, &zoo_core::CancelToken::new())
        .unwrap();
    assert_eq!(generation.text, "");
    assert_eq!(
        backend.last_reasoning(),
        "The user wants the weather in Paris."
    );
    assert_eq!(
        backend.take_tool_calls()[0].arguments,
        r#"{"city": "Paris"}"#
    );
    assert_eq!(
        (generation.prompt_tokens, generation.completion_tokens),
        (69, 53)
    );
}

#[test]
fn a_rate_limit_waits_as_retry_after_says_and_is_a_retry_event() {
    let server = FakeServer::start(vec![
        Answer::Status {
            status: 429,
            headers: vec![("retry-after".into(), "1".into())],
            body: error_body(
                "rate_limit_error",
                "Number of request tokens has exceeded your per-minute rate limit",
            ),
        },
        Answer::Stream(text_stream(&["After ", "waiting."])),
    ]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(chat.result.as_ref().unwrap().text, "After waiting.");
    assert_eq!(
        chat.kinds(),
        [
            "chat_started",
            "turn_started",
            "retry",
            "turn_finished",
            "chat_finished"
        ]
    );
    assert_eq!(
        chat.of_kind("retry"),
        [
            json!({"attempt": 1, "max_retries": 2, "delay_ms": 1000, "status": 429,
                "reason": "HTTP 429: Number of request tokens has exceeded your per-minute rate limit"})
        ]
    );
    let seqs: Vec<u64> = chat.events.iter().map(|e| e.seq).collect();
    assert_eq!(seqs, [0, 1, 2, 3, 4]);
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
    assert_eq!(requests[0].body, requests[1].body);
}

#[test]
fn a_server_error_then_an_overload_in_the_stream_are_retried_with_backoff() {
    let server = FakeServer::start(vec![
        Answer::status(500, &error_body("api_error", "Internal server error")),
        Answer::Stream(fixture("anthropic_overloaded")),
        Answer::Stream(text_stream(&["Fine now."])),
    ]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(chat.result.as_ref().unwrap().text, "Fine now.");
    let retries = chat.of_kind("retry");
    assert_eq!(retries.len(), 2, "{retries:?}");
    assert_eq!(retries[0]["status"], 500);
    assert_eq!(retries[0]["reason"], "HTTP 500: Internal server error");
    // The first backoff is 250 to 500 ms, the second 500 to 1000 ms.
    let first = retries[0]["delay_ms"].as_u64().unwrap();
    assert!((250..=500).contains(&first), "{first}");
    assert_eq!(
        (retries[1]["attempt"].clone(), retries[1]["status"].clone()),
        (json!(2), Value::Null)
    );
    assert_eq!(
        retries[1]["reason"],
        "the server reported an error: Overloaded"
    );
    let second = retries[1]["delay_ms"].as_u64().unwrap();
    assert!((500..=1000).contains(&second), "{second}");
    let requests = server.requests();
    assert_eq!(requests.len(), 3);
    assert!(requests[1].at - requests[0].at >= Duration::from_millis(250));
}

#[test]
fn failures_name_the_provider_the_status_and_the_servers_text() {
    let server = FakeServer::start(vec![
        Answer::status(529, &error_body("overloaded_error", "Overloaded")),
        Answer::status(529, &error_body("overloaded_error", "Overloaded")),
        Answer::status(
            400,
            &error_body(
                "invalid_request_error",
                "messages: text content blocks must be non-empty",
            ),
        ),
    ]);
    let agent =
        Agent::create(Config::default().provider(provider(&server).max_retries(1))).unwrap();
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(
        chat.result.as_ref().unwrap_err().to_string(),
        format!(
            "provider anthropic ({}) failed with HTTP 529: Overloaded (gave up after 2 attempts)",
            server.root
        )
    );
    assert_eq!(
        chat.kinds(),
        [
            "chat_started",
            "turn_started",
            "retry",
            "turn_finished",
            "chat_finished"
        ]
    );
    assert_eq!(chat.of_kind("chat_finished")[0]["stop_reason"], "error");
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error,
        Error::ProviderFailed {
            provider: format!("anthropic ({})", server.root),
            status: Some(400),
            message: "messages: text content blocks must be non-empty".into()
        }
    );
    assert_eq!(server.requests().len(), 3, "a 400 is not retried");
    assert!(agent.history().is_empty());
}

#[test]
fn a_connection_dropped_mid_stream_fails_the_chat_and_the_next_one_works() {
    let server = FakeServer::start(vec![
        Answer::StreamThenDrop(fixture("anthropic_partial")),
        Answer::Stream(text_stream(&["Back again."])),
    ]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Talk");
    let error = chat.result.as_ref().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "provider anthropic ({}) failed with HTTP 200: the connection broke: ",
            server.root
        )) && text.ends_with(", after 11 bytes of the reply"),
        "{text}"
    );
    assert_eq!(chat.pieces, ["Hello", ", I am"]);
    assert_eq!(chat.kinds(), FAILED_CHAT);
    assert_eq!(chat.of_kind("chat_finished")[0]["stop_reason"], "error");
    assert_eq!(
        server.requests().len(),
        1,
        "a reply that began is not sent again"
    );
    assert!(agent.history().is_empty());
    let response = agent.chat("Again", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Back again.");
}

#[test]
fn a_malformed_event_is_a_provider_failure() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("anthropic_malformed"))]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(
        chat.result.as_ref().unwrap_err().to_string(),
        format!(
            "provider anthropic ({}) failed with HTTP 200: a stream event is not a Messages event \
             (EOF while parsing an object at line 1 column 82): {}",
            server.root,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"tial""#
        )
    );
    assert_eq!(chat.pieces, ["Par"]);
    assert_eq!(server.requests().len(), 1);
    assert!(agent.history().is_empty());
}

const TOO_LONG: &str = "prompt is too long: 208000 tokens > 200000 maximum";

#[test]
fn an_overflow_compacts_the_history_and_tries_once_more() {
    let server = FakeServer::start(vec![
        Answer::Stream(text_stream(&["One."])),
        Answer::Stream(text_stream(&["Two."])),
        Answer::status(400, &error_body("invalid_request_error", TOO_LONG)),
        Answer::Stream(text_stream(&["Three."])),
    ]);
    let agent = agent_on(&server);
    agent
        .chat("First question", ChatOptions::new())
        .wait()
        .unwrap();
    agent
        .chat("Second question", ChatOptions::new())
        .wait()
        .unwrap();
    let chat = chat_recording(&agent, "Third question");
    assert_eq!(chat.result.as_ref().unwrap().text, "Three.");
    assert_eq!(
        chat.kinds(),
        [
            "chat_started",
            "turn_started",
            "history_compacted",
            "turn_finished",
            "chat_finished"
        ]
    );
    let compacted = &chat.of_kind("history_compacted")[0];
    assert_eq!(compacted["level"], "fifo");
    assert_eq!(
        compacted["removed"],
        json!([{"role": "user", "content": "First question"}, {"role": "assistant", "content": "One."}])
    );
    assert!(compacted["tokens_after"].as_u64() < compacted["tokens_before"].as_u64());
    let requests = server.requests();
    assert_eq!(requests.len(), 4);
    assert_eq!(requests[2].body["messages"].as_array().unwrap().len(), 5);
    assert_eq!(
        requests[3].body["messages"],
        json!([
            {"role": "user", "content": [{"type": "text", "text": "Second question"}]},
            {"role": "assistant", "content": [{"type": "text", "text": "Two.", "cache_control": {"type": "ephemeral"}}]},
            {"role": "user", "content": [{"type": "text", "text": "Third question"}]},
        ])
    );
    assert_eq!(
        agent.history(),
        [
            Message::user("Second question"),
            Message::assistant("Two."),
            Message::user("Third question"),
            Message::assistant("Three."),
        ]
    );
}

#[test]
fn cancel_stops_a_stream_and_a_backoff_within_the_bound() {
    let server = FakeServer::start(vec![
        Answer::StreamThenHang(fixture("anthropic_partial")),
        Answer::Status {
            status: 429,
            headers: vec![("retry-after".into(), "100".into())],
            body: error_body("rate_limit_error", "slow down"),
        },
        Answer::Stream(text_stream(&["Next."])),
    ]);
    let agent = agent_on(&server);
    let (tx, rx) = mpsc::channel();
    let handle = agent.chat(
        "Talk",
        ChatOptions::new().on_token(move |t| {
            let _ = tx.send(t.to_string());
        }),
    );
    assert_eq!(rx.recv_timeout(HANG).unwrap(), "Hello");
    assert_eq!(rx.recv_timeout(HANG).unwrap(), ", I am");
    let stopped = Instant::now();
    agent.stop();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(response.text, "Hello, I am");

    // A backoff: the retry event says the wait began.
    let (tx, rx) = mpsc::channel();
    let handle = agent.chat(
        "Go on",
        ChatOptions::new().on_event(move |e| {
            let _ = tx.send(e.clone());
        }),
    );
    let retry = loop {
        let event = rx.recv_timeout(HANG).expect("a retry event");
        if let zoo_core::EventKind::Retry(retry) = event.kind {
            break retry;
        }
    };
    assert_eq!((retry.delay_ms, retry.status), (100_000, Some(429)));
    let stopped = Instant::now();
    handle.cancel();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(server.requests().len(), 2, "no retry after the cancel");
    assert_eq!(
        agent.chat("Again", ChatOptions::new()).wait().unwrap().text,
        "Next."
    );
}

#[test]
fn refused_credentials_are_an_authentication_error_without_the_key() {
    let key = "sk-ant-api03-very-secret-0123456789";
    let server = FakeServer::start(vec![Answer::status(
        401,
        &error_body("authentication_error", &format!("invalid x-api-key {key}")),
    )]);
    let agent = Agent::create(Config::default().provider(provider(&server).api_key(key))).unwrap();
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::AuthenticationFailed);
    assert_eq!(
        error.to_string(),
        format!(
            "provider anthropic ({}) refused the credentials (HTTP 401): invalid x-api-key [redacted]",
            server.root
        )
    );
    for shown in [
        format!("{error:?}"),
        format!("{:?}", agent.config()),
        format!("{agent:?}"),
    ] {
        assert!(!shown.contains(key), "{shown}");
    }
}

#[test]
fn the_anthropic_provider_reads_from_json_and_bad_values_name_their_key() {
    let config = Config::from_json(
        r#"{"provider": {"type": "anthropic", "model": "claude-haiku-4-5", "api_key": "k",
            "headers": {"anthropic-beta": "x"}, "thinking": "high", "max_retries": 3}}"#,
    )
    .unwrap();
    let want = AnthropicProvider::new("claude-haiku-4-5")
        .api_key("k")
        .header("anthropic-beta", "x")
        .thinking(ThinkingLevel::High)
        .max_retries(3);
    assert_eq!(want.base_url, "https://api.anthropic.com");
    assert_eq!(config.provider, Some(want.into()));
    let round_trip = serde_json::to_string(&config).unwrap();
    assert_eq!(Config::from_json(&round_trip).unwrap(), config);
    let error_of = |provider: &str| {
        Config::from_json(&format!(r#"{{"provider": {provider}}}"#))
            .unwrap_err()
            .to_string()
    };
    for (provider, want) in [
        (
            r#"{"type": "anthropic"}"#,
            "invalid config `provider.model`: is required: the model's name, such as \
             claude-sonnet-4-5 or gemini-2.5-flash",
        ),
        (
            r#"{"type": "anthropic", "model": "claude", "thinking": "max"}"#,
            r#"invalid config `provider.thinking`: expected "off", "low", "medium" or "high", got "max""#,
        ),
        (
            r#"{"type": "anthropic", "model": "claude", "base_url": "api.anthropic.com"}"#,
            "invalid config `provider.base_url`: expected an http:// or https:// URL such as \
             http://127.0.0.1:8080/v1, got \"api.anthropic.com\"",
        ),
        (
            r#"{"type": "anthropic", "model": "claude", "max_tokens_field": "max_tokens"}"#,
            "invalid config `provider.max_tokens_field`: unknown key; the anthropic provider keys \
             are `type`, `base_url`, `model`, `api_key`, `api_key_env`, `headers`, `timeout_ms`, \
             `max_retries`, `thinking`",
        ),
    ] {
        assert_eq!(error_of(provider), want, "{provider}");
    }
}
