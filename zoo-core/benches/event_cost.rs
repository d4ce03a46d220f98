//! What observing a chat's events costs: the same chat on a zero-latency
//! `MockBackend`, with no `on_event` and with one that receives every
//! event (and, as the C, Python and Node front doors do, one that also
//! writes each as JSON), interleaved over rounds; the difference of the
//! medians divided by the chat's events is the cost per event (also given
//! as the median of the per-round differences, which a slow spell of the
//! machine affects less).
//!
//! The chat makes many events cheaply: one reply with `CALLS` calls to
//! tools that do not exist (each is settled at once, without a hop to a tool
//! thread, and reports `tool_call_started`, `tool_call_finished` and
//! `tool_error`), then a final reply: `3 * CALLS + 6` events.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench event_cost
//! ```

use std::hint::black_box;
use std::time::{Duration, Instant};

use serde_json::json;
use zoo_core::{Agent, AgentEvent, ChatOptions, Config, MockBackend, MockReply, Tool};

const CALLS: usize = 100;
const ROUNDS: usize = 151;

fn median(mut samples: Vec<Duration>) -> Duration {
    samples.sort();
    samples[samples.len() / 2]
}

/// One reply with `CALLS` calls to unknown tools (distinct names, so none
/// runs out of retries), then the final reply.
fn script() -> [MockReply; 2] {
    let calls: Vec<(String, serde_json::Value)> = (0..CALLS)
        .map(|i| (format!("missing_{i}"), json!({"n": i})))
        .collect();
    let calls: Vec<(&str, serde_json::Value)> =
        calls.iter().map(|(n, a)| (n.as_str(), a.clone())).collect();
    [MockReply::tool_calls(&calls), MockReply::text("done")]
}

/// How a chat's events are observed.
#[derive(Clone, Copy)]
enum Observer {
    None,
    Receive,
    Json,
}

fn chat(agent: &Agent, mock: &MockBackend, observer: Observer) -> (Duration, usize) {
    agent.clear_history().expect("history clears");
    mock.push_replies(script());
    let mut events = 0usize;
    let counter = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let seen = counter.clone();
    let options = match observer {
        Observer::None => ChatOptions::new(),
        Observer::Receive => ChatOptions::new().on_event(move |event: &AgentEvent| {
            black_box(event);
            seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }),
        Observer::Json => ChatOptions::new().on_event(move |event: &AgentEvent| {
            black_box(event.to_json());
            seen.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        }),
    };
    let started = Instant::now();
    let response = agent.chat("go", options).wait().expect("the chat succeeds");
    let took = started.elapsed();
    assert_eq!(response.text, "done");
    assert_eq!(response.tool_calls.len(), CALLS);
    events += counter.load(std::sync::atomic::Ordering::Relaxed);
    (took, events)
}

fn main() {
    let mock = MockBackend::new();
    // Room for a thousand calls and their errors.
    mock.set_context_size(1 << 20);
    let config = Config::default();
    let agent = Agent::with_backend(mock.clone(), config).expect("agent starts");
    // With no tool at all the reply is plain text: one real tool is shown.
    agent.register_tool(
        Tool::new("real", "A tool", json!({"type": "object"}), |_| {
            Ok(json!(1))
        })
        .expect("tool"),
    );
    let (mut none, mut receive, mut json) = (Vec::new(), Vec::new(), Vec::new());
    let mut events = 0;
    // One warm-up round, not kept.
    for observer in [Observer::None, Observer::Receive, Observer::Json] {
        chat(&agent, &mock, observer);
    }
    for round in 0..ROUNDS {
        let mut order = [Observer::None, Observer::Receive, Observer::Json];
        order.rotate_left(round % 3);
        for observer in order {
            let (took, seen) = chat(&agent, &mock, observer);
            match observer {
                Observer::None => none.push(took),
                Observer::Receive => {
                    events = seen;
                    receive.push(took)
                }
                Observer::Json => json.push(took),
            }
        }
    }
    assert_eq!(events, 3 * CALLS + 6);
    // Per round, so that the machine's slow spells cancel out.
    let paired = |with: &[Duration]| {
        let mut diffs: Vec<f64> = with
            .iter()
            .zip(&none)
            .map(|(w, n)| (w.as_secs_f64() - n.as_secs_f64()) * 1e6 / events as f64)
            .collect();
        diffs.sort_by(f64::total_cmp);
        diffs[diffs.len() / 2]
    };
    let (per_receive, per_json) = (paired(&receive), paired(&json));
    let (none, receive, json) = (median(none), median(receive), median(json));
    let per_event =
        |with: Duration| (with.as_secs_f64() - none.as_secs_f64()) * 1e6 / events as f64;
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "event_cost: {events} events per chat, medians of {ROUNDS} interleaved rounds: \
         no on_event {:.2} ms, on_event {:.2} ms (ratio {:.3}), on_event writing JSON {:.2} ms \
         (ratio {:.3})",
        ms(none),
        ms(receive),
        receive.as_secs_f64() / none.as_secs_f64(),
        ms(json),
        json.as_secs_f64() / none.as_secs_f64(),
    );
    println!(
        "event_cost: per event observed {:.3} µs (difference of the medians) / {:.3} µs \
         (median of the per-round differences); written as JSON {:.3} / {:.3} µs",
        per_event(receive),
        per_receive,
        per_event(json),
        per_json,
    );
}
