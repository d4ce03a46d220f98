//! Real-model integration tests on SmolLM2-135M-Instruct (and Gemma 3 270M),
//! run in CI after `scripts/fetch-models --all`. A missing model is a test
//! failure that says how to fetch it, never a skip.

#![cfg(feature = "llama")]

use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard, OnceLock};
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zoo_core::backend::llama::{
    ArgumentBias, ChannelScore, ValueCopy, WordMatch, DEFAULT_CHANNEL_SCORE, DEFAULT_VALUE_COPY,
    DEFAULT_WORD_MATCH,
};
use zoo_core::backend::{CacheHint, FinishReason, GenerateRequest};
use zoo_core::tools::parser;
use zoo_core::{
    Agent, Backend, CancelToken, ChatOptions, Config, ErrorCode, EventKind, LlamaBackend, Message,
    Model, ModelParams, Response, Role, StopReason, Tool, ToolCall, ToolChoice, ToolDefinition,
};

fn model_path(file: &str) -> PathBuf {
    let dir = std::env::var_os("ZOO_MODELS_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models"));
    let path = dir.join(file);
    assert!(
        path.exists(),
        "{} is missing: run `scripts/fetch-models --all` first",
        path.display()
    );
    path
}

fn smollm2_path() -> PathBuf {
    model_path("SmolLM2-135M-Instruct.Q4_1.gguf")
}

/// The default model, loaded once and shared by every test (as users share it).
fn smollm2() -> Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL
        .get_or_init(|| Model::load(smollm2_path(), ModelParams::default()).expect("SmolLM2 loads"))
        .clone()
}

/// The second architecture (sliding-window attention), loaded once.
fn gemma3() -> Model {
    static MODEL: OnceLock<Model> = OnceLock::new();
    MODEL
        .get_or_init(|| {
            Model::load(
                model_path("gemma-3-270m-q4_k_m.gguf"),
                ModelParams::default(),
            )
            .expect("Gemma 3 loads")
        })
        .clone()
}

/// The machine has two cores: real-model tests run one at a time, so that
/// timings (cancellation latency) mean something.
fn serial() -> MutexGuard<'static, ()> {
    static LOCK: Mutex<()> = Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// Greedy replies on one thread. Two fixed threads beside a busy process
/// stall at every barrier of the graph (the real-model tests took 43
/// minutes of a CI run beside two `yes > /dev/null`), and the default,
/// which follows the free cores, changes the thread count between two
/// decodes that a test compares token for token: llama.cpp's sums are
/// split by thread, so a resumed session then answered differently from a
/// fresh decode of the same history.
fn greedy() -> Config {
    Config::default()
        .temperature(0.0)
        .context_size(2048)
        .threads(1)
        .seed(7)
}

fn weather_tool(calls: Arc<Mutex<Vec<Value>>>) -> Tool {
    Tool::new(
        "get_weather",
        "Get the current weather for a city",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"]
        }),
        move |args| {
            calls.lock().unwrap().push(args.clone());
            Ok(json!({"city": args["city"], "temperature_celsius": 17, "sky": "cloudy"}))
        },
    )
    .unwrap()
}

#[test]
fn second_turn_reuses_the_kv_cache_and_matches_a_full_decode() {
    let _serial = serial();
    let agent = Agent::with_model(smollm2(), greedy().max_tokens(40)).unwrap();
    let first = agent
        .chat("Name three colors.", ChatOptions::new())
        .wait()
        .unwrap();
    assert!(!first.text.is_empty());
    let second = agent
        .chat("Which of them is the color of the sky?", ChatOptions::new())
        .wait()
        .unwrap();
    assert!(
        second.usage.cached_tokens > 0,
        "turn two reused nothing: {:?}",
        second.usage
    );
    assert!(second.usage.cached_tokens < second.usage.prompt_tokens);

    // The same conversation decoded from scratch by a fresh agent gives the
    // same greedy output: reuse changes speed, never the answer.
    let fresh = Agent::with_model(smollm2(), greedy().max_tokens(40)).unwrap();
    let history = agent.history();
    fresh.set_history(history[..2].to_vec()).unwrap();
    let again = fresh
        .chat("Which of them is the color of the sky?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(again.usage.cached_tokens, 0);
    assert_eq!(again.text, second.text);
}

#[test]
fn required_tool_call_reaches_the_handler_and_the_answer_uses_the_result() {
    let _serial = serial();
    let calls = Arc::new(Mutex::new(Vec::new()));
    let agent = Agent::with_model(smollm2(), greedy().max_tokens(64)).unwrap();
    agent.register_tool(weather_tool(calls.clone()));
    let options = ChatOptions::new().tool_choice(ToolChoice::Required);
    let response = agent
        .chat("What is the weather like in Paris today?", options)
        .wait()
        .unwrap();
    let calls = calls.lock().unwrap().clone();
    assert_eq!(calls.len(), 1, "{response:#?}");
    assert!(
        calls[0]["city"]
            .as_str()
            .is_some_and(|c| c.contains("Paris")),
        "{calls:?}"
    );
    assert!(
        response.tool_errors.is_empty(),
        "{:?}",
        response.tool_errors
    );
    assert_eq!(response.stop_reason, StopReason::Stop);
    assert!(
        response.text.contains("17") || response.text.to_lowercase().contains("cloud"),
        "the final answer does not use the tool result: {}",
        response.text
    );
}

/// Five tools with varied parameter types.
fn suite_tools() -> Vec<ToolDefinition> {
    let def = |name: &str, description: &str, parameters: Value| ToolDefinition {
        name: name.into(),
        description: description.into(),
        parameters,
    };
    vec![
        def(
            "get_weather",
            "Get the current weather for a city",
            json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string"},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["city"]
            }),
        ),
        def(
            "calculate",
            "Apply an arithmetic operation to two numbers",
            json!({
                "type": "object",
                "properties": {
                    "a": {"type": "number"},
                    "b": {"type": "number"},
                    "op": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]}
                },
                "required": ["a", "b", "op"]
            }),
        ),
        def(
            "set_alarm",
            "Set an alarm at a time of day",
            json!({
                "type": "object",
                "properties": {
                    "hour": {"type": "integer", "minimum": 0, "maximum": 23},
                    "minute": {"type": "integer", "minimum": 0, "maximum": 59},
                    "label": {"type": "string"}
                },
                "required": ["hour", "minute"]
            }),
        ),
        def(
            "search_web",
            "Search the web",
            json!({
                "type": "object",
                "properties": {
                    "query": {"type": "string"},
                    "max_results": {"type": "integer", "minimum": 1, "maximum": 20}
                },
                "required": ["query"]
            }),
        ),
        def(
            "send_email",
            "Send an email",
            json!({
                "type": "object",
                "properties": {
                    "to": {"type": "string"},
                    "subject": {"type": "string"},
                    "urgent": {"type": "boolean"},
                    "cc": {"type": "array", "items": {"type": "string"}}
                },
                "required": ["to", "subject", "urgent"]
            }),
        ),
    ]
}

const SUITE_PROMPTS: [&str; 22] = [
    "What's the weather in Tokyo?",
    "Is it cold in Oslo right now, in fahrenheit?",
    "Tell me the weather for Cairo.",
    "What is 17 times 23?",
    "Add 1.5 and 2.25.",
    "Divide 100 by 7.",
    "Subtract 9 from 40.",
    "Wake me up at 6:30.",
    "Set an alarm for 18:45 called dinner.",
    "Set an alarm at 7 in the morning.",
    "Search the web for Rust async tutorials.",
    "Find five articles about llamas.",
    "Look up the population of Brazil.",
    "Email bob@example.com that the meeting moved, it is urgent.",
    "Send a non-urgent email to alice@example.com with subject Lunch.",
    "Write to team@example.com about the release, copy carol@example.com.",
    "How warm is it in Lisbon?",
    "What is 2 to the power of 3? Use multiplication.",
    "Remind me at noon.",
    "Search for the best pizza in Naples.",
    "Email the boss at boss@example.com: I am sick today. Urgent.",
    "Weather in New York in celsius please.",
];

#[test]
fn required_calls_always_parse_and_validate() {
    required_calls_parse_and_validate_with(None);
}

/// A forced call runs past `max_tokens` to its end: a limit of 4 tokens
/// would otherwise cut every call inside its name.
#[test]
fn required_calls_finish_whatever_max_tokens() {
    required_calls_parse_and_validate_with(Some(4));
}

fn required_calls_parse_and_validate_with(max_tokens: Option<u32>) {
    let _serial = serial();
    let model = smollm2();
    let config = greedy();
    let mut backend = LlamaBackend::new(&model, &config).unwrap();
    let tools = suite_tools();
    let validators: Vec<Tool> = tools
        .iter()
        .map(|d| {
            Tool::new(&d.name, &d.description, d.parameters.clone(), |_| {
                Ok(json!(null))
            })
            .unwrap()
        })
        .collect();
    let mut failures = Vec::new();
    for prompt in SUITE_PROMPTS {
        let messages = vec![Message::user(prompt)];
        let request = GenerateRequest {
            messages: &messages,
            tools: &tools,
            tool_choice: &ToolChoice::Required,
            max_tokens,
            max_calls: 1,
            stop: &[],
            cache_hint: CacheHint::default(),
            deadline: None,
        };
        let generation = backend
            .generate(&request, &mut |_| {}, &CancelToken::new())
            .unwrap();
        assert_eq!(
            generation.finish,
            FinishReason::Stop,
            "{prompt}: {:?}",
            generation.text.chars().take(300).collect::<String>()
        );
        let parsed = parser::parse(&generation.text);
        match (parsed.calls.as_slice(), parsed.failures.as_slice()) {
            ([call], []) => {
                let tool = validators
                    .iter()
                    .find(|t| t.name() == call.name)
                    .expect("known tool");
                // The grammar promises the schema. A value that repeats the
                // tool's name is schema-valid; the agentic loop refuses it
                // and the model corrects it (the scenario
                // value_repeating_the_tool_name_is_corrected), so it is
                // reported here, not counted as a broken call.
                let schema = jsonschema::validator_for(&tool.definition().parameters).unwrap();
                let problems: Vec<String> = schema
                    .iter_errors(&call.arguments)
                    .map(|e| e.to_string())
                    .collect();
                if !problems.is_empty() {
                    failures.push(format!("{prompt}: {}", problems.join("; ")));
                } else if let Err(e) = tool.validate(&call.arguments) {
                    eprintln!("{prompt}: {e}");
                }
            }
            _ => failures.push(format!("{prompt}: not one call: {}", generation.text)),
        }
    }
    assert!(
        failures.is_empty(),
        "{} of {} failed:\n{}",
        failures.len(),
        SUITE_PROMPTS.len(),
        failures.join("\n")
    );
}

/// One of the eval's tool sets (tests/eval/tool_sets.json): `assistant`,
/// the five everyday tools, or `home`, the home-automation ones.
fn eval_tools(set: &str) -> Vec<ToolDefinition> {
    let sets: Value = serde_json::from_str(
        &std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../tests/eval/tool_sets.json"
        ))
        .unwrap(),
    )
    .unwrap();
    serde_json::from_value(sets[set].clone()).unwrap()
}

/// The forced call SmolLM2 writes for `prompt` with `tools` (greedy).
fn forced_call(backend: &mut LlamaBackend, prompt: &str, tools: &[ToolDefinition]) -> ToolCall {
    let messages = vec![
        Message::system("You are a helpful assistant."),
        Message::user(prompt),
    ];
    let request = GenerateRequest {
        messages: &messages,
        tools,
        tool_choice: &ToolChoice::Required,
        max_tokens: Some(96),
        max_calls: 1,
        stop: &[],
        cache_hint: CacheHint::default(),
        deadline: None,
    };
    let generation = backend
        .generate(&request, &mut |_| {}, &CancelToken::new())
        .unwrap();
    let parsed = parser::parse(&generation.text);
    assert_eq!(parsed.calls.len(), 1, "{prompt}: {}", generation.text);
    let call = &parsed.calls[0];
    ToolCall {
        id: String::new(),
        name: call.name.clone(),
        arguments: call.arguments.clone(),
    }
}

/// The question's words steer a forced call: with `ArgumentBias` (off by
/// default) values are pulled toward the question without looping on it,
/// and with `WordMatch` (on by default) the tool its words name wins over
/// the one the model alone prefers. On the eval's tune split SmolLM2 alone
/// called `lights_on` for "Lights off in the office" and `get_weather` for
/// a timer; with a pull that stayed on after use it wrote
/// `door_lock_door_door_...` to the grammar's bound for "Please lock the
/// back door." (a report-split case).
#[test]
fn the_questions_words_steer_a_forced_call() {
    let _serial = serial();
    let model = smollm2();
    let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
    let home = eval_tools("home");
    backend.set_argument_bias(ArgumentBias {
        toward_question: 2.0,
        against_tool_names: 5.0,
    });
    let call = forced_call(&mut backend, "Please lock the back door.", &home);
    assert_eq!(call.name, "lock_door", "{call:?}");
    let door = call.arguments["door"].as_str().unwrap_or_default();
    assert!(door.len() <= 20, "the value loops: {door:?}");
    // The model alone: the wrong tool, as the eval measured.
    backend.set_word_match(WordMatch::OFF);
    backend.set_channel_score(ChannelScore::OFF);
    let call = forced_call(&mut backend, "Lights off in the office.", &home);
    assert_eq!(call.name, "lights_on", "{call:?}");
    backend.set_word_match(DEFAULT_WORD_MATCH);
    backend.set_channel_score(DEFAULT_CHANNEL_SCORE);
    let call = forced_call(&mut backend, "Lights off in the office.", &home);
    assert_eq!(call.name, "lights_off", "{call:?}");
    let call = forced_call(
        &mut backend,
        "Remind me in 45 minutes with a timer.",
        &eval_tools("assistant"),
    );
    assert_eq!(call.name, "set_timer", "{call:?}");
}

/// A forced call names the tool whose text makes the question most likely
/// (the noisy channel, `ChannelScore`). On the eval's report split the
/// whole-name score with the word prior called `calculate` for these three
/// (margins of 0.2 to 2.2 nats) and `unlock_door` for "Phone Dr. Patel.";
/// the channel score ranks the right tool first by 2.7 to 4.3 nats, and
/// with it the calls are right.
#[test]
fn a_forced_call_names_the_tool_that_explains_the_question() {
    let _serial = serial();
    let model = smollm2();
    let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
    for (prompt, set, tool) in [
        (
            "When was the Eiffel Tower built?",
            "assistant",
            "encyclopedia",
        ),
        (
            "I have 18 AUD. How many NZD is that?",
            "assistant",
            "convert_currency",
        ),
        (
            "My book costs 9.99 EUR. What is that in GBP?",
            "assistant",
            "convert_currency",
        ),
        ("Phone Dr. Patel.", "home", "call_contact"),
    ] {
        let tools = eval_tools(set);
        let messages = [Message::user(prompt)];
        let channel = backend.channel_logprobs(&messages, &tools).unwrap();
        let (best, _) = tools
            .iter()
            .zip(&channel)
            .max_by(|a, b| a.1.total_cmp(b.1))
            .unwrap();
        assert_eq!(best.name, tool, "{prompt}: channel {channel:?}");
        let call = forced_call(&mut backend, prompt, &tools);
        assert_eq!(call.name, tool, "{prompt}: {call:?}");
    }
}

/// The channel keeps each tool's text decoded and decodes only the next
/// question after it: a tool's score must not depend on which questions and
/// tool sets were scored before (each text is decoded on its own, so its
/// cells are the same however it came to be held), and a question scored
/// against texts held from before must score as against texts decoded anew.
#[test]
fn channel_scores_do_not_depend_on_what_was_scored_before() {
    let _serial = serial();
    let model = smollm2();
    let home = eval_tools("home");
    let travel = eval_tools("travel");
    let lock = [Message::user("Lock the garage door.")];
    let flights = [Message::user("Find flights from Paris to Rome.")];
    let fresh = |messages: &[Message], tools: &[ToolDefinition]| {
        let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
        backend.channel_logprobs(messages, tools).unwrap()
    };
    let lock_fresh = fresh(&lock, &home);
    let flights_fresh = fresh(&flights, &travel);
    assert!(
        lock_fresh.iter().all(|l| l.is_finite() && *l < 0.0),
        "{lock_fresh:?}"
    );

    let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
    let mut score = |messages: &[Message], tools: &[ToolDefinition]| {
        backend.channel_logprobs(messages, tools).unwrap()
    };
    assert_eq!(score(&lock, &home), lock_fresh, "first pass");
    // Texts held from the last pass, another question.
    let other = score(&[Message::user("Play some Beatles.")], &home);
    assert_ne!(other, lock_fresh);
    assert_eq!(score(&lock, &home), lock_fresh, "texts held from before");
    // Another tool set takes the sequences, then the first comes back.
    assert_eq!(
        score(&flights, &travel),
        flights_fresh,
        "after the home set"
    );
    assert_eq!(score(&lock, &home), lock_fresh, "after the travel set");
}

/// A call's values copied whole from the question (`ValueCopy`, margin
/// 4). On the eval's tune split SmolLM2 named the contact
/// `phone_contact_to_contact_list_...`, chose `add` for "Multiply", and
/// left the 12 of "Put 12 eggs" and the 4 of "Book 4 nights" out of the
/// call, wrote `from: USD` for "40 EUR in US dollars", a sentence for the
/// octopus's topic, and no date for the flights; with the copy each is the
/// question's own.
#[test]
fn values_are_copied_whole_from_the_question() {
    let _serial = serial();
    let model = smollm2();
    let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
    backend.set_value_copy(DEFAULT_VALUE_COPY);
    for (prompt, set, tool, arguments) in [
        (
            "Phone Dr. Patel.",
            "home",
            "call_contact",
            json!({"name": "Dr. Patel"}),
        ),
        (
            "Multiply 12.5 by 4.",
            "assistant",
            "calculate",
            json!({"a": 12.5, "b": 4, "op": "multiply"}),
        ),
        (
            "Put 12 eggs on my shopping list.",
            "home",
            "add_to_shopping_list",
            json!({"item": "eggs", "quantity": 12}),
        ),
        (
            "Book 4 nights at the Park Hyatt.",
            "travel",
            "book_hotel",
            json!({"hotel": "Park Hyatt", "nights": 4}),
        ),
        // Codes in the question's order: `from` was USD.
        (
            "What is 40 EUR in US dollars (USD)?",
            "assistant",
            "convert_currency",
            json!({"amount": 40, "from": "EUR", "to": "USD"}),
        ),
        // A runaway topic ("The octopus is a marine mammal that ...").
        (
            "Tell me facts about the octopus from the encyclopedia.",
            "assistant",
            "encyclopedia",
            json!({"topic": "octopus"}),
        ),
        // A date left out of the call.
        (
            "Are there flights from New York to London on 2026-12-20?",
            "travel",
            "search_flights",
            json!({"origin": "New York", "destination": "London", "date": "2026-12-20"}),
        ),
    ] {
        let call = forced_call(&mut backend, prompt, &eval_tools(set));
        assert_eq!(call.name, tool, "{prompt}: {call:?}");
        for (key, want) in arguments.as_object().unwrap() {
            let got = &call.arguments[key];
            let same = match (got.as_f64(), want.as_f64()) {
                (Some(got), Some(want)) => got == want,
                _ => got == want,
            };
            assert!(same, "{prompt}: {key} is {got}, not {want}: {call:?}");
        }
    }
    // Off, the model writes its own values: copying is what made them.
    backend.set_value_copy(ValueCopy::OFF);
    let call = forced_call(
        &mut backend,
        "Put 12 eggs on my shopping list.",
        &eval_tools("home"),
    );
    assert_ne!(call.arguments.get("quantity"), Some(&json!(12)), "{call:?}");
}

/// A call that loops is steered out of it. On the eval's report split
/// SmolLM2 filled `send_text`'s message with "I'm running late." over and
/// over, and a poem request forced into `encyclopedia` with `a-d-d-d-...`,
/// each to the grammar's bound of 512 characters; the call's own guard
/// trips after 32 tokens of one cycle and ends the string there.
#[test]
fn a_call_that_loops_is_steered_out_of_it() {
    let _serial = serial();
    let model = smollm2();
    let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
    for (prompt, set) in [
        ("Text John that I'm running late.", "home"),
        ("Write a short poem about autumn.", "assistant"),
    ] {
        let call = forced_call(&mut backend, prompt, &eval_tools(set));
        let values = call.arguments.as_object().unwrap().values();
        let longest = values.filter_map(Value::as_str).map(str::len).max();
        assert!(longest.unwrap_or(0) < 200, "{prompt}: {call:?}");
    }
}

/// Prose replies under `auto` with the lazy call grammar armed end
/// normally, and a reply that loops ends soon after the loop begins. In the eval (`examples/rust/tool_eval.rs`, tune split) SmolLM2
/// answered the first prompt with "...using the `<tool_call" and a token
/// that carried more than the grammar can begin with; llama.cpp's lazy
/// grammar throws on it, which aborted the process until the sampler
/// accepted tokens through the exception-catching wrapper. Greedy output
/// depends on the cache's history, so this run may not hit that token: it
/// guards the path, the eval found the case.
#[test]
fn auto_prose_replies_end_normally_and_loops_are_cut() {
    let _serial = serial();
    let model = smollm2();
    let config = greedy().context_size(4096);
    let mut backend = LlamaBackend::new(&model, &config).unwrap();
    let tools = eval_tools("assistant");
    for prompt in [
        "Can you help me write a birthday card message?",
        "Write a short poem about autumn.",
        "Tell me a joke.",
    ] {
        let messages = vec![
            Message::system("You are a helpful assistant."),
            Message::user(prompt),
        ];
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
            .generate(&request, &mut |_| {}, &CancelToken::new())
            .unwrap();
        assert_ne!(generation.finish, FinishReason::Cancelled, "{prompt}");
        // SmolLM2 loops on these under greedy decoding ("A harvest moon's
        // light," until the context is full: 3,900 tokens); the loop is cut
        // once a cycle has repeated over 96 tokens.
        assert!(
            generation.completion_tokens < 1000,
            "{prompt}: {} tokens: {:?}",
            generation.completion_tokens,
            generation.text
        );
    }
}

#[test]
fn stop_cancels_generation_and_prompt_decode_within_100ms() {
    let _serial = serial();
    let agent = Agent::with_model(smollm2(), greedy().context_size(4096)).unwrap();

    // During generation.
    let started = Arc::new(Mutex::new(None::<Instant>));
    let mark = started.clone();
    let handle = agent.chat(
        "Write a very long story about a dragon.",
        ChatOptions::new().on_token(move |_| {
            mark.lock().unwrap().get_or_insert_with(Instant::now);
        }),
    );
    while started.lock().unwrap().is_none() {
        std::thread::sleep(Duration::from_millis(2));
    }
    std::thread::sleep(Duration::from_millis(100));
    let stop = Instant::now();
    agent.stop();
    let response = handle.wait().unwrap();
    let latency = stop.elapsed();
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert!(!response.text.is_empty());
    assert!(
        latency < Duration::from_millis(100),
        "generation stop took {latency:?}"
    );

    // During the prompt decode of a long prompt (about 2,500 tokens).
    let long = "The quick brown fox jumps over the lazy dog. ".repeat(250);
    let first_token = Arc::new(Mutex::new(false));
    let seen = first_token.clone();
    let handle = agent.chat(
        long,
        ChatOptions::new().on_token(move |_| *seen.lock().unwrap() = true),
    );
    std::thread::sleep(Duration::from_millis(300));
    let stop = Instant::now();
    agent.stop();
    let response = handle.wait().unwrap();
    let latency = stop.elapsed();
    assert!(
        !*first_token.lock().unwrap(),
        "the prompt decode finished before the stop"
    );
    assert_eq!(response.stop_reason, StopReason::Cancelled);
    assert!(
        latency < Duration::from_millis(100),
        "prompt-decode stop took {latency:?}"
    );

    // The agent takes the next request normally.
    let next = agent
        .chat("Say hello.", ChatOptions::new().max_tokens(8))
        .wait()
        .unwrap();
    assert!(matches!(
        next.stop_reason,
        StopReason::Stop | StopReason::Length
    ));
    assert!(!next.text.is_empty());
}

#[test]
fn a_stop_inside_a_prompt_batch_leaves_a_cache_that_matches_a_fresh_decode() {
    let _serial = serial();
    // About 1,240 tokens: five 256-token batches, each taking far longer
    // than a stop may, so the stop lands inside one and llama.cpp aborts it.
    let long = format!(
        "{}Summarize this in one sentence.",
        "The quick brown fox jumps over the lazy dog. ".repeat(120)
    );
    let config = greedy().context_size(4096).batch_size(256).max_tokens(12);

    // A fresh agent's answer, and how long the whole prompt takes here.
    let fresh = Agent::with_model(smollm2(), config.clone())
        .unwrap()
        .chat(long.clone(), ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(fresh.usage.cached_tokens, 0);
    assert!(!fresh.text.is_empty());

    // Stopped halfway through the prompt: two or three batches are done.
    let agent = Agent::with_model(smollm2(), config).unwrap();
    let handle = agent.chat(long.clone(), ChatOptions::new());
    std::thread::sleep(Duration::from_secs_f64(fresh.metrics.prompt_ms / 2000.0));
    let stop = Instant::now();
    agent.stop();
    let stopped = handle.wait().unwrap();
    let latency = stop.elapsed();
    assert_eq!(stopped.stop_reason, StopReason::Cancelled);
    assert_eq!(stopped.usage.completion_tokens, 0, "{stopped:?}");
    assert!(
        latency < Duration::from_millis(100),
        "prompt-decode stop took {latency:?}"
    );

    // The same chat again, on an empty history as the fresh agent's, reuses
    // the batches that finished before the stop and answers exactly as the
    // fresh agent did: the interrupted batch left nothing in the cache.
    agent.clear_history().unwrap();
    let again = agent.chat(long, ChatOptions::new()).wait().unwrap();
    assert!(
        again.usage.cached_tokens >= 256,
        "the batches decoded before the stop were not reused: {:?}",
        again.usage
    );
    assert_eq!(again.text, fresh.text);
}

#[test]
fn broken_model_files_give_model_load_failed() {
    let _serial = serial();
    let dir = std::env::temp_dir().join(format!("zoo-broken-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let missing = dir.join("missing.gguf");
    let not_gguf = dir.join("notes.gguf");
    std::fs::write(&not_gguf, "this is not a model").unwrap();
    let truncated = dir.join("truncated.gguf");
    let bytes = std::fs::read(smollm2_path()).unwrap();
    std::fs::write(&truncated, &bytes[..bytes.len() / 3]).unwrap();
    let empty = dir.join("empty.gguf");
    std::fs::write(&empty, "").unwrap();

    for (path, reason) in [
        (&missing, "does not exist"),
        (&not_gguf, "not a GGUF file"),
        (&empty, "too short"),
        (&truncated, "llama.cpp could not load it"),
        (&dir, "directory"),
    ] {
        let e = Model::load(path, ModelParams::default()).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ModelLoadFailed, "{e}");
        let text = e.to_string();
        assert!(
            text.contains(&path.display().to_string()) && text.contains(reason),
            "{text}"
        );
        let e = Agent::create(Config::new(path.display().to_string())).unwrap_err();
        assert_eq!(e.code(), ErrorCode::ModelLoadFailed);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn streaming_never_splits_utf8_and_concatenates_to_the_text() {
    let _serial = serial();
    let agent = Agent::with_model(smollm2(), greedy().max_tokens(48)).unwrap();
    let pieces = Arc::new(Mutex::new(Vec::<String>::new()));
    let sink = pieces.clone();
    let response = agent
        .chat(
            "Translate to French: the café is near the château, déjà vu. Reply with accents.",
            ChatOptions::new().on_token(move |t| sink.lock().unwrap().push(t.to_string())),
        )
        .wait()
        .unwrap();
    let pieces = pieces.lock().unwrap();
    assert!(pieces.len() > 3);
    assert_eq!(pieces.concat(), response.text);
    assert!(!response.text.contains('\u{fffd}'), "{}", response.text);
}

#[test]
fn stop_strings_and_max_tokens_end_the_reply() {
    let _serial = serial();
    let agent =
        Agent::with_model(smollm2(), greedy().max_tokens(64).stop(vec![".".into()])).unwrap();
    let r = agent
        .chat("Describe the sea in two sentences.", ChatOptions::new())
        .wait()
        .unwrap();
    assert!(!r.text.contains('.'), "{}", r.text);
    assert_eq!(r.stop_reason, StopReason::Stop);
    let r = agent
        .chat(
            "Count from one to one hundred in words.",
            ChatOptions::new().max_tokens(5),
        )
        .wait()
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Length);
    assert_eq!(r.usage.completion_tokens, 5);
}

#[test]
fn two_agents_share_one_model() {
    let _serial = serial();
    let model = smollm2();
    let before = model.share_count();
    let a = Agent::with_model(model.clone(), greedy().max_tokens(12)).unwrap();
    let b = Agent::with_model(model.clone(), greedy().max_tokens(12)).unwrap();
    assert!(model.share_count() >= before + 2);
    let ha = a.chat("Say hi.", ChatOptions::new());
    let hb = b.chat("Say bye.", ChatOptions::new());
    let (ra, rb) = (ha.wait().unwrap(), hb.wait().unwrap());
    assert!(!ra.text.is_empty() && !rb.text.is_empty());
    assert_eq!(a.history().len(), 2);
    assert_eq!(b.history()[0].content, "Say bye.");
    drop((a, b));
    assert_eq!(model.share_count(), before);
}

#[test]
fn full_window_prunes_history_instead_of_failing() {
    let _serial = serial();
    let agent = Agent::with_model(smollm2(), greedy().context_size(256).max_tokens(24)).unwrap();
    agent
        .set_system_prompt(Some("You are terse.".into()))
        .unwrap();
    let pruned = Arc::new(Mutex::new(0usize));
    for i in 0..8 {
        let seen = pruned.clone();
        let r = agent
            .chat(
                format!("Fact {i}: tell me something short about the number {i}."),
                ChatOptions::new().on_event(move |e| {
                    if let zoo_core::EventKind::HistoryCompacted {
                        removed: messages, ..
                    } = &e.kind
                    {
                        *seen.lock().unwrap() += messages.len();
                    }
                }),
            )
            .wait()
            .unwrap();
        assert!(!r.text.is_empty());
    }
    assert!(
        *pruned.lock().unwrap() > 0,
        "nothing was pruned in a 256-token window"
    );
    assert_eq!(agent.history()[0].content, "You are terse.");
    // One message that cannot fit is a ContextOverflow error, and the agent survives it.
    let huge = "word ".repeat(400);
    let e = agent.chat(huge, ChatOptions::new()).wait().unwrap_err();
    assert_eq!(e.code(), ErrorCode::ContextOverflow);
    let after = agent.chat("Hi", ChatOptions::new()).wait();
    assert!(after.is_ok(), "{after:?}");
}

#[test]
fn gemma3_loads_and_generates() {
    let _serial = serial();
    let model = gemma3();
    assert_eq!(model.metadata().architecture.as_deref(), Some("gemma3"));
    let agent = Agent::with_model(model, greedy().max_tokens(16)).unwrap();
    let r = agent
        .chat("The capital of France is", ChatOptions::new())
        .wait()
        .unwrap();
    assert!(r.usage.completion_tokens > 0);
    assert!(!r.text.trim().is_empty());
    // Sliding-window attention: the second turn still gives output (reusing
    // the cache or falling back to a full decode).
    let r2 = agent
        .chat("And the capital of Italy is", ChatOptions::new())
        .wait()
        .unwrap();
    assert!(r2.usage.completion_tokens > 0);
}

/// Gemma 3 attends within a 512-token sliding window. With a conversation
/// longer than that, a second turn (prefix reuse) and an edited history
/// (the cache diverges near its start: partial removal, or a full
/// re-decode where the cache refuses it) must give the same greedy output
/// as a fresh agent that decodes everything.
#[test]
fn gemma3_past_its_sliding_window_matches_a_fresh_decode() {
    let _serial = serial();
    let model = gemma3();
    let config = greedy().max_tokens(12);
    let long = "The lighthouse keeper wrote in his log every evening, and the sea kept \
                its own log of storms. "
        .repeat(30);
    let follow_up = "When the storm came, the keeper";
    let fresh_reply = |history: &[Message]| {
        let fresh = Agent::with_model(model.clone(), config.clone()).unwrap();
        fresh.set_history(history.to_vec()).unwrap();
        let reply = fresh.chat(follow_up, ChatOptions::new()).wait().unwrap();
        assert_eq!(reply.usage.cached_tokens, 0);
        reply.text
    };

    let agent = Agent::with_model(model.clone(), config.clone()).unwrap();
    let first = agent.chat(long.clone(), ChatOptions::new()).wait().unwrap();
    assert!(
        first.usage.prompt_tokens > 600,
        "the first turn must pass the 512-token window: {:?}",
        first.usage
    );
    let second = agent.chat(follow_up, ChatOptions::new()).wait().unwrap();
    assert!(second.usage.cached_tokens > 600, "{:?}", second.usage);
    assert_eq!(second.text, fresh_reply(&agent.history()[..2]));

    // The first message changed a few tokens in: almost nothing of the
    // cache still matches.
    let mut edited = agent.history()[..2].to_vec();
    edited[0].content = format!("Long ago. {long}");
    agent.set_history(edited.clone()).unwrap();
    let third = agent.chat(follow_up, ChatOptions::new()).wait().unwrap();
    assert!(third.usage.cached_tokens < 20, "{:?}", third.usage);
    assert_eq!(third.text, fresh_reply(&edited));
}

fn auto_request<'a>(messages: &'a [Message], tools: &'a [ToolDefinition]) -> GenerateRequest<'a> {
    GenerateRequest {
        messages,
        tools,
        tool_choice: &ToolChoice::Auto,
        // Room for a call whose strings run to the grammar's bound.
        max_tokens: Some(200),
        max_calls: 1,
        stop: &[],
        cache_hint: CacheHint::default(),
        deadline: None,
    }
}

#[test]
fn auto_calls_a_tool_when_one_fits_and_answers_in_prose_otherwise() {
    let _serial = serial();
    let model = smollm2();
    let mut backend = LlamaBackend::new(&model, &greedy()).unwrap();
    let tools: Vec<ToolDefinition> = suite_tools();
    let system = Message::system("You are a helpful assistant.");
    let needs_tool = [
        "What's the weather in Tokyo?",
        "What is 17 times 23?",
        "Divide 100 by 7.",
        "Set an alarm for 7 in the morning.",
        "Search the web for Rust async tutorials.",
        "Tell me the current weather in Paris.",
        "Email bob@example.com that the meeting moved, it is urgent.",
        "Add 1234 and 5678.",
    ];
    let needs_none = [
        "Tell me a joke.",
        "Write a haiku about the sea.",
        "Who wrote Romeo and Juliet?",
        "Hello! How are you?",
        "What is photosynthesis?",
        "Name three fruits.",
        "Describe a cat in one sentence.",
        "What is the opposite of cold?",
    ];
    let mut reply = |prompt: &str| {
        let messages = vec![system.clone(), Message::user(prompt)];
        let request = auto_request(&messages, &tools);
        let score = backend.call_opening_logprob(&request).unwrap();
        let generation = backend
            .generate(&request, &mut |_| {}, &CancelToken::new())
            .unwrap();
        let parsed = parser::parse(&generation.text);
        eprintln!("{score:7.2} {prompt} -> {:?}", generation.text);
        parsed
    };
    let called = needs_tool
        .iter()
        .filter(|p| reply(p).calls.len() == 1)
        .count();
    let prose = needs_none
        .iter()
        .filter(|p| {
            let parsed = reply(p);
            parsed.calls.is_empty() && parsed.failures.is_empty() && !parsed.content.is_empty()
        })
        .count();
    // Measured 17/20 both ways on the larger set of examples/rust/tool_eval.rs.
    assert!(
        called >= 6,
        "auto called a tool for only {called}/8 prompts that need one"
    );
    assert!(
        prose >= 6,
        "auto answered in prose for only {prose}/8 prompts that need no tool"
    );
}

/// A chat template that loops 10^12 times used to hold the inference
/// thread for good (no stop reaches a render, so dropping the agent
/// blocked). It now runs out of fuel: the chat fails within seconds with
/// InvalidConfig `template`, every time, and a stop and a drop are prompt.
#[test]
fn runaway_chat_template_fails_the_chat_and_the_agent_drops_promptly() {
    let _serial = serial();
    let runaway = "{% for i in range(100000) %}{% for j in range(100000) %}\
                   {% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}";
    let config = greedy().template(zoo_core::TemplateChoice::Custom(runaway.into()));
    let agent = Agent::with_model(smollm2(), config).unwrap();
    for _ in 0..2 {
        let start = Instant::now();
        let err = agent.chat("Hi", ChatOptions::new()).wait().unwrap_err();
        let elapsed = start.elapsed();
        eprintln!("the chat failed after {elapsed:?}: {err}");
        assert!(
            matches!(&err, zoo_core::Error::InvalidConfig { key, reason }
                if key == "template" && reason.contains("ran out of fuel")),
            "{err}"
        );
        assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    }
    // A stop while the template runs, then a drop: both return promptly.
    let handle = agent.chat("Hi again", ChatOptions::new());
    agent.stop();
    let start = Instant::now();
    drop(agent);
    let elapsed = start.elapsed();
    assert!(elapsed < Duration::from_secs(10), "{elapsed:?}");
    assert!(handle.wait().is_err());
}

#[test]
fn a_stop_at_any_moment_leaves_a_history_the_next_chat_takes() {
    // The reliability issue on the real model: a stop just after the turn
    // starts (prompt decode), during generation, and while a forced tool
    // call's handler blocks. Each time the history stays valid and the next
    // chat answers normally.
    let _serial = serial();
    let agent = Agent::with_model(smollm2(), greedy().max_tokens(48)).unwrap();
    let (started_tx, started_rx) = std::sync::mpsc::channel::<()>();
    let (release_tx, release_rx) = std::sync::mpsc::channel::<()>();
    let started_tx = Mutex::new(started_tx);
    let release_rx = Mutex::new(release_rx);
    agent.register_tool(
        Tool::new(
            "get_weather",
            "Get the current weather for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
            move |_| {
                started_tx.lock().unwrap().send(()).unwrap();
                let _ = release_rx.lock().unwrap().recv();
                Ok(json!({"temperature_celsius": 17}))
            },
        )
        .unwrap(),
    );
    // Only a hang should reach it: beside four busy processes, a forced call
    // with two threads took over 60 s to reach the handler.
    let generous = Duration::from_secs(600);

    // 1. At once: nothing of the turn may remain.
    let before = agent.history();
    let cancel = CancelToken::new();
    cancel.cancel();
    let r = agent
        .chat(
            "Tell me about Paris.",
            ChatOptions::new().cancel_token(cancel),
        )
        .wait()
        .unwrap();
    assert_eq!(r.stop_reason, StopReason::Cancelled);
    assert_eq!(agent.history(), before);

    // 2. During generation, after the first streamed token.
    let (token_tx, token_rx) = std::sync::mpsc::channel::<()>();
    let token_tx = Mutex::new(token_tx);
    let handle = agent.chat(
        "Write a long story about a cat.",
        ChatOptions::new()
            .tool_choice(ToolChoice::None)
            .on_token(move |_| {
                let _ = token_tx.lock().unwrap().send(());
            }),
    );
    token_rx.recv_timeout(generous).expect("a first token");
    agent.stop();
    let r = handle.wait_timeout(generous).expect("ends").unwrap();
    assert!(matches!(
        r.stop_reason,
        StopReason::Cancelled | StopReason::Length
    ));
    assert_eq!(
        agent.history().last().unwrap().role,
        zoo_core::Role::Assistant
    );

    // 3. While the forced call's handler blocks: the chat ends without it.
    let handle = agent.chat(
        "What is the weather in Paris?",
        ChatOptions::new().tool_choice(ToolChoice::Required),
    );
    started_rx.recv_timeout(generous).expect("the handler runs");
    let stopped = Instant::now();
    agent.stop();
    let r = handle.wait_timeout(generous).expect("ends").unwrap();
    assert!(
        stopped.elapsed() < Duration::from_secs(10),
        "the stop waited for the handler"
    );
    assert_eq!(r.stop_reason, StopReason::Cancelled);
    let tool = agent.history().into_iter().last().unwrap();
    assert_eq!(tool.role, zoo_core::Role::Tool);
    release_tx.send(()).unwrap();

    // The next chat works on the same context (its KV cache included).
    let r = agent
        .chat(
            "Say hello.",
            ChatOptions::new().tool_choice(ToolChoice::None),
        )
        .wait()
        .unwrap();
    assert!(matches!(
        r.stop_reason,
        StopReason::Stop | StopReason::Length
    ));
    assert!(!r.text.is_empty());
}

/// One chat whose tool blocks until the test releases it, with `steer`
/// sent from another thread while it blocks. Returns the response, the
/// history and the event kinds.
fn chat_with_a_blocked_tool(steer: Option<&str>) -> (Response, Vec<Message>, Vec<EventKind>) {
    let agent = Arc::new(Agent::with_model(smollm2(), greedy().max_tokens(48)).unwrap());
    let (entered, tool_entered) = std::sync::mpsc::channel::<()>();
    let (release, released) = std::sync::mpsc::channel::<()>();
    let (entered, released) = (Mutex::new(entered), Mutex::new(released));
    let tool = Tool::new(
        "get_weather",
        "Get the current weather for a city",
        json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        move |args| {
            let _ = entered.lock().unwrap().send(());
            // Only a broken test waits this long.
            let _ = released
                .lock()
                .unwrap()
                .recv_timeout(Duration::from_secs(600));
            Ok(json!({"city": args["city"], "temperature_celsius": 17, "sky": "cloudy"}))
        },
    )
    .unwrap();
    agent.register_tool(tool);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new()
        .tool_choice(ToolChoice::Required)
        .on_event(move |e| sink.lock().unwrap().push(e.kind.clone()));
    let handle = agent.chat("What is the weather like in Paris today?", options);
    tool_entered
        .recv_timeout(Duration::from_secs(600))
        .expect("the tool runs");
    if let Some(text) = steer {
        let steerer = Arc::clone(&agent);
        let text = text.to_string();
        std::thread::spawn(move || steerer.steer(text))
            .join()
            .unwrap();
    }
    release.send(()).unwrap();
    let response = handle.wait().unwrap();
    let events = events.lock().unwrap().clone();
    (response, agent.history(), events)
}

#[test]
fn a_steer_during_a_long_tool_call_changes_the_final_answer() {
    let _serial = serial();
    let (plain, _, _) = chat_with_a_blocked_tool(None);
    let steer = "Forget the weather. Tell me a joke about cats instead.";
    let (steered, history, events) = chat_with_a_blocked_tool(Some(steer));
    assert!(
        events.contains(&EventKind::SteeringReceived {
            message: steer.into()
        }),
        "{events:?}"
    );
    // The steer joined the conversation right after the tool's result, and
    // the model's last reply answers it.
    let roles: Vec<Role> = history.iter().map(|m| m.role).collect();
    assert_eq!(
        roles[..4],
        [Role::User, Role::Assistant, Role::Tool, Role::User],
        "{history:#?}"
    );
    assert_eq!(history[3].content, steer);
    assert_eq!(history.last().unwrap().role, Role::Assistant);
    assert!(!steered.text.is_empty(), "{steered:#?}");
    assert_ne!(
        steered.text, plain.text,
        "the steer did not change the answer"
    );
}

/// The share of each late turn's prompt that came from the cache, for a
/// chat that outgrows a 512-token window.
fn late_turn_reuse(model: &Model, shift: bool) -> Vec<f64> {
    let config = greedy()
        .context_size(512)
        .max_tokens(24)
        .context_shift(shift)
        .system_prompt("You are a helpful assistant. Answer briefly.");
    let agent = Agent::with_model(model.clone(), config).unwrap();
    let mut reuse = Vec::new();
    for turn in 0..18 {
        let prompt = format!(
            "Turn {turn}: one short fact about the number {}.",
            turn * 7 + 3
        );
        let response = agent
            .chat(prompt.as_str(), ChatOptions::new())
            .wait()
            .unwrap();
        assert!(
            !response.text.trim().is_empty(),
            "turn {turn} answered nothing"
        );
        if turn >= 12 {
            let usage = response.usage;
            reuse.push(f64::from(usage.cached_tokens) / f64::from(usage.prompt_tokens));
        }
    }
    reuse
}

/// Once the window is full and old turns are dropped every turn, the cells
/// of what stays are shifted into place: late turns take most of their
/// prompt from the cache, where without the shift they decode all of it
/// after the system prompt again.
#[test]
fn a_full_window_shifts_the_kept_history_instead_of_decoding_it_again() {
    let _serial = serial();
    let model = smollm2();
    let shifted = late_turn_reuse(&model, true);
    let decoded = late_turn_reuse(&model, false);
    let mostly_cached = |r: &[f64]| r.iter().filter(|&&x| x >= 0.5).count();
    assert!(
        mostly_cached(&shifted) >= shifted.len() - 1,
        "with the shift, late turns reused {shifted:.2?} of their prompts"
    );
    assert!(
        mostly_cached(&decoded) <= 1,
        "without it, late turns reused {decoded:.2?}: the window never filled"
    );
}

/// A session reopened by a new agent on the same model: with its KV
/// snapshot (of more than 512 tokens, past Gemma 3's sliding window) the
/// first reply decodes only the new message, and its greedy text equals
/// what the agent that saved it would have written had it gone on (one
/// process, no store). A snapshot of another window is refused.
///
/// Not compared with a fresh decode of the same history: the saved reply's
/// cells were decoded one token at a time, a fresh agent decodes them in a
/// batch, and llama.cpp's sums differ in their last bits between the two.
/// On one thread SmolLM2 then wrote "The keeper wrote ..." where the fresh
/// agent wrote "The lighthouse keeper wrote ..." (a near tie); on two
/// threads the texts happened to agree.
fn resume_answers_as_the_saving_agent_would(model: &Model, name: &str) {
    let dir = std::env::temp_dir().join(format!("zoo-resume-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let db = dir.join("chats.db").to_string_lossy().into_owned();
    let config = greedy()
        .max_tokens(16)
        .context_size(2048)
        .session_store(db.clone())
        .session("resume");
    let story = "The lighthouse keeper wrote in his log every evening, and the sea kept \
                 its own log of storms. "
        .repeat(30);
    let first = Agent::with_model(model.clone(), config.clone()).unwrap();
    first
        .chat(story.clone(), ChatOptions::new())
        .wait()
        .unwrap();
    let history = first.history();
    drop(first);
    let snapshot = zoo_core::SessionStore::open(&db)
        .unwrap()
        .snapshot_path("resume");
    assert!(snapshot.exists(), "no snapshot at {}", snapshot.display());

    let follow_up = "When the storm came, the keeper";
    let resumed = Agent::with_model(model.clone(), config.clone()).unwrap();
    let reply = resumed.chat(follow_up, ChatOptions::new()).wait().unwrap();
    drop(resumed);
    let new_tokens = reply.usage.prompt_tokens - reply.usage.cached_tokens;
    // Past Gemma 3's 512-token sliding window, on both models.
    assert!(
        reply.usage.cached_tokens > 512 && new_tokens < 60,
        "the resumed agent decoded {new_tokens} of {} prompt tokens",
        reply.usage.prompt_tokens
    );
    // The agent that never stopped: the same two chats in one process.
    let kept =
        Agent::with_model(model.clone(), greedy().max_tokens(16).context_size(2048)).unwrap();
    kept.chat(story, ChatOptions::new()).wait().unwrap();
    assert_eq!(kept.history(), history);
    let expected = kept.chat(follow_up, ChatOptions::new()).wait().unwrap();
    assert_eq!(reply.usage.cached_tokens, expected.usage.cached_tokens);
    assert_eq!(reply.text, expected.text);

    // Another window: the snapshot does not match and is not loaded.
    let other = Agent::with_model(model.clone(), config.context_size(1024)).unwrap();
    let again = other.chat("And then?", ChatOptions::new()).wait().unwrap();
    assert_eq!(again.usage.cached_tokens, 0, "{:?}", again.usage);
    drop(other);
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn a_resumed_session_decodes_only_what_is_new_and_answers_as_if_never_stopped() {
    let _serial = serial();
    resume_answers_as_the_saving_agent_would(&smollm2(), "smollm2");
}

#[test]
fn a_resumed_session_on_gemma3_past_its_sliding_window_answers_as_if_never_stopped() {
    let _serial = serial();
    resume_answers_as_the_saving_agent_would(&gemma3(), "gemma3");
}

/// A fresh folder for a test's session store, removed on drop.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Self {
        let dir = std::env::temp_dir().join(format!("zoo-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        Scratch(dir)
    }

    fn path(&self, name: &str) -> PathBuf {
        self.0.join(name)
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Opens `config`'s session in a new agent on `model` and answers
/// `follow_up`: the reply, which must have decoded its whole prompt, and
/// must equal a fresh agent's reply to `history` and `follow_up`.
fn resumes_by_decoding(model: &Model, config: &Config, history: &[Message], follow_up: &str) {
    let resumed = Agent::with_model(model.clone(), config.clone()).unwrap();
    let reply = resumed.chat(follow_up, ChatOptions::new()).wait().unwrap();
    drop(resumed);
    assert_eq!(
        reply.usage.cached_tokens, 0,
        "a snapshot that should be refused was loaded: {:?}",
        reply.usage
    );
    let fresh = Agent::with_model(model.clone(), greedy().max_tokens(16)).unwrap();
    fresh.set_history(history.to_vec()).unwrap();
    let expected = fresh.chat(follow_up, ChatOptions::new()).wait().unwrap();
    assert_eq!(reply.text, expected.text);
}

/// A snapshot damaged on disk (bytes changed inside its state, or cut
/// short) is refused by its checksum: the resumed agent decodes the whole
/// history again and answers as a fresh agent does, never from a damaged
/// cache.
#[test]
fn a_damaged_snapshot_falls_back_to_a_full_decode() {
    let _serial = serial();
    let model = smollm2();
    let scratch = Scratch::new("damaged-snapshot");
    let db = scratch.path("chats.db").to_string_lossy().into_owned();
    let config = greedy()
        .max_tokens(16)
        .session_store(db.clone())
        .session("s");
    let first = Agent::with_model(model.clone(), config.clone()).unwrap();
    first
        .chat(
            "Tell me about lighthouses in two sentences.",
            ChatOptions::new(),
        )
        .wait()
        .unwrap();
    let history = first.history();
    drop(first);
    let snapshot = zoo_core::SessionStore::open(&db)
        .unwrap()
        .snapshot_path("s");
    let good = std::fs::read(&snapshot).unwrap();
    let fingerprint = snapshot.with_extension("kv.fingerprint");
    let good_fingerprint = std::fs::read(&fingerprint).unwrap();
    let follow_up = "And who keeps them?";

    // A few bytes changed in the middle of the state data.
    let mut flipped = good.clone();
    let middle = flipped.len() / 2;
    for byte in &mut flipped[middle..middle + 64] {
        *byte ^= 0x5a;
    }
    std::fs::write(&snapshot, &flipped).unwrap();
    resumes_by_decoding(&model, &config, &history, follow_up);

    // The file cut in half.
    std::fs::write(&fingerprint, &good_fingerprint).unwrap();
    std::fs::write(&snapshot, &good[..good.len() / 2]).unwrap();
    resumes_by_decoding(&model, &config, &history, follow_up);
}

/// A snapshot of another model file at the same path (the file was
/// replaced) is refused: the new model decodes the history itself.
#[test]
fn a_snapshot_of_a_replaced_model_file_falls_back_to_a_full_decode() {
    let _serial = serial();
    let scratch = Scratch::new("replaced-model");
    let model_file = scratch.path("model.gguf");
    std::fs::copy(smollm2_path(), &model_file).unwrap();
    let db = scratch.path("chats.db").to_string_lossy().into_owned();
    let config = greedy()
        .max_tokens(16)
        .session_store(db.clone())
        .session("s");
    let history = {
        let before = Model::load(&model_file, ModelParams::default()).unwrap();
        let first = Agent::with_model(before, config.clone()).unwrap();
        first
            .chat(
                "Tell me about lighthouses in two sentences.",
                ChatOptions::new(),
            )
            .wait()
            .unwrap();
        first.history()
    };
    let store = zoo_core::SessionStore::open(&db).unwrap();
    assert!(store.snapshot_path("s").exists());
    // Another model renamed into place (a new file, as an update writes
    // it; the old one may still be mapped).
    let replacement = scratch.path("model.gguf.new");
    std::fs::copy(model_path("gemma-3-270m-q4_k_m.gguf"), &replacement).unwrap();
    std::fs::rename(&replacement, &model_file).unwrap();
    let after = Model::load(&model_file, ModelParams::default()).unwrap();
    resumes_by_decoding(&after, &config, &history, "And who keeps them?");
}

/// `pairs` questions and answers in prose, about 50 tokens a pair.
fn prose_turns(pairs: usize) -> Vec<Message> {
    (1..=pairs)
        .flat_map(|n| {
            [
                Message::user(format!("Tell me fact number {n} about lighthouses.")),
                Message::assistant(format!(
                    "Fact {n}: lighthouses guide ships along dangerous coasts with a bright \
                     light that turns, and each has its own pattern of flashes."
                )),
            ]
        })
        .collect()
}

/// A question, a call of `weather_report`, its `days`-day report (about 18
/// tokens a day) and the answer.
fn report_turn(id: &str, days: u32) -> Vec<Message> {
    let report = (1..=days)
        .map(|day| {
            format!(
                "Day {day}: Oslo is sunny with {} degrees and a light wind.",
                8 + day % 5
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        Message::user("What is the weather going to be?"),
        Message::assistant_with_tool_calls(
            "",
            vec![zoo_core::ToolCall {
                id: id.into(),
                name: "weather_report".into(),
                arguments: json!({}),
            }],
        ),
        Message::tool(id, "weather_report", report),
        Message::assistant("Sunny all along, around ten degrees."),
    ]
}

/// The KV cache survives a compaction up to its first change: a long chat
/// whose window overflows has its oldest tool result cut (level 1), and the
/// next reply reuses every cached token before that result (the system
/// prompt, twenty prose messages and the call), decoding only from there.
/// Its greedy reply equals a fresh agent's given the compacted history.
/// (Without the context shift, so that the reuse is the exact prefix.)
#[test]
fn a_compaction_keeps_the_cached_prefix_before_its_first_change() {
    let _serial = serial();
    let config = greedy()
        .context_size(1024)
        .max_tokens(24)
        .context_shift(false)
        .system_prompt("You are a helpful assistant.")
        .context_strategy(zoo_core::context::ContextStrategy::Compact(
            zoo_core::context::CompactSettings {
                keep_recent: 4,
                keep_first: 0,
                tool_result_tokens: 48,
                target_percent: 100,
            },
        ));
    let agent = Agent::with_model(smollm2(), config.clone()).unwrap();
    let mut history = prose_turns(10);
    history.extend(report_turn("call_1", 12));
    agent.set_history(history.clone()).unwrap();
    let levels = Arc::new(Mutex::new(Vec::new()));
    let on_event = |levels: &Arc<Mutex<Vec<_>>>| {
        let seen = levels.clone();
        ChatOptions::new().on_event(move |event| {
            if let EventKind::HistoryCompacted { level, .. } = &event.kind {
                seen.lock().unwrap().push(*level);
            }
        })
    };
    // The first chat fits: nothing is compacted, everything is decoded.
    agent.chat("Thanks.", on_event(&levels)).wait().unwrap();
    assert!(levels.lock().unwrap().is_empty());
    // A second long report overflows the window.
    let mut longer = agent.history();
    longer.extend(report_turn("call_2", 12));
    agent.set_history(longer).unwrap();
    let compacted = agent
        .chat("And the day after?", on_event(&levels))
        .wait()
        .unwrap();
    assert_eq!(
        *levels.lock().unwrap(),
        [zoo_core::context::CompactionLevel::TruncateToolResults]
    );
    let kept = agent.history();
    let first_change = kept
        .iter()
        .zip(&history)
        .position(|(now, before)| now != before)
        .expect("the first result was cut");
    assert_eq!(first_change, 22, "the first tool result: {:#?}", kept[22]);
    // The tokens before it, as the backend counts them.
    let model = smollm2();
    let mut counter = LlamaBackend::new(&model, &config).unwrap();
    let mut prefix = counter
        .count_tokens(&Message::system("You are a helpful assistant."))
        .unwrap();
    for message in &kept[..first_change] {
        prefix += counter.count_tokens(message).unwrap();
    }
    let usage = compacted.usage;
    eprintln!(
        "after the compaction: {} prompt tokens, {} cached; {prefix} tokens before the first change",
        usage.prompt_tokens, usage.cached_tokens
    );
    assert!(usage.prompt_tokens > 900, "{usage:?}");
    assert!(usage.cached_tokens >= prefix, "{usage:?}, prefix {prefix}");
    // Decoding starts again inside the cut result (its header and kept
    // head match what was cached, its marker does not).
    let cut = counter.count_tokens(&kept[first_change]).unwrap();
    assert!(
        usage.cached_tokens < prefix + cut,
        "{usage:?}, prefix {prefix}, cut result {cut}"
    );
    // And the reply is a fresh decode's of the compacted history.
    let fresh = Agent::with_model(smollm2(), config).unwrap();
    fresh.set_history(kept[..kept.len() - 2].to_vec()).unwrap();
    let expected = fresh
        .chat("And the day after?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(expected.usage.cached_tokens, 0);
    assert_eq!(expected.usage.prompt_tokens, usage.prompt_tokens);
    assert_eq!(compacted.text, expected.text);
}

/// A weather report of about 600 tokens: too long for a 64-token limit,
/// and for half a 512-token window.
fn long_report() -> String {
    (1..=40)
        .map(|day| {
            format!(
                "Day {day}: Oslo is sunny with {} degrees and a light wind.",
                8 + day % 5
            )
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// With a `summarizer` on the agent's own model (a context of its own on
/// the shared SmolLM2), a tool result over `max_tool_result_tokens` enters
/// the history as the model's summary of it, within the limit.
#[test]
fn a_long_tool_result_is_summarized_by_the_agents_own_model() {
    let _serial = serial();
    let mut config = greedy().max_tokens(32).max_tool_result_tokens(64);
    config.summarizer = Some(zoo_core::context::SummarizerConfig {
        max_tokens: 40,
        ..Default::default()
    });
    let agent = Agent::with_model(smollm2(), config).unwrap();
    agent.register_tool(
        Tool::new(
            "weather_report",
            "The weather report for the coming days",
            json!({"type": "object", "properties": {}}),
            |_| Ok(json!(long_report())),
        )
        .unwrap(),
    );
    let options = ChatOptions::new().tool_choice(ToolChoice::Tool("weather_report".into()));
    agent
        .chat("What is the weather going to be?", options)
        .wait()
        .unwrap();
    let result = agent
        .history()
        .into_iter()
        .find(|m| m.role == Role::Tool)
        .expect("the call was made");
    let summary = result
        .content
        .strip_prefix("[summary of a ")
        .unwrap_or_else(|| panic!("not a summary: {}", result.content));
    let (_, text) = summary.split_once("-token result] ").unwrap();
    eprintln!("the stored result: {}", result.content);
    assert!(!text.trim().is_empty(), "{}", result.content);
    assert!(!result.content.contains("tokens cut"), "{}", result.content);
    assert!(
        result.content.len() < long_report().len() / 3,
        "{}",
        result.content
    );
}

/// Level 2 of the cascade with a summarizer on the agent's own model: each
/// old call and its result become the model's summary of them.
#[test]
fn level_2_takes_the_summary_the_agents_own_model_writes() {
    let _serial = serial();
    let mut config = greedy().context_size(512).max_tokens(32).context_strategy(
        zoo_core::context::ContextStrategy::Compact(zoo_core::context::CompactSettings {
            keep_recent: 2,
            keep_first: 0,
            tool_result_tokens: 4096,
            target_percent: 100,
        }),
    );
    config.summarizer = Some(zoo_core::context::SummarizerConfig {
        max_tokens: 48,
        ..Default::default()
    });
    let agent = Agent::with_model(smollm2(), config).unwrap();
    let call = |id: &str| {
        Message::assistant_with_tool_calls(
            "",
            vec![zoo_core::ToolCall {
                id: id.into(),
                name: "weather_report".into(),
                arguments: json!({}),
            }],
        )
    };
    agent
        .set_history(vec![
            Message::user("What is the weather going to be?"),
            call("call_1"),
            Message::tool("call_1", "weather_report", long_report()),
            Message::assistant("Sunny all along, around ten degrees."),
            Message::user("Thanks."),
            Message::assistant("You are welcome."),
        ])
        .unwrap();
    let levels = Arc::new(Mutex::new(Vec::new()));
    let seen = levels.clone();
    let options = ChatOptions::new().on_event(move |event| {
        if let EventKind::HistoryCompacted { level, .. } = &event.kind {
            seen.lock().unwrap().push(*level);
        }
    });
    agent.chat("And tomorrow?", options).wait().unwrap();
    assert_eq!(
        *levels.lock().unwrap(),
        [zoo_core::context::CompactionLevel::Summarize]
    );
    let history = agent.history();
    let summary = history[1]
        .content
        .strip_prefix("[summary] ")
        .unwrap_or_else(|| panic!("not a summary: {:#?}", history));
    eprintln!("level 2's summary: {summary}");
    assert!(!summary.trim().is_empty());
    assert!(!summary.contains("[called"), "{summary}");
    assert_eq!(history[2], Message::user("Thanks."));
}

/// A sub-agent without a provider runs on the parent's loaded model, with
/// its own context: the forced call reaches it and its answer comes back.
#[test]
fn a_subagent_shares_the_parents_model() {
    let _serial = serial();
    let model = smollm2();
    let parent = Agent::with_model(model, greedy().max_tokens(48)).unwrap();
    parent
        .add_subagent(zoo_core::SubAgent {
            name: "helper".into(),
            description: "Answers a question in one sentence".into(),
            config: greedy()
                .max_tokens(24)
                .system_prompt("Answer in one short sentence."),
            tools: Vec::new(),
        })
        .unwrap();
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let response = parent
        .chat(
            "Ask the helper what color the sky is.",
            ChatOptions::new()
                .tool_choice(ToolChoice::Tool("helper".into()))
                .on_event(move |e| sink.lock().unwrap().push(e.kind.clone())),
        )
        .wait()
        .unwrap();
    let result = response.tool_calls[0].result.clone().unwrap();
    let answer = result["text"].as_str().unwrap();
    assert!(!answer.trim().is_empty(), "{result}");
    let child = result["details"]["usage"]["total_tokens"].as_u64().unwrap();
    assert!(
        result["details"]["usage"]["completion_tokens"]
            .as_u64()
            .unwrap()
            > 0,
        "{result}"
    );
    // The child's replies are updates of the parent's call, and their
    // tokens join the parent's usage.
    let events = events.lock().unwrap();
    let child_turns: u64 = events
        .iter()
        .filter_map(|e| match e {
            EventKind::ToolCallUpdate { update, .. } if update["event"] == "turn_finished" => {
                update["usage"]["total_tokens"].as_u64()
            }
            _ => None,
        })
        .sum();
    assert_eq!(child_turns, child);
    let own: u64 = events
        .iter()
        .filter_map(|e| match e {
            EventKind::TurnFinished { usage, .. } => Some(u64::from(usage.total_tokens)),
            _ => None,
        })
        .sum();
    assert_eq!(u64::from(response.usage.total_tokens), own + child);
}

/// A tool with a context on the real model: the forced call's progress
/// comes between its start and its finish, and its answer uses the result.
#[test]
fn a_tools_progress_reaches_the_events_of_a_real_chat() {
    let _serial = serial();
    let agent = Agent::with_model(smollm2(), greedy().max_tokens(64)).unwrap();
    let tool = Tool::with_context(
        "get_weather",
        "Get the current weather for a city",
        json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "City name"}},
            "required": ["city"]
        }),
        |args, ctx| {
            ctx.progress(format!("asking about {}", args["city"]));
            Ok(json!({"city": args["city"], "temperature_celsius": 17, "sky": "cloudy"}))
        },
    )
    .unwrap();
    agent.register_tool(tool);
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let options = ChatOptions::new()
        .tool_choice(ToolChoice::Required)
        .on_event(move |e| sink.lock().unwrap().push(e.kind.clone()));
    let response = agent
        .chat("What is the weather like in Paris today?", options)
        .wait()
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Stop, "{response:#?}");
    let events = events.lock().unwrap();
    let kinds: Vec<&str> = events
        .iter()
        .filter_map(|e| match e {
            EventKind::ToolCallStarted { .. } => Some("started"),
            EventKind::ToolCallProgress { text, .. } if text.contains("Paris") => Some("progress"),
            EventKind::ToolCallFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(kinds, ["started", "progress", "finished"], "{events:?}");
}

/// Keeps every log record (the handler is process-wide: tests read only
/// their own agent's records).
#[derive(Default)]
struct Records(Mutex<Vec<zoo_core::LogRecord>>);

impl zoo_core::LogHandler for Records {
    fn log(&self, record: &zoo_core::LogRecord) {
        self.0.lock().unwrap().push(record.clone());
    }
}

#[test]
fn the_debug_log_carries_the_chatml_prompt_and_the_raw_output() {
    let _serial = serial();
    let records = Arc::new(Records::default());
    zoo_core::logs::set_handler(zoo_core::LogLevel::Debug, Some(records.clone())).unwrap();
    let agent = Agent::with_model(
        smollm2(),
        greedy().max_tokens(16).system_prompt("Answer briefly."),
    )
    .unwrap();
    let response = agent
        .chat("What is 2+2?", ChatOptions::new())
        .wait()
        .unwrap();
    assert!(zoo_core::logs::flush(Duration::from_secs(60)));
    zoo_core::logs::set_handler(zoo_core::LogLevel::Off, None).unwrap();
    let id = json!(agent.id());
    let ours: Vec<zoo_core::LogRecord> = std::mem::take(&mut *records.0.lock().unwrap())
        .into_iter()
        .filter(|r| r.fields.get("agent_id") == Some(&id))
        .collect();
    let of = |target: &str| -> Vec<&zoo_core::LogRecord> {
        ours.iter().filter(|r| r.target == target).collect()
    };
    let prompts = of(zoo_core::logs::targets::PROMPT);
    assert_eq!(prompts.len(), 1, "{ours:#?}");
    let prompt = &prompts[0];
    assert_eq!(prompt.fields["form"], "text");
    assert_eq!(prompt.fields["turn"], 1);
    // SmolLM2's own template is ChatML: the text the model read, markup and all.
    assert!(
        prompt
            .message
            .starts_with("<|im_start|>system\nAnswer briefly.<|im_end|>\n"),
        "{}",
        prompt.message
    );
    assert!(
        prompt
            .message
            .ends_with("<|im_start|>user\nWhat is 2+2?<|im_end|>\n<|im_start|>assistant\n"),
        "{}",
        prompt.message
    );
    // Exactly what was tokenized: its length is the reply's prompt.
    assert_eq!(prompt.fields["tokens"], json!(response.usage.prompt_tokens));
    let outputs = of(zoo_core::logs::targets::RAW_OUTPUT);
    assert_eq!(outputs.len(), 1);
    assert_eq!(outputs[0].message.trim(), response.text);
    let turns = of(zoo_core::logs::targets::TURN);
    assert_eq!(turns.len(), 1);
    assert_eq!(
        turns[0].fields["completion_tokens"],
        json!(response.usage.completion_tokens)
    );
}

/// Two parties that each wait (up to a generous bound) for the other: a
/// call that returns `Ok` met the other one while both were running.
struct Rendezvous {
    arrived: Mutex<usize>,
    all_here: std::sync::Condvar,
}

impl Rendezvous {
    fn meet(&self, parties: usize) -> Result<(), String> {
        let mut arrived = self.arrived.lock().unwrap();
        *arrived += 1;
        self.all_here.notify_all();
        let (arrived, timeout) = self
            .all_here
            .wait_timeout_while(arrived, Duration::from_secs(60), |n| *n < parties)
            .unwrap();
        match timeout.timed_out() {
            true => Err(format!("only {} of {parties} calls ran at once", *arrived)),
            false => Ok(()),
        }
    }
}

#[test]
fn a_parallel_reply_runs_its_two_calls_at_once() {
    let _serial = serial();
    let mut config = greedy().max_tokens(48);
    config.tool_execution = zoo_core::ToolExecution::Parallel;
    let agent = Agent::with_model(smollm2(), config).unwrap();
    let meeting = Arc::new(Rendezvous {
        arrived: Mutex::new(0),
        all_here: std::sync::Condvar::new(),
    });
    let met = meeting.clone();
    agent.register_tool(
        Tool::new(
            "get_weather",
            "Get the current weather for a city",
            json!({
                "type": "object",
                "properties": {"city": {"type": "string", "description": "City name"}},
                "required": ["city"]
            }),
            move |args| {
                met.meet(2)?;
                Ok(json!({"city": args["city"], "temperature_celsius": 17}))
            },
        )
        .unwrap(),
    );
    let events = Arc::new(Mutex::new(Vec::new()));
    let sink = events.clone();
    let response = agent
        .chat(
            "What is the weather in Paris and in London?",
            ChatOptions::new()
                .tool_choice(ToolChoice::Required)
                .max_turns(2)
                .on_event(move |e| sink.lock().unwrap().push(e.kind.clone())),
        )
        .wait()
        .unwrap();
    // One reply held both calls (the grammar admits several under
    // `parallel`), and each handler met the other while both ran.
    let first = agent
        .history()
        .into_iter()
        .find(|m| m.role == Role::Assistant)
        .unwrap();
    let cities: Vec<Value> = first
        .tool_calls
        .iter()
        .map(|c| c.arguments["city"].clone())
        .collect();
    assert_eq!(cities, [json!("Paris"), json!("London")], "{first:?}");
    let calls = &response.tool_calls[..2];
    for (call, city) in calls.iter().zip(["Paris", "London"]) {
        assert_eq!(
            call.result,
            Some(json!({"city": city, "temperature_celsius": 17})),
            "{call:?}"
        );
    }
    let order: Vec<&str> = events
        .lock()
        .unwrap()
        .iter()
        .filter_map(|kind| match kind {
            EventKind::ToolCallStarted { .. } => Some("started"),
            EventKind::ToolCallFinished { .. } => Some("finished"),
            _ => None,
        })
        .collect();
    assert_eq!(order[..4], ["started", "started", "finished", "finished"]);
}

/// Gemma 3 past its 512-token sliding window with a full 640-token
/// window: old turns are dropped every turn and the cells of what stays
/// are shifted into place (the cache keeps every position, `swa_full`,
/// so it can shift). Each shifted turn's greedy reply equals a fresh
/// agent's, which decodes the same kept history from nothing.
#[test]
fn gemma3_shifted_turns_answer_as_a_fresh_decode() {
    let _serial = serial();
    let model = gemma3();
    let config = greedy()
        .context_size(640)
        .max_tokens(24)
        .system_prompt("You are the keeper's assistant. Answer each question about the notes.");
    let agent = Agent::with_model(model.clone(), config.clone()).unwrap();
    let colours = [
        "amber", "birch", "cobalt", "dune", "ember", "fjord", "garnet", "harbor",
    ];
    let mut shifted = 0;
    for turn in 0..15 {
        let prompt = format!(
            "Note {turn}: at dawn a ship painted {} passed the {} rocks; its captain waved \
             twice and sailed north. Question: what colour was the ship in note {}?",
            colours[turn % 8],
            colours[(turn * 3 + 1) % 8],
            turn.saturating_sub(2)
        );
        let before = agent.history();
        let reply = agent
            .chat(prompt.as_str(), ChatOptions::new())
            .wait()
            .unwrap();
        // A turn that dropped old turns and still took most of its prompt
        // from the cache was shifted (the system prompt alone is ~30).
        let usage = reply.usage;
        if agent.history().len() < before.len() + 2 && usage.cached_tokens > usage.prompt_tokens / 2
        {
            assert!(usage.prompt_tokens > 512, "{usage:?}");
            let fresh = Agent::with_model(model.clone(), config.clone()).unwrap();
            fresh.set_history(before).unwrap();
            let expected = fresh
                .chat(prompt.as_str(), ChatOptions::new())
                .wait()
                .unwrap();
            assert_eq!(expected.usage.cached_tokens, 0);
            assert_eq!(reply.text, expected.text, "turn {turn}");
            shifted += 1;
        }
    }
    assert!(shifted >= 5, "only {shifted} turns were shifted");
}
