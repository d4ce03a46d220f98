//! GBNF for calls whose syntax is not a JSON object with a name: Python
//! calls (`name(key=value)`), FunctionGemma's (`call:name{key:value}`) and
//! harmony's (a header naming the tool, then the arguments as JSON).
//! llama.cpp's converter writes only JSON, so these rules are built here
//! from each tool's schema: the common JSON-schema keywords (`type`,
//! `enum`, `const`, `anyOf`/`oneOf`, `properties`/`required`, `items`,
//! `maxLength`/`maxItems`) shape the values, anything else admits any value
//! of bounded size. Every string and list is bounded (the schema is passed
//! through `bound_for_grammar` first), so every admitted call ends.

use std::collections::{HashMap, HashSet};

use serde_json::Value;

use crate::tools::call_format::{bound_for_grammar, GRAMMAR_MAX_ITEMS, GRAMMAR_MAX_STRING};
use crate::tools::{CallSyntax, ToolDefinition};

/// How deep a value of unknown shape may nest.
const ANY_VALUE_DEPTH: usize = 3;

/// The literal spelling of values in one syntax.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Literals {
    /// JSON (harmony's arguments).
    Json,
    /// Python literals: `True`, `None`, `"text"`.
    Python,
    /// FunctionGemma: strings between `<escape>` tokens, bare keys.
    FunctionGemma,
}

impl Literals {
    fn of(syntax: CallSyntax) -> Self {
        match syntax {
            CallSyntax::Python => Literals::Python,
            CallSyntax::FunctionGemma => Literals::FunctionGemma,
            CallSyntax::Json | CallSyntax::Harmony => Literals::Json,
        }
    }

    /// Between items of a list or entries of an object.
    fn separator(self) -> &'static str {
        match self {
            Literals::FunctionGemma => r#"",""#,
            Literals::Json | Literals::Python => r#"", ""#,
        }
    }

    fn literal(self, value: &Value) -> String {
        let text = match (self, value) {
            (Literals::Python, Value::Bool(true)) => "True".to_string(),
            (Literals::Python, Value::Bool(false)) => "False".to_string(),
            (Literals::Python, Value::Null) => "None".to_string(),
            (Literals::FunctionGemma, Value::String(s)) => format!("<escape>{s}<escape>"),
            (_, Value::Array(_) | Value::Object(_)) => {
                let mut out = String::new();
                match self {
                    Literals::Python => crate::tools::pythonic::write_value(value, &mut out),
                    Literals::FunctionGemma => {
                        crate::tools::function_gemma::write_value(value, &mut out)
                    }
                    Literals::Json => out = value.to_string(),
                }
                out
            }
            (_, other) => other.to_string(),
        };
        gbnf_literal(&text)
    }
}

/// How an argument's or an entry's key is written before its value.
#[derive(Debug, Clone, Copy)]
enum KeyStyle {
    /// The bare key, then this text: `key=` (Python) or `key:` (FunctionGemma).
    Bare(&'static str),
    /// The key as a JSON string, a colon and an optional space (JSON
    /// objects and Python dicts).
    Quoted,
}

/// Named GBNF rules under construction.
#[derive(Default)]
pub(super) struct Rules {
    rules: Vec<(String, String)>,
    names: HashSet<String>,
    /// Rule bodies already added, by body, so a shape used twice (any
    /// value, the same enum) is one rule.
    bodies: HashMap<String, String>,
}

impl Rules {
    /// Adds a rule named after `hint` (made unique) and returns its name;
    /// a body already added returns that rule's name.
    fn add(&mut self, hint: &str, body: String) -> String {
        if let Some(name) = self.bodies.get(&body) {
            return name.clone();
        }
        let base: String = hint
            .chars()
            .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
            .collect();
        let base = if base.is_empty() {
            "r".to_string()
        } else {
            base
        };
        let mut name = base.clone();
        let mut n = 1;
        while !self.names.insert(name.clone()) {
            n += 1;
            name = format!("{base}-{n}");
        }
        self.bodies.insert(body.clone(), name.clone());
        self.rules.push((name.clone(), body));
        name
    }

    /// The rules as GBNF text, one per line.
    pub(super) fn render(&self) -> String {
        self.rules
            .iter()
            .map(|(name, body)| format!("{name} ::= {body}\n"))
            .collect()
    }
}

/// Adds the rule of one call to `tool` in `syntax` and returns its name.
pub(super) fn call_rule(rules: &mut Rules, syntax: CallSyntax, tool: &ToolDefinition) -> String {
    let mut schema = tool.parameters.clone();
    bound_for_grammar(&mut schema);
    let literals = Literals::of(syntax);
    let hint = format!("call-{}", tool.name);
    let name = gbnf_literal(&tool.name);
    let body = match syntax {
        CallSyntax::Python => {
            let args = arguments(rules, &schema, literals, &hint, KeyStyle::Bare("="), 0);
            format!(r#"{name} "(" {args} ")""#)
        }
        CallSyntax::FunctionGemma => {
            let args = arguments(rules, &schema, literals, &hint, KeyStyle::Bare(":"), 0);
            format!(r#""call:" {name} "{{" {args} "}}""#)
        }
        CallSyntax::Harmony | CallSyntax::Json => {
            let args = arguments(rules, &schema, literals, &hint, KeyStyle::Quoted, 0);
            format!(r#"{name} " <|constrain|>json<|message|>" "{{" {args} "}}""#)
        }
    };
    rules.add(&hint, body)
}

/// The keyword arguments of a call (or the entries of an object): the
/// schema's properties in their order, each key then its value, required
/// ones always written and optional ones free to be left out (the grammar
/// is a choice of the first argument written, then each later one in
/// order). Empty when the schema has no properties.
fn arguments(
    rules: &mut Rules,
    schema: &Value,
    literals: Literals,
    hint: &str,
    keys: KeyStyle,
    depth: usize,
) -> String {
    let Some(properties) = schema.get("properties").and_then(Value::as_object) else {
        return String::new();
    };
    if properties.is_empty() {
        return String::new();
    }
    let required: HashSet<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut entries: Vec<(String, bool)> = Vec::new();
    for (key, property) in properties {
        let value = value_rule(rules, property, literals, &format!("{hint}-{key}"), depth);
        let key_text = match keys {
            KeyStyle::Bare(assign) => gbnf_literal(&format!("{key}{assign}")),
            KeyStyle::Quoted => format!(
                r#"{} " "?"#,
                gbnf_literal(&format!("{}:", Value::from(key.as_str())))
            ),
        };
        let entry = rules.add(&format!("{hint}-{key}-kv"), format!("{key_text} {value}"));
        entries.push((entry, required.contains(key.as_str())));
    }
    let separator = literals.separator();
    let first_required = entries.iter().position(|(_, r)| *r);
    let last_start = first_required.unwrap_or(entries.len() - 1);
    let mut alternatives = Vec::new();
    for start in 0..=last_start {
        let mut parts = vec![entries[start].0.clone()];
        for (entry, required) in &entries[start + 1..] {
            parts.push(match required {
                true => format!("{separator} {entry}"),
                false => format!("({separator} {entry})?"),
            });
        }
        alternatives.push(parts.join(" "));
    }
    let body = format!("({})", alternatives.join(" | "));
    let rule = rules.add(&format!("{hint}-args"), body);
    match first_required {
        Some(_) => rule,
        None => format!("{rule}?"),
    }
}

/// A rule (or an inline expression) for one value of `schema`.
fn value_rule(
    rules: &mut Rules,
    schema: &Value,
    literals: Literals,
    hint: &str,
    depth: usize,
) -> String {
    let Some(map) = schema.as_object() else {
        return any_value(rules, literals, depth);
    };
    if let Some(value) = map.get("const") {
        return literals.literal(value);
    }
    if let Some(Value::Array(options)) = map.get("enum") {
        let alternatives: Vec<String> = options.iter().map(|o| literals.literal(o)).collect();
        if !alternatives.is_empty() {
            return format!("({})", alternatives.join(" | "));
        }
    }
    for key in ["anyOf", "oneOf"] {
        if let Some(Value::Array(variants)) = map.get(key) {
            let alternatives: Vec<String> = variants
                .iter()
                .enumerate()
                .map(|(i, v)| value_rule(rules, v, literals, &format!("{hint}-{i}"), depth))
                .collect();
            if !alternatives.is_empty() {
                return format!("({})", alternatives.join(" | "));
            }
        }
    }
    match map.get("type") {
        Some(Value::String(kind)) => typed_value(rules, map, kind, literals, hint, depth),
        Some(Value::Array(kinds)) => {
            let alternatives: Vec<String> = kinds
                .iter()
                .filter_map(Value::as_str)
                .map(|kind| typed_value(rules, map, kind, literals, hint, depth))
                .collect();
            format!("({})", alternatives.join(" | "))
        }
        _ => any_value(rules, literals, depth),
    }
}

fn typed_value(
    rules: &mut Rules,
    map: &serde_json::Map<String, Value>,
    kind: &str,
    literals: Literals,
    hint: &str,
    depth: usize,
) -> String {
    let bound = |key: &str, default: u64| map.get(key).and_then(Value::as_u64).unwrap_or(default);
    match kind {
        "string" => string_rule(
            literals,
            bound("minLength", 0),
            bound("maxLength", GRAMMAR_MAX_STRING),
        ),
        "integer" => r#"("-"? ([0] | [1-9] [0-9]{0,15}))"#.to_string(),
        "number" => {
            r#"("-"? ([0] | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,3})?)"#
                .to_string()
        }
        "boolean" => format!(
            "({} | {})",
            literals.literal(&Value::Bool(true)),
            literals.literal(&Value::Bool(false))
        ),
        "null" => literals.literal(&Value::Null),
        "array" => {
            let item = match map.get("items") {
                Some(items) => {
                    value_rule(rules, items, literals, &format!("{hint}-item"), depth + 1)
                }
                None => any_value(rules, literals, depth + 1),
            };
            let max = bound("maxItems", GRAMMAR_MAX_ITEMS).max(1);
            let body = format!(
                r#""[" ({item} ({} {item}){{0,{}}})? "]""#,
                literals.separator(),
                max - 1
            );
            rules.add(&format!("{hint}-list"), body)
        }
        "object" => object_rule(rules, map, literals, hint, depth),
        _ => any_value(rules, literals, depth),
    }
}

/// An object value: its declared properties in order (as a call's
/// arguments are), or any entries when it declares none.
fn object_rule(
    rules: &mut Rules,
    map: &serde_json::Map<String, Value>,
    literals: Literals,
    hint: &str,
    depth: usize,
) -> String {
    let declared = map
        .get("properties")
        .and_then(Value::as_object)
        .is_some_and(|p| !p.is_empty());
    if !declared || depth >= ANY_VALUE_DEPTH {
        return any_value(rules, literals, depth);
    }
    // Python dicts quote their keys like JSON; FunctionGemma's are bare.
    let keys = match literals {
        Literals::FunctionGemma => KeyStyle::Bare(":"),
        Literals::Json | Literals::Python => KeyStyle::Quoted,
    };
    let schema = Value::Object(map.clone());
    let entries = arguments(rules, &schema, literals, hint, keys, depth + 1);
    rules.add(&format!("{hint}-obj"), format!(r#""{{" {entries} "}}""#))
}

/// A string of `min..=max` characters.
fn string_rule(literals: Literals, min: u64, max: u64) -> String {
    let max = max.max(min);
    match literals {
        Literals::FunctionGemma => format!(r#"("<escape>" [^<]{{{min},{max}}} "<escape>")"#),
        Literals::Json | Literals::Python => format!(
            r#"("\"" ([^"\\\x7F\x00-\x1F] | "\\" (["\\/bfnrt] | "u" [0-9a-fA-F]{{4}})){{{min},{max}}} "\"")"#
        ),
    }
}

/// Any value of bounded size and depth (for schemas that do not say).
fn any_value(rules: &mut Rules, literals: Literals, depth: usize) -> String {
    let scalar = format!(
        "({} | {} | {} | {} | {})",
        string_rule(literals, 0, GRAMMAR_MAX_STRING),
        r#"("-"? ([0] | [1-9] [0-9]{0,15}) ("." [0-9]{1,16})?)"#,
        literals.literal(&Value::Bool(true)),
        literals.literal(&Value::Bool(false)),
        literals.literal(&Value::Null),
    );
    if depth >= ANY_VALUE_DEPTH {
        return scalar;
    }
    let inner = any_value(rules, literals, depth + 1);
    let separator = literals.separator();
    let key = match literals {
        Literals::FunctionGemma => r#"[a-zA-Z_] [a-zA-Z0-9_]{0,63} ":""#.to_string(),
        _ => format!("{} {}", string_rule(literals, 0, 64), r#"": ""#),
    };
    let more = GRAMMAR_MAX_ITEMS - 1;
    let body = format!(
        r#"{scalar} | "[" ({inner} ({separator} {inner}){{0,{more}}})? "]" | "{{" ({key} {inner} ({separator} {key} {inner}){{0,{more}}})? "}}""#
    );
    rules.add(&format!("any-{depth}"), body)
}

/// A GBNF string literal.
pub(super) fn gbnf_literal(text: &str) -> String {
    let mut out = String::from("\"");
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
