//! The `mock` provider: a scripted model for testing code that uses an
//! agent without a model file. [`crate::backend::mock::MockBackend`] plays it.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use crate::error::{Error, Result};

/// A scripted model, for testing code that uses an agent without a model
/// file: it gives `replies` in order, each streamed word by word with
/// `piece_delay_ms` before each word, then answers `echo: <user message>`.
/// A tool call is written in the Hermes format,
/// `<tool_call>{"name": "get_weather", "arguments": {"city": "Paris"}}</tool_call>`
/// ([`MockReply::tool_call`] writes one); `{"error": "message"}` makes that
/// reply fail with `inference_failed`. Tokens are counted one per word.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MockProvider {
    /// The model's replies, in order.
    pub replies: Vec<MockReply>,
    /// Milliseconds waited before each streamed word (0 to 60 000).
    pub piece_delay_ms: u32,
}

impl MockProvider {
    /// A mock that gives these replies in order, with no delay.
    pub fn new<R: Into<MockReply>>(replies: impl IntoIterator<Item = R>) -> Self {
        MockProvider {
            replies: replies.into_iter().map(Into::into).collect(),
            piece_delay_ms: 0,
        }
    }

    /// Waits this long before each streamed word (for cancellation and
    /// streaming tests).
    pub fn piece_delay_ms(mut self, milliseconds: u32) -> Self {
        self.piece_delay_ms = milliseconds;
        self
    }
}

/// One scripted reply. In JSON (the `mock` provider's `replies`, C's
/// `zoo_agent_create_mock`) a reply is a string, streamed word by word, or
/// `{"error": "message"}`, which fails that reply with `inference_failed`.
#[derive(Debug, Clone, PartialEq)]
pub enum MockReply {
    /// Stream this text.
    Text(String),
    /// Fail with this error.
    Fail(Error),
}

impl MockReply {
    /// A plain text reply.
    pub fn text(text: impl Into<String>) -> Self {
        MockReply::Text(text.into())
    }

    /// The script of a mock from JSON text, as C's `zoo_agent_create_mock`
    /// takes it: an array of replies (see [`MockReply`]). Anything else is
    /// [`Error::InvalidJson`] naming the item at fault.
    pub fn script_from_json(json: &str) -> Result<Vec<Self>> {
        let items: Vec<Value> = serde_json::from_str(json)
            .map_err(|e| Error::InvalidJson(format!("replies_json must be a JSON array: {e}")))?;
        items
            .iter()
            .enumerate()
            .map(|(i, item)| {
                Self::from_json(item)
                    .map_err(|reason| Error::InvalidJson(format!("replies_json[{i}]: {reason}")))
            })
            .collect()
    }

    /// Reads one reply: a string, or `{"error": "message"}`. The error says
    /// what was wrong in the words of the config errors ("expected ...,
    /// got ..."); callers add where the item was. Every reader of a mock
    /// script (the `mock` provider's rule and serde form, C's script)
    /// goes through here.
    pub(crate) fn from_json(item: &Value) -> std::result::Result<Self, String> {
        const EXPECTED: &str = r#"a string or {"error": "message"}"#;
        match item {
            Value::String(text) => Ok(MockReply::text(text.as_str())),
            Value::Object(map) => {
                if let Some(key) = map.keys().find(|k| *k != "error") {
                    return Err(format!(
                        "expected {EXPECTED}, got an object with the key {}",
                        Value::String(key.clone())
                    ));
                }
                match map.get("error") {
                    Some(Value::String(message)) => {
                        Ok(MockReply::Fail(Error::InferenceFailed(message.clone())))
                    }
                    Some(other) => Err(format!(
                        "expected {EXPECTED}, got an \"error\" of {}",
                        crate::settings::describe(other)
                    )),
                    None => Err(format!("expected {EXPECTED}, got an empty object")),
                }
            }
            other => Err(format!(
                "expected {EXPECTED}, got {}",
                crate::settings::describe(other)
            )),
        }
    }

    /// A reply that calls one tool, in the Hermes format.
    pub fn tool_call(name: &str, arguments: Value) -> Self {
        Self::tool_calls(&[(name, arguments)])
    }

    /// A reply that calls several tools in order.
    pub fn tool_calls(calls: &[(&str, Value)]) -> Self {
        let text = calls
            .iter()
            .map(|(name, args)| {
                format!(
                    "<tool_call>\n{}\n</tool_call>",
                    serde_json::json!({"name": name, "arguments": args})
                )
            })
            .collect::<Vec<_>>()
            .join("\n");
        MockReply::Text(text)
    }
}

impl From<&str> for MockReply {
    fn from(text: &str) -> Self {
        MockReply::text(text)
    }
}

impl From<String> for MockReply {
    fn from(text: String) -> Self {
        MockReply::Text(text)
    }
}

/// A reply's JSON form: its text, or `{"error": "message"}`. A failure of
/// another kind than `inference_failed` (which only Rust code can script)
/// is written with its whole message, and reads back as `inference_failed`.
impl Serialize for MockReply {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        match self {
            MockReply::Text(text) => s.serialize_str(text),
            MockReply::Fail(Error::InferenceFailed(message)) => {
                serde_json::json!({ "error": message }).serialize(s)
            }
            MockReply::Fail(error) => {
                serde_json::json!({ "error": error.to_string() }).serialize(s)
            }
        }
    }
}

impl<'de> Deserialize<'de> for MockReply {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        MockReply::from_json(&Value::deserialize(d)?).map_err(serde::de::Error::custom)
    }
}
