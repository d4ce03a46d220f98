//! The `host` provider: the settings of a backend written in the host
//! language ([`crate::backend::host::HostBackend`]).

use serde::{Deserialize, Serialize};

use super::remote::ThinkingLevel;
use crate::settings::Settings;

/// The `host` provider: settings of an agent whose backend is given as an
/// object of the host language (the object itself is passed beside the
/// config, never in it). Optional:
///
/// ```json
/// {"provider": {"type": "host", "thinking": "low"}}
/// ```
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostProvider {
    /// The thinking level each request carries (`off` by default).
    pub thinking: ThinkingLevel,
}

/// The keys of `{"type": "host", ...}` and their rules.
pub(crate) const HOST_KEYS: Settings = Settings {
    name: "host provider",
    example: r#"{"type": "host", "thinking": "low"}"#,
    keys: &[
        ("type", super::remote::TYPE_RULE),
        ("thinking", super::remote::THINKING_RULE),
    ],
};
