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

use super::settings::MaxTokensField;
use crate::backend::{FinishReason, GenerateRequest, NativeToolCall};
use crate::config::ToolChoice;
use crate::message::{Message, Role};

/// Calls one reply may make; a higher `index` is a broken (or hostile)
/// server, not a reason to allocate.
const MAX_CALLS: usize = 256;

/// The sampling settings sent with every request (the agent's own).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Sampling {
    pub(crate) temperature: f32,
    pub(crate) top_p: f32,
    pub(crate) seed: Option<u32>,
}

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
    let messages: Vec<Json> = request.messages.iter().map(message_json).collect();
    body.insert("messages".into(), Json::Array(messages));
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
            let content = if message.content.is_empty() {
                Json::Null
            } else {
                json!(message.content)
            };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
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

/// An f32 as it reads (`0.7`, not `0.699999988079071`).
fn f32_json(value: f32) -> Json {
    let shortest: f64 = value.to_string().parse().unwrap_or(f64::from(value));
    serde_json::Number::from_f64(shortest).map_or(Json::Null, Json::Number)
}

/// Token counts as the server reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ReportedUsage {
    pub(crate) prompt_tokens: u32,
    pub(crate) cached_tokens: u32,
    pub(crate) completion_tokens: u32,
}

/// Why a chunk could not be taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChunkError {
    /// Not a chunk of this API: the message says what was wrong.
    Malformed(String),
    /// The server reported an error inside the stream; its own text.
    Server(String),
}

/// One reply, as its chunks have built it so far.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    /// The text, as streamed to `on_piece`.
    pub(crate) text: String,
    /// Reasoning (`reasoning_content`, or `reasoning`), never part of the text.
    pub(crate) reasoning: String,
    calls: Vec<PartialCall>,
    finish_reason: Option<String>,
    pub(crate) usage: Option<ReportedUsage>,
    /// Whether `[DONE]` was read.
    pub(crate) done: bool,
}

#[derive(Debug, Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
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

impl Reply {
    /// Takes one event's data: a chunk, or `[DONE]`. Text pieces go to
    /// `on_piece` as they come.
    pub(crate) fn push(
        &mut self,
        data: &str,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<(), ChunkError> {
        if data.trim() == "[DONE]" {
            self.done = true;
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
            self.usage = Some(usage.into());
        }
        // One reply is asked for (no `n`): its choice is the first.
        if let Some(choice) = chunk.choices.unwrap_or_default().into_iter().next() {
            if let Some(delta) = choice.delta {
                self.take_message(delta, on_piece)?;
            }
            if choice.finish_reason.is_some() {
                self.finish_reason = choice.finish_reason;
            }
        }
        Ok(())
    }

    /// A reply from a server that answered with one JSON object instead of
    /// a stream; its text goes to `on_piece` in one piece.
    pub(crate) fn from_completion(
        body: &str,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<Self, ChunkError> {
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
                reply.take_message(message, on_piece)?;
            }
            reply.finish_reason = choice.finish_reason;
        }
        Ok(reply)
    }

    fn take_message(
        &mut self,
        message: MessageJson,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<(), ChunkError> {
        if let Some(text) = message.content.filter(|t| !t.is_empty()) {
            self.text.push_str(&text);
            on_piece(&text);
        }
        if let Some(thought) = message.reasoning_content.or(message.reasoning) {
            self.reasoning.push_str(&thought);
        }
        for call in message.tool_calls.unwrap_or_default() {
            self.take_call(call)?;
        }
        Ok(())
    }

    /// Adds a call delta to its call: by `index` when the server gives
    /// one; else a new id opens a new call and no id continues the last.
    fn take_call(&mut self, delta: CallJson) -> Result<(), ChunkError> {
        let slot = match (delta.index, &delta.id) {
            (Some(index), _) => index,
            (None, Some(id)) if !self.calls.iter().any(|c| &c.id == id) => self.calls.len(),
            (None, _) => self.calls.len().saturating_sub(1),
        };
        if slot >= MAX_CALLS {
            return Err(ChunkError::Malformed(format!(
                "a tool call has index {slot}; at most {MAX_CALLS} calls are taken in one reply"
            )));
        }
        if self.calls.len() <= slot {
            self.calls.resize_with(slot + 1, PartialCall::default);
        }
        let call = &mut self.calls[slot];
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

    /// Bytes held for this reply, for the caller's bound.
    pub(crate) fn held_bytes(&self) -> usize {
        self.text.len()
            + self.reasoning.len()
            + self
                .calls
                .iter()
                .map(|c| c.name.len() + c.arguments.len() + c.id.len())
                .sum::<usize>()
    }

    /// Whether anything of the reply has arrived (then it cannot be sent
    /// again without repeating what the caller saw).
    pub(crate) fn started(&self) -> bool {
        !self.text.is_empty() || !self.reasoning.is_empty() || !self.calls.is_empty()
    }

    /// Whether the server said why the reply ended.
    pub(crate) fn finished(&self) -> bool {
        self.finish_reason.is_some()
    }

    /// Why the reply ended: `length` is the token limit; anything else
    /// (`stop`, `tool_calls`, `content_filter`, none) is a finished reply.
    pub(crate) fn finish(&self) -> FinishReason {
        match self.finish_reason.as_deref() {
            Some("length") => FinishReason::Length,
            _ => FinishReason::Stop,
        }
    }

    /// The reply's tool calls, in index order; slots no delta filled (a
    /// gap in the indices) are left out.
    pub(crate) fn tool_calls(&self) -> Vec<NativeToolCall> {
        self.calls
            .iter()
            .filter(|c| !(c.name.is_empty() && c.arguments.is_empty()))
            .map(|c| NativeToolCall {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect()
    }
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

/// The server's own words from an error body: `{"error": {"message": ...}}`
/// (OpenAI, vLLM, llama.cpp), `{"error": "..."}` (TGI), `{"message": ...}`,
/// or the text itself, cut to a readable length.
pub(crate) fn error_text(body: &Json) -> String {
    let text = match body {
        Json::String(text) => text.clone(),
        Json::Object(object) => {
            let nested = object.get("error").map(error_text);
            let message = object
                .get("message")
                .or_else(|| object.get("detail"))
                .and_then(Json::as_str)
                .map(str::to_string);
            match (message, nested) {
                (Some(message), _) => message,
                (None, Some(nested)) => nested,
                (None, None) => body.to_string(),
            }
        }
        other => other.to_string(),
    };
    excerpt(&text)
}

/// The server's words from an error body's text, JSON or not.
pub(crate) fn error_body_text(body: &str) -> String {
    match serde_json::from_str::<Json>(body) {
        Ok(json) => error_text(&json),
        Err(_) if body.trim().is_empty() => "(no error text)".into(),
        Err(_) => excerpt(body.trim()),
    }
}

/// At most 1000 characters of `text`, for an error message.
pub(crate) fn excerpt(text: &str) -> String {
    const MAX_CHARS: usize = 1000;
    match text.char_indices().nth(MAX_CHARS) {
        Some((at, _)) => format!("{}...", &text[..at]),
        None => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn stream(chunks: &[&str]) -> (Reply, Vec<String>) {
        let mut reply = Reply::default();
        let mut pieces = Vec::new();
        for chunk in chunks {
            reply
                .push(chunk, &mut |p| pieces.push(p.to_string()))
                .unwrap();
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
                json!({"role": "assistant", "content": null, "tool_calls": calls}),
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
            reply.push("{not json", &mut sink),
            Err(ChunkError::Malformed(m)) if m.contains("{not json")
        ));
        assert_eq!(
            reply.push(
                r#"{"error": {"message": "model crashed", "code": 500}}"#,
                &mut sink
            ),
            Err(ChunkError::Server("model crashed".into()))
        );
        assert!(matches!(
            reply.push(r#"{"choices":[{"delta":{"tool_calls":[{"index":100000}]}}]}"#, &mut sink),
            Err(ChunkError::Malformed(m)) if m.contains("index 100000")
        ));
    }

    #[test]
    fn a_whole_answer_is_read_too() {
        let mut pieces = Vec::new();
        let reply = Reply::from_completion(
            r#"{"choices":[{"message":{"role":"assistant","content":"Hi","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":3,"completion_tokens":1}}"#,
            &mut |p| pieces.push(p.to_string()),
        )
        .unwrap();
        assert_eq!(pieces, ["Hi"]);
        assert_eq!(reply.tool_calls().len(), 1);
        assert_eq!(reply.usage.unwrap().prompt_tokens, 3);
    }

    #[test]
    fn error_texts_are_the_servers_words() {
        assert_eq!(
            error_body_text(r#"{"error": {"message": "Invalid key", "type": "auth"}}"#),
            "Invalid key"
        );
        assert_eq!(error_body_text(r#"{"error": "overloaded"}"#), "overloaded");
        assert_eq!(error_body_text(r#"{"detail": "Not Found"}"#), "Not Found");
        assert_eq!(error_body_text("Bad Gateway\n"), "Bad Gateway");
        assert_eq!(error_body_text(""), "(no error text)");
        assert_eq!(excerpt(&"é".repeat(1001)).chars().count(), 1003);
    }
}
