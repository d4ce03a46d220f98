//! Time to first token of the turn that compacts the history, against an
//! uncompacted turn of the same prompt, on SmolLM2-135M.
//!
//! Why: a compaction changes old messages, so the KV cache is kept only up
//! to the first change and what follows is decoded again. This measures
//! what that costs the turn that pays it.
//!
//! Each repetition builds a chat on a 1,024-token window (`compact`
//! strategy, level 1 cuts old tool results over 48 tokens): twenty prose
//! messages and a tool turn with a long result, a chat that fits (all of it
//! cached), then a second long tool turn, so that the next chat overflows
//! and level 1 cuts the first result (about 590 tokens before it stay
//! cached). That chat's time to first token (compaction included) is
//! measured with the context shift off (the cache is reused up to the
//! first change) and on (the default: the kept tail after the cut may also
//! be shifted into place), against two turns with the very same prompt:
//! - uncompacted: an agent whose cache holds the whole compacted history
//!   already, so it decodes only the new user message;
//! - full decode: a fresh agent given the compacted history.
//!
//! The agents of a repetition run one after the other, alternating the
//! order between repetitions; medians and ratios are printed, and whether
//! each greedy reply matches the full decode's.
//!
//! ```sh
//! cargo bench --profile dev -p zoo-core --bench compaction_ttft -- [REPS]   # default 5
//! ```

use std::path::PathBuf;

use serde_json::json;
use zoo_core::context::{CompactSettings, CompactionLevel, ContextStrategy};
use zoo_core::{
    Agent, ChatOptions, Config, EventKind, Message, Model, ModelParams, Response, ToolCall,
};

/// The question of the turn that compacts.
const QUESTION: &str = "And the day after?";

fn config(shift: bool) -> Config {
    Config::default()
        .temperature(0.0)
        .seed(7)
        .threads(2)
        .context_size(1024)
        .max_tokens(24)
        .context_shift(shift)
        .system_prompt("You are a helpful assistant.")
        .context_strategy(ContextStrategy::Compact(CompactSettings {
            keep_recent: 4,
            keep_first: 0,
            tool_result_tokens: 48,
            target_percent: 100,
        }))
}

/// `pairs` questions and answers in prose, about 50 tokens a pair.
fn prose_turns(pairs: usize) -> Vec<Message> {
    (1..=pairs)
        .flat_map(|n| {
            [
                Message::user(format!("Tell me fact number {n} about lighthouses.")),
                Message::assistant(format!(
                    "Fact {n}: lighthouses guide ships along dangerous coasts with a bright \
                     light that turns, and each has its own pattern of flashes."
                )),
            ]
        })
        .collect()
}

/// A question, a call of `weather_report`, its 12-day report (about 210
/// tokens) and the answer.
fn report_turn(id: &str) -> Vec<Message> {
    let report = (1..=12)
        .map(|day| {
            format!(
                "Day {day}: Oslo is sunny with {} degrees and a light wind.",
                8 + day % 5
            )
        })
        .collect::<Vec<_>>()
        .join(" ");
    vec![
        Message::user("What is the weather going to be?"),
        Message::assistant_with_tool_calls(
            "",
            vec![ToolCall {
                id: id.into(),
                name: "weather_report".into(),
                arguments: json!({}),
            }],
        ),
        Message::tool(id, "weather_report", report),
        Message::assistant("Sunny all along, around ten degrees."),
    ]
}

fn chat(agent: &Agent, text: &str) -> (Response, Vec<CompactionLevel>) {
    let levels = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = levels.clone();
    let options = ChatOptions::new().on_event(move |event| {
        if let EventKind::HistoryCompacted { level, .. } = &event.kind {
            seen.lock().unwrap().push(*level);
        }
    });
    let response = agent.chat(text, options).wait().expect("the chat succeeds");
    let levels = levels.lock().unwrap().clone();
    (response, levels)
}

/// The turn that compacts, on an agent whose cache holds the chat so far;
/// with the compacted history before the question.
fn compacting_turn(model: &Model, shift: bool) -> (Response, Vec<Message>) {
    let agent = Agent::with_model(model.clone(), config(shift)).expect("agent starts");
    let mut history = prose_turns(10);
    history.extend(report_turn("call_1"));
    agent.set_history(history).expect("history");
    let (_, levels) = chat(&agent, "Thanks.");
    assert!(levels.is_empty(), "the first chat fits");
    let mut longer = agent.history();
    longer.extend(report_turn("call_2"));
    agent.set_history(longer).expect("history");
    let (response, levels) = chat(&agent, QUESTION);
    assert_eq!(levels, [CompactionLevel::TruncateToolResults]);
    let kept = agent.history();
    (response, kept[..kept.len() - 2].to_vec())
}

/// The same prompt on an agent whose cache holds all but the question.
fn uncompacted_turn(model: &Model, kept: &[Message]) -> Response {
    let agent = Agent::with_model(model.clone(), config(false)).expect("agent starts");
    agent.set_history(kept.to_vec()).expect("history");
    chat(&agent, "Thanks.");
    // The cache keeps the tokens of `kept`, which the next prompt starts with.
    agent.set_history(kept.to_vec()).expect("history");
    let (response, levels) = chat(&agent, QUESTION);
    assert!(levels.is_empty());
    response
}

/// The same prompt on a fresh agent: everything decoded.
fn full_decode(model: &Model, kept: &[Message]) -> Response {
    let agent = Agent::with_model(model.clone(), config(false)).expect("agent starts");
    agent.set_history(kept.to_vec()).expect("history");
    let (response, levels) = chat(&agent, QUESTION);
    assert!(levels.is_empty());
    assert_eq!(response.usage.cached_tokens, 0);
    response
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

/// One figure of a repetition: its time to first token, prompt and cached
/// tokens.
fn cell(response: &Response) -> String {
    format!(
        "{:>8.1} ({}/{})",
        response.metrics.time_to_first_token_ms,
        response.usage.prompt_tokens,
        response.usage.cached_tokens
    )
}

fn main() {
    let reps: usize = std::env::args()
        .skip(1)
        .find(|a| a != "--bench")
        .map(|a| a.parse().expect("REPS is a number"))
        .unwrap_or(5);
    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../models/SmolLM2-135M-Instruct.Q4_1.gguf");
    let model = Model::load(&path, ModelParams::default()).expect("SmolLM2 loads");

    println!("load average {}", loadavg());
    println!(
        "rep  TTFT ms (prompt/cached): compacted, shift off | compacted, shift on | \
         uncompacted | full decode"
    );
    let mut columns: [Vec<f64>; 4] = Default::default();
    for rep in 0..reps {
        // Each side goes first in turn: the machine is shared and noisy.
        let (off, on, warm, cold) = if rep % 2 == 0 {
            let (off, kept) = compacting_turn(&model, false);
            let on = compacting_turn(&model, true).0;
            let warm = uncompacted_turn(&model, &kept);
            (off, on, warm, full_decode(&model, &kept))
        } else {
            let (on, kept) = compacting_turn(&model, true);
            let cold = full_decode(&model, &kept);
            let warm = uncompacted_turn(&model, &kept);
            (compacting_turn(&model, false).0, on, warm, cold)
        };
        for (response, column) in [&off, &on, &warm, &cold].into_iter().zip(&mut columns) {
            assert_eq!(response.usage.prompt_tokens, cold.usage.prompt_tokens);
            column.push(response.metrics.time_to_first_token_ms);
        }
        println!(
            "{rep:>3}  {} | {} | {} | {}   same text as the full decode: {} {} {}",
            cell(&off),
            cell(&on),
            cell(&warm),
            cell(&cold),
            off.text == cold.text,
            on.text == cold.text,
            warm.text == cold.text,
        );
    }
    let [off, on, warm, cold] = columns.map(|c| median(&c));
    println!(
        "medians of {reps}: compacted {off:.1} ms (shift off), {on:.1} ms (shift on); \
         uncompacted {warm:.1} ms; full decode {cold:.1} ms"
    );
    println!(
        "ratios: compacted / uncompacted {:.2} (shift off), {:.2} (shift on); \
         compacted / full decode {:.3} (shift off), {:.3} (shift on)",
        off / warm,
        on / warm,
        off / cold,
        on / cold
    );
    println!("load average {}", loadavg());
}
