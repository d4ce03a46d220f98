//! A long chat on a small window: time to first token per turn once the
//! window is full, with the cached cells shifted into place after old turns
//! are dropped (`context_shift`, the default) against decoding the kept
//! history again (`context_shift: false`, what every turn paid before).
//! Both run in the same process, one after the other, on the same prompts.
//!
//! The prompts, system prompt and reply length come from
//! `examples/rust/long_chat.json`, which the node-llama-cpp side of
//! `scripts/bench-long-chat-peer` (`bench/long_chat_peer/long_chat.mjs`)
//! reads too, so that both chats are the same.
//!
//! ```sh
//! cargo run --example long_chat                 # SmolLM2, 2,048-token window, 100 turns
//! cargo run --example long_chat -- 60 1024      # turns, window
//! cargo run --example long_chat -- 100 2048 1 shift   # 1 thread, the shift only
//! ```
//!
//! Arguments: turns (at most the file's 100 prompts), window, threads (0, the
//! default, follows the free cores), and which runs: `both` (the default),
//! `shift` or `fifo` (no shift). `ZOO_VERBOSE=1` prints every turn to stderr.

use serde::Deserialize;
use zoo_core::{Agent, ChatOptions, Config, Model, ModelParams};

/// The shared chat script (`long_chat.json`).
#[derive(Deserialize)]
struct Script {
    system_prompt: String,
    max_tokens: u32,
    prompts: Vec<String>,
}

/// The settings every run of one invocation shares.
struct Setup {
    script: Script,
    turns: usize,
    window: u32,
    threads: u32,
    /// Turns from this index on (0-based) are measured.
    from: usize,
}

/// One run's per-turn figures.
struct Run {
    ttft_ms: Vec<f64>,
    /// Turns whose prompt was mostly decoded again (under half reused).
    full_decodes: usize,
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let script: Script = serde_json::from_str(include_str!("long_chat.json"))?;
    let turns: usize = args
        .get(1)
        .map_or(Ok(script.prompts.len()), |a| a.parse())?;
    if turns == 0 || turns > script.prompts.len() {
        return Err(format!(
            "turns must be from 1 to {} (the prompts in long_chat.json), not {turns}",
            script.prompts.len()
        )
        .into());
    }
    let window: u32 = args.get(2).map_or(Ok(2048), |a| a.parse())?;
    let threads: u32 = args.get(3).map_or(Ok(0), |a| a.parse())?;
    let shifts: &[bool] = match args.get(4).map_or("both", String::as_str) {
        "both" => &[false, true],
        "shift" => &[true],
        "fifo" => &[false],
        other => return Err(format!("runs must be both, shift or fifo, not {other}").into()),
    };
    let path = std::env::var("ZOO_MODEL").unwrap_or_else(|_| {
        concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../models/SmolLM2-135M-Instruct.Q4_1.gguf"
        )
        .into()
    });
    let model = Model::load(&path, ModelParams::default())?;
    let setup = Setup {
        script,
        turns,
        window,
        threads,
        from: turns * 3 / 10,
    };
    let mut medians = Vec::new();
    for &shift in shifts {
        let run = chat(&model, &setup, shift)?;
        let mut late = run.ttft_ms.clone();
        late.sort_by(f64::total_cmp);
        let median = late[late.len() / 2];
        println!(
            "context_shift {shift:>5}: median time to first token over turns {}-{turns}: {median:.0} ms; \
             turns decoding most of their prompt again: {} of {}",
            setup.from + 1,
            run.full_decodes,
            late.len()
        );
        medians.push(median);
    }
    if let [fifo, shift] = medians[..] {
        println!("ratio (shift / decode again): {:.3}", shift / fifo);
    }
    Ok(())
}

fn chat(model: &Model, setup: &Setup, shift: bool) -> Result<Run, Box<dyn std::error::Error>> {
    let config = Config::default()
        .temperature(0.0)
        .context_size(setup.window)
        .max_tokens(setup.script.max_tokens)
        .threads(setup.threads)
        .context_shift(shift)
        .system_prompt(setup.script.system_prompt.as_str());
    let agent = Agent::with_model(model.clone(), config)?;
    let mut run = Run {
        ttft_ms: Vec::new(),
        full_decodes: 0,
    };
    let verbose = std::env::var_os("ZOO_VERBOSE").is_some();
    for (turn, prompt) in setup.script.prompts[..setup.turns].iter().enumerate() {
        let response = agent.chat(prompt.as_str(), ChatOptions::new()).wait()?;
        let usage = response.usage;
        if verbose {
            // Turns counted from 1, as in the summary line.
            eprintln!(
                "shift {shift}: turn {}: {} prompt tokens, {} cached, {} reply tokens, {:.0} ms to the first token",
                turn + 1,
                usage.prompt_tokens,
                usage.cached_tokens,
                usage.completion_tokens,
                response.metrics.time_to_first_token_ms
            );
        }
        if turn >= setup.from {
            run.ttft_ms.push(response.metrics.time_to_first_token_ms);
            run.full_decodes += usize::from(usage.cached_tokens * 2 < usage.prompt_tokens);
        }
    }
    Ok(run)
}
