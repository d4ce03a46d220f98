//! Tool-call evaluation on a real model: for a set of prompts that need a
//! tool and a set that do not, how often each tool-choice mode produces a
//! valid call to the right tool, and how often it answers in prose.
//!
//! ```sh
//! cargo run --release --example tool_eval            # SmolLM2, the default model
//! cargo run --release --example tool_eval -- --scores   # only the call-opening scores
//! ```

use serde_json::json;
use zoo_core::backend::{Backend, CacheHint, GenerateRequest};
use zoo_core::tools::parser;
use zoo_core::{
    CancelToken, Config, LlamaBackend, Message, Model, ModelParams, ToolChoice, ToolDefinition,
};

fn tools() -> Vec<ToolDefinition> {
    let def = |name: &str, description: &str, parameters: serde_json::Value| ToolDefinition {
        name: name.into(),
        description: description.into(),
        parameters,
    };
    vec![
        def(
            "get_weather",
            "Get the current weather for a city",
            json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
        ),
        def(
            "calculator",
            "Apply an arithmetic operation to two numbers",
            json!({"type": "object", "properties": {"a": {"type": "number"}, "b": {"type": "number"}, "op": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]}}, "required": ["a", "b", "op"]}),
        ),
        def(
            "clock",
            "The current time",
            json!({"type": "object", "properties": {}}),
        ),
        def(
            "set_alarm",
            "Set an alarm at a time of day",
            json!({"type": "object", "properties": {"hour": {"type": "integer"}, "minute": {"type": "integer"}}, "required": ["hour", "minute"]}),
        ),
        def(
            "send_email",
            "Send an email",
            json!({"type": "object", "properties": {"to": {"type": "string"}, "subject": {"type": "string"}, "body": {"type": "string"}}, "required": ["to", "subject", "body"]}),
        ),
    ]
}

/// Prompts that need a tool, with the tool they need.
pub const NEEDS_TOOL: [(&str, &str); 20] = [
    ("What's the weather in Tokyo?", "get_weather"),
    ("Is it raining in London right now?", "get_weather"),
    ("How hot is it in Cairo today?", "get_weather"),
    ("Tell me the current weather in Paris.", "get_weather"),
    ("What is 17 times 23?", "calculator"),
    ("Add 1234 and 5678.", "calculator"),
    ("Divide 100 by 7.", "calculator"),
    ("What is 45 minus 19?", "calculator"),
    ("What time is it?", "clock"),
    ("Tell me the current time.", "clock"),
    ("What's the time right now?", "clock"),
    ("Do you know what time it is now?", "clock"),
    ("Wake me up at 6:30.", "set_alarm"),
    ("Set an alarm for 7 in the morning.", "set_alarm"),
    ("Set an alarm at 18:45.", "set_alarm"),
    ("Please set an alarm for 9:15.", "set_alarm"),
    (
        "Email bob@example.com that the meeting moved to 3pm.",
        "send_email",
    ),
    (
        "Send an email to alice@example.com saying hello.",
        "send_email",
    ),
    (
        "Write an email to team@example.com about the release.",
        "send_email",
    ),
    (
        "Email my boss at boss@example.com that I am sick.",
        "send_email",
    ),
];

/// Prompts that no tool fits.
pub const NO_TOOL: [&str; 20] = [
    "Tell me a joke.",
    "What is the capital of France?",
    "Write a haiku about the sea.",
    "Who wrote Romeo and Juliet?",
    "Hello! How are you?",
    "What is photosynthesis?",
    "Give me a synonym for happy.",
    "Translate 'thank you' into Spanish.",
    "What color is the sky?",
    "Name three fruits.",
    "Explain what a noun is.",
    "What is your name?",
    "Recommend a good book.",
    "How many legs does a spider have?",
    "What is the opposite of cold?",
    "Describe a cat in one sentence.",
    "Thanks, that's all.",
    "What language is spoken in Brazil?",
    "Say something nice.",
    "What is the largest ocean?",
];

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let scores_only = std::env::args().any(|a| a == "--scores");
    let path = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        .into()
    });
    let model = Model::load(&path, ModelParams::default())?;
    let config = Config::default()
        .temperature(0.0)
        .context_size(2048)
        .threads(2);
    let mut backend = LlamaBackend::new(&model, &config)?;
    let tools = tools();
    let system = Message::system(
        std::env::var("ZOO_EVAL_SYSTEM").unwrap_or_else(|_| "You are a helpful assistant.".into()),
    );
    let score = |prompt: &str, backend: &mut LlamaBackend| -> Result<f32, zoo_core::Error> {
        let messages = vec![system.clone(), Message::user(prompt)];
        let request = GenerateRequest {
            messages: &messages,
            tools: &tools,
            tool_choice: &ToolChoice::Auto,
            max_tokens: None,
            stop: &[],
            cache_hint: CacheHint::default(),
            deadline: None,
        };
        backend.call_opening_logprob(&request)
    };
    let baseline = score("Hello.", &mut backend)?;
    println!("baseline (\"Hello.\"): {baseline:.2}");
    let mut need = Vec::new();
    for (prompt, _) in NEEDS_TOOL {
        need.push(score(prompt, &mut backend)?);
    }
    let mut none = Vec::new();
    for prompt in NO_TOOL {
        none.push(score(prompt, &mut backend)?);
    }
    need.sort_by(f32::total_cmp);
    none.sort_by(f32::total_cmp);
    println!("call-opening log-probability, prompts needing a tool: {need:.2?}");
    println!("call-opening log-probability, prompts needing none:   {none:.2?}");
    if scores_only {
        return Ok(());
    }
    for choice in [ToolChoice::Required, ToolChoice::Auto] {
        let (mut valid, mut right, mut prose_when_none) = (0, 0, 0);
        for (prompt, expected) in NEEDS_TOOL {
            let parsed = generate(&mut backend, &system, prompt, &tools, &choice)?;
            if let [call] = parsed.calls.as_slice() {
                valid += 1;
                right += usize::from(call.name == expected);
            }
        }
        for prompt in NO_TOOL {
            let parsed = generate(&mut backend, &system, prompt, &tools, &choice)?;
            prose_when_none += usize::from(parsed.calls.is_empty() && parsed.failures.is_empty());
        }
        println!(
            "{:>8}: needs a tool: {valid}/20 made one valid call, {right}/20 called the right tool; needs none: {prose_when_none}/20 answered in prose",
            choice.as_str()
        );
    }
    Ok(())
}

fn generate(
    backend: &mut LlamaBackend,
    system: &Message,
    prompt: &str,
    tools: &[ToolDefinition],
    choice: &ToolChoice,
) -> Result<parser::ParsedReply, zoo_core::Error> {
    let messages = vec![system.clone(), Message::user(prompt)];
    let request = GenerateRequest {
        messages: &messages,
        tools,
        tool_choice: choice,
        max_tokens: Some(96),
        stop: &[],
        cache_hint: CacheHint::default(),
        deadline: None,
    };
    let generation = backend.generate(&request, &mut |_| {}, &CancelToken::new())?;
    Ok(parser::parse(&generation.text))
}
