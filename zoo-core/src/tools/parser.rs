//! Tool-call parsing: finds the calls in a model's raw output, in whichever
//! format the model wrote them, and keeps the prose around them.
//!
//! The text is scanned once, left to right, for places where a call can begin:
//! an explicit marker (`<tool_call>`, `<|python_tag|>`, `[TOOL_CALLS]`), a
//! code fence, or a bare `{` / `[`. After a marker, whatever follows was meant
//! as a call, so anything unreadable becomes a [`ParseFailure`] that goes back
//! to the model. Bare JSON counts only when it is shaped like a call, so that
//! ordinary JSON and braces in prose stay content. Where a JSON value ends is
//! always left to serde_json, so nesting, strings and escapes cannot fool it.

use std::sync::LazyLock;

use regex::Regex;
use serde_json::{Map, Value};

use super::validate::kind_of;

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
    let mut reply = ParsedReply::default();
    let mut prose: Vec<&str> = Vec::new();
    let mut prose_start = 0;
    let mut pos = 0;
    while let Some(found) = CANDIDATE.find_at(text, pos) {
        let at = found.start();
        match read_candidate(text, at, found.as_str()) {
            Found::Prose { end } => pos = end,
            Found::Block(block) => {
                prose.push(&text[prose_start..at]);
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
const FENCE: &str = "```";

/// Shown in messages so the model sees the shape it should have written.
const EXPECTED_SHAPE: &str = r#"expected {"name": "<tool>", "arguments": {...}}"#;

/// Every place a call can begin. Markers come before `[` so that
/// `[TOOL_CALLS]` wins over a bare array starting at the same byte.
static CANDIDATE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<tool_call>|</tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]|```|[{\[]")
        .expect("candidate regex is valid")
});

/// The markers that open a call; an unreadable call ends at the next one.
static OPENING_MARKER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"<tool_call>|<\|python_tag\|>|\[TOOL_CALLS\]").expect("marker regex is valid")
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
    end: usize,
    calls: Vec<ParsedCall>,
    failures: Vec<ParseFailure>,
}

impl Block {
    fn new(end: usize) -> Self {
        Block {
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

fn read_candidate(text: &str, at: usize, matched: &str) -> Found {
    match matched {
        HERMES_OPEN => Found::Block(read_marked(text, at, HERMES_OPEN, Some(HERMES_CLOSE))),
        PYTHON_TAG => Found::Block(read_marked(text, at, PYTHON_TAG, None)),
        MISTRAL_CALLS => Found::Block(read_mistral(text, at)),
        // A closing tag whose call was already read (several calls in one
        // block, or junk before the tag) is markup, not prose.
        HERMES_CLOSE => Found::Block(Block::new(at + HERMES_CLOSE.len())),
        FENCE => read_fence(text, at),
        _ => read_bare(text, at),
    }
}

/// Reads the JSON call(s) after an explicit marker: one value, or several
/// separated by whitespace, `;` or `,`, then the closing tag if the format
/// has one. A missing closing tag is tolerated because models stop at EOS.
fn read_marked(text: &str, at: usize, open: &str, close: Option<&str>) -> Block {
    let body = at + open.len();
    let mut values: Vec<(usize, usize, Value)> = Vec::new();
    let mut pos = skip_whitespace(text, body);
    loop {
        let value_end = match first_value(&text[pos..]) {
            Ok((value, len)) => {
                values.push((pos, pos + len, value));
                pos + len
            }
            Err(error) if values.is_empty() => return unreadable(text, at, open, close, error),
            // Only the first value is owed to the marker; later text that is
            // not JSON is left to the scanner.
            Err(_) => break,
        };
        pos = skip_separators(text, value_end);
        if !starts_named_object(&text[pos..]) {
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

/// Whether `text` starts with a JSON object that has a string name. Values
/// after the first one in a marked block are taken only then, so prose after
/// an unclosed call (say a `[1]` footnote) is not mistaken for a broken call.
fn starts_named_object(text: &str) -> bool {
    text.starts_with('{') && first_value(text).is_ok_and(|(value, _)| call_shape(&value).is_ok())
}

/// A marker followed by text that is not JSON. The failed call runs to its
/// closing tag when it has one, else to the next marker or the end of text.
fn unreadable(text: &str, at: usize, open: &str, close: Option<&str>, error: String) -> Block {
    let body = at + open.len();
    let end = unreadable_end(text, body, close);
    let fragment = &text[at..end];
    let inside = &text[body..end];
    let inside = close.and_then(|c| inside.strip_suffix(c)).unwrap_or(inside);
    // Parsing only the call's own text reports the error where the call ends
    // (e.g. "EOF while parsing an object") rather than at the closing tag.
    let message = match first_value(inside) {
        _ if inside.trim().is_empty() => format!("nothing follows {open}: {EXPECTED_SHAPE}"),
        Err(error) => format!("the call after {open} is not valid JSON: {error}"),
        // Only a number glued to the tag parses alone but not before the tag.
        Ok(_) => format!("the call after {open} is not a JSON object ({error}); {EXPECTED_SHAPE}"),
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

/// `[TOOL_CALLS]` followed by a JSON list (older Mistral) or by one or more
/// `name[ARGS]{...}` (newer Mistral).
fn read_mistral(text: &str, at: usize) -> Block {
    let body = at + MISTRAL_CALLS.len();
    if text[skip_whitespace(text, body)..].starts_with(['[', '{']) {
        return read_marked(text, at, MISTRAL_CALLS, None);
    }
    let mut block = Block::new(body);
    let mut from = at;
    let mut pos = body;
    while let Some(head) = MISTRAL_NAMED.captures(&text[pos..]) {
        let name = head.get(1).map_or("", |m| m.as_str()).to_string();
        let args = pos + head.get(0).map_or(0, |m| m.end());
        match first_value(&text[args..]) {
            Ok((value, len)) => {
                pos = args + len;
                let reading = build_call(&name, Some(&value), &value);
                block.record(vec![reading], &text[from..pos]);
            }
            Err(error) => {
                pos = unreadable_end(text, args, None);
                let message = format!(
                    "the arguments of `{name}` after {MISTRAL_CALLS}{name}[ARGS] are not valid JSON: {error}"
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
fn read_fence(text: &str, at: usize) -> Found {
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
        match first_value(&text[pos..])
            .ok()
            .and_then(|(value, len)| Some((bare_readings(&value)?, len)))
        {
            Some((found, len)) => {
                readings.extend(found);
                pos = skip_separators(text, pos + len);
            }
            None => break None,
        }
    };

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

/// A `{` or `[` in the text: a call if it starts call-shaped JSON, else prose.
/// A failed attempt moves on by one byte, so text inside it is tried again;
/// serde_json's recursion limit (128) bounds how often a byte is reread.
fn read_bare(text: &str, at: usize) -> Found {
    match first_value(&text[at..]) {
        Ok((value, len)) => match bare_readings(&value) {
            Some(readings) => {
                let mut block = Block::new(at + len);
                block.record(readings, &text[at..at + len]);
                Found::Block(block)
            }
            // Skipping the whole value keeps calls quoted inside ordinary
            // JSON (a result, an example) from being picked out of it.
            None => Found::Prose { end: at + len },
        },
        // Both `{` and `[` are one byte, so this stays on a char boundary.
        Err(_) => Found::Prose { end: at + 1 },
    }
}

/// Reads a value that followed a marker. Every element must be a call, and
/// any that is not becomes a failure.
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
        Value::Array(items) if items.is_empty() => vec![Err(Problem {
            tool: None,
            message: format!("the list after {marker} holds no call; {EXPECTED_SHAPE}"),
            element: value.to_string(),
        })],
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
/// bytes up to its end. serde_json decides where the value ends.
fn first_value(text: &str) -> Result<(Value, usize), String> {
    let mut stream = serde_json::Deserializer::from_str(text).into_iter::<Value>();
    match stream.next() {
        Some(Ok(value)) => Ok((value, stream.byte_offset())),
        Some(Err(error)) => Err(error.to_string()),
        None => Err("EOF while parsing a value".to_string()),
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
}
