//! Agent configuration: every config key (the README's configuration
//! table), its default and its checks.

use serde::{Deserialize, Serialize};
use serde_json::Value as Json;

use crate::context::{ContextStrategy, SummarizerConfig};
use crate::cpu::CpuVariant;
use crate::error::{Error, Result};
use crate::provider::{self, Provider};
use crate::settings::{describe, read_settings, Given, Rule, Settings, CPU_VARIANT, GPU_LAYERS};
use crate::template::TemplateChoice;
use crate::tools::builtin::{BuiltinToolsConfig, BUILTIN_TOOL_NAMES};
pub use crate::tools::ToolChoice;

/// How many queued `steer()` or `follow_up()` messages a chat takes at once.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum QueueMode {
    /// One message per reply, in order.
    #[default]
    OneAtATime,
    /// Every message queued so far, joined into one.
    All,
}

impl QueueMode {
    /// From its config name, `one_at_a_time` or `all`.
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "one_at_a_time" => Some(QueueMode::OneAtATime),
            "all" => Some(QueueMode::All),
            _ => None,
        }
    }

    /// Checks the value of the config key `key`.
    fn check(key: &str, value: &str) -> Result<()> {
        match Self::parse(value) {
            Some(_) => Ok(()),
            None => Err(Error::config(
                key,
                format!("expected one_at_a_time or all, got \"{value}\""),
            )),
        }
    }
}

/// How the tool calls of one model reply run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolExecution {
    /// One after another, in call order (the default).
    #[default]
    Sequential,
    /// All at once; results join the history in call order.
    Parallel,
    /// At most this many at once (`{"batched": N}`).
    Batched(u32),
}

const U32_MAX_U64: u64 = u32::MAX as u64;

/// Most tool calls one reply of a local model may hold under `parallel` or
/// `batched` execution (see [`ToolExecution::calls_per_reply`]); a bound,
/// so that a small model cannot repeat calls until the token limit.
pub const MAX_CALLS_PER_REPLY: u32 = 8;

impl ToolExecution {
    /// How many calls may run at once.
    pub fn width(self) -> usize {
        match self {
            ToolExecution::Sequential => 1,
            ToolExecution::Parallel => usize::MAX,
            ToolExecution::Batched(n) => n.max(1) as usize,
        }
    }

    /// How many tool calls one model reply may hold: one when they would
    /// run one at a time (the model reads each result before its next
    /// call, which small models need), up to [`MAX_CALLS_PER_REPLY`] when
    /// they run together. A backend that constrains calls with a grammar
    /// (a local model) admits this many; a remote provider decides itself.
    pub fn calls_per_reply(self) -> u32 {
        if self.width() == 1 {
            1
        } else {
            MAX_CALLS_PER_REPLY
        }
    }

    /// What `tool_execution` accepts.
    const EXPECTED: &'static str = r#""sequential", "parallel" or {"batched": N} with N from 1"#;

    /// Checks the value of the config key `key`.
    fn check_json(key: &str, value: &Json) -> Result<()> {
        let batched = value
            .as_object()
            .filter(|o| o.len() == 1)
            .and_then(|o| o.get("batched"));
        match (value.as_str(), batched) {
            (Some("sequential" | "parallel"), _) => Ok(()),
            (_, Some(n)) => match n.as_u64() {
                Some(1..=U32_MAX_U64) => Ok(()),
                _ => Err(Error::config(
                    format!("{key}.batched"),
                    format!(
                        "expected a whole number from 1 to {U32_MAX_U64}, got {}",
                        describe(n)
                    ),
                )),
            },
            _ => Err(Error::config(
                key,
                format!("expected {}, got {}", Self::EXPECTED, describe(value)),
            )),
        }
    }
}

/// Everything an agent is created with. Keys and JSON names are the same in
/// every language (camelCase in Node). Unknown keys are rejected.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Config {
    /// Path of the GGUF model file (not needed with a shared `Model` or a `provider`).
    pub model_path: Option<String>,
    /// Context window in tokens; 0 uses the model's trained context.
    pub context_size: u32,
    /// Tokens decoded per llama.cpp batch.
    pub batch_size: u32,
    /// CPU threads for generating tokens; 0 (the default) follows the cores
    /// that are free: every core on an idle machine, fewer when other
    /// processes or other agents of this process are busy.
    pub threads: u32,
    /// CPU threads for prompt batches; 0 means the same as `threads`.
    pub threads_batch: u32,
    /// When old turns leave a full window, move the cached keys and values
    /// of what stays into place instead of decoding it again (true by
    /// default). Approximate, like llama.cpp's own context shift: the moved
    /// keys are re-rotated, not recomputed, so output can differ slightly
    /// from a fresh decode. Models whose cache cannot shift decode again.
    pub context_shift: bool,
    /// Layers offloaded to the GPU (needs the `cuda` feature); -1 offloads all.
    pub gpu_layers: i32,
    /// llama.cpp's CPU variant (`haswell`, `zen4`, `x64`, ...); `None` (the
    /// default) loads the best one this CPU and OS allow, or the one
    /// `ZOO_CPU_VARIANT` names. A process runs one: the first model loaded
    /// chooses (see [`crate::cpu`]).
    pub cpu_variant: Option<CpuVariant>,
    /// Sampling seed; `None` picks a random one.
    pub seed: Option<u32>,
    /// Sampling temperature; 0 is greedy.
    pub temperature: f32,
    /// Nucleus sampling threshold in (0, 1].
    pub top_p: f32,
    /// Keep only the k most likely tokens; 0 disables.
    pub top_k: u32,
    /// Drop tokens below this fraction of the best token's probability.
    pub min_p: f32,
    /// Penalty for repeated tokens; 1.0 disables.
    pub repeat_penalty: f32,
    /// Tokens per reply; `None` means until the model stops or the context is full.
    pub max_tokens: Option<u32>,
    /// Strings that end a reply (not included in it).
    pub stop: Vec<String>,
    /// The system prompt, kept through pruning.
    pub system_prompt: Option<String>,
    /// Which chat template renders the conversation.
    pub template: TemplateChoice,
    /// Default tool choice for chats that do not set one.
    pub tool_choice: ToolChoice,
    /// Model replies with tool calls allowed in one chat before it ends as `tool_limit`.
    pub max_tool_iterations: u32,
    /// Failed attempts at a tool allowed after the first, before `tool_retries_exhausted`.
    pub max_tool_retries: u32,
    /// Model replies a chat may take, follow-ups included, before it ends
    /// with stop reason `limit`; 0 for no limit. The default, 50, stops a
    /// runaway and no real task (a chat's tool loop ends at
    /// `max_tool_iterations` well before it).
    pub max_turns: u32,
    /// Prompt plus completion tokens a chat may use over its replies; 0
    /// (the default) for no limit.
    pub max_total_tokens: u64,
    /// Wall-clock milliseconds a chat may run; 0 (the default) for no limit.
    pub max_duration_ms: u64,
    /// How the tool calls of one reply run: `sequential` (the default),
    /// `parallel` or `{"batched": N}`.
    pub tool_execution: ToolExecution,
    /// How many `steer()` messages join the conversation before a reply.
    pub steering_mode: QueueMode,
    /// How many `follow_up()` messages start a new round at once.
    pub follow_up_mode: QueueMode,
    /// What the agent runs on instead of a local model (`None`: the model
    /// at `model_path`), e.g. the scripted mock for testing an agent
    /// without a model file.
    pub provider: Option<Provider>,
    /// How the history is fitted into the window: `fifo` (the default)
    /// drops the oldest turns; `{"compact": {...}}` runs the compaction
    /// cascade (see [`crate::context::compact`]).
    pub context_strategy: ContextStrategy,
    /// A tool result longer than this many tokens keeps only its head and
    /// tail, with a marker, before it enters the history (0, the default:
    /// results stay whole); with a `summarizer`, its summary instead.
    pub max_tool_result_tokens: u32,
    /// A model that writes summaries: level 2 of the `compact` cascade and
    /// tool results over `max_tool_result_tokens` are summarized by it
    /// (`None`, the default: one line per call, and head and tail). See
    /// [`SummarizerConfig`].
    pub summarizer: Option<SummarizerConfig>,
    /// The SQLite file sessions are kept in (created if missing); with it,
    /// every committed message is written there as the chat goes.
    pub session_store: Option<String>,
    /// The session to continue (or start, if the store has no such id);
    /// `None` with a `session_store` starts a new session with a fresh id.
    pub session: Option<String>,
    /// Keep the session's KV cache in a file beside the store when the
    /// agent closes, so the next agent on the session decodes only what is
    /// new (true by default; local models only).
    pub session_snapshot: bool,
    /// Folders of skills (`<folder>/<skill>/SKILL.md`); a later folder's
    /// skill replaces an earlier one of the same name. With any, the system
    /// prompt lists them and the `load_skill` tool loads one.
    pub skills: Vec<String>,
    /// Built-in tools to register at start (`{"tools": [...], "workspace":
    /// "...", "bash_deny": [...]}`), confined to the workspace.
    pub builtin_tools: Option<BuiltinToolsConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            model_path: None,
            context_size: 4096,
            batch_size: 512,
            threads: 0,
            threads_batch: 0,
            context_shift: true,
            gpu_layers: 0,
            cpu_variant: None,
            seed: None,
            temperature: 0.7,
            top_p: 0.95,
            top_k: 40,
            min_p: 0.05,
            repeat_penalty: 1.0,
            max_tokens: None,
            stop: Vec::new(),
            system_prompt: None,
            template: TemplateChoice::Auto,
            tool_choice: ToolChoice::Auto,
            max_tool_iterations: 10,
            max_tool_retries: 2,
            max_turns: 50,
            max_total_tokens: 0,
            max_duration_ms: 0,
            tool_execution: ToolExecution::Sequential,
            steering_mode: QueueMode::OneAtATime,
            follow_up_mode: QueueMode::OneAtATime,
            provider: None,
            context_strategy: ContextStrategy::Fifo,
            max_tool_result_tokens: 0,
            summarizer: None,
            session_store: None,
            session: None,
            session_snapshot: true,
            skills: Vec::new(),
            builtin_tools: None,
        }
    }
}

macro_rules! setters {
    ($($(#[$doc:meta])* $name:ident: $ty:ty),* $(,)?) => {
        $( $(#[$doc])* pub fn $name(mut self, value: $ty) -> Self { self.$name = value; self } )*
    };
}

impl Config {
    /// A default configuration for the model at `path`.
    pub fn new(model_path: impl Into<String>) -> Self {
        Config {
            model_path: Some(model_path.into()),
            ..Config::default()
        }
    }

    setters! {
        /// Sets `context_size`.
        context_size: u32,
        /// Sets `batch_size`.
        batch_size: u32,
        /// Sets `threads`.
        threads: u32,
        /// Sets `threads_batch`.
        threads_batch: u32,
        /// Sets `context_shift`.
        context_shift: bool,
        /// Sets `gpu_layers`.
        gpu_layers: i32,
        /// Sets `cpu_variant`.
        cpu_variant: Option<CpuVariant>,
        /// Sets `temperature`.
        temperature: f32,
        /// Sets `top_p`.
        top_p: f32,
        /// Sets `top_k`.
        top_k: u32,
        /// Sets `min_p`.
        min_p: f32,
        /// Sets `repeat_penalty`.
        repeat_penalty: f32,
        /// Sets `template`.
        template: TemplateChoice,
        /// Sets `tool_choice`.
        tool_choice: ToolChoice,
        /// Sets `max_tool_iterations`.
        max_tool_iterations: u32,
        /// Sets `max_tool_retries`.
        max_tool_retries: u32,
        /// Sets `max_turns`.
        max_turns: u32,
        /// Sets `max_total_tokens`.
        max_total_tokens: u64,
        /// Sets `max_duration_ms`.
        max_duration_ms: u64,
        /// Sets `tool_execution`.
        tool_execution: ToolExecution,
        /// Sets `steering_mode`.
        steering_mode: QueueMode,
        /// Sets `follow_up_mode`.
        follow_up_mode: QueueMode,
        /// Sets `stop`.
        stop: Vec<String>,
        /// Sets `context_strategy`.
        context_strategy: ContextStrategy,
        /// Sets `max_tool_result_tokens`.
        max_tool_result_tokens: u32,
        /// Sets `session_snapshot`.
        session_snapshot: bool,
        /// Sets `skills`.
        skills: Vec<String>,
        /// Sets `builtin_tools`.
        builtin_tools: Option<BuiltinToolsConfig>,
        /// Sets `summarizer`.
        summarizer: Option<SummarizerConfig>,
    }

    /// Sets `seed`.
    pub fn seed(mut self, seed: u32) -> Self {
        self.seed = Some(seed);
        self
    }

    /// Sets `max_tokens`.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Sets `system_prompt`.
    pub fn system_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.system_prompt = Some(prompt.into());
        self
    }

    /// Sets `provider`: what the agent runs on instead of a local model,
    /// e.g. `Config::default().provider(MockProvider::new(["Hello!"]))`.
    pub fn provider(mut self, provider: impl Into<Provider>) -> Self {
        self.provider = Some(provider.into());
        self
    }

    /// Sets `session_store`: the SQLite file the conversation is kept in.
    pub fn session_store(mut self, path: impl Into<String>) -> Self {
        self.session_store = Some(path.into());
        self
    }

    /// Sets `session`: the id of the session to continue or start.
    pub fn session(mut self, id: impl Into<String>) -> Self {
        self.session = Some(id.into());
        self
    }

    /// Parses a JSON object of config keys; missing keys keep their
    /// defaults. Text that is not JSON is [`Error::InvalidJson`]; anything
    /// else wrong (not an object, an unknown or repeated key, a value of the
    /// wrong type or out of range, `NaN` or `Infinity` as Python's `json`
    /// writes them) is [`Error::InvalidConfig`] naming the key and its rule.
    pub fn from_json(json: &str) -> Result<Self> {
        let object = read_settings(json, &CONFIG_KEYS)?;
        // Every value was checked against its rule, so this cannot fail but
        // through a bug; the path still names the key if it does.
        let config: Config = serde_path_to_error::deserialize(Json::Object(object))
            .map_err(|e| Error::config(e.path().to_string(), e.inner().to_string()))?;
        config.validate()?;
        Ok(config)
    }

    /// Checks every value; the error names the first bad key and the rule
    /// it breaks, in the same words as [`Config::from_json`].
    pub fn validate(&self) -> Result<()> {
        // Floats are checked as written (`0.7`, not the f32's `0.699999988`)
        // and may be NaN, which JSON cannot hold.
        let floats = [
            ("temperature", self.temperature),
            ("top_p", self.top_p),
            ("min_p", self.min_p),
            ("repeat_penalty", self.repeat_penalty),
        ];
        for (key, value) in floats {
            CONFIG_KEYS.rule(key)?.check_f32(key, value)?;
        }
        let Json::Object(object) = serde_json::to_value(self)? else {
            return Err(Error::Internal(
                "a config serializes to a JSON object".into(),
            ));
        };
        for (key, value) in &object {
            if !floats.iter().any(|(float, _)| float == key) {
                CONFIG_KEYS.rule(key)?.check(key, Given::Json(value))?;
            }
        }
        if self.model_path.is_some() && self.provider.is_some() {
            return Err(Error::config(
                "provider",
                "`model_path` and `provider` cannot both be given \
                 (an agent runs on a local model or on a provider)",
            ));
        }
        if self.session.is_some() && self.session_store.is_none() {
            return Err(Error::config(
                "session",
                "needs a `session_store`, the file the session is kept in",
            ));
        }
        Ok(())
    }
}

/// What every config key accepts. The JSON reader and [`Config::validate`]
/// both report a broken rule in these words.
const CONFIG_KEYS: Settings = Settings {
    name: "config",
    example: r#"{"model_path": "model.gguf"}"#,
    keys: &[
        (
            "model_path",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
        (
            "context_size",
            Rule::Whole {
                min: 64,
                max: U32_MAX,
                zero: Some("the model's trained context"),
                null: None,
                note: "",
            },
        ),
        ("batch_size", Rule::whole(1, U32_MAX, "")),
        (
            "threads",
            Rule::whole(0, 1024, " (0 follows the free cores)"),
        ),
        (
            "threads_batch",
            Rule::whole(0, 1024, " (0 means the same as threads)"),
        ),
        ("context_shift", Rule::Bool),
        ("gpu_layers", GPU_LAYERS),
        ("cpu_variant", CPU_VARIANT),
        (
            "seed",
            Rule::Whole {
                min: 0,
                max: U32_MAX,
                zero: None,
                null: Some("a random seed"),
                note: "",
            },
        ),
        (
            "temperature",
            Rule::Number {
                min: 0.0,
                min_open: false,
                max: None,
                note: " (0 is greedy)",
            },
        ),
        (
            "top_p",
            Rule::Number {
                min: 0.0,
                min_open: true,
                max: Some(1.0),
                note: "",
            },
        ),
        ("top_k", Rule::whole(0, U32_MAX, " (0 disables it)")),
        (
            "min_p",
            Rule::Number {
                min: 0.0,
                min_open: false,
                max: Some(1.0),
                note: "",
            },
        ),
        (
            "repeat_penalty",
            Rule::Number {
                min: 0.0,
                min_open: true,
                max: None,
                note: " (1 disables it)",
            },
        ),
        (
            "max_tokens",
            Rule::Whole {
                min: 1,
                max: U32_MAX,
                zero: None,
                null: Some("no limit"),
                note: "",
            },
        ),
        ("stop", Rule::Texts),
        (
            "system_prompt",
            Rule::Text {
                null: true,
                non_empty: false,
            },
        ),
        (
            "template",
            Rule::Choice {
                expected: "auto, a built-in template name or a Jinja source",
                parse: |value| TemplateChoice::parse(value).map(drop),
            },
        ),
        (
            "tool_choice",
            Rule::Choice {
                expected: "auto, required, none or a tool name",
                parse: |value| ToolChoice::parse(value).map(drop),
            },
        ),
        ("max_tool_iterations", Rule::whole(1, U32_MAX, "")),
        ("max_tool_retries", Rule::whole(0, 100, "")),
        ("max_turns", Rule::whole(0, U32_MAX, " (0 for no limit)")),
        (
            "max_total_tokens",
            Rule::whole(0, i64::MAX, " (0 for no limit)"),
        ),
        (
            "max_duration_ms",
            Rule::whole(0, i64::MAX, " (0 for no limit)"),
        ),
        (
            "tool_execution",
            Rule::Custom {
                expected: ToolExecution::EXPECTED,
                check: ToolExecution::check_json,
            },
        ),
        (
            "steering_mode",
            Rule::Choice {
                expected: "one_at_a_time or all",
                parse: |value| QueueMode::check("steering_mode", value),
            },
        ),
        (
            "follow_up_mode",
            Rule::Choice {
                expected: "one_at_a_time or all",
                parse: |value| QueueMode::check("follow_up_mode", value),
            },
        ),
        (
            "provider",
            Rule::Custom {
                expected: provider::EXPECTED,
                check: provider::check_json,
            },
        ),
        (
            "context_strategy",
            Rule::Custom {
                expected: CONTEXT_STRATEGY_EXPECTED,
                check: check_context_strategy,
            },
        ),
        (
            "max_tool_result_tokens",
            Rule::whole(0, U32_MAX, " (0 keeps results whole)"),
        ),
        (
            "summarizer",
            Rule::Custom {
                expected: SUMMARIZER_EXPECTED,
                check: check_summarizer,
            },
        ),
        (
            "session_store",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
        (
            "session",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
        ("session_snapshot", Rule::Bool),
        ("skills", Rule::Texts),
        (
            "builtin_tools",
            Rule::Custom {
                expected: BUILTIN_TOOLS_EXPECTED,
                check: check_builtin_tools,
            },
        ),
    ],
};

/// What `builtin_tools` accepts.
const BUILTIN_TOOLS_EXPECTED: &str =
    r#"null or {"tools": [names], "workspace": "folder", "bash_deny": [texts]}"#;

/// The keys of `builtin_tools`.
const BUILTIN_TOOLS_KEYS: Settings = Settings {
    name: "builtin_tools",
    example: r#"{"tools": ["read_file"], "workspace": "."}"#,
    keys: &[
        ("tools", Rule::Texts),
        (
            "workspace",
            Rule::Text {
                null: false,
                non_empty: true,
            },
        ),
        ("bash_deny", Rule::Texts),
    ],
};

/// Checks `builtin_tools`: its keys, both `tools` and `workspace` given,
/// and every tool one that exists.
fn check_builtin_tools(key: &str, value: &Json) -> Result<()> {
    let object = match value {
        Json::Null => return Ok(()),
        Json::Object(object) => object,
        other => {
            return Err(Error::config(
                key,
                format!("expected {BUILTIN_TOOLS_EXPECTED}, got {}", describe(other)),
            ))
        }
    };
    BUILTIN_TOOLS_KEYS.check_nested(key, object)?;
    for required in ["tools", "workspace"] {
        if !object.contains_key(required) {
            return Err(Error::config(format!("{key}.{required}"), "is required"));
        }
    }
    for name in object["tools"].as_array().into_iter().flatten() {
        let name = name.as_str().unwrap_or_default();
        if !BUILTIN_TOOL_NAMES.contains(&name) {
            return Err(Error::config(
                format!("{key}.tools"),
                format!(
                    "unknown built-in tool '{name}'; the built-in tools are {}",
                    BUILTIN_TOOL_NAMES.join(", ")
                ),
            ));
        }
    }
    Ok(())
}

/// What `summarizer` accepts.
const SUMMARIZER_EXPECTED: &str =
    r#"null or {"provider": {...}, "max_tokens": N, "system_prompt": "..."} (all optional)"#;

/// The keys of `summarizer`.
const SUMMARIZER_KEYS: Settings = Settings {
    name: "summarizer",
    example: r#"{"max_tokens": 160}"#,
    keys: &[
        (
            "provider",
            Rule::Custom {
                expected: provider::EXPECTED,
                check: provider::check_json,
            },
        ),
        ("max_tokens", Rule::whole(16, 4096, "")),
        (
            "system_prompt",
            Rule::Text {
                null: true,
                non_empty: true,
            },
        ),
    ],
};

/// Checks `summarizer`: null, or an object of its keys named by their
/// whole path in errors.
fn check_summarizer(key: &str, value: &Json) -> Result<()> {
    match value {
        Json::Null => Ok(()),
        Json::Object(object) => SUMMARIZER_KEYS.check_nested(key, object),
        other => Err(Error::config(
            key,
            format!("expected {SUMMARIZER_EXPECTED}, got {}", describe(other)),
        )),
    }
}

const U32_MAX: i64 = u32::MAX as i64;

/// What `context_strategy` accepts.
const CONTEXT_STRATEGY_EXPECTED: &str = r#""fifo" or {"compact": {...}} with keep_recent, keep_first, tool_result_tokens, target_percent"#;

/// The keys of `context_strategy.compact`.
const COMPACT_KEYS: Settings = Settings {
    name: "compact",
    example: r#"{"keep_recent": 6}"#,
    keys: &[
        ("keep_recent", Rule::whole(0, 100_000, "")),
        ("keep_first", Rule::whole(0, 100_000, "")),
        ("tool_result_tokens", Rule::whole(16, U32_MAX, "")),
        ("target_percent", Rule::whole(10, 100, "")),
    ],
};

/// Checks `context_strategy`: `"fifo"`, or `{"compact": {...}}` whose keys
/// are named by their whole path in errors.
fn check_context_strategy(key: &str, value: &Json) -> Result<()> {
    let compact = value
        .as_object()
        .filter(|o| o.len() == 1)
        .and_then(|o| o.get("compact"));
    match (value.as_str(), compact) {
        (Some("fifo"), _) => Ok(()),
        (_, Some(Json::Object(settings))) => {
            COMPACT_KEYS.check_nested(&format!("{key}.compact"), settings)
        }
        _ => Err(Error::config(
            key,
            format!(
                "expected {CONTEXT_STRATEGY_EXPECTED}, got {}",
                describe(value)
            ),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::template::TemplateFamily;

    #[test]
    fn defaults_are_valid_and_do_not_truncate_replies() {
        let c = Config::default();
        c.validate().unwrap();
        assert_eq!(c.max_tokens, None);
        assert_eq!(c.max_tool_retries, 2);
    }

    #[test]
    fn json_keys_and_errors_name_the_key() {
        let c = Config::from_json(r#"{"model_path":"m.gguf","temperature":0,"tool_choice":"required","template":"chatml"}"#).unwrap();
        assert_eq!(c.temperature, 0.0);
        assert_eq!(c.tool_choice, ToolChoice::Required);
        assert_eq!(c.template, TemplateChoice::Builtin(TemplateFamily::Chatml));

        let e = Config::from_json(r#"{"temprature":0.1}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { key, .. } if key == "temprature"),
            "{e}"
        );
        let e = Config::from_json(r#"{"top_p":2}"#).unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { key, .. } if key == "top_p"),
            "{e}"
        );
        let e = Config::from_json(r#"{"template":"chatm"}"#).unwrap_err();
        assert!(e.to_string().contains("unknown template `chatm`"), "{e}");
        let e = Config::from_json("[1]").unwrap_err();
        assert!(
            matches!(&e, Error::InvalidConfig { key, .. } if key == "config"),
            "{e}"
        );
        let e = Config::from_json("{").unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::InvalidJson);
    }

    #[test]
    fn rules_read_as_written() {
        let rule = |key| CONFIG_KEYS.rule(key).unwrap().expected();
        assert_eq!(
            rule("context_size"),
            "0 (the model's trained context) or a whole number from 64 to 4294967295"
        );
        assert_eq!(
            rule("seed"),
            "null (a random seed) or a whole number from 0 to 4294967295"
        );
        assert_eq!(rule("temperature"), "a finite number >= 0 (0 is greedy)");
        assert_eq!(rule("top_p"), "a number greater than 0 and at most 1");
        assert_eq!(rule("min_p"), "a number from 0 to 1");
        assert_eq!(
            rule("repeat_penalty"),
            "a finite number > 0 (1 disables it)"
        );
        assert_eq!(rule("model_path"), "a non-empty string or null");
        assert_eq!(rule("stop"), "an array of non-empty strings");
        // Every key a config serializes has a rule, and no rule is left over.
        let Json::Object(object) = serde_json::to_value(Config::default()).unwrap() else {
            panic!("a config is an object");
        };
        let keys: Vec<&str> = object.keys().map(String::as_str).collect();
        let ruled: Vec<&str> = CONFIG_KEYS.keys.iter().map(|(k, _)| *k).collect();
        assert_eq!(keys, ruled);
    }

    #[test]
    fn non_finite_tokens_are_found_where_serde_stops() {
        for (text, want) in [
            ("{\"temperature\": NaN}", "NaN"),
            ("{\"temperature\":Infinity}", "Infinity"),
            (
                "{\n  \"top_p\": 0.5,\n  \"temperature\":\n    -Infinity\n}",
                "-Infinity",
            ),
        ] {
            let e = Config::from_json(text).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "invalid config `temperature`: expected a finite number >= 0 (0 is greedy), got {want}"
                ),
                "{text}"
            );
        }
        // Other syntax errors stay JSON errors.
        for text in [
            "{\"temperature\": Nope}",
            "{\"temperature\": -}",
            "{\"a\": 1} NaN",
        ] {
            let e = Config::from_json(text).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidJson, "{text}: {e}");
        }
    }

    #[test]
    fn custom_template_and_tool_names() {
        assert_eq!(
            TemplateChoice::parse("{{ messages }}").unwrap(),
            TemplateChoice::Custom("{{ messages }}".into())
        );
        assert_eq!(
            ToolChoice::parse("get_weather").unwrap(),
            ToolChoice::Tool("get_weather".into())
        );
        assert!(ToolChoice::parse("bad name!").is_err());
    }
}
