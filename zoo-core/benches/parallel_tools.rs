//! Tool execution strategies against the clock: one model reply with four
//! tool calls, each sleeping 200 ms, on the mock (no model time), run with
//! `tool_execution` `"sequential"`, `"parallel"` and `{"batched": 2}`,
//! against the same chat with a single call.
//!
//! Why: issue 15's goal is `parallel` within 1.25x the time of one call and
//! `sequential` about 4x. The chat's wall time is measured from `chat()` to
//! the response: two mock replies (the calls, then "Done."), the calls and
//! the engine around them.
//!
//! Each round runs every case once, in a rotating order so that no case
//! always goes first; a fresh agent per chat (created and checked outside
//! the timed part). Medians over the rounds and their ratios are printed.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench parallel_tools [-- ROUNDS]
//! ```

use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zoo_core::{Agent, ChatOptions, Config, Tool};

const SLEEP: Duration = Duration::from_millis(200);
const CALLS: usize = 4;

/// A case: its name, the config's `tool_execution` and how many calls.
const CASES: [(&str, &str, usize); 4] = [
    ("one call", "\"sequential\"", 1),
    ("4 calls, sequential", "\"sequential\"", CALLS),
    ("4 calls, parallel", "\"parallel\"", CALLS),
    ("4 calls, batched 2", "{\"batched\": 2}", CALLS),
];

fn call(n: usize) -> String {
    format!("<tool_call>\n{{\"name\": \"nap\", \"arguments\": {{\"n\": {n}}}}}\n</tool_call>")
}

/// An agent on the mock that answers with `calls` calls of `nap`, then "Done.".
fn agent(tool_execution: &str, calls: usize) -> Agent {
    let reply: String = (0..calls).map(call).collect();
    let config = format!(
        r#"{{"tool_execution": {tool_execution},
            "provider": {{"type": "mock", "replies": [{}, "Done."]}}}}"#,
        Value::String(reply)
    );
    let agent = Agent::create(Config::from_json(&config).expect("config")).expect("agent");
    let schema = json!({"type": "object", "properties": {"n": {"type": "integer"}}});
    let nap = Tool::new("nap", "Sleeps 200 ms", schema, |args| {
        std::thread::sleep(SLEEP);
        Ok(args["n"].clone())
    })
    .expect("tool");
    agent.register_tool(nap);
    agent
}

/// One timed chat; checks that every call ran and succeeded.
fn timed(tool_execution: &str, calls: usize) -> Duration {
    let agent = agent(tool_execution, calls);
    let started = Instant::now();
    let response = agent
        .chat("Nap.", ChatOptions::new())
        .wait()
        .expect("the chat succeeds");
    let took = started.elapsed();
    assert_eq!(response.text, "Done.");
    assert_eq!(response.tool_calls.len(), calls);
    assert!(
        response.tool_errors.is_empty(),
        "{:?}",
        response.tool_errors
    );
    took
}

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

fn main() {
    // `cargo bench` passes `--bench`; the first number given is the rounds.
    let rounds: usize = std::env::args()
        .skip(1)
        .find_map(|a| a.parse().ok())
        .unwrap_or(7);
    let mut samples: Vec<Vec<Duration>> = vec![Vec::new(); CASES.len()];
    for round in 0..rounds {
        for k in 0..CASES.len() {
            let i = (round + k) % CASES.len();
            let (_, execution, calls) = CASES[i];
            samples[i].push(timed(execution, calls));
        }
    }
    let medians: Vec<Duration> = samples.into_iter().map(median).collect();
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "Rust, {CALLS} calls of a tool sleeping {} ms, {rounds} rounds, medians:",
        SLEEP.as_millis()
    );
    for ((name, _, _), median) in CASES.iter().zip(&medians) {
        println!(
            "  {name:<22} {:7.1} ms  {:.2}x one call",
            ms(*median),
            ms(*median) / ms(medians[0])
        );
    }
    println!(
        "  sequential / parallel: {:.2}x",
        ms(medians[1]) / ms(medians[2])
    );
}
