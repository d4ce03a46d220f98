//! The settings of Google's Gemini API (the `provider` config key with
//! `"type": "gemini"`) and the rules every front door checks them by.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::{
    connection_builders, redacted_headers, ThinkingLevel, API_KEY_ENV_RULE, API_KEY_RULE,
    BASE_URL_RULE, DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, HEADERS_RULE, MAX_RETRIES_RULE,
    MODEL_REQUIRED_RULE, THINKING_RULE, TIMEOUT_RULE, TYPE_RULE,
};
use crate::settings::Settings;

/// The Gemini API, where requests go unless `base_url` says otherwise.
pub const GEMINI_BASE_URL: &str = "https://generativelanguage.googleapis.com";

/// Gemini, through Google's `streamGenerateContent` API.
///
/// ```json
/// {"provider": {"type": "gemini", "model": "gemini-2.5-flash", "api_key_env": "GEMINI_API_KEY"}}
/// ```
///
/// The key goes as `x-goog-api-key` (never in the URL). The reply's
/// settings are the agent's own: `temperature`, `top_p`, `seed`, `stop`
/// and `max_tokens` (as `maxOutputTokens`).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct GeminiProvider {
    /// The API's address (`https://generativelanguage.googleapis.com`);
    /// requests go to `<base_url>/v1beta/models/<model>:streamGenerateContent?alt=sse`
    /// (a `base_url` that ends in its version, `/v1beta` or `/v1`, is taken too).
    pub base_url: String,
    /// The model's name, such as `gemini-2.5-flash` (required; a
    /// `models/` prefix is allowed).
    pub model: String,
    /// The API key, sent as `x-goog-api-key`. Never shown in errors, logs
    /// or `Debug`.
    pub api_key: Option<String>,
    /// The environment variable that holds the API key, read when the
    /// agent is created (instead of `api_key`).
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request.
    pub headers: BTreeMap<String, String>,
    /// Bounds connecting, waiting for the answer to begin, and every
    /// silence within a streamed answer, in milliseconds.
    pub timeout_ms: u64,
    /// Tries after the first for a rate limit (429), a server error (5xx)
    /// or a failure to connect.
    pub max_retries: u32,
    /// Thinking: a budget of thinking tokens (`thinkingBudget`, added to
    /// `max_tokens`), and the thoughts returned apart from the text.
    pub thinking: ThinkingLevel,
}

impl Default for GeminiProvider {
    fn default() -> Self {
        GeminiProvider {
            base_url: GEMINI_BASE_URL.into(),
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

impl std::fmt::Debug for GeminiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiProvider")
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

impl GeminiProvider {
    /// The model `model` on the Gemini API, with the default settings.
    pub fn new(model: impl Into<String>) -> Self {
        GeminiProvider {
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

connection_builders!(GeminiProvider);

/// The keys of `{"type": "gemini", ...}` and their rules.
pub(crate) const GEMINI_KEYS: Settings = Settings {
    name: "gemini provider",
    example: r#"{"type": "gemini", "model": "gemini-2.5-flash"}"#,
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
        let provider = GeminiProvider::new("gemini-2.5-flash")
            .api_key("AIza-secret-123")
            .header("X-Goog-User-Project", "hdr-secret-456");
        let shown = format!("{provider:?}");
        assert!(!shown.contains("AIza-secret-123"), "{shown}");
        assert!(!shown.contains("hdr-secret-456"), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}
