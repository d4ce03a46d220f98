//! Which template family a model belongs to, from its template source or,
//! when the GGUF carries no template, from its architecture and name.
//!
//! The family decides the tool-call format the model is taught and, without
//! a template, which built-in renders its prompts.

use super::{ModelMetadata, TemplateFamily};
use crate::thinking::ThinkingFormat;
use crate::tools::ToolCallFormat;

/// The family whose special markers appear in a Jinja source, if any.
///
/// Markers are checked from the most to the least specific: Llama 2 and
/// Mistral both use `[INST]`, only Llama 2 has `<<SYS>>`.
pub fn detect_from_source(source: &str) -> Option<TemplateFamily> {
    let family = if source.contains("<|start_header_id|>") {
        TemplateFamily::Llama3
    } else if source.contains("<|im_start|>") {
        TemplateFamily::Chatml
    } else if source.contains("<start_of_turn>") {
        TemplateFamily::Gemma
    } else if source.contains("<|user|>") && source.contains("<|end|>") {
        TemplateFamily::Phi3
    } else if source.contains("[INST]") && source.contains("<<SYS>>") {
        TemplateFamily::Llama2
    } else if source.contains("[INST]") {
        TemplateFamily::Mistral
    } else {
        return None;
    };
    Some(family)
}

/// The family suggested by GGUF metadata (`general.architecture`,
/// `general.name`); ChatML when nothing is recognised, since it is the most
/// widely trained format among small instruct models.
pub fn detect_from_metadata(metadata: &ModelMetadata) -> TemplateFamily {
    let architecture = metadata
        .architecture
        .as_deref()
        .unwrap_or("")
        .to_ascii_lowercase();
    let name = metadata.name.as_deref().unwrap_or("").to_ascii_lowercase();

    if matches!(architecture.as_str(), "gemma" | "gemma2" | "gemma3") {
        TemplateFamily::Gemma
    } else if architecture == "phi3" {
        TemplateFamily::Phi3
    } else if llama_generation(&name) == Some(3) {
        TemplateFamily::Llama3
    } else if architecture == "llama" && llama_generation(&name) == Some(2) {
        TemplateFamily::Llama2
    } else if name.contains("mistral") || name.contains("mixtral") {
        TemplateFamily::Mistral
    } else {
        TemplateFamily::Chatml
    }
}

/// The tool-call format a model is taught: the one it was trained on,
/// first from what its template writes (each family's call or tool-list
/// markers), then from what its GGUF metadata names (FunctionGemma, LFM2,
/// gpt-oss, Granite 3), then from its template family (Llama 3 JSON,
/// Mistral's `[TOOL_CALLS]`, Gemma's Python list from Google's guide,
/// Hermes for the rest).
///
/// SmolLM2 is the measured exception. Its model card teaches its own
/// format ([`ToolCallFormat::SmolLm2`]), yet SmolLM2-135M reads the Hermes
/// prompt better: on the tool evaluation's tune split (39 forced calls,
/// `examples/rust/tool_eval.rs`) it picked the right tool 30 times and the
/// right arguments 19 times under Hermes, against 17 to 24 and 12 to 16
/// under its card's prompt in four layouts, and under the card's prompt it
/// scores the empty list (`<tool_call>[]`, "no function fits") above every
/// call even when one fits. So SmolLM2 gets Hermes; its own format stays
/// available through `LlamaBackend::set_tool_call_format`.
pub fn tool_format(
    source: Option<&str>,
    metadata: Option<&ModelMetadata>,
    family: TemplateFamily,
) -> ToolCallFormat {
    if let Some(format) = source.and_then(tool_format_from_source) {
        return format;
    }
    let lower = |s: Option<&String>| s.map(|s| s.to_ascii_lowercase()).unwrap_or_default();
    let name = lower(metadata.and_then(|m| m.name.as_ref()));
    let architecture = lower(metadata.and_then(|m| m.architecture.as_ref()));
    if name.contains("functiongemma") {
        return ToolCallFormat::FunctionGemma;
    }
    if architecture.starts_with("lfm2") || name.contains("lfm2") {
        return ToolCallFormat::Lfm2;
    }
    if architecture == "gpt-oss" || name.contains("gpt-oss") {
        return ToolCallFormat::Harmony;
    }
    if name.contains("granite") && name.contains('3') && !name.contains('4') {
        return ToolCallFormat::Granite;
    }
    match family {
        TemplateFamily::Llama3 => ToolCallFormat::Llama3,
        TemplateFamily::Mistral => ToolCallFormat::Mistral,
        TemplateFamily::Gemma => ToolCallFormat::Pythonic,
        _ => ToolCallFormat::Hermes,
    }
}

/// The format whose markers a template writes, if any.
fn tool_format_from_source(source: &str) -> Option<ToolCallFormat> {
    let format = if source.contains("<start_function_declaration>")
        || source.contains("<start_function_call>")
    {
        ToolCallFormat::FunctionGemma
    } else if source.contains("<|tool_list_start|>") || source.contains("<|tool_call_start|>") {
        ToolCallFormat::Lfm2
    } else if source.contains("<|channel|>") && source.contains("<|call|>") {
        ToolCallFormat::Harmony
    } else if source.contains("<|tool_call|>") {
        ToolCallFormat::Granite
    } else if source.contains("[TOOL_CALLS]") {
        ToolCallFormat::Mistral
    } else {
        return None;
    };
    Some(format)
}

/// How a model whose template is `source` marks its reasoning: the
/// `<think>` tags of Qwen3, QwQ and the DeepSeek-R1 distills, harmony's
/// channels for gpt-oss.
pub fn thinking_format(source: &str) -> ThinkingFormat {
    if source.contains("<|channel|>") && source.contains("analysis") {
        ThinkingFormat::Harmony
    } else if source.contains("<think>") || source.contains("</think>") {
        ThinkingFormat::ThinkTags
    } else {
        ThinkingFormat::None
    }
}

/// The major version in a model name such as "Meta-Llama-3.1-8B",
/// "llama 3" or "Llama2-7b-chat": the digit right after "llama" (optionally
/// after one `-`, `_` or space). "LLaMA-30B" is a size, not a version, so a
/// digit followed by another digit does not count.
fn llama_generation(lowercase_name: &str) -> Option<u32> {
    lowercase_name.match_indices("llama").find_map(|(at, _)| {
        let rest = &lowercase_name[at + "llama".len()..];
        let rest = rest
            .strip_prefix(|c: char| matches!(c, '-' | '_' | ' '))
            .unwrap_or(rest);
        let mut chars = rest.chars();
        let version = chars.next()?.to_digit(10)?;
        match chars.next() {
            Some(next) if next.is_ascii_digit() => None,
            _ => Some(version),
        }
    })
}

/// Whether a template takes a `tools` variable, i.e. formats tool
/// definitions and calls itself. Only code inside `{{ }}` and `{% %}` counts,
/// with string literals removed, so prose such as "You have tools" in a
/// literal does not make a template look tool-aware; `builtin_tools` and
/// similar identifiers are different names and do not count either.
pub(crate) fn references_tools(source: &str) -> bool {
    references_name(source, "tools")
}

/// Whether a template's code (outside literals) uses the name `name`.
pub(crate) fn references_name(source: &str, name: &str) -> bool {
    let code = template_code(source);
    code.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .any(|word| word == name)
}

/// The code of every tag and expression of a template, literals blanked out.
fn template_code(source: &str) -> String {
    let bytes = source.as_bytes();
    let mut code = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let rest = &bytes[i..];
        if rest.starts_with(b"{#") {
            i += find(rest, b"#}").map_or(rest.len(), |end| end + 2);
        } else if rest.starts_with(b"{{") || rest.starts_with(b"{%") {
            let close: &[u8] = if rest[1] == b'{' { b"}}" } else { b"%}" };
            i += 2;
            while i < bytes.len() {
                match bytes[i] {
                    quote @ (b'\'' | b'"') => {
                        i += 1;
                        while i < bytes.len() && bytes[i] != quote {
                            i += if bytes[i] == b'\\' { 2 } else { 1 };
                        }
                        i += 1;
                        code.push(b' ');
                    }
                    _ if bytes[i..].starts_with(close) => {
                        i += 2;
                        break;
                    }
                    b => {
                        code.push(b);
                        i += 1;
                    }
                }
            }
            code.push(b' ');
        } else {
            i += 1;
        }
    }
    String::from_utf8_lossy(&code).into_owned()
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn meta(architecture: &str, name: &str) -> ModelMetadata {
        ModelMetadata {
            architecture: Some(architecture.into()),
            name: Some(name.into()),
            ..ModelMetadata::default()
        }
    }

    #[test]
    fn families_from_source_markers() {
        let cases = [
            ("{{ '<|start_header_id|>' }}", Some(TemplateFamily::Llama3)),
            ("{{ '<|im_start|>' }}", Some(TemplateFamily::Chatml)),
            ("{{ '<start_of_turn>' }}", Some(TemplateFamily::Gemma)),
            (
                "{{ '<|user|>' }}{{ '<|end|>' }}",
                Some(TemplateFamily::Phi3),
            ),
            ("[INST] <<SYS>>", Some(TemplateFamily::Llama2)),
            ("{{ '[INST] ' }}", Some(TemplateFamily::Mistral)),
            ("{{ messages }}", None),
        ];
        for (source, family) in cases {
            assert_eq!(detect_from_source(source), family, "{source}");
        }
    }

    #[test]
    fn families_from_metadata() {
        let cases = [
            (meta("gemma3", "Gemma 3 1b It"), TemplateFamily::Gemma),
            (meta("gemma2", ""), TemplateFamily::Gemma),
            (meta("phi3", "Phi 3 Mini 4k Instruct"), TemplateFamily::Phi3),
            (
                meta("llama", "Meta Llama 3.1 8B Instruct"),
                TemplateFamily::Llama3,
            ),
            (
                meta("llama", "Llama-3.2-1B-Instruct"),
                TemplateFamily::Llama3,
            ),
            (meta("llama", "llama3-8b"), TemplateFamily::Llama3),
            (meta("llama", "Llama-2-7b-chat"), TemplateFamily::Llama2),
            (meta("llama", "LLaMA-30B"), TemplateFamily::Chatml),
            (
                meta("llama", "Mistral 7B Instruct v0.3"),
                TemplateFamily::Mistral,
            ),
            (
                meta("qwen2", "Qwen2.5 0.5B Instruct"),
                TemplateFamily::Chatml,
            ),
            (ModelMetadata::default(), TemplateFamily::Chatml),
        ];
        for (metadata, family) in cases {
            assert_eq!(detect_from_metadata(&metadata), family, "{metadata:?}");
        }
    }

    #[test]
    fn tool_formats_from_model_and_family() {
        let smollm2_source = "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}";
        let cases = [
            (
                Some(smollm2_source),
                None,
                TemplateFamily::Chatml,
                // SmolLM2 reads Hermes better than its own card's format.
                ToolCallFormat::Hermes,
            ),
            (
                None,
                Some(meta("llama", "Smollm2 135M 8k Lc100K Mix1 Ep2")),
                TemplateFamily::Chatml,
                ToolCallFormat::Hermes,
            ),
            (
                None,
                Some(meta("qwen2", "Qwen2.5 0.5B Instruct")),
                TemplateFamily::Chatml,
                ToolCallFormat::Hermes,
            ),
            (None, None, TemplateFamily::Llama3, ToolCallFormat::Llama3),
            (None, None, TemplateFamily::Mistral, ToolCallFormat::Mistral),
            (None, None, TemplateFamily::Phi3, ToolCallFormat::Hermes),
            (None, None, TemplateFamily::Gemma, ToolCallFormat::Pythonic),
            (
                None,
                Some(meta("gemma3", "Functiongemma 270m It")),
                TemplateFamily::Gemma,
                ToolCallFormat::FunctionGemma,
            ),
            (
                None,
                Some(meta("lfm2", "LFM2 350M")),
                TemplateFamily::Chatml,
                ToolCallFormat::Lfm2,
            ),
            (
                None,
                Some(meta("gpt-oss", "Gpt Oss 20b")),
                TemplateFamily::Chatml,
                ToolCallFormat::Harmony,
            ),
            (
                Some("{{ '<|tool_call|>' }}"),
                None,
                TemplateFamily::Chatml,
                ToolCallFormat::Granite,
            ),
        ];
        for (source, metadata, family, format) in cases {
            assert_eq!(
                tool_format(source, metadata.as_ref(), family),
                format,
                "{source:?} {metadata:?}"
            );
        }
    }

    #[test]
    fn tool_references_ignore_literals_and_other_names() {
        assert!(references_tools("{%- if tools %}x{% endif %}"));
        assert!(references_tools("{{- tools | length }}"));
        assert!(!references_tools(
            "You have tools. {{ 'use tools' }} {# tools #}"
        ));
        assert!(!references_tools(
            "{% for t in builtin_tools %}{% endfor %}"
        ));
        assert!(!references_tools(r#"{{ "a \" tools }}" }}"#));
    }
}
