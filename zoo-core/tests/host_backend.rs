//! A backend written in the host language (`HostModel`, `HostBackend`):
//! what it receives, what it streams back, its failures and its stops, on
//! an agent with tools. The C, Python and Node front doors have the same
//! tests in tests/c, tests/python and tests/node.

use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zoo_core::{
    Agent, ChatOptions, Config, ErrorCode, HostModel, HostOutput, HostRequest, HostSink, HostUsage,
    Message, Role, StopReason, Tool,
};

/// Generous bound on what must happen "at once": CI is a busy 2-core box.
const PROMPT: Duration = Duration::from_secs(10);

/// A host whose reply is a closure, recording every request.
struct Scripted<F> {
    reply: F,
    requests: Arc<Mutex<Vec<HostRequest>>>,
}

impl<F> HostModel for Scripted<F>
where
    F: FnMut(usize, &HostRequest, &HostSink) -> Result<(), String> + Send + 'static,
{
    fn generate(&mut self, request: &HostRequest, sink: &HostSink) -> Result<(), String> {
        let turn = {
            let mut requests = self.requests.lock().unwrap();
            requests.push(request.clone());
            requests.len()
        };
        (self.reply)(turn, request, sink)
    }
}

/// An agent on a scripted host; the requests it received.
fn agent_on<F>(config: Config, reply: F) -> (Agent, Arc<Mutex<Vec<HostRequest>>>)
where
    F: FnMut(usize, &HostRequest, &HostSink) -> Result<(), String> + Send + 'static,
{
    let requests = Arc::new(Mutex::new(Vec::new()));
    let host = Scripted {
        reply,
        requests: Arc::clone(&requests),
    };
    let agent = Agent::with_host_backend(host, config).expect("the agent starts");
    (agent, requests)
}

fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        "Current weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        |args| Ok(json!({"city": args["city"], "temperature": 21})),
    )
    .unwrap()
}

fn tokens_of(agent: &Agent, message: &str) -> (zoo_core::Result<zoo_core::Response>, Vec<String>) {
    let tokens = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&tokens);
    let response = agent
        .chat(
            message,
            ChatOptions::new().on_token(move |t| sink.lock().unwrap().push(t.to_string())),
        )
        .wait();
    let tokens = tokens.lock().unwrap().clone();
    (response, tokens)
}

#[test]
fn text_streams_piece_by_piece_and_usage_reaches_the_response() {
    let (agent, requests) = agent_on(
        Config::default()
            .system_prompt("Be brief.")
            .temperature(0.25),
        |_, _, sink| {
            for piece in ["Hello", ", ", "world", "!"] {
                assert!(sink.text(piece));
            }
            sink.emit(HostOutput::Usage(HostUsage {
                prompt_tokens: 12,
                cached_tokens: 3,
                completion_tokens: 4,
            }));
            Ok(())
        },
    );
    let (response, tokens) = tokens_of(&agent, "Hi");
    let response = response.unwrap();
    assert_eq!(response.text, "Hello, world!");
    assert_eq!(tokens, ["Hello", ", ", "world", "!"]);
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(
        (
            response.usage.prompt_tokens,
            response.usage.cached_tokens,
            response.usage.completion_tokens,
            response.usage.total_tokens
        ),
        (12, 3, 4, 16)
    );
    let request = requests.lock().unwrap()[0].clone();
    assert_eq!(request.messages.len(), 2);
    assert_eq!(request.messages[0].role, Role::System);
    assert_eq!(request.messages[1].content, "Hi");
    assert_eq!(request.sampling.temperature, 0.25);
    assert_eq!(
        agent.history().last().unwrap(),
        &Message::assistant("Hello, world!")
    );
}

#[test]
fn the_request_has_one_json_shape() {
    let (agent, requests) = agent_on(
        Config::from_json(
            r#"{"provider": {"type": "host", "thinking": "low"}, "seed": 7, "stop": ["END"],
                "max_tokens": 50, "tool_choice": "required"}"#,
        )
        .unwrap(),
        |turn, _, sink| {
            if turn == 1 {
                sink.emit(HostOutput::ToolCall {
                    name: "get_weather".into(),
                    arguments: json!({"city": "Paris"}),
                });
            } else {
                sink.text("Mild.");
            }
            Ok(())
        },
    );
    agent.register_tool(weather_tool());
    agent.chat("Weather?", ChatOptions::new()).wait().unwrap();
    let request: Value = serde_json::from_str(&requests.lock().unwrap()[1].to_json()).unwrap();
    assert_eq!(
        request,
        json!({
            "messages": [
                {"role": "user", "content": "Weather?"},
                {"role": "assistant", "content": "", "tool_calls": [
                    {"id": "call_1", "name": "get_weather", "arguments": {"city": "Paris"}}]},
                {"role": "tool", "content": "{\"city\":\"Paris\",\"temperature\":21}",
                 "tool_call_id": "call_1", "name": "get_weather"}
            ],
            "tools": [{"name": "get_weather", "description": "Current weather for a city",
                       "parameters": {"type": "object", "properties": {"city": {"type": "string"}},
                                      "required": ["city"]}}],
            "tool_choice": "auto",
            "max_tokens": 50,
            "max_calls": 1,
            "stop": ["END"],
            "sampling": {"temperature": 0.7, "top_p": 0.95, "top_k": 40, "min_p": 0.05,
                         "repeat_penalty": 1.0, "seed": 7},
            "thinking": "low",
            "stable_prefix": 1,
            "time_left_ms": null
        })
    );
    // The first request forced the call; it is read back from its JSON.
    let first = requests.lock().unwrap()[0].clone();
    assert_eq!(first.tool_choice.as_str(), "required");
    assert_eq!(HostRequest::from_json(&first.to_json()).unwrap(), first);
}

#[test]
fn a_native_tool_call_runs_and_is_answered() {
    let (agent, requests) = agent_on(Config::default(), |turn, request, sink| {
        match turn {
            1 => {
                sink.text("Let me look.");
                sink.emit(HostOutput::ToolCall {
                    name: "get_weather".into(),
                    // JSON text, as a provider streams it.
                    arguments: json!("{\"city\": \"Paris\"}"),
                });
            }
            _ => {
                let result = request.messages.last().unwrap();
                assert_eq!(result.role, Role::Tool);
                sink.text(format!("It is {}.", result.content));
            }
        }
        Ok(())
    });
    agent.register_tool(weather_tool());
    let response = agent
        .chat("Weather in Paris?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].name, "get_weather");
    assert_eq!(response.tool_calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!({"city": "Paris", "temperature": 21}))
    );
    assert_eq!(
        response.text,
        "It is {\"city\":\"Paris\",\"temperature\":21}."
    );
    assert_eq!(response.metrics.iterations, 2);
    assert_eq!(requests.lock().unwrap().len(), 2);
}

#[test]
fn a_call_written_in_the_text_is_parsed_as_a_local_models() {
    let (agent, _) = agent_on(Config::default(), |turn, _, sink| {
        if turn == 1 {
            sink.text("<tool_call>\n{\"name\": \"get_weather\", ");
            sink.text("\"arguments\": {\"city\": \"Rome\"}}\n</tool_call>");
        } else {
            sink.text("Sunny.");
        }
        Ok(())
    });
    agent.register_tool(weather_tool());
    let (response, tokens) = tokens_of(&agent, "Rome?");
    let response = response.unwrap();
    assert_eq!(response.tool_calls[0].arguments, json!({"city": "Rome"}));
    assert_eq!(response.text, "Sunny.");
    // The markup never reaches the tokens.
    assert_eq!(tokens.concat(), "Sunny.");
}

#[test]
fn a_bad_call_is_corrected_as_for_any_model() {
    let (agent, requests) = agent_on(Config::default(), |turn, _, sink| {
        match turn {
            1 => sink.emit(HostOutput::ToolCall {
                name: "get_weather".into(),
                arguments: json!({"town": "Paris"}),
            }),
            2 => sink.emit(HostOutput::ToolCall {
                name: "get_weather".into(),
                arguments: json!({"city": "Paris"}),
            }),
            _ => sink.text("Done."),
        };
        Ok(())
    });
    agent.register_tool(weather_tool());
    let response = agent.chat("Paris?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.tool_errors.len(), 1);
    assert_eq!(
        response.tool_errors[0].kind,
        ErrorCode::ToolValidationFailed
    );
    assert_eq!(response.text, "Done.");
    let second = requests.lock().unwrap()[1].clone();
    let told = second.messages.last().unwrap();
    assert!(told.is_error, "{told:?}");
}

#[test]
fn a_failing_host_is_provider_failed_and_the_agent_goes_on() {
    let (agent, _) = agent_on(Config::default(), |turn, _, sink| match turn {
        1 => {
            sink.text("One.");
            Ok(())
        }
        2 => {
            sink.text("partial ");
            Err("the gateway answered 503".into())
        }
        3 => {
            sink.emit(HostOutput::Error {
                message: "quota exceeded".into(),
            });
            // Dropped: the reply has failed, and the host is told.
            assert!(!sink.text("ignored"));
            assert!(sink.wait_cancelled(Some(Duration::from_secs(60))));
            Ok(())
        }
        4 => panic!("a bug in the host"),
        _ => {
            sink.text("Fine.");
            Ok(())
        }
    });
    agent.chat("one", ChatOptions::new()).wait().unwrap();
    let history = agent.history();
    assert_eq!(history.len(), 2, "{history:?}");
    let before = agent.history();
    let error = agent.chat("two", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.to_string(),
        "provider host failed: the gateway answered 503"
    );
    assert_eq!(agent.history(), before, "a failed chat leaves no trace");
    let error = agent.chat("quota", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(error.to_string(), "provider host failed: quota exceeded");
    assert_eq!(agent.history(), before, "a failed chat leaves no trace");
    let error = agent.chat("three", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert!(
        error.to_string().starts_with(
            "provider host failed: the host backend's generate panicked: a bug in the host"
        ),
        "{error}"
    );
    assert_eq!(agent.history(), before);
    let response = agent.chat("four", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Fine.");
}

#[test]
fn the_first_failure_is_reported_with_the_hosts_words() {
    let (agent, _) = agent_on(Config::default(), |_, _, _| {
        Err("the gateway answered 503".into())
    });
    let error = agent.chat("one", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error.to_string(),
        "provider host failed: the gateway answered 503"
    );
    assert!(agent.history().is_empty());
}

/// A host that streams one piece, tells the test, then waits for the stop.
fn waiting_host(
    started: Sender<()>,
    saw_cancel: Sender<bool>,
) -> impl FnMut(usize, &HostRequest, &HostSink) -> Result<(), String> + Send + 'static {
    move |turn, _, sink| {
        if turn > 1 {
            sink.text("Again.");
            return Ok(());
        }
        sink.text("Thinking about it");
        started.send(()).unwrap();
        let cancelled = sink.wait_cancelled(Some(Duration::from_secs(60)));
        // What comes after the stop is dropped.
        let accepted = sink.text(" and more");
        saw_cancel.send(cancelled && !accepted).unwrap();
        Ok(())
    }
}

#[test]
fn a_stop_during_a_reply_reaches_the_host_and_the_agent_goes_on() {
    let (started_tx, started) = channel();
    let (seen_tx, seen) = channel();
    let (agent, _) = agent_on(Config::default(), waiting_host(started_tx, seen_tx));
    let handle = agent.chat("Go", ChatOptions::new());
    started.recv_timeout(PROMPT).unwrap();
    let stopped = Instant::now();
    agent.stop();
    let response = handle.wait().unwrap();
    assert!(stopped.elapsed() < PROMPT);
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert_eq!(response.text, "Thinking about it");
    assert!(seen.recv_timeout(PROMPT).unwrap(), "the host saw the stop");
    let response = agent.chat("Once more", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Again.");
}

#[test]
fn a_stop_does_not_wait_for_a_host_that_ignores_it() {
    let (release_tx, release): (Sender<()>, Receiver<()>) = channel();
    let (started_tx, started) = channel();
    let release = Mutex::new(release);
    let (agent, requests) = agent_on(Config::default(), move |turn, _, sink| {
        if turn == 1 {
            started_tx.send(()).unwrap();
            // Blocks without looking at the sink until the test lets go.
            release.lock().unwrap().recv().unwrap();
            assert!(!sink.text("too late"));
        } else {
            sink.text("Next.");
        }
        Ok(())
    });
    let handle = agent.chat("Go", ChatOptions::new());
    started.recv_timeout(PROMPT).unwrap();
    agent.stop();
    let response = handle
        .wait_timeout(PROMPT)
        .expect("the stop does not wait")
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    // The next reply queues behind the host's call, which then returns.
    let next = agent.chat("Next?", ChatOptions::new());
    release_tx.send(()).unwrap();
    assert_eq!(next.wait().unwrap().text, "Next.");
    assert_eq!(requests.lock().unwrap().len(), 2);
}

#[test]
fn the_engine_cuts_the_text_at_a_stop_string() {
    let (seen_tx, seen) = channel();
    let (agent, _) = agent_on(
        Config::from_json(r#"{"stop": ["END"]}"#).unwrap(),
        move |_, _, sink| {
            sink.text("Hello there E");
            sink.text("ND and more");
            seen_tx
                .send(sink.wait_cancelled(Some(Duration::from_secs(60))))
                .unwrap();
            Ok(())
        },
    );
    let (response, tokens) = tokens_of(&agent, "hi");
    let response = response.unwrap();
    assert_eq!(response.text, "Hello there");
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert_eq!(tokens.concat(), "Hello there E");
    assert!(
        seen.recv_timeout(PROMPT).unwrap(),
        "the host is told to stop"
    );
}

#[test]
fn the_chats_time_limit_ends_a_slow_reply() {
    let (agent, requests) = agent_on(Config::default(), |_, request, sink| {
        assert!(request.time_left_ms.is_some());
        sink.text("Slow");
        sink.wait_cancelled(Some(Duration::from_secs(60)));
        Ok(())
    });
    let response = agent
        .chat("Go", ChatOptions::new().max_duration_ms(200))
        .wait()
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Limit);
    assert_eq!(response.text, "Slow");
    assert!(requests.lock().unwrap()[0].time_left_ms.unwrap() <= 200);
}

#[test]
fn a_length_finish_and_thinking_stay_out_of_the_text() {
    let (agent, _) = agent_on(Config::default(), |_, _, sink| {
        sink.emit(HostOutput::Thinking {
            text: "The user greets me.".into(),
        });
        sink.text("Hello and");
        sink.emit(HostOutput::from_json(r#"{"type": "finish", "reason": "length"}"#).unwrap());
        Ok(())
    });
    let (response, tokens) = tokens_of(&agent, "hi");
    let response = response.unwrap();
    assert_eq!(response.stop_reason, StopReason::Length);
    assert_eq!(response.text, "Hello and");
    assert_eq!(tokens.concat(), "Hello and");
}

#[test]
fn without_usage_the_counts_are_estimates() {
    let (agent, _) = agent_on(Config::default(), |_, _, sink| {
        sink.text("abcdefgh");
        Ok(())
    });
    let response = agent.chat("abcd", ChatOptions::new()).wait().unwrap();
    // 4 bytes a token plus 4 for a message's markup.
    assert_eq!(response.usage.prompt_tokens, 5);
    assert_eq!(response.usage.completion_tokens, 2);
}

/// A host that counts one token per byte, and fails to count "uncountable".
struct Counting;

impl HostModel for Counting {
    fn generate(&mut self, _: &HostRequest, sink: &HostSink) -> Result<(), String> {
        sink.text("ok");
        Ok(())
    }

    fn counts_tokens(&self) -> bool {
        true
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32, String> {
        if message.content == "uncountable" {
            return Err("no tokenizer for that".into());
        }
        Ok(message.content.len() as u32)
    }
}

#[test]
fn a_host_that_counts_tokens_is_asked() {
    // A context of 64 tokens: a 100-byte message does not fit.
    let agent = Agent::with_host_backend(Counting, Config::default().context_size(64)).unwrap();
    assert_eq!(
        agent.chat("short", ChatOptions::new()).wait().unwrap().text,
        "ok"
    );
    let error = agent
        .chat("x".repeat(100), ChatOptions::new())
        .wait()
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ContextOverflow, "{error}");
    let error = agent
        .chat("uncountable", ChatOptions::new())
        .wait()
        .unwrap_err();
    assert_eq!(error.code(), ErrorCode::ProviderFailed);
    assert_eq!(
        error.to_string(),
        "provider host failed: count_tokens failed: no tokenizer for that"
    );
}

#[test]
fn the_host_provider_is_settings_not_a_backend() {
    let config = Config::from_json(r#"{"provider": {"type": "host"}}"#).unwrap();
    let error = Agent::create(config).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidConfig);
    assert!(
        error
            .to_string()
            .starts_with("invalid config `provider.type`: `host` needs the backend object itself"),
        "{error}"
    );
    let error =
        Config::from_json(r#"{"provider": {"type": "host", "thinking": "max"}}"#).unwrap_err();
    assert_eq!(
        error.to_string(),
        r#"invalid config `provider.thinking`: expected "off", "low", "medium" or "high", got "max""#
    );
    let error = Config::from_json(r#"{"provider": {"type": "host", "model": "x"}}"#).unwrap_err();
    assert_eq!(error.code(), ErrorCode::InvalidConfig);
    assert!(error.to_string().contains("provider.model"), "{error}");
    let mock = Config::from_json(r#"{"provider": {"type": "mock"}}"#).unwrap();
    let error = Agent::with_host_backend(Counting, mock).unwrap_err();
    assert_eq!(
        error.to_string(),
        "invalid config `provider`: an agent on a host backend takes no other provider (got `mock`)"
    );
}

#[test]
fn the_host_runs_on_a_thread_of_the_agents_own() {
    let (agent, _) = agent_on(Config::default(), |_, _, sink| {
        sink.text(format!("{:?}", std::thread::current().name()));
        Ok(())
    });
    let response = agent.chat("where?", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.text, "Some(\"zoo-host\")");
}

#[test]
fn a_fast_host_waits_for_a_slow_chat_and_loses_nothing() {
    const PIECES: usize = 5_000;
    let (agent, _) = agent_on(Config::default(), |_, _, sink| {
        for i in 0..PIECES {
            assert!(sink.text(format!("{} ", i % 10)));
        }
        Ok(())
    });
    let seen = Arc::new(Mutex::new(0usize));
    let counter = Arc::clone(&seen);
    let response = agent
        .chat(
            "Count",
            // Slower than the host for the first pieces: its emits wait.
            ChatOptions::new().on_token(move |_| {
                let mut seen = counter.lock().unwrap();
                *seen += 1;
                if *seen < 50 {
                    std::thread::sleep(Duration::from_millis(1));
                }
            }),
        )
        .wait()
        .unwrap();
    assert_eq!(*seen.lock().unwrap(), PIECES);
    assert_eq!(response.text.split_whitespace().count(), PIECES);
}

#[test]
fn a_reply_past_64_mib_fails() {
    let (agent, _) = agent_on(Config::default(), |_, _, sink| {
        let piece = "x".repeat(1024 * 1024);
        for _ in 0..65 {
            if !sink.text(piece.as_str()) {
                return Ok(());
            }
        }
        Err("the engine took more than 64 MiB".into())
    });
    let error = agent.chat("Flood", ChatOptions::new()).wait().unwrap_err();
    assert_eq!(
        error.to_string(),
        "provider host failed: the reply passed 64 MiB without ending"
    );
    assert!(agent.history().is_empty());
}
