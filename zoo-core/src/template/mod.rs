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
mod choice;
pub mod detect;
mod jinja;
pub mod tool_prompt;

#[cfg(test)]
mod family_tests;
#[cfg(test)]
mod tests;

use std::fmt;
use std::sync::Arc;

use minijinja::value::{Serde, Value};
use minijinja::{context, Environment};
use serde_json::{json, Map, Value as Json};

use crate::error::{Error, Result};
use crate::message::Message;
use crate::thinking::ThinkingFormat;
use crate::tools::{ToolCallFormat, ToolDefinition};

pub use choice::TemplateChoice;

/// The text of the model's BOS and EOS tokens (e.g. `<s>` and `</s>`),
/// passed to templates as `bos_token` and `eos_token`.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
pub struct SpecialTokens {
    /// Beginning-of-sequence token text.
    pub bos: String,
    /// End-of-sequence token text.
    pub eos: String,
}

/// What a GGUF file says about how to prompt its model. Its JSON (the
/// same in every front door; Node's keys in camelCase) is
/// [`to_json`](Self::to_json)'s.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize)]
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

impl ModelMetadata {
    /// `{"chat_template", "architecture", "name", "special": {"bos", "eos"}}`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("ModelMetadata serializes")
    }
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
    tool_format: ToolCallFormat,
    origin: String,
    native_tools: bool,
    /// How the model marks its reasoning (from the template's markers).
    thinking: ThinkingFormat,
    /// Whether a template that formats tools also writes the calls of
    /// assistant messages (`tool_calls`); some (Granite 3, LFM2) write
    /// only the content, so the calls go into it as text.
    renders_calls: bool,
    special: SpecialTokens,
}

impl fmt::Debug for ChatTemplate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ChatTemplate")
            .field("origin", &self.origin)
            .field("family", &self.family)
            .field("tool_format", &self.tool_format)
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
            tool_format: detect::tool_format(None, None, family),
            origin: format!("builtin:{}", family.name()),
            // Built-ins are plain-turn formats: tools are always taught by
            // `tool_prompt`, never passed to the template.
            native_tools: false,
            renders_calls: false,
            thinking: ThinkingFormat::None,
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
            tool_format: detect::tool_format(Some(source), None, family),
            origin: origin.to_string(),
            native_tools: detect::references_tools(source),
            renders_calls: detect::references_name(source, "tool_calls"),
            thinking: detect::thinking_format(source),
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
                    Ok(template) => {
                        let format = detect::tool_format(Some(source), Some(metadata), family);
                        return template.with_tool_format(format);
                    }
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
        let family = detect::detect_from_metadata(metadata);
        Self::builtin(family, special).with_tool_format(detect::tool_format(
            None,
            Some(metadata),
            family,
        ))
    }

    /// This template, teaching and parsing `tool_format` instead of the
    /// detected one.
    pub fn with_tool_format(self, tool_format: ToolCallFormat) -> Self {
        ChatTemplate {
            tool_format,
            ..self
        }
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

    /// The tool-call format the model is taught and parsed for: the one
    /// its family or its own model (SmolLM2) was trained on.
    pub fn tool_call_format(&self) -> ToolCallFormat {
        self.tool_format
    }

    /// How the model marks its reasoning in a reply.
    pub fn thinking_format(&self) -> ThinkingFormat {
        match self.tool_format {
            ToolCallFormat::Harmony => ThinkingFormat::Harmony,
            _ => self.thinking,
        }
    }

    /// Renders the prompt for `messages` with `tools` available. With
    /// `add_generation_prompt` the prompt ends where the assistant's reply
    /// begins. A template that refuses the conversation (`raise_exception`,
    /// typically over role order) or fails while rendering gives
    /// [`Error::InvalidMessageSequence`] with its message. A template that
    /// runs past its budget (see [`RenderBudget`]) gives
    /// [`Error::InvalidConfig`] on `template`: it would otherwise hold the
    /// inference thread, where no stop reaches it, for as long as it loops.
    pub fn render(
        &self,
        messages: &[Message],
        tools: &[ToolDefinition],
        add_generation_prompt: bool,
    ) -> Result<String> {
        self.render_measured(messages, tools, add_generation_prompt)
            .map(|(prompt, _)| prompt)
    }

    /// [`render`](Self::render), also returning the fuel the render used.
    pub(crate) fn render_measured(
        &self,
        messages: &[Message],
        tools: &[ToolDefinition],
        add_generation_prompt: bool,
    ) -> Result<(String, u64)> {
        let prepared;
        let (messages, tools) = if self.native_tools {
            prepared = tool_prompt::prepare_native_messages(
                messages,
                self.tool_call_format(),
                self.renders_calls,
            );
            (prepared.as_slice(), tools)
        } else {
            prepared = tool_prompt::prepare_messages(messages, tools, self.tool_call_format());
            (prepared.as_slice(), &[][..])
        };
        let messages = messages_json(messages);
        let tools = tools_json(tools);
        let budget = RenderBudget::for_input(&messages, &tools);
        // Hugging Face passes `tools=None` when there are none, and templates
        // test `tools is not none`; an undefined value would pass that test.
        let tools = match tools {
            Json::Array(list) if list.is_empty() => Value::from(()),
            tools => Value::from(Serde(tools)),
        };
        let ctx = context! {
            messages => Value::from(Serde(messages)),
            tools => tools,
            add_generation_prompt => add_generation_prompt,
            bos_token => self.special.bos.as_str(),
            eos_token => self.special.eos.as_str(),
        };
        let env = jinja::limited(&self.env, budget.fuel, budget.output_bytes);
        let template = env
            .get_template(jinja::TEMPLATE_NAME)
            .map_err(|e| Error::Internal(format!("chat template missing: {e}")))?;
        let mut out = jinja::LimitedWriter::new(budget.output_bytes);
        let captured = template
            .render_captured_to(ctx, &mut out)
            .map_err(|e| self.render_error(&e, &budget))?;
        let fuel = captured.state().fuel_levels().map_or(0, |(used, _)| used);
        let prompt = String::from_utf8(out.bytes)
            .map_err(|e| Error::Internal(format!("chat template wrote bad UTF-8: {e}")))?;
        Ok((prompt, fuel))
    }

    fn render_error(&self, e: &minijinja::Error, budget: &RenderBudget) -> Error {
        let over = |what: String| {
            let hint = match self.origin.as_str() {
                "gguf" => "; set `template` to a built-in (e.g. chatml) to replace the model's own",
                _ => "",
            };
            Error::config(
                "template",
                format!("the chat template ({}) {what}{hint}", self.origin),
            )
        };
        if e.kind() == minijinja::ErrorKind::OutOfFuel {
            return over(format!(
                "ran out of fuel after {} steps: it loops too long",
                budget.fuel
            ));
        }
        if let Some(max) = jinja::output_limit_passed(e) {
            return over(format!(
                "wrote more than {max} bytes: its output is too long"
            ));
        }
        Error::InvalidMessageSequence(match jinja::raised_message(e) {
            Some(message) => message.to_string(),
            None => format!("chat template ({}) failed to render: {e}", self.origin),
        })
    }
}

/// What one render may use. A chat template does a little work per message
/// and per tool, so the budget grows with them. Measured (`cargo test -p
/// zoo-core --lib template_fuel -- --nocapture`): on a 200-message history
/// with 20 tools the built-in templates use 3,000 to 6,300 instructions,
/// Qwen 2.5's 10,100 and Llama 3.2's 8,500, under 50 per message or tool;
/// the budget is 100 times that (2.1 million instructions there), while a
/// template that loops without end runs out in 0.1 s (one message) to
/// 0.2 s (that history), at about 90 ns an instruction in a dev build.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RenderBudget {
    /// Template instructions (minijinja fuel).
    pub fuel: u64,
    /// Bytes of output, and of text written by expressions in all.
    pub output_bytes: usize,
}

impl RenderBudget {
    /// Fuel for any render, however short the conversation.
    pub const FUEL_BASE: u64 = 1_000_000;
    /// Fuel added per message and per tool.
    pub const FUEL_PER_ITEM: u64 = 5_000;
    /// Output allowed for any render.
    pub const OUTPUT_BASE: usize = 16 << 20;
    /// Output allowed per byte of the conversation and tools (a template
    /// wraps its input in a few markers, or repeats it a couple of times).
    pub const OUTPUT_PER_INPUT_BYTE: usize = 16;

    fn for_input(messages: &Json, tools: &Json) -> Self {
        let items = [messages, tools]
            .iter()
            .map(|list| list.as_array().map_or(0, Vec::len) as u64)
            .sum::<u64>();
        let input_bytes = json_size(messages) + json_size(tools);
        RenderBudget {
            fuel: Self::FUEL_BASE + Self::FUEL_PER_ITEM * items,
            output_bytes: Self::OUTPUT_BASE
                .saturating_add(input_bytes.saturating_mul(Self::OUTPUT_PER_INPUT_BYTE)),
        }
    }
}

/// About as many bytes as `value` takes as JSON, without writing it.
fn json_size(value: &Json) -> usize {
    match value {
        Json::Null | Json::Bool(_) | Json::Number(_) => 8,
        Json::String(s) => s.len() + 2,
        Json::Array(items) => items.iter().map(json_size).sum::<usize>() + 2,
        Json::Object(map) => {
            map.iter()
                .map(|(k, v)| k.len() + 4 + json_size(v))
                .sum::<usize>()
                + 2
        }
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
                // A local model reads text: an image is a placeholder line.
                map.insert("content".into(), message.text_with_placeholders().into());
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
                // Qwen3's templates read `reasoning_content`, gpt-oss's
                // `thinking`; each decides which turns keep it.
                if let Some(thinking) = &message.thinking {
                    map.insert("reasoning_content".into(), thinking.as_str().into());
                    map.insert("thinking".into(), thinking.as_str().into());
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
