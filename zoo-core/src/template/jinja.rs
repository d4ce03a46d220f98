//! The minijinja environment every chat template renders in.
//!
//! GGUF templates are written for Hugging Face's `apply_chat_template`, which
//! runs Jinja2 in Python with a few extras. Everything here exists to make
//! minijinja behave the same way on those templates: block trimming, Python
//! string and dict methods, `raise_exception`, `strftime_now` and a `tojson`
//! that prints like Python's `json.dumps`.

use std::fmt;
use std::io;

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Value};
use minijinja::{AutoEscape, Environment, Error as JinjaError, ErrorKind, Output, State};

pub(crate) use crate::pyjson::PyJson;

/// The name the one template of an environment is stored under; it shows up
/// in minijinja's error locations (`in chat:3`).
pub(crate) const TEMPLATE_NAME: &str = "chat";

/// Builds an environment holding `source` as its only template.
pub(crate) fn environment(source: &str) -> Result<Environment<'static>, JinjaError> {
    let mut env = Environment::new();
    // Hugging Face compiles chat templates with both options on; templates
    // written for it rely on them to keep newlines out of the prompt.
    env.set_syntax(
        SyntaxConfig::builder()
            .trim_blocks(true)
            .lstrip_blocks(true)
            .build()?,
    );
    // A prompt is not HTML: `<|im_start|>` or `&` must reach the model as written.
    env.set_auto_escape_callback(|_| AutoEscape::None);
    env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
    // Jinja2 built-ins that minijinja keeps in contrib (truncate, joiner, …).
    minijinja_contrib::add_to_environment(&mut env);
    env.add_filter("tojson", tojson);
    env.add_function("raise_exception", raise_exception);
    env.add_function("strftime_now", strftime_now);
    env.add_template_owned(TEMPLATE_NAME, source.to_owned())?;
    Ok(env)
}

/// `env` with a budget for one render: at most `fuel` instructions, and at
/// most `output_bytes` written by `{{ … }}` expressions in all (captured
/// blocks included, which never reach the writer). Cloning an environment
/// copies a few `Arc`s, so each render can have a budget of its own.
pub(crate) fn limited(
    env: &Environment<'static>,
    fuel: u64,
    output_bytes: usize,
) -> Environment<'static> {
    let mut env = env.clone();
    env.set_fuel(Some(fuel));
    env.set_formatter(
        move |out: &mut Output<'_>, state: &mut State<'_, '_>, value: &Value| {
            let len = match value.as_str() {
                Some(text) => text.len(),
                // Measured by formatting into a counter that gives up past the
                // budget, so that a huge value is never built to be measured.
                None => {
                    let mut counter = ByteCounter {
                        len: 0,
                        max: output_bytes,
                    };
                    let _ = fmt::write(&mut counter, format_args!("{value}"));
                    counter.len
                }
            };
            let emitted = state.get_or_insert_extension(Emitted(0));
            emitted.0 = emitted.0.saturating_add(len);
            if emitted.0 > output_bytes {
                return Err(output_too_long(output_bytes));
            }
            minijinja::escape_formatter(out, state, value)
        },
    );
    env
}

/// Bytes emitted by expressions so far in one render.
struct Emitted(usize);

/// Counts formatted bytes, failing once past `max`.
struct ByteCounter {
    len: usize,
    max: usize,
}

impl fmt::Write for ByteCounter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.len = self.len.saturating_add(s.len());
        if self.len > self.max {
            Err(fmt::Error)
        } else {
            Ok(())
        }
    }
}

/// Marks a render stopped because it wrote more than its budget.
#[derive(Debug)]
pub(crate) struct OutputTooLong(pub(crate) usize);

impl fmt::Display for OutputTooLong {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "the output passed {} bytes", self.0)
    }
}

impl std::error::Error for OutputTooLong {}

fn output_too_long(max: usize) -> JinjaError {
    JinjaError::new(ErrorKind::InvalidOperation, OutputTooLong(max).to_string())
        .with_source(OutputTooLong(max))
}

/// The budget `err` reports having passed, if it is an [`OutputTooLong`]
/// (from the formatter or from a [`LimitedWriter`]).
pub(crate) fn output_limit_passed(err: &JinjaError) -> Option<usize> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(too_long) = e.downcast_ref::<OutputTooLong>() {
            return Some(too_long.0);
        }
        if let Some(io) = e.downcast_ref::<io::Error>() {
            if let Some(too_long) = io.get_ref().and_then(|e| e.downcast_ref::<OutputTooLong>()) {
                return Some(too_long.0);
            }
        }
        source = e.source();
    }
    None
}

/// Collects a render's output, refusing to grow past `max` bytes.
pub(crate) struct LimitedWriter {
    pub(crate) bytes: Vec<u8>,
    max: usize,
}

impl LimitedWriter {
    /// An empty buffer that holds at most `max` bytes.
    pub(crate) fn new(max: usize) -> Self {
        LimitedWriter {
            bytes: Vec::new(),
            max,
        }
    }
}

impl io::Write for LimitedWriter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        if self.bytes.len().saturating_add(buf.len()) > self.max {
            return Err(io::Error::other(OutputTooLong(self.max)));
        }
        self.bytes.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

/// Marks an error as raised on purpose by the template, so that its message
/// can be reported verbatim instead of as a rendering failure.
#[derive(Debug)]
struct RaisedException(String);

impl fmt::Display for RaisedException {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RaisedException {}

/// The message of a `raise_exception(...)` call that caused `err`, if any.
pub(crate) fn raised_message(err: &JinjaError) -> Option<&str> {
    let mut source: Option<&(dyn std::error::Error + 'static)> = std::error::Error::source(err);
    while let Some(e) = source {
        if let Some(raised) = e.downcast_ref::<RaisedException>() {
            return Some(&raised.0);
        }
        source = e.source();
    }
    None
}

/// Templates call this to refuse a conversation they cannot express
/// (typically a broken user/assistant alternation).
fn raise_exception(message: Value) -> Result<Value, JinjaError> {
    let message = message.to_string();
    Err(
        JinjaError::new(ErrorKind::InvalidOperation, message.clone())
            .with_source(RaisedException(message)),
    )
}

/// Hugging Face's `strftime_now`: templates use it to print today's date in
/// the system prompt, in the user's own time zone.
fn strftime_now(format: &str) -> String {
    strftime(format, &chrono::Local::now())
}

/// Formats `time` with strftime directives (chrono's, which are glibc's,
/// `%-d` included). An unknown directive is copied through unchanged, as
/// Python does, rather than failing the template.
pub(crate) fn strftime<Tz: chrono::TimeZone>(format: &str, time: &chrono::DateTime<Tz>) -> String
where
    Tz::Offset: std::fmt::Display,
{
    use std::fmt::Write as _;
    let mut out = String::with_capacity(format.len() + 16);
    let mut rest = format;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let directive = directive_at(&rest[at..]);
        match chrono::format::StrftimeItems::new(directive).parse() {
            Ok(items) => {
                let _ = write!(out, "{}", time.format_with_items(items.iter()));
            }
            Err(_) => out.push_str(directive),
        }
        rest = &rest[at + directive.len()..];
    }
    out.push_str(rest);
    out
}

/// The directive at the start of `text` (which starts with `%`): `%`, a
/// padding flag if any, and one character.
fn directive_at(text: &str) -> &str {
    let mut end = 1;
    let mut chars = text[1..].chars();
    match chars.next() {
        Some(flag @ ('-' | '_' | '0')) => {
            end += flag.len_utf8();
            end += chars.next().map_or(0, char::len_utf8);
        }
        Some(c) => end += c.len_utf8(),
        None => {}
    }
    &text[..end]
}

/// Hugging Face's `tojson`: `json.dumps(value, ensure_ascii=False, indent=…,
/// separators=…, sort_keys=…)`. minijinja's own filter escapes `<`, `>`, `&`
/// and `'` for HTML, which would change tool schemas and arguments as the
/// model sees them, so it is replaced.
fn tojson(value: &Value, indent: Option<Value>, kwargs: Kwargs) -> Result<Value, JinjaError> {
    let indent = match indent {
        Some(indent) => Some(indent),
        None => kwargs.get::<Option<Value>>("indent")?,
    };
    let indent = match indent {
        Some(v) if !v.is_none() && !v.is_undefined() => Some(usize::try_from(v)?),
        _ => None,
    };
    let mut style = PyJson::new(indent);
    if let Some(sort_keys) = kwargs.get::<Option<bool>>("sort_keys")? {
        style.sort_keys = sort_keys;
    }
    if let Some(ensure_ascii) = kwargs.get::<Option<bool>>("ensure_ascii")? {
        style.ensure_ascii = ensure_ascii;
    }
    if let Some(separators) = kwargs.get::<Option<Vec<String>>>("separators")? {
        match <[String; 2]>::try_from(separators) {
            Ok([item, key]) => {
                style.item_separator = item;
                style.key_separator = key;
            }
            Err(_) => {
                return Err(JinjaError::new(
                    ErrorKind::InvalidOperation,
                    "tojson: separators must be a pair (item_separator, key_separator)",
                ))
            }
        }
    }
    kwargs.assert_all_used()?;
    let json = serde_json::to_value(value).map_err(|e| {
        JinjaError::new(
            ErrorKind::InvalidOperation,
            format!("tojson: cannot serialize value: {e}"),
        )
    })?;
    Ok(Value::from_safe_string(style.dumps(&json)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use minijinja::context;
    use minijinja::value::Serde;
    use serde_json::json;

    fn render(source: &str, ctx: Value) -> Result<String, JinjaError> {
        environment(source)?
            .get_template(TEMPLATE_NAME)?
            .render(ctx)
    }

    #[test]
    fn python_json_layout() {
        let v = json!({"b": [1, 2.5, {"x": null}], "a": "é<&>'\"\n", "e": {}, "f": []});
        assert_eq!(
            PyJson::new(None).dumps(&v),
            r#"{"b": [1, 2.5, {"x": null}], "a": "é<&>'\"\n", "e": {}, "f": []}"#
        );
        assert_eq!(
            PyJson::new(Some(2)).dumps(&json!({"a": [1, 2], "b": {}})),
            "{\n  \"a\": [\n    1,\n    2\n  ],\n  \"b\": {}\n}"
        );
    }

    #[test]
    fn tojson_filter_matches_hugging_face() {
        let ctx = context! { v => Value::from(Serde(json!({"b": "<b>&'é", "a": 1}))) };
        assert_eq!(
            render("{{ v | tojson }}", ctx.clone()).unwrap(),
            r#"{"b": "<b>&'é", "a": 1}"#
        );
        assert_eq!(
            render("{{ v | tojson(indent=4) }}", ctx.clone()).unwrap(),
            "{\n    \"b\": \"<b>&'é\",\n    \"a\": 1\n}"
        );
        assert_eq!(
            render("{{ v | tojson(2) }}", ctx.clone()).unwrap(),
            "{\n  \"b\": \"<b>&'é\",\n  \"a\": 1\n}"
        );
        assert_eq!(
            render(
                "{{ v | tojson(sort_keys=true, ensure_ascii=true, separators=(',', ':')) }}",
                ctx
            )
            .unwrap(),
            r#"{"a":1,"b":"<b>&'\u00e9"}"#
        );
    }

    #[test]
    fn python_methods_and_trimming() {
        let ctx = context! { d => Value::from(Serde(json!({"k": "v", "n": 2}))) };
        let source = "{% for k, v in d.items() %}\n  {{ k }}={{ v }};\n{% endfor %}\n{{ '  x  '.strip() }}|{{ 'a,b'.split(',') | join('+') }}|{{ 'abc'.startswith('ab') }}";
        assert_eq!(render(source, ctx).unwrap(), "  k=v;\n  n=2;\nx|a+b|True");
    }

    #[test]
    fn raise_exception_keeps_its_message() {
        let err = render("{{ raise_exception('roles must alternate') }}", context! {}).unwrap_err();
        assert_eq!(raised_message(&err), Some("roles must alternate"));
        let err = render("{{ 1 + }}", context! {}).unwrap_err();
        assert_eq!(raised_message(&err), None);
    }

    #[test]
    fn strftime_directives() {
        // 2024-07-26 13:25:09 UTC, a Friday.
        let utc = |t| chrono::DateTime::from_timestamp(t, 0).unwrap();
        let t = utc(1_722_000_309);
        assert_eq!(
            strftime("%d %b %Y|%B %-d|%A %a|%H:%M:%S %I%p|%m/%y|%j|%%|%Q|%", &t),
            "26 Jul 2024|July 26|Friday Fri|13:25:09 01PM|07/24|208|%|%Q|%"
        );
        assert_eq!(strftime("%Y-%m-%d %H:%M", &utc(0)), "1970-01-01 00:00");
        assert_eq!(strftime("%Y-%m-%d", &utc(951_782_400)), "2000-02-29");
        assert_eq!(strftime("%Y-%m-%d", &utc(-86_400)), "1969-12-31");
        assert_eq!(strftime("né le %e %B", &t), "né le 26 July");
        let now = render("{{ strftime_now('%Y') }}", context! {}).unwrap();
        assert_eq!(now.len(), 4);
    }
}
