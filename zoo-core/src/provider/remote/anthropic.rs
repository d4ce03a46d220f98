//! The settings of the Anthropic Messages API (the `provider` config key
//! with `"type": "anthropic"`) and the rules every front door checks them by.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    connection_builders, redacted_headers, ThinkingLevel, API_KEY_ENV_RULE, API_KEY_RULE,
    BASE_URL_RULE, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, HEADERS_RULE, MAX_RETRIES_RULE,
    MODEL_REQUIRED_RULE, THINKING_RULE, TIMEOUT_RULE, TYPE_RULE,
};
use crate::settings::Settings;

/// Anthropic's API, where requests go unless `base_url` says otherwise.
pub const ANTHROPIC_BASE_URL: &str = "https://api.anthropic.com";

/// Claude, through Anthropic's Messages API.
///
/// ```json
/// {"provider": {"type": "anthropic", "model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_API_KEY",
///               "thinking": "low"}}
/// ```
///
/// The key goes as `x-api-key`, with `anthropic-version: 2023-06-01` (a
/// `headers` entry of that name overrides it). The reply's settings are the
/// agent's own: `temperature` (at most 1; not sent while thinking),
/// `stop` and `max_tokens` (4,096 when the agent sets none: the API needs
/// one); `top_p` and `seed` are not sent.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AnthropicProvider {
    /// The API's address (`https://api.anthropic.com`); requests go to
    /// `<base_url>/v1/messages` (a `base_url` ending in `/v1` is taken too).
    pub base_url: String,
    /// The model's name, such as `claude-sonnet-4-5` (required).
    pub model: String,
    /// The API key, sent as `x-api-key`. Never shown in errors, logs or `Debug`.
    pub api_key: Option<String>,
    /// The environment variable that holds the API key, read when the
    /// agent is created (instead of `api_key`).
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request (`anthropic-beta`, say).
    pub headers: BTreeMap<String, String>,
    /// Bounds connecting, waiting for the answer to begin, and every
    /// silence within a streamed answer, in milliseconds.
    pub timeout_ms: u64,
    /// Tries after the first for a rate limit (429), an overload (529), a
    /// server error (5xx) or a failure to connect.
    pub max_retries: u32,
    /// Extended thinking: its budget of tokens, added to `max_tokens`.
    pub thinking: ThinkingLevel,
}

impl Default for AnthropicProvider {
    fn default() -> Self {
        AnthropicProvider {
            base_url: ANTHROPIC_BASE_URL.into(),
            model: String::new(),
            api_key: None,
            api_key_env: None,
            headers: BTreeMap::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            max_retries: DEFAULT_MAX_RETRIES,
            thinking: ThinkingLevel::Off,
        }
    }
}

impl std::fmt::Debug for AnthropicProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AnthropicProvider")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("api_key_env", &self.api_key_env)
            .field("headers", &redacted_headers(&self.headers))
            .field("timeout_ms", &self.timeout_ms)
            .field("max_retries", &self.max_retries)
            .field("thinking", &self.thinking)
            .finish()
    }
}

impl AnthropicProvider {
    /// The model `model` on Anthropic's API, with the default settings.
    pub fn new(model: impl Into<String>) -> Self {
        AnthropicProvider {
            model: model.into(),
            ..Self::default()
        }
    }

    /// Sets `thinking`.
    pub fn thinking(mut self, level: ThinkingLevel) -> Self {
        self.thinking = level;
        self
    }
}

connection_builders!(AnthropicProvider);

/// The keys of `{"type": "anthropic", ...}` and their rules.
pub(crate) const ANTHROPIC_KEYS: Settings = Settings {
    name: "anthropic provider",
    example: r#"{"type": "anthropic", "model": "claude-sonnet-4-5"}"#,
    keys: &[
        ("type", TYPE_RULE),
        ("base_url", BASE_URL_RULE),
        ("model", MODEL_REQUIRED_RULE),
        ("api_key", API_KEY_RULE),
        ("api_key_env", API_KEY_ENV_RULE),
        ("headers", HEADERS_RULE),
        ("timeout_ms", TIMEOUT_RULE),
        ("max_retries", MAX_RETRIES_RULE),
        ("thinking", THINKING_RULE),
    ],
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets() {
        let provider = AnthropicProvider::new("claude")
            .api_key("sk-ant-secret-123")
            .header("X-Api-Key", "hdr-secret-456");
        let shown = format!("{provider:?}");
        assert!(!shown.contains("sk-ant-secret-123"), "{shown}");
        assert!(!shown.contains("hdr-secret-456"), "{shown}");
        assert!(
            shown.contains("X-Api-Key") && shown.contains("[redacted]"),
            "{shown}"
        );
    }
}
