//! Logs for the host application: the engine's `tracing` events handed to
//! one process-wide handler (a C callback, Python's `logging`, a Node
//! function), with their level, target, message and structured fields.
//!
//! Silent by default: nothing is collected until a handler is set with
//! [`set_handler`], which installs a [`tracing`] subscriber as the
//! process's default (a Rust program may instead install its own
//! subscriber, `tracing-subscriber`'s `fmt` for instance, and filter on the
//! same targets). Events below the handler's level cost a relaxed atomic
//! load.
//!
//! # Targets
//! Stable names, to filter on (the zoo CLI's `--verbose` subscribes to
//! `zoo::prompt` and `zoo::raw_output`):
//!
//! | target | level | what | fields |
//! |---|---|---|---|
//! | `zoo::chat` | info | a chat ended (warn: it failed) | `stop_reason`, `turns`, `tool_calls`, `prompt_tokens`, `completion_tokens`, `latency_ms` (`error` when it failed) |
//! | `zoo::turn` | info | a model reply ended | `turn`, `finish`, `prompt_tokens`, `cached_tokens`, `completion_tokens`, `latency_ms` |
//! | `zoo::tool` | info | a tool call ended | `tool`, `call_id`, `ok`, `latency_ms` (`error` when it failed) |
//! | `zoo::hook` | warn | a hook failed (its fail-safe effect applied) | `hook`, `error` |
//! | `zoo::prompt` | debug | the prompt of a reply exactly as the backend sends it (the message is the prompt) | `turn`, `form`: `text` (a local model: the chat template applied, `tokens` its length), `request_body` (a remote provider: the JSON body, whose key travels in a header), `messages` (the mock: the messages it received, as JSON), `host_request` (a host backend: the request it is given, as JSON) |
//! | `zoo::raw_output` | debug | the model's reply before parsing (the message is the raw text) | `turn` |
//! | `zoo::logs` | warn | records were dropped (see below) | `dropped` |
//! | `zoo::backend` | info | llama.cpp's CPU backend was loaded (once per process): the variant, its features and the variants usable here | `cpu_variant`, `chosen_by`, `directory` |
//! | `zoo::session` | debug | a session store wrote one transaction (a closed round, a chat, a history change) | `session`, `messages` (how many written), `deleted_from` (the first position replaced), `latency_us` |
//!
//! Every record emitted inside a chat also carries `agent_id` and
//! `chat_id` (from the chat's `zoo::chat` span), so a host can tell chats
//! apart. Other targets (`llama.cpp`, `zoo_core::mcp`, module paths) carry
//! the backend's and the MCP client's own diagnostics. Secrets never appear:
//! API keys stay out of every message (the remote backend scrubs them from
//! its errors).
//!
//! # Bounded memory
//! Records are queued for a dedicated thread, `zoo-logs`, which calls the
//! handler, so a slow handler never slows the engine. The queue holds at
//! most [`QUEUE_RECORDS`] records and [`QUEUE_BYTES`] bytes of text (one
//! larger record is accepted into an empty queue); past that a record is
//! dropped and counted ([`dropped`]), and the next batch the handler
//! receives starts with a `zoo::logs` warning saying how many were lost.

mod layer;
mod queue;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tracing_subscriber::filter::LevelFilter;
use tracing_subscriber::layer::SubscriberExt;

use crate::error::{Error, Result};

pub use queue::{QUEUE_BYTES, QUEUE_RECORDS};

/// The stable targets of the engine's own records (see the module docs).
pub mod targets {
    /// A chat ended.
    pub const CHAT: &str = "zoo::chat";
    /// A model reply ended.
    pub const TURN: &str = "zoo::turn";
    /// A tool call ended.
    pub const TOOL: &str = "zoo::tool";
    /// A hook failed.
    pub const HOOK: &str = "zoo::hook";
    /// The prompt of a reply, exactly as rendered (debug).
    pub const PROMPT: &str = "zoo::prompt";
    /// The model's reply before parsing (debug).
    pub const RAW_OUTPUT: &str = "zoo::raw_output";
    /// The log queue itself: records were dropped.
    pub const LOGS: &str = "zoo::logs";
    /// llama.cpp's CPU backend: which variant was loaded, from where, why.
    pub const BACKEND: &str = "zoo::backend";
    /// A session store wrote a session (debug).
    pub const SESSION: &str = "zoo::session";
}

/// How much to log, from nothing to everything. The numbers are the C
/// `zoo_log_level` values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum LogLevel {
    /// Nothing.
    Off = 0,
    /// Failures.
    Error = 1,
    /// Problems the engine worked around (a hook failed, a snapshot was refused).
    Warn = 2,
    /// One line per chat, model reply and tool call.
    Info = 3,
    /// Adds the prompts and raw model output, and the backend's decisions.
    Debug = 4,
    /// Everything, llama.cpp's chatter included.
    Trace = 5,
}

impl LogLevel {
    const ALL: [LogLevel; 6] = [
        LogLevel::Off,
        LogLevel::Error,
        LogLevel::Warn,
        LogLevel::Info,
        LogLevel::Debug,
        LogLevel::Trace,
    ];

    /// The level of a C `zoo_log_level` value.
    pub fn from_i32(value: i32) -> Result<Self> {
        usize::try_from(value)
            .ok()
            .and_then(|i| Self::ALL.get(i).copied())
            .ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "log level {value} is not a zoo_log_level value (0 off to 5 trace)"
                ))
            })
    }

    /// The level named `name` (`"off"`, `"error"`, `"warn"`, `"info"`,
    /// `"debug"`, `"trace"`).
    pub fn parse(name: &str) -> Result<Self> {
        serde_json::from_value(Value::String(name.to_string())).map_err(|_| {
            Error::InvalidArgument(format!(
                "`{name}` is not a log level (expected off, error, warn, info, debug or trace)"
            ))
        })
    }

    /// The level's name, as [`parse`](Self::parse) reads it.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Off => "off",
            LogLevel::Error => "error",
            LogLevel::Warn => "warn",
            LogLevel::Info => "info",
            LogLevel::Debug => "debug",
            LogLevel::Trace => "trace",
        }
    }

    fn of(level: &tracing::Level) -> Self {
        match *level {
            tracing::Level::ERROR => LogLevel::Error,
            tracing::Level::WARN => LogLevel::Warn,
            tracing::Level::INFO => LogLevel::Info,
            tracing::Level::DEBUG => LogLevel::Debug,
            tracing::Level::TRACE => LogLevel::Trace,
        }
    }

    fn filter(self) -> LevelFilter {
        match self {
            LogLevel::Off => LevelFilter::OFF,
            LogLevel::Error => LevelFilter::ERROR,
            LogLevel::Warn => LevelFilter::WARN,
            LogLevel::Info => LevelFilter::INFO,
            LogLevel::Debug => LevelFilter::DEBUG,
            LogLevel::Trace => LevelFilter::TRACE,
        }
    }
}

/// One log record, as every front door hands it to the host.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct LogRecord {
    /// Its level (never `off`).
    pub level: LogLevel,
    /// Where it comes from: one of [`targets`], or a module path.
    pub target: String,
    /// The text, readable on its own.
    pub message: String,
    /// The structured fields (the chat's `agent_id` and `chat_id` first,
    /// when it was emitted inside a chat).
    pub fields: Map<String, Value>,
}

impl LogRecord {
    /// The record as JSON: `level`, `target`, `message`, `fields`.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).expect("a log record serializes")
    }

    /// The fields as a JSON object.
    pub fn fields_json(&self) -> String {
        serde_json::to_string(&self.fields).expect("log fields serialize")
    }
}

/// Receives log records on the `zoo-logs` thread, in the order they were
/// emitted (per emitting thread). It may block: records wait in the
/// bounded queue meanwhile.
pub trait LogHandler: Send + Sync {
    /// Handles one record.
    fn log(&self, record: &LogRecord);

    /// Handles records taken from the queue together; by default one by
    /// one. A handler that pays per crossing (a lock, a thread hop) takes
    /// them at once.
    fn log_batch(&self, records: &[LogRecord]) {
        for record in records {
            self.log(record);
        }
    }
}

impl<F: Fn(&LogRecord) + Send + Sync> LogHandler for F {
    fn log(&self, record: &LogRecord) {
        self(record)
    }
}

/// The level records are collected at: `Off` while no handler is set.
static LEVEL: AtomicU8 = AtomicU8::new(LogLevel::Off as u8);

pub(crate) fn current_level() -> LogLevel {
    LogLevel::ALL[usize::from(LEVEL.load(Ordering::Relaxed))]
}

/// Sets the process's log handler and its level, replacing any earlier one
/// (records already queued go to the new handler); `None` removes it and
/// drops what is queued. The first call installs the subscriber as the
/// process's default: it fails with `invalid_argument` if the program has
/// already installed a tracing subscriber of its own (which then receives
/// the engine's records itself).
pub fn set_handler(level: LogLevel, handler: Option<Arc<dyn LogHandler>>) -> Result<()> {
    install()?;
    let level = if handler.is_some() {
        level
    } else {
        LogLevel::Off
    };
    let old = queue::replace_handler(handler)?;
    LEVEL.store(level as u8, Ordering::Relaxed);
    tracing::callsite::rebuild_interest_cache();
    // The old handler goes when the `zoo-logs` thread is done with it.
    drop(old);
    Ok(())
}

/// Changes the level of the handler set with [`set_handler`] (no effect
/// while there is none).
pub fn set_level(level: LogLevel) {
    if queue::has_handler() {
        LEVEL.store(level as u8, Ordering::Relaxed);
        tracing::callsite::rebuild_interest_cache();
    }
}

/// The level records are collected at (`off` without a handler).
pub fn level() -> LogLevel {
    current_level()
}

/// Records dropped so far because the queue was full (see the module docs).
pub fn dropped() -> u64 {
    queue::dropped()
}

/// Waits up to `timeout` until every record queued so far has been handed
/// to the handler and the handler has returned. Returns whether it has
/// (false at the timeout, and at once when called from the handler itself).
pub fn flush(timeout: Duration) -> bool {
    queue::flush(timeout)
}

/// Installs the forwarding subscriber as the process's default, once.
fn install() -> Result<()> {
    static INSTALLED: OnceLock<std::result::Result<(), String>> = OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            let subscriber = tracing_subscriber::registry().with(layer::HostLayer);
            tracing::subscriber::set_global_default(subscriber).map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| {
            Error::InvalidArgument(format!(
                "logs cannot be sent to a handler: the program has its own tracing \
                 subscriber ({e}); it receives the engine's records itself"
            ))
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_have_names_and_numbers() {
        for (i, level) in LogLevel::ALL.iter().enumerate() {
            assert_eq!(LogLevel::from_i32(i as i32).unwrap(), *level);
            assert_eq!(LogLevel::parse(level.name()).unwrap(), *level);
        }
        assert_eq!(
            LogLevel::from_i32(6).unwrap_err().to_string(),
            "invalid argument: log level 6 is not a zoo_log_level value (0 off to 5 trace)"
        );
        assert!(LogLevel::parse("verbose").is_err());
        let record = LogRecord {
            level: LogLevel::Info,
            target: targets::TOOL.into(),
            message: "m".into(),
            fields: Map::new(),
        };
        assert_eq!(
            record.to_json(),
            r#"{"level":"info","target":"zoo::tool","message":"m","fields":{}}"#
        );
    }
}
