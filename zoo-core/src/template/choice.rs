//! The `template` config key: which chat template renders the
//! conversation (the GGUF's own, a built-in one, or a user's Jinja).

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::TemplateFamily;
use crate::error::{Error, Result};

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

impl Serialize for TemplateChoice {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for TemplateChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = String::deserialize(d)?;
        Self::parse(&value).map_err(serde::de::Error::custom)
    }
}
