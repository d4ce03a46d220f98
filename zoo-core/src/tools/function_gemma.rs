//! FunctionGemma's own syntax for tool declarations and calls, as Google's
//! FunctionGemma guide ("Formatting and best practices") shows it:
//!
//! ```text
//! <start_function_declaration>declaration:get_weather{description:<escape>Weather.<escape>,parameters:{properties:{city:{type:<escape>STRING<escape>}},required:[<escape>city<escape>],type:<escape>OBJECT<escape>}}<end_function_declaration>
//! <start_function_call>call:get_weather{city:<escape>Tokyo<escape>}<end_function_call>
//! ```
//!
//! Keys are bare, every string sits between two `<escape>` tokens, numbers
//! and booleans are bare, lists and objects use `[…]` and `{…}`. Reading is
//! one pass with a depth limit.

use serde_json::{Map, Number, Value};

use super::ToolDefinition;

/// The token around every string value.
pub const ESCAPE: &str = "<escape>";
/// Opens a call.
pub const CALL_OPEN: &str = "<start_function_call>";
/// Closes a call.
pub const CALL_CLOSE: &str = "<end_function_call>";
/// Opens a tool result.
pub const RESPONSE_OPEN: &str = "<start_function_response>";
/// Closes a tool result.
pub const RESPONSE_CLOSE: &str = "<end_function_response>";

/// Deepest nesting of lists and objects read in a value.
const MAX_DEPTH: usize = 64;

/// One call, `<start_function_call>call:name{…}<end_function_call>`.
pub fn write_call(name: &str, arguments: &Value) -> String {
    let mut out = format!("{CALL_OPEN}call:{name}");
    match arguments {
        Value::Object(_) => write_value(arguments, &mut out),
        _ => out.push_str("{}"),
    }
    out.push_str(CALL_CLOSE);
    out
}

/// One tool result, `<start_function_response>response:name{…}<end_function_response>`:
/// an object result as an object, anything else as `{value:…}`.
pub fn write_response(name: &str, content: &Value) -> String {
    let mut out = format!("{RESPONSE_OPEN}response:{name}");
    match content {
        Value::Object(_) => write_value(content, &mut out),
        other => {
            out.push_str("{value:");
            write_value(other, &mut out);
            out.push('}');
        }
    }
    out.push_str(RESPONSE_CLOSE);
    out
}

/// One declaration, `<start_function_declaration>declaration:name{…}<end_function_declaration>`,
/// with the schema's keys sorted and its type names upper-cased, as the
/// guide's examples write them.
pub fn write_declaration(tool: &ToolDefinition) -> String {
    let mut out = format!(
        "<start_function_declaration>declaration:{}{{description:",
        tool.name
    );
    write_value(&Value::from(tool.description.as_str()), &mut out);
    out.push_str(",parameters:");
    write_value(&schema_for_declaration(&tool.parameters), &mut out);
    out.push_str("}<end_function_declaration>");
    out
}

/// A schema with sorted keys and `type` names in capitals (`STRING`, `OBJECT`).
fn schema_for_declaration(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => {
            let mut keys: Vec<&String> = map.keys().collect();
            keys.sort();
            let mut out = Map::new();
            for key in keys {
                let value = &map[key];
                let value = match (key.as_str(), value) {
                    ("type", Value::String(t)) => Value::from(t.to_ascii_uppercase()),
                    // Property names are data: keep them, sort their schemas.
                    ("properties", Value::Object(props)) => {
                        let mut names: Vec<&String> = props.keys().collect();
                        names.sort();
                        Value::Object(
                            names
                                .into_iter()
                                .map(|n| (n.clone(), schema_for_declaration(&props[n])))
                                .collect(),
                        )
                    }
                    _ => schema_for_declaration(value),
                };
                out.insert(key.clone(), value);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(schema_for_declaration).collect()),
        other => other.clone(),
    }
}

/// Writes a value in FunctionGemma's syntax.
pub fn write_value(value: &Value, out: &mut String) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Value::Number(n) => out.push_str(&n.to_string()),
        Value::String(s) => {
            out.push_str(ESCAPE);
            out.push_str(s);
            out.push_str(ESCAPE);
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_value(item, out);
            }
            out.push(']');
        }
        Value::Object(map) => {
            out.push('{');
            for (i, (key, item)) in map.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(key);
                out.push(':');
                write_value(item, out);
            }
            out.push('}');
        }
    }
}

/// Reads the inside of one call block, `call:name{…}` (the text between
/// the call tokens, surrounding whitespace allowed): its name and arguments.
pub fn read_call(text: &str) -> Option<(String, Map<String, Value>)> {
    let mut reader = Reader { text, pos: 0 };
    reader.skip_space();
    reader.literal("call:")?;
    let name = reader.key()?.to_string();
    let arguments = match reader.value(0)? {
        Value::Object(map) => map,
        _ => return None,
    };
    reader.skip_space();
    (reader.pos == text.len()).then_some((name, arguments))
}

struct Reader<'t> {
    text: &'t str,
    pos: usize,
}

impl<'t> Reader<'t> {
    fn rest(&self) -> &'t str {
        &self.text[self.pos..]
    }

    fn skip_space(&mut self) {
        let rest = self.rest();
        self.pos += rest.len() - rest.trim_start().len();
    }

    fn literal(&mut self, literal: &str) -> Option<()> {
        self.rest()
            .starts_with(literal)
            .then(|| self.pos += literal.len())
    }

    /// A bare key or name: everything up to the next delimiter.
    fn key(&mut self) -> Option<&'t str> {
        let rest = self.rest();
        let end = rest
            .find(|c: char| {
                matches!(c, '{' | '}' | '[' | ']' | ':' | ',' | '<') || c.is_whitespace()
            })
            .unwrap_or(rest.len());
        self.pos += end;
        (end > 0).then(|| &rest[..end])
    }

    fn value(&mut self, depth: usize) -> Option<Value> {
        if depth > MAX_DEPTH {
            return None;
        }
        self.skip_space();
        let rest = self.rest();
        if rest.starts_with(ESCAPE) {
            self.pos += ESCAPE.len();
            let end = self.rest().find(ESCAPE)?;
            let text = self.rest()[..end].to_string();
            self.pos += end + ESCAPE.len();
            return Some(Value::String(text));
        }
        match rest.as_bytes().first()? {
            b'{' => self.object(depth),
            b'[' => self.list(depth),
            _ => {
                let word = self.key()?;
                match word {
                    "true" => Some(Value::Bool(true)),
                    "false" => Some(Value::Bool(false)),
                    "null" => Some(Value::Null),
                    _ => number(word),
                }
            }
        }
    }

    fn object(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut map = Map::new();
        loop {
            self.skip_space();
            if self.literal("}").is_some() {
                return Some(Value::Object(map));
            }
            let key = self.key()?.to_string();
            self.literal(":")?;
            map.insert(key, self.value(depth + 1)?);
            self.skip_space();
            if self.literal(",").is_none() {
                self.literal("}")?;
                return Some(Value::Object(map));
            }
        }
    }

    fn list(&mut self, depth: usize) -> Option<Value> {
        self.pos += 1;
        let mut items = Vec::new();
        loop {
            self.skip_space();
            if self.literal("]").is_some() {
                return Some(Value::Array(items));
            }
            items.push(self.value(depth + 1)?);
            self.skip_space();
            if self.literal(",").is_none() {
                self.literal("]")?;
                return Some(Value::Array(items));
            }
        }
    }
}

fn number(word: &str) -> Option<Value> {
    if let Ok(integer) = word.parse::<i64>() {
        return Some(Value::from(integer));
    }
    Number::from_f64(word.parse::<f64>().ok()?).map(Value::Number)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn declaration_as_the_guide_writes_it() {
        let tool = ToolDefinition {
            name: "get_current_weather".into(),
            description: "Gets the current weather in a given location.".into(),
            parameters: json!({
                "type": "object",
                "properties": {
                    "location": {"type": "string", "description": "The city and state, e.g. \"San Francisco, CA\" or \"Tokyo, JP\""},
                    "unit": {"type": "string", "description": "The unit to return the temperature in.", "enum": ["celsius", "fahrenheit"]}
                },
                "required": ["location"]
            }),
        };
        // Word for word the guide's "Turn 1" declaration.
        assert_eq!(
            write_declaration(&tool),
            "<start_function_declaration>declaration:get_current_weather{description:<escape>Gets the current weather in a given location.<escape>,parameters:{properties:{location:{description:<escape>The city and state, e.g. \"San Francisco, CA\" or \"Tokyo, JP\"<escape>,type:<escape>STRING<escape>},unit:{description:<escape>The unit to return the temperature in.<escape>,enum:[<escape>celsius<escape>,<escape>fahrenheit<escape>],type:<escape>STRING<escape>}},required:[<escape>location<escape>],type:<escape>OBJECT<escape>}}<end_function_declaration>"
        );
    }

    #[test]
    fn calls_and_responses_round_trip() {
        let args = json!({"location": "Tokyo, Japan", "days": 3, "metric": true, "tags": ["a", "b"], "o": {"k": 1.5}});
        let text = write_call("get_current_weather", &args);
        assert_eq!(
            text,
            "<start_function_call>call:get_current_weather{location:<escape>Tokyo, Japan<escape>,days:3,metric:true,tags:[<escape>a<escape>,<escape>b<escape>],o:{k:1.5}}<end_function_call>"
        );
        let inner = &text[CALL_OPEN.len()..text.len() - CALL_CLOSE.len()];
        let (name, read) = read_call(inner).unwrap();
        assert_eq!(name, "get_current_weather");
        assert_eq!(Value::Object(read), args);
        assert_eq!(
            write_response("get_current_weather", &json!({"temperature": 15, "weather": "sunny"})),
            "<start_function_response>response:get_current_weather{temperature:15,weather:<escape>sunny<escape>}<end_function_response>"
        );
        assert_eq!(
            write_response("t", &json!("14:05")),
            "<start_function_response>response:t{value:<escape>14:05<escape>}<end_function_response>"
        );
    }

    #[test]
    fn unreadable_calls() {
        for text in [
            "",
            "call:",
            "call:f",
            "call:f{a:<escape>x}",
            "call:f{a:}",
            "call:f{a:1",
            "call:f{a:1} trailing",
            "cal:f{}",
            "call:f[1]",
        ] {
            assert_eq!(read_call(text), None, "{text}");
        }
        assert_eq!(
            read_call(" call:ping{} "),
            Some(("ping".into(), Map::new()))
        );
        let deep = format!("call:f{{a:{}{}}}", "[".repeat(100), "]".repeat(100));
        assert_eq!(read_call(&deep), None);
    }
}
