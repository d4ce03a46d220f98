//! AG-001 … AG-008 and the stress test: the agent as a whole.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use serde_json::json;
use zoo_core::backend::{GenerateRequest, Generation};
use zoo_core::tools::ToolCallFormat;
use zoo_core::{
    Agent, AgentState, Backend, CancelToken, ChatOptions, Config, ErrorCode, EventKind, Message,
    MockBackend, MockReply, StopReason, Tool,
};

use super::{agent_on, weather_tool};

/// How long the calling thread has been ready to run but waited for a core
/// (a busy machine), as Linux reports it; `None` where the kernel does not
/// (no /proc/thread-self/schedstat). Read by the thread itself, so it is up
/// to date: the count grows only while the thread is not running.
fn waited_for_a_core() -> Option<Duration> {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos = stat.split_whitespace().nth(1)?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

/// The mock, adding up the inference thread's waits for a core inside it:
/// AG-001 leaves the model's share out, as the engine's own timing does.
struct ClockedBackend {
    inner: MockBackend,
    waited_inside: Arc<std::sync::Mutex<Duration>>,
}

impl ClockedBackend {
    fn timed<T>(&mut self, call: impl FnOnce(&mut MockBackend) -> T) -> T {
        let before = waited_for_a_core();
        let out = call(&mut self.inner);
        if let (Some(before), Some(after)) = (before, waited_for_a_core()) {
            *self.waited_inside.lock().unwrap() += after - before;
        }
        out
    }
}

impl Backend for ClockedBackend {
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> zoo_core::Result<Generation> {
        self.timed(|mock| mock.generate(request, on_piece, cancel))
    }

    fn count_tokens(&mut self, message: &Message) -> zoo_core::Result<u32> {
        self.timed(|mock| mock.count_tokens(message))
    }

    fn context_size(&self) -> u32 {
        self.inner.context_size()
    }

    fn tool_call_format(&self) -> ToolCallFormat {
        self.inner.tool_call_format()
    }
}

#[test]
fn ag_001_engine_overhead_under_10ms_p99() {
    // The library's overhead: a chat with one tool call and
    // a final reply, timed by the engine from the inference thread's start of
    // the turn to the response (`metrics.total_ms`), minus the time spent
    // inside the backend (`prompt_ms + generation_ms`). What remains is
    // everything Zoo-Keeper adds around the model: history bookkeeping,
    // parsing, validation, the handler, the hand-offs to the tool thread and
    // back, and injection. The history grows over the 300 chats, so the
    // bound holds for a long conversation too. `cargo bench` has the precise
    // figure for a fresh history; this guards a 10 ms bound.
    //
    // On a machine kept busy by other processes, that time also holds the
    // time the agent's threads were ready to run but waited for a core: tens
    // of milliseconds at the tail, which measure the machine, not the
    // library. Linux reports that wait per thread, so it is taken out: the
    // inference thread's outside the backend, from the turn's first event to
    // its on_complete, and the tool thread's, from the end of one handler
    // call to the start of the next (the hand-off of the call). On an idle
    // machine those waits are zero and this is the plain wall-clock figure;
    // sleeps, polls and slow hand-offs count either way. On a busy one the
    // two threads can wait at the same time (the inference thread polls
    // while the tool thread waits for a core), and such a wait is taken out
    // twice: the check is looser there, never spurious. Measured with two
    // to four `yes` beside it: p99 2-8 ms with the waits taken out, 27-63
    // ms without. Where the kernel does not report the waits, the plain
    // figure is checked.
    let _timing = super::timing_lock();
    let mock = MockBackend::new();
    let waited_inside = Arc::new(std::sync::Mutex::new(Duration::ZERO));
    let backend = ClockedBackend {
        inner: mock.clone(),
        waited_inside: waited_inside.clone(),
    };
    let agent = Agent::with_backend(backend, Config::default()).unwrap();
    // The tool thread's wait count at the start and at the end of each call.
    let tool_waits = Arc::new(std::sync::Mutex::new(Vec::new()));
    let tool_samples = tool_waits.clone();
    agent.register_tool(
        Tool::new(
            "get_weather",
            "Current weather for a city",
            weather_tool().definition().parameters.clone(),
            move |args| {
                let start = waited_for_a_core();
                let result = json!({"city": args["city"], "temperature": 21});
                tool_samples
                    .lock()
                    .unwrap()
                    .push((start, waited_for_a_core()));
                Ok(result)
            },
        )
        .unwrap(),
    );
    // The inference thread's wait count outside the backend, at the turn's
    // first event and at its on_complete.
    let outside_backend = {
        let inside = waited_inside.clone();
        move || waited_for_a_core().map(|w| w - *inside.lock().unwrap())
    };
    let inference_waits = Arc::new(std::sync::Mutex::new(Vec::new()));
    let mut engine_times = Vec::new();
    for i in 0..301 {
        mock.push_replies([
            MockReply::tool_call("get_weather", json!({"city": "Paris"})),
            MockReply::text("It is 21 degrees in Paris."),
        ]);
        let started = Arc::new(std::sync::Mutex::new(None));
        let (at_start, at_end) = (outside_backend.clone(), outside_backend.clone());
        let (start, samples) = (started.clone(), inference_waits.clone());
        let options = ChatOptions::new()
            .on_event(move |event| {
                if matches!(event.kind, EventKind::TurnStarted { turn: 1 }) {
                    *start.lock().unwrap() = Some(at_start());
                }
            })
            .on_complete(move |_| {
                let start = started.lock().unwrap().expect("the turn started");
                samples.lock().unwrap().push(start.zip(at_end()));
            });
        let r = agent.chat(format!("weather {i}"), options).wait().unwrap();
        assert_eq!(r.tool_calls.len(), 1);
        assert_eq!(r.metrics.iterations, 2);
        let m = r.metrics;
        let backend_ms = m.prompt_ms + m.generation_ms;
        assert!(backend_ms <= m.total_ms, "{m:?}");
        engine_times.push(Duration::from_secs_f64((m.total_ms - backend_ms) / 1e3));
    }
    // Closing joins the inference thread: every on_complete has run.
    drop(agent);
    let inference: Option<Vec<(Duration, Duration)>> =
        inference_waits.lock().unwrap().iter().copied().collect();
    let tool: Option<Vec<(Duration, Duration)>> = tool_waits
        .lock()
        .unwrap()
        .iter()
        .map(|(start, end)| start.zip(*end))
        .collect();
    // The first chat has no previous tool call: its hand-off is not known.
    engine_times.remove(0);
    let mut overheads = match inference.zip(tool) {
        Some((inference, tool)) => {
            assert_eq!((inference.len(), tool.len()), (301, 301));
            let turn = inference[1..].iter().map(|(start, end)| *end - *start);
            let hand_off = tool.windows(2).map(|w| w[1].0 - w[0].1);
            engine_times
                .iter()
                .zip(turn.zip(hand_off))
                .map(|(time, (a, b))| time.saturating_sub(a + b))
                .collect()
        }
        None => engine_times.clone(),
    };
    overheads.sort();
    engine_times.sort();
    let p99 = overheads[overheads.len() * 99 / 100];
    assert!(
        p99 < Duration::from_millis(10),
        "p99 {p99:?} (p50 {:?}, max {:?}; with the waits for a core: p99 {:?})",
        overheads[overheads.len() / 2],
        overheads[overheads.len() - 1],
        engine_times[engine_times.len() * 99 / 100]
    );
}

#[test]
fn ag_002_backend_runs_only_on_the_inference_thread() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("get_weather", json!({"city": "Paris"})),
        MockReply::text("done"),
    ]);
    let agent = agent_on(&mock);
    agent.register_tool(weather_tool());
    agent.chat("q", ChatOptions::new()).wait().unwrap();
    agent.set_system_prompt(Some("be brief".into())).unwrap();
    agent.chat("again", ChatOptions::new()).wait().unwrap();
    let threads = mock.threads();
    assert!(threads.len() > 4);
    assert!(
        threads.iter().all(|t| *t == threads[0]),
        "one thread for every backend call"
    );
    assert_ne!(threads[0], std::thread::current().id());
}

#[test]
fn ag_003_multi_turn_signals_kv_cache_reuse() {
    let mock = MockBackend::new();
    let agent = agent_on(&mock);
    agent.set_system_prompt(Some("system".into())).unwrap();
    agent.chat("one", ChatOptions::new()).wait().unwrap();
    let second = agent.chat("two", ChatOptions::new()).wait().unwrap();
    let calls = mock.calls();
    assert_eq!(calls[0].cache_hint.stable_prefix, 0);
    // Turn two starts with system, user, assistant of turn one: all three
    // are exactly as the backend saw them (the reply it generated itself).
    assert_eq!(
        calls[1].cache_hint.stable_prefix, 2,
        "system + first user were sent before"
    );
    assert!(second.usage.cached_tokens > 0);
    let third = agent.chat("three", ChatOptions::new()).wait().unwrap();
    assert_eq!(mock.calls()[2].cache_hint.stable_prefix, 4);
    assert!(third.usage.cached_tokens > second.usage.cached_tokens);
}

#[test]
fn ag_004_editing_history_signals_cache_invalidation() {
    let mock = MockBackend::new();
    let agent = agent_on(&mock);
    agent.chat("one", ChatOptions::new()).wait().unwrap();
    agent.chat("two", ChatOptions::new()).wait().unwrap();
    assert!(mock.calls()[1].cache_hint.stable_prefix > 0);
    agent.set_system_prompt(Some("new rules".into())).unwrap();
    agent.chat("three", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        mock.calls()[2].cache_hint.stable_prefix,
        0,
        "new system prompt invalidates"
    );
    agent.clear_history().unwrap();
    agent.chat("four", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        mock.calls()[3].cache_hint.stable_prefix,
        1,
        "only the system prompt survives a clear"
    );
    assert_eq!(agent.history().len(), 3);
}

#[test]
fn ag_005_invalid_config_is_an_error_not_a_crash() {
    let e =
        Agent::with_backend(MockBackend::new(), Config::default().temperature(-1.0)).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidConfig);
    assert!(e.to_string().contains("temperature"));
    let e = Agent::with_backend(MockBackend::new(), Config::default().max_tool_iterations(0))
        .unwrap_err();
    assert!(e.to_string().contains("max_tool_iterations"));
}

#[test]
fn ag_006_valid_config_gives_an_idle_agent() {
    let agent =
        Agent::with_backend(MockBackend::new(), Config::default().system_prompt("hi")).unwrap();
    assert_eq!(agent.state(), AgentState::Idle);
    assert_eq!(agent.queue_depth(), 0);
    assert_eq!(agent.history()[0].content, "hi");
}

#[test]
fn ag_007_dropping_mid_request_shuts_down_cleanly() {
    let _timing = super::timing_lock();
    // 100 s of reply if nothing cancels it: only the drop ends it.
    let mock = MockBackend::with_script([MockReply::text(vec!["word"; 10_000].join(" "))]);
    mock.set_piece_delay(Duration::from_millis(10));
    let handler_data = Arc::new(());
    let held = handler_data.clone();
    let agent = agent_on(&mock);
    agent.register_tool(
        Tool::new("t", "", json!({"type": "object"}), move |_| {
            Ok(json!(Arc::strong_count(&held)))
        })
        .unwrap(),
    );
    // The first token says the long chat is running (and so no longer
    // queued), whenever the inference thread gets there.
    let (streaming, first_token) = mpsc::channel();
    let running = agent.chat(
        "long",
        ChatOptions::new().on_token(move |_| {
            let _ = streaming.send(());
        }),
    );
    let queued = agent.chat("queued", ChatOptions::new());
    first_token
        .recv_timeout(Duration::from_secs(30))
        .expect("the long chat streams");
    assert_eq!(agent.state(), AgentState::Processing);
    assert_eq!(agent.queue_depth(), 1);
    let started = Instant::now();
    drop(agent);
    // A drop that waited for the reply would take 100 s; a prompt one takes
    // a few milliseconds, and a second leaves room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "drop took {:?}",
        started.elapsed()
    );
    assert_eq!(running.wait().unwrap().stop_reason, StopReason::Cancelled);
    assert_eq!(
        queued.wait().unwrap_err().code(),
        ErrorCode::AgentNotRunning
    );
    // Nothing leaked: the backend and the tool's captured data are released.
    assert_eq!(mock.share_count(), 1);
    assert_eq!(Arc::strong_count(&handler_data), 1);
}

#[test]
fn ag_008_tool_registered_after_the_first_chat_is_available() {
    let mock = MockBackend::with_script([
        MockReply::text("no tools yet"),
        MockReply::tool_call("get_weather", json!({"city": "Rome"})),
        MockReply::text("Rome: 21"),
    ]);
    let agent = agent_on(&mock);
    agent.chat("first", ChatOptions::new()).wait().unwrap();
    assert!(mock.calls()[0].tools.is_empty());
    agent.register_tool(weather_tool());
    let r = agent.chat("second", ChatOptions::new()).wait().unwrap();
    assert_eq!(mock.calls()[1].tools[0].name, "get_weather");
    assert_eq!(
        r.tool_calls[0].result,
        Some(json!({"city": "Rome", "temperature": 21}))
    );
}

#[test]
fn registering_during_a_chat_is_seen_by_its_next_iteration() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("add_tool", json!({})),
        MockReply::tool_call("late", json!({})),
        MockReply::text("done"),
    ]);
    let agent = Arc::new(agent_on(&mock));
    let weak = Arc::downgrade(&agent);
    agent.register_tool(
        Tool::new("add_tool", "", json!({"type": "object"}), move |_| {
            let agent = weak.upgrade().unwrap();
            agent
                .register_fn("late", "added mid-chat", &[], || "late result")
                .unwrap();
            Ok(json!("registered"))
        })
        .unwrap(),
    );
    let r = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(r.tool_calls[1].result, Some(json!("late result")));
}

#[test]
fn stress_8_threads_250_chats_each_every_response_once() {
    let _timing = super::timing_lock();
    let mock = MockBackend::new();
    let agent = Arc::new(agent_on(&mock));
    let delivered = Arc::new(AtomicUsize::new(0));
    let workers: Vec<_> = (0..8)
        .map(|t| {
            let agent = agent.clone();
            let delivered = delivered.clone();
            std::thread::spawn(move || {
                let handles: Vec<_> = (0..250)
                    .map(|i| {
                        let d = delivered.clone();
                        let options = ChatOptions::new().on_complete(move |_| {
                            d.fetch_add(1, Ordering::SeqCst);
                        });
                        (i, agent.chat(format!("t{t}-m{i}"), options))
                    })
                    .collect();
                for (i, handle) in handles {
                    let r = handle
                        .wait_timeout(Duration::from_secs(60))
                        .expect("no deadlock")
                        .unwrap();
                    assert_eq!(r.text, format!("echo: t{t}-m{i}"));
                }
            })
        })
        .collect();
    workers.into_iter().for_each(|w| w.join().unwrap());
    assert_eq!(mock.call_count(), 2000);
    assert_eq!(agent.queue_depth(), 0);
    // `on_complete` runs after its handle resolves (like a future's done
    // callbacks), so the last one may still be running here: closing the
    // agent joins the inference thread, after which every callback has run.
    let agent = Arc::try_unwrap(agent).unwrap_or_else(|_| panic!("workers hold no agent"));
    assert!(agent.close_within(Duration::from_secs(10)));
    assert_eq!(
        delivered.load(Ordering::SeqCst),
        2000,
        "each response delivered exactly once"
    );
}

#[test]
fn close_within_bounds_the_wait_for_a_stuck_tool() {
    let mock = MockBackend::with_script([MockReply::tool_call("stuck", json!({}))]);
    let agent = agent_on(&mock);
    let release = Arc::new(std::sync::Barrier::new(2));
    let tool_release = release.clone();
    let (entered, tool_entered) = mpsc::channel();
    agent.register_tool(
        Tool::new("stuck", "", json!({"type": "object"}), move |_| {
            let _ = entered.send(());
            tool_release.wait();
            Ok(json!("late"))
        })
        .unwrap(),
    );
    let handle = agent.chat("go", ChatOptions::new());
    tool_entered
        .recv_timeout(Duration::from_secs(30))
        .expect("the tool runs");
    let started = Instant::now();
    assert!(
        !agent.close_within(Duration::from_millis(100)),
        "the tool is still running"
    );
    // The tool never returns by itself: an unbounded wait would hang here.
    // 100 ms plus the time to wake up, with room for a loaded machine.
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "close_within(100 ms) took {:?}",
        started.elapsed()
    );
    release.wait();
    // The detached thread finishes the chat by itself.
    let response = handle
        .wait_timeout(Duration::from_secs(30))
        .expect("chat ends")
        .unwrap();
    assert_eq!(response.stop_reason, StopReason::Cancelled);

    let idle = agent_on(&MockBackend::new());
    assert!(idle.close_within(Duration::from_secs(30)));
}
