//! The textual formats in which models write tool calls, and the JSON schema
//! of one call in each (from which the backend builds its grammar).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::ToolDefinition;

/// How a model writes a tool call. Chosen from the chat template's family;
/// used to teach the model, to build the grammar and to find the trigger of a
/// lazy grammar. The parser accepts every format whatever is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallFormat {
    /// Hermes / Qwen: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    Hermes,
    /// Llama 3.x: `{"name": …, "parameters": {…}}` (optionally after `<|python_tag|>`).
    Llama3,
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]`.
    Mistral,
}

impl ToolCallFormat {
    /// The text that opens a call; a lazy grammar starts constraining here.
    pub fn trigger(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "<tool_call>",
            ToolCallFormat::Llama3 => "{\"name\"",
            ToolCallFormat::Mistral => "[TOOL_CALLS]",
        }
    }

    /// The literal text before the call's JSON.
    pub fn prefix(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "<tool_call>\n",
            ToolCallFormat::Llama3 => "",
            ToolCallFormat::Mistral => "[TOOL_CALLS][",
        }
    }

    /// The literal text after the call's JSON.
    pub fn suffix(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "\n</tool_call>",
            ToolCallFormat::Llama3 => "",
            ToolCallFormat::Mistral => "]",
        }
    }

    /// The key holding the arguments object.
    pub fn arguments_key(self) -> &'static str {
        match self {
            ToolCallFormat::Llama3 => "parameters",
            ToolCallFormat::Hermes | ToolCallFormat::Mistral => "arguments",
        }
    }

    /// The JSON schema of one call to any of `tools`: the name is a constant
    /// per tool and the arguments follow that tool's schema, bounded by
    /// [`bound_for_grammar`] so that every call the grammar admits ends.
    pub fn call_schema(self, tools: &[ToolDefinition]) -> Value {
        let variants: Vec<Value> = tools
            .iter()
            .map(|tool| {
                let mut arguments = tool.parameters.clone();
                bound_for_grammar(&mut arguments);
                json!({
                    "type": "object",
                    "properties": {
                        "name": {"const": tool.name},
                        (self.arguments_key()): arguments,
                    },
                    "required": ["name", self.arguments_key()],
                    "additionalProperties": false,
                })
            })
            .collect();
        match variants.len() {
            1 => variants.into_iter().next().expect("one variant"),
            _ => json!({"oneOf": variants}),
        }
    }
}

/// Longest string a constrained call may write where the schema sets no limit.
pub const GRAMMAR_MAX_STRING: u64 = 512;
/// Most array items a constrained call may write where the schema sets no limit.
pub const GRAMMAR_MAX_ITEMS: u64 = 16;

/// Tightens a parameters schema for the grammar (never for validation, so
/// everything the grammar admits still validates): objects that leave
/// additional properties open admit only the declared ones, and strings and
/// arrays without a bound get one. Small models under greedy decoding can
/// otherwise repeat an array item or a word until the token limit.
pub fn bound_for_grammar(schema: &mut Value) {
    match schema {
        Value::Object(map) => {
            if map.contains_key("properties") && !map.contains_key("additionalProperties") {
                map.insert("additionalProperties".into(), Value::Bool(false));
            }
            let free = !["enum", "const", "pattern", "format"]
                .iter()
                .any(|k| map.contains_key(*k));
            match map.get("type").and_then(Value::as_str) {
                Some("string") if free && !map.contains_key("maxLength") => {
                    map.insert("maxLength".into(), json!(GRAMMAR_MAX_STRING));
                }
                Some("array") if !map.contains_key("maxItems") => {
                    map.insert("maxItems".into(), json!(GRAMMAR_MAX_ITEMS));
                }
                _ => {}
            }
            map.values_mut().for_each(bound_for_grammar);
        }
        Value::Array(items) => items.iter_mut().for_each(bound_for_grammar),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn call_schema_pins_names_and_closes_objects() {
        let tools = vec![
            ToolDefinition {
                name: "a".into(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {"x": {"type": "integer"}}}),
            },
            ToolDefinition {
                name: "b".into(),
                description: String::new(),
                parameters: json!({"type": "object", "properties": {}, "additionalProperties": true}),
            },
        ];
        let schema = ToolCallFormat::Hermes.call_schema(&tools);
        assert_eq!(schema["oneOf"][0]["properties"]["name"]["const"], "a");
        assert_eq!(
            schema["oneOf"][0]["properties"]["arguments"]["additionalProperties"],
            false
        );
        assert_eq!(
            schema["oneOf"][1]["properties"]["arguments"]["additionalProperties"],
            true
        );
        let one = ToolCallFormat::Llama3.call_schema(&tools[..1]);
        let mut bounded = json!({"type": "object", "properties": {
            "s": {"type": "string"}, "e": {"type": "string", "enum": ["a"]},
            "l": {"type": "array", "items": {"type": "string", "maxLength": 3}}}});
        bound_for_grammar(&mut bounded);
        assert_eq!(bounded["properties"]["s"]["maxLength"], GRAMMAR_MAX_STRING);
        assert!(bounded["properties"]["e"].get("maxLength").is_none());
        assert_eq!(bounded["properties"]["l"]["maxItems"], GRAMMAR_MAX_ITEMS);
        assert_eq!(bounded["properties"]["l"]["items"]["maxLength"], 3);
        assert_eq!(one["required"], json!(["name", "parameters"]));
    }
}
