//! A `tools/call` result turned into the text the model reads: text blocks
//! as they are, images, audio and binary resources as a short note (a text
//! model cannot see them), embedded text resources with their URI, and
//! structured content when there is nothing else.

use serde_json::Value;

/// What a tool call gave: the text for the model and whether the server
/// flagged it as an error (`isError`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct McpToolOutput {
    /// Every content block, rendered and joined by newlines.
    pub text: String,
    /// The server reported the call as failed; the text says why.
    pub is_error: bool,
}

/// Renders a `CallToolResult`.
pub(crate) fn render_result(result: &Value) -> McpToolOutput {
    let is_error = result
        .get("isError")
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let mut parts: Vec<String> = result
        .get("content")
        .and_then(Value::as_array)
        .map(|blocks| blocks.iter().map(render_block).collect())
        .unwrap_or_default();
    if parts.is_empty() {
        if let Some(structured) = result.get("structuredContent") {
            parts.push(structured.to_string());
        }
    }
    McpToolOutput {
        text: parts.join("\n"),
        is_error,
    }
}

fn render_block(block: &Value) -> String {
    let field = |name: &str| block.get(name).and_then(Value::as_str).unwrap_or("");
    match field("type") {
        "text" => field("text").to_string(),
        "image" => format!(
            "[image: {}, {} bytes]",
            or_unknown(field("mimeType")),
            base64_len(field("data"))
        ),
        "audio" => format!(
            "[audio: {}, {} bytes]",
            or_unknown(field("mimeType")),
            base64_len(field("data"))
        ),
        "resource" => {
            let resource = block.get("resource").cloned().unwrap_or(Value::Null);
            let r = |name: &str| resource.get(name).and_then(Value::as_str);
            let uri = r("uri").unwrap_or("(no uri)");
            match (r("text"), r("blob")) {
                (Some(text), _) => format!("[resource {uri}]\n{text}"),
                (None, Some(blob)) => format!(
                    "[resource {uri}: {}, {} bytes]",
                    or_unknown(r("mimeType").unwrap_or("")),
                    base64_len(blob)
                ),
                (None, None) => format!("[resource {uri}]"),
            }
        }
        "resource_link" => {
            let mut text = format!("[resource link {}", field("uri"));
            if !field("name").is_empty() {
                text.push_str(&format!(" ({})", field("name")));
            }
            if !field("description").is_empty() {
                text.push_str(&format!(": {}", field("description")));
            }
            text.push(']');
            text
        }
        // A kind newer than this client: the model gets the raw block.
        _ => block.to_string(),
    }
}

fn or_unknown(mime: &str) -> &str {
    if mime.is_empty() {
        "unknown type"
    } else {
        mime
    }
}

/// The decoded size of base64 text.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end_matches('=');
    data.len() * 3 / 4
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn renders_every_kind_of_block() {
        let out = render_result(&json!({"content": [
            {"type": "text", "text": "Here it is:"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "resource", "resource": {"uri": "file:///a.txt", "text": "hello", "mimeType": "text/plain"}},
            {"type": "resource", "resource": {"uri": "file:///b.bin", "blob": "AAAA", "mimeType": "application/octet-stream"}},
            {"type": "resource_link", "uri": "file:///c", "name": "c", "description": "a file"},
            {"type": "audio", "data": "AAAAAA==", "mimeType": "audio/wav"}
        ]}));
        assert!(!out.is_error);
        assert_eq!(
            out.text,
            "Here it is:\n[image: image/png, 8 bytes]\n[resource file:///a.txt]\nhello\n\
             [resource file:///b.bin: application/octet-stream, 3 bytes]\n\
             [resource link file:///c (c): a file]\n[audio: audio/wav, 4 bytes]"
        );
    }

    #[test]
    fn flags_errors_and_falls_back_to_structured_content() {
        let out = render_result(
            &json!({"content": [{"type": "text", "text": "no such file"}], "isError": true}),
        );
        assert_eq!(
            out,
            McpToolOutput {
                text: "no such file".into(),
                is_error: true
            }
        );
        let out = render_result(&json!({"content": [], "structuredContent": {"sum": 3}}));
        assert_eq!(out.text, r#"{"sum":3}"#);
    }
}
