//! The `provider` config key: what an agent runs on when it is not a local
//! GGUF model. Absent, the agent loads `model_path`; present, it is an
//! object tagged by `type`, e.g. the mock, a scripted model for testing
//! agents without a model file:
//!
//! ```json
//! {"provider": {"type": "mock", "replies": ["Hello!", {"error": "boom"}], "piece_delay_ms": 5}}
//! ```
//!
//! or an OpenAI-compatible server ([`OpenAiProvider`]), Anthropic
//! ([`AnthropicProvider`]) or Gemini ([`GeminiProvider`]), or settings for
//! a backend written in the host language ([`HostProvider`], whose object
//! is given beside the config):
//!
//! ```json
//! {"provider": {"type": "openai", "base_url": "http://127.0.0.1:8080/v1", "api_key_env": "OPENAI_API_KEY"}}
//! {"provider": {"type": "anthropic", "model": "claude-sonnet-4-5", "api_key_env": "ANTHROPIC_API_KEY"}}
//! {"provider": {"type": "gemini", "model": "gemini-2.5-flash", "api_key_env": "GEMINI_API_KEY"}}
//! {"provider": {"type": "host", "thinking": "low"}}
//! ```
//!
//! Each type has a table of keys and rules (below), which the config reader
//! checks before anything is parsed, so that a bad value is
//! `invalid_config` naming its key (`provider.piece_delay_ms`) in the same
//! words as every other config key, in every language.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

pub mod host;
pub mod mock;
pub mod remote;

pub use host::HostProvider;
pub use mock::{MockProvider, MockReply};
pub use remote::{AnthropicProvider, GeminiProvider, OpenAiProvider};

use crate::error::{Error, Result};
use crate::settings::{describe, Rule, Settings};
use host::HOST_KEYS;
use remote::{ANTHROPIC_KEYS, GEMINI_KEYS, OPENAI_KEYS};

/// The backend an agent runs on instead of a local model (the `provider`
/// config key). Its JSON form is an object tagged by `type`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum Provider {
    /// `{"type": "mock", ...}`: a scripted model (see [`MockProvider`]).
    Mock(MockProvider),
    /// `{"type": "openai", "base_url": ...}`: an OpenAI-compatible server
    /// (see [`OpenAiProvider`]).
    #[serde(rename = "openai")]
    OpenAi(OpenAiProvider),
    /// `{"type": "anthropic", "model": ...}`: Anthropic's Messages API
    /// (see [`AnthropicProvider`]).
    Anthropic(AnthropicProvider),
    /// `{"type": "gemini", "model": ...}`: the Gemini API (see
    /// [`GeminiProvider`]).
    Gemini(GeminiProvider),
    /// `{"type": "host", ...}`: the settings of a backend written in the
    /// host language, whose object is given beside the config (see
    /// [`HostProvider`]).
    Host(HostProvider),
}

impl Provider {
    /// The `type` of this provider, as JSON spells it.
    pub fn type_name(&self) -> &'static str {
        match self {
            Provider::Mock(_) => "mock",
            Provider::OpenAi(_) => "openai",
            Provider::Anthropic(_) => "anthropic",
            Provider::Gemini(_) => "gemini",
            Provider::Host(_) => "host",
        }
    }
}

impl From<MockProvider> for Provider {
    fn from(mock: MockProvider) -> Self {
        Provider::Mock(mock)
    }
}

impl From<OpenAiProvider> for Provider {
    fn from(openai: OpenAiProvider) -> Self {
        Provider::OpenAi(openai)
    }
}

impl From<AnthropicProvider> for Provider {
    fn from(anthropic: AnthropicProvider) -> Self {
        Provider::Anthropic(anthropic)
    }
}

impl From<GeminiProvider> for Provider {
    fn from(gemini: GeminiProvider) -> Self {
        Provider::Gemini(gemini)
    }
}

impl From<HostProvider> for Provider {
    fn from(host: HostProvider) -> Self {
        Provider::Host(host)
    }
}

/// Every provider type and its keys, in the order errors list them. A new
/// provider is a variant of [`Provider`] and a line here.
const TYPES: &[(&str, &Settings)] = &[
    ("mock", &MOCK_KEYS),
    ("openai", &OPENAI_KEYS),
    ("anthropic", &ANTHROPIC_KEYS),
    ("gemini", &GEMINI_KEYS),
    ("host", &HOST_KEYS),
];

/// The `type` key, which every provider table lists first (it was checked
/// before the table was chosen).
const TYPE_KEY: Rule = Rule::Choice {
    expected: "a provider type",
    parse: |_| Ok(()),
};

const MOCK_KEYS: Settings = Settings {
    name: "mock provider",
    example: r#"{"type": "mock", "replies": ["Hello!"]}"#,
    keys: &[
        ("type", TYPE_KEY),
        (
            "replies",
            Rule::Custom {
                expected: r#"an array of strings and {"error": "message"} objects"#,
                check: check_replies,
            },
        ),
        ("piece_delay_ms", Rule::whole(0, 60_000, "")),
    ],
};

/// What `provider` accepts, in words.
pub(crate) const EXPECTED: &str =
    r#"null or an object such as {"type": "mock", "replies": ["Hello!"]}"#;

/// Checks the value of the `provider` key (`key`): null, or an object whose
/// `type` is known and whose other keys follow that type's rules. Errors
/// name the nested key (`provider.type`, `provider.replies[2]`).
pub(crate) fn check_json(key: &str, value: &Json) -> Result<()> {
    let object = match value {
        Json::Null => return Ok(()),
        Json::Object(object) => object,
        other => {
            return Err(Error::config(
                key,
                format!("expected {EXPECTED}, got {}", describe(other)),
            ))
        }
    };
    let type_key = format!("{key}.type");
    let settings = match object.get("type") {
        Some(Json::String(name)) => TYPES
            .iter()
            .find(|(known, _)| known == name)
            .map(|(_, settings)| *settings),
        _ => None,
    };
    let Some(settings) = settings else {
        let got = object
            .get("type")
            .map_or_else(|| "nothing".into(), describe);
        return Err(Error::config(
            type_key,
            format!("expected a provider type ({}), got {got}", type_names()),
        ));
    };
    settings.check_nested(key, object)
}

/// The known types as an error lists them: `"mock"`, `"mock" or "openai"`.
fn type_names() -> String {
    let names: Vec<String> = TYPES
        .iter()
        .map(|(name, _)| format!("\"{name}\""))
        .collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
        _ => names.concat(),
    }
}

/// The mock's `replies`: an array whose items [`MockReply`] reads.
fn check_replies(key: &str, value: &Json) -> Result<()> {
    let Json::Array(items) = value else {
        return Err(Error::config(
            key,
            format!(
                r#"expected an array of strings and {{"error": "message"}} objects, got {}"#,
                describe(value)
            ),
        ));
    };
    for (i, item) in items.iter().enumerate() {
        MockReply::from_json(item)
            .map_err(|reason| Error::config(format!("{key}[{i}]"), reason))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::mock::MockBackend;
    use crate::config::Config;

    fn error_of(provider: &str) -> String {
        Config::from_json(&format!(r#"{{"provider": {provider}}}"#))
            .unwrap_err()
            .to_string()
    }

    #[test]
    fn a_mock_provider_reads_and_writes_the_same_json() {
        let config = Config::from_json(
            r#"{"provider": {"type": "mock", "replies": ["Hi there", {"error": "boom"}], "piece_delay_ms": 5}}"#,
        )
        .unwrap();
        let want = MockProvider::new(["Hi there"]).piece_delay_ms(5);
        let want = MockProvider {
            replies: vec![
                want.replies[0].clone(),
                MockReply::Fail(Error::InferenceFailed("boom".into())),
            ],
            ..want
        };
        assert_eq!(config.provider, Some(Provider::Mock(want)));
        let json = serde_json::to_value(&config).unwrap();
        assert_eq!(
            json["provider"],
            serde_json::json!({"type": "mock", "replies": ["Hi there", {"error": "boom"}], "piece_delay_ms": 5})
        );
        // Missing keys keep their defaults.
        let config = Config::from_json(r#"{"provider": {"type": "mock"}}"#).unwrap();
        assert_eq!(
            config.provider,
            Some(Provider::Mock(MockProvider::default()))
        );
    }

    #[test]
    fn bad_providers_name_the_nested_key() {
        for (provider, want) in [
            (
                r#"{"type": "gpt"}"#,
                r#"invalid config `provider.type`: expected a provider type ("mock", "openai", "anthropic", "gemini" or "host"), got "gpt""#,
            ),
            (
                r#"{"replies": []}"#,
                r#"invalid config `provider.type`: expected a provider type ("mock", "openai", "anthropic", "gemini" or "host"), got nothing"#,
            ),
            (
                r#"{"type": 3}"#,
                r#"invalid config `provider.type`: expected a provider type ("mock", "openai", "anthropic", "gemini" or "host"), got 3"#,
            ),
            (
                r#""mock""#,
                r#"invalid config `provider`: expected null or an object such as {"type": "mock", "replies": ["Hello!"]}, got "mock""#,
            ),
            (
                r#"{"type": "mock", "replies": ["ok", 3]}"#,
                r#"invalid config `provider.replies[1]`: expected a string or {"error": "message"}, got 3"#,
            ),
            (
                r#"{"type": "mock", "replies": [{"error": 5}]}"#,
                r#"invalid config `provider.replies[0]`: expected a string or {"error": "message"}, got an "error" of 5"#,
            ),
            (
                r#"{"type": "mock", "replies": [{"eror": "x"}]}"#,
                r#"invalid config `provider.replies[0]`: expected a string or {"error": "message"}, got an object with the key "eror""#,
            ),
            (
                r#"{"type": "mock", "replies": "hi"}"#,
                r#"invalid config `provider.replies`: expected an array of strings and {"error": "message"} objects, got "hi""#,
            ),
            (
                r#"{"type": "mock", "piece_delay_ms": -1}"#,
                "invalid config `provider.piece_delay_ms`: expected a whole number from 0 to 60000, got -1",
            ),
            (
                r#"{"type": "mock", "delay": 1}"#,
                "invalid config `provider.delay`: unknown key; the mock provider keys are `type`, `replies`, `piece_delay_ms`",
            ),
        ] {
            assert_eq!(error_of(provider), want, "{provider}");
        }
    }

    #[test]
    fn agent_create_runs_on_the_mock_provider() {
        use crate::agent::{Agent, ChatOptions};
        let agent = Agent::create(
            Config::default().provider(
                MockProvider::new([
                    MockReply::text("Hi there"),
                    MockReply::Fail(Error::InferenceFailed("boom".into())),
                ])
                .piece_delay_ms(1),
            ),
        )
        .unwrap();
        let response = agent.chat("hello", ChatOptions::new()).wait().unwrap();
        assert_eq!(response.text, "Hi there");
        let error = agent.chat("again", ChatOptions::new()).wait().unwrap_err();
        assert_eq!(error, Error::InferenceFailed("boom".into()));
        let response = agent.chat("third", ChatOptions::new()).wait().unwrap();
        assert_eq!(response.text, "echo: third");

        // A backend given in code leaves no room for a provider.
        let error = Agent::with_backend(
            MockBackend::new(),
            Config::default().provider(MockProvider::default()),
        )
        .unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid config `provider`: an agent on a backend given in code takes no provider (got `mock`)"
        );
        // Neither a provider nor a model.
        let error = Agent::create(Config::default()).unwrap_err();
        assert!(matches!(&error, Error::InvalidConfig { .. }), "{error}");
    }

    #[test]
    fn rust_callers_are_checked_in_the_same_words() {
        let config = Config::default().provider(MockProvider::new(["hi"]).piece_delay_ms(70_000));
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "invalid config `provider.piece_delay_ms`: expected a whole number from 0 to 60000, got 70000"
        );
        let config = Config::new("model.gguf").provider(MockProvider::default());
        assert_eq!(
            config.validate().unwrap_err().to_string(),
            "invalid config `provider`: `model_path` and `provider` cannot both be given \
             (an agent runs on a local model or on a provider)"
        );
    }
}
