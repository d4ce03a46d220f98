//! The engine's own overhead per chat, with a zero-latency `MockBackend` so
//! that no model time is in the figure: queueing the request, waking the
//! inference thread, the agentic loop, history bookkeeping, tool-call
//! parsing, JSON-schema validation, running the handler, injecting the
//! result, and resolving the handle.
//!
//! Why: every chat pays this on top of inference. The target is under
//! 1 ms at p99 for a chat with one tool call; the engine test
//! `ag_001_engine_overhead_under_10ms_p99` guards 10 ms on a long history.
//!
//! Two cases, each one `agent.chat(...)` waited to completion:
//! - `chat_with_one_tool_call`: the mock replies with a call to `add`
//!   (`MockReply::tool_call`), the engine validates and runs it, and the mock
//!   gives the final reply (`MockReply::text`): two backend calls, one tool.
//! - `plain_chat`: one text reply, no tools registered.
//!
//! The history is cleared before each chat (outside the timed part) so every
//! iteration sees the same conversation. `iter_custom` times each chat on
//! its own; every duration criterion runs (warm-up included) is kept, and
//! p50/p99/max are printed after criterion's own report.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench engine_overhead
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::Criterion;
use serde_json::json;
use zoo_core::{Agent, ChatOptions, Config, MockBackend, MockReply, StopReason};

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    // Nearest rank.
    let rank = ((p / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

fn report(name: &str, mut samples: Vec<Duration>) {
    samples.sort();
    let us = |d: Duration| d.as_secs_f64() * 1e6;
    println!(
        "{name}: {} chats, p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
        samples.len(),
        us(percentile(&samples, 50.0)),
        us(percentile(&samples, 99.0)),
        us(*samples.last().expect("at least one sample")),
    );
}

/// Times `iters` chats, pushing each duration to `samples`; `prepare` runs
/// before each chat, untimed.
fn timed_chats(
    agent: &Agent,
    iters: u64,
    samples: &mut Vec<Duration>,
    mut prepare: impl FnMut(),
) -> Duration {
    let mut total = Duration::ZERO;
    for _ in 0..iters {
        agent.clear_history().expect("history clears");
        prepare();
        let started = Instant::now();
        let response = agent
            .chat("What is 2 + 3?", ChatOptions::new())
            .wait()
            .expect("the chat succeeds");
        let took = started.elapsed();
        black_box(response);
        samples.push(took);
        total += took;
    }
    total
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args();

    // One tool call, then the final reply.
    let mock = MockBackend::new();
    let agent = Agent::with_backend(mock.clone(), Config::default()).expect("agent starts");
    agent
        .register_fn(
            "add",
            "Add two integers",
            &[("a", "first"), ("b", "second")],
            |a: i64, b: i64| a + b,
        )
        .expect("tool registers");
    let script = || {
        [
            MockReply::tool_call("add", json!({"a": 2, "b": 3})),
            MockReply::text("2 + 3 is 5."),
        ]
    };
    // Check once that the chat really makes the call.
    mock.push_replies(script());
    let check = agent
        .chat("What is 2 + 3?", ChatOptions::new())
        .wait()
        .expect("the chat succeeds");
    assert_eq!(check.tool_calls.len(), 1, "{check:#?}");
    assert_eq!(check.tool_calls[0].result, Some(json!(5)));
    assert_eq!(check.stop_reason, StopReason::Stop);
    assert_eq!(check.text, "2 + 3 is 5.");

    let mut with_tool = Vec::new();
    criterion.bench_function("chat_with_one_tool_call", |b| {
        b.iter_custom(|iters| {
            timed_chats(&agent, iters, &mut with_tool, || {
                mock.push_replies(script())
            })
        })
    });
    drop(agent);

    // A plain chat: one reply, no tools.
    let mock = MockBackend::new();
    let agent = Agent::with_backend(mock.clone(), Config::default()).expect("agent starts");
    let mut plain = Vec::new();
    criterion.bench_function("plain_chat", |b| {
        b.iter_custom(|iters| {
            timed_chats(&agent, iters, &mut plain, || {
                mock.push_replies([MockReply::text("Five.")])
            })
        })
    });
    drop(agent);

    criterion.final_summary();
    report("chat_with_one_tool_call", with_tool);
    report("plain_chat", plain);
}
