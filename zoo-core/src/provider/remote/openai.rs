//! The settings of an OpenAI-compatible provider (the `provider` config key
//! with `"type": "openai"`) and the rules every front door checks them by.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use super::{
    connection_builders, redacted_headers, API_KEY_ENV_RULE, API_KEY_RULE, BASE_URL_RULE,
    DEFAULT_MAX_RETRIES, DEFAULT_TIMEOUT_MS, HEADERS_RULE, MAX_RETRIES_RULE, TIMEOUT_RULE,
    TYPE_RULE,
};
use crate::error::{Error, Result};
use crate::settings::{describe, Rule, Settings};

/// Which request field carries the reply's token limit. OpenAI's newer
/// models take only `max_completion_tokens`; most other servers (llama.cpp,
/// vLLM, Ollama, LM Studio) read `max_tokens`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MaxTokensField {
    /// `max_tokens` (the default).
    #[default]
    MaxTokens,
    /// `max_completion_tokens`.
    MaxCompletionTokens,
}

impl MaxTokensField {
    /// The field's name in the request.
    pub fn as_str(self) -> &'static str {
        match self {
            MaxTokensField::MaxTokens => "max_tokens",
            MaxTokensField::MaxCompletionTokens => "max_completion_tokens",
        }
    }
}

/// An OpenAI-compatible Chat Completions endpoint: OpenAI itself,
/// llama.cpp's server, vLLM, Ollama, LM Studio, TGI, LiteLLM.
///
/// ```json
/// {"provider": {"type": "openai", "base_url": "http://127.0.0.1:8080/v1", "model": "smollm2",
///               "api_key_env": "OPENAI_API_KEY", "timeout_ms": 60000, "max_retries": 2}}
/// ```
///
/// The reply's sampling settings are the agent's own (`temperature`,
/// `top_p`, `seed`, `stop`, `max_tokens`); `context_size` is the server's
/// window as the history manager should assume it (0: 32 768).
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct OpenAiProvider {
    /// The API's base URL, up to and including its version
    /// (`https://api.openai.com/v1`); requests go to `<base_url>/chat/completions`.
    pub base_url: String,
    /// The model's name, sent as `model`; `None` leaves it out (llama.cpp's
    /// server serves one model and needs none).
    pub model: Option<String>,
    /// The API key, sent as `Authorization: Bearer <key>`. Never shown in
    /// errors, logs or `Debug`.
    pub api_key: Option<String>,
    /// The environment variable that holds the API key, read when the
    /// agent is created (instead of `api_key`).
    pub api_key_env: Option<String>,
    /// Extra HTTP headers sent with every request (values are never shown
    /// in `Debug`, they may hold credentials).
    pub headers: BTreeMap<String, String>,
    /// Bounds connecting, waiting for the answer to begin, and every
    /// silence within a streamed answer, in milliseconds (a long reply that
    /// keeps streaming is never cut).
    pub timeout_ms: u64,
    /// Tries after the first for a rate limit (429), a server error (5xx)
    /// or a failure to connect.
    pub max_retries: u32,
    /// Which field carries `max_tokens`.
    pub max_tokens_field: MaxTokensField,
}

impl Default for OpenAiProvider {
    fn default() -> Self {
        OpenAiProvider {
            base_url: String::new(),
            model: None,
            api_key: None,
            api_key_env: None,
            headers: BTreeMap::new(),
            timeout_ms: DEFAULT_TIMEOUT_MS,
            max_retries: DEFAULT_MAX_RETRIES,
            max_tokens_field: MaxTokensField::MaxTokens,
        }
    }
}

impl std::fmt::Debug for OpenAiProvider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let headers = redacted_headers(&self.headers);
        f.debug_struct("OpenAiProvider")
            .field("base_url", &self.base_url)
            .field("model", &self.model)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("api_key_env", &self.api_key_env)
            .field("headers", &headers)
            .field("timeout_ms", &self.timeout_ms)
            .field("max_retries", &self.max_retries)
            .field("max_tokens_field", &self.max_tokens_field)
            .finish()
    }
}

impl OpenAiProvider {
    /// A provider at `base_url` with the default settings.
    pub fn new(base_url: impl Into<String>) -> Self {
        OpenAiProvider {
            base_url: base_url.into(),
            ..Self::default()
        }
    }

    /// Sets `model`.
    pub fn model(mut self, model: impl Into<String>) -> Self {
        self.model = Some(model.into());
        self
    }

    /// Sets `max_tokens_field`.
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }
}

connection_builders!(OpenAiProvider);

/// The keys of `{"type": "openai", ...}` and their rules (the provider
/// table of `crate::provider` lists it under `"openai"`).
pub(crate) const OPENAI_KEYS: Settings = Settings {
    name: "openai provider",
    example: r#"{"type": "openai", "base_url": "http://127.0.0.1:8080/v1"}"#,
    keys: &[
        ("type", TYPE_RULE),
        ("base_url", BASE_URL_RULE),
        (
            "model",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
        ("api_key", API_KEY_RULE),
        ("api_key_env", API_KEY_ENV_RULE),
        ("headers", HEADERS_RULE),
        ("timeout_ms", TIMEOUT_RULE),
        ("max_retries", MAX_RETRIES_RULE),
        (
            "max_tokens_field",
            Rule::Custom {
                expected: r#""max_tokens" or "max_completion_tokens""#,
                check: check_max_tokens_field,
            },
        ),
    ],
};

fn check_max_tokens_field(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::String(s) if s == "max_tokens" || s == "max_completion_tokens" => Ok(()),
        other => Err(Error::config(
            key,
            format!(
                r#"expected "max_tokens" or "max_completion_tokens", got {}"#,
                describe(other)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn debug_never_shows_secrets() {
        let provider = OpenAiProvider::new("http://127.0.0.1:1/v1")
            .api_key("sk-secret-123")
            .header("X-Api-Key", "hdr-secret-456");
        let shown = format!("{provider:?}");
        assert!(!shown.contains("sk-secret-123"), "{shown}");
        assert!(!shown.contains("hdr-secret-456"), "{shown}");
        assert!(shown.contains("X-Api-Key"), "{shown}");
        assert!(shown.contains("[redacted]"), "{shown}");
    }
}
