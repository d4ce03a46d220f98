//! Teaching a tool-call format to templates that do not handle tools.
//!
//! Built-in templates and GGUF templates that ignore `tools` only know plain
//! turns. For them the engine writes the tool definitions into the system
//! prompt, writes earlier tool calls back as text in the format the model is
//! asked to use, and turns tool results into user turns. Templates such as
//! Gemma's, Mistral's or Llama 2's insist on strict user/assistant
//! alternation, which is why consecutive results become a single user turn.

use std::collections::HashMap;

use serde_json::Value;

use super::jinja::PyJson;
use crate::message::{Message, Role};
use crate::tools::{ToolCallFormat, ToolDefinition};

/// Everything the model reads about tools, per format, kept together so the
/// wording can be tuned in one place. The tool section of the system prompt
/// is `preamble`, then one JSON line per tool, then `postamble`, joined by
/// newlines.
struct Wording {
    preamble: &'static str,
    postamble: &'static str,
    /// Text around one tool result in the merged user turn.
    result_prefix: &'static str,
    result_suffix: &'static str,
}

/// The Hermes function-calling prompt, word for word as Qwen 2.5's template
/// writes it, so Hermes/Qwen models see the prompt they were trained on.
const HERMES: Wording = Wording {
    preamble: "# Tools\n\n\
        You may call one or more functions to assist with the user query.\n\n\
        You are provided with function signatures within <tools></tools> XML tags:\n\
        <tools>",
    postamble: "</tools>\n\n\
        For each function call, return a json object with function name and arguments \
        within <tool_call></tool_call> XML tags:\n\
        <tool_call>\n\
        {\"name\": <function-name>, \"arguments\": <args-json-object>}\n\
        </tool_call>",
    result_prefix: "<tool_response>\n",
    result_suffix: "\n</tool_response>",
};

/// Llama 3.1's JSON tool calling, after Meta's prompt format.
const LLAMA3: Wording = Wording {
    preamble: "# Tools\n\n\
        You have access to the following functions:\n",
    postamble: "\nTo call a function, respond with only a JSON object in the format \
        {\"name\": function name, \"parameters\": dictionary of argument name and its value}. \
        Do not use variables. To call several functions, write one such object per line.",
    result_prefix: "",
    result_suffix: "",
};

/// Mistral's `[TOOL_CALLS]` list.
const MISTRAL: Wording = Wording {
    preamble: "# Tools\n\n\
        You have access to the following functions:\n",
    postamble: "\nTo call one or more functions, respond with [TOOL_CALLS] followed by a JSON \
        list of calls: [TOOL_CALLS][{\"name\": function name, \"arguments\": dictionary of \
        argument name and its value}]",
    result_prefix: "",
    result_suffix: "",
};

impl Wording {
    fn of(format: ToolCallFormat) -> &'static Wording {
        match format {
            ToolCallFormat::Hermes => &HERMES,
            ToolCallFormat::Llama3 => &LLAMA3,
            ToolCallFormat::Mistral => &MISTRAL,
        }
    }

    fn tool_section(&self, tools: &[ToolDefinition]) -> String {
        let mut section = String::from(self.preamble);
        for tool in tools {
            section.push('\n');
            section.push_str(&python_json(&super::tool_json(tool)));
        }
        section.push('\n');
        section.push_str(self.postamble);
        section
    }

    /// One tool result: `{"name": …, "content": …}`, with content that is
    /// JSON embedded as JSON so the model reads structure, not an escaped
    /// string.
    fn tool_result(&self, name: &str, content: &str) -> String {
        let content =
            serde_json::from_str::<Value>(content).unwrap_or_else(|_| Value::from(content));
        format!(
            "{}{{\"name\": {}, \"content\": {}}}{}",
            self.result_prefix,
            python_json(&Value::from(name)),
            python_json(&content),
            self.result_suffix
        )
    }
}

fn python_json(value: &Value) -> String {
    PyJson::new(None).dumps(value)
}

/// One call as the model would write it, without the format's wrapper.
fn call_json(format: ToolCallFormat, name: &str, arguments: &Value) -> String {
    format!(
        "{{\"name\": {}, \"{}\": {}}}",
        python_json(&Value::from(name)),
        format.arguments_key(),
        python_json(arguments)
    )
}

/// The text of an assistant turn's tool calls, in `format`. Mistral writes
/// every call of a turn in one `[TOOL_CALLS][…]` list; the other formats
/// write one wrapped call per line.
fn calls_text(message: &Message, format: ToolCallFormat) -> String {
    let calls = message
        .tool_calls
        .iter()
        .map(|call| call_json(format, &call.name, &call.arguments));
    match format {
        ToolCallFormat::Mistral => format!(
            "{}{}{}",
            format.prefix(),
            calls.collect::<Vec<_>>().join(", "),
            format.suffix()
        ),
        ToolCallFormat::Hermes | ToolCallFormat::Llama3 => calls
            .map(|call| format!("{}{}{}", format.prefix(), call, format.suffix()))
            .collect::<Vec<_>>()
            .join("\n"),
    }
}

/// The messages a template without tool support renders: the tool section
/// appended to the system prompt (created if missing) when `tools` is not
/// empty, assistant tool calls written into the content, and each run of
/// tool results merged into one user message. Works on a copy; the
/// conversation itself keeps its structured form.
pub fn prepare_messages(
    messages: &[Message],
    tools: &[ToolDefinition],
    format: ToolCallFormat,
) -> Vec<Message> {
    let wording = Wording::of(format);
    let mut out: Vec<Message> = Vec::with_capacity(messages.len() + 1);
    // Tool messages normally carry their tool's name; when one does not, the
    // name comes from the call it answers. Only looked up, never iterated.
    let mut call_names: HashMap<&str, &str> = HashMap::new();
    let mut results: Vec<String> = Vec::new();

    for message in messages {
        if message.role == Role::Tool {
            let name = message
                .name
                .as_deref()
                .or_else(|| {
                    let id = message.tool_call_id.as_deref()?;
                    call_names.get(id).copied()
                })
                .unwrap_or("");
            results.push(wording.tool_result(name, &message.text_with_placeholders()));
            continue;
        }
        flush_results(&mut results, &mut out);
        if message.role == Role::Assistant && !message.tool_calls.is_empty() {
            for call in &message.tool_calls {
                call_names.insert(&call.id, &call.name);
            }
            let calls = calls_text(message, format);
            let content = if message.content.trim().is_empty() {
                calls
            } else {
                format!("{}\n{}", message.content, calls)
            };
            out.push(Message {
                content,
                tool_calls: Vec::new(),
                ..message.clone()
            });
        } else {
            out.push(message.clone());
        }
    }
    flush_results(&mut results, &mut out);

    if !tools.is_empty() {
        let section = wording.tool_section(tools);
        match out.first_mut() {
            Some(system) if system.role == Role::System => {
                let existing = system.content.trim_end();
                system.content = if existing.is_empty() {
                    section
                } else {
                    format!("{existing}\n\n{section}")
                };
            }
            _ => out.insert(0, Message::system(section)),
        }
    }
    out
}

fn flush_results(results: &mut Vec<String>, out: &mut Vec<Message>) {
    if !results.is_empty() {
        out.push(Message::user(results.join("\n")));
        results.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use serde_json::json;

    fn weather_tool() -> ToolDefinition {
        ToolDefinition {
            name: "get_weather".into(),
            description: "Get the weather.".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }
    }

    fn call(id: &str, name: &str, arguments: Value) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    fn conversation() -> Vec<Message> {
        vec![
            Message::user("Weather and time in Paris?"),
            Message::assistant_with_tool_calls(
                "Checking.",
                vec![
                    call("c1", "get_weather", json!({"city": "Paris"})),
                    call("c2", "get_time", json!({"city": "Paris"})),
                ],
            ),
            Message::tool("c1", "get_weather", r#"{"temp_c": 18}"#),
            Message {
                name: None,
                ..Message::tool("c2", "get_time", "14:05")
            },
        ]
    }

    #[test]
    fn hermes_section_creates_a_system_message() {
        let out = prepare_messages(
            &[Message::user("hi")],
            &[weather_tool()],
            ToolCallFormat::Hermes,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(out[0].role, Role::System);
        assert_eq!(
            out[0].content,
            "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n\
             You are provided with function signatures within <tools></tools> XML tags:\n<tools>\n\
             {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \
             \"Get the weather.\", \"parameters\": {\"type\": \"object\", \"properties\": \
             {\"city\": {\"type\": \"string\"}}}}}\n</tools>\n\n\
             For each function call, return a json object with function name and arguments \
             within <tool_call></tool_call> XML tags:\n<tool_call>\n\
             {\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call>"
        );
        assert_eq!(out[1], Message::user("hi"));
    }

    #[test]
    fn hermes_calls_and_results() {
        let out = prepare_messages(&conversation(), &[], ToolCallFormat::Hermes);
        assert_eq!(out.len(), 3);
        assert_eq!(out[1].role, Role::Assistant);
        assert!(out[1].tool_calls.is_empty());
        assert_eq!(
            out[1].content,
            "Checking.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n\
             <tool_call>\n{\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>"
        );
        assert_eq!(out[2].role, Role::User);
        assert_eq!(
            out[2].content,
            "<tool_response>\n{\"name\": \"get_weather\", \"content\": {\"temp_c\": 18}}\n</tool_response>\n\
             <tool_response>\n{\"name\": \"get_time\", \"content\": \"14:05\"}\n</tool_response>"
        );
    }

    #[test]
    fn llama3_format() {
        let mut messages = vec![Message::system("Be brief.")];
        messages.extend(conversation());
        let out = prepare_messages(&messages, &[weather_tool()], ToolCallFormat::Llama3);
        assert_eq!(
            out[0].content,
            "Be brief.\n\n# Tools\n\nYou have access to the following functions:\n\n\
             {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \
             \"Get the weather.\", \"parameters\": {\"type\": \"object\", \"properties\": \
             {\"city\": {\"type\": \"string\"}}}}}\n\n\
             To call a function, respond with only a JSON object in the format \
             {\"name\": function name, \"parameters\": dictionary of argument name and its value}. \
             Do not use variables. To call several functions, write one such object per line."
        );
        assert_eq!(
            out[2].content,
            "Checking.\n{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Paris\"}}\n\
             {\"name\": \"get_time\", \"parameters\": {\"city\": \"Paris\"}}"
        );
        assert_eq!(
            out[3].content,
            "{\"name\": \"get_weather\", \"content\": {\"temp_c\": 18}}\n\
             {\"name\": \"get_time\", \"content\": \"14:05\"}"
        );
    }

    #[test]
    fn mistral_format() {
        let out = prepare_messages(&conversation(), &[weather_tool()], ToolCallFormat::Mistral);
        assert!(out[0].content.ends_with(
            "respond with [TOOL_CALLS] followed by a JSON list of calls: \
             [TOOL_CALLS][{\"name\": function name, \"arguments\": dictionary of argument name \
             and its value}]"
        ));
        assert_eq!(
            out[2].content,
            "Checking.\n[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, \
             {\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}]"
        );
        assert_eq!(out[3].role, Role::User);
    }

    #[test]
    fn without_tools_only_history_is_rewritten() {
        let plain = vec![Message::system("s"), Message::user("u")];
        assert_eq!(prepare_messages(&plain, &[], ToolCallFormat::Hermes), plain);
    }
}
