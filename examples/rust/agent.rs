//! The main job, end to end: load the default model with a progress bar,
//! give an agent a calculator and a clock, ask a question that needs a tool,
//! and stream the answer.
//!
//! ```sh
//! scripts/fetch-models
//! cargo run --example agent -- "Multiply 17 by 23."
//! ```

use std::io::Write;
use std::time::{SystemTime, UNIX_EPOCH};

use serde_json::json;
use zoo_core::{Agent, ChatOptions, Config, EventKind, Model, ModelParams, Tool};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // `RUST_LOG=zoo_core=debug` shows what the engine decides.
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut args = std::env::args().skip(1);
    let question = args
        .next()
        .unwrap_or_else(|| "Multiply 17 by 23.".to_string());
    let model_path = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        .to_string()
    });

    eprintln!("loading {model_path}");
    let mut shown = None;
    let model = Model::load_with_progress(&model_path, ModelParams::default(), move |progress| {
        // llama.cpp reports hundreds of times; redraw only when the bar moves.
        let filled = (progress * 30.0) as usize;
        if shown != Some(filled) {
            shown = Some(filled);
            let bar = format!("{}{}", "#".repeat(filled), " ".repeat(30 - filled));
            eprint!("\r[{bar}] {:>3.0}%", progress * 100.0);
            if filled == 30 {
                eprintln!();
            }
        }
        true
    })?;

    let config = Config::default()
        .seed(42)
        .repeat_penalty(1.1)
        .max_tokens(256)
        .system_prompt("You are a helpful assistant.");
    let agent = Agent::with_model(model, config)?;
    agent.register_tool(Tool::new(
        "calculator",
        "Apply an arithmetic operation to two numbers",
        json!({
            "type": "object",
            "properties": {
                "a": {"type": "number", "description": "first operand"},
                "b": {"type": "number", "description": "second operand"},
                "op": {"type": "string", "enum": ["add", "subtract", "multiply", "divide"]}
            },
            "required": ["a", "b", "op"]
        }),
        |args| {
            let (a, b) = (
                args["a"].as_f64().unwrap_or(0.0),
                args["b"].as_f64().unwrap_or(0.0),
            );
            let (value, sign) = match args["op"].as_str() {
                Some("add") => (a + b, "+"),
                Some("subtract") => (a - b, "-"),
                Some("multiply") => (a * b, "*"),
                Some("divide") if b != 0.0 => (a / b, "/"),
                Some("divide") => return Err("division by zero".into()),
                other => return Err(format!("unknown operation {other:?}")),
            };
            // A sentence, not a bare number: small models answer better
            // when the result reads like the answer.
            Ok(json!(format!("{a} {sign} {b} = {value}")))
        },
    )?);
    agent.register_fn("clock", "The current time (UTC)", &[], || {
        let secs = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        format!(
            "It is {:02}:{:02}:{:02} UTC.",
            secs / 3600 % 24,
            secs / 60 % 60,
            secs % 60
        )
    })?;

    eprintln!("you: {question}");
    eprint!("agent: ");
    let options = ChatOptions::new()
        .on_token(|text| {
            print!("{text}");
            let _ = std::io::stdout().flush();
        })
        .on_event(|event| match &event.kind {
            EventKind::ToolCallStarted {
                name, arguments, ..
            } => eprintln!("\n  [tool] {name}({arguments})"),
            EventKind::ToolCallFinished {
                result: Some(r), ..
            } => eprintln!("  [tool] -> {r}"),
            EventKind::ToolCallFinished { error: Some(e), .. } => {
                eprintln!("  [tool] failed: {e}")
            }
            _ => {}
        });
    let response = agent.chat(question, options).wait()?;
    println!();
    eprintln!(
        "[{} tool call(s), {} tokens, {:.0} ms, {:.0} tokens/s]",
        response.tool_calls.len(),
        response.usage.total_tokens,
        response.metrics.total_ms,
        response.metrics.tokens_per_second
    );
    Ok(())
}
