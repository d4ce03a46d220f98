//! What a host backend gives back, item by item: [`HostOutput`], the same
//! JSON shape in every language.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::{Error, Result};

/// One item of a host backend's reply, in the order the host gives them.
/// Its JSON form is tagged by `type`:
///
/// ```json
/// {"type": "text", "text": "Hello"}
/// {"type": "thinking", "text": "The user greets me."}
/// {"type": "tool_call", "name": "get_weather", "arguments": {"city": "Paris"}}
/// {"type": "usage", "prompt_tokens": 40, "cached_tokens": 0, "completion_tokens": 9}
/// {"type": "finish", "reason": "length"}
/// {"type": "error", "message": "the gateway answered 503"}
/// ```
///
/// - `text` pieces stream to the chat's tokens as they come and make the
///   reply's text; a call written in the text (`<tool_call>{...}</tool_call>`)
///   is parsed from it as a local model's is.
/// - `thinking` never enters the text or the history; the last reply's is
///   kept ([`HostBackend::last_thinking`](super::HostBackend::last_thinking))
///   and logged at debug level.
/// - `tool_call`: a call returned as data (`arguments` an object, or its
///   JSON text as the model wrote it; `{}` when left out). The engine gives
///   it its id, validates it and runs it as it does a parsed call. Calls of
///   a reply that was cut short are dropped.
/// - `usage`: the reply's token counts (the last one given counts); without
///   it they are estimated (see [`HostBackend`](super::HostBackend)).
/// - `finish`: `length` says the model's own limit cut the reply; `stop`
///   (the default) that it ended.
/// - `error`: the reply failed; the chat fails with `provider_failed` and
///   this message. Raising or throwing in the host does the same.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum HostOutput {
    /// A piece of the reply's text.
    Text {
        /// The piece.
        text: String,
    },
    /// A piece of the model's thinking.
    Thinking {
        /// The piece.
        text: String,
    },
    /// A tool call returned as data.
    ToolCall {
        /// The tool's name as the model gave it.
        name: String,
        /// The arguments: an object, or JSON text.
        #[serde(default = "empty_object")]
        arguments: Value,
    },
    /// The reply's token counts.
    Usage(HostUsage),
    /// Why the reply ended.
    Finish {
        /// `stop` or `length`.
        reason: HostFinish,
    },
    /// The reply failed.
    Error {
        /// What went wrong, in the host's words.
        message: String,
    },
}

fn empty_object() -> Value {
    Value::Object(serde_json::Map::new())
}

/// A reply's token counts as the host reports them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostUsage {
    /// Prompt tokens, the cached ones included.
    pub prompt_tokens: u32,
    /// Prompt tokens read from a cache (0 when left out).
    #[serde(default)]
    pub cached_tokens: u32,
    /// Generated tokens.
    pub completion_tokens: u32,
}

/// Why a host's reply ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostFinish {
    /// The model ended its reply (the default).
    #[default]
    Stop,
    /// The model's token limit cut it.
    Length,
}

impl HostOutput {
    /// Reads one item from its JSON form; anything else is
    /// [`Error::InvalidJson`] saying what was wrong.
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::InvalidJson(format!("backend output: {e}")))
    }

    /// The item's JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Whether this item ends the reply (an `error`).
    pub(crate) fn ends_the_reply(&self) -> bool {
        matches!(self, HostOutput::Error { .. })
    }

    /// The arguments of a `tool_call` as JSON text: a string is taken as
    /// the text the model wrote, anything else is written out.
    pub(crate) fn arguments_text(arguments: &Value) -> String {
        match arguments {
            Value::String(text) => text.clone(),
            other => other.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_item_reads_and_writes_the_same_json() {
        for json in [
            r#"{"type":"text","text":"Hi"}"#,
            r#"{"type":"thinking","text":"hmm"}"#,
            r#"{"type":"tool_call","name":"f","arguments":{"a":1}}"#,
            r#"{"type":"usage","prompt_tokens":3,"cached_tokens":1,"completion_tokens":2}"#,
            r#"{"type":"finish","reason":"length"}"#,
            r#"{"type":"error","message":"down"}"#,
        ] {
            assert_eq!(HostOutput::from_json(json).unwrap().to_json(), json);
        }
    }

    #[test]
    fn defaults_and_errors_say_what_was_wrong() {
        assert_eq!(
            HostOutput::from_json(r#"{"type":"tool_call","name":"f"}"#).unwrap(),
            HostOutput::ToolCall {
                name: "f".into(),
                arguments: empty_object()
            }
        );
        assert_eq!(
            HostOutput::from_json(r#"{"type":"usage","prompt_tokens":3,"completion_tokens":2}"#)
                .unwrap(),
            HostOutput::Usage(HostUsage {
                prompt_tokens: 3,
                cached_tokens: 0,
                completion_tokens: 2
            })
        );
        let error = HostOutput::from_json(r#"{"type":"txt","text":"x"}"#).unwrap_err();
        assert_eq!(error.code(), crate::ErrorCode::InvalidJson);
        assert!(
            error.to_string().contains("unknown variant `txt`"),
            "{error}"
        );
        let error = HostOutput::from_json(r#"{"type":"finish","reason":"done"}"#).unwrap_err();
        assert!(
            error.to_string().contains("unknown variant `done`"),
            "{error}"
        );
        assert_eq!(
            HostOutput::arguments_text(&Value::String("{\"a\":".into())),
            "{\"a\":"
        );
    }
}
