//! What a host backend receives for one reply: [`HostRequest`], the same
//! JSON in every language (`request_json` in C, a `BackendRequest` in
//! Python, a camelCase object in Node).

use std::time::Instant;

use serde::{Deserialize, Serialize};

use crate::backend::remote::ThinkingLevel;
use crate::backend::GenerateRequest;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::message::Message;
use crate::tools::ToolChoice;
use crate::tools::ToolDefinition;

/// One reply for a host backend to generate:
///
/// ```json
/// {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Weather in Paris?"}],
///  "tools": [{"name": "get_weather", "description": "...", "parameters": {"type": "object", ...}}],
///  "tool_choice": "auto", "max_tokens": 256, "max_calls": 1, "stop": [],
///  "sampling": {"temperature": 0.7, "top_p": 0.95, "top_k": 40, "min_p": 0.05, "repeat_penalty": 1.0, "seed": null},
///  "thinking": "off", "stable_prefix": 1, "time_left_ms": null}
/// ```
///
/// The messages are the history as the engine keeps it (`role`,
/// `content`, and where they apply `tool_calls` with `id`, `name` and
/// `arguments`, `tool_call_id`, `name`, `is_error`, `images`), system
/// prompt first; tool results answer calls by id.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HostRequest {
    /// The conversation to answer, system prompt first.
    pub messages: Vec<Message>,
    /// The tools the model may call; empty when it may call none.
    pub tools: Vec<ToolDefinition>,
    /// `auto`, `required` (the reply must call a tool), `none`, or a tool's
    /// name (the reply must call that tool).
    pub tool_choice: ToolChoice,
    /// The most tokens the reply may have; `null` for no limit but the
    /// model's own.
    pub max_tokens: Option<u32>,
    /// The most tool calls the reply may hold (at least 1).
    pub max_calls: u32,
    /// Strings that end the reply. The engine also cuts the reply at the
    /// first one it sees, so a host that ignores them still stops there.
    pub stop: Vec<String>,
    /// The agent's sampling settings.
    pub sampling: Sampling,
    /// How much the model should think first (the `host` provider's
    /// `thinking` key; `off` by default).
    pub thinking: ThinkingLevel,
    /// Leading messages unchanged since the previous request: a host that
    /// caches prompts may reuse them; 0 after the history was edited.
    pub stable_prefix: usize,
    /// Milliseconds left before the chat's time limit (`max_duration_ms`)
    /// ends the reply; `null` without a limit.
    pub time_left_ms: Option<u64>,
}

/// The sampling settings of the agent's config, for the host to pass on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Sampling {
    /// Randomness; 0 is greedy.
    pub temperature: f32,
    /// Nucleus sampling.
    pub top_p: f32,
    /// Top-k sampling; 0 is off.
    pub top_k: u32,
    /// Min-p sampling; 0 is off.
    pub min_p: f32,
    /// Repetition penalty; 1 is off.
    pub repeat_penalty: f32,
    /// The random seed; `null` for a random one.
    pub seed: Option<u32>,
}

impl Sampling {
    /// The sampling settings of `config`.
    pub fn of(config: &Config) -> Self {
        Sampling {
            temperature: config.temperature,
            top_p: config.top_p,
            top_k: config.top_k,
            min_p: config.min_p,
            repeat_penalty: config.repeat_penalty,
            seed: config.seed,
        }
    }
}

impl HostRequest {
    /// The request for the engine's `request`, with the agent's sampling
    /// settings and thinking level.
    pub(crate) fn new(
        request: &GenerateRequest<'_>,
        sampling: &Sampling,
        thinking: ThinkingLevel,
    ) -> Self {
        let time_left_ms = request.deadline.map(|deadline| {
            let left = deadline.saturating_duration_since(Instant::now());
            u64::try_from(left.as_millis()).unwrap_or(u64::MAX)
        });
        HostRequest {
            messages: request.messages.to_vec(),
            tools: request.tools.to_vec(),
            tool_choice: request.tool_choice.clone(),
            max_tokens: request.max_tokens,
            max_calls: request.max_calls,
            stop: request.stop.to_vec(),
            sampling: sampling.clone(),
            thinking,
            stable_prefix: request.cache_hint.stable_prefix,
            time_left_ms,
        }
    }

    /// The request as JSON text, as C, Python and Node receive it.
    pub fn to_json(&self) -> String {
        // Messages, tools and settings are plain data: this cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// Reads a request from JSON (a test double that records them, say).
    pub fn from_json(json: &str) -> Result<Self> {
        serde_json::from_str(json).map_err(|e| Error::InvalidJson(format!("host request: {e}")))
    }
}
