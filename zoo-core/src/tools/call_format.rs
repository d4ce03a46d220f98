//! The textual formats in which models write tool calls: their markers,
//! how a reply's calls are written, and the JSON schema of one call in the
//! JSON formats (from which the backend builds its grammar).

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::ToolDefinition;

/// JSON as Python's `json.dumps` writes it (`", "` and `": "`), which is
/// what most chat templates and model cards show the models.
fn python_json(value: &Value) -> String {
    crate::pyjson::dumps(value)
}

/// How a model writes a tool call. Chosen from the chat template and the
/// model's metadata (see `template::detect`); used to teach the model, to
/// build the grammar and to find the trigger of a lazy grammar. The parser
/// accepts every format whatever is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallFormat {
    /// Hermes / Qwen 2.5 and 3 / Granite 4: `<tool_call>{"name": …, "arguments": {…}}</tool_call>`.
    Hermes,
    /// SmolLM2 (trained on Argilla's Synth-APIGen, as its model card shows):
    /// one list of calls, `<tool_call>[{"name": …, "arguments": {…}}, …]</tool_call>`;
    /// an empty list says that no function fits.
    SmolLm2,
    /// Llama 3.x: `{"name": …, "parameters": {…}}` (optionally after `<|python_tag|>`).
    Llama3,
    /// Mistral: `[TOOL_CALLS][{"name": …, "arguments": {…}}]`.
    Mistral,
    /// Granite 3.x: `<|tool_call|>[{"name": …, "arguments": {…}}]`.
    Granite,
    /// Gemma 3, as Google's function-calling guide teaches it: a bare
    /// Python list, `[get_weather(city="Paris")]`.
    Pythonic,
    /// LFM2: the same Python list between `<|tool_call_start|>` and
    /// `<|tool_call_end|>`.
    Lfm2,
    /// FunctionGemma: `<start_function_call>call:name{key:<escape>text<escape>}<end_function_call>`.
    FunctionGemma,
    /// gpt-oss (OpenAI's harmony): the arguments as JSON in a message to
    /// `functions.name` on the commentary channel, ended by `<|call|>`.
    Harmony,
}

/// How the calls of a format are written: which syntax holds a call's name
/// and arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallSyntax {
    /// A JSON object with the name and the arguments (`arguments_key`).
    Json,
    /// A Python call, `name(key=value)`.
    Python,
    /// FunctionGemma's `call:name{key:value}`.
    FunctionGemma,
    /// Harmony's header naming the tool, then the arguments as JSON.
    Harmony,
}

impl ToolCallFormat {
    /// Every format, in declaration order.
    pub const ALL: [ToolCallFormat; 9] = [
        ToolCallFormat::Hermes,
        ToolCallFormat::SmolLm2,
        ToolCallFormat::Llama3,
        ToolCallFormat::Mistral,
        ToolCallFormat::Granite,
        ToolCallFormat::Pythonic,
        ToolCallFormat::Lfm2,
        ToolCallFormat::FunctionGemma,
        ToolCallFormat::Harmony,
    ];

    /// The syntax of one call.
    pub fn syntax(self) -> CallSyntax {
        match self {
            ToolCallFormat::Pythonic | ToolCallFormat::Lfm2 => CallSyntax::Python,
            ToolCallFormat::FunctionGemma => CallSyntax::FunctionGemma,
            ToolCallFormat::Harmony => CallSyntax::Harmony,
            _ => CallSyntax::Json,
        }
    }

    /// The text that opens a call: what hides a call from the token stream
    /// and where a lazy grammar starts constraining.
    pub fn trigger(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes | ToolCallFormat::SmolLm2 => "<tool_call>",
            ToolCallFormat::Llama3 => "{\"name\"",
            ToolCallFormat::Mistral => "[TOOL_CALLS]",
            ToolCallFormat::Granite => "<|tool_call|>",
            ToolCallFormat::Pythonic => "[",
            ToolCallFormat::Lfm2 => "<|tool_call_start|>",
            ToolCallFormat::FunctionGemma => "<start_function_call>",
            ToolCallFormat::Harmony => " to=functions.",
        }
    }

    /// Whether the trigger opens a call only at the very start of a reply
    /// (after whitespace). A bare Python list has no marker of its own, and
    /// a `[` inside prose is just a bracket; a lazy grammar cannot wait for
    /// such a trigger, so these formats have none.
    pub fn trigger_only_at_start(self) -> bool {
        self == ToolCallFormat::Pythonic
    }

    /// The literal text before the calls.
    pub fn prefix(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "<tool_call>\n",
            ToolCallFormat::SmolLm2 => "<tool_call>[",
            ToolCallFormat::Llama3 => "",
            ToolCallFormat::Mistral => "[TOOL_CALLS][",
            ToolCallFormat::Granite => "<|tool_call|>[",
            ToolCallFormat::Pythonic => "[",
            ToolCallFormat::Lfm2 => "<|tool_call_start|>[",
            ToolCallFormat::FunctionGemma => "<start_function_call>",
            ToolCallFormat::Harmony => "<|channel|>commentary to=functions.",
        }
    }

    /// The literal text after the calls.
    pub fn suffix(self) -> &'static str {
        match self {
            ToolCallFormat::Hermes => "\n</tool_call>",
            ToolCallFormat::SmolLm2 => "]</tool_call>",
            ToolCallFormat::Llama3 => "",
            ToolCallFormat::Mistral | ToolCallFormat::Granite | ToolCallFormat::Pythonic => "]",
            ToolCallFormat::Lfm2 => "]<|tool_call_end|>",
            ToolCallFormat::FunctionGemma => "<end_function_call>",
            ToolCallFormat::Harmony => "<|call|>",
        }
    }

    /// What separates the calls of one reply inside a single list (the
    /// formats that write every call in one `prefix … suffix` block), or
    /// `None` where each call is wrapped on its own.
    pub fn list_separator(self) -> Option<&'static str> {
        match self {
            ToolCallFormat::SmolLm2
            | ToolCallFormat::Mistral
            | ToolCallFormat::Granite
            | ToolCallFormat::Pythonic
            | ToolCallFormat::Lfm2 => Some(", "),
            ToolCallFormat::Hermes
            | ToolCallFormat::Llama3
            | ToolCallFormat::FunctionGemma
            | ToolCallFormat::Harmony => None,
        }
    }

    /// What separates wrapped calls written one after the other.
    pub fn call_separator(self) -> &'static str {
        match self {
            ToolCallFormat::FunctionGemma | ToolCallFormat::Harmony => "",
            _ => "\n",
        }
    }

    /// The text a model of this format writes to say that no tool fits,
    /// where the format has one (SmolLM2's empty list).
    pub fn no_call(self) -> Option<&'static str> {
        match self {
            ToolCallFormat::SmolLm2 => Some("<tool_call>[]</tool_call>"),
            _ => None,
        }
    }

    /// What opens and closes a string value inside a call.
    pub fn string_delimiter(self) -> &'static str {
        match self {
            ToolCallFormat::FunctionGemma => "<escape>",
            _ => "\"",
        }
    }

    /// The text that opens a tool result where the format marks results
    /// in the conversation (what a small model may echo instead of
    /// answering after a result).
    pub fn result_marker(self) -> Option<&'static str> {
        match self {
            ToolCallFormat::Hermes | ToolCallFormat::SmolLm2 => Some("<tool_response>"),
            ToolCallFormat::Pythonic => Some("```tool_output"),
            ToolCallFormat::Lfm2 => Some("<|tool_response_start|>"),
            ToolCallFormat::FunctionGemma => Some("<start_function_response>"),
            ToolCallFormat::Mistral => Some("[TOOL_RESULTS]"),
            ToolCallFormat::Llama3 | ToolCallFormat::Granite | ToolCallFormat::Harmony => None,
        }
    }

    /// The beginning of a call to `name`, as far as it is the same for every
    /// call to that tool: what the model's probability of calling `name` is
    /// measured on.
    pub fn call_opening(self, name: &str) -> String {
        let prefix = self.prefix();
        match self.syntax() {
            CallSyntax::Json => format!("{prefix}{{\"name\": \"{name}\""),
            CallSyntax::Python => format!("{prefix}{name}("),
            CallSyntax::FunctionGemma => format!("{prefix}call:{name}{{"),
            CallSyntax::Harmony => format!("{prefix}{name} <|constrain|>json<|message|>"),
        }
    }

    /// Writes the calls of one reply as the model would: one list for the
    /// formats that have one, else each call wrapped on its own.
    pub fn write_calls(self, calls: &[(&str, &Value)]) -> String {
        let one = |name: &str, arguments: &Value| -> String {
            match self.syntax() {
                CallSyntax::Json => format!(
                    "{{\"name\": {}, \"{}\": {}}}",
                    python_json(&Value::from(name)),
                    self.arguments_key(),
                    python_json(arguments)
                ),
                CallSyntax::Python => {
                    let mut out = String::new();
                    super::pythonic::write_call(name, arguments, &mut out);
                    out
                }
                CallSyntax::FunctionGemma => {
                    let mut out = format!("call:{name}");
                    match arguments {
                        Value::Object(_) => super::function_gemma::write_value(arguments, &mut out),
                        _ => out.push_str("{}"),
                    }
                    out
                }
                CallSyntax::Harmony => format!(
                    "{name} <|constrain|>json<|message|>{}",
                    serde_json::to_string(arguments).unwrap_or_else(|_| "{}".into())
                ),
            }
        };
        let written = calls.iter().map(|(name, arguments)| one(name, arguments));
        match self.list_separator() {
            Some(separator) => format!(
                "{}{}{}",
                self.prefix(),
                written.collect::<Vec<_>>().join(separator),
                self.suffix()
            ),
            None => written
                .map(|call| format!("{}{}{}", self.prefix(), call, self.suffix()))
                .collect::<Vec<_>>()
                .join(self.call_separator()),
        }
    }

    /// The key holding the arguments object in the JSON syntax.
    pub fn arguments_key(self) -> &'static str {
        match self {
            ToolCallFormat::Llama3 => "parameters",
            _ => "arguments",
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
