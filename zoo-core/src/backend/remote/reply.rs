//! One reply as its stream builds it, whatever the API: the text (streamed
//! to `on_piece` as it comes), the reasoning, the tool calls put together
//! from their pieces, the usage and why the reply ended. Each API's decoder
//! (`openai`, `anthropic`, `gemini`) fills it from that API's events.

use serde_json::Value as Json;

use crate::backend::{FinishReason, NativeToolCall};

/// Calls one reply may make; a higher index is a broken (or hostile)
/// server, not a reason to allocate.
pub(crate) const MAX_CALLS: usize = 256;

/// Why a stream event could not be taken.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum ChunkError {
    /// Not an event of this API, or one that ends the reply for good (a
    /// blocked prompt): the message says what was wrong.
    Malformed(String),
    /// The server reported an error inside the stream; its own text.
    Server(String),
}

/// Token counts as the server reported them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(crate) struct ReportedUsage {
    /// Prompt tokens, the cached ones included.
    pub(crate) prompt_tokens: u32,
    /// Prompt tokens read from the provider's cache.
    pub(crate) cached_tokens: u32,
    /// Generated tokens (thinking included).
    pub(crate) completion_tokens: u32,
}

/// How the server said the reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Ending {
    /// A finished reply (its end, a stop string, its tool calls, a filter).
    Stop,
    /// The token limit.
    Length,
}

/// A tool call as its pieces arrived.
#[derive(Debug, Default, Clone, PartialEq)]
pub(crate) struct PartialCall {
    pub(crate) id: String,
    pub(crate) name: String,
    /// The arguments' JSON text so far.
    pub(crate) arguments: String,
    /// Gemini's `thoughtSignature` on this call's part, which the API wants
    /// back with the call.
    pub(crate) signature: Option<String>,
}

/// One reply, as its events have built it so far.
#[derive(Debug, Default)]
pub(crate) struct Reply {
    /// The text, as streamed to `on_piece`.
    pub(crate) text: String,
    /// Reasoning or thinking, never part of the text.
    pub(crate) reasoning: String,
    pub(crate) calls: Vec<PartialCall>,
    pub(crate) ending: Option<Ending>,
    pub(crate) usage: Option<ReportedUsage>,
    /// Whether the stream's own end marker was read (`[DONE]`, `message_stop`).
    pub(crate) done: bool,
    /// Anthropic's signed thinking blocks, whole, in order: the API wants
    /// them back before this reply's calls when their results are sent.
    pub(crate) signed_thinking: Vec<Json>,
}

impl Reply {
    /// Adds text and streams it.
    pub(crate) fn push_text(&mut self, text: &str, on_piece: &mut dyn FnMut(&str)) {
        if !text.is_empty() {
            self.text.push_str(text);
            on_piece(text);
        }
    }

    /// The call at `slot`, created (with any gap before it) if new.
    pub(crate) fn call_at(&mut self, slot: usize) -> Result<&mut PartialCall, ChunkError> {
        if slot >= MAX_CALLS {
            return Err(ChunkError::Malformed(format!(
                "a tool call has index {slot}; at most {MAX_CALLS} calls are taken in one reply"
            )));
        }
        if self.calls.len() <= slot {
            self.calls.resize_with(slot + 1, PartialCall::default);
        }
        Ok(&mut self.calls[slot])
    }

    /// A new call after the others; its slot.
    pub(crate) fn new_call(&mut self) -> Result<usize, ChunkError> {
        let slot = self.calls.len();
        self.call_at(slot)?;
        Ok(slot)
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
        self.ending.is_some()
    }

    /// Why the reply ended: the token limit, or else a finished reply.
    pub(crate) fn finish(&self) -> FinishReason {
        match self.ending {
            Some(Ending::Length) => FinishReason::Length,
            _ => FinishReason::Stop,
        }
    }

    /// The reply's tool calls, in order; slots no event filled (a gap in
    /// the indices) are left out.
    pub(crate) fn tool_calls(&self) -> Vec<NativeToolCall> {
        self.filled_calls()
            .map(|c| NativeToolCall {
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect()
    }

    /// The calls an event filled, in order.
    pub(crate) fn filled_calls(&self) -> impl Iterator<Item = &PartialCall> {
        self.calls
            .iter()
            .filter(|c| !(c.name.is_empty() && c.arguments.is_empty()))
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

/// The server's own words from an error body: `{"error": {"message": ...}}`
/// (OpenAI, vLLM, llama.cpp, Anthropic's `{"type": "error", "error": {...}}`,
/// Gemini's `{"error": {"code", "message", "status"}}`), `{"error": "..."}`
/// (TGI), `{"message": ...}`, or the text itself, cut to a readable length.
pub(crate) fn error_text(body: &Json) -> String {
    let text = match body {
        Json::String(text) => text.clone(),
        // Gemini answers a streamed request's error as a one-item array.
        Json::Array(items) if items.len() == 1 => return error_text(&items[0]),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_texts_are_the_servers_words() {
        assert_eq!(
            error_body_text(r#"{"error": {"message": "Invalid key", "type": "auth"}}"#),
            "Invalid key"
        );
        assert_eq!(error_body_text(r#"{"error": "overloaded"}"#), "overloaded");
        assert_eq!(error_body_text(r#"{"detail": "Not Found"}"#), "Not Found");
        assert_eq!(
            error_body_text(
                r#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_body_text(
                r#"[{"error": {"code": 400, "message": "API key not valid.", "status": "INVALID_ARGUMENT"}}]"#
            ),
            "API key not valid."
        );
        assert_eq!(error_body_text("Bad Gateway\n"), "Bad Gateway");
        assert_eq!(error_body_text(""), "(no error text)");
        assert_eq!(excerpt(&"é".repeat(1001)).chars().count(), 1003);
    }

    #[test]
    fn call_slots_are_bounded_and_gaps_left_out() {
        let mut reply = Reply::default();
        reply.call_at(1).unwrap().name = "g".into();
        assert_eq!(reply.new_call().unwrap(), 2);
        assert!(matches!(
            reply.call_at(MAX_CALLS),
            Err(ChunkError::Malformed(m)) if m.contains("index 256")
        ));
        let names: Vec<_> = reply.tool_calls().into_iter().map(|c| c.name).collect();
        assert_eq!(names, ["g"]);
    }
}
