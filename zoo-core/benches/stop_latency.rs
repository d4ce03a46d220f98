//! How long `agent.stop()` takes to end a chat in flight on SmolLM2-135M:
//! from the call to `stop()` until the chat's handle resolves.
//!
//! Why: the engine promises that a stopped chat ends within 100 ms, during
//! generation and during a long prompt decode (the prompt is decoded in full
//! batches, and llama.cpp's abort callback reads the cancel flag mid-batch).
//! The goal here is p99 under 50 ms.
//!
//! - generation: 50 chats that ask for a long story (greedy, 2 threads);
//!   each is stopped after its first streamed token plus a random 0–200 ms.
//!   The history is cleared between chats, so the prompt comes from the KV
//!   cache and the stop lands in generation.
//! - prompt decode: 50 chats with a ~2000-token prompt, each made distinct
//!   at its start so that almost nothing is reused from the cache, stopped
//!   after a random delay between 100 ms and 80% of a full decode of that
//!   prompt (measured first; at most 10 s), i.e. while the prompt is still
//!   being decoded (checked: no token generated).
//!
//! A chat that ended before the stop took effect is counted apart and left
//! out of the latencies. Percentiles are nearest-rank: with 50 samples, p99
//! is the 50th value, the maximum.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench stop_latency -- [--seed N]
//! ```

use std::path::PathBuf;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use zoo_core::{Agent, ChatOptions, Config, Model, ModelParams, StopReason};

const GENERATION_STOPS: usize = 50;
const PROMPT_STOPS: usize = 50;

/// xorshift64*: enough randomness for stop delays, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(name: &str, mut ms: Vec<f64>, missed: usize) {
    ms.sort_by(f64::total_cmp);
    if ms.is_empty() {
        println!("{name}: no stop landed ({missed} chats ended first)");
        return;
    }
    println!(
        "{name}: {} stops, p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms ({missed} chats ended before the stop)",
        ms.len(),
        percentile(&ms, 50.0),
        percentile(&ms, 99.0),
        ms[ms.len() - 1],
    );
}

/// The 1/5/15-minute load averages, printed so that noise is visible.
fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|l| l.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "?".into())
}

fn main() {
    let mut args = std::env::args().skip(1).filter(|a| a != "--bench");
    let seed = match (args.next().as_deref(), args.next()) {
        (Some("--seed"), Some(n)) => n.parse().expect("--seed takes a number"),
        _ => {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
                | 1
        }
    };
    println!("seed {seed}, load average {}", loadavg());
    let mut rng = Rng(seed);

    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let path = root
        .join("../models/SmolLM2-135M-Instruct.Q4_1.gguf")
        .display()
        .to_string();
    let model = Model::load(&path, ModelParams::default()).expect("SmolLM2 loads");
    let agent = Agent::with_model(
        model,
        Config::new(&path)
            .temperature(0.0)
            .seed(7)
            .threads(2)
            .context_size(4096)
            .max_tokens(1000),
    )
    .expect("agent starts");

    // Stops during generation.
    let story = "Write a very long story about a lighthouse keeper and his dog, \
                 with many chapters and a lot of detail.";
    let mut latencies = Vec::new();
    let mut missed = 0;
    for _ in 0..GENERATION_STOPS {
        agent.clear_history().expect("history clears");
        let (tx, rx) = mpsc::sync_channel(1);
        let mut first = Some(tx);
        let handle = agent.chat(
            story,
            ChatOptions::new().on_token(move |_| {
                if let Some(tx) = first.take() {
                    let _ = tx.send(());
                }
            }),
        );
        rx.recv_timeout(Duration::from_secs(60))
            .expect("a first token within a minute");
        std::thread::sleep(Duration::from_millis(rng.below(201)));
        let asked = Instant::now();
        agent.stop();
        let response = handle.wait().expect("the chat resolves");
        let took = asked.elapsed().as_secs_f64() * 1e3;
        if response.stop_reason == StopReason::Cancelled {
            latencies.push(took);
        } else {
            missed += 1;
        }
    }
    report("stop during generation", latencies, missed);
    println!("load average {}", loadavg());

    // Stops during the decode of a ~2000-token prompt.
    let text = std::fs::read_to_string(root.join("benches/prompt.txt")).expect("prompt.txt");
    let long = [text.as_str(); 5].join("\n");
    agent.clear_history().expect("history clears");
    let full = agent
        .chat(
            format!("Request calibration.\n{long}"),
            ChatOptions::new().max_tokens(1),
        )
        .wait()
        .expect("the chat succeeds");
    let decode_ms = full.metrics.prompt_ms;
    println!(
        "full decode of the long prompt: {} tokens ({} cached) in {decode_ms:.0} ms",
        full.usage.prompt_tokens, full.usage.cached_tokens
    );
    // Capped, so that a decode slowed down by a busy machine cannot stretch
    // the run to hours.
    let window = ((decode_ms * 0.8) as u64).clamp(101, 10_000) - 100;
    let mut latencies = Vec::new();
    let mut missed = 0;
    for i in 0..PROMPT_STOPS {
        agent.clear_history().expect("history clears");
        let handle = agent.chat(format!("Request {i}.\n{long}"), ChatOptions::new());
        std::thread::sleep(Duration::from_millis(100 + rng.below(window)));
        let asked = Instant::now();
        agent.stop();
        let response = handle.wait().expect("the chat resolves");
        let took = asked.elapsed().as_secs_f64() * 1e3;
        if response.stop_reason == StopReason::Cancelled && response.usage.completion_tokens == 0 {
            latencies.push(took);
        } else {
            missed += 1;
        }
    }
    report("stop during prompt decode", latencies, missed);
    println!("load average {}", loadavg());
}
