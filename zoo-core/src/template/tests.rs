//! Golden tests: exact prompt strings, one per template behaviour, numbered
//! `te_` like the engine's test matrix (zoo-core/tests/engine/).

use serde_json::json;

use super::*;
use crate::error::ErrorCode;
use crate::message::ToolCall;

fn special(bos: &str, eos: &str) -> SpecialTokens {
    SpecialTokens {
        bos: bos.into(),
        eos: eos.into(),
    }
}

/// system + user + assistant + user, the conversation every golden test renders.
fn conversation() -> Vec<Message> {
    vec![
        Message::system("You are a helpful assistant."),
        Message::user("Hello!"),
        Message::assistant("Hi! How can I help?"),
        Message::user("What is 2+2?"),
    ]
}

fn render_builtin(family: TemplateFamily, special: SpecialTokens) -> String {
    ChatTemplate::builtin(family, special)
        .render(&conversation(), &[], true)
        .unwrap()
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "get_weather".into(),
        description: "Get the current weather for a city.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        }),
    }
}

fn weather_call(id: &str, city: &str) -> ToolCall {
    ToolCall {
        id: id.into(),
        name: "get_weather".into(),
        arguments: json!({"city": city}),
    }
}

#[test]
fn te_001_llama3_format() {
    assert_eq!(
        render_builtin(
            TemplateFamily::Llama3,
            special("<|begin_of_text|>", "<|eot_id|>")
        ),
        "<|begin_of_text|>\
         <|start_header_id|>system<|end_header_id|>\n\nYou are a helpful assistant.<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nHello!<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\nHi! How can I help?<|eot_id|>\
         <|start_header_id|>user<|end_header_id|>\n\nWhat is 2+2?<|eot_id|>\
         <|start_header_id|>assistant<|end_header_id|>\n\n"
    );
}

#[test]
fn te_002_chatml_format() {
    assert_eq!(
        render_builtin(TemplateFamily::Chatml, special("", "<|im_end|>")),
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n\
         <|im_start|>user\nHello!<|im_end|>\n\
         <|im_start|>assistant\nHi! How can I help?<|im_end|>\n\
         <|im_start|>user\nWhat is 2+2?<|im_end|>\n\
         <|im_start|>assistant\n"
    );
}

#[test]
fn te_003_mistral_format() {
    assert_eq!(
        render_builtin(TemplateFamily::Mistral, special("<s>", "</s>")),
        "<s>[INST] You are a helpful assistant.\n\nHello![/INST] Hi! How can I help?</s>\
         [INST] What is 2+2?[/INST]"
    );
}

#[test]
fn llama2_format() {
    assert_eq!(
        render_builtin(TemplateFamily::Llama2, special("<s>", "</s>")),
        "<s>[INST] <<SYS>>\nYou are a helpful assistant.\n<</SYS>>\n\nHello! [/INST] \
         Hi! How can I help? </s><s>[INST] What is 2+2? [/INST]"
    );
}

#[test]
fn phi3_format() {
    assert_eq!(
        render_builtin(TemplateFamily::Phi3, special("<s>", "<|endoftext|>")),
        "<|system|>\nYou are a helpful assistant.<|end|>\n\
         <|user|>\nHello!<|end|>\n\
         <|assistant|>\nHi! How can I help?<|end|>\n\
         <|user|>\nWhat is 2+2?<|end|>\n\
         <|assistant|>\n"
    );
}

#[test]
fn gemma_format() {
    assert_eq!(
        render_builtin(TemplateFamily::Gemma, special("<bos>", "<eos>")),
        "<bos><start_of_turn>user\nYou are a helpful assistant.\n\nHello!<end_of_turn>\n\
         <start_of_turn>model\nHi! How can I help?<end_of_turn>\n\
         <start_of_turn>user\nWhat is 2+2?<end_of_turn>\n\
         <start_of_turn>model\n"
    );
}

#[test]
fn raw_format() {
    assert_eq!(
        render_builtin(TemplateFamily::Raw, special("<s>", "</s>")),
        "You are a helpful assistant.\n\nHello!\n\nHi! How can I help?\n\nWhat is 2+2?"
    );
}

#[test]
fn builtins_without_generation_prompt_are_prefixes() {
    for family in TemplateFamily::ALL {
        let template = ChatTemplate::builtin(family, special("<s>", "</s>"));
        let with = template.render(&conversation(), &[], true).unwrap();
        let without = template.render(&conversation(), &[], false).unwrap();
        assert!(with.starts_with(&without), "{}", family.name());
        assert_eq!(template.origin(), format!("builtin:{}", family.name()));
        assert!(!template.supports_native_tools());
    }
}

#[test]
fn builtins_render_odd_role_orders() {
    // The system prompt is never dropped, whatever comes first.
    let messages = vec![
        Message::system("Sys."),
        Message::assistant("Hi."),
        Message::user("Q"),
    ];
    let render = |family| {
        ChatTemplate::builtin(family, special("<s>", "</s>"))
            .render(&messages, &[], true)
            .unwrap()
    };
    assert_eq!(
        render(TemplateFamily::Mistral),
        "<s>[INST] Sys.[/INST] Hi.</s>[INST] Q[/INST]"
    );
    assert_eq!(
        render(TemplateFamily::Llama2),
        "<s>[INST] <<SYS>>\nSys.\n<</SYS>>\n\n [/INST] Hi. </s><s>[INST] Q [/INST]"
    );
    assert_eq!(
        render(TemplateFamily::Gemma),
        "<s><start_of_turn>user\nSys.<end_of_turn>\n<start_of_turn>model\nHi.<end_of_turn>\n\
         <start_of_turn>user\nQ<end_of_turn>\n<start_of_turn>model\n"
    );
    let only_system = [Message::system("Sys.")];
    let gemma = ChatTemplate::builtin(TemplateFamily::Gemma, special("<s>", "</s>"));
    assert_eq!(
        gemma.render(&only_system, &[], false).unwrap(),
        "<s><start_of_turn>user\nSys.<end_of_turn>\n"
    );
    // A tool result reaches Llama 3 as a user turn; `ipython` is only a fallback.
    let llama3 = ChatTemplate::builtin(TemplateFamily::Llama3, special("", ""));
    let out = llama3
        .render(&[Message::tool("c1", "f", "42")], &[], false)
        .unwrap();
    assert_eq!(
        out,
        "<|start_header_id|>user<|end_header_id|>\n\n{\"name\": \"f\", \"content\": 42}<|eot_id|>"
    );
}

const CHATML_GGUF: &str = "{% for message in messages %}{{'<|im_start|>' + message['role'] + '\\n' + message['content'] + '<|im_end|>' + '\\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}";

#[test]
fn te_004_config_override_wins_over_metadata() {
    let metadata = ModelMetadata {
        chat_template: Some(CHATML_GGUF.into()),
        architecture: Some("qwen2".into()),
        name: Some("Qwen2.5 0.5B Instruct".into()),
        special: special("<|begin_of_text|>", "<|eot_id|>"),
    };
    let template =
        ChatTemplate::resolve(&TemplateChoice::Builtin(TemplateFamily::Llama3), &metadata).unwrap();
    assert_eq!(template.origin(), "builtin:llama3");
    assert_eq!(template.family(), TemplateFamily::Llama3);
    assert_eq!(
        template.render(&conversation(), &[], true).unwrap(),
        render_builtin(
            TemplateFamily::Llama3,
            special("<|begin_of_text|>", "<|eot_id|>")
        )
    );
    // And with `auto` the GGUF template is the one used.
    let auto = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(auto.origin(), "gguf");
    assert!(auto
        .render(&conversation(), &[], true)
        .unwrap()
        .starts_with("<|im_start|>system\n"));
}

/// SmolLM2-135M-Instruct's `tokenizer.chat_template`, verbatim.
const SMOLLM2: &str = "{% for message in messages %}{% if loop.first and messages[0]['role'] != 'system' %}{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}{% endif %}{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}";

#[test]
fn te_005_auto_detects_from_gguf_metadata() {
    // (a) The GGUF's own template renders.
    let metadata = ModelMetadata {
        chat_template: Some(SMOLLM2.into()),
        architecture: Some("llama".into()),
        name: Some("SmolLM2 135M Instruct".into()),
        special: special("<|im_start|>", "<|im_end|>"),
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(template.origin(), "gguf");
    assert_eq!(template.family(), TemplateFamily::Chatml);
    assert!(!template.supports_native_tools());
    // SmolLM2-135M reads Hermes better than its card's format (detect.rs).
    assert_eq!(template.tool_call_format(), ToolCallFormat::Hermes);
    assert_eq!(
        template.render(&conversation(), &[], true).unwrap(),
        "<|im_start|>system\nYou are a helpful assistant.<|im_end|>\n\
         <|im_start|>user\nHello!<|im_end|>\n\
         <|im_start|>assistant\nHi! How can I help?<|im_end|>\n\
         <|im_start|>user\nWhat is 2+2?<|im_end|>\n\
         <|im_start|>assistant\n"
    );
    // Only SmolLM's template adds its default system prompt.
    assert_eq!(
        template.render(&[Message::user("Hi")], &[], true).unwrap(),
        "<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging \
         Face<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );

    // (b) No template: the architecture decides.
    let metadata = ModelMetadata {
        architecture: Some("gemma3".into()),
        name: Some("Gemma 3 1b It".into()),
        special: special("<bos>", "<eos>"),
        ..ModelMetadata::default()
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(template.origin(), "builtin:gemma");
    assert_eq!(template.family(), TemplateFamily::Gemma);
    assert_eq!(
        template.render(&conversation(), &[], true).unwrap(),
        render_builtin(TemplateFamily::Gemma, special("<bos>", "<eos>"))
    );

    // (c) Nothing known: ChatML.
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &ModelMetadata::default()).unwrap();
    assert_eq!(template.origin(), "builtin:chatml");
    assert_eq!(template.family(), TemplateFamily::Chatml);

    // A GGUF template minijinja cannot compile falls back to the detected built-in.
    let metadata = ModelMetadata {
        chat_template: Some("{% generation %}{{ x }}{% endgeneration %}".into()),
        architecture: Some("phi3".into()),
        ..ModelMetadata::default()
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(template.origin(), "builtin:phi3");
}

#[test]
fn te_006_tool_schemas_in_system_prompt() {
    let template = ChatTemplate::builtin(TemplateFamily::Chatml, SpecialTokens::default());
    let messages = [
        Message::system("You are a helpful assistant."),
        Message::user("Weather in Paris?"),
    ];
    assert_eq!(
        template.render(&messages, &[weather_tool()], true).unwrap(),
        "<|im_start|>system\nYou are a helpful assistant.\n\n\
         # Tools\n\n\
         You may call one or more functions to assist with the user query.\n\n\
         You are provided with function signatures within <tools></tools> XML tags:\n\
         <tools>\n\
         {\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": \
         \"Get the current weather for a city.\", \"parameters\": {\"type\": \"object\", \
         \"properties\": {\"city\": {\"type\": \"string\"}}, \"required\": [\"city\"]}}}\n\
         </tools>\n\n\
         For each function call, return a json object with function name and arguments within \
         <tool_call></tool_call> XML tags:\n\
         <tool_call>\n\
         {\"name\": <function-name>, \"arguments\": <args-json-object>}\n\
         </tool_call><|im_end|>\n\
         <|im_start|>user\nWeather in Paris?<|im_end|>\n\
         <|im_start|>assistant\n"
    );
}

#[test]
fn te_007_tool_results_formatted() {
    let template = ChatTemplate::builtin(TemplateFamily::Chatml, SpecialTokens::default());
    let messages = [
        Message::user("Weather in Paris and Lyon?"),
        Message::assistant_with_tool_calls(
            "",
            vec![
                weather_call("call_1", "Paris"),
                weather_call("call_2", "Lyon"),
            ],
        ),
        Message::tool("call_1", "get_weather", r#"{"temp_c": 18, "sky": "clear"}"#),
        Message::tool_error("call_2", "get_weather", "service unavailable"),
        Message::assistant("Paris is 18 °C and clear; Lyon is unknown."),
    ];
    assert_eq!(
        template.render(&messages, &[], true).unwrap(),
        "<|im_start|>user\nWeather in Paris and Lyon?<|im_end|>\n\
         <|im_start|>assistant\n\
         <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>\n\
         <tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Lyon\"}}\n</tool_call>\
         <|im_end|>\n\
         <|im_start|>user\n\
         <tool_response>\n{\"name\": \"get_weather\", \"content\": {\"temp_c\": 18, \"sky\": \"clear\"}}\n</tool_response>\n\
         <tool_response>\n{\"name\": \"get_weather\", \"content\": \"service unavailable\"}\n</tool_response>\
         <|im_end|>\n\
         <|im_start|>assistant\nParis is 18 °C and clear; Lyon is unknown.<|im_end|>\n\
         <|im_start|>assistant\n"
    );
}

/// Qwen2.5-Instruct's chat template (tools, `tojson`, attribute access,
/// loop look-behind for consecutive tool messages).
const QWEN25: &str = r#"{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0]['role'] == 'system' %}
        {{- messages[0]['content'] }}
    {%- else %}
        {{- 'You are Qwen, created by Alibaba Cloud. You are a helpful assistant.' }}
    {%- endif %}
    {{- "\n\n# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>" }}
    {%- for tool in tools %}
        {{- "\n" }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n" }}
{%- else %}
    {%- if messages[0]['role'] == 'system' %}
        {{- '<|im_start|>system\n' + messages[0]['content'] + '<|im_end|>\n' }}
    {%- else %}
        {{- '<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful assistant.<|im_end|>\n' }}
    {%- endif %}
{%- endif %}
{%- for message in messages %}
    {%- if (message.role == "user") or (message.role == "system" and not loop.first) or (message.role == "assistant" and not message.tool_calls) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>' + '\n' }}
    {%- elif message.role == "assistant" %}
        {{- '<|im_start|>' + message.role }}
        {%- if message.content %}
            {{- '\n' + message.content }}
        {%- endif %}
        {%- for tool_call in message.tool_calls %}
            {%- if tool_call.function is defined %}
                {%- set tool_call = tool_call.function %}
            {%- endif %}
            {{- '\n<tool_call>\n{"name": "' }}
            {{- tool_call.name }}
            {{- '", "arguments": ' }}
            {{- tool_call.arguments | tojson }}
            {{- '}\n</tool_call>' }}
        {%- endfor %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == "tool" %}
        {%- if (loop.index0 == 0) or (messages[loop.index0 - 1].role != "tool") %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' }}
        {{- message.content }}
        {{- '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != "tool") %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
{%- endif %}
"#;

fn tool_conversation() -> Vec<Message> {
    vec![
        Message::system("You are a helpful assistant."),
        Message::user("Weather in Paris?"),
        Message::assistant_with_tool_calls("Let me check.", vec![weather_call("call_1", "Paris")]),
        Message::tool("call_1", "get_weather", r#"{"temp_c": 18}"#),
    ]
}

#[test]
fn qwen25_template_with_native_tools() {
    let metadata = ModelMetadata {
        chat_template: Some(QWEN25.into()),
        architecture: Some("qwen2".into()),
        special: special("", "<|im_end|>"),
        ..ModelMetadata::default()
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(template.origin(), "gguf");
    assert_eq!(template.family(), TemplateFamily::Chatml);
    assert!(template.supports_native_tools());
    assert_eq!(template.tool_call_format(), ToolCallFormat::Hermes);

    let out = template
        .render(&tool_conversation(), &[weather_tool()], true)
        .unwrap();
    let expected_parts = [
        "<|im_start|>system\nYou are a helpful assistant.\n\n# Tools\n\n",
        "<tools>\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \
         \"description\": \"Get the current weather for a city.\", \"parameters\": \
         {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, \
         \"required\": [\"city\"]}}}\n</tools>",
        "<|im_start|>user\nWeather in Paris?<|im_end|>\n",
        "<|im_start|>assistant\nLet me check.\n<tool_call>\n{\"name\": \"get_weather\", \
         \"arguments\": {\"city\": \"Paris\"}}\n</tool_call><|im_end|>\n",
        "<|im_start|>user\n<tool_response>\n{\"temp_c\": 18}\n</tool_response><|im_end|>\n",
    ];
    for part in expected_parts {
        assert!(out.contains(part), "missing {part:?} in\n{out}");
    }
    assert!(out.ends_with("<|im_start|>assistant\n"));

    // Our Hermes prompt for non-native templates is Qwen's own, word for word:
    // the system prompt and the tool call render identically.
    let builtin = ChatTemplate::builtin(TemplateFamily::Chatml, SpecialTokens::default())
        .render(&tool_conversation()[..3], &[weather_tool()], false)
        .unwrap();
    let native = template
        .render(&tool_conversation()[..3], &[weather_tool()], false)
        .unwrap();
    assert_eq!(builtin, native);

    // Without tools Qwen falls back to its default system prompt.
    let out = template.render(&[Message::user("Hi")], &[], true).unwrap();
    assert_eq!(
        out,
        "<|im_start|>system\nYou are Qwen, created by Alibaba Cloud. You are a helpful \
         assistant.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n"
    );
}

/// Llama 3.2-Instruct's template (Llama 3.1 style JSON tool calling), with
/// the system prompt read through Python's `.strip()`.
const LLAMA32: &str = r#"{{- bos_token }}
{%- if custom_tools is defined %}
    {%- set tools = custom_tools %}
{%- endif %}
{%- if not tools_in_user_message is defined %}
    {%- set tools_in_user_message = true %}
{%- endif %}
{%- if not date_string is defined %}
    {%- if strftime_now is defined %}
        {%- set date_string = strftime_now("%d %b %Y") %}
    {%- else %}
        {%- set date_string = "26 Jul 2024" %}
    {%- endif %}
{%- endif %}
{%- if not tools is defined %}
    {%- set tools = none %}
{%- endif %}

{#- This block extracts the system message, so we can slot it into the right place. #}
{%- if messages[0]['role'] == 'system' %}
    {%- set system_message = messages[0]['content'].strip() %}
    {%- set messages = messages[1:] %}
{%- else %}
    {%- set system_message = "" %}
{%- endif %}

{#- System message #}
{{- "<|start_header_id|>system<|end_header_id|>\n\n" }}
{%- if tools is not none %}
    {{- "Environment: ipython\n" }}
{%- endif %}
{{- "Cutting Knowledge Date: December 2023\n" }}
{{- "Today Date: " + date_string + "\n\n" }}
{%- if tools is not none and not tools_in_user_message %}
    {{- "You have access to the following functions. To call a function, please respond with JSON for a function call." }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
{%- endif %}
{{- system_message }}
{{- "<|eot_id|>" }}

{#- Custom tools are passed in a user message with some extra guidance #}
{%- if tools_in_user_message and not tools is none %}
    {#- Extract the first user message so we can plug it in here #}
    {%- if messages | length != 0 %}
        {%- set first_user_message = messages[0]['content']|trim %}
        {%- set messages = messages[1:] %}
    {%- else %}
        {{- raise_exception("Cannot put tools in the first user message when there's no first user message!") }}
{%- endif %}
    {{- '<|start_header_id|>user<|end_header_id|>\n\n' -}}
    {{- "Given the following functions, please respond with a JSON for a function call " }}
    {{- "with its proper arguments that best answers the given prompt.\n\n" }}
    {{- 'Respond in the format {"name": function name, "parameters": dictionary of argument name and its value}.' }}
    {{- "Do not use variables.\n\n" }}
    {%- for t in tools %}
        {{- t | tojson(indent=4) }}
        {{- "\n\n" }}
    {%- endfor %}
    {{- first_user_message + "<|eot_id|>"}}
{%- endif %}

{%- for message in messages %}
    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}
        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\n\n'+ message['content'] | trim + '<|eot_id|>' }}
    {%- elif 'tool_calls' in message %}
        {%- if not message.tool_calls|length == 1 %}
            {{- raise_exception("This model only supports single tool-calls at once!") }}
        {%- endif %}
        {%- set tool_call = message.tool_calls[0].function %}
        {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' -}}
        {{- '{"name": "' + tool_call.name + '", ' }}
        {{- '"parameters": ' }}
        {{- tool_call.arguments | tojson }}
        {{- "}" }}
        {{- "<|eot_id|>" }}
    {%- elif message.role == "tool" or message.role == "ipython" %}
        {{- "<|start_header_id|>ipython<|end_header_id|>\n\n" }}
        {%- if message.content is mapping or message.content is iterable %}
            {{- message.content | tojson }}
        {%- else %}
            {{- message.content }}
        {%- endif %}
        {{- "<|eot_id|>" }}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|start_header_id|>assistant<|end_header_id|>\n\n' }}
{%- endif %}
"#;

#[test]
fn llama32_template_with_python_isms() {
    let template =
        ChatTemplate::from_jinja(LLAMA32, special("<|begin_of_text|>", "<|eot_id|>")).unwrap();
    assert_eq!(template.origin(), "custom");
    assert_eq!(template.family(), TemplateFamily::Llama3);
    assert!(template.supports_native_tools());
    assert_eq!(template.tool_call_format(), ToolCallFormat::Llama3);

    let mut messages = tool_conversation();
    messages[0] = Message::system("  You are a helpful assistant.\n");
    let out = template.render(&messages, &[weather_tool()], true).unwrap();
    let date = regex::Regex::new(
        r"^<\|begin_of_text\|><\|start_header_id\|>system<\|end_header_id\|>\n\nEnvironment: ipython\nCutting Knowledge Date: December 2023\nToday Date: \d{2} [A-Z][a-z]{2} \d{4}\n\nYou are a helpful assistant\.<\|eot_id\|>",
    )
    .unwrap();
    assert!(date.is_match(&out), "{out}");
    let expected_parts = [
        "<|start_header_id|>user<|end_header_id|>\n\nGiven the following functions",
        "{\n    \"type\": \"function\",\n    \"function\": {\n        \"name\": \"get_weather\",\n",
        "\"required\": [\n                \"city\"\n            ]\n",
        "Weather in Paris?<|eot_id|>",
        "<|start_header_id|>assistant<|end_header_id|>\n\n{\"name\": \"get_weather\", \
         \"parameters\": {\"city\": \"Paris\"}}<|eot_id|>",
        // Jinja2 counts a string as iterable, so this template (like
        // Hugging Face's rendering of it) quotes string results.
        "<|start_header_id|>ipython<|end_header_id|>\n\n\"{\\\"temp_c\\\": 18}\"<|eot_id|>",
    ];
    for part in expected_parts {
        assert!(out.contains(part), "missing {part:?} in\n{out}");
    }
    assert!(out.ends_with("<|start_header_id|>assistant<|end_header_id|>\n\n"));

    // The template refuses two calls in one turn; its message comes through.
    let two_calls = vec![
        Message::user("Paris and Lyon?"),
        Message::assistant_with_tool_calls(
            "",
            vec![weather_call("c1", "Paris"), weather_call("c2", "Lyon")],
        ),
    ];
    let err = template.render(&two_calls, &[], true).unwrap_err();
    assert_eq!(
        err,
        Error::InvalidMessageSequence("This model only supports single tool-calls at once!".into())
    );
}

#[test]
fn rendering_is_deterministic() {
    let template = ChatTemplate::builtin(TemplateFamily::Chatml, SpecialTokens::default());
    let tools = [weather_tool()];
    let first = template.render(&tool_conversation(), &tools, true).unwrap();
    let second = template.render(&tool_conversation(), &tools, true).unwrap();
    assert_eq!(first, second);
    let native = ChatTemplate::from_jinja(QWEN25, SpecialTokens::default()).unwrap();
    assert_eq!(
        native.render(&tool_conversation(), &tools, true).unwrap(),
        native.render(&tool_conversation(), &tools, true).unwrap()
    );
}

#[test]
fn raising_template_gives_invalid_message_sequence() {
    let gemma_official = "{{ bos_token }}{% if messages[0]['role'] == 'system' %}{{ raise_exception('System role not supported') }}{% endif %}{% for message in messages %}{% if (message['role'] == 'user') != (loop.index0 % 2 == 0) %}{{ raise_exception('Conversation roles must alternate user/assistant/user/assistant/...') }}{% endif %}{{ message['content'] }}{% endfor %}";
    let template = ChatTemplate::from_jinja(gemma_official, SpecialTokens::default()).unwrap();
    let err = template
        .render(&[Message::user("a"), Message::user("b")], &[], true)
        .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidMessageSequence);
    assert_eq!(
        err,
        Error::InvalidMessageSequence(
            "Conversation roles must alternate user/assistant/user/assistant/...".into()
        )
    );
    // Tool results become one user turn, so alternation holds.
    let ok = template.render(
        &[
            Message::user("a"),
            Message::assistant_with_tool_calls("", vec![weather_call("c1", "Paris")]),
            Message::tool("c1", "get_weather", "1"),
            Message::tool("c2", "get_weather", "2"),
        ],
        &[],
        true,
    );
    assert!(ok.is_ok(), "{ok:?}");
}

#[test]
fn malformed_custom_template_is_invalid_config() {
    let err = ChatTemplate::from_jinja(
        "{% for m in messages %}{{ m.content }}",
        SpecialTokens::default(),
    )
    .unwrap_err();
    assert!(
        matches!(&err, Error::InvalidConfig { key, reason } if key == "template" && !reason.is_empty()),
        "{err:?}"
    );
    let err = ChatTemplate::resolve(
        &TemplateChoice::Custom("{{ unclosed".into()),
        &ModelMetadata::default(),
    )
    .unwrap_err();
    assert_eq!(err.code(), ErrorCode::InvalidConfig);
}

#[test]
fn templates_are_send_and_sync() {
    fn assert_send_sync<T: Send + Sync + Clone>() {}
    assert_send_sync::<ChatTemplate>();
}

/// A template that loops 10^12 times (minijinja caps one `range` at 10^5).
const RUNAWAY: &str = "{% for i in range(100000) %}{% for j in range(100000) %}{% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}";

/// 20 tools, each with a few typed parameters.
fn many_tools() -> Vec<ToolDefinition> {
    (0..20)
        .map(|i| ToolDefinition {
            name: format!("tool_{i}"),
            description: format!("Tool number {i}: does something useful with its arguments."),
            parameters: json!({
                "type": "object",
                "properties": {
                    "city": {"type": "string", "description": "A city"},
                    "days": {"type": "integer", "minimum": 1, "maximum": 14},
                    "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                },
                "required": ["city"],
            }),
        })
        .collect()
}

/// A 200-message history: a system prompt, then rounds of a question, a
/// tool call, its result and an answer.
fn long_history() -> Vec<Message> {
    let mut messages = vec![Message::system("You are a helpful assistant.")];
    let mut round = 0;
    while messages.len() < 200 {
        let id = format!("call_{round}");
        messages.push(Message::user(format!(
            "Question {round}: the weather in Paris?"
        )));
        messages.push(Message::assistant_with_tool_calls(
            "",
            vec![weather_call(&id, "Paris")],
        ));
        messages.push(Message::tool(&id, "get_weather", r#"{"temp_c": 18}"#));
        messages.push(Message::assistant(format!("Answer {round}: 18 degrees.")));
        round += 1;
    }
    messages.truncate(200);
    // End on a user turn, as every prompt the engine renders does.
    messages.push(Message::user("And tomorrow?"));
    messages
}

/// The fuel budget is far above what real templates use on a long history
/// with many tools, and a render of it stays fast. Prints the measurements
/// (`cargo test -p zoo-core --lib template_fuel -- --nocapture`).
#[test]
fn template_fuel_of_real_templates_is_far_below_the_budget() {
    let messages = long_history();
    let tools = many_tools();
    let mut templates: Vec<(String, ChatTemplate)> = TemplateFamily::ALL
        .into_iter()
        .map(|f| {
            let t = ChatTemplate::builtin(f, special("<s>", "</s>"));
            (f.name().to_string(), t)
        })
        .collect();
    for (name, source) in [
        ("qwen2.5", QWEN25),
        ("llama3.2", LLAMA32),
        ("smollm2", SMOLLM2),
    ] {
        let t = ChatTemplate::from_jinja(source, special("<s>", "</s>")).unwrap();
        templates.push((name.to_string(), t));
    }
    let budget = RenderBudget::FUEL_BASE + RenderBudget::FUEL_PER_ITEM * 200;
    for (name, template) in &templates {
        let start = std::time::Instant::now();
        let (prompt, fuel) = template.render_measured(&messages, &tools, true).unwrap();
        eprintln!(
            "{name}: {fuel} fuel, {} bytes, {:?} for {} messages and {} tools",
            prompt.len(),
            start.elapsed(),
            messages.len(),
            tools.len()
        );
        assert!(fuel > 0, "{name}: fuel is not measured");
        assert!(
            fuel * 100 <= budget,
            "{name} used {fuel} fuel; the budget ({budget}) must be 100 times that"
        );
    }
}

/// A custom template that loops 10^12 times fails with a typed error, fast,
/// instead of holding the inference thread (where no stop reaches it).
#[test]
fn runaway_custom_template_runs_out_of_fuel() {
    let template = ChatTemplate::from_jinja(RUNAWAY, SpecialTokens::default()).unwrap();
    let start = std::time::Instant::now();
    let err = template
        .render(&[Message::user("Hi")], &[], true)
        .unwrap_err();
    let elapsed = start.elapsed();
    eprintln!("a runaway template failed after {elapsed:?}: {err}");
    let budget = RenderBudget::FUEL_BASE + RenderBudget::FUEL_PER_ITEM;
    assert_eq!(
        err,
        Error::config(
            "template",
            format!(
                "the chat template (custom) ran out of fuel after {budget} steps: it loops too long"
            )
        )
    );
    // About 0.1 s here; generous for a loaded 2-core machine.
    assert!(elapsed < std::time::Duration::from_secs(5), "{elapsed:?}");
}

/// A GGUF's own template goes through the same budget, and the error says
/// how to replace it.
#[test]
fn runaway_gguf_template_runs_out_of_fuel() {
    let metadata = ModelMetadata {
        chat_template: Some(RUNAWAY.into()),
        ..ModelMetadata::default()
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(template.origin(), "gguf");
    let err = template
        .render(&[Message::user("Hi")], &[], true)
        .unwrap_err();
    let Error::InvalidConfig { key, reason } = &err else {
        panic!("{err:?}");
    };
    assert_eq!(key, "template");
    assert!(
        reason.starts_with("the chat template (gguf) ran out of fuel after ")
            && reason
                .ends_with("set `template` to a built-in (e.g. chatml) to replace the model's own"),
        "{reason}"
    );
}

/// A template that writes without end fails once its output passes the
/// budget, whether it writes to the prompt or into a captured block.
#[test]
fn endless_template_output_is_cut_at_the_budget() {
    let limit = RenderBudget::OUTPUT_BASE;
    let to_prompt = "{% for i in range(100000) %}{% for j in range(100000) %}{{ 'x' * 100000 }}{% endfor %}{% endfor %}";
    let raw_text = format!(
        "{{% for i in range(100000) %}}{{% for j in range(100000) %}}{}{{% endfor %}}{{% endfor %}}",
        "y".repeat(100_000)
    );
    let captured = "{% set s %}{% for i in range(100000) %}{{ 'x' * 100000 }}{% endfor %}{% endset %}{{ s | length }}";
    for source in [to_prompt, raw_text.as_str(), captured] {
        let template = ChatTemplate::from_jinja(source, SpecialTokens::default()).unwrap();
        let err = template.render(&[], &[], true).unwrap_err();
        let Error::InvalidConfig { key, reason } = &err else {
            panic!("{err:?}");
        };
        assert_eq!(key, "template");
        // The budget grows with the input a little: an empty conversation
        // is a few bytes.
        assert!(
            reason.starts_with("the chat template (custom) wrote more than ")
                && reason.ends_with(" bytes: its output is too long"),
            "{reason}"
        );
        let max: usize = reason
            .trim_start_matches("the chat template (custom) wrote more than ")
            .trim_end_matches(" bytes: its output is too long")
            .parse()
            .unwrap();
        assert!((limit..limit + 1024).contains(&max), "{max}");
    }
}

/// The output budget grows with the conversation: a message longer than the
/// base budget still renders.
#[test]
fn long_messages_fit_the_output_budget() {
    let long = "z".repeat(RenderBudget::OUTPUT_BASE + 1);
    let template = ChatTemplate::builtin(TemplateFamily::Chatml, SpecialTokens::default());
    let prompt = template
        .render(&[Message::user(long.clone())], &[], true)
        .unwrap();
    assert!(prompt.contains(&long));
}

#[test]
fn an_image_in_a_tool_result_renders_as_a_placeholder() {
    use crate::message::ImageContent;
    let template = ChatTemplate::builtin(TemplateFamily::Chatml, SpecialTokens::default());
    let mut png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR".to_vec();
    png.extend_from_slice(&[0, 0, 0, 3, 0, 0, 0, 2, 8, 6, 0, 0, 0, 0, 0, 0, 0]);
    let mut result = Message::tool("call_1", "read_file", "'a.png' is a PNG image");
    result
        .images
        .push(ImageContent::from_bytes("image/png", &png));
    let call = ToolCall {
        id: "call_1".into(),
        name: "read_file".into(),
        arguments: json!({"path": "a.png"}),
    };
    let messages = [
        Message::user("Look"),
        Message::assistant_with_tool_calls("", vec![call]),
        result,
    ];
    let prompt = template.render(&messages, &[], true).unwrap();
    assert!(
        prompt.contains(
            "\"content\": \"'a.png' is a PNG image\\n[image: image/png, 3x2, 33 bytes; \
             not shown, this model reads text only]\"}"
        ),
        "{prompt}"
    );
    let data = &messages[2].images[0].data;
    assert!(!prompt.contains(data.as_str()), "no base64 in the prompt");
}
