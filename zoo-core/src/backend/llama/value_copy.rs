//! Argument values copied whole from the question.
//!
//! A small model fills a call's values with plausible text that is not the
//! user's: `USD` where the question says `GBP`, `19` and `45` swapped,
//! `living_room` for "living room". Pulling single tokens toward the
//! question ([`super::ArgumentBias`]) cannot make a whole value: SmolLM2
//! writes `45` as `4`, `5`, and a pull on `4` and `5` wrote `5`. Here, where
//! a call's string or number value begins, each span of the user's message
//! is scored as the whole value (its tokens, then the value's end) and so
//! is the value the model would write itself, read ahead greedily; a span
//! within [`ValueCopy::margin`] nats of the model's own is written instead.
//!
//! The model still says which span: the scores compare what it means with
//! what the user wrote. A long value of the model's own (file content, a
//! command it composes, or a runaway: "topic": "Giraffes are herbivores,
//! and ...") is replaced only by a span likelier than the text it began
//! (its first [`MAX_OWN_TOKENS`] tokens), with no margin. Enums are left to
//! the grammar unless the question names an option, and values after a tool
//! result (they come from the result) and questions longer than
//! [`MAX_QUESTION_WORDS`] are left alone.

use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;
use serde_json::Value;

use super::word_match::{is_stop_word, same_word, words};
use super::{log_softmax_at, vocab_tokens_where, LlamaBackend};
use crate::error::{Error, Result};
use crate::message::{Message, Role};
use crate::tools::{CallSyntax, ToolDefinition};

/// How far a span of the question may score below the model's own value
/// and still be written instead of it, in nats.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ValueCopy {
    /// A span is written when its score is at least the model's own value's
    /// minus this. Negative infinity: never ([`ValueCopy::OFF`]).
    pub margin: f32,
    /// Nats added to the score of the code that comes next in the question
    /// after the value written last, where the model's own value is another
    /// code of its form that the question does not name before it: users
    /// name codes in the order the call takes them ("Change 1200 CHF into
    /// EUR": `from` is the currency right after the amount), and a small
    /// model swaps or guesses them.
    pub in_order: f32,
}

impl ValueCopy {
    /// No copying: the model writes every value itself.
    pub const OFF: ValueCopy = ValueCopy {
        margin: f32::NEG_INFINITY,
        in_order: 0.0,
    };

    /// Whether no span can ever be written.
    pub fn is_off(&self) -> bool {
        self.margin == f32::NEG_INFINITY
    }
}

/// The longest question whose spans are scored, in words: each value costs
/// one short decode per span, and spans grow with the square of the words.
pub const MAX_QUESTION_WORDS: usize = 64;
/// The most words one span holds.
const MAX_SPAN_WORDS: usize = 6;
/// The longest value of the model's own, in tokens, that a span may
/// replace within the margin: past it, the model is writing free text.
const MAX_OWN_TOKENS: usize = 12;
/// The logit bias that makes the sampler write a chosen span's next token
/// (the grammar can still refuse it; the copy then stops there).
pub(super) const WRITE_BIAS: f32 = 1000.0;

/// What kind of value begins where a call's text ends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum ValueKind {
    /// A free string (no enum), its opening quote written.
    Text,
    /// A JSON number.
    Number,
    /// A JSON integer.
    Integer,
    /// One of these strings (an enum), its opening quote written.
    Choice(Vec<String>),
}

/// The user's message when a call's values may be copied from it: the last
/// message is the user's (no tool has answered in this turn) and it is
/// short enough to score.
pub(super) fn question(messages: &[Message]) -> Option<&str> {
    match messages.last() {
        Some(m) if m.role == Role::User => {
            Some(m.content.as_str()).filter(|q| q.split_whitespace().count() <= MAX_QUESTION_WORDS)
        }
        _ => None,
    }
}

/// Where a reply that has begun a call stands in the call's arguments.
pub(super) struct OpenCall<'t, 'a> {
    /// The tool called.
    tool: &'t ToolDefinition,
    /// The text after its name.
    args: &'a str,
    /// Whether the text ends inside a string.
    in_string: bool,
}

/// The call `text` (a reply that has begun one) is inside the arguments
/// of, at their top level. `None` inside a nested value, once the call has
/// closed (a second call's `"name": "` is no argument of the first), and in
/// the syntaxes other than JSON and Python.
pub(super) fn open_arguments<'t, 'a>(
    text: &'a str,
    syntax: CallSyntax,
    tools: &'t [ToolDefinition],
) -> Option<OpenCall<'t, 'a>> {
    let opened = match syntax {
        CallSyntax::Json => 0,
        CallSyntax::Python => 1,
        CallSyntax::FunctionGemma | CallSyntax::Harmony => return None,
    };
    let (tool, args) = last_named_tool(text, syntax, tools)?;
    let (depth, in_string) = scan(args, opened);
    (depth == 1).then_some(OpenCall {
        tool,
        args,
        in_string,
    })
}

/// Whether the arguments `args` of `tool` end where a value of a kind the
/// question may hold begins, and which kind: a quoted string or a number.
pub(super) fn value_site(
    args: &str,
    syntax: CallSyntax,
    tool: &ToolDefinition,
) -> Option<ValueKind> {
    let (rest, quoted) = match args.strip_suffix('"') {
        Some(rest) => (rest, true),
        None => (args.trim_end(), false),
    };
    let rest = rest.trim_end().strip_suffix(assign(syntax))?.trim_end();
    let key = match syntax {
        CallSyntax::Json => {
            let rest = rest.strip_suffix('"')?;
            &rest[rest.rfind('"')? + 1..]
        }
        _ => {
            let start = rest
                .rfind(|c: char| !(c.is_alphanumeric() || c == '_'))
                .map_or(0, |i| i + 1);
            let before = rest[..start].trim_end();
            if !(before.is_empty() || before.ends_with(',')) {
                return None;
            }
            &rest[start..]
        }
    };
    let schema = tool.parameters.get("properties")?.get(key)?;
    kind_of(schema, quoted)
}

/// What joins a key to its value.
fn assign(syntax: CallSyntax) -> char {
    match syntax {
        CallSyntax::Python => '=',
        _ => ':',
    }
}

/// The kind of value `schema` asks for, where the question may hold it.
fn kind_of(schema: &Value, quoted: bool) -> Option<ValueKind> {
    if let Some(options) = schema.get("enum").and_then(Value::as_array) {
        let options: Option<Vec<String>> = options
            .iter()
            .map(|o| o.as_str().map(str::to_string))
            .collect();
        return options.filter(|_| quoted).map(ValueKind::Choice);
    }
    match (schema.get("type")?.as_str()?, quoted) {
        ("string", true) => Some(ValueKind::Text),
        ("number", false) => Some(ValueKind::Number),
        ("integer", false) => Some(ValueKind::Integer),
        _ => None,
    }
}

/// The one option of an enum the question names (a word of it, any case),
/// if exactly one: "Multiply 12.5 by 4" names `multiply` of `add`,
/// `subtract`, `multiply`, `divide`.
fn named_option<'o>(question: &str, options: &'o [String]) -> Option<&'o str> {
    let asked = words(question);
    let mut named = options.iter().filter(|option| {
        let option = words(option);
        !option.is_empty() && option.iter().all(|o| asked.iter().any(|a| same_word(a, o)))
    });
    match (named.next(), named.next()) {
        (Some(one), None) => Some(one.as_str()),
        _ => None,
    }
}

/// The texts that would write a figure of the question no value holds yet
/// into a number parameter of `tool` not yet written (`, "quantity": 12`),
/// for arguments `args` about to close. Small models close the arguments
/// after the required ones: "Put 12 eggs on my shopping list" became
/// `{"item": "eggs"}`. A figure the user wrote is meant for the call.
/// `close` is what must come first: the closing quote when the arguments
/// close right after a string (SmolLM2 ends `"eggs` with one `"}` token).
fn left_out_figures(
    question: &str,
    args: &str,
    close: &str,
    syntax: CallSyntax,
    tool: &ToolDefinition,
) -> Vec<String> {
    let used = figures(args, false);
    let unused: Vec<String> = figures(question, false)
        .into_iter()
        .filter(|f| !used.iter().any(|u| same_figure(u, f)))
        .collect();
    additions(args, close, syntax, tool, |schema| {
        let whole_only = match kind_of(schema, false) {
            Some(ValueKind::Number) => false,
            Some(ValueKind::Integer) => true,
            _ => return Vec::new(),
        };
        let fits = |f: &&String| !(whole_only && f.contains('.'));
        unused.iter().filter(fits).cloned().collect()
    })
}

/// The texts that would write a code of the question no value holds yet
/// (a word with a digit and a letter or sign in it: a date, a flight
/// number) into a free string parameter of `tool` not yet written
/// (`, "date": "2026-12-20`), for arguments `args` about to close. As with a
/// figure, a code the user wrote is meant for the call: "Are there flights
/// from New York to London on 2026-12-20?" closed after the destination.
/// `close` is as for [`left_out_figures`].
fn left_out_codes(
    question: &str,
    args: &str,
    close: &str,
    syntax: CallSyntax,
    tool: &ToolDefinition,
) -> Vec<String> {
    let held = args.to_lowercase();
    let unused: Vec<&str> = codes(question)
        .into_iter()
        .filter(|code| !held.contains(&code.to_lowercase()))
        .collect();
    additions(args, close, syntax, tool, |schema| {
        match kind_of(schema, true) == Some(ValueKind::Text) {
            true => unused.iter().map(|code| format!("\"{code}")).collect(),
            false => Vec::new(),
        }
    })
}

/// The texts that would add a parameter of `tool` not yet written to the
/// arguments `args` about to close (`close` first), one for each value
/// `values_for` gives the parameter's schema, as the value is written.
fn additions(
    args: &str,
    close: &str,
    syntax: CallSyntax,
    tool: &ToolDefinition,
    values_for: impl Fn(&Value) -> Vec<String>,
) -> Vec<String> {
    let Some(properties) = tool.parameters.get("properties").and_then(Value::as_object) else {
        return Vec::new();
    };
    let opens = args.trim_end().ends_with(['{', '(']);
    let comma = if opens { "" } else { ", " };
    let mut out = Vec::new();
    for (key, schema) in properties {
        if written(args, key, syntax) {
            continue;
        }
        for value in values_for(schema) {
            out.push(match syntax {
                CallSyntax::Python => format!("{close}{comma}{key}={value}"),
                _ => format!("{close}{comma}\"{key}\": {value}"),
            });
        }
    }
    out
}

/// The words of `question` that are codes: a digit and something else that
/// is not a figure's (`2026-12-20`, `BA117`; not `45` or `1,250.5`), trimmed
/// of the punctuation around them, with nothing a string must escape.
fn codes(question: &str) -> Vec<&str> {
    question
        .split_whitespace()
        .map(|w| w.trim_matches(|c: char| !c.is_alphanumeric()))
        .filter(|w| {
            w.contains(|c: char| c.is_ascii_digit())
                && w.contains(|c: char| !(c.is_ascii_digit() || c == '.' || c == ','))
                && w.chars()
                    .all(|c| c.is_alphanumeric() || "-/:._+".contains(c))
        })
        .collect()
}

/// Whether `args` already holds a value for `key`.
fn written(args: &str, key: &str, syntax: CallSyntax) -> bool {
    let named = match syntax {
        CallSyntax::Python => key.to_string(),
        _ => format!("\"{key}\""),
    };
    args.match_indices(&named).any(|(at, _)| {
        args[at + named.len()..]
            .trim_start()
            .starts_with(assign(syntax))
    })
}

/// Whether two figures are the same number (`12` and `12.0`).
fn same_figure(a: &str, b: &str) -> bool {
    matches!((a.parse::<f64>(), b.parse::<f64>()), (Ok(x), Ok(y)) if x == y)
}

/// The question after the value `args` wrote last, lowercase, from its
/// next word that is not a stop word: where the user's next value should
/// begin. `None` before the first value, or when the last one is not the
/// question's.
fn next_in_question(question: &str, args: &str, syntax: CallSyntax) -> Option<String> {
    let last = written_values(args, syntax).pop()?.to_lowercase();
    let question = question.to_lowercase();
    let mut rest = &question[question.find(&last)? + last.len()..];
    loop {
        rest = rest.trim_start_matches(|c: char| !c.is_alphanumeric());
        let word = rest.split_whitespace().next()?;
        if !is_stop_word(word.trim_matches(|c: char| !c.is_alphanumeric())) {
            return Some(rest.to_string());
        }
        rest = &rest[word.len()..];
    }
}

/// Where the user's next value should begin, for the in-order bonus
/// ([`ValueCopy::in_order`]).
struct InOrder<'q> {
    /// The user's message.
    question: &'q str,
    /// The question after the value written last (see [`next_in_question`]).
    next: Option<String>,
}

impl InOrder<'_> {
    /// The bonus of each of `candidates`: `bonus` for the code (see
    /// [`is_code`]) that comes next in the question when the model's own
    /// value `own` is another code of its form (three letters; two letters
    /// and three digits) the question does not name before it:
    /// "How much is 75.5 CAD in USD?" gave `from: USD`, and "Exchange 500
    /// SEK to NOK" `from: NOK` after a guessed `USD`. Codes (currencies,
    /// airports) are what users list in the order a call takes them ("from
    /// X to Y"); words are not ("a 25 minute timer called pasta": the label
    /// is not "minute").
    fn bonuses(&self, candidates: &[String], own: &str, bonus: f32) -> Vec<f32> {
        let none = vec![0.0; candidates.len()];
        let Some(next) = &self.next else {
            return none;
        };
        let question = self.question.to_lowercase();
        let next_at = question.len() - next.len();
        let named_before = question
            .find(&own.to_lowercase())
            .is_some_and(|at| at <= next_at);
        if !is_code(own) || begins_with(next, own) || named_before {
            return none;
        }
        candidates
            .iter()
            .map(
                |span| match same_form(span, own) && begins_with(next, span) {
                    true => bonus,
                    false => 0.0,
                },
            )
            .collect()
    }
}

/// Whether `a` and `b` are codes of one form: letters and digits at the
/// same places (`CAD` and `USD`; not `US` and `USD`).
fn same_form(a: &str, b: &str) -> bool {
    is_code(a)
        && is_code(b)
        && a.len() == b.len()
        && a.chars()
            .zip(b.chars())
            .all(|(x, y)| x.is_ascii_digit() == y.is_ascii_digit())
}

/// Whether `value` is written as a code: two to eight capital letters and
/// digits, a letter among them (`USD`, `LHR`, `BA117`).
fn is_code(value: &str) -> bool {
    (2..=8).contains(&value.len())
        && value
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit())
        && value.chars().any(|c| c.is_ascii_uppercase())
}

/// Whether `next` (lowercase) begins with the words of `span`.
fn begins_with(next: &str, span: &str) -> bool {
    next.strip_prefix(&span.to_lowercase())
        .is_some_and(|after| !after.starts_with(char::is_alphanumeric))
}

/// The values `args` holds whole (a string's text without its quotes, a
/// number or literal as written), in order.
fn written_values(args: &str, syntax: CallSyntax) -> Vec<&str> {
    #[derive(Clone, Copy)]
    enum State {
        Key,
        KeyString,
        Assigned,
        Text(usize),
        Bare(usize),
    }
    let mut state = State::Key;
    let mut escaped = false;
    let mut out = Vec::new();
    for (i, c) in args.char_indices() {
        state = match state {
            State::KeyString | State::Text(_) if escaped => {
                escaped = false;
                state
            }
            State::KeyString | State::Text(_) if c == '\\' => {
                escaped = true;
                state
            }
            State::KeyString if c == '"' => State::Key,
            State::Text(start) if c == '"' => {
                out.push(&args[start..i]);
                State::Key
            }
            State::Key if c == '"' => State::KeyString,
            State::Key if c == assign(syntax) => State::Assigned,
            State::Assigned if c.is_whitespace() => State::Assigned,
            State::Assigned if c == '"' => State::Text(i + 1),
            State::Assigned if matches!(c, '{' | '[' | '(') => State::Key,
            State::Assigned => State::Bare(i),
            State::Bare(start) if c.is_whitespace() || matches!(c, ',' | '}' | ')' | ']') => {
                out.push(&args[start..i]);
                State::Key
            }
            state => state,
        };
    }
    out
}

/// The tool whose call `text` is writing (the one named last), and the
/// text after its name.
fn last_named_tool<'t, 'a>(
    text: &'a str,
    syntax: CallSyntax,
    tools: &'t [ToolDefinition],
) -> Option<(&'t ToolDefinition, &'a str)> {
    tools
        .iter()
        .filter_map(|tool| {
            let named = match syntax {
                CallSyntax::Python => format!("{}(", tool.name),
                _ => format!("\"{}\"", tool.name),
            };
            text.rfind(&named).map(|at| (at + named.len(), tool))
        })
        .max_by_key(|(end, _)| *end)
        .map(|(end, tool)| (tool, &text[end..]))
}

/// How many brackets are open at the end of `text` (`opened` at its
/// start; brackets inside strings not counted), and whether it ends inside
/// a string.
fn scan(text: &str, opened: i32) -> (i32, bool) {
    let mut depth = opened;
    let mut in_string = false;
    let mut escaped = false;
    for c in text.chars() {
        match (in_string, c) {
            (true, _) if escaped => escaped = false,
            (true, '\\') => escaped = true,
            (_, '"') => in_string = !in_string,
            (false, '{' | '[' | '(') => depth += 1,
            (false, '}' | ']' | ')') => depth -= 1,
            _ => {}
        }
    }
    (depth, in_string)
}

/// The values of `kind` that `question` holds: for text, every run of up
/// to [`MAX_SPAN_WORDS`] words that neither begins nor ends with a stop
/// word, trimmed of the punctuation around it; for numbers, each figure
/// (`1,250` read as `1250`; for integers, only whole ones).
pub(super) fn spans(question: &str, kind: &ValueKind) -> Vec<String> {
    let mut out: Vec<String> = match kind {
        ValueKind::Text => text_spans(question),
        ValueKind::Number => figures(question, false),
        ValueKind::Integer => figures(question, true),
        ValueKind::Choice(_) => Vec::new(),
    };
    let mut seen = std::collections::HashSet::new();
    out.retain(|span| seen.insert(span.clone()));
    out
}

fn text_spans(question: &str) -> Vec<String> {
    // Each word's byte range with the punctuation around it trimmed.
    let words: Vec<(usize, usize)> = question
        .split_whitespace()
        .map(|w| {
            let start = w.as_ptr() as usize - question.as_ptr() as usize;
            let trimmed = w.trim_matches(|c: char| !c.is_alphanumeric());
            let lead = trimmed.as_ptr() as usize - w.as_ptr() as usize;
            (start + lead, start + lead + trimmed.len())
        })
        .collect();
    let content = |&(a, b): &(usize, usize)| b > a && !is_stop_word(&question[a..b]);
    let mut out = Vec::new();
    for (i, first) in words.iter().enumerate().filter(|(_, w)| content(w)) {
        for last in words[i..]
            .iter()
            .take(MAX_SPAN_WORDS)
            .filter(|w| content(w))
        {
            let span = &question[first.0..last.1];
            // What a JSON string cannot hold as it is.
            if !span.contains(|c: char| c == '"' || c == '\\' || c.is_control()) {
                out.push(span.to_string());
            }
        }
    }
    out
}

fn figures(question: &str, whole_only: bool) -> Vec<String> {
    let bytes = question.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        // A figure starts at a digit that does not continue a word (`MN55`
        // is a code, not 55).
        let starts = bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric());
        if !starts {
            i += 1;
            continue;
        }
        let mut end = i;
        let mut figure = String::new();
        while end < bytes.len() {
            let c = bytes[end];
            let next_digit = bytes.get(end + 1).is_some_and(u8::is_ascii_digit);
            if c.is_ascii_digit() {
                figure.push(c as char);
            } else if c == b',' && next_digit {
                // A thousands separator.
            } else if c == b'.' && next_digit && !figure.contains('.') {
                figure.push('.');
            } else {
                break;
            }
            end += 1;
        }
        if !(whole_only && figure.contains('.')) {
            out.push(figure);
        }
        i = end.max(i + 1);
    }
    out
}

impl LlamaBackend<'_> {
    /// What to write next, copied from the question, where `text` (a reply
    /// that has begun a call) ends (see the module's text): a span of the
    /// question as the value that begins there, if one scores within the
    /// margin of the value the model would write itself; the enum option
    /// the question names; or, where the arguments are about to close, a
    /// figure of the question no value holds yet, in a number parameter
    /// left out (or else such a code, in a string parameter left out).
    /// Leaves the cache and its logits as they were. `None` when
    /// nothing is to be copied or the abort flag interrupted the scoring.
    ///
    /// The copy comes as steps, each the tokens the next one sampled may
    /// be: the value's own tokens one by one, then, for a span or figure,
    /// the tokens that end it (it was scored as the whole value, and a
    /// model left to go on after it wrote "minutes to set a timer" after a
    /// copied "minutes").
    pub(super) fn copied_value(
        &mut self,
        messages: &[Message],
        tools: &[ToolDefinition],
        text: &str,
    ) -> Result<Option<Vec<Vec<LlamaToken>>>> {
        if self.value_copy.is_off() {
            return Ok(None);
        }
        let Some(question) = question(messages) else {
            return Ok(None);
        };
        let syntax = self.template.tool_call_format().syntax();
        let Some(OpenCall {
            tool,
            args,
            in_string,
        }) = open_arguments(text, syntax, tools)
        else {
            return Ok(None);
        };
        // The candidates, what ends each, and whether the model's own
        // value competes with them.
        let (candidates, closers, own_competes) = match value_site(args, syntax, tool) {
            Some(ValueKind::Choice(options)) => {
                let named = named_option(question, &options);
                let tokens = named.map(|option| self.tokenize(option, false));
                return Ok(tokens.map(|tokens| tokens.into_iter().map(|t| vec![t]).collect()));
            }
            Some(kind @ ValueKind::Text) => (spans(question, &kind), self.string_closers(), true),
            Some(kind) => (spans(question, &kind), self.number_closers(), true),
            None => match self.closes_arguments(args, syntax, in_string) {
                Some(close) => {
                    let figures = left_out_figures(question, args, close, syntax, tool);
                    match figures.is_empty() {
                        false => (figures, self.number_closers(), false),
                        true => {
                            let codes = left_out_codes(question, args, close, syntax, tool);
                            (codes, self.string_closers(), false)
                        }
                    }
                }
                None => return Ok(None),
            },
        };
        if candidates.is_empty() {
            return Ok(None);
        }
        let start = self.ctx.get_logits_ith(-1).to_vec();
        let chosen = match own_competes {
            true => {
                let order = InOrder {
                    question,
                    next: next_in_question(question, args, syntax),
                };
                self.best_span(&start, &candidates, &order, &closers)
            }
            false => self
                .most_likely(&start, &candidates, &[], &closers)
                .map(|best| best.map(|(_, tokens)| tokens)),
        };
        // The scoring decodes overwrote the logits the next token is
        // sampled from: decode the last token again.
        let len = self.cached.len();
        if !self.rewind_to(len)? {
            return Ok(None);
        }
        Ok(chosen?.map(|tokens| {
            let mut steps: Vec<Vec<LlamaToken>> = tokens.into_iter().map(|t| vec![t]).collect();
            steps.push(closers);
            steps
        }))
    }

    /// Whether the model's likeliest next token closes the call's
    /// arguments `args` right after a value (`}` in JSON, `)` in Python, or
    /// the space the grammar admits only before them), and what must be
    /// written before another value can be added: the closing quote when
    /// the text ends `in_string` (SmolLM2 closes `"eggs` with one `"}`
    /// token), or nothing.
    fn closes_arguments(
        &self,
        args: &str,
        syntax: CallSyntax,
        in_string: bool,
    ) -> Option<&'static str> {
        let closer = match syntax {
            CallSyntax::Python => ')',
            _ => '}',
        };
        let next = argmax(self.ctx.get_logits_ith(-1));
        let mut piece = Vec::new();
        self.model
            .llama
            .vocab()
            .token_to_piece_into(next, &mut piece, false, None);
        let piece = String::from_utf8_lossy(&piece);
        let closes = |rest: &str| {
            let rest = rest.trim_start();
            rest.starts_with(closer) || (rest.is_empty() && !piece.is_empty())
        };
        match in_string {
            true => piece
                .strip_prefix('"')
                .is_some_and(|rest| !rest.is_empty() && closes(rest))
                .then_some("\""),
            // Right after a value: a string's closing quote, a figure, a
            // literal or a nested value's end (not after a key, a comma or
            // a space, where no comma may come).
            false => (args.ends_with(|c: char| c == '"' || c.is_alphanumeric() || c == ']')
                && closes(&piece))
            .then_some(""),
        }
    }

    /// The likeliest of `candidates` (each scored with its end, plus its
    /// bonus in `bonuses`): its score and tokens; the first of equals.
    fn most_likely(
        &mut self,
        start: &[f32],
        candidates: &[String],
        bonuses: &[f32],
        closers: &[LlamaToken],
    ) -> Result<Option<(f32, Vec<LlamaToken>)>> {
        let spans: Vec<Vec<LlamaToken>> = candidates
            .iter()
            .map(|text| self.tokenize(text, false))
            .collect();
        let mut scores = vec![None; spans.len()];
        // Longest first: a span whose tokens begin a longer one's (the
        // spans from one word on: "Dr.", "Dr. Patel") is scored from that
        // one's decode, so each decode serves every span it extends.
        let mut order: Vec<usize> = (0..spans.len()).collect();
        order.sort_by_key(|&i| std::cmp::Reverse(spans[i].len()));
        for i in order {
            if scores[i].is_some() {
                continue;
            }
            let Some(prefixes) = self.prefix_logprobs(start, &spans[i], closers)? else {
                return Ok(None);
            };
            for (j, span) in spans.iter().enumerate() {
                if scores[j].is_none() && spans[i].starts_with(span) {
                    scores[j] = Some(match span.len() {
                        0 => f32::NEG_INFINITY,
                        n => prefixes[n - 1],
                    });
                }
            }
        }
        let mut best: Option<(f32, usize)> = None;
        for (i, score) in scores.into_iter().enumerate() {
            let score = score.unwrap_or(f32::NEG_INFINITY) + bonuses.get(i).copied().unwrap_or(0.0);
            if !matches!(best, Some((top, _)) if top >= score) {
                best = Some((score, i));
            }
        }
        Ok(best.map(|(score, i)| (score, spans[i].clone())))
    }

    /// The best-scoring span's tokens if it is within the margin of the
    /// model's own value (see [`OwnValue`]), the span `order` says comes
    /// next given its bonus when the model skipped it.
    fn best_span(
        &mut self,
        start: &[f32],
        candidates: &[String],
        order: &InOrder,
        closers: &[LlamaToken],
    ) -> Result<Option<Vec<LlamaToken>>> {
        let Some((own, own_text)) = self.own_value_logprob(start, closers)? else {
            return Ok(None);
        };
        let bonuses = order.bonuses(candidates, &own_text, self.value_copy.in_order);
        // A value that runs on is free text, or a small model's runaway
        // ("topic": "Giraffes are herbivores, and their diet ..."): only a
        // span likelier than the text it began, whole, replaces it.
        let floor = match own {
            OwnValue::Ends(score) => score - self.value_copy.margin,
            OwnValue::RunsOn(bound) => bound,
        };
        let best = self.most_likely(start, candidates, &bonuses, closers)?;
        tracing::trace!(?best, ?own, own_text, "value span score");
        Ok(best
            .filter(|(score, _)| *score >= floor)
            .map(|(_, tokens)| tokens))
    }

    /// The log-probability of the value the model would write itself,
    /// greedily, with its end, and its text; `None` when the abort flag
    /// interrupted it.
    fn own_value_logprob(
        &mut self,
        start: &[f32],
        closers: &[LlamaToken],
    ) -> Result<Option<(OwnValue, String)>> {
        let mut logits = start.to_vec();
        let mut total = 0.0;
        let mut text = Vec::new();
        for written in 0..MAX_OWN_TOKENS {
            let next = argmax(&logits);
            if closers.contains(&next) {
                self.drop_scratch();
                let own = OwnValue::Ends(total + log_mass(&logits, closers));
                return Ok(Some((own, String::from_utf8_lossy(&text).into_owned())));
            }
            self.model
                .llama
                .vocab()
                .token_to_piece_into(next, &mut text, false, None);
            total += log_softmax_at(&logits, next);
            if !self.decode_scratch(&[next], self.cached.len() + written)? {
                return Ok(None);
            }
            logits.copy_from_slice(self.ctx.get_logits_ith(0));
        }
        self.drop_scratch();
        let own = OwnValue::RunsOn(total);
        Ok(Some((own, String::from_utf8_lossy(&text).into_owned())))
    }

    /// For each prefix of `tokens` (one token, two, ...), its
    /// log-probability as the whole value, its end included, after the
    /// cached tokens (whose logits are `start`): one decode for them all.
    /// `None` when the abort flag interrupted it.
    fn prefix_logprobs(
        &mut self,
        start: &[f32],
        tokens: &[LlamaToken],
        closers: &[LlamaToken],
    ) -> Result<Option<Vec<f32>>> {
        let Some(&first) = tokens.first() else {
            return Ok(Some(Vec::new()));
        };
        if !self.decode_scratch(tokens, self.cached.len())? {
            return Ok(None);
        }
        let mut written = log_softmax_at(start, first);
        let mut out = Vec::with_capacity(tokens.len());
        for (i, &token) in tokens.iter().enumerate() {
            if i > 0 {
                written += log_softmax_at(self.ctx.get_logits_ith(i as i32 - 1), token);
            }
            out.push(written + log_mass(self.ctx.get_logits_ith(i as i32), closers));
        }
        self.drop_scratch();
        Ok(Some(out))
    }

    /// Decodes `tokens` from position `at` (after the cached tokens) with
    /// logits for each, without counting them as cached: scratch cells that
    /// [`Self::drop_scratch`] removes. False when the abort flag
    /// interrupted it (the scratch cells are dropped then).
    pub(super) fn decode_scratch(&mut self, tokens: &[LlamaToken], at: usize) -> Result<bool> {
        self.batch.clear();
        for (i, &token) in tokens.iter().enumerate() {
            self.batch
                .add(token, (at + i) as i32, &[0], true)
                .map_err(|e| Error::InferenceFailed(format!("batch: {e}")))?;
        }
        match self.ctx.decode(&mut self.batch) {
            Ok(()) => Ok(true),
            Err(DecodeError::Aborted) => {
                self.drop_scratch();
                Ok(false)
            }
            Err(e) => Err(Error::InferenceFailed(format!("llama_decode failed: {e}"))),
        }
    }

    /// Removes every cell past the cached tokens.
    fn drop_scratch(&mut self) {
        let _ = self
            .ctx
            .clear_kv_cache_seq(Some(0), Some(self.cached.len() as u32), None);
    }

    /// The tokens that can end a number inside a call (`,`, `}`, `)`, a
    /// space), worked out once.
    fn number_closers(&mut self) -> Vec<LlamaToken> {
        if self.number_closer_cache.is_empty() {
            self.number_closer_cache = vocab_tokens_where(&self.model.llama, false, |piece| {
                matches!(
                    piece.first(),
                    Some(b',' | b'}' | b')' | b']' | b' ' | b'\n')
                )
            });
        }
        self.number_closer_cache.clone()
    }
}

/// The value the model would write itself, scored.
#[derive(Debug, Clone, Copy)]
enum OwnValue {
    /// It ends within [`MAX_OWN_TOKENS`]: its log-probability, end included.
    Ends(f32),
    /// It runs past them: the log-probability of its first
    /// [`MAX_OWN_TOKENS`], a bound above the whole value's.
    RunsOn(f32),
}

/// The token with the highest logit.
fn argmax(logits: &[f32]) -> LlamaToken {
    let best = logits
        .iter()
        .enumerate()
        .max_by(|a, b| a.1.total_cmp(b.1))
        .map_or(0, |(i, _)| i);
    LlamaToken(best as i32)
}

/// `log Σ softmax(logits)[t]` over `tokens`: the probability that the
/// value ends here, whichever closing token the model would use.
fn log_mass(logits: &[f32], tokens: &[LlamaToken]) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let all: f32 = logits.iter().map(|l| (l - max).exp()).sum();
    let some: f32 = tokens
        .iter()
        .filter_map(|t| logits.get(t.0 as usize))
        .map(|l| (l - max).exp())
        .sum();
    some.ln() - all.ln()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn tools() -> Vec<ToolDefinition> {
        let tool = |name: &str, properties: Value| ToolDefinition {
            name: name.into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": properties}),
        };
        vec![
            tool(
                "convert_currency",
                json!({"amount": {"type": "number"}, "from": {"type": "string"},
                       "unit": {"type": "string", "enum": ["a", "b"]}}),
            ),
            tool(
                "set_timer",
                json!({"minutes": {"type": "integer"}, "label": {"type": "string"}}),
            ),
        ]
    }

    /// The value that begins at the end of `text`, in the call it writes.
    fn site(text: &str, syntax: CallSyntax, tools: &[ToolDefinition]) -> Option<ValueKind> {
        let call = open_arguments(text, syntax, tools)?;
        value_site(call.args, syntax, call.tool)
    }

    #[test]
    fn a_value_site_is_a_string_number_or_option_of_the_tool_named_last() {
        let tools = tools();
        let json = |text: &str| site(text, CallSyntax::Json, &tools);
        let opening = r#"<tool_call>[{"name": "convert_currency", "arguments": {"#;
        assert_eq!(
            json(&format!(r#"{opening}"from": ""#)),
            Some(ValueKind::Text)
        );
        assert_eq!(
            json(&format!(r#"{opening}"from":""#)),
            Some(ValueKind::Text)
        );
        assert_eq!(
            json(&format!(r#"{opening}"amount": "#)),
            Some(ValueKind::Number)
        );
        let options = ValueKind::Choice(vec!["a".into(), "b".into()]);
        assert_eq!(json(&format!(r#"{opening}"unit": ""#)), Some(options));
        // A string's end is no site; a key the tool does not have is none.
        assert_eq!(json(&format!(r#"{opening}"from": "GBP""#)), None);
        assert_eq!(json(&format!(r#"{opening}"minutes": "#)), None);
        assert_eq!(json(&format!(r#"{opening}"from": "a \""#)), None);
        let python = |text: &str| site(text, CallSyntax::Python, &tools);
        assert_eq!(python("[set_timer(minutes="), Some(ValueKind::Integer));
        assert_eq!(
            python("[set_timer(minutes=5, label=\""),
            Some(ValueKind::Text)
        );
        assert_eq!(python("[set_timer(minutes=5, label=\"tea"), None);
        assert_eq!(
            site("call:set_timer{label:", CallSyntax::FunctionGemma, &tools),
            None
        );
        // Inside a nested value, or in a second call's opening.
        assert_eq!(json(&format!(r#"{opening}"x": {{"from": ""#)), None);
        let second = r#"[{"name": "convert_currency", "arguments": {"from": "}"}}, {"name": ""#;
        let tools = vec![ToolDefinition {
            parameters: json!({"properties": {"name": {"type": "string"}}}),
            ..tools[0].clone()
        }];
        assert_eq!(site(second, CallSyntax::Json, &tools), None);
    }

    #[test]
    fn an_option_is_named_only_when_the_question_names_one() {
        let ops: Vec<String> = ["add", "subtract", "multiply", "divide"]
            .map(String::from)
            .into();
        assert_eq!(named_option("Multiply 12.5 by 4.", &ops), Some("multiply"));
        assert_eq!(named_option("What is 3 times 4?", &ops), None);
        assert_eq!(named_option("Add or subtract?", &ops), None);
        let rooms = vec!["living_room".to_string(), "kitchen".to_string()];
        assert_eq!(
            named_option("Lights on in the living room", &rooms),
            Some("living_room")
        );
    }

    #[test]
    fn a_figure_no_value_holds_goes_into_a_number_left_out() {
        let tools = tools();
        let timer = &tools[1];
        let json = |question: &str, args: &str| {
            left_out_figures(question, args, "", CallSyntax::Json, timer)
        };
        assert_eq!(
            json("Put 12 eggs on it", r#" {"label": "eggs""#),
            [r#", "minutes": 12"#]
        );
        let closing = left_out_figures(
            "12 eggs",
            r#"{"label": "eggs"#,
            "\"",
            CallSyntax::Json,
            timer,
        );
        assert_eq!(closing, [r#"", "minutes": 12"#]);
        assert_eq!(json("Timer 12", " {"), [r#""minutes": 12"#]);
        // Held already, by a number or inside a string.
        assert!(json("Timer 12", r#" {"minutes": 12"#).is_empty());
        assert!(json("see you at 7", r#" {"label": "see you at 7""#).is_empty());
        // Not a whole number for an integer.
        assert!(json("Timer 2.5", " {").is_empty());
        let python = left_out_figures("Tea 4", "label=\"tea\"", "", CallSyntax::Python, timer);
        assert_eq!(python, [", minutes=4"]);
    }

    #[test]
    fn a_code_no_value_holds_goes_into_a_string_left_out() {
        let flights = ToolDefinition {
            name: "search_flights".into(),
            description: String::new(),
            parameters: json!({"type": "object", "properties": {
                "origin": {"type": "string"}, "destination": {"type": "string"},
                "date": {"type": "string"}, "seats": {"type": "integer"}}}),
        };
        let question = "Flights from Oslo to Rome on 2027-02-14, flight SK4711 or 45?";
        assert_eq!(codes(question), ["2027-02-14", "SK4711"]);
        let args = r#"{"origin": "Oslo", "destination": "Rome"#;
        let json = left_out_codes(question, args, "\"", CallSyntax::Json, &flights);
        assert_eq!(json, [r#"", "date": "2027-02-14"#, r#"", "date": "SK4711"#]);
        // A code held already (in any case) is not offered again.
        let held = r#"{"origin": "Oslo", "destination": "sk4711", "date": "2027-02-14""#;
        assert!(left_out_codes(question, held, "", CallSyntax::Json, &flights).is_empty());
        let python = left_out_codes(
            "Go on 2027-02-14",
            "origin=\"Oslo\"",
            "",
            CallSyntax::Python,
            &flights,
        );
        assert_eq!(
            python,
            [", destination=\"2027-02-14", ", date=\"2027-02-14"]
        );
    }

    #[test]
    fn spans_are_runs_of_words_trimmed_of_punctuation_and_stop_words() {
        let spans = spans("Phone Dr. Patel about the tests.", &ValueKind::Text);
        assert!(spans.contains(&"Dr. Patel".to_string()), "{spans:?}");
        assert!(spans.contains(&"Patel".to_string()));
        assert!(spans.contains(&"Phone Dr. Patel about the tests".to_string()));
        assert!(!spans
            .iter()
            .any(|s| s.ends_with("the") || s.starts_with("about")));
        assert!(!spans.iter().any(|s| s.ends_with('.')));
    }

    #[test]
    fn the_next_value_begins_after_the_last_one_in_the_question() {
        let json = CallSyntax::Json;
        assert_eq!(
            written_values(
                r#"{"amount": 1200, "from": "CHF", "note": "a \"b\"", "to": ""#,
                json
            ),
            ["1200", "CHF", r#"a \"b\""#]
        );
        assert_eq!(
            written_values("a=17, b=23)", CallSyntax::Python),
            ["17", "23"]
        );
        let question = "Change 1200 CHF into EUR.";
        let next = |args| next_in_question(question, args, json);
        assert_eq!(
            next(r#"{"amount": 1200, "from": ""#).as_deref(),
            Some("chf into eur.")
        );
        // Stop words are passed over; a value not in the question says
        // nothing.
        assert_eq!(
            next(r#"{"amount": 1200, "from": "CHF", "to": ""#).as_deref(),
            Some("eur.")
        );
        assert_eq!(
            next_in_question("Convert 100 USD to EUR", r#"{"from": "USD", "to": ""#, json)
                .as_deref(),
            Some("eur")
        );
        assert_eq!(next(r#"{"amount": 1200, "from": "USD", "to": ""#), None);
        assert_eq!(next(r#"{"amount": "#), None);
        assert!(begins_with("chf into eur.", "CHF"));
        assert!(!begins_with("chfx into eur.", "CHF"));
    }

    #[test]
    fn the_in_order_bonus_goes_to_the_next_code_in_the_question() {
        let order = |question: &'static str, args: &str| InOrder {
            question,
            next: next_in_question(question, args, CallSyntax::Json),
        };
        let bonus_of = |order: &InOrder, own: &str, span: &str| {
            let candidates = spans(order.question, &ValueKind::Text);
            let at = candidates.iter().position(|c| c == span).unwrap();
            order.bonuses(&candidates, own, 10.0)[at]
        };
        let q = "How much is 75.5 CAD in USD?";
        let from = order(q, r#"{"amount": 75.5, "from": ""#);
        // Its own USD skips CAD, and a guessed EUR passes it over: CAD
        // gets the bonus, nothing else does.
        assert_eq!(bonus_of(&from, "USD", "CAD"), 10.0);
        assert_eq!(bonus_of(&from, "EUR", "CAD"), 10.0);
        assert_eq!(bonus_of(&from, "USD", "USD"), 0.0);
        // Its own CAD, or a value that is no code: no bonus.
        assert_eq!(bonus_of(&from, "CAD", "CAD"), 0.0);
        assert_eq!(bonus_of(&from, "dollars", "CAD"), 0.0);
        // A code the question names before the next one is its reading.
        let q = "Convert EUR 100 to USD";
        let from = order(q, r#"{"amount": 100, "from": ""#);
        assert_eq!(bonus_of(&from, "EUR", "USD"), 0.0);
        // A code of another form is not the one the model skipped.
        let q = "What is 40 EUR in US dollars (USD)?";
        let to = order(q, r#"{"amount": 40, "from": "EUR", "to": ""#);
        assert_eq!(bonus_of(&to, "USD", "US"), 0.0);
        // Words are not codes.
        let q = "Start a 25 minute timer called pasta";
        let label = order(q, r#"{"minutes": 25, "label": ""#);
        assert_eq!(bonus_of(&label, "pasta", "minute"), 0.0);
        assert!(is_code("BA117") && is_code("USD") && !is_code("Usd") && !is_code("117"));
    }

    #[test]
    fn figures_are_read_as_json_numbers() {
        let q = "Convert 1,250.5 GBP, then 45 minus 19, booking MN55.";
        assert_eq!(spans(q, &ValueKind::Number), ["1250.5", "45", "19"]);
        assert_eq!(spans(q, &ValueKind::Integer), ["45", "19"]);
    }

    #[test]
    fn only_a_users_short_last_message_is_copied_from() {
        let long = "word ".repeat(MAX_QUESTION_WORDS + 1);
        assert_eq!(
            question(&[Message::user("Set a timer")]),
            Some("Set a timer")
        );
        assert_eq!(question(&[Message::user(long.as_str())]), None);
        assert_eq!(
            question(&[Message::user("x"), Message::assistant("y")]),
            None
        );
    }
}
