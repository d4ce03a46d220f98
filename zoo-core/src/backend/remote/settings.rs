//! The settings of an OpenAI-compatible provider (the `provider` config key
//! with `"type": "openai"`), the rules every front door checks them by, and
//! a `Debug` that never shows a secret.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::config::{describe, Rule, Settings};
use crate::error::{Error, Result};

/// The default `timeout_ms`: as long as the official OpenAI clients wait.
pub const DEFAULT_TIMEOUT_MS: u64 = 600_000;
/// The default `max_retries`.
pub const DEFAULT_MAX_RETRIES: u32 = 2;

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
        let headers: BTreeMap<&str, &str> = self
            .headers
            .keys()
            .map(|name| (name.as_str(), "[redacted]"))
            .collect();
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

    /// Sets `max_tokens_field`.
    pub fn max_tokens_field(mut self, field: MaxTokensField) -> Self {
        self.max_tokens_field = field;
        self
    }

    /// The timeout as a duration.
    pub(crate) fn timeout(&self) -> Duration {
        Duration::from_millis(self.timeout_ms)
    }

    /// The API key: `api_key`, or the variable named by `api_key_env`.
    /// Both given, or a variable that is not set, is `invalid_config`
    /// naming the key (`provider.api_key_env`).
    pub(crate) fn resolve_api_key(&self) -> Result<Option<String>> {
        match (&self.api_key, &self.api_key_env) {
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
}

/// The keys of `{"type": "openai", ...}` and their rules (the provider
/// table of `crate::provider` lists it under `"openai"`).
pub(crate) const OPENAI_KEYS: Settings = Settings {
    name: "openai provider",
    example: r#"{"type": "openai", "base_url": "http://127.0.0.1:8080/v1"}"#,
    keys: &[
        (
            "type",
            Rule::Choice {
                expected: "a provider type",
                parse: |_| Ok(()),
            },
        ),
        (
            "base_url",
            Rule::Custom {
                expected: "an http:// or https:// URL such as http://127.0.0.1:8080/v1",
                check: check_base_url,
            },
        ),
        (
            "model",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
        (
            "api_key",
            Rule::Custom {
                expected: "a non-empty string or null",
                check: check_secret,
            },
        ),
        (
            "api_key_env",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
        (
            "headers",
            Rule::Custom {
                expected: "an object of header names and string values",
                check: check_headers,
            },
        ),
        ("timeout_ms", Rule::whole(1, 86_400_000, "")),
        ("max_retries", Rule::whole(0, 100, "")),
        (
            "max_tokens_field",
            Rule::Custom {
                expected: r#""max_tokens" or "max_completion_tokens""#,
                check: check_max_tokens_field,
            },
        ),
    ],
};

fn check_base_url(key: &str, value: &Json) -> Result<()> {
    const EXPECTED: &str = "an http:// or https:// URL such as http://127.0.0.1:8080/v1";
    match value {
        Json::String(url) if url.is_empty() => Err(Error::config(
            key,
            format!("is required: {EXPECTED}, the address of the server's API"),
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
                            format!("expected {EXPECTED}, got {} ({e})", describe(value)),
                        )),
                    }
                }
                _ => Err(Error::config(
                    key,
                    format!("expected {EXPECTED}, got {}", describe(value)),
                )),
            }
        }
        other => Err(Error::config(
            key,
            format!("expected {EXPECTED}, got {}", describe(other)),
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

    #[test]
    fn the_key_comes_from_one_place() {
        let both = OpenAiProvider::new("http://x/v1")
            .api_key("k")
            .api_key_env("PATH");
        assert_eq!(
            both.resolve_api_key().unwrap_err().to_string(),
            "invalid config `provider.api_key_env`: give `api_key` or `api_key_env`, not both"
        );
        let missing = OpenAiProvider::new("http://x/v1").api_key_env("ZOO_SURELY_UNSET_VARIABLE_9");
        assert_eq!(
            missing.resolve_api_key().unwrap_err().to_string(),
            "invalid config `provider.api_key_env`: the environment variable \
             `ZOO_SURELY_UNSET_VARIABLE_9` is not set"
        );
        assert_eq!(
            OpenAiProvider::new("http://x/v1")
                .api_key("k")
                .resolve_api_key()
                .unwrap(),
            Some("k".to_string())
        );
    }
}
