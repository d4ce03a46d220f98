//! The Anthropic Messages wire format: the request body, and the reply put
//! together from the stream's events (or from one message, for an answer
//! that did not stream).
//!
//! - The system prompt is the top-level `system`; the other messages become
//!   `user` and `assistant` messages of content blocks: text, `tool_use`
//!   (our calls, with their arguments as `input`) and `tool_result`
//!   (consecutive results merged into one user message, as the API
//!   requires; a correction the loop writes as a system message joins them
//!   as text).
//! - Prompt caching is automatic: `cache_control` breakpoints on the system
//!   prompt, on the last tool and on the second-to-last message, so that
//!   each request reads what the previous one wrote.
//! - A stream is `message_start`, then for each content block
//!   `content_block_start`, its `content_block_delta`s and
//!   `content_block_stop`, then `message_delta` (stop reason, usage) and
//!   `message_stop`; `ping`s come any time, an `error` event ends it. Tool
//!   arguments arrive as `input_json_delta` pieces per block; several
//!   `tool_use` blocks may come in one reply.
//! - Thinking (`thinking` on the provider) is a budget of tokens. Its text
//!   is the reply's reasoning, never its text. Its signed blocks are kept
//!   (see `signed`) and sent back only where the API needs them: before the
//!   calls of the reply that thought, while their results are sent.

use serde::Deserialize;
use serde_json::{json, Map, Value as Json};

use super::protocol::Sampling;
use super::reply::{error_text, excerpt, ChunkError, Ending, Reply, ReportedUsage};
use super::signed::Signed;
use crate::backend::GenerateRequest;
use crate::message::{Message, Role};
use crate::provider::remote::ThinkingLevel;
use crate::tools::ToolChoice;
use crate::tools::ToolDefinition;

/// The API version every request names (a `headers` entry overrides it).
pub(crate) const API_VERSION: &str = "2023-06-01";
/// The reply's token limit when the agent sets none (the API needs one);
/// every Claude model can write this many.
pub(crate) const DEFAULT_MAX_TOKENS: u32 = 4096;
/// Content blocks one reply may open; more is a broken server.
const MAX_BLOCKS: usize = 1024;

/// The request URL for a base URL: `<base>/v1/messages`, or the base as
/// given when it already names the endpoint or its version.
pub(crate) fn url(base: &str) -> String {
    if base.ends_with("/messages") {
        base.to_string()
    } else if base.ends_with("/v1") {
        format!("{base}/messages")
    } else {
        format!("{base}/v1/messages")
    }
}

/// What an Anthropic backend remembers between requests.
#[derive(Debug, Default)]
pub(crate) struct Anthropic {
    pub(crate) thinking: ThinkingLevel,
    /// Signed thinking blocks of recent replies with calls.
    signed: Signed<Vec<Json>>,
}

impl Anthropic {
    /// A backend that thinks at `thinking`.
    pub(crate) fn new(thinking: ThinkingLevel) -> Self {
        Anthropic {
            thinking,
            signed: Signed::default(),
        }
    }

    /// Keeps a finished reply's signed thinking for its calls.
    pub(crate) fn remember(&mut self, reply: &Reply) {
        if !reply.signed_thinking.is_empty() {
            self.signed
                .remember(reply.filled_calls(), reply.signed_thinking.clone());
        }
    }

    /// The JSON body of a streamed Messages request.
    pub(crate) fn body(
        &self,
        model: &str,
        request: &GenerateRequest<'_>,
        sampling: &Sampling,
    ) -> Json {
        let (system, rest) = match request.messages.split_first() {
            Some((first, rest)) if first.role == Role::System => (Some(first), rest),
            _ => (None, request.messages),
        };
        let mut messages = messages_json(rest, &self.signed);
        // The API refuses thinking with a forced tool, and wants the
        // signed thinking of an exchange in progress when thinking is on:
        // without it (a reply made while thinking was off), it is left off.
        let forced = matches!(
            request.tool_choice,
            ToolChoice::Required | ToolChoice::Tool(_)
        );
        let budget = self
            .thinking
            .budget_tokens()
            .filter(|_| !forced && !continues_without_thinking(&messages));
        mark_cache(&mut messages);
        let reply_max = request.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS);
        let mut body = Map::new();
        body.insert("model".into(), json!(model));
        body.insert(
            "max_tokens".into(),
            json!(reply_max.saturating_add(budget.unwrap_or(0))),
        );
        if let Some(system) = system.filter(|s| !s.content.trim().is_empty()) {
            body.insert(
                "system".into(),
                json!([{"type": "text", "text": system.content, "cache_control": {"type": "ephemeral"}}]),
            );
        }
        let has_calls = rest.iter().any(|m| !m.tool_calls.is_empty());
        body.insert("messages".into(), Json::Array(messages));
        if let Some((tools, choice)) = tools_json(request, has_calls) {
            body.insert("tools".into(), tools);
            body.insert("tool_choice".into(), choice);
        }
        body.insert("stream".into(), json!(true));
        match budget {
            Some(budget) => {
                body.insert(
                    "thinking".into(),
                    json!({"type": "enabled", "budget_tokens": budget}),
                );
            }
            // Thinking takes no temperature; Claude's range is 0 to 1.
            None => {
                body.insert("temperature".into(), sampling.temperature_json(Some(1.0)));
            }
        }
        if !request.stop.is_empty() {
            body.insert("stop_sequences".into(), json!(request.stop));
        }
        Json::Object(body)
    }
}

/// `tools` and `tool_choice`, when there are tools to send. No tools with
/// calls in the history still sends the called tools' names (with
/// `tool_choice` none): the API refuses `tool_use` blocks without tools.
fn tools_json(request: &GenerateRequest<'_>, history_has_calls: bool) -> Option<(Json, Json)> {
    let mut tools: Vec<Json> = if !request.tools.is_empty() {
        request.tools.iter().map(tool_json).collect()
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
            .map(|name| json!({"name": name, "description": "Not available now.", "input_schema": {"type": "object"}}))
            .collect()
    } else {
        return None;
    };
    if let Some(Json::Object(last)) = tools.last_mut() {
        last.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
    let choice = if request.tools.is_empty() {
        json!({"type": "none"})
    } else {
        tool_choice_json(request.tool_choice)
    };
    Some((Json::Array(tools), choice))
}

fn tool_json(tool: &ToolDefinition) -> Json {
    json!({"name": tool.name, "description": tool.description, "input_schema": tool.parameters})
}

/// `tool_choice` as the API spells it.
fn tool_choice_json(choice: &ToolChoice) -> Json {
    match choice {
        ToolChoice::Auto => json!({"type": "auto"}),
        ToolChoice::Required => json!({"type": "any"}),
        ToolChoice::None => json!({"type": "none"}),
        ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
    }
}

/// The history (system prompt aside) as the API's messages: consecutive
/// messages of one role merged, whitespace-only text left out.
fn messages_json(messages: &[Message], signed: &Signed<Vec<Json>>) -> Vec<Json> {
    let mut out: Vec<(&str, Vec<Json>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::User | Role::System => ("user", text_blocks(&message.content)),
            Role::Tool => ("user", vec![tool_result(message)]),
            Role::Assistant => ("assistant", assistant_blocks(message, signed)),
        };
        if blocks.is_empty() {
            continue;
        }
        let starts_thinking = blocks.first().is_some_and(is_thinking);
        match out.last_mut() {
            // Thinking must open its message: such a reply is not merged.
            Some((last, held)) if *last == role && !starts_thinking => held.extend(blocks),
            _ => out.push((role, blocks)),
        }
    }
    // A reply to continue may not end with whitespace.
    if let Some(("assistant", blocks)) = out.last_mut() {
        if let Some(Json::Object(block)) = blocks.last_mut() {
            if let Some(Json::String(text)) = block.get_mut("text") {
                text.truncate(text.trim_end().len());
            }
        }
    }
    out.into_iter()
        .map(|(role, blocks)| json!({"role": role, "content": blocks}))
        .collect()
}

fn text_blocks(text: &str) -> Vec<Json> {
    if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![json!({"type": "text", "text": text})]
    }
}

fn tool_result(message: &Message) -> Json {
    let mut block = Map::new();
    block.insert("type".into(), json!("tool_result"));
    block.insert(
        "tool_use_id".into(),
        json!(message.tool_call_id.as_deref().unwrap_or_default()),
    );
    if !message.images.is_empty() {
        // With images the content is blocks: the text, then each image.
        let mut content = text_blocks(&message.content);
        content.extend(message.images.iter().map(|image| {
            json!({"type": "image", "source": {
                "type": "base64", "media_type": image.mime_type, "data": image.data,
            }})
        }));
        block.insert("content".into(), Json::Array(content));
    } else if !message.content.is_empty() {
        block.insert("content".into(), json!(message.content));
    }
    if message.is_error {
        block.insert("is_error".into(), json!(true));
    }
    Json::Object(block)
}

/// A reply's blocks: its signed thinking when it is kept, its text, its calls.
fn assistant_blocks(message: &Message, signed: &Signed<Vec<Json>>) -> Vec<Json> {
    let mut blocks = Vec::new();
    if !message.tool_calls.is_empty() {
        if let Some(thinking) = signed.find(&message.tool_calls) {
            blocks.extend(thinking.iter().cloned());
        }
    }
    blocks.extend(text_blocks(&message.content));
    for call in &message.tool_calls {
        let input = match &call.arguments {
            Json::Object(_) => call.arguments.clone(),
            _ => json!({}),
        };
        blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
    }
    blocks
}

fn is_thinking(block: &Json) -> bool {
    matches!(
        block.get("type").and_then(Json::as_str),
        Some("thinking" | "redacted_thinking")
    )
}

/// Whether the request continues an exchange (it ends with tool results)
/// whose first reply has no thinking block: the API refuses thinking then.
fn continues_without_thinking(messages: &[Json]) -> bool {
    let has_result = |m: &Json| {
        m["content"]
            .as_array()
            .is_some_and(|blocks| blocks.iter().any(|b| b["type"] == "tool_result"))
    };
    let Some(last) = messages.last() else {
        return false;
    };
    if last["role"] != "user" || !has_result(last) {
        return false;
    }
    // The exchange began after the last user message that is not results.
    let start = messages
        .iter()
        .rposition(|m| m["role"] == "user" && !has_result(m))
        .map_or(0, |i| i + 1);
    let first_reply = messages[start..].iter().find(|m| m["role"] == "assistant");
    !first_reply.is_some_and(|m| {
        m["content"]
            .as_array()
            .and_then(|b| b.first())
            .is_some_and(is_thinking)
    })
}

/// Cache breakpoints on the messages: the last block of the second-to-last
/// message (the system prompt and the tools have theirs).
fn mark_cache(messages: &mut [Json]) {
    let Some(index) = messages.len().checked_sub(2) else {
        return;
    };
    if let Some(Json::Object(block)) = messages[index]["content"]
        .as_array_mut()
        .and_then(|blocks| blocks.last_mut())
    {
        block.insert("cache_control".into(), json!({"type": "ephemeral"}));
    }
}

/// One stream event, flat: every event type's fields are optional here, so
/// that an event is parsed once, without buffering.
#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    index: Option<u64>,
    #[serde(default)]
    delta: Option<Delta>,
    #[serde(default)]
    content_block: Option<BlockJson>,
    #[serde(default)]
    message: Option<MessageJson>,
    #[serde(default)]
    usage: Option<UsageJson>,
    #[serde(default)]
    error: Option<Json>,
}

/// A `content_block_delta`'s delta, or a `message_delta`'s.
#[derive(Deserialize)]
struct Delta {
    #[serde(rename = "type", default)]
    kind: Option<String>,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    partial_json: Option<String>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    stop_reason: Option<String>,
}

/// A content block, as `content_block_start` opens it or a whole message holds it.
#[derive(Deserialize)]
struct BlockJson {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    id: Option<String>,
    #[serde(default)]
    name: Option<String>,
    #[serde(default)]
    input: Option<Json>,
    #[serde(default)]
    thinking: Option<String>,
    #[serde(default)]
    signature: Option<String>,
    #[serde(default)]
    data: Option<String>,
}

#[derive(Deserialize)]
struct MessageJson {
    #[serde(default)]
    content: Vec<BlockJson>,
    #[serde(default)]
    stop_reason: Option<String>,
    #[serde(default)]
    usage: Option<UsageJson>,
}

#[derive(Debug, Deserialize, Default, Clone, Copy)]
struct UsageJson {
    #[serde(default)]
    input_tokens: Option<u32>,
    #[serde(default)]
    output_tokens: Option<u32>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u32>,
    #[serde(default)]
    cache_read_input_tokens: Option<u32>,
}

/// An open content block.
#[derive(Debug)]
enum Block {
    Text,
    /// A call in the reply's slot; `input` from the block's start is used
    /// when no `input_json_delta` follows.
    ToolUse {
        slot: usize,
        input: Option<Json>,
        streamed: bool,
    },
    Thinking {
        thinking: String,
        signature: String,
    },
    Redacted {
        data: String,
    },
    /// A block of a kind this engine does not use (a server tool's).
    Other,
}

/// The state of one streamed reply: its open blocks by index, and the
/// usage so far (reported in two events).
#[derive(Debug, Default)]
pub(crate) struct Decoder {
    blocks: Vec<(u64, Block)>,
    usage: UsageJson,
}

impl Decoder {
    /// Takes one event's data. Text pieces go to `on_piece` as they come.
    pub(crate) fn push(
        &mut self,
        reply: &mut Reply,
        data: &str,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<(), ChunkError> {
        let event: Event = serde_json::from_str(data).map_err(|e| {
            ChunkError::Malformed(format!(
                "a stream event is not a Messages event ({e}): {}",
                excerpt(data)
            ))
        })?;
        match event.kind.as_str() {
            "content_block_delta" => {
                let (index, delta) = (event.index.unwrap_or(0), event.delta);
                if let Some(delta) = delta {
                    self.delta(reply, index, delta, on_piece)?;
                }
            }
            "content_block_start" => {
                let block = event
                    .content_block
                    .ok_or_else(|| missing("content_block_start", "content_block"))?;
                self.start(reply, event.index.unwrap_or(0), block, on_piece)?;
            }
            "content_block_stop" => self.stop(reply, event.index.unwrap_or(0)),
            "message_start" => {
                if let Some(usage) = event.message.and_then(|m| m.usage) {
                    self.take_usage(reply, usage);
                }
            }
            "message_delta" => {
                if let Some(reason) = event.delta.and_then(|d| d.stop_reason) {
                    reply.ending = Some(ending(&reason));
                }
                if let Some(usage) = event.usage {
                    self.take_usage(reply, usage);
                }
            }
            "message_stop" => reply.done = true,
            "error" => {
                let error = event.error.unwrap_or(Json::Null);
                return Err(ChunkError::Server(error_text(&error)));
            }
            // `ping`, and event types added after this was written.
            _ => {}
        }
        Ok(())
    }

    fn start(
        &mut self,
        reply: &mut Reply,
        index: u64,
        block: BlockJson,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<(), ChunkError> {
        if self.blocks.len() == MAX_BLOCKS {
            return Err(ChunkError::Malformed(format!(
                "the reply opened more than {MAX_BLOCKS} content blocks"
            )));
        }
        let opened = match block.kind.as_str() {
            "text" => {
                reply.push_text(block.text.as_deref().unwrap_or_default(), on_piece);
                Block::Text
            }
            "tool_use" => {
                let slot = reply.new_call()?;
                let call = &mut reply.calls[slot];
                call.id = block.id.unwrap_or_default();
                call.name = block.name.unwrap_or_default();
                Block::ToolUse {
                    slot,
                    input: block.input,
                    streamed: false,
                }
            }
            "thinking" => {
                let thinking = block.thinking.unwrap_or_default();
                reply.reasoning.push_str(&thinking);
                Block::Thinking {
                    thinking,
                    signature: block.signature.unwrap_or_default(),
                }
            }
            "redacted_thinking" => Block::Redacted {
                data: block.data.unwrap_or_default(),
            },
            _ => Block::Other,
        };
        self.blocks.push((index, opened));
        Ok(())
    }

    fn delta(
        &mut self,
        reply: &mut Reply,
        index: u64,
        delta: Delta,
        on_piece: &mut dyn FnMut(&str),
    ) -> Result<(), ChunkError> {
        let Some(block) = self.block(index) else {
            return Err(ChunkError::Malformed(format!(
                "a content_block_delta names block {index}, which was never started"
            )));
        };
        match (block, delta.kind.as_deref()) {
            (Block::Text, Some("text_delta")) => {
                reply.push_text(delta.text.as_deref().unwrap_or_default(), on_piece)
            }
            (Block::ToolUse { slot, streamed, .. }, Some("input_json_delta")) => {
                *streamed = true;
                let piece = delta.partial_json.unwrap_or_default();
                reply.calls[*slot].arguments.push_str(&piece);
            }
            (Block::Thinking { thinking, .. }, Some("thinking_delta")) => {
                let piece = delta.thinking.unwrap_or_default();
                reply.reasoning.push_str(&piece);
                thinking.push_str(&piece);
            }
            (Block::Thinking { signature, .. }, Some("signature_delta")) => {
                signature.push_str(&delta.signature.unwrap_or_default());
            }
            // Citations and deltas of blocks this engine does not use.
            _ => {}
        }
        Ok(())
    }

    fn stop(&mut self, reply: &mut Reply, index: u64) {
        let Some(at) = self.blocks.iter().rposition(|(i, _)| *i == index) else {
            return;
        };
        match std::mem::replace(&mut self.blocks[at].1, Block::Other) {
            Block::ToolUse {
                slot,
                input: Some(input),
                streamed: false,
            } if input.as_object().is_some_and(|o| !o.is_empty()) => {
                reply.calls[slot].arguments = input.to_string();
            }
            Block::Thinking {
                thinking,
                signature,
            } if !signature.is_empty() => {
                reply.signed_thinking.push(
                    json!({"type": "thinking", "thinking": thinking, "signature": signature}),
                );
            }
            Block::Redacted { data } => {
                reply
                    .signed_thinking
                    .push(json!({"type": "redacted_thinking", "data": data}));
            }
            _ => {}
        }
    }

    /// The open block at `index` (deltas go to the latest, searched first).
    fn block(&mut self, index: u64) -> Option<&mut Block> {
        self.blocks
            .iter_mut()
            .rev()
            .find(|(i, _)| *i == index)
            .map(|(_, block)| block)
    }

    /// Usage from `message_start` (the prompt) or `message_delta` (the
    /// output so far; newer servers repeat the prompt's counts).
    fn take_usage(&mut self, reply: &mut Reply, usage: UsageJson) {
        let held = &mut self.usage;
        held.input_tokens = usage.input_tokens.or(held.input_tokens);
        held.output_tokens = usage.output_tokens.or(held.output_tokens);
        held.cache_creation_input_tokens = usage
            .cache_creation_input_tokens
            .or(held.cache_creation_input_tokens);
        held.cache_read_input_tokens = usage
            .cache_read_input_tokens
            .or(held.cache_read_input_tokens);
        reply.usage = Some(reported(*held));
    }
}

/// Usage as the engine counts it: the API's `input_tokens` leaves out the
/// tokens written to and read from the cache; our prompt counts them all.
fn reported(usage: UsageJson) -> ReportedUsage {
    let read = usage.cache_read_input_tokens.unwrap_or(0);
    ReportedUsage {
        prompt_tokens: usage
            .input_tokens
            .unwrap_or(0)
            .saturating_add(usage.cache_creation_input_tokens.unwrap_or(0))
            .saturating_add(read),
        cached_tokens: read,
        completion_tokens: usage.output_tokens.unwrap_or(0),
    }
}

/// `max_tokens` is the token limit; `end_turn`, `tool_use`,
/// `stop_sequence`, `pause_turn` and `refusal` end a finished reply.
fn ending(stop_reason: &str) -> Ending {
    match stop_reason {
        "max_tokens" => Ending::Length,
        _ => Ending::Stop,
    }
}

fn missing(event: &str, field: &str) -> ChunkError {
    ChunkError::Malformed(format!("a {event} event has no `{field}`"))
}

/// A reply from a server that answered with one message instead of a
/// stream; its text goes to `on_piece` in one piece.
pub(crate) fn from_message(
    body: &str,
    on_piece: &mut dyn FnMut(&str),
) -> Result<Reply, ChunkError> {
    let json: Json = serde_json::from_str(body).map_err(|e| {
        ChunkError::Malformed(format!("the answer is not JSON ({e}): {}", excerpt(body)))
    })?;
    if json.get("type").and_then(Json::as_str) == Some("error") {
        return Err(ChunkError::Server(error_text(&json)));
    }
    let message: MessageJson = serde_json::from_value(json).map_err(|e| {
        ChunkError::Malformed(format!(
            "the answer is not a Messages response ({e}): {}",
            excerpt(body)
        ))
    })?;
    let mut decoder = Decoder::default();
    let mut reply = Reply {
        done: true,
        ..Reply::default()
    };
    for (index, block) in (0u64..).zip(message.content) {
        // A whole block: its start carries everything (the call's input too).
        decoder.start(&mut reply, index, block, on_piece)?;
        decoder.stop(&mut reply, index);
    }
    reply.ending = message.stop_reason.as_deref().map(ending);
    if let Some(usage) = message.usage {
        decoder.take_usage(&mut reply, usage);
    }
    Ok(reply)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::{CacheHint, NativeToolCall};
    use crate::message::ToolCall;

    fn stream(events: &[&str]) -> (Reply, Vec<String>) {
        let mut decoder = Decoder::default();
        let mut reply = Reply::default();
        let mut pieces = Vec::new();
        for event in events {
            decoder
                .push(&mut reply, event, &mut |p| pieces.push(p.to_string()))
                .unwrap();
        }
        (reply, pieces)
    }

    fn request<'a>(
        messages: &'a [Message],
        tools: &'a [ToolDefinition],
        choice: &'a ToolChoice,
    ) -> GenerateRequest<'a> {
        GenerateRequest {
            messages,
            tools,
            tool_choice: choice,
            max_tokens: None,
            max_calls: 1,
            stop: &[],
            cache_hint: CacheHint::default(),
            deadline: None,
        }
    }

    fn sampling() -> Sampling {
        Sampling {
            temperature: 1.5,
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
    fn tool_results_merge_into_one_user_message_with_breakpoints() {
        let messages = [
            Message::system("Be brief."),
            Message::user("Weather and sum?"),
            Message::assistant_with_tool_calls(
                "Looking.",
                vec![
                    call("call_1", "get_weather", json!({"city": "Paris"})),
                    call("call_2", "add", json!({"a": 2, "b": 40})),
                ],
            ),
            Message::tool("call_1", "get_weather", "17 C"),
            Message::tool_error("call_2", "add", "Error: overflow"),
            Message::system("Error: your tool call could not be read."),
        ];
        let tools = [ToolDefinition {
            name: "add".into(),
            description: "Add".into(),
            parameters: json!({"type": "object"}),
        }];
        let body = Anthropic::default().body(
            "claude",
            &request(&messages, &tools, &ToolChoice::Auto),
            &sampling(),
        );
        assert_eq!(
            body,
            json!({
                "model": "claude",
                "max_tokens": 4096,
                "system": [{"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
                "messages": [
                    {"role": "user", "content": [{"type": "text", "text": "Weather and sum?"}]},
                    {"role": "assistant", "content": [
                        {"type": "text", "text": "Looking."},
                        {"type": "tool_use", "id": "call_1", "name": "get_weather", "input": {"city": "Paris"}},
                        {"type": "tool_use", "id": "call_2", "name": "add", "input": {"a": 2, "b": 40},
                         "cache_control": {"type": "ephemeral"}},
                    ]},
                    {"role": "user", "content": [
                        {"type": "tool_result", "tool_use_id": "call_1", "content": "17 C"},
                        {"type": "tool_result", "tool_use_id": "call_2", "content": "Error: overflow", "is_error": true},
                        {"type": "text", "text": "Error: your tool call could not be read."},
                    ]},
                ],
                "tools": [{"name": "add", "description": "Add", "input_schema": {"type": "object"},
                           "cache_control": {"type": "ephemeral"}}],
                "tool_choice": {"type": "auto"},
                "stream": true,
                "temperature": 1.0,
            })
        );
    }

    #[test]
    fn a_tool_results_images_are_image_blocks_of_its_content() {
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
        let body = Anthropic::default().body(
            "claude",
            &request(&messages, &[], &ToolChoice::Auto),
            &sampling(),
        );
        assert_eq!(
            body["messages"][2]["content"][0],
            json!({"type": "tool_result", "tool_use_id": "call_1", "content": [
                {"type": "text", "text": "'a.png' is a PNG image"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBO"}},
            ]})
        );
    }

    #[test]
    fn tool_choices_and_tools_the_history_needs() {
        assert_eq!(
            tool_choice_json(&ToolChoice::Required),
            json!({"type": "any"})
        );
        assert_eq!(tool_choice_json(&ToolChoice::None), json!({"type": "none"}));
        assert_eq!(
            tool_choice_json(&ToolChoice::Tool("f".into())),
            json!({"type": "tool", "name": "f"})
        );
        // No tools shown, but calls in the history: their names go, unusable.
        let messages = [
            Message::user("Hi"),
            Message::assistant_with_tool_calls("", vec![call("call_1", "f", json!({}))]),
            Message::tool("call_1", "f", "done"),
        ];
        let body = Anthropic::default().body(
            "claude",
            &request(&messages, &[], &ToolChoice::None),
            &sampling(),
        );
        assert_eq!(
            body["tools"],
            json!([{"name": "f", "description": "Not available now.", "input_schema": {"type": "object"},
                    "cache_control": {"type": "ephemeral"}}])
        );
        assert_eq!(body["tool_choice"], json!({"type": "none"}));
        let body = Anthropic::default().body(
            "claude",
            &request(&messages[..1], &[], &ToolChoice::None),
            &sampling(),
        );
        assert!(body.get("tools").is_none() && body.get("tool_choice").is_none());
    }

    #[test]
    fn signed_thinking_goes_back_before_the_calls_that_followed_it() {
        let (reply, pieces) = stream(&[
            r#"{"type":"message_start","message":{"id":"m","type":"message","role":"assistant","content":[],"usage":{"input_tokens":50,"cache_read_input_tokens":100,"cache_creation_input_tokens":10,"output_tokens":1}}}"#,
            r#"{"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Need "}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"weather."}}"#,
            r#"{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"SIG"}}"#,
            r#"{"type":"content_block_stop","index":0}"#,
            r#"{"type":"content_block_start","index":1,"content_block":{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"{\"city\": "}}"#,
            r#"{"type":"ping"}"#,
            r#"{"type":"content_block_delta","index":1,"delta":{"type":"input_json_delta","partial_json":"\"Paris\"}"}}"#,
            r#"{"type":"content_block_stop","index":1}"#,
            r#"{"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"output_tokens":30}}"#,
            r#"{"type":"message_stop"}"#,
        ]);
        assert!(pieces.is_empty());
        assert_eq!(reply.reasoning, "Need weather.");
        assert_eq!(
            reply.tool_calls(),
            [NativeToolCall {
                name: "get_weather".into(),
                arguments: r#"{"city": "Paris"}"#.into()
            }]
        );
        assert_eq!(
            reply.usage,
            Some(ReportedUsage {
                prompt_tokens: 160,
                cached_tokens: 100,
                completion_tokens: 30
            })
        );
        assert!(reply.done && reply.finished());
        let mut anthropic = Anthropic::new(ThinkingLevel::Low);
        anthropic.remember(&reply);
        let messages = [
            Message::user("Weather?"),
            Message::assistant_with_tool_calls(
                "",
                vec![call("call_1", "get_weather", json!({"city": "Paris"}))],
            ),
            Message::tool("call_1", "get_weather", "17 C"),
        ];
        let body = anthropic.body(
            "claude",
            &request(&messages, &[], &ToolChoice::Auto),
            &sampling(),
        );
        assert_eq!(
            body["messages"][1]["content"][0],
            json!({"type": "thinking", "thinking": "Need weather.", "signature": "SIG"})
        );
        assert_eq!(
            body["thinking"],
            json!({"type": "enabled", "budget_tokens": 1024})
        );
        assert_eq!(body["max_tokens"], 4096 + 1024);
        assert!(body.get("temperature").is_none());
        // The same exchange without its thinking (made while thinking was
        // off): thinking is left off rather than refused by the API.
        let body = Anthropic::new(ThinkingLevel::Low).body(
            "claude",
            &request(&messages, &[], &ToolChoice::Auto),
            &sampling(),
        );
        assert!(body.get("thinking").is_none());
        assert_eq!(body["messages"][1]["content"][0]["type"], "tool_use");
        // A new question: thinking is on again, old thinking not sent.
        let body = Anthropic::new(ThinkingLevel::High).body(
            "claude",
            &request(&messages[..1], &[], &ToolChoice::Auto),
            &sampling(),
        );
        assert_eq!(body["thinking"]["budget_tokens"], 16_384);
        // A forced tool takes no thinking.
        let body = Anthropic::new(ThinkingLevel::High).body(
            "claude",
            &request(&messages[..1], &[], &ToolChoice::Required),
            &sampling(),
        );
        assert!(body.get("thinking").is_none());
    }

    #[test]
    fn bad_events_and_stream_errors_are_typed() {
        let mut decoder = Decoder::default();
        let mut reply = Reply::default();
        let mut sink = |_: &str| {};
        assert!(matches!(
            decoder.push(&mut reply, "{not json", &mut sink),
            Err(ChunkError::Malformed(m)) if m.contains("not a Messages event")
        ));
        assert_eq!(
            decoder.push(
                &mut reply,
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#,
                &mut sink
            ),
            Err(ChunkError::Server("Overloaded".into()))
        );
        assert!(matches!(
            decoder.push(&mut reply, r#"{"type":"content_block_delta","index":4,"delta":{"type":"text_delta","text":"x"}}"#, &mut sink),
            Err(ChunkError::Malformed(m)) if m.contains("block 4")
        ));
        // Unknown event types are read past.
        decoder
            .push(&mut reply, r#"{"type":"future_event","x":1}"#, &mut sink)
            .unwrap();
    }

    #[test]
    fn a_whole_message_is_read_too() {
        let mut pieces = Vec::new();
        let reply = from_message(
            r#"{"id":"m","type":"message","role":"assistant","content":[{"type":"text","text":"Hi"},
               {"type":"tool_use","id":"t","name":"f","input":{"x":1}}],"stop_reason":"tool_use",
               "usage":{"input_tokens":3,"output_tokens":1}}"#,
            &mut |p| pieces.push(p.to_string()),
        )
        .unwrap();
        assert_eq!(pieces, ["Hi"]);
        assert_eq!(reply.tool_calls()[0].arguments, r#"{"x":1}"#);
        assert_eq!(reply.usage.unwrap().prompt_tokens, 3);
        assert_eq!(
            url("https://api.anthropic.com"),
            "https://api.anthropic.com/v1/messages"
        );
        assert_eq!(url("http://h/v1"), "http://h/v1/messages");
        assert_eq!(url("http://h/v1/messages"), "http://h/v1/messages");
    }
}
