//! Chat templates: turning a conversation and its tools into the exact
//! prompt text a model was trained on.
//!
//! GGUF files usually carry a Hugging Face Jinja template; it is rendered
//! with minijinja set up to behave like `apply_chat_template`. Files without
//! one use a built-in template for their family. The same conversation must
//! render to the same string every time: the backend reuses the KV cache for
//! the common prefix of consecutive prompts, so nothing here depends on hash
//! ordering or the clock (unless a template itself asks for the date).

pub mod builtin;
pub mod detect;
mod jinja;
pub mod tool_prompt;

#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use minijinja::value::{Serde, Value};
use minijinja::{context, Environment};
use serde_json::{json, Map, Value as Json};

use crate::config::TemplateChoice;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::tools::{ToolCallFormat, ToolDefinition};

/// The text of the model's BOS and EOS tokens (e.g. `<s>` and `</s>`),
/// passed to templates as `bos_token` and `eos_token`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SpecialTokens {
    /// Beginning-of-sequence token text.
    pub bos: String,
    /// End-of-sequence token text.
    pub eos: String,
}

/// What a GGUF file says about how to prompt its model.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ModelMetadata {
    /// `tokenizer.chat_template`, the Hugging Face Jinja template.
    pub chat_template: Option<String>,
    /// `general.architecture`, e.g. `llama`, `gemma3`, `qwen2`.
    pub architecture: Option<String>,
    /// `general.name`, e.g. `Meta Llama 3.1 8B Instruct`.
    pub name: Option<String>,
    /// The BOS/EOS token texts.
    pub special: SpecialTokens,
}

/// A prompt format family. Decides the built-in template used when there is
/// no GGUF template and the tool-call format models are taught.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TemplateFamily {
    /// `<|im_start|>role\n…<|im_end|>` (Qwen, SmolLM, Hermes).
    Chatml,
    /// Llama 3.x header tokens.
    Llama3,
    /// Llama 2 `[INST] <<SYS>>`.
    Llama2,
    /// Mistral `[INST]` without a system role.
    Mistral,
    /// Phi-3 `<|user|>…<|end|>`.
    Phi3,
    /// Gemma `<start_of_turn>`.
    Gemma,
    /// Plain text for base models.
    Raw,
}

impl TemplateFamily {
    /// Every family, in declaration order.
    pub const ALL: [TemplateFamily; 7] = [
        TemplateFamily::Chatml,
        TemplateFamily::Llama3,
        TemplateFamily::Llama2,
        TemplateFamily::Mistral,
        TemplateFamily::Phi3,
        TemplateFamily::Gemma,
        TemplateFamily::Raw,
    ];

    /// The name used in configuration (`template`) and in origins.
    pub fn name(&self) -> &'static str {
        match self {
            TemplateFamily::Chatml => "chatml",
            TemplateFamily::Llama3 => "llama3",
            TemplateFamily::Llama2 => "llama2",
            TemplateFamily::Mistral => "mistral",
            TemplateFamily::Phi3 => "phi3",
            TemplateFamily::Gemma => "gemma",
            TemplateFamily::Raw => "raw",
        }
    }
}

/// A compiled chat template, ready to render conversations. Cheap to clone.
#[derive(Clone)]
pub struct ChatTemplate {
    env: Arc<Environment<'static>>,
    family: TemplateFamily,
    origin: String,
    native_tools: bool,
    special: SpecialTokens,
}

impl fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("origin", &self.origin)
            .field("family", &self.family)
            .field("native_tools", &self.native_tools)
            .field("special", &self.special)
            .finish_non_exhaustive()
    }
}

impl ChatTemplate {
    /// The built-in template of `family`.
    pub fn builtin(family: TemplateFamily, special: SpecialTokens) -> Self {
        let env = jinja::environment(builtin::source(family))
            .unwrap_or_else(|e| panic!("built-in template `{}` must compile: {e}", family.name()));
        ChatTemplate {
            env: Arc::new(env),
            family,
            origin: format!("builtin:{}", family.name()),
            // Built-ins are plain-turn formats: tools are always taught by
            // `tool_prompt`, never passed to the template.
            native_tools: false,
            special,
        }
    }

    /// Compiles a user-supplied Jinja template (origin `custom`). Its family
    /// is detected from the markers it writes, ChatML when none is known.
    pub fn from_jinja(source: &str, special: SpecialTokens) -> Result<Self> {
        let family = detect::detect_from_source(source).unwrap_or(TemplateFamily::Chatml);
        Self::compile(source, special, family, "custom")
    }

    fn compile(
        source: &str,
        special: SpecialTokens,
        family: TemplateFamily,
        origin: &str,
    ) -> Result<Self> {
        let env =
            jinja::environment(source).map_err(|e| Error::config("template", e.to_string()))?;
        Ok(ChatTemplate {
            env: Arc::new(env),
            family,
            origin: origin.to_string(),
            native_tools: detect::references_tools(source),
            special,
        })
    }

    /// Picks the template for a configuration and a model: a named built-in
    /// wins over whatever the model says; `auto` prefers the GGUF's own
    /// template, then the built-in of the family its metadata suggests.
    pub fn resolve(choice: &TemplateChoice, metadata: &ModelMetadata) -> Result<Self> {
        let special = metadata.special.clone();
        let family = match choice {
            TemplateChoice::Auto => return Ok(Self::auto(metadata)),
            TemplateChoice::Custom(source) => return Self::from_jinja(source, special),
            TemplateChoice::Builtin(family) => *family,
        };
        Ok(Self::builtin(family, special))
    }

    fn auto(metadata: &ModelMetadata) -> Self {
        let special = metadata.special.clone();
        if let Some(source) = metadata.chat_template.as_deref() {
            if !source.trim().is_empty() {
                let family = detect::detect_from_source(source)
                    .unwrap_or_else(|| detect::detect_from_metadata(metadata));
                match Self::compile(source, special.clone(), family, "gguf") {
                    Ok(template) => return template,
                    // Some templates use Jinja2 extensions minijinja lacks
                    // (e.g. `{% generation %}`); a built-in of the right
                    // family is better than refusing to load the model.
                    Err(e) => tracing::warn!(
                        error = %e,
                        "the GGUF chat template does not compile; falling back to a built-in"
                    ),
                }
            }
        }
        Self::builtin(detect::detect_from_metadata(metadata), special)
    }

    /// The detected family (for a GGUF or custom template: from the markers
    /// in its source).
    pub fn family(&self) -> TemplateFamily {
        self.family
    }

    /// Where the template came from: `builtin:<family>`, `gguf` or `custom`.
    pub fn origin(&self) -> &str {
        &self.origin
    }

    /// Whether the template formats tools itself (it references `tools`, as
    /// Hugging Face templates that take a tools list do). Otherwise the
    /// engine teaches the tool-call format through the system prompt.
    pub fn supports_native_tools(&self) -> bool {
        self.native_tools
    }

    /// The tool-call format the model is taught and parsed for.
    pub fn tool_call_format(&self) -> ToolCallFormat {
        match self.family {
            TemplateFamily::Llama3 => ToolCallFormat::Llama3,
            TemplateFamily::Mistral => ToolCallFormat::Mistral,
            _ => ToolCallFormat::Hermes,
        }
    }

    /// Renders the prompt for `messages` with `tools` available. With
    /// `add_generation_prompt` the prompt ends where the assistant's reply
    /// begins. A template that refuses the conversation (`raise_exception`,
    /// typically over role order) or fails while rendering gives
    /// [`Error::InvalidMessageSequence`] with its message.
    pub fn render(
        &self,
        messages: &[Message],
        tools: &[ToolDefinition],
        add_generation_prompt: bool,
    ) -> Result<String> {
        let prepared;
        let (messages, tools) = if self.native_tools {
            (messages, tools)
        } else {
            prepared = tool_prompt::prepare_messages(messages, tools, self.tool_call_format());
            (prepared.as_slice(), &[][..])
        };
        // Hugging Face passes `tools=None` when there are none, and templates
        // test `tools is not none`; an undefined value would pass that test.
        let tools = if tools.is_empty() {
            Value::from(())
        } else {
            Value::from(Serde(tools_json(tools)))
        };
        let ctx = context! {
            messages => Value::from(Serde(messages_json(messages))),
            tools => tools,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.special.bos.as_str(),
            eos_token => self.special.eos.as_str(),
        };
        let template = self
            .env
            .get_template(jinja::TEMPLATE_NAME)
            .map_err(|e| Error::Internal(format!("chat template missing: {e}")))?;
        template.render(ctx).map_err(|e| {
            Error::InvalidMessageSequence(match jinja::raised_message(&e) {
                Some(message) => message.to_string(),
                None => format!("chat template ({}) failed to render: {e}", self.origin),
            })
        })
    }
}

/// Messages in the shape Hugging Face templates expect (OpenAI's), with
/// keys in a fixed order.
fn messages_json(messages: &[Message]) -> Json {
    Json::Array(
        messages
            .iter()
            .map(|message| {
                let mut map = Map::new();
                map.insert("role".into(), message.role.as_str().into());
                map.insert("content".into(), message.content.as_str().into());
                if !message.tool_calls.is_empty() {
                    let calls = message
                        .tool_calls
                        .iter()
                        .map(|call| {
                            json!({
                                "id": call.id,
                                "type": "function",
                                "function": {"name": call.name, "arguments": call.arguments},
                            })
                        })
                        .collect();
                    map.insert("tool_calls".into(), Json::Array(calls));
                }
                if let Some(id) = &message.tool_call_id {
                    map.insert("tool_call_id".into(), id.as_str().into());
                }
                if let Some(name) = &message.name {
                    map.insert("name".into(), name.as_str().into());
                }
                Json::Object(map)
            })
            .collect(),
    )
}

/// Tools in OpenAI's shape, as Hugging Face templates expect them.
fn tools_json(tools: &[ToolDefinition]) -> Json {
    tools.iter().map(tool_json).collect()
}

/// One tool in OpenAI's shape: `{"type": "function", "function": {…}}`.
fn tool_json(tool: &ToolDefinition) -> Json {
    json!({
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": tool.parameters,
        },
    })
}
