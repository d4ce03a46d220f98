//! JSON laid out like Python's `json.dumps`: what chat templates (`tojson`)
//! and model cards write into prompts, so models read the layout they were
//! trained on.

/// JSON text laid out like Python's `json.dumps`, so that what we write into
/// prompts matches what models saw in training (`{"a": 1, "b": [1, 2]}`).
#[derive(Debug, Clone)]
pub struct PyJson {
    indent: Option<usize>,
    /// Between items (`", "`, or `","` once lines are indented).
    pub item_separator: String,
    /// Between a key and its value (`": "`).
    pub key_separator: String,
    /// Whether object keys are sorted.
    pub sort_keys: bool,
    /// Whether non-ASCII characters are escaped as `\\uXXXX`.
    pub ensure_ascii: bool,
}

impl PyJson {
    /// Python's defaults for the given indent, with `ensure_ascii=False`
    /// as Hugging Face passes it.
    pub fn new(indent: Option<usize>) -> Self {
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
    pub fn dumps(&self, value: &serde_json::Value) -> String {
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

/// `json.dumps(value)` with Python's defaults and `ensure_ascii=False`.
pub fn dumps(value: &serde_json::Value) -> String {
    PyJson::new(None).dumps(value)
}
