//! How long a message sent with `agent.steer()` takes to reach the model on
//! SmolLM2-135M: from the call to `steer()` until the prompt of a reply,
//! as the backend renders it, contains the message. The time is taken on
//! the inference thread by a `tracing` layer watching the `zoo::prompt`
//! record (debug), which the backend emits right after rendering and
//! tokenizing the prompt, before decoding it.
//!
//! Two cases, 10 steers each (greedy; `ZOO_BENCH_THREADS` threads, default
//! 2), each chat on a cleared
//! history:
//! - generation: the model describes a lighthouse in one sentence (no
//!   tools; a few dozen tokens, ended by the model); a thread steers after
//!   a random 1 to 16 streamed tokens. The steer ends the reply at the next
//!   token (what it said is kept) and the message joins the conversation
//!   for the next reply.
//! - tool in flight: the model's first reply is a call to a tool that takes
//!   200 ms; the tool steers after a random 0 to 150 ms. The message joins
//!   before the reply that reads the tool's result; the part of the
//!   latency after the tool returned is also reported.
//!
//! Latencies are also given in tokens of the model's own generation speed
//! (the story's time per generated token), for the goal "within one token
//! plus the tool in flight". Percentiles are nearest-rank (p99 of 10 is the
//! maximum). Each latency is printed as it is measured.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench steering_latency
//! ```

use std::path::PathBuf;
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::json;
use tracing::field::{Field, Visit};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use zoo_core::{Agent, ChatOptions, Config, Model, ModelParams, Tool, ToolChoice};

const STEERS: usize = 10;
const TOOL_MS: u64 = 200;

/// xorshift64*: enough randomness for steer moments, no dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

/// The text being waited for and when a prompt first contained it.
#[derive(Default)]
struct Watch {
    text: Option<String>,
    seen: Option<Instant>,
}

/// Notes the moment a `zoo::prompt` record first contains the watched text.
struct PromptWatch(Arc<Mutex<Watch>>);

struct Message(Option<String>);

impl Visit for Message {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        if field.name() == "message" {
            self.0 = Some(format!("{value:?}"));
        }
    }
}

impl<S: tracing::Subscriber> Layer<S> for PromptWatch {
    fn on_event(&self, event: &tracing::Event<'_>, _: Context<'_, S>) {
        if event.metadata().target() != "zoo::prompt" {
            return;
        }
        let now = Instant::now();
        let mut prompt = Message(None);
        event.record(&mut prompt);
        let mut watch = self.0.lock().unwrap();
        let hit = match (&watch.text, &prompt.0) {
            (Some(text), Some(prompt)) => prompt.contains(text.as_str()),
            _ => false,
        };
        if hit && watch.seen.is_none() {
            watch.seen = Some(now);
        }
    }
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(name: &str, mut ms: Vec<f64>, token_ms: f64) {
    ms.sort_by(f64::total_cmp);
    let (p50, p99) = (percentile(&ms, 50.0), percentile(&ms, 99.0));
    println!(
        "{name}: {} steers, p50 {p50:.1} ms ({:.1} tokens), p99 {p99:.1} ms ({:.1} tokens), \
         min {:.1} ms",
        ms.len(),
        p50 / token_ms,
        p99 / token_ms,
        ms[0],
    );
}

fn config() -> Config {
    Config::default()
        .temperature(0.0)
        .context_size(2048)
        .threads(threads())
        .seed(7)
        .max_tokens(400)
}

/// The threads to run the model on: `ZOO_BENCH_THREADS`, default 2 (on a
/// machine whose cores other processes keep busy, 1 avoids llama.cpp's
/// OpenMP workers spinning against each other).
fn threads() -> u32 {
    std::env::var("ZOO_BENCH_THREADS")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(2)
}

/// From the steer to the first prompt holding the message, in ms.
fn latency(watch: &Arc<Mutex<Watch>>, steered_at: Instant) -> Option<f64> {
    let seen = watch.lock().unwrap().seen?;
    Some(seen.duration_since(steered_at).as_secs_f64() * 1e3)
}

fn main() {
    let watch = Arc::new(Mutex::new(Watch::default()));
    tracing::subscriber::set_global_default(
        tracing_subscriber::registry().with(PromptWatch(watch.clone())),
    )
    .expect("the bench's subscriber is the only one");
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let model = Model::load(&path, ModelParams::default()).expect("run scripts/fetch-models");
    let mut rng = Rng(0x5eed_1234_abcd_0042);

    // Generation: a description, steered after k streamed tokens.
    let agent = Arc::new(Agent::with_model(model.clone(), config()).expect("agent"));
    let mut during_generation = Vec::new();
    let mut token_ms = Vec::new();
    for i in 0..STEERS {
        agent.clear_history().unwrap();
        let text = format!("Stop the story and say only: done {i}.");
        *watch.lock().unwrap() = Watch {
            text: Some(text.clone()),
            seen: None,
        };
        let after = 1 + rng.below(16) as usize;
        let (tx, rx) = mpsc::channel::<()>();
        let mut streamed = 0usize;
        let options = ChatOptions::new().max_turns(2).on_token(move |_| {
            streamed += 1;
            if streamed == after {
                let _ = tx.send(());
            }
        });
        let handle = agent.chat("Describe a lighthouse in one sentence.", options);
        let steerer = {
            let agent = agent.clone();
            std::thread::spawn(move || {
                rx.recv().ok()?;
                let at = Instant::now();
                agent.steer(text);
                Some(at)
            })
        };
        let response = handle.wait().expect("the chat succeeds");
        let steered_at = steerer.join().unwrap();
        let first = agent.history();
        token_ms.push(
            response.metrics.generation_ms / f64::from(response.usage.completion_tokens.max(1)),
        );
        match steered_at.and_then(|at| latency(&watch, at)) {
            Some(ms) => {
                println!(
                    "generation {i}: steered after token {after} ({} tokens in the chat), {ms:.1} ms",
                    response.usage.completion_tokens
                );
                during_generation.push(ms)
            }
            None => println!(
                "generation {i}: no prompt held the message (steered after token {after}; {} messages)",
                first.len()
            ),
        }
    }
    token_ms.sort_by(f64::total_cmp);
    let token_ms = token_ms[token_ms.len() / 2];
    println!(
        "SmolLM2-135M, {} threads: {token_ms:.1} ms per generated token (median)",
        threads()
    );
    report("during generation", during_generation, token_ms);

    // Tool in flight: the steer comes while the tool runs.
    let agent = Arc::new(Agent::with_model(model, config()).expect("agent"));
    let (mut during_tool, mut beyond_tool) = (Vec::new(), Vec::new());
    for i in 0..STEERS {
        agent.clear_history().unwrap();
        let text = format!("Use Celsius, please ({i}).");
        *watch.lock().unwrap() = Watch {
            text: Some(text.clone()),
            seen: None,
        };
        let delay = Duration::from_millis(rng.below(150));
        // When the steer was sent and when the tool returned.
        let moments = Arc::new(Mutex::new((None, None)));
        let (reach, at) = (Arc::downgrade(&agent), moments.clone());
        agent.unregister_tool("get_weather");
        agent.register_tool(
            Tool::new(
                "get_weather",
                "Get the current weather for a city",
                json!({"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}),
                move |args| {
                    let started = Instant::now();
                    std::thread::sleep(delay);
                    if let Some(agent) = reach.upgrade() {
                        at.lock().unwrap().0 = Some(Instant::now());
                        agent.steer(text.clone());
                    }
                    std::thread::sleep(
                        Duration::from_millis(TOOL_MS).saturating_sub(started.elapsed()),
                    );
                    at.lock().unwrap().1 = Some(Instant::now());
                    Ok(json!({"city": args["city"], "temperature_f": 64}))
                },
            )
            .unwrap(),
        );
        let options = ChatOptions::new()
            .tool_choice(ToolChoice::Required)
            .max_turns(2);
        agent
            .chat("What is the weather in Paris?", options)
            .wait()
            .expect("the chat succeeds");
        let (steered, returned) = *moments.lock().unwrap();
        match (steered.and_then(|at| latency(&watch, at)), returned) {
            (Some(ms), Some(returned)) => {
                let after_tool = latency(&watch, returned).unwrap_or(f64::NAN);
                println!(
                    "tool {i}: steered {} ms into the tool, {ms:.1} ms, of which {after_tool:.1} ms \
                     after the tool returned",
                    delay.as_millis()
                );
                during_tool.push(ms);
                beyond_tool.push(after_tool);
            }
            _ => println!("tool {i}: no prompt held the message"),
        }
    }
    report(
        &format!("tool in flight ({TOOL_MS} ms tool, steered 0-150 ms into it)"),
        during_tool,
        token_ms,
    );
    report("  of which after the tool returned", beyond_tool, token_ms);
}
