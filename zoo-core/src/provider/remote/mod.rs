//! The settings of the remote providers (the `provider` config key with
//! `"type": "openai"`, `"anthropic"` or `"gemini"`): one type per provider,
//! each with its table of keys and rules (which every front door checks
//! them by), and the rules and helpers they share: the base URL, the API
//! key and where it comes from, extra headers, the thinking level, and a
//! `Debug` that never shows a secret.

mod anthropic;
mod gemini;
mod openai;

pub(crate) use anthropic::ANTHROPIC_KEYS;
pub use anthropic::{AnthropicProvider, ANTHROPIC_BASE_URL};
pub(crate) use gemini::GEMINI_KEYS;
pub use gemini::{GeminiProvider, GEMINI_BASE_URL};
pub(crate) use openai::OPENAI_KEYS;
pub use openai::{MaxTokensField, OpenAiProvider};

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::error::{Error, Result};
use crate::settings::{describe, Rule};

/// The default `timeout_ms`: as long as the official OpenAI clients wait.
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;
/// The default `max_retries`.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

/// How much a model thinks before it answers (the `thinking` key of the
/// Anthropic and Gemini providers). Each level is a budget of thinking
/// tokens ([`budget_tokens`](Self::budget_tokens)); the thinking is kept
/// apart from the reply's text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingLevel {
    /// No thinking is asked for (the default): Anthropic thinks not at
    /// all; Gemini keeps its model's default and returns no thoughts.
    #[default]
    Off,
    /// 1,024 thinking tokens (Anthropic's minimum).
    Low,
    /// 4,096 thinking tokens.
    Medium,
    /// 16,384 thinking tokens.
    High,
}

impl ThinkingLevel {
    /// The thinking budget in tokens; `None` for `Off`.
    pub fn budget_tokens(self) -> Option<u32> {
        match self {
            ThinkingLevel::Off => None,
            ThinkingLevel::Low => Some(1024),
            ThinkingLevel::Medium => Some(4096),
            ThinkingLevel::High => Some(16_384),
        }
    }
}

/// The API key: `api_key`, or the environment variable named by
/// `api_key_env`. Both given, or a variable that is not set, is
/// `invalid_config` naming the key (`provider.api_key_env`).
pub(crate) fn resolve_api_key(
    api_key: &Option<String>,
    api_key_env: &Option<String>,
) -> Result<Option<String>> {
    match (api_key, api_key_env) {
        (Some(_), Some(_)) => Err(Error::config(
            "provider.api_key_env",
            "give `api_key` or `api_key_env`, not both",
        )),
        (Some(key), None) => Ok(Some(key.clone())),
        (None, Some(variable)) => match std::env::var(variable) {
            Ok(key) if !key.is_empty() => Ok(Some(key)),
            Ok(_) => Err(Error::config(
                "provider.api_key_env",
                format!("the environment variable `{variable}` is empty"),
            )),
            Err(_) => Err(Error::config(
                "provider.api_key_env",
                format!("the environment variable `{variable}` is not set"),
            )),
        },
        (None, None) => Ok(None),
    }
}

/// The header names with every value hidden, for `Debug`.
pub(crate) fn redacted_headers(headers: &BTreeMap<String, String>) -> BTreeMap<&str, &str> {
    headers
        .keys()
        .map(|name| (name.as_str(), "[redacted]"))
        .collect()
}

/// The `type` key, which every provider table lists first (it was checked
/// before the table was chosen).
pub(crate) const TYPE_RULE: Rule = Rule::Choice {
    expected: "a provider type",
    parse: |_| Ok(()),
};

/// `base_url` of a provider that has a default (an empty string is not one).
pub(crate) const BASE_URL_RULE: Rule = Rule::Custom {
    expected: BASE_URL_EXPECTED,
    check: check_base_url,
};

/// `model` where it is required (Anthropic and Gemini name it in every request).
pub(crate) const MODEL_REQUIRED_RULE: Rule = Rule::Custom {
    expected: "a non-empty string, the model's name",
    check: check_model_required,
};

pub(crate) const API_KEY_RULE: Rule = Rule::Custom {
    expected: "a non-empty string or null",
    check: check_secret,
};

pub(crate) const API_KEY_ENV_RULE: Rule = Rule::Text {
    null: true,
    non_empty: true,
};

pub(crate) const HEADERS_RULE: Rule = Rule::Custom {
    expected: "an object of header names and string values",
    check: check_headers,
};

pub(crate) const TIMEOUT_RULE: Rule = Rule::whole(1, 86_400_000, "");

pub(crate) const MAX_RETRIES_RULE: Rule = Rule::whole(0, 100, "");

pub(crate) const THINKING_RULE: Rule = Rule::Custom {
    expected: THINKING_EXPECTED,
    check: check_thinking,
};

const BASE_URL_EXPECTED: &str = "an http:// or https:// URL such as http://127.0.0.1:8080/v1";
const THINKING_EXPECTED: &str = r#""off", "low", "medium" or "high""#;

pub(crate) fn check_base_url(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::String(url) if url.is_empty() => Err(Error::config(
            key,
            format!("is required: {BASE_URL_EXPECTED}, the address of the server's API"),
        )),
        Json::String(url) => {
            let lower = url.to_ascii_lowercase();
            let rest = lower
                .strip_prefix("http://")
                .or_else(|| lower.strip_prefix("https://"));
            match rest {
                Some(host) if !host.is_empty() && !host.starts_with('/') => {
                    match url.parse::<ureq::http::Uri>() {
                        Ok(_) => Ok(()),
                        Err(e) => Err(Error::config(
                            key,
                            format!(
                                "expected {BASE_URL_EXPECTED}, got {} ({e})",
                                describe(value)
                            ),
                        )),
                    }
                }
                _ => Err(Error::config(
                    key,
                    format!("expected {BASE_URL_EXPECTED}, got {}", describe(value)),
                )),
            }
        }
        other => Err(Error::config(
            key,
            format!("expected {BASE_URL_EXPECTED}, got {}", describe(other)),
        )),
    }
}

fn check_model_required(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::String(model) if model.is_empty() => Err(Error::config(
            key,
            "is required: the model's name, such as claude-sonnet-4-5 or gemini-2.5-flash",
        )),
        Json::String(model) if !model.chars().all(|c| c.is_ascii_graphic()) => Err(Error::config(
            key,
            format!(
                "expected a model name without spaces, got {}",
                describe(value)
            ),
        )),
        Json::String(_) => Ok(()),
        other => Err(Error::config(
            key,
            format!(
                "expected a non-empty string, the model's name, got {}",
                describe(other)
            ),
        )),
    }
}

/// Like a non-empty text, but an error never repeats the value: it is a secret.
fn check_secret(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::Null => Ok(()),
        Json::String(s) if !s.is_empty() => Ok(()),
        Json::String(_) => Err(Error::config(
            key,
            "expected a non-empty string or null, got \"\"",
        )),
        other => Err(Error::config(
            key,
            format!(
                "expected a non-empty string or null, got {}",
                match other {
                    Json::Array(_) | Json::Object(_) => describe(other),
                    _ => "a value that is not a string".into(),
                }
            ),
        )),
    }
}

fn check_headers(key: &str, value: &Json) -> Result<()> {
    let Json::Object(headers) = value else {
        return Err(Error::config(
            key,
            format!(
                "expected an object of header names and string values, got {}",
                describe(value)
            ),
        ));
    };
    for (name, value) in headers {
        let at = format!("{key}.{name}");
        let token = |c: char| c.is_ascii_alphanumeric() || "!#$%&'*+-.^_`|~".contains(c);
        if name.is_empty() || !name.chars().all(token) {
            return Err(Error::config(
                at,
                "is not a valid HTTP header name (letters, digits and !#$%&'*+-.^_`|~)",
            ));
        }
        match value {
            // The value is not repeated: headers often carry credentials.
            Json::String(v) if v.chars().any(|c| c == '\r' || c == '\n' || c == '\0') => {
                return Err(Error::config(
                    at,
                    "a header value cannot hold a line break or NUL",
                ))
            }
            Json::String(_) => {}
            other => {
                return Err(Error::config(
                    at,
                    format!("expected a string, got {}", describe(other)),
                ))
            }
        }
    }
    Ok(())
}

fn check_thinking(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::String(s) if ["off", "low", "medium", "high"].contains(&s.as_str()) => Ok(()),
        other => Err(Error::config(
            key,
            format!("expected {THINKING_EXPECTED}, got {}", describe(other)),
        )),
    }
}

/// The builder methods every remote provider shares, with their docs.
macro_rules! connection_builders {
    ($provider:ty) => {
        impl $provider {
            /// Sets `base_url`.
            pub fn base_url(mut self, url: impl Into<String>) -> Self {
                self.base_url = url.into();
                self
            }

            /// Sets `api_key`.
            pub fn api_key(mut self, key: impl Into<String>) -> Self {
                self.api_key = Some(key.into());
                self
            }

            /// Sets `api_key_env`.
            pub fn api_key_env(mut self, variable: impl Into<String>) -> Self {
                self.api_key_env = Some(variable.into());
                self
            }

            /// Adds a header sent with every request.
            pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
                self.headers.insert(name.into(), value.into());
                self
            }

            /// Sets `timeout_ms`.
            pub fn timeout_ms(mut self, milliseconds: u64) -> Self {
                self.timeout_ms = milliseconds;
                self
            }

            /// Sets `max_retries`.
            pub fn max_retries(mut self, retries: u32) -> Self {
                self.max_retries = retries;
                self
            }

            /// The timeout as a duration.
            pub(crate) fn timeout(&self) -> std::time::Duration {
                std::time::Duration::from_millis(self.timeout_ms)
            }

            /// The API key, from `api_key` or `api_key_env`.
            pub(crate) fn resolve_api_key(&self) -> $crate::error::Result<Option<String>> {
                super::resolve_api_key(&self.api_key, &self.api_key_env)
            }
        }
    };
}
pub(crate) use connection_builders;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_key_comes_from_one_place() {
        let (key, env) = (Some("k".to_string()), Some("PATH".to_string()));
        assert_eq!(
            resolve_api_key(&key, &env).unwrap_err().to_string(),
            "invalid config `provider.api_key_env`: give `api_key` or `api_key_env`, not both"
        );
        let missing = Some("ZOO_SURELY_UNSET_VARIABLE_9".to_string());
        assert_eq!(
            resolve_api_key(&None, &missing).unwrap_err().to_string(),
            "invalid config `provider.api_key_env`: the environment variable \
             `ZOO_SURELY_UNSET_VARIABLE_9` is not set"
        );
        assert_eq!(resolve_api_key(&key, &None).unwrap(), Some("k".to_string()));
        assert_eq!(resolve_api_key(&None, &None).unwrap(), None);
    }

    #[test]
    fn thinking_levels_are_budgets() {
        let budgets: Vec<Option<u32>> = [
            ThinkingLevel::Off,
            ThinkingLevel::Low,
            ThinkingLevel::Medium,
            ThinkingLevel::High,
        ]
        .iter()
        .map(|l| l.budget_tokens())
        .collect();
        assert_eq!(budgets, [None, Some(1024), Some(4096), Some(16_384)]);
        assert_eq!(
            check_thinking("provider.thinking", &Json::from("max"))
                .unwrap_err()
                .to_string(),
            r#"invalid config `provider.thinking`: expected "off", "low", "medium" or "high", got "max""#
        );
    }
}
