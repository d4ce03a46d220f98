//! Time to first token at turn 10 of a conversation, with KV-cache reuse
//! against a full re-decode of the same prompt, on SmolLM2-135M.
//!
//! Why: an agent keeps talking to the same history, and only the tokens
//! after the longest cached prefix should be decoded each turn. The goal is
//! a turn-10 time to first token at most 0.15 of a full re-decode.
//!
//! Each repetition plays a 10-turn conversation (short user messages,
//! `max_tokens` 24, greedy, 2 threads) on a fresh agent, then measures
//! `response.metrics.time_to_first_token_ms` of turn 10 twice:
//! - reuse: turn 10 on that agent, whose KV cache holds turns 1–9;
//! - re-decode: turn 10 on a fresh agent given the same 9-turn history with
//!   `agent.set_history(...)`, whose KV cache is empty (`cached_tokens` 0).
//!
//! The two are interleaved, alternating which goes first; the medians and
//! their ratio are printed. Both answers are greedy, so they should match.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench multi_turn -- [REPS]   # default 7
//! ```

use std::path::PathBuf;

use zoo_core::{Agent, ChatOptions, Config, Message, Model, ModelParams, Response};

const TURNS: [&str; 10] = [
    "Hi! My name is Sam and I live in Lyon.",
    "What is the capital of Italy?",
    "Name a fruit that is red.",
    "What colour is a clear sky?",
    "How many legs does a cat have?",
    "What is two plus two?",
    "Name a large animal that lives in Africa.",
    "What do bees make?",
    "Which season comes after winter?",
    "Thanks! What was my name again?",
];

fn config(model: &str) -> Config {
    Config::new(model)
        .temperature(0.0)
        .seed(7)
        .context_size(2048)
        .threads(2)
        .max_tokens(24)
}

fn chat(agent: &Agent, text: &str) -> Response {
    agent
        .chat(text, ChatOptions::new())
        .wait()
        .expect("the chat succeeds")
}

fn median(values: &[f64]) -> f64 {
    let mut v = values.to_vec();
    v.sort_by(f64::total_cmp);
    let n = v.len();
    if n % 2 == 1 {
        v[n / 2]
    } else {
        (v[n / 2 - 1] + v[n / 2]) / 2.0
    }
}

/// The 1/5/15-minute load averages, printed so that noise is visible.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    let reps: usize = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .map(|a| a.parse().expect("REPS is a number"))
        .unwrap_or(7);
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../models/SmolLM2-135M-Instruct.Q4_1.gguf")
        .display()
        .to_string();
    let model = Model::load(&path, ModelParams::default()).expect("SmolLM2 loads");

    println!("load average {}", loadavg());
    let mut reuse_ms = Vec::new();
    let mut redecode_ms = Vec::new();
    println!(
        "rep  first     reuse_ttft_ms (prompt/cached)  redecode_ttft_ms (prompt/cached)  same_text"
    );
    for rep in 0..reps {
        let agent = Agent::with_model(model.clone(), config(&path)).expect("agent starts");
        for turn in &TURNS[..9] {
            chat(&agent, turn);
        }
        let history: Vec<Message> = agent.history();
        let fresh = Agent::with_model(model.clone(), config(&path)).expect("agent starts");
        fresh.set_history(history).expect("the history is accepted");

        let reuse_first = rep % 2 == 0;
        let (reuse, redecode) = if reuse_first {
            let r = chat(&agent, TURNS[9]);
            (r, chat(&fresh, TURNS[9]))
        } else {
            let d = chat(&fresh, TURNS[9]);
            (chat(&agent, TURNS[9]), d)
        };
        assert_eq!(
            redecode.usage.cached_tokens, 0,
            "the fresh agent reused a cache"
        );
        assert_eq!(reuse.usage.prompt_tokens, redecode.usage.prompt_tokens);
        reuse_ms.push(reuse.metrics.time_to_first_token_ms);
        redecode_ms.push(redecode.metrics.time_to_first_token_ms);
        println!(
            "{rep:>3}  {:<8}  {:>8.1} ({}/{})  {:>22.1} ({}/{})  {:>14}",
            if reuse_first { "reuse" } else { "redecode" },
            reuse.metrics.time_to_first_token_ms,
            reuse.usage.prompt_tokens,
            reuse.usage.cached_tokens,
            redecode.metrics.time_to_first_token_ms,
            redecode.usage.prompt_tokens,
            redecode.usage.cached_tokens,
            reuse.text == redecode.text,
        );
    }
    let (r, d) = (median(&reuse_ms), median(&redecode_ms));
    println!(
        "turn-10 time to first token, medians of {reps}: reuse {r:.1} ms, re-decode {d:.1} ms, \
         ratio {:.3} (goal <= 0.15)",
        r / d
    );
    println!("load average {}", loadavg());
}
