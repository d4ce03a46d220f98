//! Agent configuration: every key of DESIGN.md, its default and its checks.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};
use crate::template::TemplateFamily;

/// Which chat template renders the conversation.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum TemplateChoice {
    /// The GGUF's own template, else a family detected from metadata, else ChatML.
    #[default]
    Auto,
    /// A built-in template (`chatml`, `llama3`, `llama2`, `mistral`, `phi3`,
    /// `gemma`, `raw`), whatever the model's metadata says.
    Builtin(TemplateFamily),
    /// A Jinja source written by the user.
    Custom(String),
}

impl TemplateChoice {
    /// Parses a config value: `auto`, a built-in name, or a Jinja source
    /// (which must contain `{{` or `{%`, so that a misspelt name is an error,
    /// not a template).
    pub fn parse(value: &str) -> Result<Self> {
        if value == "auto" {
            return Ok(Self::Auto);
        }
        if let Some(family) = TemplateFamily::ALL.into_iter().find(|f| f.name() == value) {
            return Ok(Self::Builtin(family));
        }
        if value.contains("{{") || value.contains("{%") {
            return Ok(Self::Custom(value.to_string()));
        }
        let names: Vec<&str> = TemplateFamily::ALL.iter().map(|f| f.name()).collect();
        Err(Error::config(
            "template",
            format!(
                "unknown template `{value}`; expected auto, {} or a Jinja source",
                names.join(", ")
            ),
        ))
    }

    /// The config value for this choice.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Auto => "auto",
            Self::Builtin(family) => family.name(),
            Self::Custom(source) => source,
        }
    }
}

/// Whether and which tools the model may call.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum ToolChoice {
    /// The model decides; a call, once begun, is constrained by a grammar.
    #[default]
    Auto,
    /// The first reply of a turn must be a tool call (any registered tool).
    Required,
    /// Tools are hidden from the model.
    None,
    /// The first reply of a turn must call this tool.
    Tool(String),
}

impl ToolChoice {
    /// Parses `auto`, `required`, `none` or a tool name.
    pub fn parse(value: &str) -> Result<Self> {
        Ok(match value {
            "auto" => Self::Auto,
            "required" => Self::Required,
            "none" => Self::None,
            name if crate::tools::registry::is_valid_tool_name(name) => Self::Tool(name.into()),
            other => {
                return Err(Error::config(
                    "tool_choice",
                    format!(
                        "`{other}` is neither auto, required, none nor a valid tool name \
                         (^[A-Za-z0-9_-]{{1,64}}$)"
                    ),
                ))
            }
        })
    }

    /// The config value for this choice.
    pub fn as_str(&self) -> &str {
        match self {
            Self::Auto => "auto",
            Self::Required => "required",
            Self::None => "none",
            Self::Tool(name) => name,
        }
    }
}

macro_rules! string_serde {
    ($ty:ty) => {
        impl Serialize for $ty {
            fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
                s.serialize_str(self.as_str())
            }
        }
        impl<'de> Deserialize<'de> for $ty {
            fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
                let value = String::deserialize(d)?;
                <$ty>::parse(&value).map_err(serde::de::Error::custom)
            }
        }
    };
}
string_serde!(TemplateChoice);
string_serde!(ToolChoice);

/// Everything an agent is created with. Keys and JSON names are the same in
/// every language (camelCase in Node). Unknown keys are rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Path of the GGUF model file (not needed with a shared `Model` or a test backend).
    pub model_path: Option<String>,
    /// Context window in tokens; 0 uses the model's trained context.
    pub context_size: u32,
    /// Tokens decoded per llama.cpp batch.
    pub batch_size: u32,
    /// CPU threads; 0 uses every available core.
    pub threads: u32,
    /// Layers offloaded to the GPU (needs the `cuda` feature); -1 offloads all.
    pub gpu_layers: i32,
    /// Sampling seed; `None` picks a random one.
    pub seed: Option<u32>,
    /// Sampling temperature; 0 is greedy.
    pub temperature: f32,
    /// Nucleus sampling threshold in (0, 1].
    pub top_p: f32,
    /// Keep only the k most likely tokens; 0 disables.
    pub top_k: u32,
    /// Drop tokens below this fraction of the best token's probability.
    pub min_p: f32,
    /// Penalty for repeated tokens; 1.0 disables.
    pub repeat_penalty: f32,
    /// Tokens per reply; `None` means until the model stops or the context is full.
    pub max_tokens: Option<u32>,
    /// Strings that end a reply (not included in it).
    pub stop: Vec<String>,
    /// The system prompt, kept through pruning.
    pub system_prompt: Option<String>,
    /// Which chat template renders the conversation.
    pub template: TemplateChoice,
    /// Default tool choice for chats that do not set one.
    pub tool_choice: ToolChoice,
    /// Model replies with tool calls allowed in one chat before it ends as `tool_limit`.
    pub max_tool_iterations: u32,
    /// Failed attempts at a tool allowed after the first, before `tool_retries_exhausted`.
    pub max_tool_retries: u32,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model_path: None,
            context_size: 4096,
            batch_size: 512,
            threads: 0,
            gpu_layers: 0,
            seed: None,
            temperature: 0.7,
            top_p: 0.95,
            top_k: 40,
            min_p: 0.05,
            repeat_penalty: 1.0,
            max_tokens: None,
            stop: Vec::new(),
            system_prompt: None,
            template: TemplateChoice::Auto,
            tool_choice: ToolChoice::Auto,
            max_tool_iterations: 10,
            max_tool_retries: 2,
        }
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {
        $( $(#[$doc])* pub fn $name(mut self, value: $ty) -> Self { self.$name = value; self } )*
    };
}

impl Config {
    /// A default configuration for the model at `path`.
    pub fn new(model_path: impl Into<String>) -> Self {
        Config {
            model_path: Some(model_path.into()),
            ..Config::default()
        }
    }

    setters! {
        /// Sets `context_size`.
        context_size: u32,
        /// Sets `batch_size`.
        batch_size: u32,
        /// Sets `threads`.
        threads: u32,
        /// Sets `gpu_layers`.
        gpu_layers: i32,
        /// Sets `temperature`.
        temperature: f32,
        /// Sets `top_p`.
        top_p: f32,
        /// Sets `top_k`.
        top_k: u32,
        /// Sets `min_p`.
        min_p: f32,
        /// Sets `repeat_penalty`.
        repeat_penalty: f32,
        /// Sets `template`.
        template: TemplateChoice,
        /// Sets `tool_choice`.
        tool_choice: ToolChoice,
        /// Sets `max_tool_iterations`.
        max_tool_iterations: u32,
        /// Sets `max_tool_retries`.
        max_tool_retries: u32,
        /// Sets `stop`.
        stop: Vec<String>,
    }

    /// Sets `seed`.
    pub fn seed(mut self, seed: u32) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets `max_tokens`.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets `system_prompt`.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Parses a JSON object of config keys; missing keys keep their defaults.
    pub fn from_json(json: &str) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_str(json)?;
        if !value.is_object() {
            return Err(Error::InvalidJson(
                "config must be a JSON object of keys such as {\"model_path\": \"...\"}".into(),
            ));
        }
        let config: Config = serde_json::from_value(value).map_err(config_error)?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value; the error names the first bad key and why.
    pub fn validate(&self) -> Result<()> {
        fn check(ok: bool, key: &str, reason: impl FnOnce() -> String) -> Result<()> {
            if ok {
                Ok(())
            } else {
                Err(Error::config(key, reason()))
            }
        }
        if let Some(path) = &self.model_path {
            check(!path.is_empty(), "model_path", || {
                "must not be empty".into()
            })?;
        }
        check(
            self.context_size == 0 || self.context_size >= 64,
            "context_size",
            || {
                format!(
                    "must be 0 (the model's own) or at least 64, got {}",
                    self.context_size
                )
            },
        )?;
        check(self.batch_size >= 1, "batch_size", || {
            "must be at least 1".into()
        })?;
        check(self.threads <= 1024, "threads", || {
            format!("must be at most 1024, got {}", self.threads)
        })?;
        check(self.gpu_layers >= -1, "gpu_layers", || {
            format!("must be -1 (all) or more, got {}", self.gpu_layers)
        })?;
        check(
            self.temperature.is_finite() && self.temperature >= 0.0,
            "temperature",
            || format!("must be a finite number >= 0, got {}", self.temperature),
        )?;
        check(self.top_p > 0.0 && self.top_p <= 1.0, "top_p", || {
            format!("must be in (0, 1], got {}", self.top_p)
        })?;
        check((0.0..=1.0).contains(&self.min_p), "min_p", || {
            format!("must be in [0, 1], got {}", self.min_p)
        })?;
        check(
            self.repeat_penalty.is_finite() && self.repeat_penalty > 0.0,
            "repeat_penalty",
            || format!("must be a finite number > 0, got {}", self.repeat_penalty),
        )?;
        if let Some(max) = self.max_tokens {
            check(max >= 1, "max_tokens", || {
                "must be at least 1 (or null for no limit)".into()
            })?;
        }
        check(self.stop.iter().all(|s| !s.is_empty()), "stop", || {
            "stop strings must not be empty".into()
        })?;
        check(self.max_tool_iterations >= 1, "max_tool_iterations", || {
            "must be at least 1".into()
        })?;
        check(self.max_tool_retries <= 100, "max_tool_retries", || {
            format!("must be at most 100, got {}", self.max_tool_retries)
        })?;
        Ok(())
    }
}

/// Maps serde's message to the key it is about, so C and Python callers are
/// told which key is wrong.
fn config_error(e: serde_json::Error) -> Error {
    let message = e.to_string();
    let key = message
        .split('`')
        .nth(1)
        .filter(|_| message.starts_with("unknown field"))
        .map(str::to_string);
    match key {
        Some(key) => Error::config(key, message),
        None => Error::config("config", message),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_are_valid_and_do_not_truncate_replies() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.max_tokens, None);
        assert_eq!(c.max_tool_retries, 2);
    }

    #[test]
    fn json_keys_and_errors_name_the_key() {
        let c = Config::from_json(r#"{"model_path":"m.gguf","temperature":0,"tool_choice":"required","template":"chatml"}"#).unwrap();
        assert_eq!(c.temperature, 0.0);
        assert_eq!(c.tool_choice, ToolChoice::Required);
        assert_eq!(c.template, TemplateChoice::Builtin(TemplateFamily::Chatml));

        let e = Config::from_json(r#"{"temprature":0.1}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { key, .. } if key == "temprature"),
            "{e}"
        );
        let e = Config::from_json(r#"{"top_p":2}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { key, .. } if key == "top_p"),
            "{e}"
        );
        let e = Config::from_json(r#"{"template":"chatm"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown template `chatm`"), "{e}");
        let e = Config::from_json("[1]").unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::InvalidJson);
        let e = Config::from_json("{").unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::InvalidJson);
    }

    #[test]
    fn custom_template_and_tool_names() {
        assert_eq!(
            TemplateChoice::parse("{{ messages }}").unwrap(),
            TemplateChoice::Custom("{{ messages }}".into())
        );
        assert_eq!(
            ToolChoice::parse("get_weather").unwrap(),
            ToolChoice::Tool("get_weather".into())
        );
        assert!(ToolChoice::parse("bad name!").is_err());
    }
}
