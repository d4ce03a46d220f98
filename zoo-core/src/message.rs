//! Conversation messages: the unit the history, the templates and every
//! language binding speak in.

use base64::Engine;
use serde::{Deserialize, Serialize};

/// The largest image a message may hold, in bytes (before base64): the
/// limit `read_file` applies, and the one `set_history` checks.
pub const MAX_IMAGE_BYTES: usize = 20 * 1024 * 1024;

/// The image formats a message may hold: those every provider that takes
/// images accepts.
pub const IMAGE_MIME_TYPES: &[&str] = &["image/png", "image/jpeg", "image/gif", "image/webp"];

/// Base64 characters decoded to read an image's dimensions from its header:
/// enough for PNG, GIF and WebP, and for most JPEGs.
const HEADER_BASE64_CHARS: usize = 64 * 1024;

/// Who wrote a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions that frame the conversation.
    System,
    /// The person (or program) talking to the agent.
    User,
    /// The model's reply, possibly with tool calls.
    Assistant,
    /// The result of one tool call, answering an assistant's call by id.
    Tool,
}

impl Role {
    /// The lowercase name used by chat templates.
    pub fn as_str(self) -> &'static str {
        match self {
            Role::System => "system",
            Role::User => "user",
            Role::Assistant => "assistant",
            Role::Tool => "tool",
        }
    }
}

/// One tool call made by the model.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    /// Unique within the conversation; tool results refer to it.
    pub id: String,
    /// The tool's registered name.
    pub name: String,
    /// The arguments as the model wrote them (a JSON object when valid).
    pub arguments: serde_json::Value,
}

/// An image a message carries (a tool's result: `read_file` on a PNG):
/// its media type and its bytes in standard base64. A remote provider that
/// takes images is sent the image itself; a local text-only model reads
/// [`placeholder`](Self::placeholder) instead.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ImageContent {
    /// One of [`IMAGE_MIME_TYPES`], such as `image/png`.
    pub mime_type: String,
    /// The image's bytes, standard base64 with padding.
    pub data: String,
}

impl ImageContent {
    /// An image from its bytes.
    pub fn from_bytes(mime_type: impl Into<String>, bytes: &[u8]) -> Self {
        ImageContent {
            mime_type: mime_type.into(),
            data: base64::engine::general_purpose::STANDARD.encode(bytes),
        }
    }

    /// The image's size in bytes, from the length of its base64.
    pub fn byte_len(&self) -> usize {
        let padding = self.data.bytes().rev().take_while(|b| *b == b'=').count();
        (self.data.len() / 4 * 3).saturating_sub(padding.min(2))
    }

    /// Width and height, read from the image's header when it is there.
    pub fn dimensions(&self) -> Option<(usize, usize)> {
        // A multiple of 4 characters decodes on its own.
        let head = &self.data.as_bytes()[..self.data.len().min(HEADER_BASE64_CHARS)];
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(head)
            .ok()?;
        let size = imagesize::blob_size(&bytes).ok()?;
        Some((size.width, size.height))
    }

    /// What a model that reads only text is shown in the image's place.
    pub fn placeholder(&self) -> String {
        let size = match self.dimensions() {
            Some((w, h)) => format!("{w}x{h}, "),
            None => String::new(),
        };
        format!(
            "[image: {}, {size}{} bytes; not shown, this model reads text only]",
            self.mime_type,
            self.byte_len()
        )
    }

    /// Checks the image a host gives (in a restored history): a known
    /// media type, base64 that decodes, at most [`MAX_IMAGE_BYTES`].
    pub fn check(&self) -> std::result::Result<(), String> {
        if !IMAGE_MIME_TYPES.contains(&self.mime_type.as_str()) {
            return Err(format!(
                "an image's mime_type must be one of {}, got `{}`",
                IMAGE_MIME_TYPES.join(", "),
                self.mime_type
            ));
        }
        if self.byte_len() > MAX_IMAGE_BYTES {
            return Err(format!(
                "an image may hold at most {MAX_IMAGE_BYTES} bytes, this one holds {}",
                self.byte_len()
            ));
        }
        base64::engine::general_purpose::STANDARD
            .decode(&self.data)
            .map(drop)
            .map_err(|e| format!("an image's data must be standard base64: {e}"))
    }
}

/// One message of a conversation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Message {
    /// Who wrote it.
    pub role: Role,
    /// The text. For an assistant message with tool calls, the prose around them.
    #[serde(default)]
    pub content: String,
    /// Tool calls made by an assistant message, in the order they were written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// For a tool message: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// For a tool message: the name of the tool that produced it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// For a tool message: true when the content reports an error.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
    /// For a tool message: images the result carries (`read_file` on an
    /// image), sent to providers that take them and shown to text-only
    /// models as a placeholder line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub images: Vec<ImageContent>,
    /// For an assistant message: the reasoning the model wrote before its
    /// answer or calls (never part of `content`). Templates read it as
    /// `reasoning_content` and `thinking`, and keep it out of later
    /// prompts where they say so.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thinking: Option<String>,
}

impl Message {
    fn plain(role: Role, content: impl Into<String>) -> Self {
        Message {
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            is_error: false,
            images: Vec::new(),
            thinking: None,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::plain(Role::System, content)
    }

    /// A user message.
    pub fn user(content: impl Into<String>) -> Self {
        Self::plain(Role::User, content)
    }

    /// An assistant message without tool calls.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::plain(Role::Assistant, content)
    }

    /// An assistant message that calls tools.
    pub fn assistant_with_tool_calls(content: impl Into<String>, calls: Vec<ToolCall>) -> Self {
        Message {
            tool_calls: calls,
            ..Self::plain(Role::Assistant, content)
        }
    }

    /// The result of a tool call.
    pub fn tool(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Message {
            tool_call_id: Some(tool_call_id.into()),
            name: Some(name.into()),
            ..Self::plain(Role::Tool, content)
        }
    }

    /// The text a model that cannot see images reads: the content, then a
    /// placeholder line for each image.
    pub fn text_with_placeholders(&self) -> std::borrow::Cow<'_, str> {
        if self.images.is_empty() {
            return std::borrow::Cow::Borrowed(&self.content);
        }
        let mut text = self.content.clone();
        for image in &self.images {
            if !text.is_empty() {
                text.push('\n');
            }
            text.push_str(&image.placeholder());
        }
        std::borrow::Cow::Owned(text)
    }

    /// This message with `thinking` as its reasoning (none when empty).
    pub fn with_thinking(self, thinking: impl Into<String>) -> Self {
        let thinking = thinking.into();
        Message {
            thinking: (!thinking.is_empty()).then_some(thinking),
            ..self
        }
    }

    /// A tool result that reports an error back to the model.
    pub fn tool_error(
        tool_call_id: impl Into<String>,
        name: impl Into<String>,
        content: impl Into<String>,
    ) -> Self {
        Message {
            is_error: true,
            ..Self::tool(tool_call_id, name, content)
        }
    }
}
