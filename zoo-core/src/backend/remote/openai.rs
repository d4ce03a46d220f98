//! The OpenAI Chat Completions wire format: the request body, and the reply
//! put together from a stream of chunks (or from one JSON answer, for a
//! server that does not stream).
//!
//! A streamed reply arrives as deltas: text pieces, reasoning pieces, and
//! tool calls whose name comes first and whose arguments arrive split
//! across chunks, each delta naming its call by `index` (several calls may
//! be in flight in one reply). The last chunk before `[DONE]` carries the
//! usage, which `stream_options.include_usage` asks for.

use serde::Deserialize;
use serde_json::{json, Map, Value as Json};

use super::protocol::{f32_json, Sampling};
use super::reply::{error_text, excerpt, ChunkError, Ending, Reply, ReportedUsage};
use crate::backend::GenerateRequest;
use crate::message::{Message, Role};
use crate::provider::remote::MaxTokensField;
use crate::tools::ToolChoice;

/// The JSON body of a streamed Chat Completions request.
pub(crate) fn request_body(
    model: Option<&str>,
    request: &GenerateRequest<'_>,
    sampling: &Sampling,
    max_tokens_field: MaxTokensField,
) -> Json {
    let mut body = Map::new();
    if let Some(model) = model {
        body.insert("model".into(), json!(model));
    }
    body.insert(
        "messages".into(),
        Json::Array(messages_json(request.messages)),
    );
    body.insert("stream".into(), json!(true));
    body.insert("stream_options".into(), json!({"include_usage": true}));
    // No tools means none may be called: leave out `tools` and
    // `tool_choice` both (a `tool_choice` without tools is refused).
    if !request.tools.is_empty() {
        let tools: Vec<Json> = request
            .tools
            .iter()
            .map(|tool| {
                json!({"type": "function", "function": {
                    "name": tool.name,
                    "description": tool.description,
                    "parameters": tool.parameters,
                }})
            })
            .collect();
        body.insert("tools".into(), Json::Array(tools));
        body.insert("tool_choice".into(), tool_choice_json(request.tool_choice));
    }
    body.insert("temperature".into(), f32_json(sampling.temperature));
    body.insert("top_p".into(), f32_json(sampling.top_p));
    if let Some(seed) = sampling.seed {
        body.insert("seed".into(), json!(seed));
    }
    if !request.stop.is_empty() {
        body.insert("stop".into(), json!(request.stop));
    }
    if let Some(max) = request.max_tokens {
        body.insert(max_tokens_field.as_str().into(), json!(max));
    }
    Json::Object(body)
}

/// `tool_choice` as the API spells it.
fn tool_choice_json(choice: &ToolChoice) -> Json {
    match choice {
        ToolChoice::Auto => json!("auto"),
        ToolChoice::Required => json!("required"),
        ToolChoice::None => json!("none"),
        ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
    }
}

/// The history in the API's shape. A tool message cannot hold an image
/// there, so the images of a run of tool results follow it as one user
/// message of `image_url` parts (data URIs), each introduced by the call
/// it came from.
fn messages_json(messages: &[Message]) -> Vec<Json> {
    let mut out = Vec::with_capacity(messages.len());
    let mut images: Vec<Json> = Vec::new();
    for message in messages {
        if message.role != Role::Tool && !images.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(&mut images)}));
        }
        out.push(message_json(message));
        if message.role == Role::Tool && !message.images.is_empty() {
            images.push(json!({"type": "text", "text": format!(
                "The image{} returned by tool call {} ({}):",
                if message.images.len() == 1 { "" } else { "s" },
                message.tool_call_id.as_deref().unwrap_or_default(),
                message.name.as_deref().unwrap_or_default(),
            )}));
            images.extend(message.images.iter().map(|image| {
                json!({
                    "type": "image_url",
                    "image_url": {"url": format!("data:{};base64,{}", image.mime_type, image.data)},
                })
            }));
        }
    }
    if !images.is_empty() {
        out.push(json!({"role": "user", "content": images}));
    }
    out
}

/// One history message in the API's shape.
fn message_json(message: &Message) -> Json {
    match message.role {
        Role::System | Role::User => json!({
            "role": message.role.as_str(),
            "content": message.content,
        }),
        Role::Assistant if message.tool_calls.is_empty() => json!({
            "role": "assistant",
            "content": message.content,
        }),
        Role::Assistant => {
            let calls: Vec<Json> = message
                .tool_calls
                .iter()
                .map(|call| {
                    json!({"id": call.id, "type": "function", "function": {
                        "name": call.name,
                        "arguments": arguments_text(&call.arguments),
                    }})
                })
                .collect();
            // A turn of tool calls alone leaves `content` out rather than
            // sending null: the API allows both, and llama-cpp-python's
            // server refuses null (its schema wants a string when present).
            let mut turn = json!({"role": "assistant", "tool_calls": calls});
            if !message.content.is_empty() {
                turn["content"] = json!(message.content);
            }
            turn
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
    }
}

/// Arguments go as a JSON text; a string is sent as the model wrote it.
fn arguments_text(arguments: &Json) -> String {
    match arguments {
        Json::String(text) => text.clone(),
        other => other.to_string(),
    }
}

#[derive(Deserialize)]
struct Chunk {
    #[serde(default)]
    choices: Option<Vec<StreamChoice>>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<Json>,
}

#[derive(Deserialize)]
struct StreamChoice {
    #[serde(default)]
    delta: Option<MessageJson>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// A delta, or a whole message in an answer that did not stream.
#[derive(Deserialize, Default)]
struct MessageJson {
    #[serde(default)]
    content: Option<String>,
    #[serde(default)]
    reasoning_content: Option<String>,
    #[serde(default)]
    reasoning: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<CallJson>>,
}

#[derive(Deserialize)]
struct CallJson {
    #[serde(default)]
    index: Option<usize>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    function: Option<FunctionJson>,
}

#[derive(Deserialize)]
struct FunctionJson {
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    arguments: Option<Json>,
}

#[derive(Deserialize)]
struct UsageJson {
    #[serde(default)]
    prompt_tokens: Option<u32>,
    #[serde(default)]
    completion_tokens: Option<u32>,
    #[serde(default)]
    prompt_tokens_details: Option<PromptDetails>,
}

#[derive(Deserialize)]
struct PromptDetails {
    #[serde(default)]
    cached_tokens: Option<u32>,
}

#[derive(Deserialize)]
struct Completion {
    #[serde(default)]
    choices: Vec<CompletionChoice>,
    #[serde(default)]
    usage: Option<UsageJson>,
}

#[derive(Deserialize)]
struct CompletionChoice {
    #[serde(default)]
    message: Option<MessageJson>,
    #[serde(default)]
    finish_reason: Option<String>,
}

/// Takes one event's data: a chunk, or `[DONE]`. Text pieces go to
/// `on_piece` as they come.
pub(crate) fn push(
    reply: &mut Reply,
    data: &str,
    on_piece: &mut dyn FnMut(&str),
) -> Result<(), ChunkError> {
    if data.trim() == "[DONE]" {
        reply.done = true;
        return Ok(());
    }
    let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
        ChunkError::Malformed(format!(
            "a stream chunk is not a Chat Completions chunk ({e}): {}",
            excerpt(data)
        ))
    })?;
    if let Some(error) = chunk.error {
        return Err(ChunkError::Server(error_text(&error)));
    }
    if let Some(usage) = chunk.usage {
        reply.usage = Some(usage.into());
    }
    // One reply is asked for (no `n`): its choice is the first.
    if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
        if let Some(delta) = choice.delta {
            take_message(reply, delta, on_piece)?;
        }
        if let Some(reason) = choice.finish_reason {
            reply.ending = Some(ending(&reason));
        }
    }
    Ok(())
}

/// A reply from a server that answered with one JSON object instead of
/// a stream; its text goes to `on_piece` in one piece.
pub(crate) fn from_completion(
    body: &str,
    on_piece: &mut dyn FnMut(&str),
) -> Result<Reply, ChunkError> {
    if let Ok(Json::Object(object)) = serde_json::from_str::<Json>(body) {
        if let Some(error) = object.get("error") {
            return Err(ChunkError::Server(error_text(error)));
        }
    }
    let completion: Completion = serde_json::from_str(body).map_err(|e| {
        ChunkError::Malformed(format!(
            "the answer is not a Chat Completions response ({e}): {}",
            excerpt(body)
        ))
    })?;
    let mut reply = Reply {
        usage: completion.usage.map(Into::into),
        done: true,
        ..Reply::default()
    };
    if let Some(choice) = completion.choices.into_iter().next() {
        if let Some(message) = choice.message {
            take_message(&mut reply, message, on_piece)?;
        }
        reply.ending = choice.finish_reason.as_deref().map(ending);
    }
    Ok(reply)
}

/// `length` is the token limit; anything else (`stop`, `tool_calls`,
/// `content_filter`) is a finished reply.
fn ending(finish_reason: &str) -> Ending {
    match finish_reason {
        "length" => Ending::Length,
        _ => Ending::Stop,
    }
}

fn take_message(
    reply: &mut Reply,
    message: MessageJson,
    on_piece: &mut dyn FnMut(&str),
) -> Result<(), ChunkError> {
    if let Some(text) = message.content {
        reply.push_text(&text, on_piece);
    }
    if let Some(thought) = message.reasoning_content.or(message.reasoning) {
        reply.reasoning.push_str(&thought);
    }
    for call in message.tool_calls.unwrap_or_default() {
        take_call(reply, call)?;
    }
    Ok(())
}

/// Adds a call delta to its call: by `index` when the server gives
/// one; else a new id opens a new call and no id continues the last.
fn take_call(reply: &mut Reply, delta: CallJson) -> Result<(), ChunkError> {
    let slot = match (delta.index, &delta.id) {
        (Some(index), _) => index,
        (None, Some(id)) if !reply.calls.iter().any(|c| &c.id == id) => reply.calls.len(),
        (None, _) => reply.calls.len().saturating_sub(1),
    };
    let call = reply.call_at(slot)?;
    if let Some(id) = delta.id.filter(|id| !id.is_empty()) {
        call.id = id;
    }
    if let Some(function) = delta.function {
        // The name comes whole in the first delta; a server that
        // repeats it in later ones must not double it.
        if let Some(name) = function.name.filter(|n| !n.is_empty() && *n != call.name) {
            call.name.push_str(&name);
        }
        match function.arguments {
            Some(Json::String(piece)) => call.arguments.push_str(&piece),
            // Some servers send the arguments as an object, not a text.
            Some(Json::Null) | None => {}
            Some(object) => call.arguments.push_str(&object.to_string()),
        }
    }
    Ok(())
}

impl From<UsageJson> for ReportedUsage {
    fn from(usage: UsageJson) -> Self {
        ReportedUsage {
            prompt_tokens: usage.prompt_tokens.unwrap_or(0),
            cached_tokens: usage
                .prompt_tokens_details
                .and_then(|d| d.cached_tokens)
                .unwrap_or(0),
            completion_tokens: usage.completion_tokens.unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{FinishReason, NativeToolCall};
    use crate::message::ToolCall;

    fn stream(chunks: &[&str]) -> (Reply, Vec<String>) {
        let mut reply = Reply::default();
        let mut pieces = Vec::new();
        for chunk in chunks {
            push(&mut reply, chunk, &mut |p| pieces.push(p.to_string())).unwrap();
        }
        (reply, pieces)
    }

    #[test]
    fn history_messages_and_tool_choices_in_the_apis_shape() {
        let call = ToolCall {
            id: "call_1".into(),
            name: "get_weather".into(),
            arguments: json!({"city": "Paris"}),
        };
        let shapes: Vec<Json> = [
            Message::system("Be brief."),
            Message::user("Weather?"),
            Message::assistant_with_tool_calls("", vec![call.clone()]),
            Message::assistant_with_tool_calls("Let me look.", vec![call]),
            Message::tool("call_1", "get_weather", "17 C"),
            Message::tool_error("call_1", "get_weather", "Error: no"),
            Message::assistant("Sunny."),
        ]
        .iter()
        .map(message_json)
        .collect();
        let calls = json!([{"id": "call_1", "type": "function",
            "function": {"name": "get_weather", "arguments": "{\"city\":\"Paris\"}"}}]);
        assert_eq!(
            shapes,
            [
                json!({"role": "system", "content": "Be brief."}),
                json!({"role": "user", "content": "Weather?"}),
                json!({"role": "assistant", "tool_calls": calls}),
                json!({"role": "assistant", "content": "Let me look.", "tool_calls": calls}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": "17 C"}),
                json!({"role": "tool", "tool_call_id": "call_1", "content": "Error: no"}),
                json!({"role": "assistant", "content": "Sunny."}),
            ]
        );
        // Arguments the model wrote as broken JSON go back as it wrote them.
        assert_eq!(
            arguments_text(&json!("{\"city\": \"Par")),
            "{\"city\": \"Par"
        );
        assert_eq!(tool_choice_json(&ToolChoice::Auto), json!("auto"));
        assert_eq!(tool_choice_json(&ToolChoice::Required), json!("required"));
        assert_eq!(tool_choice_json(&ToolChoice::None), json!("none"));
        assert_eq!(
            tool_choice_json(&ToolChoice::Tool("f".into())),
            json!({"type": "function", "function": {"name": "f"}})
        );
        assert_eq!(f32_json(0.7), json!(0.7));
    }

    #[test]
    fn images_of_tool_results_follow_them_as_one_user_message() {
        use crate::message::ImageContent;
        let calls = ["call_1", "call_2", "call_3"].map(|id| ToolCall {
            id: id.into(),
            name: "read_file".into(),
            arguments: json!({}),
        });
        let mut first = Message::tool("call_1", "read_file", "'a.png' is a PNG image");
        first.images.push(ImageContent {
            mime_type: "image/png".into(),
            data: "iVBO".into(),
        });
        let mut third = Message::tool("call_3", "read_file", "'c.gif' is a GIF image");
        third.images.push(ImageContent {
            mime_type: "image/gif".into(),
            data: "R0lG".into(),
        });
        let history = [
            Message::user("Look"),
            Message::assistant_with_tool_calls("", calls.to_vec()),
            first,
            Message::tool("call_2", "read_file", "a text"),
            third,
            Message::assistant("Two pictures."),
        ];
        let out = messages_json(&history);
        assert_eq!(out.len(), 7);
        assert_eq!(out[2]["content"], "'a.png' is a PNG image");
        assert_eq!(out[4]["role"], "tool");
        assert_eq!(
            out[5],
            json!({"role": "user", "content": [
                {"type": "text", "text": "The image returned by tool call call_1 (read_file):"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBO"}},
                {"type": "text", "text": "The image returned by tool call call_3 (read_file):"},
                {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lG"}},
            ]})
        );
        assert_eq!(out[6]["role"], "assistant");
        // At the end of the history too (the model is about to answer).
        assert_eq!(messages_json(&history[..5]).len(), 6);
    }

    #[test]
    fn deltas_build_text_calls_and_usage() {
        let (reply, pieces) = stream(&[
            r#"{"choices":[{"index":0,"delta":{"role":"assistant","content":"","reasoning_content":"Think"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"Hel"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"content":"lo"}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a","type":"function","function":{"name":"f","arguments":""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"b","type":"function","function":{"name":"g","arguments":"{\"x\""}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"y\": 2}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"function":{"arguments":": 1}"}}]}}]}"#,
            r#"{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}"#,
            r#"{"choices":[],"usage":{"prompt_tokens":30,"completion_tokens":9,"prompt_tokens_details":{"cached_tokens":20}}}"#,
            "[DONE]",
        ]);
        assert_eq!(pieces, ["Hel", "lo"]);
        assert_eq!(reply.text, "Hello");
        assert_eq!(reply.reasoning, "Think");
        assert_eq!(
            reply.tool_calls(),
            [
                NativeToolCall {
                    name: "f".into(),
                    arguments: r#"{"y": 2}"#.into()
                },
                NativeToolCall {
                    name: "g".into(),
                    arguments: r#"{"x": 1}"#.into()
                },
            ]
        );
        assert_eq!(
            reply.usage,
            Some(ReportedUsage {
                prompt_tokens: 30,
                cached_tokens: 20,
                completion_tokens: 9
            })
        );
        assert!(reply.done && reply.finished());
        assert_eq!(reply.finish(), FinishReason::Stop);
    }

    #[test]
    fn calls_without_index_follow_their_ids() {
        let (reply, _) = stream(&[
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"a","function":{"name":"f","arguments":"{}"}}]}}]}"#,
            r#"{"choices":[{"delta":{"tool_calls":[{"id":"b","function":{"name":"g","arguments":{"k":1}}}]}}]}"#,
            r#"{"choices":[{"delta":{},"finish_reason":"length"}]}"#,
        ]);
        let names: Vec<_> = reply.tool_calls().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["f", "g"]);
        assert_eq!(reply.tool_calls()[1].arguments, r#"{"k":1}"#);
        assert_eq!(reply.finish(), FinishReason::Length);
    }

    #[test]
    fn bad_chunks_and_stream_errors_are_typed() {
        let mut reply = Reply::default();
        let mut sink = |_: &str| {};
        assert!(matches!(
            push(&mut reply, "{not json", &mut sink),
            Err(ChunkError::Malformed(m)) if m.contains("{not json")
        ));
        assert_eq!(
            push(
                &mut reply,
                r#"{"error": {"message": "model crashed", "code": 500}}"#,
                &mut sink
            ),
            Err(ChunkError::Server("model crashed".into()))
        );
        assert!(matches!(
            push(&mut reply, r#"{"choices":[{"delta":{"tool_calls":[{"index":100000}]}}]}"#, &mut sink),
            Err(ChunkError::Malformed(m)) if m.contains("index 100000")
        ));
    }

    #[test]
    fn a_whole_answer_is_read_too() {
        let mut pieces = Vec::new();
        let reply = from_completion(
            r#"{"choices":[{"message":{"role":"assistant","content":"Hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            &mut |p| pieces.push(p.to_string()),
        )
        .unwrap();
        assert_eq!(pieces, ["Hi"]);
        assert_eq!(reply.tool_calls().len(), 1);
        assert_eq!(reply.usage.unwrap().prompt_tokens, 3);
    }
}
