//! Python-style tool calls, `[get_weather(city="Paris"), add(a=1, b=2)]`:
//! the syntax Gemma's function-calling guide teaches (a bare list) and
//! LFM2 writes between its `<|tool_call_start|>` and `<|tool_call_end|>`
//! tokens. Values are Python literals (`"text"`, `'text'`, `12`, `1.5`,
//! `True`, `None`, `[…]`, `{"k": v}`); JSON's `true`, `false` and `null`
//! are read too, since models mix them.
//!
//! Reading is one pass over the text with a depth limit, so it is linear in
//! the text's length and never recurses without bound.

use serde_json::{Map, Number, Value};

/// Deepest nesting of lists and dicts read in a value.
const MAX_DEPTH: usize = 64;

/// One call read from the text: its name and keyword arguments.
pub type PythonCall = (String, Map<String, Value>);

/// Writes calls as one Python list: `[name(key=value, …), …]`.
pub fn write_calls<'a>(calls: impl IntoIterator<Item = (&'a str, &'a Value)>) -> String {
    let mut out = String::from("[");
    for (i, (name, arguments)) in calls.into_iter().enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        write_call(name, arguments, &mut out);
    }
    out.push(']');
    out
}

/// Writes one call, `name(key=value, …)`; arguments that are not an object
/// are written as no arguments.
pub fn write_call(name: &str, arguments: &Value, out: &mut String) {
    out.push_str(name);
    out.push('(');
    if let Value::Object(map) = arguments {
        for (i, (key, value)) in map.iter().enumerate() {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(key);
            out.push('=');
            write_value(value, out);
        }
    }
    out.push(')');
}

/// Writes a JSON value as the Python literal a model reads back.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("None"),
        Value::Bool(true) => out.push_str("True"),
        Value::Bool(false) => out.push_str("False"),
        Value::Number(n) => out.push_str(&n.to_string()),
        // A JSON string literal is also a valid Python one.
        Value::String(s) => out.push_str(&Value::from(s.as_str()).to_string()),
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(&Value::from(key.as_str()).to_string());
                out.push_str(": ");
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// Reads a list of calls at the start of `text` (which begins with `[`,
/// after optional whitespace): the calls and the byte just after the list.
/// `None` when the text there is not a list of calls; an empty list is no
/// call (`Some((vec![], end))`).
pub fn read_call_list(text: &str) -> Option<(Vec<PythonCall>, usize)> {
    let mut reader = Reader::new(text);
    reader.skip_space();
    reader.expect(b'[')?;
    let mut calls = Vec::new();
    reader.skip_space();
    if reader.eat(b']') {
        return Some((calls, reader.pos));
    }
    loop {
        reader.skip_space();
        calls.push(reader.call()?);
        reader.skip_space();
        if reader.eat(b']') {
            return Some((calls, reader.pos));
        }
        reader.expect(b',')?;
    }
}

/// Reads calls written one after the other, each `name(…)`, separated by
/// whitespace, commas or semicolons, filling all of `text` (the inside of a
/// code fence). `None` unless every part is a call.
pub fn read_call_lines(text: &str) -> Option<Vec<PythonCall>> {
    if text.trim_start().starts_with('[') {
        let (calls, end) = read_call_list(text)?;
        return text[end..].trim().is_empty().then_some(calls);
    }
    let mut reader = Reader::new(text);
    let mut calls = Vec::new();
    loop {
        reader.skip_separators();
        if reader.at_end() {
            return (!calls.is_empty()).then_some(calls);
        }
        calls.push(reader.call()?);
    }
}

/// A cursor over the bytes of a text; every method moves forward only.
struct Reader<'t> {
    text: &'t str,
    bytes: &'t [u8],
    pos: usize,
}

impl<'t> Reader<'t> {
    fn new(text: &'t str) -> Self {
        Reader {
            text,
            bytes: text.as_bytes(),
            pos: 0,
        }
    }

    fn at_end(&self) -> bool {
        self.pos >= self.bytes.len()
    }

    fn peek(&self) -> Option<u8> {
        self.bytes.get(self.pos).copied()
    }

    fn eat(&mut self, byte: u8) -> bool {
        let found = self.peek() == Some(byte);
        self.pos += usize::from(found);
        found
    }

    fn expect(&mut self, byte: u8) -> Option<()> {
        self.eat(byte).then_some(())
    }

    fn skip_space(&mut self) {
        while self.peek().is_some_and(|b| b.is_ascii_whitespace()) {
            self.pos += 1;
        }
    }

    fn skip_separators(&mut self) {
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_whitespace() || b == b',' || b == b';')
        {
            self.pos += 1;
        }
    }

    /// A name: letters, digits, `_`, `-` and `.` (tool names may hold `-`,
    /// and models write `functions.name`), not starting with a digit.
    fn name(&mut self) -> Option<&'t str> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-' || b == b'.')
        {
            self.pos += 1;
        }
        let name = &self.text[start..self.pos];
        let first = name.bytes().next()?;
        (!first.is_ascii_digit()).then_some(name)
    }

    /// `name(key=value, …)`.
    fn call(&mut self) -> Option<PythonCall> {
        let name = self.name()?.to_string();
        self.skip_space();
        self.expect(b'(')?;
        let mut arguments = Map::new();
        self.skip_space();
        if self.eat(b')') {
            return Some((name, arguments));
        }
        loop {
            self.skip_space();
            let key = self.name()?.to_string();
            self.skip_space();
            self.expect(b'=')?;
            self.skip_space();
            let value = self.value(0)?;
            arguments.insert(key, value);
            self.skip_space();
            if self.eat(b')') {
                return Some((name, arguments));
            }
            self.expect(b',')?;
            self.skip_space();
            // A trailing comma before the parenthesis is valid Python.
            if self.eat(b')') {
                return Some((name, arguments));
            }
        }
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        match self.peek()? {
            b'"' | b'\'' => self.string().map(Value::String),
            b'[' | b'(' => self.sequence(depth),
            b'{' => self.dict(depth),
            b'-' | b'+' | b'.' | b'0'..=b'9' => self.number(),
            _ => match self.name()? {
                "True" | "true" => Some(Value::Bool(true)),
                "False" | "false" => Some(Value::Bool(false)),
                "None" | "null" => Some(Value::Null),
                _ => None,
            },
        }
    }

    /// A quoted string with Python's common escapes.
    fn string(&mut self) -> Option<String> {
        let quote = self.peek()?;
        self.pos += 1;
        let mut out = String::new();
        loop {
            let rest = &self.text[self.pos..];
            let stop = rest.find([quote as char, '\\'])?;
            out.push_str(&rest[..stop]);
            self.pos += stop;
            if self.eat(quote) {
                return Some(out);
            }
            self.pos += 1; // the backslash
            let escaped = self.text[self.pos..].chars().next()?;
            self.pos += escaped.len_utf8();
            match escaped {
                'n' => out.push('\n'),
                't' => out.push('\t'),
                'r' => out.push('\r'),
                '0' => out.push('\0'),
                'u' => {
                    let hex = self.text.get(self.pos..self.pos + 4)?;
                    let code = u32::from_str_radix(hex, 16).ok()?;
                    out.push(char::from_u32(code).unwrap_or('\u{FFFD}'));
                    self.pos += 4;
                }
                other => out.push(other),
            }
        }
    }

    /// A list (or a tuple, read as a list).
    fn sequence(&mut self, depth: usize) -> Option<Value> {
        let close = if self.peek()? == b'[' { b']' } else { b')' };
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space();
            if self.eat(close) {
                return Some(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_space();
            if !self.eat(b',') {
                self.skip_space();
                self.expect(close)?;
                return Some(Value::Array(items));
            }
        }
    }

    /// A dict with string keys.
    fn dict(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_space();
            if self.eat(b'}') {
                return Some(Value::Object(map));
            }
            let key = self.string()?;
            self.skip_space();
            self.expect(b':')?;
            self.skip_space();
            map.insert(key, self.value(depth + 1)?);
            self.skip_space();
            if !self.eat(b',') {
                self.skip_space();
                self.expect(b'}')?;
                return Some(Value::Object(map));
            }
        }
    }

    /// An integer or a float, as JSON holds it.
    fn number(&mut self) -> Option<Value> {
        let start = self.pos;
        while self
            .peek()
            .is_some_and(|b| b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E'))
        {
            self.pos += 1;
        }
        let literal = self.text[start..self.pos].trim_start_matches('+');
        if let Ok(integer) = literal.parse::<i64>() {
            return Some(Value::from(integer));
        }
        let float = literal.parse::<f64>().ok()?;
        Number::from_f64(float).map(Value::Number)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn args(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => panic!("not an object"),
        }
    }

    #[test]
    fn writes_a_list_of_calls() {
        let a = json!({"city": "Paris", "days": 3, "metric": true, "tags": ["a", "b"], "x": null});
        let b = json!({});
        assert_eq!(
            write_calls([("get_weather", &a), ("ping", &b)]),
            r#"[get_weather(city="Paris", days=3, metric=True, tags=["a", "b"], x=None), ping()]"#
        );
        let quoted = json!({"q": "say \"hi\"\n", "o": {"k": 1.5}});
        assert_eq!(
            write_calls([("f", &quoted)]),
            r#"[f(q="say \"hi\"\n", o={"k": 1.5})]"#
        );
    }

    #[test]
    fn reads_what_it_writes() {
        let a = json!({"city": "Paris", "days": 3, "ratio": 0.5, "metric": false,
                       "tags": ["a", "b"], "o": {"k": [1, {"z": null}]}, "q": "it's \"x\"\n"});
        let text = write_calls([("get_weather", &a), ("ping", &json!({}))]);
        let (calls, end) = read_call_list(&text).unwrap();
        assert_eq!(end, text.len());
        assert_eq!(
            calls,
            vec![
                ("get_weather".to_string(), args(a)),
                ("ping".to_string(), Map::new())
            ]
        );
    }

    #[test]
    fn reads_python_spellings() {
        let (calls, _) = read_call_list(
            "[ set_timer(minutes = 10, label='eggs', on=true, tuple=(1, 2),) , f() ] tail",
        )
        .unwrap();
        assert_eq!(calls[0].0, "set_timer");
        assert_eq!(
            Value::Object(calls[0].1.clone()),
            json!({"minutes": 10, "label": "eggs", "on": true, "tuple": [1, 2]})
        );
        assert_eq!(calls[1], ("f".to_string(), Map::new()));
        assert_eq!(read_call_list("[]"), Some((vec![], 2)));
        assert_eq!(
            read_call_lines("get_time()\nadd(a=1, b=-2.5e1)").unwrap()[1].1["b"],
            json!(-25.0)
        );
    }

    #[test]
    fn rejects_what_is_not_a_call_list() {
        for text in [
            "[1, 2]",
            "[see(1)]",
            "[f(a=)]",
            "[f(a=1]",
            "[f(a=\"unclosed)]",
            "[f(a=undefined_name)]",
            "[9f()]",
            "[f(a=[[[[",
            "",
        ] {
            assert_eq!(read_call_list(text), None, "{text}");
        }
        assert_eq!(read_call_lines("print(x) for x"), None);
        let deep = format!("[f(a={}{})]", "[".repeat(200), "]".repeat(200));
        assert_eq!(read_call_list(&deep), None);
    }
}
