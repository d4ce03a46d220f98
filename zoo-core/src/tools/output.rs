//! A tool's output with parts for different readers: the text the model
//! reads, details for the host, and images.
//!
//! A tool built with [`Tool::with_output`](super::registry::Tool::with_output)
//! (every built-in tool, sub-agents, `load_skill`) returns a [`ToolOutput`].
//! The model reads its `text` only (and sees its images); the response's
//! tool-call record, the `tool_call_finished` event and the
//! `after_tool_call` hook get `{"text", "details"}`, the images left out
//! (they stay in the history's tool message, and the details say what they
//! are). Any other tool's JSON result goes to the model as compact JSON
//! (a string as it is) and to the host as it is, as before.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::ImageContent;

/// What a structured tool returns.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ToolOutput {
    /// What the model reads.
    pub text: String,
    /// What the host reads beside it: paths, counts, exit codes, the whole
    /// stdout of a command. Never shown to the model.
    #[serde(default, skip_serializing_if = "Value::is_null")]
    pub details: Value,
    /// Images for the model (sent to providers that take them; a text-only
    /// model reads a placeholder line for each).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageContent>,
}

impl ToolOutput {
    /// An output with only text.
    pub fn text(text: impl Into<String>) -> Self {
        ToolOutput {
            text: text.into(),
            ..Default::default()
        }
    }

    /// Adds the host's details.
    pub fn with_details(mut self, details: Value) -> Self {
        self.details = details;
        self
    }

    /// Adds an image.
    pub fn with_image(mut self, image: ImageContent) -> Self {
        self.images.push(image);
        self
    }

    /// The whole output as JSON, images included.
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).expect("a ToolOutput serializes")
    }
}

/// One call's result, split for its readers.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Delivered {
    /// What the model reads.
    pub text: String,
    /// The images the model is shown.
    pub images: Vec<ImageContent>,
    /// What the host sees: the tool's JSON, or for a structured tool
    /// `{"text", "details"}`.
    pub record: Value,
}

impl Delivered {
    /// Splits a result: a structured tool's [`ToolOutput`] into its parts,
    /// any other value (or a structured tool's value that is not a
    /// `ToolOutput`, such as a hook's replacement) as it is.
    pub fn of(value: Value, structured: bool) -> Self {
        if structured && is_output_shaped(&value) {
            if let Ok(output) = ToolOutput::deserialize(&value) {
                let images = output.images;
                let record = ToolOutput {
                    images: Vec::new(),
                    ..output
                };
                return Delivered {
                    text: record.text.clone(),
                    images,
                    record: record.to_value(),
                };
            }
        }
        Delivered {
            text: plain_text(&value),
            images: Vec::new(),
            record: value,
        }
    }
}

/// Whether the value has a string `text` and no key a [`ToolOutput`]
/// lacks: checked before converting, so that a large value that is not
/// one is not copied for nothing.
fn is_output_shaped(value: &Value) -> bool {
    value.as_object().is_some_and(|o| {
        o.get("text").is_some_and(Value::is_string)
            && o.keys()
                .all(|k| ["text", "details", "images"].contains(&k.as_str()))
    })
}

/// The text a plain tool result is given to the model as: strings as they
/// are, anything else as compact JSON.
pub(crate) fn plain_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_structured_result_gives_the_model_its_text_and_the_host_its_details() {
        let output = ToolOutput::text("exit code: 0\nhello\n")
            .with_details(json!({"exit_code": 0, "stdout": "hello\n"}))
            .with_image(ImageContent::from_bytes("image/png", b"\x89PNG"));
        let delivered = Delivered::of(output.to_value(), true);
        assert_eq!(delivered.text, "exit code: 0\nhello\n");
        assert_eq!(delivered.images.len(), 1);
        assert_eq!(
            delivered.record,
            json!({"text": "exit code: 0\nhello\n", "details": {"exit_code": 0, "stdout": "hello\n"}})
        );
    }

    #[test]
    fn any_other_result_goes_to_the_model_as_json() {
        let value = json!({"text": "a", "other": 1});
        let delivered = Delivered::of(value.clone(), true);
        assert_eq!(delivered.text, value.to_string());
        assert_eq!(delivered.record, value);
        // A plain tool's result that happens to look like an output is
        // still its own JSON.
        let shaped = json!({"text": "a"});
        assert_eq!(
            Delivered::of(shaped.clone(), false).text,
            shaped.to_string()
        );
        assert_eq!(Delivered::of(json!("hi"), false).text, "hi");
    }
}
