//! The Gemini backend on the fake server, with streams shaped like
//! `streamGenerateContent?alt=sse`'s own (each event a whole
//! `GenerateContentResponse`, calls whole in their parts, usage in every
//! chunk): text, two parallel calls, thinking, cache usage, retries and
//! their events (Google's `retryDelay` too), a dropped stream, a malformed
//! chunk, overflow, cancellation and credentials.

use super::*;
use zoo_core::{GeminiProvider, ThinkingLevel};

const MODEL: &str = "gemini-2.5-flash";
const PATH: &str = "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse";

fn provider(server: &FakeServer) -> GeminiProvider {
    GeminiProvider::new(MODEL).base_url(&server.root)
}

fn agent_on(server: &FakeServer) -> Agent {
    Agent::create(Config::default().provider(provider(server))).expect("agent starts")
}

/// A stream of these text pieces, as Gemini sends one.
fn text_stream(pieces: &[&str]) -> Vec<String> {
    let last = pieces.len() - 1;
    pieces
        .iter()
        .enumerate()
        .map(|(i, piece)| {
            let mut candidate = json!({"content": {"parts": [{"text": piece}], "role": "model"}, "index": 0});
            if i == last {
                candidate["finishReason"] = json!("STOP");
            }
            format!(
                "data: {}",
                json!({"candidates": [candidate],
                       "usageMetadata": {"promptTokenCount": 20, "candidatesTokenCount": i + 1, "totalTokenCount": 21 + i},
                       "modelVersion": MODEL})
            )
        })
        .collect()
}

fn error_body(code: u16, status: &str, message: &str) -> String {
    json!({"error": {"code": code, "message": message, "status": status}}).to_string()
}

#[test]
fn text_streams_in_pieces_with_cache_usage_and_the_agents_settings() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("gemini_text_split"))]);
    let config = Config::default()
        .temperature(0.2)
        .top_p(0.9)
        .seed(7)
        .max_tokens(100)
        .stop(vec!["</end>".to_string()])
        .system_prompt("Be brief.")
        .provider(
            provider(&server)
                .api_key("AIza-test-key")
                .header("X-Team", "zoo"),
        );
    let agent = Agent::create(config).unwrap();
    let chat = chat_recording(&agent, "Say hello");
    assert_eq!(chat.kinds(), PLAIN_CHAT);
    let response = chat.result.as_ref().unwrap();
    assert_eq!(response.text, "Hello, world ☀!");
    assert_eq!(chat.pieces, ["Hello", ", wo", "rld ☀", "!"]);
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
    assert_eq!(request.path, PATH);
    assert_eq!(request.headers["x-goog-api-key"], "AIza-test-key");
    assert_eq!(request.headers["x-team"], "zoo");
    assert!(
        !request.path.contains("AIza"),
        "the key is never in the URL"
    );
    assert_eq!(
        request.body,
        json!({
            "contents": [{"role": "user", "parts": [{"text": "Say hello"}]}],
            "systemInstruction": {"parts": [{"text": "Be brief."}]},
            "generationConfig": {"temperature": 0.2, "topP": 0.9, "seed": 7, "maxOutputTokens": 100,
                                 "stopSequences": ["</end>"]},
        })
    );
}

#[test]
fn two_parallel_calls_come_whole_and_their_results_go_back_as_function_responses() {
    let server = FakeServer::start(vec![
        Answer::Stream(fixture("gemini_two_calls")),
        Answer::Stream(fixture("gemini_answer_after_tools")),
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
        chat.pieces,
        ["It is 17 degrees in Paris", ", and 2 + 40 = 42."]
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
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.cached_tokens,
            response.usage.completion_tokens
        ),
        (150 + 230, 128, 40 + 15)
    );
    let requests = server.requests();
    assert_eq!(
        requests[0].body["tools"],
        json!([{"functionDeclarations": [
            {"name": "get_weather", "description": "Current weather for a city",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}},
            {"name": "add", "description": "Add two integers",
             "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                            "required": ["a", "b"]}},
        ]}])
    );
    assert_eq!(
        requests[0].body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "AUTO"}})
    );
    assert_eq!(
        requests[1].body["contents"],
        json!([
            {"role": "user", "parts": [{"text": "Weather in Paris, and 2 + 40?"}]},
            {"role": "model", "parts": [
                {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                 "thoughtSignature": "CiQB0e2Kb7xFaTl2HM8vRZ6wb0Qy6DkVbDSpx+PRtd5qdPYXrsoKYgHR7YpvSBiR"},
                {"functionCall": {"name": "add", "args": {"a": 2, "b": 40}}},
            ]},
            {"role": "user", "parts": [
                {"functionResponse": {"name": "get_weather", "response": {"output": {"city": "Paris", "temperature_celsius": 17}}}},
                {"functionResponse": {"name": "add", "response": {"output": 42}}},
            ]},
        ])
    );
}

#[test]
fn a_forced_tool_is_any_with_its_name() {
    let server = FakeServer::start(vec![
        Answer::Stream(fixture("gemini_two_calls")),
        Answer::Stream(text_stream(&["Done."])),
    ]);
    let agent = agent_on(&server);
    agent.register_tool(weather_tool());
    agent.register_tool(add_tool());
    let response = agent
        .chat(
            "Both?",
            ChatOptions::new().tool_choice(ToolChoice::Tool("get_weather".into())),
        )
        .wait()
        .unwrap();
    assert_eq!(response.text, "Done.");
    let requests = server.requests();
    assert_eq!(
        requests[0].body["toolConfig"],
        json!({"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}})
    );
    // After the forced call ran, the model is free to answer.
    assert_eq!(
        requests[1].body["toolConfig"]["functionCallingConfig"]["mode"],
        "AUTO"
    );
}

#[test]
fn thinking_is_asked_for_and_its_thoughts_stay_out_of_the_text() {
    let server = FakeServer::start(vec![
        Answer::Stream(fixture("gemini_thinking")),
        Answer::Stream(fixture("gemini_thinking")),
    ]);
    let agent = Agent::create(
        Config::default()
            .max_tokens(200)
            .provider(provider(&server).thinking(ThinkingLevel::Medium)),
    )
    .unwrap();
    let chat = chat_recording(&agent, "How many r's in strawberry?");
    let response = chat.result.as_ref().unwrap();
    assert_eq!(response.text, "There are 3 r's in strawberry.");
    assert_eq!(chat.pieces, ["There are 3 r's", " in strawberry."]);
    // Thoughts are generated tokens.
    assert_eq!(response.usage.completion_tokens, 10 + 256);
    let body = &server.requests()[0].body;
    assert_eq!(
        body["generationConfig"]["thinkingConfig"],
        json!({"thinkingBudget": 4096, "includeThoughts": true})
    );
    assert_eq!(body["generationConfig"]["maxOutputTokens"], 200 + 4096);

    let mut backend = RemoteBackend::gemini(
        &provider(&server).thinking(ThinkingLevel::Medium),
        &Config::default(),
    )
    .unwrap();
    let messages = [Message::user("How many r's in strawberry?")];
    let request = GenerateRequest {
        messages: &messages,
        tools: &[],
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
    assert_eq!(generation.text, "There are 3 r's in strawberry.");
    assert_eq!(
        backend.last_reasoning(),
        "**Counting letters**\n\nI count the r's in strawberry."
    );
}

#[test]
fn a_rate_limit_waits_as_google_says_and_is_a_retry_event() {
    let quota = json!({"error": {"code": 429, "message": "You exceeded your current quota, please check your plan.",
        "status": "RESOURCE_EXHAUSTED", "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [
                {"quotaId": "GenerateRequestsPerMinutePerProjectPerModel-FreeTier"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "1.2s"}]}});
    let server = FakeServer::start(vec![
        Answer::status(429, &quota.to_string()),
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
            json!({"attempt": 1, "max_retries": 2, "delay_ms": 1200, "status": 429,
                "reason": "HTTP 429: You exceeded your current quota, please check your plan."})
        ]
    );
    let requests = server.requests();
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(1200) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
}

#[test]
fn a_server_error_is_retried_with_backoff_and_a_retry_event() {
    let server = FakeServer::start(vec![
        Answer::status(
            500,
            &error_body(500, "INTERNAL", "Internal error encountered."),
        ),
        Answer::Stream(text_stream(&["Fine now."])),
    ]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(chat.result.as_ref().unwrap().text, "Fine now.");
    let retry = &chat.of_kind("retry")[0];
    assert_eq!(
        (&retry["attempt"], &retry["status"], &retry["reason"]),
        (
            &json!(1),
            &json!(500),
            &json!("HTTP 500: Internal error encountered.")
        )
    );
    let delay = retry["delay_ms"].as_u64().unwrap();
    assert!((250..=500).contains(&delay), "{delay}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    assert!(requests[1].at - requests[0].at >= Duration::from_millis(250));
}

#[test]
fn a_bad_key_is_an_authentication_error_and_a_bad_request_names_the_status() {
    let key = "AIzaSyVerySecret0123456789";
    let server = FakeServer::start(vec![
        Answer::status(
            403,
            &error_body(403, "PERMISSION_DENIED", &format!("Method doesn't allow unregistered callers. Key {key}")),
        ),
        Answer::status(
            400,
            &json!([{"error": {"code": 400, "message": "* GenerateContentRequest.contents: contents is not specified",
                               "status": "INVALID_ARGUMENT"}}])
            .to_string(),
        ),
    ]);
    let agent = Agent::create(Config::default().provider(provider(&server).api_key(key))).unwrap();
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::AuthenticationFailed);
    assert_eq!(
        error.to_string(),
        format!(
            "provider gemini ({}) refused the credentials (HTTP 403): Method doesn't allow \
             unregistered callers. Key [redacted]",
            server.root
        )
    );
    assert!(!format!("{error:?} {:?} {agent:?}", agent.config()).contains(key));
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error,
        Error::ProviderFailed {
            provider: format!("gemini ({})", server.root),
            status: Some(400),
            message: "* GenerateContentRequest.contents: contents is not specified".into()
        }
    );
}

#[test]
fn a_connection_dropped_mid_stream_fails_the_chat_and_the_next_one_works() {
    let server = FakeServer::start(vec![
        Answer::StreamThenDrop(fixture("gemini_partial")),
        Answer::Stream(text_stream(&["Back again."])),
    ]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Talk");
    let text = chat.result.as_ref().unwrap_err().to_string();
    assert!(
        text.starts_with(&format!(
            "provider gemini ({}) failed with HTTP 200: the connection broke: ",
            server.root
        )) && text.ends_with(", after 11 bytes of the reply"),
        "{text}"
    );
    assert_eq!(chat.pieces, ["Hello", ", I am"]);
    assert_eq!(server.requests().len(), 1);
    assert!(agent.history().is_empty());
    assert_eq!(
        agent.chat("Again", ChatOptions::new()).wait().unwrap().text,
        "Back again."
    );
}

#[test]
fn a_stream_that_ends_without_a_finish_reason_is_broken() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("gemini_partial"))]);
    let agent = agent_on(&server);
    let error = agent.chat("Talk", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "provider gemini ({}) failed with HTTP 200: the stream ended before the reply did \
             (no reason why it ended, no end marker), after 11 bytes of the reply",
            server.root
        )
    );
}

#[test]
fn a_malformed_chunk_is_a_provider_failure() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("gemini_malformed"))]);
    let agent = agent_on(&server);
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(
        chat.result.as_ref().unwrap_err().to_string(),
        format!(
            "provider gemini ({}) failed with HTTP 200: a stream chunk is not a \
             GenerateContentResponse (EOF while parsing an object at line 1 column 50): {}",
            server.root, r#"{"candidates":[{"content":{"parts":[{"text":"tial""#
        )
    );
    assert_eq!(chat.pieces, ["Par"]);
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn an_overflow_twice_fails_the_chat_as_context_overflow_and_leaves_the_history() {
    let too_long =
        "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).";
    let server = FakeServer::start(vec![
        Answer::Stream(text_stream(&["One."])),
        Answer::status(400, &error_body(400, "INVALID_ARGUMENT", too_long)),
        Answer::status(400, &error_body(400, "INVALID_ARGUMENT", too_long)),
    ]);
    let agent = agent_on(&server);
    agent
        .chat("First question", ChatOptions::new())
        .wait()
        .unwrap();
    let before = agent.history();
    let chat = chat_recording(&agent, "Second question");
    assert_eq!(
        *chat.result.as_ref().unwrap_err(),
        Error::ContextOverflow(format!(
            "gemini ({}) answered HTTP 400: {too_long}",
            server.root
        ))
    );
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
    assert_eq!(chat.of_kind("chat_finished")[0]["stop_reason"], "error");
    let requests = server.requests();
    assert_eq!(requests.len(), 3, "one more try after compacting, not more");
    assert_eq!(requests[1].body["contents"].as_array().unwrap().len(), 3);
    assert_eq!(
        requests[2].body["contents"],
        json!([{"role": "user", "parts": [{"text": "Second question"}]}])
    );
    assert_eq!(agent.history(), before, "the failed chat is undone");
}

#[test]
fn cancel_stops_a_stream_and_a_backoff_within_the_bound() {
    let server = FakeServer::start(vec![
        Answer::StreamThenHang(fixture("gemini_partial")),
        Answer::Status {
            status: 503,
            headers: vec![("Retry-After".into(), "100".into())],
            body: error_body(
                503,
                "UNAVAILABLE",
                "The model is overloaded. Please try again later.",
            ),
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
    handle.cancel();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(
        (response.stop_reason, response.text.as_str()),
        (StopReason::Cancelled, "Hello, I am")
    );

    let (tx, rx) = mpsc::channel();
    let handle = agent.chat(
        "Go on",
        ChatOptions::new().on_event(move |e| {
            let _ = tx.send(e.clone());
        }),
    );
    loop {
        let event = rx.recv_timeout(HANG).expect("a retry event");
        if matches!(event.kind, zoo_core::EventKind::Retry(_)) {
            break;
        }
    }
    let stopped = Instant::now();
    agent.stop();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(server.requests().len(), 2);
    assert_eq!(
        agent.chat("Again", ChatOptions::new()).wait().unwrap().text,
        "Next."
    );
}

#[test]
fn the_gemini_provider_reads_from_json_and_bad_values_name_their_key() {
    let config = Config::from_json(
        r#"{"provider": {"type": "gemini", "model": "gemini-2.5-pro", "api_key_env": "GEMINI_API_KEY",
            "thinking": "low", "timeout_ms": 30000}}"#,
    )
    .unwrap();
    let want = GeminiProvider::new("gemini-2.5-pro")
        .api_key_env("GEMINI_API_KEY")
        .thinking(ThinkingLevel::Low)
        .timeout_ms(30_000);
    assert_eq!(want.base_url, "https://generativelanguage.googleapis.com");
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
            r#"{"type": "gemini", "model": ""}"#,
            "invalid config `provider.model`: is required: the model's name, such as \
             claude-sonnet-4-5 or gemini-2.5-flash",
        ),
        (
            r#"{"type": "gemini", "model": "gemini 2.5"}"#,
            "invalid config `provider.model`: expected a model name without spaces, got \"gemini 2.5\"",
        ),
        (
            r#"{"type": "gemini", "model": "m", "timeout_ms": 0}"#,
            "invalid config `provider.timeout_ms`: expected a whole number from 1 to 86400000, got 0",
        ),
        (
            r#"{"type": "gemini", "model": "m", "thinking": true}"#,
            r#"invalid config `provider.thinking`: expected "off", "low", "medium" or "high", got true"#,
        ),
    ] {
        assert_eq!(error_of(provider), want, "{provider}");
    }
}
