//! Tool-call parsing: finds the calls in a model's raw output, in whichever
//! format the model wrote them, and keeps the prose around them.
//!
//! The text is scanned once, left to right, for places where a call can begin:
//! an explicit marker (`<tool_call>`, `<|python_tag|>`, `[TOOL_CALLS]`), a
//! code fence, or a bare `{` / `[`. After a marker, whatever follows was meant
//! as a call, so anything unreadable becomes a [`ParseFailure`] that goes back
//! to the model. Bare JSON counts only when it is shaped like a call, so that
//! ordinary JSON and braces in prose stay content. Where a JSON value ends is
//! decided as serde_json decides it, so nesting, strings and escapes cannot
//! fool it.
//!
//! The time is linear in the length of the text, whatever the text. A `{`
//! that does not start a valid value is skipped by one byte, so the text
//! inside it is tried again; asking serde_json each time rereads that text
//! from every bracket, up to 128 levels deep (seconds for a few hundred KB of
//! unclosed JSON). Instead `Json` walks a bracketed value once with an
//! explicit stack and remembers, for every bracket it passed, whether a value
//! starting there is valid and where it ends; serde_json then builds only the
//! values known to be valid. See `Json` for why no byte is walked more than
//! twice.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::validate::kind_of;
use super::{function_gemma, pythonic};

/// One call found in the output.
#[derive(Debug, Clone, PartialEq)]
pub struct ParsedCall {
    /// The tool's name as the model wrote it (not yet checked against the registry).
    pub name: String,
    /// Always a JSON object, so validation and tools never see another shape.
    pub arguments: Value,
}

/// A call that was begun but could not be read. It goes back to the model as
/// an error, so the text is never silently dropped.
#[derive(Debug, Clone, PartialEq)]
pub struct ParseFailure {
    /// The tool's name, when it could be recovered, so retries are counted per tool.
    pub tool: Option<String>,
    /// Says exactly what was wrong, for the model to read and correct.
    pub message: String,
    /// The raw text of the failed call, kept so the history shows what the model wrote.
    pub fragment: String,
}

/// A model's reply split into its prose and its tool calls.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ParsedReply {
    /// The text outside calls, trimmed, with the gaps left by calls collapsed.
    pub content: String,
    /// The calls, in the order they were written.
    pub calls: Vec<ParsedCall>,
    /// Calls that were begun but could not be read, in the order they were written.
    pub failures: Vec<ParseFailure>,
}

impl ParsedReply {
    /// Whether the reply asked for at least one tool to run; failures alone do
    /// not count, since nothing can be executed for them.
    pub fn has_calls(&self) -> bool {
        !self.calls.is_empty()
    }
}

/// Splits `text` into prose, calls and unreadable calls. Accepts every
/// supported format whatever model wrote the text, and never panics.
pub fn parse(text: &str) -> ParsedReply {
    if let Some(reply) = whole_python_list(text) {
        return reply;
    }
    scan(Json::new(text))
}

/// What a reply shows the user as its answer: its prose without any call
/// markup (calls it wrote when none could run, a call cut off) and without
/// tool results it echoed (`<tool_response>…</tool_response>` and the
/// other formats' result blocks), whatever format wrote them. Small models
/// often answer a result by repeating it in its markup; that is never an
/// answer.
pub fn answer_text(text: &str) -> String {
    let content = parse(text).content;
    let mut pieces: Vec<&str> = Vec::new();
    let mut rest = content.as_str();
    while let Some((at, open, close)) = RESULT_BLOCKS
        .iter()
        .filter_map(|(open, close)| rest.find(open).map(|at| (at, *open, *close)))
        .min_by_key(|(at, _, _)| *at)
    {
        pieces.push(&rest[..at]);
        let after = &rest[at + open.len()..];
        rest = match after.find(close) {
            Some(end) => &after[end + close.len()..],
            None => "",
        };
    }
    pieces.push(rest);
    // Stray closing tags of results are markup too (a fence is not: it
    // closes code the answer may hold).
    let closers: Vec<&str> = RESULT_BLOCKS
        .iter()
        .map(|(_, close)| *close)
        .filter(|close| *close != FENCE)
        .collect();
    let pieces: Vec<&str> = pieces
        .into_iter()
        .flat_map(|piece| split_all(piece, &closers))
        .collect();
    join_prose(&pieces)
}

/// `text` cut at every occurrence of any of `separators`, which are dropped.
fn split_all<'t>(text: &'t str, separators: &[&str]) -> Vec<&'t str> {
    let mut out = Vec::new();
    let mut rest = text;
    while let Some((at, len)) = separators
        .iter()
        .filter_map(|s| rest.find(s).map(|at| (at, s.len())))
        .min_by_key(|(at, _)| *at)
    {
        out.push(&rest[..at]);
        rest = &rest[at + len..];
    }
    out.push(rest);
    out
}

/// Whether `text` holds any call or result markup that [`answer_text`]
/// would remove (a cheap check before rewriting plain prose).
pub fn has_markup(text: &str) -> bool {
    OPENING_MARKER.is_match(text)
        || RESULT_BLOCKS
            .iter()
            .any(|(open, close)| text.contains(open) || (*close != FENCE && text.contains(close)))
        || text.contains(HERMES_CLOSE)
        || whole_python_list(text).is_some()
}

/// The result blocks models echo: opening and closing text.
const RESULT_BLOCKS: [(&str, &str); 5] = [
    ("<tool_response>", "</tool_response>"),
    ("<|tool_response_start|>", "<|tool_response_end|>"),
    ("<start_function_response>", "<end_function_response>"),
    ("```tool_output", "```"),
    ("[TOOL_RESULTS]", "[/TOOL_RESULTS]"),
];

/// A reply that is nothing but a Python list of calls (Gemma's format,
/// which has no marker): the calls. Only a whole reply counts, so a
/// bracket in prose is never read as a call, and it is read once.
fn whole_python_list(text: &str) -> Option<ParsedReply> {
    let trimmed = text.trim();
    if !trimmed.starts_with('[') || !trimmed.ends_with(']') {
        return None;
    }
    let (calls, end) = pythonic::read_call_list(trimmed)?;
    if end != trimmed.len() || calls.is_empty() {
        return None;
    }
    Some(ParsedReply {
        content: String::new(),
        calls: calls.into_iter().map(python_call).collect(),
        failures: Vec::new(),
    })
}

fn python_call((name, arguments): pythonic::PythonCall) -> ParsedCall {
    ParsedCall {
        name,
        arguments: Value::Object(arguments),
    }
}

/// Scans `json`'s text for calls; see [`parse`].
fn scan(mut json: Json) -> ParsedReply {
    let text = json.text;
    let mut reply = ParsedReply::default();
    let mut prose: Vec<&str> = Vec::new();
    let mut prose_start = 0;
    let mut pos = 0;
    while let Some(found) = CANDIDATE.find_at(text, pos) {
        let at = found.start();
        match read_candidate(&mut json, at, found.as_str()) {
            Found::Prose { end } => pos = end,
            Found::Block(block) => {
                let start = block.start.map_or(at, |s| s.clamp(prose_start, at));
                prose.push(&text[prose_start..start]);
                reply.calls.extend(block.calls);
                reply.failures.extend(block.failures);
                prose_start = block.end;
                pos = block.end;
            }
        }
    }
    prose.push(&text[prose_start..]);
    reply.content = join_prose(&prose);
    reply
}

const HERMES_OPEN: &str = "<tool_call>";
const HERMES_CLOSE: &str = "</tool_call>";
const PYTHON_TAG: &str = "<|python_tag|>";
const MISTRAL_CALLS: &str = "[TOOL_CALLS]";
const GRANITE_CALLS: &str = "<|tool_call|>";
const LFM2_OPEN: &str = "<|tool_call_start|>";
const LFM2_CLOSE: &str = "<|tool_call_end|>";
const HARMONY_RECIPIENT: &str = "to=functions.";
const HARMONY_MESSAGE: &str = "<|message|>";
const HARMONY_CALL: &str = "<|call|>";
/// How far before a recipient its harmony header may begin.
const HARMONY_HEADER_WINDOW: usize = 96;
const FENCE: &str = "```";
/// The fence label Gemma's examples put around Python calls.
const TOOL_CODE: &str = "tool_code";

/// Shown in messages so the model sees the shape it should have written.
const EXPECTED_SHAPE: &str = r#"expected {"name": "<tool>", "arguments": {...}}"#;

/// Every place a call can begin. Markers come before `[` so that
/// `[TOOL_CALLS]` wins over a bare array starting at the same byte.
static CANDIDATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"<tool_call>|</tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|<\|tool_call\|>|<\|tool_call_start\|>|<\|tool_call_end\|>|<start_function_call>|<end_function_call>|to=functions\.|```|[{\[]",
    )
    .expect("candidate regex is valid")
});

/// The markers that open a call; an unreadable call ends at the next one.
static OPENING_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|<\|tool_call\|>|<\|tool_call_start\|>|<start_function_call>|to=functions\.",
    )
    .expect("marker regex is valid")
});

/// Mistral's newer form, `name[ARGS]{...}`, optionally with `[CALL_ID]id`
/// between the name and `[ARGS]`.
static MISTRAL_NAMED: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"\A\s*([^\s\[\]{}"]+)\s*(?:\[CALL_ID\][^\[]*)?\[ARGS\]"#)
        .expect("mistral regex is valid")
});

/// Recovers the tool's name from JSON too broken to parse.
static NAME_IN_TEXT: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r#""name"\s*:\s*"([^"\\]+)""#).expect("name regex is valid"));

/// What the scanner found where a call could begin.
enum Found {
    /// Ordinary text up to `end`: it stays content and scanning resumes there.
    Prose { end: usize },
    /// Text that belonged to calls, removed from the content.
    Block(Block),
}

/// The calls and failures read from one stretch of text ending at `end`.
struct Block {
    /// Where the block's markup begins when that is before the candidate
    /// that found it (harmony's header before its recipient).
    start: Option<usize>,
    end: usize,
    calls: Vec<ParsedCall>,
    failures: Vec<ParseFailure>,
}

impl Block {
    fn new(end: usize) -> Self {
        Block {
            start: None,
            end,
            calls: Vec::new(),
            failures: Vec::new(),
        }
    }

    /// Records what one value read as. When the value held a single call its
    /// raw text is the best fragment; for one element of a list, the
    /// element's own text avoids repeating the good calls beside it.
    fn record(&mut self, readings: Vec<Reading>, raw: &str) {
        let single = readings.len() == 1;
        for reading in readings {
            match reading {
                Ok(call) => self.calls.push(call),
                Err(problem) => self.failures.push(ParseFailure {
                    tool: problem.tool,
                    message: problem.message,
                    fragment: if single {
                        raw.trim().to_string()
                    } else {
                        problem.element
                    },
                }),
            }
        }
    }

    fn fail(&mut self, tool: Option<String>, message: String, fragment: &str) {
        self.failures.push(ParseFailure {
            tool,
            message,
            fragment: fragment.trim().to_string(),
        });
    }
}

/// One JSON value read as a call: the call, or what is wrong with it.
type Reading = Result<ParsedCall, Problem>;

/// What is wrong with a value meant as a call.
struct Problem {
    tool: Option<String>,
    message: String,
    /// The value's own text, for when it was one element of a list.
    element: String,
}

fn read_candidate(json: &mut Json, at: usize, matched: &str) -> Found {
    match matched {
        HERMES_OPEN => Found::Block(read_marked(json, at, HERMES_OPEN, Some(HERMES_CLOSE))),
        PYTHON_TAG => Found::Block(read_marked(json, at, PYTHON_TAG, None)),
        MISTRAL_CALLS => Found::Block(read_mistral(json, at)),
        GRANITE_CALLS => Found::Block(read_marked(json, at, GRANITE_CALLS, None)),
        LFM2_OPEN => Found::Block(read_python_block(json.text, at)),
        function_gemma::CALL_OPEN => Found::Block(read_function_gemma(json.text, at)),
        HARMONY_RECIPIENT => read_harmony(json, at),
        // A closing tag whose call was already read (several calls in one
        // block, or junk before the tag) is markup, not prose.
        HERMES_CLOSE | LFM2_CLOSE | function_gemma::CALL_CLOSE => {
            Found::Block(Block::new(at + matched.len()))
        }
        FENCE => read_fence(json, at),
        _ => read_bare(json, at),
    }
}

/// Reads the JSON call(s) after an explicit marker: one value, or several
/// separated by whitespace, `;` or `,`, then the closing tag if the format
/// has one. A missing closing tag is tolerated because models stop at EOS.
fn read_marked(json: &mut Json, at: usize, open: &str, close: Option<&str>) -> Block {
    let text = json.text;
    let body = at + open.len();
    let mut values: Vec<(usize, usize, Value)> = Vec::new();
    let mut pos = skip_whitespace(text, body);
    loop {
        let value_end = match json.value_at(pos) {
            Ok((value, end)) => {
                values.push((pos, end, value));
                end
            }
            Err(error) if values.is_empty() => {
                return unreadable(json, at, open, close, (pos, error))
            }
            // Only the first value is owed to the marker; later text that is
            // not JSON is left to the scanner.
            Err(_) => break,
        };
        pos = skip_separators(text, value_end);
        if !starts_named_object(json, pos) {
            break;
        }
    }

    let last_end = values.last().map_or(body, |v| v.1);
    let after = skip_whitespace(text, last_end);
    let end = match close {
        Some(close) if text[after..].starts_with(close) => after + close.len(),
        _ => last_end,
    };
    let mut block = Block::new(end);
    let last = values.len().saturating_sub(1);
    for (i, (start, value_end, value)) in values.iter().enumerate() {
        let from = if i == 0 { at } else { *start };
        let to = if i == last { end } else { *value_end };
        block.record(explicit_readings(value, open), &text[from..to]);
    }
    block
}

/// Whether a JSON object that has a string name starts at `pos`. Values
/// after the first one in a marked block are taken only then, so prose after
/// an unclosed call (say a `[1]` footnote) is not mistaken for a broken call.
fn starts_named_object(json: &mut Json, pos: usize) -> bool {
    json.text[pos..].starts_with('{')
        && json
            .value_at(pos)
            .is_ok_and(|(value, _)| call_shape(&value).is_ok())
}

/// A marker followed by text that is not JSON. The failed call runs to its
/// closing tag when it has one, else to the next marker or the end of text.
/// `error` is why the value at its position could not be read.
fn unreadable(
    json: &Json,
    at: usize,
    open: &str,
    close: Option<&str>,
    error: (usize, JsonError),
) -> Block {
    let text = json.text;
    let body = at + open.len();
    let end = unreadable_end(text, body, close);
    let fragment = &text[at..end];
    let inside = &text[body..end];
    let inside = close.and_then(|c| inside.strip_suffix(c)).unwrap_or(inside);
    // Parsing only the call's own text reports the error where the call ends
    // (e.g. "EOF while parsing an object") rather than at the closing tag.
    // The call's own text ends before the next marker, so no byte is parsed
    // here twice.
    let message = match first_value(inside) {
        _ if inside.trim().is_empty() => format!("nothing follows {open}: {EXPECTED_SHAPE}"),
        Err(error) => format!("the call after {open} is not valid JSON: {error}"),
        // Only a number glued to the tag parses alone but not before the tag.
        Ok(_) => format!(
            "the call after {open} is not a JSON object ({}); {EXPECTED_SHAPE}",
            json.describe(error.0, error.1)
        ),
    };
    let mut block = Block::new(end);
    block.fail(recover_name(fragment), message, fragment);
    block
}

fn unreadable_end(text: &str, from: usize, close: Option<&str>) -> usize {
    let next_marker = OPENING_MARKER
        .find_at(text, from)
        .map_or(text.len(), |m| m.start());
    let end = close
        .and_then(|c| text[from..next_marker].find(c).map(|i| from + i + c.len()))
        .unwrap_or(next_marker);
    // Trailing whitespace is the gap before whatever comes next, not the call.
    from + text[from..end].trim_end().len()
}

/// Where a marked block ends: after its closing tag when one comes before
/// the next opening marker, else at that marker (or the end of the text).
/// The span between is the block's own text, so no byte is read by two
/// blocks.
fn block_end(text: &str, from: usize, close: &str) -> (usize, usize) {
    let next_marker = OPENING_MARKER
        .find_at(text, from)
        .map_or(text.len(), |m| m.start());
    match text[from..next_marker].find(close) {
        Some(i) => (from + i, from + i + close.len()),
        None => (next_marker, next_marker),
    }
}

/// LFM2's `<|tool_call_start|>[name(key=value), …]<|tool_call_end|>`.
fn read_python_block(text: &str, at: usize) -> Block {
    let body = at + LFM2_OPEN.len();
    let (inner_end, end) = block_end(text, body, LFM2_CLOSE);
    let inner = &text[body..inner_end];
    let mut block = Block::new(end);
    match pythonic::read_call_lines(inner) {
        Some(calls) => block.calls.extend(calls.into_iter().map(python_call)),
        None => block.fail(
            recover_python_name(inner),
            format!(
                "the call after {LFM2_OPEN} is not a Python list of calls; expected \
                 [tool_name(argument=value, ...)]"
            ),
            &text[at..end],
        ),
    }
    block
}

/// FunctionGemma's `<start_function_call>call:name{…}<end_function_call>`.
fn read_function_gemma(text: &str, at: usize) -> Block {
    let body = at + function_gemma::CALL_OPEN.len();
    let (inner_end, end) = block_end(text, body, function_gemma::CALL_CLOSE);
    let inner = &text[body..inner_end];
    let mut block = Block::new(end);
    match function_gemma::read_call(inner) {
        Some((name, arguments)) => block.calls.push(ParsedCall {
            name,
            arguments: Value::Object(arguments),
        }),
        None => block.fail(
            inner
                .trim_start()
                .strip_prefix("call:")
                .and_then(|rest| rest.split(['{', ' ']).next())
                .filter(|name| !name.is_empty())
                .map(str::to_string),
            format!(
                "the call after {} is not call:name{{key:value,...}} with strings between \
                 {} tokens",
                function_gemma::CALL_OPEN,
                function_gemma::ESCAPE
            ),
            &text[at..end],
        ),
    }
    block
}

/// Harmony (gpt-oss): `to=functions.name`, then the header up to
/// `<|message|>`, then the arguments as JSON, then `<|call|>`. The
/// recipient may come before or after the channel; what precedes it in the
/// header (`<|start|>assistant`, `<|channel|>commentary `) is markup the
/// reply's own reader removes.
fn read_harmony(json: &mut Json, at: usize) -> Found {
    let text = json.text;
    let after = at + HARMONY_RECIPIENT.len();
    let name_len = text[after..]
        .find(|c: char| !(c.is_alphanumeric() || c == '_' || c == '-' || c == '.'))
        .unwrap_or(text.len() - after);
    // The header holds no newline and no second recipient: the search for
    // its end stops at the next recipient, so each byte is searched once.
    let next_recipient = text[after..]
        .find(HARMONY_RECIPIENT)
        .map_or(text.len(), |i| after + i);
    let header_end = text[after..next_recipient]
        .find('\n')
        .map_or(next_recipient, |i| after + i);
    let Some(message) = text[after..header_end]
        .find(HARMONY_MESSAGE)
        .map(|i| after + i)
    else {
        return Found::Prose { end: after };
    };
    if name_len == 0 {
        return Found::Prose { end: after };
    }
    let name = text[after..after + name_len].to_string();
    let body = message + HARMONY_MESSAGE.len();
    let (inner_end, end) = block_end(text, body, HARMONY_CALL);
    let mut block = Block::new(end);
    block.start = Some(harmony_header_start(text, at));
    match json.value_at(skip_whitespace(text, body)) {
        Ok((value, value_end)) if value_end <= inner_end || inner_end == end => {
            let reading = build_call(&name, Some(&value), &value);
            block.record(vec![reading], &text[at..end]);
        }
        _ => block.fail(
            Some(name.clone()),
            format!("the arguments of `{name}` after {HARMONY_MESSAGE} are not a JSON object"),
            &text[at..end],
        ),
    }
    Found::Block(block)
}

/// Where the harmony header that holds a recipient at `at` begins: the
/// first `<|start|>` or `<|channel|>` after the last message end on the
/// same line (`<|start|>assistant<|channel|>commentary to=…` or
/// `<|start|>assistant to=…<|channel|>…`), else `at`. The scanner clamps
/// it to the text not yet given to prose. A header is short: only the
/// last [`HARMONY_HEADER_WINDOW`] bytes are searched, so the time stays
/// constant per call.
fn harmony_header_start(text: &str, at: usize) -> usize {
    let mut window = at.saturating_sub(HARMONY_HEADER_WINDOW);
    while !text.is_char_boundary(window) {
        window += 1;
    }
    let line = &text[..at];
    let from = ["\n", "<|end|>", "<|call|>", "<|return|>", HARMONY_MESSAGE]
        .iter()
        .filter_map(|m| line[window..].rfind(m).map(|i| window + i + m.len()))
        .max()
        .unwrap_or(window);
    ["<|start|>", "<|channel|>"]
        .iter()
        .filter_map(|m| line[from..].find(m).map(|i| from + i))
        .min()
        .unwrap_or(at)
}

/// The name before the first `(` of a broken Python call, if it looks like one.
fn recover_python_name(text: &str) -> Option<String> {
    let inner = text.trim_start().trim_start_matches('[').trim_start();
    let name = &inner[..inner.find('(')?];
    (!name.is_empty()
        && name
            .chars()
            .all(|c| c.is_alphanumeric() || "_-.".contains(c)))
    .then(|| name.to_string())
}

/// `[TOOL_CALLS]` followed by a JSON list (older Mistral) or by one or more
/// `name[ARGS]{...}` (newer Mistral).
fn read_mistral(json: &mut Json, at: usize) -> Block {
    let text = json.text;
    let body = at + MISTRAL_CALLS.len();
    if text[skip_whitespace(text, body)..].starts_with(['[', '{']) {
        return read_marked(json, at, MISTRAL_CALLS, None);
    }
    let mut block = Block::new(body);
    let mut from = at;
    let mut pos = body;
    while let Some(head) = MISTRAL_NAMED.captures(&text[pos..]) {
        let name = head.get(1).map_or("", |m| m.as_str()).to_string();
        let args = pos + head.get(0).map_or(0, |m| m.end());
        match json.value_at(args) {
            Ok((value, end)) => {
                pos = end;
                let reading = build_call(&name, Some(&value), &value);
                block.record(vec![reading], &text[from..pos]);
            }
            Err(error) => {
                pos = unreadable_end(text, args, None);
                let message = format!(
                    "the arguments of `{name}` after {MISTRAL_CALLS}{name}[ARGS] are not valid JSON: {}",
                    json.describe(args, error)
                );
                block.fail(Some(name), message, &text[from..pos]);
                break;
            }
        }
        from = pos;
    }
    if pos == body {
        pos = unreadable_end(text, body, None);
        let message = format!(
            "the text after {MISTRAL_CALLS} is neither a JSON list of calls nor `name[ARGS]{{...}}`: {EXPECTED_SHAPE}"
        );
        block.fail(recover_name(&text[at..pos]), message, &text[at..pos]);
    }
    block.end = pos;
    block
}

/// A code fence is a call when everything inside it is call-shaped JSON.
/// Any other fence is kept whole as content, so code examples are never run.
fn read_fence(json: &mut Json, at: usize) -> Found {
    let text = json.text;
    let after_ticks = at + FENCE.len();
    let label = text[after_ticks..]
        .find(|c: char| !(c.is_alphanumeric() || "_+-.".contains(c)))
        .unwrap_or(text.len() - after_ticks);
    let body = after_ticks + label;

    let mut readings = Vec::new();
    let mut pos = skip_separators(text, body);
    let end = loop {
        if text[pos..].starts_with(FENCE) {
            break Some(pos + FENCE.len());
        }
        if pos == text.len() {
            break Some(pos);
        }
        match json
            .value_at(pos)
            .ok()
            .and_then(|(value, end)| Some((bare_readings(&value)?, end)))
        {
            Some((found, end)) => {
                readings.extend(found);
                pos = skip_separators(text, end);
            }
            None => break None,
        }
    };

    if &text[after_ticks..body] == TOOL_CODE {
        if let Some(found) = python_fence(text, body) {
            return found;
        }
    }
    match end {
        Some(end) if !readings.is_empty() => {
            let mut block = Block::new(end);
            block.record(readings, &text[at..end]);
            Found::Block(block)
        }
        _ => Found::Prose {
            end: text[body..]
                .find(FENCE)
                .map_or(after_ticks, |i| body + i + FENCE.len()),
        },
    }
}

/// A ```` ```tool_code ```` fence holding Python calls (Gemma's examples
/// write them so): the calls, up to the closing fence.
fn python_fence(text: &str, body: usize) -> Option<Found> {
    let (inner_end, end) = match text[body..].find(FENCE) {
        Some(i) => (body + i, body + i + FENCE.len()),
        None => (text.len(), text.len()),
    };
    let calls = pythonic::read_call_lines(&text[body..inner_end])?;
    let mut block = Block::new(end);
    block.calls.extend(calls.into_iter().map(python_call));
    Some(Found::Block(block))
}

/// A `{` or `[` in the text: a call if it starts call-shaped JSON, else prose.
/// A failed attempt moves on by one byte, so text inside it is tried again;
/// [`Json`] remembers what it learnt, so that retrying stays cheap.
fn read_bare(json: &mut Json, at: usize) -> Found {
    match json.value_at(at) {
        Ok((value, end)) => match bare_readings(&value) {
            Some(readings) => {
                let mut block = Block::new(end);
                block.record(readings, &json.text[at..end]);
                Found::Block(block)
            }
            // Skipping the whole value keeps calls quoted inside ordinary
            // JSON (a result, an example) from being picked out of it.
            None => Found::Prose { end },
        },
        // Both `{` and `[` are one byte, so this stays on a char boundary.
        Err(_) => Found::Prose { end: at + 1 },
    }
}

/// Reads a value that followed a marker. Every element must be a call, and
/// any that is not becomes a failure. An empty list is no call at all: it is
/// how SmolLM2 says that no function fits (`<tool_call>[]</tool_call>`), so
/// the markup goes and nothing runs.
fn explicit_readings(value: &Value, marker: &str) -> Vec<Reading> {
    let read = |item: &Value| match call_shape(item) {
        Ok((name, arguments)) => build_call(name, arguments, item),
        Err(why) => Err(Problem {
            tool: None,
            message: format!("the call after {marker} {why}; {EXPECTED_SHAPE}"),
            element: item.to_string(),
        }),
    };
    match value {
        Value::Array(items) => items.iter().map(read).collect(),
        _ => vec![read(value)],
    }
}

/// Reads a value found without a marker. It counts only when it (or every
/// element of a non-empty list) names a tool and carries arguments, so that
/// ordinary JSON such as `{"name": "Ada", "age": 36}` stays content.
fn bare_readings(value: &Value) -> Option<Vec<Reading>> {
    let read = |item: &Value| -> Option<Reading> {
        let (name, arguments) = call_shape(item).ok()?;
        let wrapped = matches!(item.get("function"), Some(Value::Object(_)));
        (arguments.is_some() || wrapped).then(|| build_call(name, arguments, item))
    };
    match value {
        Value::Array(items) if !items.is_empty() => items.iter().map(read).collect(),
        Value::Object(_) => Some(vec![read(value)?]),
        _ => None,
    }
}

/// The name and arguments of a call-shaped value, accepting both the plain
/// `{"name", "arguments" | "parameters"}` and OpenAI's
/// `{"type": "function", "function": {...}}`. The error says, for the model,
/// why the value is not a call.
fn call_shape(value: &Value) -> Result<(&str, Option<&Value>), String> {
    let Value::Object(object) = value else {
        return Err(format!("is {}, not a JSON object", kind_of(value)));
    };
    let call = match object.get("function") {
        Some(Value::Object(function)) => function,
        _ => object,
    };
    let arguments = call.get("arguments").or_else(|| call.get("parameters"));
    match call.get("name") {
        Some(Value::String(name)) if !name.trim().is_empty() => Ok((name, arguments)),
        Some(Value::String(_)) => Err("has an empty \"name\"".to_string()),
        Some(other) => Err(format!(
            "has a \"name\" that is {}, not a string",
            kind_of(other)
        )),
        None => Err("has no \"name\"".to_string()),
    }
}

/// Builds the call, decoding the arguments into an object: missing or null
/// arguments mean none, and a string is decoded because OpenAI-style models
/// send the object serialized.
fn build_call(name: &str, arguments: Option<&Value>, source: &Value) -> Reading {
    let empty = || Value::Object(Map::new());
    let decoded = match arguments {
        None | Some(Value::Null) => Ok(empty()),
        Some(object @ Value::Object(_)) => Ok(object.clone()),
        Some(Value::String(s)) if s.trim().is_empty() => Ok(empty()),
        Some(Value::String(s)) => match serde_json::from_str::<Value>(s) {
            Ok(object @ Value::Object(_)) => Ok(object),
            Ok(other) => Err(format!("a string holding {}", kind_of(&other))),
            Err(e) => Err(format!("a string that is not a JSON object ({e})")),
        },
        Some(other) => Err(kind_of(other).to_string()),
    };
    match decoded {
        Ok(arguments) => Ok(ParsedCall {
            name: name.to_string(),
            arguments,
        }),
        Err(got) => Err(Problem {
            tool: Some(name.to_string()),
            message: format!("arguments of `{name}` must be a JSON object, got {got}"),
            element: source.to_string(),
        }),
    }
}

/// The JSON value at the start of `text` (after whitespace) and the number of
/// bytes up to its end, exactly as serde_json reads it.
fn first_value(text: &str) -> Result<(Value, usize), String> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => Ok((value, stream.byte_offset())),
        Some(Err(error)) => Err(error.to_string()),
        None => Err("EOF while parsing a value".to_string()),
    }
}

/// serde_json's recursion limit: it reads at most this many nested arrays
/// and objects (its depth counter starts at 128 and fails on reaching 0).
const MAX_NESTING: u32 = 127;

/// Why no JSON value could be read at a position.
#[derive(Debug)]
enum JsonError {
    /// serde_json's message.
    Serde(String),
    /// [`Json::skim`] found the value invalid without serde_json; the
    /// message is only worked out when it is shown ([`Json::describe`]).
    Skimmed,
}

/// What is known about a value that starts with a bracket.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bracketed {
    /// serde_json reads a value from here up to `end` (exclusive).
    Valid { end: usize },
    /// serde_json fails on the value that starts here.
    Invalid,
}

/// In [`Json::known`]: nothing is known yet about the byte.
const UNKNOWN: u32 = 0;
/// In [`Json::known`]: the value starting at the byte is invalid. Any other
/// entry is the end of the valid value starting there, which is never 0.
const INVALID: u32 = u32::MAX;

/// One array or object that [`Json::skim`] is inside.
struct Frame {
    open: usize,
    object: bool,
    /// The deepest nesting among the values closed inside it so far.
    height: u32,
}

/// What [`Json::skim`] expects next.
#[derive(Clone, Copy, PartialEq)]
enum Expect {
    /// A value (after `[`, `,` in an array, or `:`).
    Value,
    /// A value or `]`, right after `[`.
    FirstItem,
    /// A key or `}`, right after `{`.
    FirstKey,
    /// A key, after `,` in an object.
    Key,
    /// The `:` after a key.
    Colon,
    /// `,` or the closing bracket, after a value inside a container.
    AfterItem,
}

/// Reads JSON values out of one text, at any byte offset, in time linear in
/// the length of the text however often it is asked.
///
/// A value that starts with `{` or `[` is first walked by [`Json::skim`],
/// which records the outcome (valid up to where, or invalid) of every bracket
/// it passes, not only the first. Later questions about those brackets are
/// answered from the record, and serde_json is run only on values known to
/// be valid (which the scanner then skips whole) and on the few invalid ones
/// whose error message is shown. A walk that meets a bracket already known
/// jumps over its value (or stops, if it is invalid), so a new walk only
/// covers brackets no earlier walk passed outside a string: ones inside a
/// string of every earlier walk going on there. Two walks going on at once
/// disagree on which bytes are inside strings (a quote opens a string for
/// one and closes one for the other, and a backslash outside a string ends a
/// walk), so at most two walks ever cover a byte, in whatever order values
/// are asked for. Values starting otherwise (a string, a number, a word) are
/// read by serde_json directly; they follow markers and fences only, which
/// are read once each.
///
/// The outcome of a bracket does not depend on where the walk that met it
/// began, since serde_json reads a value from its own first byte. The walk
/// accepts exactly what serde_json accepts: it checks the structure itself,
/// including the recursion limit ([`MAX_NESTING`]), and asks serde_json about
/// every string with escapes or control characters and every number that is
/// not a small integer. Its stack is a vector, so deep nesting cannot
/// overflow the call stack.
struct Json<'t> {
    text: &'t str,
    /// What is known about the value starting at each byte ([`UNKNOWN`],
    /// [`INVALID`] or its end). Filled lazily: the zeroed allocation costs
    /// nothing for pages never written, i.e. text without brackets.
    known: Vec<u32>,
    /// The nesting depth of each valid value in `known` (at most
    /// [`MAX_NESTING`]), which a walk that jumps over it must count.
    heights: Vec<u8>,
    /// The walk's stack, kept to save an allocation per walk.
    open: Vec<Frame>,
    /// False in tests that compare with asking serde_json every time, and for
    /// text too long for the offsets in `known` (4 GiB).
    skim: bool,
}

impl<'t> Json<'t> {
    fn new(text: &'t str) -> Self {
        // Offsets up to `text.len()` must fit below INVALID.
        let skim = u32::try_from(text.len()).is_ok_and(|len| len < INVALID);
        Json {
            text,
            known: Vec::new(),
            heights: Vec::new(),
            open: Vec::new(),
            skim,
        }
    }

    fn known(&self, at: usize) -> Option<Bracketed> {
        match self.known.get(at).copied().unwrap_or(UNKNOWN) {
            UNKNOWN => None,
            INVALID => Some(Bracketed::Invalid),
            end => Some(Bracketed::Valid { end: end as usize }),
        }
    }

    /// Records `outcome` for the value at `at`; `height` is its nesting
    /// depth when it is valid.
    fn learn(&mut self, at: usize, outcome: Bracketed, height: u32) {
        if self.known.is_empty() {
            self.known = vec![UNKNOWN; self.text.len()];
            self.heights = vec![0; self.text.len()];
        }
        self.known[at] = match outcome {
            // Fits: `skim` is only set for text shorter than INVALID.
            Bracketed::Valid { end } => end as u32,
            Bracketed::Invalid => INVALID,
        };
        self.heights[at] = u8::try_from(height).unwrap_or(u8::MAX);
    }

    /// The JSON value after whitespace at `pos` and the offset of its end,
    /// as `first_value(&text[pos..])` would give them.
    fn value_at(&mut self, pos: usize) -> Result<(Value, usize), JsonError> {
        let start = skip_json_whitespace(self.text.as_bytes(), pos);
        let bracket = matches!(self.text.as_bytes().get(start), Some(b'{' | b'['));
        if !(self.skim && bracket) {
            return first_value(&self.text[pos..])
                .map(|(value, len)| (value, pos + len))
                .map_err(JsonError::Serde);
        }
        let known = match self.known(start) {
            Some(known) => known,
            None => self.skim(start),
        };
        match known {
            Bracketed::Invalid => Err(JsonError::Skimmed),
            // The whole value is in the slice, so serde_json reads it, and
            // places any error, as it would in the whole text.
            Bracketed::Valid { end } => match serde_json::from_str(&self.text[pos..end]) {
                Ok(value) => Ok((value, end)),
                Err(error) => {
                    self.learn(start, Bracketed::Invalid, 0);
                    Err(JsonError::Serde(error.to_string()))
                }
            },
        }
    }

    /// The message for `error`, which `value_at(pos)` returned.
    fn describe(&self, pos: usize, error: JsonError) -> String {
        match error {
            JsonError::Serde(message) => message,
            JsonError::Skimmed => match first_value(&self.text[pos..]) {
                Err(message) => message,
                // Unreachable while the walk agrees with serde_json; the
                // tests compare the two on every offset of random texts.
                Ok(_) => "invalid JSON".to_string(),
            },
        }
    }

    /// Walks the value at `start` (a `{` or `[`), records the outcome of
    /// every bracket passed outside strings, and returns that of `start`.
    fn skim(&mut self, start: usize) -> Bracketed {
        if let Some(known) = self.known(start) {
            return known;
        }
        let text = self.text;
        let bytes = text.as_bytes();
        let mut open = std::mem::take(&mut self.open);
        open.clear();
        let mut expect = Expect::Value;
        let mut i = start;
        let outcome = loop {
            i = skip_json_whitespace(bytes, i);
            let Some(&byte) = bytes.get(i) else {
                break None;
            };
            let closes = match (expect, byte, open.last()) {
                (Expect::FirstItem | Expect::AfterItem, b']', Some(f)) => !f.object,
                (Expect::FirstKey | Expect::AfterItem, b'}', Some(f)) => f.object,
                _ => false,
            };
            if closes {
                let Some(frame) = open.pop() else {
                    break None;
                };
                i += 1;
                let height = frame.height + 1;
                let outcome = if height <= MAX_NESTING {
                    Bracketed::Valid { end: i }
                } else {
                    Bracketed::Invalid
                };
                self.learn(frame.open, outcome, height);
                match open.last_mut() {
                    Some(parent) => parent.height = parent.height.max(height),
                    None => break Some(outcome),
                }
                expect = Expect::AfterItem;
                continue;
            }
            expect = match (expect, byte) {
                (Expect::AfterItem, b',') => {
                    i += 1;
                    match open.last() {
                        Some(f) if f.object => Expect::Key,
                        _ => Expect::Value,
                    }
                }
                (Expect::Colon, b':') => {
                    i += 1;
                    Expect::Value
                }
                (Expect::FirstKey | Expect::Key, b'"') => match string_end(text, i) {
                    Some(end) => {
                        i = end;
                        Expect::Colon
                    }
                    None => break None,
                },
                (Expect::Value | Expect::FirstItem, b'"') => match string_end(text, i) {
                    Some(end) => {
                        i = end;
                        Expect::AfterItem
                    }
                    None => break None,
                },
                (Expect::Value | Expect::FirstItem, b'{' | b'[') if !open.is_empty() => {
                    match self.known(i) {
                        // An earlier walk read this value: jump over it.
                        Some(Bracketed::Valid { end }) => {
                            let height = u32::from(self.heights[i]);
                            if let Some(parent) = open.last_mut() {
                                parent.height = parent.height.max(height);
                            }
                            i = end;
                            Expect::AfterItem
                        }
                        // What holds an invalid value is invalid.
                        Some(Bracketed::Invalid) => break None,
                        None => {
                            open.push(Frame {
                                open: i,
                                object: byte == b'{',
                                height: 0,
                            });
                            i += 1;
                            if byte == b'{' {
                                Expect::FirstKey
                            } else {
                                Expect::FirstItem
                            }
                        }
                    }
                }
                (Expect::Value | Expect::FirstItem, b'{' | b'[') => {
                    open.push(Frame {
                        open: i,
                        object: byte == b'{',
                        height: 0,
                    });
                    i += 1;
                    if byte == b'{' {
                        Expect::FirstKey
                    } else {
                        Expect::FirstItem
                    }
                }
                (Expect::Value | Expect::FirstItem, _) => match scalar_end(text, i) {
                    Some(end) => {
                        i = end;
                        Expect::AfterItem
                    }
                    None => break None,
                },
                _ => break None,
            };
        };
        // Unless it closed, the text ended or was not JSON where `i` is:
        // every value still open is invalid, whatever came before.
        for frame in open.drain(..) {
            self.learn(frame.open, Bracketed::Invalid, 0);
        }
        self.open = open;
        outcome.unwrap_or(Bracketed::Invalid)
    }
}

/// The first byte at or after `at` that is not JSON whitespace.
fn skip_json_whitespace(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\n' | b'\t' | b'\r')) {
        at += 1;
    }
    at
}

/// The end of the valid JSON string whose opening quote is at `at`, if it
/// is one. Where it ends is plain (a quote not escaped by a backslash);
/// whether it is valid is left to serde_json when it has an escape or a
/// control character, the only things it can reject in a string.
fn string_end(text: &str, at: usize) -> Option<usize> {
    let bytes = text.as_bytes();
    let mut i = at + 1;
    let mut plain = true;
    loop {
        match *bytes.get(i)? {
            b'"' => break,
            b'\\' => {
                plain = false;
                i += 2;
            }
            byte => {
                plain &= byte >= 0x20;
                i += 1;
            }
        }
    }
    let end = i + 1;
    (plain || serde_json::from_str::<IgnoredString>(&text[at..end]).is_ok()).then_some(end)
}

/// The end of the number, `true`, `false` or `null` at `at`, if there is a
/// valid one there. A number is the longest run of bytes that can appear in
/// one (no valid value may follow a number without a separator), and
/// serde_json decides whether it is valid and in range, unless it is a small
/// integer.
fn scalar_end(text: &str, at: usize) -> Option<usize> {
    let rest = &text[at..];
    if let Some(word) = ["true", "false", "null"]
        .into_iter()
        .find(|word| rest.starts_with(word))
    {
        return Some(at + word.len());
    }
    let len = rest
        .bytes()
        .position(|b| !matches!(b, b'0'..=b'9' | b'-' | b'+' | b'.' | b'e' | b'E'))
        .unwrap_or(rest.len());
    let number = &rest[..len];
    let small_integer = (1..=18).contains(&len)
        && number.bytes().all(|b| b.is_ascii_digit())
        && (len == 1 || !number.starts_with('0'));
    (small_integer || serde_json::from_str::<Value>(number).is_ok_and(|v| v.is_number()))
        .then_some(at + len)
}

/// Reads a JSON string the way serde_json reads one inside a value (the same
/// escapes, surrogates and control characters are rejected), keeping nothing.
struct IgnoredString;

impl<'de> serde::Deserialize<'de> for IgnoredString {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = IgnoredString;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a string")
            }
            fn visit_str<E: serde::de::Error>(self, _: &str) -> Result<IgnoredString, E> {
                Ok(IgnoredString)
            }
        }
        deserializer.deserialize_str(Visitor)
    }
}

fn recover_name(fragment: &str) -> Option<String> {
    NAME_IN_TEXT
        .captures(fragment)
        .and_then(|c| c.get(1))
        .map(|m| m.as_str().to_string())
}

fn skip_whitespace(text: &str, pos: usize) -> usize {
    let rest = &text[pos..];
    pos + rest.len() - rest.trim_start().len()
}

/// Skips what may separate several calls: whitespace, `;` (Llama 3) and `,`.
fn skip_separators(text: &str, pos: usize) -> usize {
    let rest = &text[pos..];
    let kept = rest.trim_start_matches(|c: char| c.is_whitespace() || c == ';' || c == ',');
    pos + rest.len() - kept.len()
}

/// Joins the prose left around calls: each piece trimmed, empty pieces
/// dropped, and neighbours separated by a newline when the gap between them
/// held one, else by a space, so removed calls leave no blank runs.
fn join_prose(pieces: &[&str]) -> String {
    let mut content = String::new();
    let mut gap_has_newline = false;
    for piece in pieces {
        let trimmed = piece.trim();
        if trimmed.is_empty() {
            gap_has_newline |= piece.contains('\n');
            continue;
        }
        if !content.is_empty() {
            let leading = &piece[..piece.len() - piece.trim_start().len()];
            let newline = gap_has_newline || leading.contains('\n');
            content.push_str(if newline { "\n" } else { " " });
        }
        content.push_str(trimmed);
        gap_has_newline = piece[piece.trim_end().len()..].contains('\n');
    }
    content
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: Value) -> ParsedCall {
        ParsedCall {
            name: name.to_string(),
            arguments,
        }
    }

    #[test]
    fn hermes_single_call() {
        let reply = parse(
            r#"<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>"#,
        );
        assert_eq!(
            reply.calls,
            vec![call("get_weather", json!({"city": "Paris"}))]
        );
        assert!(reply.failures.is_empty());
        assert_eq!(reply.content, "");
        assert!(reply.has_calls());
    }

    #[test]
    fn hermes_many_calls_with_newlines_keep_order() {
        let text = "<tool_call>\n{\"name\": \"a\", \"arguments\": {\"n\": 1}}\n</tool_call>\n\
                    <tool_call>\n  {\"name\": \"b\", \"arguments\": {}}  \n</tool_call>\n\
                    <tool_call>{\"name\": \"c\", \"arguments\": {\"n\": 3}}</tool_call>";
        let reply = parse(text);
        let names: Vec<&str> = reply.calls.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["a", "b", "c"]);
        assert_eq!(reply.calls[2].arguments, json!({"n": 3}));
        assert_eq!(reply.content, "");
    }

    #[test]
    fn hermes_accepts_parameters_key() {
        let reply = parse(r#"<tool_call>{"name": "x", "parameters": {"k": true}}</tool_call>"#);
        assert_eq!(reply.calls, vec![call("x", json!({"k": true}))]);
    }

    #[test]
    fn hermes_unclosed_at_end_of_text() {
        let reply = parse("Checking.\n<tool_call>\n{\"name\": \"a\", \"arguments\": {\"q\": 1}}\n");
        assert_eq!(reply.calls, vec![call("a", json!({"q": 1}))]);
        assert!(reply.failures.is_empty());
        assert_eq!(reply.content, "Checking.");
    }

    #[test]
    fn hermes_two_objects_in_one_block() {
        let reply = parse(
            "<tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n{\"name\": \"b\", \"arguments\": {}}\n</tool_call>",
        );
        assert_eq!(
            reply.calls,
            vec![call("a", json!({})), call("b", json!({}))]
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn python_tag_with_several_calls() {
        let text = "<|python_tag|>{\"name\": \"a\", \"parameters\": {\"x\": 1}}; \
                    {\"name\": \"b\", \"parameters\": {\"y\": 2}}\n{\"name\": \"c\", \"parameters\": {}}";
        let reply = parse(text);
        assert_eq!(
            reply.calls,
            vec![
                call("a", json!({"x": 1})),
                call("b", json!({"y": 2})),
                call("c", json!({}))
            ]
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn llama3_bare_object_as_whole_reply() {
        let reply = parse(r#"{"name": "search", "parameters": {"query": "rust"}}"#);
        assert_eq!(reply.calls, vec![call("search", json!({"query": "rust"}))]);
        assert_eq!(reply.content, "");
    }

    #[test]
    fn llama3_bare_object_inside_prose() {
        let reply = parse(
            "Let me look.\n{\"name\": \"search\", \"parameters\": {\"query\": \"rust\"}}\nOne moment.",
        );
        assert_eq!(reply.calls, vec![call("search", json!({"query": "rust"}))]);
        assert_eq!(reply.content, "Let me look.\nOne moment.");
    }

    #[test]
    fn smollm2_list_of_calls() {
        let reply = parse(
            "<tool_call>[\n{\"name\": \"a\", \"arguments\": {\"x\": 1}},\n{\"name\": \"b\", \"arguments\": {}}\n]</tool_call>",
        );
        assert_eq!(
            reply.calls,
            vec![call("a", json!({"x": 1})), call("b", json!({}))]
        );
        assert_eq!(reply.content, "");
        assert!(reply.failures.is_empty());
    }

    #[test]
    fn granite_list_after_its_marker() {
        let reply = parse(
            "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}}]",
        );
        assert_eq!(
            reply.calls,
            vec![call("get_weather", json!({"city": "Oslo"}))]
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn lfm2_python_list_between_its_tokens() {
        let reply = parse(
            "Checking.<|tool_call_start|>[get_weather(city=\"Oslo\", days=2), get_time()]<|tool_call_end|>Done.",
        );
        assert_eq!(
            reply.calls,
            vec![
                call("get_weather", json!({"city": "Oslo", "days": 2})),
                call("get_time", json!({}))
            ]
        );
        assert_eq!(reply.content, "Checking. Done.");
        let broken = parse("<|tool_call_start|>[get_weather(city=)]<|tool_call_end|>");
        assert!(broken.calls.is_empty());
        assert_eq!(broken.failures[0].tool.as_deref(), Some("get_weather"));
        assert!(
            broken.failures[0].message.contains("Python list"),
            "{broken:?}"
        );
    }

    #[test]
    fn gemma_bare_python_list_only_as_the_whole_reply() {
        let reply = parse(" [convert_currency(amount=100, from=\"USD\", to=\"EUR\")]\n");
        assert_eq!(
            reply.calls,
            vec![call(
                "convert_currency",
                json!({"amount": 100, "from": "USD", "to": "EUR"})
            )]
        );
        // Inside prose, or not a call list, it stays prose.
        for prose in [
            "See [note(a=1)] above.",
            "[1, 2, 3]",
            "[print(x) for x in y]",
            "[]",
        ] {
            let reply = parse(prose);
            assert!(reply.calls.is_empty(), "{prose}");
            assert!(reply.failures.is_empty(), "{prose}");
        }
        let fenced = parse("```tool_code\nget_time(zone='UTC')\n```");
        assert_eq!(fenced.calls, vec![call("get_time", json!({"zone": "UTC"}))]);
        let example = parse("```python\nget_time(zone='UTC')\n```");
        assert!(example.calls.is_empty());
    }

    #[test]
    fn function_gemma_calls() {
        let reply = parse(
            "<start_function_call>call:get_current_weather{location:<escape>Tokyo, Japan<escape>}<end_function_call><start_function_call>call:ping{}<end_function_call>",
        );
        assert_eq!(
            reply.calls,
            vec![
                call("get_current_weather", json!({"location": "Tokyo, Japan"})),
                call("ping", json!({}))
            ]
        );
        assert_eq!(reply.content, "");
        let broken =
            parse("<start_function_call>call:get_time{zone:<escape>UTC}<end_function_call>");
        assert_eq!(broken.failures[0].tool.as_deref(), Some("get_time"));
    }

    #[test]
    fn harmony_calls_with_the_recipient_before_or_after_the_channel() {
        let reply = parse(
            "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"location\":\"Paris\"}<|call|>",
        );
        assert_eq!(
            reply.calls,
            vec![call("get_weather", json!({"location": "Paris"}))]
        );
        let reply =
            parse(" to=functions.lookup<|channel|>commentary json<|message|>{\"q\": 1}<|call|>");
        assert_eq!(reply.calls, vec![call("lookup", json!({"q": 1}))]);
        let broken = parse(
            "<|channel|>commentary to=functions.f <|constrain|>json<|message|>not json<|call|>",
        );
        assert_eq!(broken.failures[0].tool.as_deref(), Some("f"));
        let prose = parse("Send it to=functions.x\nlater <|message|> now");
        assert!(prose.calls.is_empty() && prose.failures.is_empty());
    }

    #[test]
    fn answers_hold_no_call_or_result_markup() {
        assert_eq!(
            answer_text("It is 18 °C in Paris."),
            "It is 18 °C in Paris."
        );
        assert_eq!(
            answer_text(
                "<tool_response>\n{\"name\": \"get_weather\", \"content\": 18}\n</tool_response>"
            ),
            ""
        );
        assert_eq!(
            answer_text("Sure.\n<tool_response>{\"temp\": 18}</tool_response>\nIt is 18 degrees."),
            "Sure.\nIt is 18 degrees."
        );
        assert_eq!(
            answer_text("Done <tool_call>\n{\"name\": \"a\", \"arguments\": {}}\n</tool_call> and <tool_call>{\"name\""),
            "Done and"
        );
        assert_eq!(answer_text("```tool_output\n18\n```\nWarm."), "Warm.");
        assert_eq!(answer_text("Ok </tool_response> bye"), "Ok bye");
        assert_eq!(answer_text("Run:\n```sh\nls\n```"), "Run:\n```sh\nls\n```");
        assert_eq!(answer_text("<|tool_response_start|>x"), "");
    }

    #[test]
    fn empty_list_after_a_marker_is_no_call() {
        let reply = parse("<tool_call>[]</tool_call>No tool fits; Paris is in France.");
        assert!(reply.calls.is_empty());
        assert!(reply.failures.is_empty());
        assert_eq!(reply.content, "No tool fits; Paris is in France.");
        let reply = parse("[TOOL_CALLS][]");
        assert_eq!(reply, ParsedReply::default());
    }

    #[test]
    fn mistral_json_list() {
        let reply = parse(
            r#"[TOOL_CALLS][{"name": "a", "arguments": {"x": [1, 2]}}, {"name": "b", "arguments": {}}]"#,
        );
        assert_eq!(
            reply.calls,
            vec![call("a", json!({"x": [1, 2]})), call("b", json!({}))]
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn mistral_named_form() {
        let reply = parse(
            "Sure.[TOOL_CALLS]get_weather[ARGS]{\"city\": \"Oslo\"}[TOOL_CALLS]get_time[CALL_ID]a1b2c3d4e[ARGS]{}",
        );
        assert_eq!(
            reply.calls,
            vec![
                call("get_weather", json!({"city": "Oslo"})),
                call("get_time", json!({}))
            ]
        );
        assert_eq!(reply.content, "Sure.");
    }

    #[test]
    fn mistral_named_form_with_bad_arguments() {
        let reply = parse("[TOOL_CALLS]get_weather[ARGS]{\"city\": ");
        assert!(reply.calls.is_empty());
        assert_eq!(reply.failures.len(), 1);
        let failure = &reply.failures[0];
        assert_eq!(failure.tool.as_deref(), Some("get_weather"));
        assert!(
            failure.message.contains("not valid JSON"),
            "{}",
            failure.message
        );
        assert!(failure.message.contains("EOF"), "{}", failure.message);
        assert_eq!(failure.fragment, "[TOOL_CALLS]get_weather[ARGS]{\"city\":");
    }

    #[test]
    fn mistral_marker_followed_by_prose_fails() {
        let reply = parse("[TOOL_CALLS] I would call a tool here");
        assert!(reply.calls.is_empty());
        assert_eq!(reply.failures.len(), 1);
        assert!(reply.failures[0].message.contains("[ARGS]"));
        assert_eq!(
            reply.failures[0].fragment,
            "[TOOL_CALLS] I would call a tool here"
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn mistral_list_with_one_bad_element() {
        let reply = parse(r#"[TOOL_CALLS][{"name": "a", "arguments": {}}, {"arguments": {}}]"#);
        assert_eq!(reply.calls, vec![call("a", json!({}))]);
        assert_eq!(reply.failures.len(), 1);
        assert!(reply.failures[0].message.contains("has no \"name\""));
        assert_eq!(reply.failures[0].fragment, r#"{"arguments":{}}"#);
    }

    #[test]
    fn bare_array_of_calls() {
        let reply = parse(
            r#"Calling: [{"name": "a", "arguments": {"i": 1}}, {"name": "b", "parameters": {"i": 2}}] done"#,
        );
        assert_eq!(
            reply.calls,
            vec![call("a", json!({"i": 1})), call("b", json!({"i": 2}))]
        );
        assert_eq!(reply.content, "Calling: done");
    }

    #[test]
    fn fenced_json_call() {
        let text = "I'll run it:\n```json\n{\"name\": \"run\", \"arguments\": {\"cmd\": \"ls\"}}\n```\nThen report.";
        let reply = parse(text);
        assert_eq!(reply.calls, vec![call("run", json!({"cmd": "ls"}))]);
        assert_eq!(reply.content, "I'll run it:\nThen report.");
    }

    #[test]
    fn plain_fence_with_list_and_backticks_in_strings() {
        let text =
            "```\n[{\"name\": \"write\", \"arguments\": {\"code\": \"```py\\nx\\n```\"}}]\n```";
        let reply = parse(text);
        assert_eq!(
            reply.calls,
            vec![call("write", json!({"code": "```py\nx\n```"}))]
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn fence_with_code_stays_content() {
        let text = "Example:\n```python\nprint({\"name\": \"x\", \"arguments\": {}})\n```\nEnd.";
        let reply = parse(text);
        assert!(reply.calls.is_empty());
        assert!(reply.failures.is_empty());
        assert_eq!(reply.content, text);
    }

    #[test]
    fn openai_shape_with_string_arguments() {
        let text = r#"{"type": "function", "function": {"name": "add", "arguments": "{\"a\": 1, \"b\": 2}"}}"#;
        let reply = parse(text);
        assert_eq!(reply.calls, vec![call("add", json!({"a": 1, "b": 2}))]);
        assert!(reply.failures.is_empty());
    }

    #[test]
    fn function_wrapper_without_type() {
        let reply = parse(
            r#"<tool_call>{"function": {"name": "f", "arguments": {"z": null}}}</tool_call>"#,
        );
        assert_eq!(reply.calls, vec![call("f", json!({"z": null}))]);
        let bare = parse(r#"{"function": {"name": "g"}}"#);
        assert_eq!(bare.calls, vec![call("g", json!({}))]);
    }

    #[test]
    fn nested_arguments() {
        let reply = parse(
            r#"<tool_call>{"name": "n", "arguments": {"a": {"b": {"c": [1, {"d": {}}]}}, "e": []}}</tool_call>"#,
        );
        assert_eq!(
            reply.calls,
            vec![call(
                "n",
                json!({"a": {"b": {"c": [1, {"d": {}}]}}, "e": []})
            )]
        );
    }

    #[test]
    fn escaped_quotes_and_braces_in_strings() {
        let text = r#"Note: <tool_call>{"name": "say", "arguments": {"text": "a \"quoted\" } and { [ ] </tool_call>"}}</tool_call> ok"#;
        let reply = parse(text);
        assert_eq!(
            reply.calls,
            vec![call(
                "say",
                json!({"text": "a \"quoted\" } and { [ ] </tool_call>"})
            )]
        );
        assert_eq!(reply.content, "Note: ok");
    }

    #[test]
    fn prose_around_and_between_calls_is_kept_in_order() {
        let text = "First I check.\n\n<tool_call>{\"name\": \"a\", \"arguments\": {}}</tool_call>\n\n\
                    Then this:\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call> and finally done.";
        let reply = parse(text);
        assert_eq!(reply.calls.len(), 2);
        assert_eq!(
            reply.content,
            "First I check.\nThen this:\nand finally done."
        );
    }

    #[test]
    fn inline_call_joins_with_a_space() {
        let reply = parse(r#"before<tool_call>{"name": "a", "arguments": {}}</tool_call>after"#);
        assert_eq!(reply.content, "before after");
    }

    #[test]
    fn malformed_call_becomes_failure_with_name() {
        let text = "Trying.\n<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}</tool_call>\nBye.";
        let reply = parse(text);
        assert!(reply.calls.is_empty());
        assert!(!reply.has_calls());
        assert_eq!(reply.failures.len(), 1);
        let failure = &reply.failures[0];
        assert_eq!(failure.tool.as_deref(), Some("get_weather"));
        assert!(
            failure.message.starts_with(
                "the call after <tool_call> is not valid JSON: EOF while parsing an object"
            ),
            "{}",
            failure.message
        );
        assert!(
            failure.message.contains("line 1 column"),
            "{}",
            failure.message
        );
        assert_eq!(
            failure.fragment,
            "<tool_call>{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}</tool_call>"
        );
        assert_eq!(reply.content, "Trying.\nBye.");
    }

    #[test]
    fn unclosed_malformed_call_runs_to_the_next_marker() {
        let text = "<tool_call>{\"name\": \"a\", oops\n<tool_call>{\"name\": \"b\", \"arguments\": {}}</tool_call>";
        let reply = parse(text);
        assert_eq!(reply.calls, vec![call("b", json!({}))]);
        assert_eq!(reply.failures.len(), 1);
        assert_eq!(
            reply.failures[0].fragment,
            "<tool_call>{\"name\": \"a\", oops"
        );
        assert_eq!(reply.failures[0].tool.as_deref(), Some("a"));
        assert_eq!(reply.content, "");
    }

    #[test]
    fn marker_with_json_but_no_name_is_failure() {
        let reply = parse(r#"<tool_call>{"tool": "x", "arguments": {}}</tool_call>"#);
        assert!(reply.calls.is_empty());
        assert_eq!(reply.failures.len(), 1);
        assert!(reply.failures[0].message.contains("has no \"name\""));
        assert_eq!(reply.failures[0].tool, None);
        assert_eq!(
            reply.failures[0].fragment,
            r#"<tool_call>{"tool": "x", "arguments": {}}</tool_call>"#
        );

        let numeric = parse(r#"<|python_tag|>{"name": 5, "parameters": {}}"#);
        assert!(numeric.failures[0]
            .message
            .contains("\"name\" that is a number"));
    }

    #[test]
    fn number_after_marker_is_failure() {
        let reply = parse("<tool_call>123</tool_call>");
        assert_eq!(reply.failures.len(), 1);
        assert!(reply.failures[0]
            .message
            .starts_with("the call after <tool_call> is not a JSON object"));
        assert_eq!(reply.failures[0].fragment, "<tool_call>123</tool_call>");
    }

    #[test]
    fn python_tag_with_code_is_failure() {
        let reply = parse("<|python_tag|>brave_search.call(query=\"x\")");
        assert_eq!(reply.failures.len(), 1);
        assert_eq!(
            reply.failures[0].message,
            "the call after <|python_tag|> is not valid JSON: expected value at line 1 column 1"
        );
        assert_eq!(reply.content, "");
    }

    #[test]
    fn prose_after_unclosed_call_is_not_a_call() {
        let reply = parse("<tool_call>{\"name\": \"a\", \"arguments\": {}}\n[1] see note");
        assert_eq!(reply.calls, vec![call("a", json!({}))]);
        assert!(reply.failures.is_empty());
        assert_eq!(reply.content, "[1] see note");
    }

    #[test]
    fn empty_marker_is_failure() {
        let reply = parse("<tool_call></tool_call>");
        assert_eq!(reply.failures.len(), 1);
        assert!(reply.failures[0]
            .message
            .starts_with("nothing follows <tool_call>"));
        assert_eq!(reply.failures[0].fragment, "<tool_call></tool_call>");
    }

    #[test]
    fn non_object_arguments_are_failures() {
        let reply = parse(r#"<tool_call>{"name": "x", "arguments": 42}</tool_call>"#);
        assert!(reply.calls.is_empty());
        assert_eq!(
            reply.failures[0].message,
            "arguments of `x` must be a JSON object, got a number"
        );
        assert_eq!(reply.failures[0].tool.as_deref(), Some("x"));

        let text = parse(r#"{"name": "y", "arguments": "not json"}"#);
        assert_eq!(text.failures.len(), 1);
        assert!(text.failures[0].message.starts_with(
            "arguments of `y` must be a JSON object, got a string that is not a JSON object"
        ));
        assert_eq!(
            text.failures[0].fragment,
            r#"{"name": "y", "arguments": "not json"}"#
        );

        let list = parse(r#"{"name": "z", "arguments": "[1]"}"#);
        assert!(list.failures[0]
            .message
            .ends_with("got a string holding an array"));
    }

    #[test]
    fn missing_or_null_arguments_become_empty_object() {
        let reply = parse(
            r#"<tool_call>{"name": "now"}</tool_call><tool_call>{"name": "later", "arguments": null}</tool_call>"#,
        );
        assert_eq!(
            reply.calls,
            vec![call("now", json!({})), call("later", json!({}))]
        );
    }

    #[test]
    fn non_call_json_stays_content() {
        for text in [
            r#"Here is the data: {"city": "Paris", "temp": 21}"#,
            r#"{"name": "Ada", "born": 1815}"#,
            r#"{"name": 3, "arguments": {}}"#,
            r#"{"result": {"name": "x", "arguments": {}}}"#,
            r#"[1, 2, {"name": "x", "arguments": {}}]"#,
        ] {
            let reply = parse(text);
            assert!(reply.calls.is_empty(), "{text}");
            assert!(reply.failures.is_empty(), "{text}");
            assert_eq!(reply.content, text);
        }
    }

    #[test]
    fn prose_with_braces_stays_content() {
        let text = "use {x} here, then [see note] and a } stray { brace";
        let reply = parse(text);
        assert_eq!(reply.content, text);
        assert!(reply.calls.is_empty() && reply.failures.is_empty());
    }

    #[test]
    fn empty_and_blank_input() {
        assert_eq!(parse(""), ParsedReply::default());
        let blank = parse("  \n\t ");
        assert_eq!(blank.content, "");
        assert!(!blank.has_calls());
    }

    #[test]
    fn stray_closing_tag_is_removed() {
        let reply = parse("Done.</tool_call>");
        assert_eq!(reply.content, "Done.");
        assert!(reply.calls.is_empty() && reply.failures.is_empty());
    }

    #[test]
    fn failure_and_call_in_one_reply() {
        let text = "<tool_call>{\"name\": \"good\", \"arguments\": {}}</tool_call>\n<tool_call>{\"name\": \"bad\" \"arguments\": {}}</tool_call>";
        let reply = parse(text);
        assert_eq!(reply.calls, vec![call("good", json!({}))]);
        assert_eq!(reply.failures.len(), 1);
        assert_eq!(reply.failures[0].tool.as_deref(), Some("bad"));
        assert!(
            reply.failures[0].message.contains("expected `,` or `}`"),
            "{}",
            reply.failures[0].message
        );
    }

    #[test]
    fn unicode_around_calls() {
        let reply = parse("Ça va ✓ <tool_call>{\"name\": \"é\", \"arguments\": {\"t\": \"日本\"}}</tool_call> 終わり");
        assert_eq!(reply.calls, vec![call("é", json!({"t": "日本"}))]);
        assert_eq!(reply.content, "Ça va ✓ 終わり");
    }

    #[test]
    fn huge_nesting_does_not_panic() {
        let deep_arrays = "[".repeat(20_000);
        assert_eq!(parse(&deep_arrays).content, deep_arrays);
        let deep_objects = "{\"a\":".repeat(5_000) + "1" + &"}".repeat(5_000);
        assert!(!parse(&deep_objects).has_calls());
        let marked = format!("<tool_call>{}", "[".repeat(10_000));
        let reply = parse(&marked);
        assert_eq!(reply.failures.len(), 1);
        assert!(
            reply.failures[0].message.contains("recursion limit"),
            "{}",
            reply.failures[0].message
        );
    }

    /// A deterministic pseudo-random generator, so failures reproduce.
    struct Lcg(u64);

    impl Lcg {
        fn next(&mut self) -> usize {
            self.0 = self
                .0
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (self.0 >> 33) as usize
        }
    }

    #[test]
    fn random_mixtures_never_panic() {
        const FRAGMENTS: &[&str] = &[
            "<tool_call>",
            "</tool_call>",
            "<|python_tag|>",
            "[TOOL_CALLS]",
            "[ARGS]",
            "[CALL_ID]",
            "```",
            "```json\n",
            "{",
            "}",
            "[",
            "]",
            "\"",
            "\\",
            ":",
            ",",
            ";",
            "\n",
            " ",
            "\"name\"",
            "\"arguments\"",
            "\"parameters\"",
            "\"function\"",
            "\"x\"",
            "42",
            "null",
            "{\"name\": \"t\", \"arguments\": {}}",
            "{\"a\": \"}\"}",
            "é",
            "日本",
            "🦀",
            "\u{0}",
            "prose",
            "\"\\u00e9\"",
            "\"\\\"",
            "tool",
        ];
        let mut rng = Lcg(0x5eed);
        for _ in 0..3_000 {
            let len = rng.next() % 24;
            let text: String = (0..len)
                .map(|_| FRAGMENTS[rng.next() % FRAGMENTS.len()])
                .collect();
            let reply = parse(&text);
            assert_eq!(reply.content, reply.content.trim(), "{text:?}");
            assert!(
                reply
                    .calls
                    .iter()
                    .all(|c| c.arguments.is_object() && !c.name.is_empty()),
                "{text:?}"
            );
            assert!(
                reply.failures.iter().all(|f| !f.message.is_empty()),
                "{text:?}"
            );
        }
    }

    #[test]
    fn random_bytes_never_panic() {
        let mut rng = Lcg(7);
        for _ in 0..500 {
            let len = rng.next() % 64;
            let bytes: Vec<u8> = (0..len).map(|_| (rng.next() % 256) as u8).collect();
            let text = String::from_utf8_lossy(&bytes);
            let reply = parse(&text);
            assert!(reply.content.len() <= text.len());
        }
    }

    /// The reply as it was before [`Json`]: every value read by serde_json
    /// from the offset where it may start to the end of the text.
    fn parse_by_serde_json_alone(text: &str) -> ParsedReply {
        let mut json = Json::new(text);
        json.skim = false;
        scan(json)
    }

    /// What serde_json makes of the text from `pos` on, or its message.
    fn serde_json_at(text: &str, pos: usize) -> Result<(Value, usize), String> {
        first_value(&text[pos..]).map(|(value, len)| (value, pos + len))
    }

    /// What [`Json`] makes of it, in the same terms.
    fn json_at(json: &mut Json, pos: usize) -> Result<(Value, usize), String> {
        json.value_at(pos).map_err(|e| json.describe(pos, e))
    }

    /// Checks [`Json`] against serde_json at every offset of `text` where a
    /// value may start, asking in both orders (a walk from an earlier bracket
    /// answers for later ones, and the other way round). The walks' own
    /// verdicts are checked too: `value_at` would hide a walk that wrongly
    /// says valid, since serde_json then reads the value anyway.
    fn assert_json_agrees(text: &str) {
        let offsets: Vec<usize> = (0..=text.len())
            .filter(|&i| text.is_char_boundary(i))
            .collect();
        let brackets: Vec<usize> = text
            .bytes()
            .enumerate()
            .filter(|(_, b)| matches!(b, b'{' | b'['))
            .map(|(i, _)| i)
            .collect();
        for order in [brackets.clone(), brackets.iter().rev().copied().collect()] {
            let mut walks = Json::new(text);
            for pos in order {
                let verdict = match walks.known(pos) {
                    Some(known) => known,
                    None => walks.skim(pos),
                };
                let expected = match serde_json_at(text, pos) {
                    Ok((_, end)) => Bracketed::Valid { end },
                    Err(_) => Bracketed::Invalid,
                };
                assert_eq!(verdict, expected, "{text:?}: the walk at {pos}");
            }
        }
        let mut forward = Json::new(text);
        for &pos in &offsets {
            assert_eq!(
                json_at(&mut forward, pos),
                serde_json_at(text, pos),
                "{text:?} at {pos}"
            );
        }
        let mut backward = Json::new(text);
        for &pos in offsets.iter().rev() {
            assert_eq!(
                json_at(&mut backward, pos),
                serde_json_at(text, pos),
                "{text:?} at {pos} (backward)"
            );
        }
    }

    #[test]
    fn nesting_at_serde_json_limit() {
        for depth in [1, 126, 127, 128, 129, 300] {
            for (open, close) in [("[", "]"), ("{\"a\":", "}")] {
                let closed = format!("{}1{}", open.repeat(depth), close.repeat(depth));
                let unclosed = format!("{}1", open.repeat(depth));
                let mixed = format!("[{{\"k\": {closed}}}, {closed}] {unclosed}");
                for text in [closed, unclosed, mixed] {
                    assert_json_agrees(&text);
                    assert_eq!(parse(&text), parse_by_serde_json_alone(&text));
                }
            }
        }
        // 127 levels are a value; 128 are not, and serde_json says why.
        let at_limit = format!("{}{}", "[".repeat(127), "]".repeat(127));
        assert_eq!(
            Json::new(&at_limit).value_at(0).map(|v| v.1).ok(),
            Some(254)
        );
        let over = format!("[{at_limit}]");
        let mut json = Json::new(&over);
        let error = json.value_at(0).unwrap_err();
        assert!(json.describe(0, error).contains("recursion limit"));
        assert_eq!(json.value_at(1).map(|v| v.1).ok(), Some(255));
    }

    #[test]
    fn strings_numbers_and_words_as_serde_json_reads_them() {
        let scalars = [
            r#""plain""#,
            r#""é 日本 🦀""#,
            r#""\"\\\/\b\f\n\r\t""#,
            r#""\u00e9\ud83e\udd80""#,
            r#""\ud800""#,
            r#""\udc00x""#,
            r#""\ud800\u0041""#,
            r#""\u12""#,
            r#""\x""#,
            "\"tab\tinside\"",
            "\"nul\u{0}inside\"",
            "\"del\u{7f}inside\"",
            r#""unterminated"#,
            r#""escaped end\""#,
            "0",
            "-0",
            "01",
            "-",
            "1.",
            ".5",
            "1e",
            "1e+5",
            "1E-5",
            "-12.5e3",
            "1e400",
            "-1e400",
            "1e-400",
            "18446744073709551615",
            "18446744073709551616",
            "-9223372036854775809",
            "123456789012345678901234567890",
            "1.7976931348623157e308",
            "1.7976931348623159e308",
            "1+2",
            "1-2",
            "true",
            "false",
            "null",
            "tru",
            "nulll",
            "True",
            "NaN",
            "Infinity",
        ];
        for scalar in scalars {
            for text in [
                format!("[{scalar}]"),
                format!("[1, {scalar}, 2]"),
                format!("{{\"k\": {scalar}}}"),
                format!("{{{scalar}: 1}}"),
                format!("[{scalar} ]"),
                format!("[{scalar}x]"),
                format!("<tool_call>{scalar}</tool_call>"),
                format!("[TOOL_CALLS]f[ARGS]{{\"a\": {scalar}}}"),
            ] {
                assert_json_agrees(&text);
                assert_eq!(parse(&text), parse_by_serde_json_alone(&text), "{text:?}");
            }
        }
    }

    #[test]
    fn structure_as_serde_json_reads_it() {
        for text in [
            "[]",
            "{}",
            "[,]",
            "[1,]",
            "[1 2]",
            "{,}",
            "{\"a\"}",
            "{\"a\" 1}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{\"a\":1 \"b\":2}",
            "{1:2}",
            "{\"a\":1]",
            "[1}",
            "[\n\t\r 1 ,\n2\r]",
            "[\u{a0}1]",
            "[\u{c}1]",
            "{\"a\":{\"b\":[{}]}} trailing",
            "[[[]]",
            "]]][[[",
            "{\"a\":\"}\"}",
            "{\"a\":\"\\\"}\"}",
        ] {
            assert_json_agrees(text);
            assert_eq!(parse(text), parse_by_serde_json_alone(text), "{text:?}");
        }
    }

    use proptest::prelude::*;

    /// `cases` cases, times `ZOO_PROPTEST_SCALE` when it is set (the full
    /// test run sets it for a longer search); failures are kept in the
    /// committed `proptest-regressions/` and replayed first.
    fn proptest_config(cases: u32) -> ProptestConfig {
        let scale = std::env::var("ZOO_PROPTEST_SCALE")
            .ok()
            .and_then(|s| s.parse::<u32>().ok())
            .unwrap_or(1);
        ProptestConfig {
            cases: cases.saturating_mul(scale.max(1)),
            failure_persistence: Some(Box::new(
                proptest::test_runner::FileFailurePersistence::Direct(
                    "proptest-regressions/parser.txt",
                ),
            )),
            ..ProptestConfig::default()
        }
    }

    /// Pieces of markup, JSON and prose, glued at random: mostly broken,
    /// sometimes whole calls.
    fn fragments() -> impl Strategy<Value = String> {
        const PIECES: &[&str] = &[
            "<tool_call>",
            "</tool_call>",
            "<|python_tag|>",
            "[TOOL_CALLS]",
            "[ARGS]",
            "[CALL_ID]",
            "```",
            "```json\n",
            "{",
            "}",
            "[",
            "]",
            "\"",
            "\\",
            ":",
            ",",
            ";",
            "\n",
            " ",
            "\t",
            "\"name\"",
            "\"arguments\"",
            "\"parameters\"",
            "\"function\"",
            "\"x\"",
            "42",
            "-1.5e3",
            "1e999",
            "01",
            "-",
            "true",
            "null",
            "fals",
            "{\"name\": \"t\", \"arguments\": {}}",
            "{\"a\": \"}\"}",
            "é",
            "日本",
            "🦀",
            "\u{0}",
            "\u{1f}",
            "prose",
            "\"\\u00e9\"",
            "\"\\ud800\"",
            "\\u",
            "\\ud83e\\udd80",
            "\"\\\"",
            "f",
            "\"name\":",
            "[1]",
            "{}",
            "[]",
            "[[",
            "]]",
            "{\"",
            "\\n",
        ];
        prop::collection::vec(prop::sample::select(PIECES), 0..48).prop_map(|p| p.concat())
    }

    /// JSON text of any shape (with calls among it), spaced at random.
    fn json_text() -> impl Strategy<Value = String> {
        let space = prop::sample::select(vec!["", " ", "\n", " \t\r "]);
        let leaf = prop_oneof![
            prop::sample::select(vec![
                "0",
                "-1",
                "3.25",
                "1e5",
                "-0.5E-3",
                "12345678901234567890",
                "1e400",
                "true",
                "false",
                "null",
                "\"\"",
                "\"a\\\"b\"",
                "\"\\u00e9\\ud83e\\udd80\"",
                "\"\\ud800\"",
                "\"<tool_call>{[\"",
                "\"é\\n\"",
                "{\"name\": \"t\", \"arguments\": {}}",
                "{\"name\": \"u\", \"parameters\": {\"x\": [1]}}",
                "{\"function\": {\"name\": \"f\", \"arguments\": \"{}\"}}",
            ])
            .prop_map(str::to_string),
            "\"[a-z{}\\[\\] ]{0,6}\"",
        ];
        leaf.prop_recursive(5, 48, 4, move |inner| {
            let space = space.clone();
            prop_oneof![
                (
                    prop::collection::vec((inner.clone(), space.clone()), 0..4),
                    space.clone()
                )
                    .prop_map(|(items, s)| {
                        let items: Vec<String> = items
                            .into_iter()
                            .map(|(v, s2)| format!("{s}{v}{s2}"))
                            .collect();
                        format!("[{}]", items.join(","))
                    }),
                prop::collection::vec(
                    (
                        prop::sample::select(vec![
                            "name",
                            "arguments",
                            "parameters",
                            "function",
                            "type",
                            "a",
                        ]),
                        inner,
                        space,
                    ),
                    0..4,
                )
                .prop_map(|entries| {
                    let entries: Vec<String> = entries
                        .into_iter()
                        .map(|(k, v, s)| format!("{s}\"{k}\"{s}:{s}{v}{s}"))
                        .collect();
                    format!("{{{}}}", entries.join(","))
                }),
            ]
        })
    }

    /// JSON values behind markers, fences and prose, then damaged: a few
    /// bytes removed, doubled or replaced by JSON punctuation.
    fn damaged_json() -> impl Strategy<Value = String> {
        let before = prop::sample::select(vec![
            "",
            "<tool_call>",
            "</tool_call>",
            "<|python_tag|>",
            "[TOOL_CALLS]",
            "[TOOL_CALLS]f[ARGS]",
            "```json\n",
            "```",
            "prose ",
            "\n",
        ]);
        let edit = (
            any::<prop::sample::Index>(),
            0..3u8,
            prop::sample::select(b"{}[]\",: \\x1-e".to_vec()),
        );
        (
            prop::collection::vec((before, json_text()), 1..4),
            prop::collection::vec(edit, 0..3),
        )
            .prop_map(|(parts, edits)| {
                let mut bytes: Vec<u8> = parts
                    .into_iter()
                    .flat_map(|(before, json)| [before.to_string(), json])
                    .collect::<String>()
                    .into_bytes();
                for (at, kind, byte) in edits {
                    if bytes.is_empty() {
                        break;
                    }
                    let at = at.index(bytes.len());
                    match kind {
                        0 => {
                            bytes.remove(at);
                        }
                        1 => bytes.insert(at, byte),
                        _ => bytes.insert(at, bytes[at]),
                    }
                }
                String::from_utf8_lossy(&bytes).into_owned()
            })
    }

    proptest! {
        #![proptest_config(proptest_config(256))]

        /// What is accepted, found and reported is what reading every value
        /// with serde_json alone gives, so the linear reading changes nothing.
        #[test]
        fn parse_agrees_with_serde_json_alone(text in prop_oneof![fragments(), damaged_json()]) {
            prop_assert_eq!(parse(&text), parse_by_serde_json_alone(&text));
        }

        /// [`Json`] answers exactly as serde_json at every offset, in any order.
        #[test]
        fn json_agrees_with_serde_json_everywhere(text in prop_oneof![fragments(), damaged_json()]) {
            assert_json_agrees(&text);
        }
    }
}
