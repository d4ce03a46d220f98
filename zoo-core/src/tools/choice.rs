//! Whether and which tools the model may call: the `tool_choice` config key
//! and chat option.

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::error::{Error, Result};

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
            name if super::registry::is_valid_tool_name(name) => Self::Tool(name.into()),
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

impl Serialize for ToolChoice {
    fn serialize<S: Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.serialize_str(self.as_str())
    }
}

impl<'de> Deserialize<'de> for ToolChoice {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let value = String::deserialize(d)?;
        ToolChoice::parse(&value).map_err(serde::de::Error::custom)
    }
}
