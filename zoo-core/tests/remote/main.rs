//! The remote backends against a fake server on 127.0.0.1 that replays
//! recorded streams: streaming, native tool calls, usage, retries (and
//! their events), errors, context overflow and cancellation, each
//! asserting the exact response, requests, events and error codes. This
//! file holds the OpenAI-compatible tests and the helpers; `anthropic` and
//! `gemini` hold theirs.

mod anthropic;
mod fake_server;
mod gemini;
mod subagent;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use fake_server::{fixture, Answer, FakeServer};
use serde_json::{json, Value};
use zoo_core::backend::{Backend, CacheHint, FinishReason, GenerateRequest};
use zoo_core::{
    Agent, AgentEvent, ChatOptions, Config, Error, ErrorCode, MaxTokensField, Message,
    OpenAiProvider, RemoteBackend, Response, StopReason, Tool, ToolCall, ToolChoice,
};

/// A bound for waits that only a hang would pass (CI may run beside
/// other loads on two cores).
const HANG: Duration = Duration::from_secs(60);
/// How long a cancel may take to end a chat, generously (the promise is
/// 100 ms; a loaded machine may delay the threads involved).
const CANCEL_BOUND: Duration = Duration::from_secs(5);

fn provider(server: &FakeServer) -> OpenAiProvider {
    OpenAiProvider::new(&server.base_url)
}

fn agent(provider: OpenAiProvider) -> Agent {
    Agent::create(Config::default().provider(provider)).expect("agent starts")
}

fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        "Current weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |args| Ok(json!({"city": args["city"], "temperature_celsius": 17})),
    )
    .unwrap()
}

fn add_tool() -> Tool {
    Tool::new(
        "add",
        "Add two integers",
        json!({"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
               "required": ["a", "b"]}),
        |args| {
            Ok(json!(
                args["a"].as_i64().unwrap() + args["b"].as_i64().unwrap()
            ))
        },
    )
    .unwrap()
}

/// A stream of these text pieces, ended by `stop` and `[DONE]`.
fn text_stream(pieces: &[&str]) -> Vec<String> {
    let mut events: Vec<String> = pieces
        .iter()
        .map(|p| {
            format!(
                "data: {}",
                json!({"choices": [{"index": 0, "delta": {"content": p}}]})
            )
        })
        .collect();
    events.push(r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}"#.into());
    events.push("data: [DONE]".into());
    events
}

/// A stream of one tool call whose arguments come in these pieces.
fn call_stream(name: &str, pieces: &[&str]) -> Vec<String> {
    let mut events = vec![format!(
        "data: {}",
        json!({"choices": [{"index": 0, "delta": {"tool_calls": [
            {"index": 0, "id": "call_srv", "type": "function", "function": {"name": name, "arguments": ""}}]}}]})
    )];
    for piece in pieces {
        events.push(format!(
            "data: {}",
            json!({"choices": [{"index": 0, "delta": {"tool_calls": [
                {"index": 0, "function": {"arguments": piece}}]}}]})
        ));
    }
    events
        .push(r#"data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#.into());
    events.push("data: [DONE]".into());
    events
}

fn chat_collecting(
    agent: &Agent,
    message: &str,
) -> (zoo_core::Result<zoo_core::Response>, Vec<String>) {
    let (tx, rx) = mpsc::channel();
    let result = agent
        .chat(
            message,
            ChatOptions::new().on_token(move |t| tx.send(t.to_string()).unwrap()),
        )
        .wait();
    (result, rx.try_iter().collect())
}

/// What a chat gave: its result, the streamed text pieces and the events.
struct Recorded {
    result: zoo_core::Result<Response>,
    pieces: Vec<String>,
    events: Vec<AgentEvent>,
}

impl Recorded {
    /// The events' types, in order.
    fn kinds(&self) -> Vec<String> {
        self.events
            .iter()
            .map(|e| {
                serde_json::to_value(e).unwrap()["type"]
                    .as_str()
                    .unwrap()
                    .to_string()
            })
            .collect()
    }

    /// The events of one type, as JSON without the chat's identity.
    fn of_kind(&self, kind: &str) -> Vec<Value> {
        self.events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .filter(|e| e["type"] == kind)
            .map(|mut e| {
                let object = e.as_object_mut().unwrap();
                for key in ["type", "agent_id", "chat_id", "seq"] {
                    object.remove(key);
                }
                e
            })
            .collect()
    }
}

/// A chat that records its pieces and events.
fn chat_recording(agent: &Agent, message: &str) -> Recorded {
    let (tokens, pieces) = mpsc::channel();
    let (sink, events) = mpsc::channel();
    let result = agent
        .chat(
            message,
            ChatOptions::new()
                .on_token(move |t| tokens.send(t.to_string()).unwrap())
                .on_event(move |e| sink.send(e.clone()).unwrap()),
        )
        .wait();
    Recorded {
        result,
        pieces: pieces.try_iter().collect(),
        events: events.try_iter().collect(),
    }
}

/// The events of a chat with one reply and no tools.
const PLAIN_CHAT: [&str; 4] = [
    "chat_started",
    "turn_started",
    "turn_finished",
    "chat_finished",
];
/// The events of a chat whose one reply failed (`chat_finished` says `error`).
const FAILED_CHAT: [&str; 4] = PLAIN_CHAT;

fn roles(history: &[Message]) -> Vec<&'static str> {
    history.iter().map(|m| m.role.as_str()).collect()
}

#[test]
fn text_streams_in_pieces_with_the_agents_settings() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("text_split"))]);
    let config = Config::default()
        .temperature(0.2)
        .top_p(0.9)
        .seed(7)
        .max_tokens(100)
        .stop(vec!["</end>".to_string()])
        .system_prompt("Be brief.")
        .provider(
            provider(&server)
                .model("gpt-4o-mini")
                .api_key("sk-test-key")
                .header("X-Team", "zoo")
                .max_tokens_field(MaxTokensField::MaxCompletionTokens),
        );
    let agent = Agent::create(config).unwrap();
    let (response, pieces) = chat_collecting(&agent, "Say hello");
    let response = response.unwrap();
    assert_eq!(response.text, "Hello, world ☀!");
    assert_eq!(pieces, ["Hello", ", wo", "rld ☀", "!"]);
    assert_eq!(response.stop_reason, StopReason::Stop);
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
    assert_eq!(request.path, "/v1/chat/completions");
    assert_eq!(request.headers["authorization"], "Bearer sk-test-key");
    assert_eq!(request.headers["x-team"], "zoo");
    assert_eq!(request.headers["accept"], "text/event-stream");
    assert_eq!(
        request.body,
        json!({
            "model": "gpt-4o-mini",
            "messages": [
                {"role": "system", "content": "Be brief."},
                {"role": "user", "content": "Say hello"},
            ],
            "stream": true,
            "stream_options": {"include_usage": true},
            "temperature": 0.2,
            "top_p": 0.9,
            "seed": 7,
            "stop": ["</end>"],
            "max_completion_tokens": 100,
        })
    );
    assert_eq!(
        agent.history(),
        [
            Message::system("Be brief."),
            Message::user("Say hello"),
            Message::assistant("Hello, world ☀!")
        ]
    );
}

#[test]
fn two_tool_calls_split_across_chunks_both_run_and_the_model_answers() {
    let server = FakeServer::start(vec![
        Answer::Stream(fixture("two_calls")),
        Answer::Stream(fixture("answer_after_tools")),
    ]);
    let agent = agent(provider(&server));
    agent.register_tool(weather_tool());
    agent.register_tool(add_tool());
    let (response, pieces) = chat_collecting(&agent, "Weather in Paris, and 2 + 40?");
    let response = response.unwrap();
    assert_eq!(response.text, "It is 17 degrees in Paris, and 2 + 40 = 42.");
    assert_eq!(pieces, ["It is 17 degrees in Paris", ", and 2 + 40 = 42."]);
    assert_eq!(response.stop_reason, StopReason::Stop);
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
    // Both replies' usage, summed.
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.cached_tokens,
            response.usage.completion_tokens
        ),
        (380, 128, 55)
    );

    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    let tools = json!([
        {"type": "function", "function": {"name": "get_weather", "description": "Current weather for a city",
         "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}},
        {"type": "function", "function": {"name": "add", "description": "Add two integers",
         "parameters": {"type": "object", "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
                        "required": ["a", "b"]}}},
    ]);
    assert_eq!(requests[0].body["tools"], tools);
    assert_eq!(requests[0].body["tool_choice"], "auto");
    assert_eq!(
        requests[1].body["messages"],
        json!([
            {"role": "user", "content": "Weather in Paris, and 2 + 40?"},
            {"role": "assistant", "tool_calls": [
                {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}},
                {"id": "call_2", "type": "function", "function": {"name": "add", "arguments": "{\"a\":2,\"b\":40}"}},
            ]},
            {"role": "tool", "tool_call_id": "call_1", "content": "{\"city\":\"Paris\",\"temperature_celsius\":17}"},
            {"role": "tool", "tool_call_id": "call_2", "content": "42"},
        ])
    );
    assert_eq!(
        roles(&agent.history()),
        ["user", "assistant", "tool", "tool", "assistant"]
    );
    assert_eq!(
        agent.history()[1].tool_calls,
        [
            ToolCall {
                id: "call_1".into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Paris"})
            },
            ToolCall {
                id: "call_2".into(),
                name: "add".into(),
                arguments: json!({"a": 2, "b": 40})
            },
        ]
    );
}

#[test]
fn tool_choice_is_mapped_and_no_tools_means_none_are_sent() {
    let server = FakeServer::start(vec![
        Answer::Stream(call_stream("get_weather", &[r#"{"city": "Rome"}"#])),
        Answer::Stream(text_stream(&["Rome is sunny."])),
        Answer::Stream(call_stream("add", &[r#"{"a": 1, "b": 2}"#])),
        Answer::Stream(text_stream(&["3."])),
        Answer::Stream(text_stream(&["No tools."])),
    ]);
    let agent = agent(provider(&server));
    agent.register_tool(weather_tool());
    agent.register_tool(add_tool());
    let named = agent
        .chat(
            "Rome?",
            ChatOptions::new().tool_choice(ToolChoice::Tool("get_weather".into())),
        )
        .wait()
        .unwrap();
    assert_eq!(named.text, "Rome is sunny.");
    let required = agent
        .chat(
            "1 + 2?",
            ChatOptions::new().tool_choice(ToolChoice::Required),
        )
        .wait()
        .unwrap();
    assert_eq!(required.text, "3.");
    let none = agent
        .chat("Hi", ChatOptions::new().tool_choice(ToolChoice::None))
        .wait()
        .unwrap();
    assert_eq!(none.text, "No tools.");

    let bodies: Vec<Value> = server.requests().into_iter().map(|r| r.body).collect();
    assert_eq!(
        bodies[0]["tool_choice"],
        json!({"type": "function", "function": {"name": "get_weather"}})
    );
    let names = |body: &Value| -> Vec<String> {
        body["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["function"]["name"].as_str().unwrap().to_string())
            .collect()
    };
    assert_eq!(names(&bodies[0]), ["get_weather"]);
    // After the forced call succeeded, the model is free to answer.
    assert_eq!(bodies[1]["tool_choice"], "auto");
    assert_eq!(bodies[2]["tool_choice"], "required");
    assert_eq!(names(&bodies[2]), ["get_weather", "add"]);
    assert!(bodies[4].get("tools").is_none() && bodies[4].get("tool_choice").is_none());
}

#[test]
fn a_call_with_bad_arguments_is_corrected_by_the_model() {
    let server = FakeServer::start(vec![
        // Not JSON.
        Answer::Stream(call_stream("get_weather", &[r#"{"city": "#, "Par"])),
        // JSON, against the schema.
        Answer::Stream(call_stream("get_weather", &[r#"{"town": "Paris"}"#])),
        Answer::Stream(call_stream("get_weather", &[r#"{"city": "Paris"}"#])),
        Answer::Stream(text_stream(&["17 degrees."])),
    ]);
    let agent = agent(provider(&server).max_retries(0));
    agent.register_tool(weather_tool());
    let response = agent.chat("Weather?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "17 degrees.");
    let errors: Vec<(&str, ErrorCode, u32)> = response
        .tool_errors
        .iter()
        .map(|e| (e.tool.as_str(), e.kind, e.attempt))
        .collect();
    assert_eq!(
        errors,
        [
            ("get_weather", ErrorCode::InvalidJson, 1),
            ("get_weather", ErrorCode::ToolValidationFailed, 2),
        ]
    );
    assert_eq!(
        response.tool_errors[0].message,
        "Error: your tool call could not be read: the arguments of `get_weather` are not valid \
         JSON (expected value at line 1 column 10): {\"city\": Par. Write each call as \
         <tool_call> {\"name\": \"<tool>\", \"arguments\": {...}} with valid JSON."
    );
    assert_eq!(response.tool_calls.len(), 2);
    assert_eq!(
        response.tool_calls[1].result,
        Some(json!({"city": "Paris", "temperature_celsius": 17}))
    );
    // The model read each error before it tried again.
    let second = &server.requests()[1].body["messages"];
    let last = second.as_array().unwrap().last().unwrap();
    assert_eq!(last["role"], "system");
    assert_eq!(last["content"], json!(response.tool_errors[0].message));
}

#[test]
fn a_rate_limit_is_waited_out_as_retry_after_says() {
    let server = FakeServer::start(vec![
        Answer::Status {
            status: 429,
            headers: vec![("Retry-After".into(), "1".into())],
            body:
                r#"{"error": {"message": "Rate limit reached for requests", "type": "requests"}}"#
                    .into(),
        },
        Answer::Stream(text_stream(&["After ", "waiting."])),
    ]);
    let agent = agent(provider(&server));
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
                "reason": "HTTP 429: Rate limit reached for requests"})
        ]
    );
    let requests = server.requests();
    assert_eq!(requests.len(), 2, "one retry");
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_secs(1) && waited < Duration::from_secs(30),
        "waited {waited:?} for a Retry-After of 1 s"
    );
    assert_eq!(requests[0].body, requests[1].body, "the same request again");
}

#[test]
fn a_server_error_is_retried_with_backoff() {
    let server = FakeServer::start(vec![
        Answer::status(500, r#"{"error": {"message": "upstream crashed"}}"#),
        Answer::Stream(text_stream(&["Fine now."])),
    ]);
    let agent = agent(provider(&server));
    let chat = chat_recording(&agent, "Hi");
    assert_eq!(chat.result.as_ref().unwrap().text, "Fine now.");
    let retries = chat.of_kind("retry");
    assert_eq!(retries.len(), 1);
    assert_eq!(retries[0]["reason"], "HTTP 500: upstream crashed");
    let delay = retries[0]["delay_ms"].as_u64().unwrap();
    assert!((250..=500).contains(&delay), "{delay}");
    let requests = server.requests();
    assert_eq!(requests.len(), 2);
    // The first backoff is 250 to 500 ms.
    let waited = requests[1].at - requests[0].at;
    assert!(
        waited >= Duration::from_millis(250) && waited < Duration::from_secs(30),
        "{waited:?}"
    );
}

#[test]
fn failures_past_max_retries_name_provider_status_and_server_text() {
    let server = FakeServer::start(vec![
        Answer::status(503, r#"{"error": {"message": "overloaded"}}"#),
        Answer::status(503, r#"{"error": {"message": "overloaded"}}"#),
    ]);
    let agent = agent(provider(&server).max_retries(1));
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.to_string(),
        format!(
            "provider openai ({}) failed with HTTP 503: overloaded (gave up after 2 attempts)",
            server.base_url
        )
    );
    assert_eq!(server.requests().len(), 2);
    assert!(agent.history().is_empty(), "a failed turn leaves no trace");

    // A 404 is final at once.
    let server = FakeServer::start(vec![Answer::status(404, r#"{"detail": "Not Found"}"#)]);
    let agent = agent_on(&server);
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error,
        Error::ProviderFailed {
            provider: format!("openai ({})", server.base_url),
            status: Some(404),
            message: "Not Found".into()
        }
    );
    assert_eq!(server.requests().len(), 1);
}

fn agent_on(server: &FakeServer) -> Agent {
    agent(provider(server))
}

#[test]
fn nobody_listening_is_a_provider_failure_after_the_retries() {
    // A port that was just free: connections are refused.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let base = format!("http://127.0.0.1:{port}/v1");
    let agent = agent(OpenAiProvider::new(&base).max_retries(1));
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    let text = error.to_string();
    assert!(
        text.starts_with(&format!(
            "provider openai ({base}) failed: cannot reach the server: "
        )) && text.ends_with("(gave up after 2 attempts)"),
        "{text}"
    );
}

#[test]
fn a_connection_dropped_mid_stream_fails_the_chat_and_the_next_one_works() {
    let server = FakeServer::start(vec![
        Answer::Stream(text_stream(&["First answer."])),
        Answer::StreamThenDrop(fixture("partial")),
        Answer::Stream(text_stream(&["Back again."])),
    ]);
    let agent = agent_on(&server);
    agent.chat("One", ChatOptions::new()).wait().unwrap();
    let before = agent.history();
    let (result, pieces) = chat_collecting(&agent, "Two");
    let error = result.unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert!(
        error.to_string().starts_with(&format!(
            "provider openai ({}) failed with HTTP 200: the connection broke: ",
            server.base_url
        )) && error.to_string().ends_with(", after 11 bytes of the reply"),
        "{error}"
    );
    assert_eq!(pieces, ["Hello", ", I am"], "what streamed before the drop");
    assert_eq!(
        server.requests().len(),
        2,
        "a reply that began is not sent again"
    );
    assert_eq!(agent.history(), before, "the failed turn is undone");
    let response = agent.chat("Three", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Back again.");
    assert_eq!(
        roles(&agent.history()),
        ["user", "assistant", "user", "assistant"]
    );
    assert_eq!(
        server.requests()[2].body["messages"],
        json!([
            {"role": "user", "content": "One"},
            {"role": "assistant", "content": "First answer."},
            {"role": "user", "content": "Three"},
        ])
    );
}

#[test]
fn a_malformed_chunk_is_a_provider_failure() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("malformed"))]);
    let agent = agent_on(&server);
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.to_string(),
        format!(
            "provider openai ({}) failed with HTTP 200: a stream chunk is not a Chat Completions \
             chunk (EOF while parsing an object at line 1 column 100): {}",
            server.base_url,
            r#"{"id":"chatcmpl-D4","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"tial""#
        )
    );
    assert_eq!(
        server.requests().len(),
        1,
        "a malformed stream is not retried"
    );
    assert!(agent.history().is_empty());
}

#[test]
fn a_prompt_too_long_for_the_server_is_context_overflow() {
    let text = "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.";
    let server = FakeServer::start(vec![Answer::status(
        400,
        &json!({"error": {"message": text, "type": "invalid_request_error", "code": "context_length_exceeded"}})
            .to_string(),
    )]);
    let agent = agent_on(&server);
    let error = agent
        .chat("A long story", ChatOptions::new())
        .wait()
        .unwrap_err();
    assert_eq!(
        error,
        Error::ContextOverflow(format!(
            "openai ({}) answered HTTP 400: {text}",
            server.base_url
        ))
    );
    assert_eq!(server.requests().len(), 1);
}

#[test]
fn refused_credentials_are_an_authentication_error_without_the_key() {
    let key = "sk-live-very-secret-0123456789";
    let server = FakeServer::start(vec![Answer::status(
        401,
        &json!({"error": {"message": format!("Incorrect API key provided: {key}."), "code": "invalid_api_key"}})
            .to_string(),
    )]);
    let agent = agent(provider(&server).api_key(key));
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::AuthenticationFailed);
    assert_eq!(
        error.to_string(),
        format!(
            "provider openai ({}) refused the credentials (HTTP 401): Incorrect API key provided: [redacted].",
            server.base_url
        )
    );
    assert_eq!(server.requests().len(), 1, "not retried");
    for shown in [
        format!("{error:?}"),
        format!("{:?}", agent.config()),
        format!("{agent:?}"),
    ] {
        assert!(!shown.contains(key), "{shown}");
    }
}

#[test]
fn a_cancel_stops_a_stream_and_keeps_what_was_said() {
    let server = FakeServer::start(vec![
        Answer::StreamThenHang(fixture("partial")),
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
    server.wait_for_answer(0);
    let stopped = Instant::now();
    agent.stop();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(response.text, "Hello, I am");
    assert_eq!(
        agent.history(),
        [Message::user("Talk"), Message::assistant("Hello, I am")]
    );
    let next = agent.chat("Go on", ChatOptions::new()).wait().unwrap();
    assert_eq!(next.text, "Next.");
}

#[test]
fn a_cancel_ends_a_backoff_at_once() {
    let server = FakeServer::start(vec![
        Answer::Status {
            status: 429,
            headers: vec![("Retry-After".into(), "100".into())],
            body: r#"{"error": {"message": "slow down"}}"#.into(),
        },
        Answer::Stream(text_stream(&["Later."])),
    ]);
    let agent = agent_on(&server);
    let handle = agent.chat("Hi", ChatOptions::new());
    server.wait_for_answer(0);
    let stopped = Instant::now();
    handle.cancel();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(response.text, "");
    assert_eq!(server.requests().len(), 1, "no retry after the cancel");
    assert!(agent.history().is_empty(), "nothing was said: no trace");
    let next = agent.chat("Again", ChatOptions::new()).wait().unwrap();
    assert_eq!(next.text, "Later.");
}

#[test]
fn a_server_asking_for_a_very_long_wait_fails_at_once() {
    let server = FakeServer::start(vec![Answer::Status {
        status: 429,
        headers: vec![("Retry-After".into(), "3600".into())],
        body: r#"{"error": {"message": "quota exceeded"}}"#.into(),
    }]);
    let agent = agent_on(&server);
    let error = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error.to_string(),
        format!(
            "provider openai ({}) failed with HTTP 429: quota exceeded (the server asked to wait \
             3600 s before trying again, longer than the 120 s a chat waits)",
            server.base_url
        )
    );
}

#[test]
fn reasoning_stays_out_of_the_text_and_is_kept() {
    let server = FakeServer::start(vec![Answer::Stream(fixture("reasoning_llamacpp"))]);
    let mut backend = RemoteBackend::openai(&provider(&server), &Config::default()).unwrap();
    let messages = [Message::user("Hello")];
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
    let mut pieces = Vec::new();
    let generation = backend
        .generate(
            &request,
            &mut |p| pieces.push(p.to_string()),
            &zoo_core::CancelToken::new(),
        )
        .unwrap();
    assert_eq!(generation.text, "Hi there.");
    assert_eq!(pieces, ["Hi", " there."]);
    assert_eq!(generation.finish, FinishReason::Stop);
    assert_eq!(
        (generation.prompt_tokens, generation.completion_tokens),
        (20, 12)
    );
    assert_eq!(
        backend.last_reasoning(),
        "The user greets me. I greet back."
    );
    assert!(backend.take_tool_calls().is_empty());
}

#[test]
fn a_server_that_does_not_stream_is_read_whole() {
    let server = FakeServer::start(vec![Answer::Json(
        json!({"id": "x", "object": "chat.completion", "choices": [{"index": 0,
            "message": {"role": "assistant", "content": "Whole answer."}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11}})
        .to_string(),
    )]);
    let agent = agent_on(&server);
    let (response, pieces) = chat_collecting(&agent, "Hi");
    let response = response.unwrap();
    assert_eq!(response.text, "Whole answer.");
    assert_eq!(pieces, ["Whole answer."]);
    assert_eq!(response.usage.prompt_tokens, 9);
}

#[test]
fn the_openai_provider_reads_from_json_and_bad_values_name_their_key() {
    let config = Config::from_json(
        r#"{"provider": {"type": "openai", "base_url": "http://127.0.0.1:8080/v1", "model": "m",
            "api_key": "sk-1", "headers": {"X-A": "b"}, "timeout_ms": 5000, "max_retries": 3,
            "max_tokens_field": "max_completion_tokens"}}"#,
    )
    .unwrap();
    let want = OpenAiProvider::new("http://127.0.0.1:8080/v1")
        .model("m")
        .api_key("sk-1")
        .header("X-A", "b")
        .timeout_ms(5000)
        .max_retries(3)
        .max_tokens_field(MaxTokensField::MaxCompletionTokens);
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
            r#"{"type": "openai"}"#,
            "invalid config `provider.base_url`: is required: an http:// or https:// URL such as \
             http://127.0.0.1:8080/v1, the address of the server's API",
        ),
        (
            r#"{"type": "openai", "base_url": "localhost:8080"}"#,
            "invalid config `provider.base_url`: expected an http:// or https:// URL such as \
             http://127.0.0.1:8080/v1, got \"localhost:8080\"",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "timeout_ms": 0}"#,
            "invalid config `provider.timeout_ms`: expected a whole number from 1 to 86400000, got 0",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "max_retries": -1}"#,
            "invalid config `provider.max_retries`: expected a whole number from 0 to 100, got -1",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "max_tokens_field": "tokens"}"#,
            r#"invalid config `provider.max_tokens_field`: expected "max_tokens" or "max_completion_tokens", got "tokens""#,
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "headers": {"X-A": 1}}"#,
            "invalid config `provider.headers.X-A`: expected a string, got 1",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "headers": {"X A": "b"}}"#,
            "invalid config `provider.headers.X A`: is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "api_key": 12345}"#,
            "invalid config `provider.api_key`: expected a non-empty string or null, got a value that is not a string",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "model": ""}"#,
            "invalid config `provider.model`: expected a non-empty string or null, got \"\"",
        ),
        (
            r#"{"type": "openai", "base_url": "http://x/v1", "replies": []}"#,
            "invalid config `provider.replies`: unknown key; the openai provider keys are `type`, \
             `base_url`, `model`, `api_key`, `api_key_env`, `headers`, `timeout_ms`, `max_retries`, \
             `max_tokens_field`",
        ),
    ] {
        assert_eq!(error_of(provider), want, "{provider}");
    }

    // The key's source is checked when the agent is created.
    let error = Agent::create(Config::default().provider(
        OpenAiProvider::new("http://127.0.0.1:1/v1").api_key_env("ZOO_REMOTE_TEST_UNSET_KEY"),
    ))
    .unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid config `provider.api_key_env`: the environment variable \
         `ZOO_REMOTE_TEST_UNSET_KEY` is not set"
    );
}

#[test]
fn the_key_can_come_from_the_environment() {
    std::env::set_var("ZOO_REMOTE_TEST_KEY", "sk-from-env");
    let server = FakeServer::start(vec![Answer::Stream(text_stream(&["ok"]))]);
    let agent = agent(provider(&server).api_key_env("ZOO_REMOTE_TEST_KEY"));
    agent.chat("Hi", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        server.requests()[0].headers["authorization"],
        "Bearer sk-from-env"
    );
}

#[test]
fn the_chats_time_limit_ends_a_stream_that_stalls() {
    let server = FakeServer::start(vec![
        Answer::StreamThenHang(fixture("partial")),
        Answer::Stream(text_stream(&["Next."])),
    ]);
    let agent = Agent::create(
        Config::default()
            .max_duration_ms(1000)
            .provider(provider(&server)),
    )
    .unwrap();
    let started = Instant::now();
    let response = agent
        .chat("Talk", ChatOptions::new())
        .wait_timeout(HANG)
        .expect("the chat ends")
        .unwrap();
    assert!(
        started.elapsed() >= Duration::from_millis(1000)
            && started.elapsed() < Duration::from_secs(30),
        "{:?}",
        started.elapsed()
    );
    assert_eq!(response.stop_reason, StopReason::Limit);
    assert_eq!(response.text, "Hello, I am");
    server.wait_for_answer(0);
    let next = agent.chat("Go on", ChatOptions::new()).wait().unwrap();
    assert_eq!(next.text, "Next.");
}

#[test]
fn a_cancel_ends_the_wait_for_an_answer_that_never_comes() {
    let server = FakeServer::start(vec![Answer::Hang, Answer::Stream(text_stream(&["Here."]))]);
    let agent = agent_on(&server);
    let handle = agent.chat("Hi", ChatOptions::new());
    server.wait_for_answer(0);
    let stopped = Instant::now();
    handle.cancel();
    let response = handle.wait_timeout(HANG).expect("the chat ends").unwrap();
    assert!(stopped.elapsed() < CANCEL_BOUND, "{:?}", stopped.elapsed());
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(server.requests().len(), 1);
    assert_eq!(
        agent.chat("Again", ChatOptions::new()).wait().unwrap().text,
        "Here."
    );
}
