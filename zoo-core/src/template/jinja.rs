//! The minijinja environment every chat template renders in.
//!
//! GGUF templates are written for Hugging Face's `apply_chat_template`, which
//! runs Jinja2 in Python with a few extras. Everything here exists to make
//! minijinja behave the same way on those templates: block trimming, Python
//! string and dict methods, `raise_exception`, `strftime_now` and a `tojson`
//! that prints like Python's `json.dumps`.

use std::fmt;
use std::io;
use std::time::{SystemTime, UNIX_EPOCH};

use minijinja::syntax::SyntaxConfig;
use minijinja::value::{Kwargs, Value};
use minijinja::{AutoEscape, Environment, Error as JinjaError, ErrorKind, Output, State};

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
/// the system prompt. The clock is read in UTC because the standard library
/// offers no local time zone and adding a dependency for one line of the
/// prompt is not worth it.
fn strftime_now(format: &str) -> String {
    let seconds = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0);
    strftime_utc(format, seconds)
}

const MONTHS: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];
const WEEKDAYS: [&str; 7] = [
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
    "Sunday",
];

/// Formats a Unix time (UTC) with the strftime directives chat templates
/// use. `%-d`-style (no padding) is accepted as on glibc; an unknown
/// directive is copied through unchanged, as Python does.
pub(crate) fn strftime_utc(format: &str, unix_seconds: i64) -> String {
    let days = unix_seconds.div_euclid(86_400);
    let secs_of_day = unix_seconds.rem_euclid(86_400);
    let (year, month, day) = civil_from_days(days);
    let (hour, minute, second) = (
        secs_of_day / 3600,
        (secs_of_day % 3600) / 60,
        secs_of_day % 60,
    );
    // 1970-01-01 was a Thursday (index 3 counting from Monday).
    let weekday = (days + 3).rem_euclid(7) as usize;
    let day_of_year = days - days_from_civil(year, 1, 1) + 1;
    let hour12 = match hour % 12 {
        0 => 12,
        h => h,
    };

    let mut out = String::with_capacity(format.len() + 16);
    let mut chars = format.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        let unpadded = chars.peek() == Some(&'-');
        if unpadded {
            chars.next();
        }
        let number = |value: i64, width: usize| {
            if unpadded {
                value.to_string()
            } else {
                format!("{value:0width$}")
            }
        };
        match chars.next() {
            Some('d') => out.push_str(&number(day as i64, 2)),
            Some('e') => out.push_str(&format!("{day:>2}")),
            Some('m') => out.push_str(&number(month as i64, 2)),
            Some('Y') => out.push_str(&year.to_string()),
            Some('y') => out.push_str(&number(year.rem_euclid(100), 2)),
            Some('B') => out.push_str(MONTHS[month as usize - 1]),
            Some('b') | Some('h') => out.push_str(&MONTHS[month as usize - 1][..3]),
            Some('A') => out.push_str(WEEKDAYS[weekday]),
            Some('a') => out.push_str(&WEEKDAYS[weekday][..3]),
            Some('H') => out.push_str(&number(hour, 2)),
            Some('I') => out.push_str(&number(hour12, 2)),
            Some('M') => out.push_str(&number(minute, 2)),
            Some('S') => out.push_str(&number(second, 2)),
            Some('p') => out.push_str(if hour < 12 { "AM" } else { "PM" }),
            Some('j') => out.push_str(&number(day_of_year, 3)),
            Some('%') => out.push('%'),
            Some(other) => {
                out.push('%');
                if unpadded {
                    out.push('-');
                }
                out.push(other);
            }
            None => out.push('%'),
        }
    }
    out
}

/// Days since 1970-01-01 to (year, month, day), proleptic Gregorian
/// (Howard Hinnant's `civil_from_days`).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
}

/// The inverse of [`civil_from_days`].
fn days_from_civil(year: i64, month: u32, day: u32) -> i64 {
    let year = if month <= 2 { year - 1 } else { year };
    let era = year.div_euclid(400);
    let yoe = year.rem_euclid(400);
    let month = i64::from(month);
    let doy = (153 * (if month > 2 { month - 3 } else { month + 9 }) + 2) / 5 + i64::from(day) - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
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

/// JSON text laid out like Python's `json.dumps`, so that what we write into
/// prompts matches what models saw in training (`{"a": 1, "b": [1, 2]}`).
#[derive(Debug, Clone)]
pub(crate) struct PyJson {
    indent: Option<usize>,
    item_separator: String,
    key_separator: String,
    sort_keys: bool,
    ensure_ascii: bool,
}

impl PyJson {
    /// Python's defaults for the given indent, with `ensure_ascii=False`
    /// as Hugging Face passes it.
    pub(crate) fn new(indent: Option<usize>) -> Self {
        PyJson {
            indent,
            // Python drops the space after commas once lines are indented.
            item_separator: if indent.is_some() { "," } else { ", " }.into(),
            key_separator: ": ".into(),
            sort_keys: false,
            ensure_ascii: false,
        }
    }

    /// Serializes `value`.
    pub(crate) fn dumps(&self, value: &serde_json::Value) -> String {
        let mut out = String::new();
        self.write(&mut out, value, 0);
        out
    }

    fn newline(&self, out: &mut String, depth: usize) {
        if let Some(indent) = self.indent {
            out.push('\n');
            out.push_str(&" ".repeat(indent * depth));
        }
    }

    fn write(&self, out: &mut String, value: &serde_json::Value, depth: usize) {
        use serde_json::Value as J;
        match value {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Number(n) => out.push_str(&n.to_string()),
            J::String(s) => self.write_str(out, s),
            J::Array(items) if items.is_empty() => out.push_str("[]"),
            J::Array(items) => {
                out.push('[');
                for (i, item) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_separator);
                    }
                    self.newline(out, depth + 1);
                    self.write(out, item, depth + 1);
                }
                self.newline(out, depth);
                out.push(']');
            }
            J::Object(map) if map.is_empty() => out.push_str("{}"),
            J::Object(map) => {
                let mut entries: Vec<(&String, &serde_json::Value)> = map.iter().collect();
                if self.sort_keys {
                    entries.sort_by(|a, b| a.0.cmp(b.0));
                }
                out.push('{');
                for (i, (key, item)) in entries.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_separator);
                    }
                    self.newline(out, depth + 1);
                    self.write_str(out, key);
                    out.push_str(&self.key_separator);
                    self.write(out, item, depth + 1);
                }
                self.newline(out, depth);
                out.push('}');
            }
        }
    }

    fn write_str(&self, out: &mut String, s: &str) {
        // serde_json escapes exactly the characters Python escapes with
        // ensure_ascii=False (quote, backslash, controls; lowercase \u00xx).
        let escaped = serde_json::Value::from(s).to_string();
        if !self.ensure_ascii {
            out.push_str(&escaped);
            return;
        }
        for c in escaped.chars() {
            if c.is_ascii() && c != '\u{7f}' {
                out.push(c);
            } else {
                let mut units = [0u16; 2];
                for unit in c.encode_utf16(&mut units) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
        }
    }
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
        let t = 1_722_000_309;
        assert_eq!(
            strftime_utc("%d %b %Y|%B %-d|%A %a|%H:%M:%S %I%p|%m/%y|%j|%%|%q", t),
            "26 Jul 2024|July 26|Friday Fri|13:25:09 01PM|07/24|208|%|%q"
        );
        assert_eq!(strftime_utc("%Y-%m-%d %H:%M", 0), "1970-01-01 00:00");
        assert_eq!(strftime_utc("%Y-%m-%d", 951_782_400), "2000-02-29");
        assert_eq!(strftime_utc("%Y-%m-%d", -86_400), "1969-12-31");
        let now = render("{{ strftime_now('%Y') }}", context! {}).unwrap();
        assert_eq!(now.len(), 4);
    }
}
