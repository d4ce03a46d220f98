//! The Rust twin of tests/c/bench_ffi.c: the same two measurements through
//! the zoo-core Rust API instead of libzoo's C ABI, so that the difference
//! between the two is what the C boundary costs. Run both, interleaved,
//! with `make -C tests/c bench` (tests/c/bench.sh), which takes medians.
//!
//! - tokens: chats whose reply streams `tokens` pieces (a scripted reply of
//!   that many words), alternately with an `on_token` closure doing what the
//!   C callback does (sum the lengths) and without one.
//! - tool calls: chats whose first reply holds `calls` calls of a tool whose
//!   handler returns `1`, then a short final reply; time per call.
//!
//! Each sample sums `chats` chats (`chats / 20` for tokens). Output: one
//! line per sample, `rust <metric> <value>`.
//!
//! ```sh
//! cargo bench --release -p zoo-ffi --bench ffi_overhead -- [samples] [tokens] [calls] [chats]
//! ```
//!
//! The release profile on purpose: it is the build libzoo ships in
//! (scripts/build-libzoo, tests/c/Makefile's default), so both sides run
//! the same zoo-core.

use std::ffi::CString;
use std::hint::black_box;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Instant;

use serde_json::json;
use zoo_core::{Agent, ChatOptions, Config, MockBackend, MockReply, Tool};

/// One timed chat (history cleared first, untimed), in ns, and the time it
/// then takes to turn its response into the C string that zoo_agent_chat
/// returns (`Response::to_json` and `CString::new`), which the C side pays
/// inside the call and the Rust API never does.
fn timed_chat(agent: &Agent, message: &str, options: ChatOptions) -> (f64, f64) {
    agent.clear_history().expect("history clears");
    let start = Instant::now();
    let response = agent
        .chat(message, options)
        .wait()
        .expect("the chat succeeds");
    let took = start.elapsed().as_secs_f64() * 1e9;
    let start = Instant::now();
    black_box(CString::new(response.to_json()).expect("no NUL"));
    let json = start.elapsed().as_secs_f64() * 1e9;
    black_box(response);
    (took, json)
}

fn with_token_sum(streamed: &Arc<AtomicUsize>) -> ChatOptions {
    // The closure owns its running sum, like the C callback's user_data;
    // the total is published once, when the closure is dropped.
    struct Sum(usize, Arc<AtomicUsize>);
    impl Drop for Sum {
        fn drop(&mut self) {
            self.1.store(self.0, Ordering::Relaxed);
        }
    }
    let mut sum = Sum(0, streamed.clone());
    ChatOptions::new().on_token(move |text| {
        // Through `&mut sum`, so the closure captures (and drops) the whole
        // `Sum`, not just its counter field.
        let sum = &mut sum;
        sum.0 += black_box(text.len());
    })
}

fn main() {
    // cargo bench passes "--bench" first; numbers are ours.
    let args: Vec<usize> = std::env::args()
        .skip(1)
        .filter_map(|a| a.parse().ok())
        .collect();
    let samples = args.first().copied().unwrap_or(3);
    let tokens = args.get(1).copied().unwrap_or(20_000);
    let calls = args.get(2).copied().unwrap_or(10);
    let chats = args.get(3).copied().unwrap_or(100);
    let token_chats = (chats / 20).max(1);

    // ---- tokens: scripted replies of `tokens` words ----
    let reply = vec!["w"; tokens].join(" ");
    let mock = MockBackend::new();
    mock.push_replies((0..2 + 2 * token_chats * samples).map(|_| MockReply::text(reply.clone())));
    let streamer = Agent::with_backend(mock, Config::default()).expect("mock agent");
    let streamed = Arc::new(AtomicUsize::new(0));
    timed_chat(&streamer, "go", with_token_sum(&streamed));
    timed_chat(&streamer, "go", ChatOptions::new());
    for _ in 0..samples {
        let (mut with, mut without, mut json) = (0.0, 0.0, 0.0);
        for _ in 0..token_chats {
            with += timed_chat(&streamer, "go", with_token_sum(&streamed)).0;
            let (took, to_json) = timed_chat(&streamer, "go", ChatOptions::new());
            without += took;
            json += to_json;
            assert_eq!(streamed.load(Ordering::Relaxed), reply.len());
        }
        let n = (tokens * token_chats) as f64;
        println!("rust token_ns_with_callback {:.2}", with / n);
        println!("rust token_ns_without_callback {:.2}", without / n);
        println!("rust token_callback_ns {:.2}", (with - without) / n);
        println!("rust token_response_json_ns {:.2}", json / n);
    }
    drop(streamer);

    // ---- tool calls: `calls` calls in one reply, then "done." ----
    let call_list: Vec<(&str, serde_json::Value)> = vec![("noop", json!({"x": 1})); calls];
    let mock = MockBackend::new();
    for _ in 0..1 + chats * samples {
        mock.push_replies([MockReply::tool_calls(&call_list), MockReply::text("done.")]);
    }
    let config = Config {
        max_tool_iterations: 2,
        ..Config::default()
    };
    let agent = Agent::with_backend(mock, config).expect("mock agent");
    let ran = Arc::new(AtomicUsize::new(0));
    let counter = ran.clone();
    agent.register_tool(
        Tool::new(
            "noop",
            "Does nothing",
            json!({"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}),
            move |_args| {
                counter.fetch_add(1, Ordering::Relaxed);
                Ok(json!(1))
            },
        )
        .expect("valid tool"),
    );
    timed_chat(&agent, "go", ChatOptions::new());
    for _ in 0..samples {
        ran.store(0, Ordering::Relaxed);
        let (mut took, mut json) = (0.0, 0.0);
        for _ in 0..chats {
            let (t, j) = timed_chat(&agent, "go", ChatOptions::new());
            took += t;
            json += j;
        }
        assert_eq!(ran.load(Ordering::Relaxed), calls * chats);
        let n = (calls * chats) as f64;
        println!("rust tool_call_ns {:.2}", took / n);
        println!("rust tool_call_response_json_ns {:.2}", json / n);
    }
}
