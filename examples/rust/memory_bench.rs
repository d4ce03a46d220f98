//! What memory costs: chats on the mock with and without a session store
//! (throughput ratio, per-chat latency percentiles, so the p99 of a
//! turn's commit shows as the difference), and one compaction pass on a
//! 4,000-token history of tool turns. Both sides in one process, chat by
//! chat in turn; the mock makes the engine's own cost the only cost.
//!
//! ```sh
//! cargo run --release --example memory_bench -- 2000
//! ```

use std::time::Instant;

use serde_json::json;
use zoo_core::context::{compact, CompactSettings, Entry};
use zoo_core::{Agent, ChatOptions, Config, Message, MockBackend, ToolCall};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let chats: usize = std::env::args().nth(1).map_or(Ok(2000), |a| a.parse())?;
    let dir = std::env::temp_dir().join(format!("zoo-memory-bench-{}", std::process::id()));
    std::fs::create_dir_all(&dir)?;
    let db = dir.join("sessions.db").to_string_lossy().into_owned();
    // The two agents chat in turn, one chat each, so both see the same
    // machine: on a shared machine, runs one after the other measured
    // mostly the neighbours.
    let mut rounds = Vec::new();
    for round in 0..3 {
        let stored = Config::default()
            .session_store(&db)
            .session(format!("bench-{round}"));
        let (plain, with) = run_side_by_side(Config::default(), stored, chats)?;
        println!(
            "round {round}: {:.0} chats/s without a store, {:.0} with (ratio {:.3}); \
             per chat p50 {:.3} / {:.3} ms, p99 {:.3} / {:.3} ms",
            plain.per_second,
            with.per_second,
            with.per_second / plain.per_second,
            plain.p50,
            with.p50,
            plain.p99,
            with.p99
        );
        rounds.push(with.per_second / plain.per_second);
    }
    rounds.sort_by(f64::total_cmp);
    println!("median ratio (with a store / without): {:.3}", rounds[1]);
    compaction_pass();
    std::fs::remove_dir_all(&dir)?;
    Ok(())
}

struct Run {
    per_second: f64,
    p50: f64,
    p99: f64,
}

impl Run {
    fn of(mut times: Vec<f64>) -> Run {
        let total: f64 = times.iter().sum();
        times.sort_by(f64::total_cmp);
        Run {
            per_second: times.len() as f64 / (total / 1000.0),
            p50: times[times.len() / 2],
            p99: times[times.len() * 99 / 100],
        }
    }
}

/// `chats` chats on each of two agents, alternating which chats first.
fn run_side_by_side(
    a: Config,
    b: Config,
    chats: usize,
) -> Result<(Run, Run), Box<dyn std::error::Error>> {
    let agents = [a, b].map(|c| Agent::with_backend(MockBackend::new(), c.context_size(1 << 20)));
    let [a, b] = agents;
    let (a, b) = (a?, b?);
    let (mut times_a, mut times_b) = (Vec::with_capacity(chats), Vec::with_capacity(chats));
    for n in 0..chats {
        let timed = |agent: &Agent| -> Result<f64, zoo_core::Error> {
            let t = Instant::now();
            agent
                .chat(format!("message {n}"), ChatOptions::new())
                .wait()?;
            Ok(t.elapsed().as_secs_f64() * 1000.0)
        };
        if n % 2 == 0 {
            times_a.push(timed(&a)?);
            times_b.push(timed(&b)?);
        } else {
            times_b.push(timed(&b)?);
            times_a.push(timed(&a)?);
        }
    }
    Ok((Run::of(times_a), Run::of(times_b)))
}

/// One cascade pass over 4,000 tokens of tool turns, with the mock's token
/// counter (a word is a token): the cascade's own cost.
fn compaction_pass() {
    let mut entries = Vec::new();
    let mut total = 0;
    let mut n = 0;
    while total < 4000 {
        let id = format!("call_{n}");
        let call = ToolCall {
            id: id.clone(),
            name: "weather".into(),
            arguments: json!({"city": "Paris"}),
        };
        for message in [
            Message::user(format!("weather on day {n}?")),
            Message::assistant_with_tool_calls("", vec![call]),
            Message::tool(&id, "weather", vec!["sunny"; 150].join(" ")),
            Message::assistant("It is sunny."),
        ] {
            let tokens = MockBackend::tokens_of(&message);
            total += tokens;
            entries.push(Entry {
                message,
                tokens,
                position: None,
            });
        }
        n += 1;
    }
    let keep_from = entries.len();
    let mut times = Vec::new();
    let mut after = 0;
    for _ in 0..50 {
        let mut copy = entries.clone();
        let t = Instant::now();
        let done = compact(
            &mut copy,
            0,
            2000,
            keep_from,
            &CompactSettings::default(),
            &mut |m| Ok(MockBackend::tokens_of(m)),
        )
        .expect("compaction");
        times.push(t.elapsed().as_secs_f64() * 1000.0);
        after = done.passes.last().map_or(total, |p| p.tokens_after);
    }
    times.sort_by(f64::total_cmp);
    println!(
        "compaction: {total} tokens in {} messages to {after} (budget 2000): median {:.3} ms per pass",
        entries.len(),
        times[times.len() / 2]
    );
}
