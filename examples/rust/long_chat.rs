//! A long chat on a small window: time to first token per turn once the
//! window is full, with the cached cells shifted into place after old turns
//! are dropped (`context_shift`, the default) against decoding the kept
//! history again (`context_shift: false`, what every turn paid before).
//! Both run in the same process, one after the other, on the same prompts.
//!
//! ```sh
//! cargo run --example long_chat                 # SmolLM2, 2,048-token window, 100 turns
//! cargo run --example long_chat -- 60 1024      # turns, window
//! ```

use zoo_core::{Agent, ChatOptions, Config, Model, ModelParams};

/// One run's per-turn figures.
struct Run {
    ttft_ms: Vec<f64>,
    /// Turns whose prompt was mostly decoded again (under half reused).
    full_decodes: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let turns: usize = args.get(1).map_or(Ok(100), |a| a.parse())?;
    let window: u32 = args.get(2).map_or(Ok(2048), |a| a.parse())?;
    let path = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        .into()
    });
    let model = Model::load(&path, ModelParams::default())?;
    let from = turns * 3 / 10;
    let mut medians = Vec::new();
    for shift in [false, true] {
        let run = chat(&model, turns, window, shift, from)?;
        let mut late = run.ttft_ms.clone();
        late.sort_by(f64::total_cmp);
        let median = late[late.len() / 2];
        println!(
            "context_shift {shift:>5}: median time to first token over turns {}-{turns}: {median:.0} ms; \
             turns decoding most of their prompt again: {} of {}",
            from + 1,
            run.full_decodes,
            late.len()
        );
        medians.push(median);
    }
    println!(
        "ratio (shift / decode again): {:.3}",
        medians[1] / medians[0]
    );
    Ok(())
}

fn chat(
    model: &Model,
    turns: usize,
    window: u32,
    shift: bool,
    from: usize,
) -> Result<Run, Box<dyn std::error::Error>> {
    let config = Config::default()
        .temperature(0.0)
        .context_size(window)
        .max_tokens(48)
        .context_shift(shift)
        .system_prompt("You are a helpful assistant. Answer briefly.");
    let agent = Agent::with_model(model.clone(), config)?;
    let mut run = Run {
        ttft_ms: Vec::new(),
        full_decodes: 0,
    };
    for turn in 0..turns {
        let prompt = format!(
            "Turn {turn}: tell me one short fact about the number {}.",
            turn * 7 + 3
        );
        let response = agent.chat(prompt.as_str(), ChatOptions::new()).wait()?;
        if std::env::var_os("ZOO_VERBOSE").is_some() {
            let usage = response.usage;
            eprintln!(
                "turn {turn}: {} prompt tokens, {} cached, {:.0} ms to the first token",
                usage.prompt_tokens, usage.cached_tokens, response.metrics.time_to_first_token_ms
            );
        }
        if turn >= from {
            run.ttft_ms.push(response.metrics.time_to_first_token_ms);
            let usage = response.usage;
            run.full_decodes += usize::from(usage.cached_tokens * 2 < usage.prompt_tokens);
        }
    }
    Ok(run)
}
