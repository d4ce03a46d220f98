//! One greedy generation on the default model, printed as JSON: the Rust
//! side of the Python and Node throughput comparisons (same engine, same
//! settings, no binding in between).
//!
//! ```sh
//! cargo run --example generate -- MODEL "prompt" MAX_TOKENS [THREADS]
//! ```
//!
//! THREADS defaults to 2, the comparisons' setting.

use zoo_core::{Agent, ChatOptions, Config};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let (model, prompt, max_tokens, threads) = match args.as_slice() {
        [_, model, prompt, max_tokens] => (model, prompt, max_tokens, 2),
        [_, model, prompt, max_tokens, threads] => (model, prompt, max_tokens, threads.parse()?),
        _ => return Err("usage: generate MODEL PROMPT MAX_TOKENS [THREADS]".into()),
    };
    let config = Config::new(model.as_str())
        .temperature(0.0)
        .threads(threads)
        .max_tokens(max_tokens.parse()?);
    let agent = Agent::create(config)?;
    // Streams like a binding does, to a callback that does nothing.
    let response = agent
        .chat(prompt.as_str(), ChatOptions::new().on_token(|_| {}))
        .wait()?;
    println!(
        "{{\"completion_tokens\": {}, \"generation_tps\": {:.3}, \"prompt_tps\": {:.3}}}",
        response.usage.completion_tokens,
        response.metrics.tokens_per_second,
        f64::from(response.usage.prompt_tokens) * 1000.0 / response.metrics.prompt_ms.max(1e-9)
    );
    Ok(())
}
