//! Real chat templates of each model family (`tests/fixtures/templates/`,
//! verbatim from the models' `tokenizer_config.json` or GGUF files, see
//! its README): the call format detected from each, tools and calls
//! rendered as the model was trained to read them, what the engine writes
//! for a call equal to what the template writes, and a call as the model
//! writes it parsed back.

use serde_json::json;

use super::*;
use crate::message::ToolCall;
use crate::tools::parser;

macro_rules! fixture {
    ($name:literal) => {
        include_str!(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/tests/fixtures/templates/",
            $name
        ))
    };
}

fn weather_tool() -> ToolDefinition {
    ToolDefinition {
        name: "get_weather".into(),
        description: "Get the current weather for a city.".into(),
        parameters: json!({
            "type": "object",
            "properties": {"city": {"type": "string", "description": "The city."}},
            "required": ["city"],
        }),
    }
}

/// A user question, the assistant's call, its result and the answer.
fn tool_conversation(call_id: &str) -> Vec<Message> {
    vec![
        Message::system("Be brief."),
        Message::user("Weather in Paris?"),
        Message::assistant_with_tool_calls(
            "",
            vec![ToolCall {
                id: call_id.into(),
                name: "get_weather".into(),
                arguments: json!({"city": "Paris"}),
            }],
        ),
        Message::tool(call_id, "get_weather", r#"{"temp_c": 18}"#),
        Message::assistant("It is 18 °C in Paris."),
        Message::user("And in Rome?"),
    ]
}

fn gguf(source: &str, architecture: &str, name: &str) -> ChatTemplate {
    let metadata = ModelMetadata {
        chat_template: Some(source.into()),
        architecture: Some(architecture.into()),
        name: Some(name.into()),
        special: SpecialTokens {
            bos: String::new(),
            eos: String::new(),
        },
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(
        template.origin(),
        "gguf",
        "{name}: the fixture must compile"
    );
    template
}

/// The call the engine writes for the conversation's call, in `format`.
fn written_call(format: ToolCallFormat) -> String {
    format.write_calls(&[("get_weather", &json!({"city": "Paris"}))])
}

/// What a model writes for a call in `format` parses back to that call.
fn assert_parses_back(format: ToolCallFormat, text: &str) {
    let reply = parser::parse(text);
    assert!(reply.failures.is_empty(), "{format:?}: {reply:?}");
    assert_eq!(reply.calls.len(), 1, "{format:?}: {text}");
    assert_eq!(reply.calls[0].name, "get_weather");
    assert_eq!(reply.calls[0].arguments, json!({"city": "Paris"}));
    assert_eq!(reply.content, "", "{format:?}: {text}");
}

#[test]
fn every_format_parses_the_calls_it_writes() {
    for format in ToolCallFormat::ALL {
        assert_parses_back(format, &written_call(format));
        let two = format.write_calls(&[
            ("get_weather", &json!({"city": "Paris"})),
            ("get_time", &json!({})),
        ]);
        let names: Vec<String> = parser::parse(&two)
            .calls
            .into_iter()
            .map(|c| c.name)
            .collect();
        assert_eq!(names, ["get_weather", "get_time"], "{format:?}: {two}");
        assert!(
            format
                .call_opening("get_weather")
                .starts_with(format.prefix()),
            "{format:?}"
        );
        assert!(
            written_call(format).starts_with(&format.call_opening("get_weather")),
            "{format:?}: the scored opening must be how the call begins"
        );
    }
}

#[test]
fn qwen3_and_hermes3_write_hermes_calls() {
    for (source, architecture, name) in [
        (fixture!("qwen3.jinja"), "qwen3", "Qwen3 0.6B"),
        (
            fixture!("hermes-3-llama-3.1.jinja"),
            "llama",
            "Hermes 3 Llama 3.1 8B",
        ),
    ] {
        let template = gguf(source, architecture, name);
        assert_eq!(
            template.tool_call_format(),
            ToolCallFormat::Hermes,
            "{name}"
        );
        assert!(template.supports_native_tools(), "{name}");
        let prompt = template
            .render(&tool_conversation("call_1"), &[weather_tool()], true)
            .unwrap();
        assert!(
            prompt.contains("\"name\": \"get_weather\""),
            "{name}: {prompt}"
        );
        assert!(prompt.contains("<tool_response>"), "{name}: {prompt}");
        // Hermes 3 writes the call's JSON itself; Qwen 3 exactly as we do.
        assert!(
            prompt.contains("<tool_call>\n{\"name\": \"get_weather\""),
            "{prompt}"
        );
        if architecture == "qwen3" {
            assert!(
                prompt.contains(&written_call(ToolCallFormat::Hermes)),
                "{prompt}"
            );
        }
        assert_parses_back(
            ToolCallFormat::Hermes,
            "<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}\n</tool_call>",
        );
    }
}

#[test]
fn granite3_lists_calls_after_its_token() {
    let template = gguf(
        fixture!("granite-3.3.jinja"),
        "granite",
        "Granite 3.3 2b Instruct",
    );
    assert_eq!(template.tool_call_format(), ToolCallFormat::Granite);
    assert!(template.supports_native_tools());
    let prompt = template
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    assert!(
        prompt.contains("<|start_of_role|>available_tools<|end_of_role|>[\n    {"),
        "{prompt}"
    );
    // Granite's template writes no `tool_calls`: the call is in the content.
    assert!(
        prompt.contains(&format!(
            "<|start_of_role|>assistant<|end_of_role|>{}<|end_of_text|>",
            written_call(ToolCallFormat::Granite)
        )),
        "{prompt}"
    );
    assert!(prompt.contains("<|start_of_role|>tool<|end_of_role|>{\"temp_c\": 18}"));
    assert!(prompt.ends_with("<|start_of_role|>assistant<|end_of_role|>"));
    assert_parses_back(
        ToolCallFormat::Granite,
        "<|tool_call|>[{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
    );
}

#[test]
fn lfm2_lists_tools_and_writes_python_calls() {
    let template = gguf(fixture!("lfm2.jinja"), "lfm2", "LFM2 350M");
    assert_eq!(template.tool_call_format(), ToolCallFormat::Lfm2);
    let prompt = template
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    assert!(
        prompt.starts_with(
            "<|im_start|>system\nBe brief.\nList of tools: <|tool_list_start|>[{\"type\": \"function\""
        ),
        "{prompt}"
    );
    assert!(prompt.contains(
        "<|im_start|>assistant\n<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|><|im_end|>"
    ));
    assert!(prompt.contains(
        "<|im_start|>tool\n<|tool_response_start|>{\"temp_c\": 18}<|tool_response_end|><|im_end|>"
    ));
    assert_parses_back(
        ToolCallFormat::Lfm2,
        "<|tool_call_start|>[get_weather(city=\"Paris\")]<|tool_call_end|>",
    );
}

#[test]
fn mistral_nemo_gets_nine_character_call_ids() {
    let template = gguf(
        fixture!("mistral-nemo.jinja"),
        "llama",
        "Mistral Nemo Instruct 2407",
    );
    assert_eq!(template.family(), TemplateFamily::Mistral);
    assert_eq!(template.tool_call_format(), ToolCallFormat::Mistral);
    // The engine's ids ("call_1") are not the nine characters Mistral's
    // template insists on; rendering maps them.
    let prompt = template
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    assert!(
        prompt.contains(
            "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}, \"id\": \"0000call1\"}]"
        ),
        "{prompt}"
    );
    assert!(prompt.contains("\"call_id\": \"0000call1\"}[/TOOL_RESULTS]"));
    assert!(prompt.contains("[AVAILABLE_TOOLS][{\"type\": \"function\""));
    // A long id maps to nine characters too, the same every time.
    let long = "call_with_a_rather_long_identifier";
    let first = template
        .render(&tool_conversation(long), &[weather_tool()], true)
        .unwrap();
    assert_eq!(
        first,
        template
            .render(&tool_conversation(long), &[weather_tool()], true)
            .unwrap()
    );
    assert_parses_back(
        ToolCallFormat::Mistral,
        "[TOOL_CALLS][{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}]",
    );
}

#[test]
fn gpt_oss_harmony_calls() {
    let template = gguf(fixture!("gpt-oss.jinja"), "gpt-oss", "Gpt Oss 20b");
    assert_eq!(template.tool_call_format(), ToolCallFormat::Harmony);
    let prompt = template
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    assert!(prompt.contains("namespace functions {"), "{prompt}");
    assert!(prompt.contains("type get_weather = (_: {\n// The city.\ncity: string,\n}) => any;"));
    assert!(prompt.contains(
        "<|start|>assistant to=functions.get_weather<|channel|>commentary json<|message|>{\"city\": \"Paris\"}<|call|>"
    ));
    assert!(prompt.contains(
        "<|start|>functions.get_weather to=assistant<|channel|>commentary<|message|>\"{\\\"temp_c\\\": 18}\"<|end|>"
    ));
    assert!(prompt.ends_with("<|start|>assistant"));
    let reply = parser::parse(
        "<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}<|call|>",
    );
    assert_eq!(reply.calls.len(), 1);
    assert_eq!(reply.calls[0].arguments, json!({"city": "Paris"}));
}

#[test]
fn gemma3_is_taught_googles_python_list() {
    let template = gguf(fixture!("gemma-3.jinja"), "gemma3", "Gemma 3 270m");
    assert_eq!(template.family(), TemplateFamily::Gemma);
    assert_eq!(template.tool_call_format(), ToolCallFormat::Pythonic);
    assert!(!template.supports_native_tools());
    let prompt = template
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    // Gemma has no system turn: the system prompt and the tools open the
    // first user turn, then the roles alternate.
    assert!(
        prompt.starts_with(
            "<start_of_turn>user\nBe brief.\n\nYou have access to functions. If you decide to invoke \
             any of the function(s),\n you MUST put it in the format of\n[func_name1(params_name1=\
             params_value1, params_name2=params_value2...), func_name2(params)]\n\nYou SHOULD NOT \
             include any other text in the response if you call a function\n[\n  {\n    \"name\": \
             \"get_weather\",\n    \"description\": \"Get the current weather for a city.\","
        ),
        "{prompt}"
    );
    assert!(prompt.contains(
        "<start_of_turn>model\n[get_weather(city=\"Paris\")]<end_of_turn>\n\
         <start_of_turn>user\n```tool_output\n{\"temp_c\": 18}\n```<end_of_turn>\n"
    ));
    assert_parses_back(ToolCallFormat::Pythonic, "[get_weather(city=\"Paris\")]");
}

#[test]
fn function_gemma_without_a_template_gets_its_declarations() {
    let metadata = ModelMetadata {
        architecture: Some("gemma3".into()),
        name: Some("Functiongemma 270m It".into()),
        ..ModelMetadata::default()
    };
    let template = ChatTemplate::resolve(&TemplateChoice::Auto, &metadata).unwrap();
    assert_eq!(template.origin(), "builtin:gemma");
    assert_eq!(template.tool_call_format(), ToolCallFormat::FunctionGemma);
    let prompt = template
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    assert!(
        prompt.contains(
            "You are a model that can do function calling with the following functions\
         <start_function_declaration>declaration:get_weather{description:<escape>Get the current \
         weather for a city.<escape>,parameters:{properties:{city:{description:<escape>The city.\
         <escape>,type:<escape>STRING<escape>}},required:[<escape>city<escape>],type:<escape>OBJECT\
         <escape>}}<end_function_declaration>"
        ),
        "{prompt}"
    );
    assert!(prompt.contains(
        "<start_function_call>call:get_weather{city:<escape>Paris<escape>}<end_function_call>"
    ));
    assert!(prompt.contains(
        "<start_function_response>response:get_weather{temp_c:18}<end_function_response>"
    ));
}

#[test]
fn smollm2_is_taught_hermes_and_can_be_taught_its_card() {
    let template = gguf(
        fixture!("smollm2.jinja"),
        "llama",
        "Smollm2 135M 8k Lc100K Mix1 Ep2",
    );
    // Measured better than its card's format (see `detect::tool_format`).
    assert_eq!(template.tool_call_format(), ToolCallFormat::Hermes);
    let card = template.with_tool_format(ToolCallFormat::SmolLm2);
    let prompt = card
        .render(&tool_conversation("call_1"), &[weather_tool()], true)
        .unwrap();
    assert!(prompt.contains("You are an expert in composing functions."));
    assert!(
        prompt.contains(&written_call(ToolCallFormat::SmolLm2)),
        "{prompt}"
    );
}

/// A chat whose replies reasoned: before a call, and before the answer.
fn thinking_conversation() -> Vec<Message> {
    let mut messages = tool_conversation("call_1");
    messages[2] = messages[2].clone().with_thinking("Need the weather tool.");
    messages[4] = messages[4].clone().with_thinking("18 means mild.");
    messages
}

#[test]
fn reasoning_formats_are_detected() {
    use crate::thinking::ThinkingFormat;
    let cases = [
        (fixture!("qwen3.jinja"), "qwen3", ThinkingFormat::ThinkTags),
        (
            fixture!("deepseek-r1-distill-qwen.jinja"),
            "qwen2",
            ThinkingFormat::ThinkTags,
        ),
        (
            fixture!("gpt-oss.jinja"),
            "gpt-oss",
            ThinkingFormat::Harmony,
        ),
        (
            fixture!("hermes-3-llama-3.1.jinja"),
            "llama",
            ThinkingFormat::None,
        ),
        (fixture!("smollm2.jinja"), "llama", ThinkingFormat::None),
    ];
    for (source, architecture, format) in cases {
        assert_eq!(
            gguf(source, architecture, "m").thinking_format(),
            format,
            "{architecture}"
        );
    }
}

#[test]
fn qwen3_keeps_only_the_current_turns_reasoning() {
    let template = gguf(fixture!("qwen3.jinja"), "qwen3", "Qwen3 0.6B");
    // The question after the answer makes both reasoned replies earlier
    // turns: Qwen3's template drops their reasoning.
    let prompt = template
        .render(&thinking_conversation(), &[weather_tool()], true)
        .unwrap();
    assert!(!prompt.contains("Need the weather tool."), "{prompt}");
    assert!(!prompt.contains("18 means mild."), "{prompt}");
    // Within the current turn (no user message after them) it is kept,
    // in its <think> block before the call.
    let current = &thinking_conversation()[..4];
    let prompt = template.render(current, &[weather_tool()], true).unwrap();
    assert!(
        prompt.contains(
            "<|im_start|>assistant\n<think>\nNeed the weather tool.\n</think>\n\n<tool_call>"
        ),
        "{prompt}"
    );
}

#[test]
fn deepseek_r1_opens_the_reasoning_in_the_prompt_and_drops_it_later() {
    let template = gguf(
        fixture!("deepseek-r1-distill-qwen.jinja"),
        "qwen2",
        "DeepSeek R1 Distill Qwen 1.5B",
    );
    let mut messages = vec![Message::user("2+2?")];
    let prompt = template.render(&messages, &[], true).unwrap();
    assert!(prompt.ends_with("<｜Assistant｜><think>\n"), "{prompt}");
    messages.push(Message::assistant("4").with_thinking("Two and two."));
    messages.push(Message::user("3+3?"));
    let prompt = template.render(&messages, &[], true).unwrap();
    assert!(!prompt.contains("Two and two."), "{prompt}");
    assert!(
        prompt.contains("<｜Assistant｜>4<｜end▁of▁sentence｜>"),
        "{prompt}"
    );
}

#[test]
fn gpt_oss_reasoning_goes_to_the_analysis_channel_of_calls_only() {
    let template = gguf(fixture!("gpt-oss.jinja"), "gpt-oss", "Gpt Oss 20b");
    let prompt = template
        .render(&thinking_conversation(), &[weather_tool()], true)
        .unwrap();
    // A final answer follows the call, so its analysis is dropped too, as
    // is the answer's own.
    assert!(!prompt.contains("Need the weather tool."), "{prompt}");
    assert!(!prompt.contains("18 means mild."), "{prompt}");
    // While the call is the latest reply, its reasoning is rendered.
    let current = &thinking_conversation()[..4];
    let prompt = template.render(current, &[weather_tool()], true).unwrap();
    assert!(
        prompt.contains(
            "<|start|>assistant<|channel|>analysis<|message|>Need the weather tool.<|end|><|start|>assistant to=functions.get_weather"
        ),
        "{prompt}"
    );
}
