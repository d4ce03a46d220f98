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
use crate::tools::{function_gemma, ToolCallFormat, ToolDefinition};

/// Everything the model reads about tools, per format, kept together so the
/// wording can be tuned in one place. The tool section of the system prompt
/// is `preamble`, the tools as `layout` writes them, then `postamble`.
struct Wording {
    preamble: &'static str,
    layout: ToolsLayout,
    postamble: &'static str,
    /// How one tool result reads in the merged user turn.
    results: ResultStyle,
}

/// How a tool result is written back for the model.
#[derive(Clone, Copy)]
enum ResultStyle {
    /// `{"name": …, "content": …}` between a prefix and a suffix.
    Named {
        prefix: &'static str,
        suffix: &'static str,
    },
    /// The content alone between a prefix and a suffix.
    Plain {
        prefix: &'static str,
        suffix: &'static str,
    },
    /// FunctionGemma's `<start_function_response>response:name{…}<end_function_response>`.
    FunctionGemma,
}

/// The Hermes function-calling prompt, word for word as Qwen 2.5's template
/// writes it, so Hermes/Qwen models see the prompt they were trained on.
const HERMES: Wording = Wording {
    preamble: "# Tools\n\n\
        You may call one or more functions to assist with the user query.\n\n\
        You are provided with function signatures within <tools></tools> XML tags:\n\
        <tools>",
    layout: ToolsLayout::OnePerLine,
    postamble: "</tools>\n\n\
        For each function call, return a json object with function name and arguments \
        within <tool_call></tool_call> XML tags:\n\
        <tool_call>\n\
        {\"name\": <function-name>, \"arguments\": <args-json-object>}\n\
        </tool_call>",
    results: ResultStyle::Named {
        prefix: "<tool_response>\n",
        suffix: "\n</tool_response>",
    },
};

/// How the tool definitions sit between the preamble and the postamble.
#[derive(Clone, Copy)]
enum ToolsLayout {
    /// A newline, then one JSON object per line, then a newline.
    OnePerLine,
    /// One JSON list of every tool on a single line, glued to both sides
    /// (Python's `json.dumps(tools)`).
    OneList,
    /// A JSON list indented by `indent` spaces; `bare` writes each tool as
    /// `{"name", "description", "parameters"}` without OpenAI's wrapper.
    Indented { indent: usize, bare: bool },
    /// FunctionGemma's declarations, one after the other.
    Declarations,
}

/// SmolLM2's function-calling prompt, word for word as its model card
/// (HuggingFaceTB/SmolLM2-1.7B-Instruct, "Function calling") renders it:
/// the card's Jinja text with `json.dumps` of the tool list, trailing
/// spaces included. Results use Hermes's `<tool_response>` wrapper, which
/// SmolLM2's ChatML training also saw.
const SMOLLM2: Wording = Wording {
    preamble: "You are an expert in composing functions. You are given a question and a set of \
        possible functions. \nBased on the question, you will need to make one or more \
        function/tool calls to achieve the purpose. \nIf none of the functions can be used, \
        point it out and refuse to answer. \nIf the given question lacks the parameters \
        required by the function, also point it out.\n\n\
        You have access to the following tools:\n<tools>",
    layout: ToolsLayout::OneList,
    postamble: "</tools>\n\n\
        The output MUST strictly adhere to the following format, and NO other text MUST be \
        included.\nThe example format is as follows. Please make sure the parameter type is \
        correct. If no function call is needed, please make the tool calls an empty list '[]'.\n\
        <tool_call>[\n\
        {\"name\": \"func_name1\", \"arguments\": {\"argument1\": \"value1\", \"argument2\": \"value2\"}},\n\
        ... (more tool calls as required)\n\
        ]</tool_call>",
    results: ResultStyle::Named {
        prefix: "<tool_response>\n",
        suffix: "\n</tool_response>",
    },
};

/// Llama 3.1's JSON tool calling, after Meta's prompt format.
const LLAMA3: Wording = Wording {
    preamble: "# Tools\n\n\
        You have access to the following functions:\n",
    layout: ToolsLayout::OnePerLine,
    postamble: "\nTo call a function, respond with only a JSON object in the format \
        {\"name\": function name, \"parameters\": dictionary of argument name and its value}. \
        Do not use variables. To call several functions, write one such object per line.",
    results: ResultStyle::Named {
        prefix: "",
        suffix: "",
    },
};

/// Mistral's `[TOOL_CALLS]` list.
const MISTRAL: Wording = Wording {
    preamble: "# Tools\n\n\
        You have access to the following functions:\n",
    layout: ToolsLayout::OnePerLine,
    postamble: "\nTo call one or more functions, respond with [TOOL_CALLS] followed by a JSON \
        list of calls: [TOOL_CALLS][{\"name\": function name, \"arguments\": dictionary of \
        argument name and its value}]",
    results: ResultStyle::Named {
        prefix: "",
        suffix: "",
    },
};

/// Granite 3.x's own instruction, word for word from its template (which
/// then lists the tools, indented by four, in an `available_tools` turn).
const GRANITE: Wording = Wording {
    preamble: "You are a helpful assistant with access to the following tools. When a tool \
        is required to answer the user's query, respond only with <|tool_call|> followed by a \
        JSON list of tools used. If a tool does not exist in the provided list of tools, notify \
        the user that you do not have the ability to fulfill the request.\n\n",
    layout: ToolsLayout::Indented {
        indent: 4,
        bare: false,
    },
    postamble: "",
    results: ResultStyle::Plain {
        prefix: "",
        suffix: "",
    },
};

/// Gemma's function-calling prompt, word for word from Google's guide
/// (ai.google.dev/gemma/docs/capabilities/function-calling), with the
/// tools as the guide lists them; results in the ```` ```tool_output ````
/// block Google's Gemma examples read them from.
const GEMMA: Wording = Wording {
    preamble: "You have access to functions. If you decide to invoke any of the function(s),\n \
        you MUST put it in the format of\n\
        [func_name1(params_name1=params_value1, params_name2=params_value2...), func_name2(params)]\n\n\
        You SHOULD NOT include any other text in the response if you call a function\n",
    layout: ToolsLayout::Indented {
        indent: 2,
        bare: true,
    },
    postamble: "",
    results: ResultStyle::Plain {
        prefix: "```tool_output\n",
        suffix: "\n```",
    },
};

/// LFM2's tool list, as its template writes it into the system prompt.
const LFM2: Wording = Wording {
    preamble: "List of tools: <|tool_list_start|>",
    layout: ToolsLayout::OneList,
    postamble: "<|tool_list_end|>",
    results: ResultStyle::Plain {
        prefix: "<|tool_response_start|>",
        suffix: "<|tool_response_end|>",
    },
};

/// FunctionGemma's developer prompt, which its guide says switches the
/// model to function calling, then the declarations.
const FUNCTION_GEMMA: Wording = Wording {
    preamble: "You are a model that can do function calling with the following functions",
    layout: ToolsLayout::Declarations,
    postamble: "",
    results: ResultStyle::FunctionGemma,
};

/// For gpt-oss under a template that does not list tools (its own does):
/// the tools and the channel its calls go to.
const HARMONY: Wording = Wording {
    preamble: "# Tools\n\n## functions\n",
    layout: ToolsLayout::OnePerLine,
    postamble: "\nCalls to these tools must go to the commentary channel: 'functions'.",
    results: ResultStyle::Plain {
        prefix: "",
        suffix: "",
    },
};

impl Wording {
    fn of(format: ToolCallFormat) -> &'static Wording {
        match format {
            ToolCallFormat::Hermes => &HERMES,
            ToolCallFormat::SmolLm2 => &SMOLLM2,
            ToolCallFormat::Llama3 => &LLAMA3,
            ToolCallFormat::Mistral => &MISTRAL,
            ToolCallFormat::Granite => &GRANITE,
            ToolCallFormat::Pythonic => &GEMMA,
            ToolCallFormat::Lfm2 => &LFM2,
            ToolCallFormat::FunctionGemma => &FUNCTION_GEMMA,
            ToolCallFormat::Harmony => &HARMONY,
        }
    }

    fn tool_section(&self, tools: &[ToolDefinition]) -> String {
        let mut section = String::from(self.preamble);
        match self.layout {
            ToolsLayout::OnePerLine => {
                for tool in tools {
                    section.push('\n');
                    section.push_str(&python_json(&super::tool_json(tool)));
                }
                section.push('\n');
            }
            ToolsLayout::OneList => {
                section.push_str(&python_json(&super::tools_json(tools)));
            }
            ToolsLayout::Indented { indent, bare } => {
                let list: Vec<Value> = tools
                    .iter()
                    .map(|tool| match bare {
                        true => serde_json::json!({
                            "name": tool.name,
                            "description": tool.description,
                            "parameters": tool.parameters,
                        }),
                        false => super::tool_json(tool),
                    })
                    .collect();
                section.push_str(&PyJson::new(Some(indent)).dumps(&Value::Array(list)));
            }
            ToolsLayout::Declarations => {
                for tool in tools {
                    section.push_str(&function_gemma::write_declaration(tool));
                }
            }
        }
        section.push_str(self.postamble);
        section
    }

    /// One tool result, in the format's style. Content that is JSON is
    /// embedded as JSON so the model reads structure, not an escaped string.
    fn tool_result(&self, name: &str, content: &str) -> String {
        let parsed = serde_json::from_str::<Value>(content);
        match self.results {
            ResultStyle::Named { prefix, suffix } => {
                let content = parsed.unwrap_or_else(|_| Value::from(content));
                format!(
                    "{prefix}{{\"name\": {}, \"content\": {}}}{suffix}",
                    python_json(&Value::from(name)),
                    python_json(&content),
                )
            }
            ResultStyle::Plain { prefix, suffix } => format!("{prefix}{content}{suffix}"),
            ResultStyle::FunctionGemma => {
                function_gemma::write_response(name, &parsed.unwrap_or_else(|_| content.into()))
            }
        }
    }
}

fn python_json(value: &Value) -> String {
    PyJson::new(None).dumps(value)
}

/// The text of an assistant turn's tool calls, written as the model of
/// `format` writes them.
pub(super) fn calls_text(message: &Message, format: ToolCallFormat) -> String {
    let calls: Vec<(&str, &Value)> = message
        .tool_calls
        .iter()
        .map(|call| (call.name.as_str(), &call.arguments))
        .collect();
    format.write_calls(&calls)
}

/// The messages a template that formats tools itself renders: as they
/// are, except that a template that does not write assistant calls gets
/// them as text in the content (else the model would not see its own
/// calls), and Mistral's templates get call ids of the nine letters and
/// digits they insist on. Ids are mapped the same way every time, so the
/// same history renders to the same prompt.
pub fn prepare_native_messages(
    messages: &[Message],
    format: ToolCallFormat,
    renders_calls: bool,
) -> Vec<Message> {
    let mistral = format == ToolCallFormat::Mistral;
    messages
        .iter()
        .map(|message| {
            let mut message = message.clone();
            if !renders_calls && !message.tool_calls.is_empty() {
                let calls = calls_text(&message, format);
                message.content = match message.content.trim().is_empty() {
                    true => calls,
                    false => format!("{}\n{calls}", message.content),
                };
            }
            if mistral {
                for call in &mut message.tool_calls {
                    call.id = mistral_call_id(&call.id);
                }
                if let Some(id) = &message.tool_call_id {
                    message.tool_call_id = Some(mistral_call_id(id));
                }
            }
            message
        })
        .collect()
}

/// A call id as Mistral's templates require it: exactly nine ASCII letters
/// and digits. The id's own letters and digits, padded with zeros in front
/// when shorter; a longer id becomes nine base-36 digits of its FNV-1a hash.
fn mistral_call_id(id: &str) -> String {
    let alnum: String = id.chars().filter(char::is_ascii_alphanumeric).collect();
    if alnum.len() <= 9 {
        return format!("{alnum:0>9}");
    }
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in id.bytes() {
        hash = (hash ^ u64::from(byte)).wrapping_mul(0x0100_0000_01b3);
    }
    let mut digits = Vec::with_capacity(9);
    for _ in 0..9 {
        digits.push(char::from_digit((hash % 36) as u32, 36).unwrap_or('0'));
        hash /= 36;
    }
    digits.into_iter().collect()
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
    fn smollm2_section_is_the_model_card_prompt() {
        let out = prepare_messages(
            &[Message::system("Be brief."), Message::user("hi")],
            &[weather_tool()],
            ToolCallFormat::SmolLm2,
        );
        assert_eq!(
            out[0].content,
            "Be brief.\n\n\
             You are an expert in composing functions. You are given a question and a set of \
             possible functions. \nBased on the question, you will need to make one or more \
             function/tool calls to achieve the purpose. \nIf none of the functions can be used, \
             point it out and refuse to answer. \nIf the given question lacks the parameters \
             required by the function, also point it out.\n\n\
             You have access to the following tools:\n\
             <tools>[{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \
             \"description\": \"Get the weather.\", \"parameters\": {\"type\": \"object\", \
             \"properties\": {\"city\": {\"type\": \"string\"}}}}}]</tools>\n\n\
             The output MUST strictly adhere to the following format, and NO other text MUST be \
             included.\nThe example format is as follows. Please make sure the parameter type is \
             correct. If no function call is needed, please make the tool calls an empty list \
             '[]'.\n<tool_call>[\n{\"name\": \"func_name1\", \"arguments\": {\"argument1\": \
             \"value1\", \"argument2\": \"value2\"}},\n... (more tool calls as required)\n\
             ]</tool_call>"
        );
    }

    #[test]
    fn smollm2_calls_are_one_list() {
        let out = prepare_messages(&conversation(), &[], ToolCallFormat::SmolLm2);
        assert_eq!(
            out[1].content,
            "Checking.\n<tool_call>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}, \
             {\"name\": \"get_time\", \"arguments\": {\"city\": \"Paris\"}}]</tool_call>"
        );
        assert!(out[2]
            .content
            .starts_with("<tool_response>\n{\"name\": \"get_weather\""));
        let names: Vec<String> = crate::tools::parser::parse(&out[1].content)
            .calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["get_weather", "get_time"]);
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
