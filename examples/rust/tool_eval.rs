//! Tool-call evaluation on a real model: over the cases of
//! `tests/eval/tool_cases.json` (three tool sets, prompts that need a tool
//! and prompts that need none, a fixed tune/report split), how often each
//! tool-choice mode calls the right tool, with the right arguments, and
//! answers in prose when no tool fits; with the time per case.
//!
//! ```sh
//! cargo run --release --example tool_eval                       # SmolLM2, report split
//! cargo run --release --example tool_eval -- --split tune       # the cases thresholds are tuned on
//! cargo run --release --example tool_eval -- --scores           # only the call-opening scores
//! cargo run --release --example tool_eval -- --tool-scores      # each tool's scores, as JSON lines
//! cargo run --release --example tool_eval -- --mode auto        # one mode only
//! cargo run --release --example tool_eval -- --only eggs        # the cases whose prompt holds "eggs"
//! cargo run --release --example tool_eval -- --grammar-ratio     # the grammar check's speed-up
//! ZOO_MODEL=models/gemma-3-270m-q4_k_m.gguf cargo run --release --example tool_eval
//! ```
//!
//! `ZOO_EVAL_THREADS` sets the threads (default 2; 1 holds up better on a
//! machine busy with other work, where two spinning threads wait on each
//! other).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use serde::Deserialize;
use serde_json::Value;
use zoo_core::backend::llama::{
    ArgumentBias, ChannelScore, ValueCopy, WordMatch, DEFAULT_VALUE_COPY,
};
use zoo_core::backend::{Backend, CacheHint, GenerateRequest};
use zoo_core::tools::parser;
use zoo_core::{
    CancelToken, Config, LlamaBackend, Message, Model, ModelParams, ToolCallFormat, ToolChoice,
    ToolDefinition,
};

/// One prompt and what a right answer to it is.
#[derive(Debug, Deserialize)]
struct Case {
    set: String,
    prompt: String,
    split: String,
    /// The tool a right reply calls; `None` when the right reply is prose.
    tool: Option<String>,
    #[serde(default)]
    arguments: BTreeMap<String, Value>,
}

#[derive(Debug, Deserialize)]
struct Cases {
    cases: Vec<Case>,
}

/// What one mode scored over the selected cases.
#[derive(Debug, Default)]
struct Tally {
    needs_tool: usize,
    right_tool: usize,
    right_arguments: usize,
    needs_none: usize,
    prose_when_none: usize,
    invalid_calls: usize,
    markup_in_text: usize,
    times: Vec<Duration>,
}

impl Tally {
    fn record(&mut self, case: &Case, reply: &parser::ParsedReply, took: Duration) {
        self.times.push(took);
        self.invalid_calls += reply.failures.len();
        match &case.tool {
            Some(expected) => {
                self.needs_tool += 1;
                if let [call] = reply.calls.as_slice() {
                    if call.name == *expected {
                        self.right_tool += 1;
                        self.right_arguments +=
                            usize::from(arguments_match(&case.arguments, &call.arguments));
                    }
                }
            }
            None => {
                self.needs_none += 1;
                let prose = reply.calls.is_empty() && reply.failures.is_empty();
                self.prose_when_none += usize::from(prose);
                self.markup_in_text += usize::from(prose && has_markup(&reply.content));
            }
        }
    }

    fn summary(&mut self, mode: &str) -> String {
        self.times.sort();
        let median = self
            .times
            .get(self.times.len() / 2)
            .copied()
            .unwrap_or_default();
        let max = self.times.last().copied().unwrap_or_default();
        let all = self.needs_tool + self.needs_none;
        let right_all = self.right_arguments + self.prose_when_none;
        format!(
            "{mode:>8}: right tool {}/{}, right tool and arguments {}/{}, prose when none {}/{}; \
             all right {right_all}/{all} ({:.0} %); invalid calls {}, markup in prose {}; \
             per case median {} ms, max {} ms",
            self.right_tool,
            self.needs_tool,
            self.right_arguments,
            self.needs_tool,
            self.prose_when_none,
            self.needs_none,
            100.0 * right_all as f64 / all.max(1) as f64,
            self.invalid_calls,
            self.markup_in_text,
            median.as_millis(),
            max.as_millis(),
        )
    }
}

/// Expected values are a subset of the call's: strings match trimmed and
/// case-insensitively, numbers by value.
fn arguments_match(expected: &BTreeMap<String, Value>, actual: &Value) -> bool {
    expected.iter().all(|(key, want)| {
        let Some(got) = actual.get(key) else {
            return false;
        };
        match (want, got) {
            (Value::String(w), Value::String(g)) => w.trim().eq_ignore_ascii_case(g.trim()),
            (Value::Number(w), Value::Number(g)) => w.as_f64() == g.as_f64(),
            (w, g) => w == g,
        }
    })
}

/// Call or result markup that a prose answer should never show the user.
fn has_markup(text: &str) -> bool {
    [
        "<tool_call>",
        "</tool_call>",
        "<tool_response>",
        "[TOOL_CALLS]",
    ]
    .iter()
    .any(|m| text.contains(m))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    // ZOO_EVAL_LOG=zoo_core::backend::llama::value_copy=trace: how each
    // value copy scored, on stderr.
    if let Ok(filter) = std::env::var("ZOO_EVAL_LOG") {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_writer(std::io::stderr)
            .init();
    }
    let args: Vec<String> = std::env::args().collect();
    let scores_only = args.iter().any(|a| a == "--scores");
    let verbose = args.iter().any(|a| a == "--verbose");
    let split = args
        .iter()
        .position(|a| a == "--split")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_else(|| "report".into());
    // --only <text>: the cases whose prompt holds it, to look at a few.
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let root = concat!(env!("CARGO_MANIFEST_DIR"), "/..");
    let path = std::env::var("ZOO_MODEL")
        .unwrap_or_else(|_| format!("{root}/models/SmolLM2-135M-Instruct.Q4_1.gguf"));
    let sets: BTreeMap<String, Vec<ToolDefinition>> = serde_json::from_str(
        &std::fs::read_to_string(format!("{root}/tests/eval/tool_sets.json"))?,
    )?;
    let cases: Cases = serde_json::from_str(&std::fs::read_to_string(format!(
        "{root}/tests/eval/tool_cases.json"
    ))?)?;
    let selected: Vec<&Case> = cases
        .cases
        .iter()
        .filter(|c| split == "all" || c.split == split)
        .filter(|c| {
            only.as_ref()
                .is_none_or(|only| c.prompt.contains(only.as_str()))
        })
        .collect();

    let mode = args
        .iter()
        .position(|a| a == "--mode")
        .and_then(|i| args.get(i + 1))
        .cloned();
    let threads = std::env::var("ZOO_EVAL_THREADS")
        .ok()
        .and_then(|t| t.parse().ok())
        .unwrap_or(2);
    let model = Model::load(&path, ModelParams::default())?;
    let config = Config::default()
        .temperature(0.0)
        .context_size(4096)
        .threads(threads);
    let mut backend = LlamaBackend::new(&model, &config)?;
    // ZOO_EVAL_NAME_SCORING=0 measures greedy name choice, for comparison.
    backend.set_tool_name_scoring(std::env::var("ZOO_EVAL_NAME_SCORING").as_deref() != Ok("0"));
    // ZOO_EVAL_FORMAT=hermes (or another format's name) overrides the
    // detected call format, to compare formats on one model.
    if let Ok(name) = std::env::var("ZOO_EVAL_FORMAT") {
        let format: ToolCallFormat = serde_json::from_value(Value::from(name.as_str()))?;
        backend.set_tool_call_format(format);
    }
    // ZOO_EVAL_BIAS=2,5 pulls argument values toward the question by 2
    // logits and away from tool names by 5 (off by default).
    if let Ok(bias) = std::env::var("ZOO_EVAL_BIAS") {
        let (toward, against) = bias.split_once(',').unwrap_or((bias.as_str(), "0"));
        backend.set_argument_bias(ArgumentBias {
            toward_question: toward.parse()?,
            against_tool_names: against.parse()?,
        });
    }
    // ZOO_EVAL_WORDS=5,1 adds 5 to a tool's score for each of the
    // question's words its name holds, 1 for one only its description holds
    // (the default); ZOO_EVAL_WORDS=0 turns the prior off.
    if let Ok(weights) = std::env::var("ZOO_EVAL_WORDS") {
        let (name, description) = weights.split_once(',').unwrap_or((weights.as_str(), "0"));
        backend.set_word_match(WordMatch {
            name: name.parse()?,
            description: description.parse()?,
        });
    }
    // ZOO_EVAL_CHANNEL=1 adds the question's log-probability after each
    // tool's text (the noisy channel) to the tool's score, times 1.
    if let Ok(weight) = std::env::var("ZOO_EVAL_CHANNEL") {
        backend.set_channel_score(ChannelScore {
            weight: weight.parse()?,
        });
    }
    // ZOO_EVAL_COPY=3 writes a span of the question as a value when it
    // scores within 3 nats of the model's own value; `off` turns it off.
    // ZOO_EVAL_ORDER=2 adds 2 nats to the code that comes next in the
    // question after the value written last (`ValueCopy::in_order`).
    let mut copy = DEFAULT_VALUE_COPY;
    if let Ok(margin) = std::env::var("ZOO_EVAL_COPY") {
        copy = match margin.as_str() {
            "off" => ValueCopy::OFF,
            margin => ValueCopy {
                margin: margin.parse()?,
                ..copy
            },
        };
    }
    if let Ok(bonus) = std::env::var("ZOO_EVAL_ORDER") {
        copy.in_order = bonus.parse()?;
    }
    backend.set_value_copy(copy);
    // ZOO_EVAL_THRESHOLD=-6.5 fixes auto's call-or-prose threshold instead
    // of the one calibrated on the model.
    if let Ok(threshold) = std::env::var("ZOO_EVAL_THRESHOLD") {
        backend.set_call_threshold(Some(threshold.parse()?));
    }
    println!("call format {:?}", backend.tool_call_format());
    let system = Message::system("You are a helpful assistant.");
    println!("model {path}, {} cases (split {split})", selected.len());
    if scores_only {
        return print_scores(&mut backend, &system, &sets, &selected);
    }
    if args.iter().any(|a| a == "--tool-scores") {
        return print_tool_scores(&mut backend, &system, &sets, &selected);
    }
    if args.iter().any(|a| a == "--grammar-ratio") {
        let choice = match mode.as_deref() {
            Some("auto") => ToolChoice::Auto,
            _ => ToolChoice::Required,
        };
        return print_grammar_ratio(&mut backend, &system, &sets, &selected, &choice);
    }
    for choice in [ToolChoice::Required, ToolChoice::Auto] {
        if mode.as_deref().is_some_and(|m| m != choice.as_str()) {
            continue;
        }
        let mut tally = Tally::default();
        for case in &selected {
            let tools = &sets[&case.set];
            let started = Instant::now();
            if verbose {
                eprintln!("{} | {}", choice.as_str(), case.prompt);
            }
            let reply = generate(&mut backend, &system, &case.prompt, tools, &choice)?;
            let took = started.elapsed();
            if verbose {
                eprintln!(
                    "    -> {:?} {:?} ({} ms)",
                    reply.calls,
                    reply.content,
                    took.as_millis()
                );
            }
            tally.record(case, &reply, took);
        }
        println!("{}", tally.summary(choice.as_str()));
    }
    Ok(())
}

/// The call-opening log-probability of each case, by whether it needs a tool.
fn print_scores(
    backend: &mut LlamaBackend,
    system: &Message,
    sets: &BTreeMap<String, Vec<ToolDefinition>>,
    cases: &[&Case],
) -> Result<(), Box<dyn std::error::Error>> {
    let (mut need, mut none) = (Vec::new(), Vec::new());
    for case in cases {
        let messages = vec![system.clone(), Message::user(&case.prompt)];
        let request = request(&messages, &sets[&case.set], &ToolChoice::Auto, None);
        let score = backend.call_opening_logprob(&request)?;
        match case.tool {
            Some(_) => need.push(score),
            None => none.push(score),
        }
        // Every candidate opening: each tool's call, and the format's own
        // way of saying that none fits, when it has one.
        let format = backend.tool_call_format();
        let mut texts: Vec<String> = sets[&case.set]
            .iter()
            .map(|t| format.call_opening(&t.name))
            .collect();
        texts.extend(format.no_call().map(str::to_string));
        let refs: Vec<&str> = texts.iter().map(String::as_str).collect();
        let scores = backend.reply_logprobs(&request, &refs)?;
        let best = scores[..sets[&case.set].len()]
            .iter()
            .copied()
            .fold(f32::NEG_INFINITY, f32::max);
        let (best_tool, _) =
            sets[&case.set]
                .iter()
                .zip(&scores)
                .fold(("", f32::NEG_INFINITY), |acc, (t, s)| {
                    if *s > acc.1 {
                        (&t.name, *s)
                    } else {
                        acc
                    }
                });
        println!(
            "{:>6.2} best-call {:>6.2} ({best_tool}) none {:>6.2} | want {:?} | {}",
            score,
            best,
            scores
                .get(sets[&case.set].len())
                .copied()
                .unwrap_or(f32::NAN),
            case.tool,
            case.prompt
        );
    }
    need.sort_by(f32::total_cmp);
    none.sort_by(f32::total_cmp);
    println!("call-opening log-probability, prompts needing a tool: {need:.2?}");
    println!("call-opening log-probability, prompts needing none:   {none:.2?}");
    Ok(())
}

/// Per case, one JSON line with each tool's three scores (the whole name's
/// log-probability, the word prior, the channel's log-probability of the
/// question), the channel's score of a text for answering in words, and
/// the call-opening score `auto` decides on, for weighing them against
/// each other without generating.
fn print_tool_scores(
    backend: &mut LlamaBackend,
    system: &Message,
    sets: &BTreeMap<String, Vec<ToolDefinition>>,
    cases: &[&Case],
) -> Result<(), Box<dyn std::error::Error>> {
    // What "no tool" scores in the channel: a text for answering in words.
    let none = ToolDefinition {
        name: "none".into(),
        description: "No function: answer in words".into(),
        parameters: serde_json::json!({"type": "object"}),
    };
    for case in cases {
        let tools = &sets[&case.set];
        let messages = vec![system.clone(), Message::user(&case.prompt)];
        let request = request(&messages, tools, &ToolChoice::Required, None);
        let format = backend.tool_call_format();
        let openings: Vec<String> = tools.iter().map(|t| format.call_opening(&t.name)).collect();
        let refs: Vec<&str> = openings.iter().map(String::as_str).collect();
        let names = backend.reply_logprobs(&request, &refs)?;
        let words = zoo_core::backend::llama::DEFAULT_WORD_MATCH.bonuses(&messages, tools);
        let mut candidates = tools.clone();
        candidates.push(none.clone());
        let channel = backend.channel_logprobs(&messages, &candidates)?;
        let trigger = backend.call_opening_logprob(&GenerateRequest {
            tool_choice: &ToolChoice::Auto,
            ..request
        })?;
        let per_tool = |scores: &[f32]| -> BTreeMap<&str, f32> {
            tools
                .iter()
                .map(|t| t.name.as_str())
                .zip(scores.iter().copied())
                .collect()
        };
        let line = serde_json::json!({
            "split": case.split,
            "prompt": case.prompt,
            "want": case.tool,
            "name": per_tool(&names),
            "words": per_tool(&words),
            "channel": per_tool(&channel),
            "channel_none": channel[tools.len()],
            "trigger": trigger,
        });
        println!("{line}");
    }
    Ok(())
}

/// Each case twice, with the grammar applied to every token before each
/// pick (the baseline) and with the picked token checked (the default),
/// the order alternating from case to case so that neither side always
/// finds the question already decoded; fails when the replies differ. Prints
/// each side's median time per case and the ratio of their totals.
fn print_grammar_ratio(
    backend: &mut LlamaBackend,
    system: &Message,
    sets: &BTreeMap<String, Vec<ToolDefinition>>,
    selected: &[&Case],
    choice: &ToolChoice,
) -> Result<(), Box<dyn std::error::Error>> {
    let mut every = Vec::new();
    let mut checked = Vec::new();
    for (i, case) in selected.iter().enumerate() {
        let tools = &sets[&case.set];
        let mut replies = Vec::new();
        for grammar_first in [i % 2 == 0, i % 2 != 0] {
            backend.set_grammar_first(grammar_first);
            let started = Instant::now();
            let reply = generate(backend, system, &case.prompt, tools, choice)?;
            let took = started.elapsed();
            match grammar_first {
                true => every.push(took),
                false => checked.push(took),
            }
            replies.push(format!("{:?} {:?}", reply.calls, reply.content));
        }
        if replies[0] != replies[1] {
            return Err(format!("{:?}: the replies differ: {replies:?}", case.prompt).into());
        }
    }
    backend.set_grammar_first(false);
    let total = |times: &[Duration]| times.iter().sum::<Duration>().as_secs_f64();
    let median = |times: &mut Vec<Duration>| {
        times.sort();
        times
            .get(times.len() / 2)
            .map_or(0.0, Duration::as_secs_f64)
    };
    println!(
        "{} cases, {}: grammar on every token total {:.1} s (median {:.2} s), \
         picked token checked total {:.1} s (median {:.2} s); ratio every / checked {:.2}",
        selected.len(),
        choice.as_str(),
        total(&every),
        median(&mut every),
        total(&checked),
        median(&mut checked),
        total(&every) / total(&checked).max(f64::EPSILON),
    );
    Ok(())
}

fn generate(
    backend: &mut LlamaBackend,
    system: &Message,
    prompt: &str,
    tools: &[ToolDefinition],
    choice: &ToolChoice,
) -> Result<parser::ParsedReply, zoo_core::Error> {
    let messages = vec![system.clone(), Message::user(prompt)];
    let request = request(&messages, tools, choice, Some(96));
    let generation = backend.generate(&request, &mut |_| {}, &CancelToken::new())?;
    Ok(parser::parse(&generation.text))
}

/// A one-call reply to `messages`, as every case asks it.
fn request<'a>(
    messages: &'a [Message],
    tools: &'a [ToolDefinition],
    tool_choice: &'a ToolChoice,
    max_tokens: Option<u32>,
) -> GenerateRequest<'a> {
    GenerateRequest {
        messages,
        tools,
        tool_choice,
        max_tokens,
        max_calls: 1,
        stop: &[],
        cache_hint: CacheHint::default(),
        deadline: None,
    }
}
