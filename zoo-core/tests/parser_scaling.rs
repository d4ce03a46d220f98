//! The tool-call parser takes time linear in the length of the model's
//! output, whatever the output: 8 times the text may take at most 30 times
//! as long (quadratic growth would be 64 times), and 500 KB of any shape
//! parses in under 2 s even in the debug test profile.
//!
//! The timings are robust to a busy machine: they are the thread's CPU
//! time, which other processes' slices do not stretch (on wall time, beside
//! two `yes > /dev/null` and a CI run, the 500 KB text took 33 times the
//! 62.5 KB one: it was preempted, the short one was not). The two sizes are
//! also timed in turn, several times, and compared by their medians. The
//! smaller text is 62.5 KB, which takes milliseconds, well above the
//! clock's resolution. Everything runs in one test so that no other test
//! of this binary competes for the CPU.

use std::time::Duration;

use zoo_core::tools::parser::parse;

/// The larger text is this many times the smaller.
const GROWTH: usize = 8;
/// The most the larger text may take, as a multiple of the smaller's time.
/// Linear is 8; quadratic would be 64.
const MAX_RATIO: f64 = 30.0;
/// The smaller text, in bytes.
const SMALL: usize = 62_500;
/// What any 500 KB text may take.
const MAX_TIME: Duration = Duration::from_secs(2);
/// Timed runs of each size.
const RUNS: usize = 3;

/// `unit` repeated to at least `bytes` bytes.
fn repeat_to(unit: &str, bytes: usize) -> String {
    unit.repeat(bytes.div_ceil(unit.len()))
}

/// Output no model should write but a broken one may: each shape once made
/// the parser reread text from many starting points.
fn shapes(bytes: usize) -> Vec<(&'static str, String)> {
    vec![
        // JSON-like text that never closes, nested ever deeper.
        (
            "unclosed nested JSON",
            repeat_to(r#"{"key": [1, 2, {"a": "text"}, "#, bytes),
        ),
        // Braces that open nothing.
        ("open braces", repeat_to("{ ", bytes)),
        ("open brackets", repeat_to("[", bytes)),
        ("open keys", repeat_to(r#"{"a": ["#, bytes)),
        // Nesting far past serde_json's limit, then closed.
        ("deep then closed", {
            let half = bytes / 2;
            "[".repeat(half) + &"]".repeat(half)
        }),
        // A string that never ends, full of escapes and of brackets.
        (
            "long string with escapes",
            format!("{{\"s\": \"{}", repeat_to(r#"\"\\{[\n\u00e9 "#, bytes)),
        ),
        (
            "long string of keys",
            format!("{{\"s\": \"{}", repeat_to(r#"{"a": "#, bytes)),
        ),
        // Many markers, bare or opening a broken call.
        ("tool_call markers", repeat_to("<tool_call>", bytes)),
        (
            "unclosed calls after markers",
            repeat_to(r#"<tool_call>{"name": "a", "arguments": {"#, bytes),
        ),
        ("markers in strings", repeat_to("<tool_call>[\"", bytes)),
        // Each failed call's message comes from serde_json reading the
        // call's own text, here as deep as serde_json goes.
        (
            "deep lists after markers",
            repeat_to(&format!("<tool_call>{}", "[".repeat(127)), bytes),
        ),
        ("mistral markers", repeat_to("[TOOL_CALLS]f[ARGS]{", bytes)),
        // The other families' markers, each opening a call that never ends.
        (
            "lfm2 calls unclosed",
            repeat_to("<|tool_call_start|>[f(a=\"x", bytes),
        ),
        (
            "lfm2 nested python",
            repeat_to("<|tool_call_start|>[f(a=[[[{\"k\": (", bytes),
        ),
        (
            "function gemma calls unclosed",
            repeat_to("<start_function_call>call:f{a:<escape>x", bytes),
        ),
        // Harmony headers never end a line: each one's search for its
        // `<|message|>` stops at the next header.
        (
            "harmony calls on one line",
            repeat_to(
                " to=functions.f <|constrain|>json<|message|>{\"a\": 1}<|call|>",
                bytes,
            ),
        ),
        (
            "harmony messages unclosed",
            repeat_to(" to=functions.f<|message|>{\"a\": [", bytes),
        ),
        // A reply that is almost one Python list of calls (Gemma's format).
        (
            "python list, unclosed",
            format!("[{}", repeat_to("f(a=1, b=\"x\"), ", bytes)),
        ),
        (
            "tool_code fence",
            format!("```tool_code\n{}", repeat_to("f(a=[1, ", bytes)),
        ),
        // Code fences whose JSON never ends.
        (
            "fence of calls, unclosed list",
            format!(
                "```json\n[{}",
                repeat_to(
                    r#"{"name": "a", "arguments": {"x": [1, {"y": 2}]}}, "#,
                    bytes
                )
            ),
        ),
        // Many good calls: the ordinary case must scale too.
        (
            "many calls",
            repeat_to(
                r#"<tool_call>{"name": "a", "arguments": {"q": "x"}}</tool_call> "#,
                bytes,
            ),
        ),
    ]
}

/// The CPU time `parse` takes on `text`.
fn time(text: &str) -> Duration {
    let start = cpu_now();
    std::hint::black_box(parse(std::hint::black_box(text)));
    cpu_now().saturating_sub(start)
}

/// This thread's CPU time.
#[cfg(unix)]
fn cpu_now() -> Duration {
    use rustix::time::{clock_gettime, ClockId};
    let now = clock_gettime(ClockId::ThreadCPUTime);
    Duration::new(now.tv_sec as u64, now.tv_nsec as u32)
}

/// Wall time, where no thread CPU clock is at hand.
#[cfg(not(unix))]
fn cpu_now() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    START.get_or_init(std::time::Instant::now).elapsed()
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

#[test]
fn parse_time_is_linear_in_the_text() {
    let mut report = Vec::new();
    let mut failures = Vec::new();
    for ((name, small), (_, large)) in shapes(SMALL).into_iter().zip(shapes(SMALL * GROWTH)) {
        let (mut small_runs, mut large_runs) = (Vec::new(), Vec::new());
        for _ in 0..RUNS {
            small_runs.push(time(&small));
            large_runs.push(time(&large));
        }
        let (small_time, large_time) = (median(small_runs), median(large_runs));
        let ratio = large_time.as_secs_f64() / small_time.as_secs_f64().max(1e-6);
        let line = format!(
            "{name}: {} B in {small_time:?}, {} B in {large_time:?} ({ratio:.1}x)",
            small.len(),
            large.len()
        );
        if ratio >= MAX_RATIO {
            failures.push(format!("{line}: grows faster than linearly"));
        }
        if large_time >= MAX_TIME {
            failures.push(format!("{line}: over {MAX_TIME:?}"));
        }
        report.push(line);
    }
    println!("{}", report.join("\n"));
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
