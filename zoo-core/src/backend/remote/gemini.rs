//! The Gemini `streamGenerateContent` wire format: the request body, and
//! the reply put together from the stream's chunks (`?alt=sse`: each event
//! a whole `GenerateContentResponse`), or from one answer that did not
//! stream.
//!
//! - The system prompt is `systemInstruction`; the other messages become
//!   `contents` of roles `user` and `model` made of parts: text,
//!   `functionCall` (our calls) and `functionResponse` (their results,
//!   `{"output": ...}` or `{"error": ...}`), consecutive messages of one
//!   role merged. Tools are `functionDeclarations` whose schemas are
//!   mapped onto what Gemini accepts (see `gemini_schema`); `tool_choice`
//!   is `toolConfig.functionCallingConfig.mode` (`AUTO`, `ANY`, `NONE`,
//!   or `ANY` with `allowedFunctionNames`).
//! - Gemini streams each call whole, in its own part (several in one
//!   reply), without an id the history needs: the agentic loop gives every
//!   call its id, as for every provider.
//! - Thinking (`thinking` on the provider) sets `thinkingConfig`; thought
//!   parts are the reply's reasoning, never its text. A call's
//!   `thoughtSignature` is kept (see `signed`) and sent back on that call,
//!   which Gemini 3 requires for the calls of the current turn; a call of
//!   the current turn whose signature is not known (a conversation
//!   restored mid-exchange) carries the placeholder Google documents for
//!   that case.
//! - Usage: `promptTokenCount` (with `cachedContentTokenCount` cached),
//!   and `candidatesTokenCount` plus `thoughtsTokenCount` generated.

use serde::Deserialize;
use serde_json::{json, Map, Value as Json};

use super::gemini_schema::{has_parameters, to_gemini};
use super::protocol::{f32_json, Sampling};
use super::reply::{error_text, excerpt, ChunkError, Ending, Reply, ReportedUsage};
use super::signed::Signed;
use crate::backend::GenerateRequest;
use crate::message::{Message, Role};
use crate::provider::remote::ThinkingLevel;
use crate::tools::ToolChoice;
use crate::tools::ToolDefinition;

/// What Google's documentation says to send as the signature of a call
/// whose own signature is not known.
const UNKNOWN_SIGNATURE: &str = "skip_thought_signature_validator";

/// The request URL for a base URL and a model:
/// `<base>/v1beta/models/<model>:streamGenerateContent?alt=sse`; a base
/// that ends in its version (`/v1beta`, `/v1`) keeps it, and a model
/// written with its collection (`models/...`, `tunedModels/...`) keeps it.
pub(crate) fn url(base: &str, model: &str) -> String {
    let versioned = base.ends_with("/v1beta") || base.ends_with("/v1");
    let root = if versioned {
        base.to_string()
    } else {
        format!("{base}/v1beta")
    };
    let model = if model.contains('/') {
        model.to_string()
    } else {
        format!("models/{model}")
    };
    format!("{root}/{model}:streamGenerateContent?alt=sse")
}

/// What a Gemini backend remembers between requests.
#[derive(Debug, Default)]
pub(crate) struct Gemini {
    pub(crate) thinking: ThinkingLevel,
    /// Each recent reply's signatures, one per call (mostly on the first).
    signed: Signed<Vec<Option<String>>>,
}

impl Gemini {
    /// A backend that thinks at `thinking`.
    pub(crate) fn new(thinking: ThinkingLevel) -> Self {
        Gemini {
            thinking,
            signed: Signed::default(),
        }
    }

    /// Keeps a finished reply's call signatures.
    pub(crate) fn remember(&mut self, reply: &Reply) {
        let signatures: Vec<Option<String>> =
            reply.filled_calls().map(|c| c.signature.clone()).collect();
        if signatures.iter().any(Option::is_some) {
            self.signed.remember(reply.filled_calls(), signatures);
        }
    }

    /// The JSON body of a `streamGenerateContent` request.
    pub(crate) fn body(&self, request: &GenerateRequest<'_>, sampling: &Sampling) -> Json {
        let (system, rest) = match request.messages.split_first() {
            Some((first, rest)) if first.role == Role::System => (Some(first), rest),
            _ => (None, request.messages),
        };
        let mut body = Map::new();
        body.insert("contents".into(), Json::Array(self.contents(rest)));
        if let Some(system) = system.filter(|s| !s.content.trim().is_empty()) {
            body.insert(
                "systemInstruction".into(),
                json!({"parts": [{"text": system.content}]}),
            );
        }
        let has_calls = rest.iter().any(|m| !m.tool_calls.is_empty());
        if let Some((tools, config)) = tools_json(request, has_calls) {
            body.insert("tools".into(), tools);
            body.insert("toolConfig".into(), config);
        }
        body.insert(
            "generationConfig".into(),
            self.generation_config(request, sampling),
        );
        Json::Object(body)
    }

    fn generation_config(&self, request: &GenerateRequest<'_>, sampling: &Sampling) -> Json {
        let budget = self.thinking.budget_tokens();
        let mut config = Map::new();
        config.insert("temperature".into(), f32_json(sampling.temperature));
        config.insert("topP".into(), f32_json(sampling.top_p));
        if let Some(seed) = sampling.seed {
            // Gemini's seed is an int32.
            config.insert("seed".into(), json!(seed as i32));
        }
        if let Some(max) = request.max_tokens {
            // Thoughts count against the output limit.
            config.insert(
                "maxOutputTokens".into(),
                json!(max.saturating_add(budget.unwrap_or(0))),
            );
        }
        if !request.stop.is_empty() {
            config.insert("stopSequences".into(), json!(request.stop));
        }
        if let Some(budget) = budget {
            config.insert(
                "thinkingConfig".into(),
                json!({"thinkingBudget": budget, "includeThoughts": true}),
            );
        }
        Json::Object(config)
    }

    /// The history (system prompt aside) as `contents`.
    fn contents(&self, messages: &[Message]) -> Vec<Json> {
        // The current turn: after the last user message. Gemini checks the
        // signatures of its calls.
        let turn_start = messages
            .iter()
            .rposition(|m| m.role == Role::User)
            .map_or(0, |i| i + 1);
        let mut out: Vec<(&str, Vec<Json>)> = Vec::new();
        for (i, message) in messages.iter().enumerate() {
            let (role, parts) = match message.role {
                Role::User | Role::System => ("user", text_parts(&message.content)),
                Role::Tool => ("user", tool_parts(message, messages)),
                Role::Assistant => ("model", self.model_parts(message, i >= turn_start)),
            };
            if parts.is_empty() {
                continue;
            }
            match out.last_mut() {
                Some((last, held)) if *last == role => held.extend(parts),
                _ => out.push((role, parts)),
            }
        }
        out.into_iter()
            .map(|(role, parts)| json!({"role": role, "parts": parts}))
            .collect()
    }

    /// A reply's parts: its text, then a `functionCall` per call, each
    /// with the signature it came with.
    fn model_parts(&self, message: &Message, in_current_turn: bool) -> Vec<Json> {
        let mut parts = text_parts(&message.content);
        let signatures = self.signed.find(&message.tool_calls);
        for (i, call) in message.tool_calls.iter().enumerate() {
            let args = match &call.arguments {
                Json::Object(_) => call.arguments.clone(),
                _ => json!({}),
            };
            let mut part = Map::new();
            part.insert(
                "functionCall".into(),
                json!({"name": call.name, "args": args}),
            );
            let signature = match signatures {
                Some(known) => known.get(i).cloned().flatten(),
                None if in_current_turn && i == 0 => Some(UNKNOWN_SIGNATURE.to_string()),
                None => None,
            };
            if let Some(signature) = signature {
                part.insert("thoughtSignature".into(), json!(signature));
            }
            parts.push(Json::Object(part));
        }
        parts
    }
}

fn text_parts(text: &str) -> Vec<Json> {
    if text.is_empty() {
        Vec::new()
    } else {
        vec![json!({"text": text})]
    }
}

/// A tool result's parts: its `functionResponse`, then an `inlineData`
/// part for each image it carries.
fn tool_parts(message: &Message, history: &[Message]) -> Vec<Json> {
    let mut parts = vec![function_response(message, history)];
    parts.extend(
        message
            .images
            .iter()
            .map(|image| json!({"inlineData": {"mimeType": image.mime_type, "data": image.data}})),
    );
    parts
}

/// A tool result: `{"output": <the result>}` (as JSON when it is JSON),
/// or `{"error": <the message>}`; named by its tool.
fn function_response(message: &Message, history: &[Message]) -> Json {
    let name = message.name.clone().unwrap_or_else(|| {
        let id = message.tool_call_id.as_deref().unwrap_or_default();
        history
            .iter()
            .flat_map(|m| &m.tool_calls)
            .find(|c| c.id == id)
            .map(|c| c.name.clone())
            .unwrap_or_default()
    });
    let response = if message.is_error {
        json!({"error": message.content})
    } else {
        let output = serde_json::from_str::<Json>(&message.content)
            .unwrap_or_else(|_| json!(message.content));
        json!({"output": output})
    };
    json!({"functionResponse": {"name": name, "response": response}})
}

/// `tools` and `toolConfig`, when there are tools to send. No tools with
/// calls in the history still declares the called tools (with mode
/// `NONE`), so that the history's calls name declared functions.
fn tools_json(request: &GenerateRequest<'_>, history_has_calls: bool) -> Option<(Json, Json)> {
    let declarations: Vec<Json> = if !request.tools.is_empty() {
        request.tools.iter().map(declaration).collect()
    } else if history_has_calls {
        let mut names: Vec<&str> = request
            .messages
            .iter()
            .flat_map(|m| m.tool_calls.iter().map(|c| c.name.as_str()))
            .collect();
        names.sort_unstable();
        names.dedup();
        names
            .into_iter()
            .map(|name| json!({"name": name, "description": "Not available now."}))
            .collect()
    } else {
        return None;
    };
    let choice = if request.tools.is_empty() {
        &ToolChoice::None
    } else {
        request.tool_choice
    };
    let config = match choice {
        ToolChoice::Auto => json!({"mode": "AUTO"}),
        ToolChoice::Required => json!({"mode": "ANY"}),
        ToolChoice::None => json!({"mode": "NONE"}),
        ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
    };
    Some((
        json!([{"functionDeclarations": declarations}]),
        json!({"functionCallingConfig": config}),
    ))
}

fn declaration(tool: &ToolDefinition) -> Json {
    let parameters = to_gemini(&tool.parameters);
    if has_parameters(&parameters) {
        json!({"name": tool.name, "description": tool.description, "parameters": parameters})
    } else {
        json!({"name": tool.name, "description": tool.description})
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Chunk {
    #[serde(default)]
    candidates: Vec<Candidate>,
    #[serde(default)]
    usage_metadata: Option<UsageJson>,
    #[serde(default)]
    prompt_feedback: Option<PromptFeedback>,
    #[serde(default)]
    error: Option<Json>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    #[serde(default)]
    content: Option<Content>,
    #[serde(default)]
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    thought: bool,
    #[serde(default)]
    thought_signature: Option<String>,
    #[serde(default)]
    function_call: Option<FunctionCallJson>,
}

#[derive(Deserialize)]
struct FunctionCallJson {
    #[serde(default)]
    name: String,
    #[serde(default)]
    args: Option<Json>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct UsageJson {
    #[serde(default)]
    prompt_token_count: Option<u32>,
    #[serde(default)]
    cached_content_token_count: Option<u32>,
    #[serde(default)]
    candidates_token_count: Option<u32>,
    #[serde(default)]
    thoughts_token_count: Option<u32>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct PromptFeedback {
    #[serde(default)]
    block_reason: Option<String>,
}

/// Takes one event's data (a whole `GenerateContentResponse`). Text
/// pieces go to `on_piece` as they come.
pub(crate) fn push(
    reply: &mut Reply,
    data: &str,
    on_piece: &mut dyn FnMut(&str),
) -> Result<(), ChunkError> {
    let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
        ChunkError::Malformed(format!(
            "a stream chunk is not a GenerateContentResponse ({e}): {}",
            excerpt(data)
        ))
    })?;
    take_chunk(reply, chunk, on_piece)
}

fn take_chunk(
    reply: &mut Reply,
    chunk: Chunk,
    on_piece: &mut dyn FnMut(&str),
) -> Result<(), ChunkError> {
    if let Some(error) = chunk.error {
        return Err(ChunkError::Server(error_text(&error)));
    }
    if let Some(usage) = chunk.usage_metadata {
        reply.usage = Some(ReportedUsage {
            prompt_tokens: usage.prompt_token_count.unwrap_or(0),
            cached_tokens: usage.cached_content_token_count.unwrap_or(0),
            completion_tokens: usage
                .candidates_token_count
                .unwrap_or(0)
                .saturating_add(usage.thoughts_token_count.unwrap_or(0)),
        });
    }
    // One candidate is asked for: it is the first.
    let Some(candidate) = chunk.candidates.into_iter().next() else {
        if let Some(reason) = chunk.prompt_feedback.and_then(|f| f.block_reason) {
            return Err(ChunkError::Malformed(format!(
                "the prompt was blocked ({reason})"
            )));
        }
        return Ok(());
    };
    for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
        if let Some(call) = part.function_call {
            let slot = reply.new_call()?;
            let held = &mut reply.calls[slot];
            held.name = call.name;
            held.arguments = call.args.map(|a| a.to_string()).unwrap_or_default();
            held.signature = part.thought_signature;
        } else if let Some(text) = part.text {
            if part.thought {
                reply.reasoning.push_str(&text);
            } else {
                reply.push_text(&text, on_piece);
            }
        }
    }
    if let Some(reason) = candidate.finish_reason {
        reply.ending = Some(match reason.as_str() {
            "MAX_TOKENS" => Ending::Length,
            _ => Ending::Stop,
        });
    }
    Ok(())
}

/// A reply from an answer that did not stream: one response, or the JSON
/// array `streamGenerateContent` sends without `alt=sse`.
pub(crate) fn from_answer(body: &str, on_piece: &mut dyn FnMut(&str)) -> Result<Reply, ChunkError> {
    let json: Json = serde_json::from_str(body).map_err(|e| {
        ChunkError::Malformed(format!("the answer is not JSON ({e}): {}", excerpt(body)))
    })?;
    let items = match json {
        Json::Array(items) => items,
        one => vec![one],
    };
    let mut reply = Reply::default();
    for item in items {
        let chunk: Chunk = serde_json::from_value(item).map_err(|e| {
            ChunkError::Malformed(format!(
                "the answer is not a GenerateContentResponse ({e}): {}",
                excerpt(body)
            ))
        })?;
        take_chunk(&mut reply, chunk, on_piece)?;
    }
    reply.done = true;
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{CacheHint, NativeToolCall};
    use crate::message::ToolCall;

    fn request<'a>(
        messages: &'a [Message],
        tools: &'a [ToolDefinition],
        choice: &'a ToolChoice,
    ) -> GenerateRequest<'a> {
        GenerateRequest {
            messages,
            tools,
            tool_choice: choice,
            max_tokens: Some(100),
            max_calls: 1,
            stop: &[],
            cache_hint: CacheHint::default(),
            deadline: None,
        }
    }

    fn sampling() -> Sampling {
        Sampling {
            temperature: 0.5,
            top_p: 0.9,
            seed: Some(3),
        }
    }

    fn call(id: &str, name: &str, arguments: Json) -> ToolCall {
        ToolCall {
            id: id.into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn contents_roles_parts_and_tool_config() {
        let messages = [
            Message::system("Be brief."),
            Message::user("Weather and sum?"),
            Message::assistant_with_tool_calls(
                "",
                vec![
                    call("call_1", "get_weather", json!({"city": "Paris"})),
                    call("call_2", "add", json!({"a": 2, "b": 40})),
                ],
            ),
            Message::tool("call_1", "get_weather", r#"{"temperature":17}"#),
            Message::tool_error("call_2", "add", "Error: overflow"),
            Message::assistant("Done."),
            Message::user("Thanks"),
        ];
        let tools = [ToolDefinition {
            name: "add".into(),
            description: "Add".into(),
            parameters: json!({"type": "object", "additionalProperties": false,
                               "properties": {"a": {"type": "integer"}}}),
        }];
        let choice = ToolChoice::Tool("add".into());
        let body = Gemini::default().body(&request(&messages, &tools, &choice), &sampling());
        assert_eq!(
            body,
            json!({
                "contents": [
                    {"role": "user", "parts": [{"text": "Weather and sum?"}]},
                    {"role": "model", "parts": [
                        {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                        {"functionCall": {"name": "add", "args": {"a": 2, "b": 40}}},
                    ]},
                    {"role": "user", "parts": [
                        {"functionResponse": {"name": "get_weather", "response": {"output": {"temperature": 17}}}},
                        {"functionResponse": {"name": "add", "response": {"error": "Error: overflow"}}},
                    ]},
                    {"role": "model", "parts": [{"text": "Done."}]},
                    {"role": "user", "parts": [{"text": "Thanks"}]},
                ],
                "systemInstruction": {"parts": [{"text": "Be brief."}]},
                "tools": [{"functionDeclarations": [{"name": "add", "description": "Add",
                    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}}]}],
                "toolConfig": {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["add"]}},
                "generationConfig": {"temperature": 0.5, "topP": 0.9, "seed": 3, "maxOutputTokens": 100},
            })
        );
        // No tools shown: the history's tools are declared, none callable.
        let body = Gemini::default().body(&request(&messages, &[], &ToolChoice::None), &sampling());
        assert_eq!(
            body["toolConfig"],
            json!({"functionCallingConfig": {"mode": "NONE"}})
        );
        assert_eq!(
            body["tools"][0]["functionDeclarations"][1]["name"],
            "get_weather"
        );
    }

    #[test]
    fn a_tool_results_images_are_inline_data_parts_after_it() {
        let mut result = Message::tool("call_1", "read_file", "'a.png' is a PNG image");
        result.images.push(crate::message::ImageContent {
            mime_type: "image/png".into(),
            data: "iVBO".into(),
        });
        let messages = [
            Message::user("Look"),
            Message::assistant_with_tool_calls(
                "",
                vec![call("call_1", "read_file", json!({"path": "a.png"}))],
            ),
            result,
        ];
        let body = Gemini::default().body(&request(&messages, &[], &ToolChoice::Auto), &sampling());
        assert_eq!(
            body["contents"][2],
            json!({"role": "user", "parts": [
                {"functionResponse": {"name": "read_file", "response": {"output": "'a.png' is a PNG image"}}},
                {"inlineData": {"mimeType": "image/png", "data": "iVBO"}},
            ]})
        );
    }

    #[test]
    fn calls_come_whole_and_their_signatures_go_back() {
        let mut reply = Reply::default();
        let mut pieces = Vec::new();
        for chunk in [
            r#"{"candidates":[{"content":{"parts":[{"text":"Plan: weather.","thought":true}],"role":"model"},"index":0}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"SIG1"},{"functionCall":{"name":"add","args":{"a":2,"b":40}}}],"role":"model"},"index":0}]}"#,
            r#"{"candidates":[{"content":{"parts":[{"text":""}],"role":"model"},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":29,"cachedContentTokenCount":16,"candidatesTokenCount":15,"thoughtsTokenCount":40}}"#,
        ] {
            push(&mut reply, chunk, &mut |p| pieces.push(p.to_string())).unwrap();
        }
        assert!(pieces.is_empty());
        assert_eq!(reply.reasoning, "Plan: weather.");
        assert_eq!(
            reply.tool_calls(),
            [
                NativeToolCall {
                    name: "get_weather".into(),
                    arguments: r#"{"city":"Paris"}"#.into()
                },
                NativeToolCall {
                    name: "add".into(),
                    arguments: r#"{"a":2,"b":40}"#.into()
                },
            ]
        );
        assert_eq!(
            reply.usage,
            Some(ReportedUsage {
                prompt_tokens: 29,
                cached_tokens: 16,
                completion_tokens: 55
            })
        );
        let mut gemini = Gemini::new(ThinkingLevel::Medium);
        gemini.remember(&reply);
        let calls = vec![
            call("call_1", "get_weather", json!({"city": "Paris"})),
            call("call_2", "add", json!({"a": 2, "b": 40})),
        ];
        let messages = [
            Message::user("Q"),
            Message::assistant_with_tool_calls("", calls),
            Message::tool("call_1", "get_weather", "17"),
            Message::tool("call_2", "add", "42"),
        ];
        let body = gemini.body(&request(&messages, &[], &ToolChoice::Auto), &sampling());
        let parts = &body["contents"][1]["parts"];
        assert_eq!(parts[0]["thoughtSignature"], "SIG1");
        assert!(parts[1].get("thoughtSignature").is_none());
        assert_eq!(
            body["generationConfig"]["thinkingConfig"],
            json!({"thinkingBudget": 4096, "includeThoughts": true})
        );
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 4196);
        // Unknown signatures in the current turn get Google's placeholder.
        let body = Gemini::default().body(&request(&messages, &[], &ToolChoice::Auto), &sampling());
        assert_eq!(
            body["contents"][1]["parts"][0]["thoughtSignature"],
            UNKNOWN_SIGNATURE
        );
    }

    #[test]
    fn errors_blocks_and_whole_answers() {
        let mut reply = Reply::default();
        let mut sink = |_: &str| {};
        assert_eq!(
            push(
                &mut reply,
                r#"{"error": {"code": 500, "message": "Internal error encountered.", "status": "INTERNAL"}}"#,
                &mut sink
            ),
            Err(ChunkError::Server("Internal error encountered.".into()))
        );
        assert_eq!(
            push(
                &mut reply,
                r#"{"promptFeedback": {"blockReason": "SAFETY"}}"#,
                &mut sink
            ),
            Err(ChunkError::Malformed(
                "the prompt was blocked (SAFETY)".into()
            ))
        );
        assert!(matches!(
            push(&mut reply, "[1,", &mut sink),
            Err(ChunkError::Malformed(_))
        ));
        let reply = from_answer(
            r#"[{"candidates":[{"content":{"parts":[{"text":"Hi"}],"role":"model"}}]},
                {"candidates":[{"content":{"parts":[{"text":"!"}],"role":"model"},"finishReason":"MAX_TOKENS"}]}]"#,
            &mut sink,
        )
        .unwrap();
        assert_eq!(reply.text, "Hi!");
        assert_eq!(reply.ending, Some(Ending::Length));
        assert_eq!(
            url("https://generativelanguage.googleapis.com", "gemini-2.5-flash"),
            "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
        );
        assert_eq!(
            url("http://h/v1", "models/m"),
            "http://h/v1/models/m:streamGenerateContent?alt=sse"
        );
    }
}
