//! The engine's test matrix on the mock backend: one test per requirement,
//! named by area and number (`tq_` request queue, `th_` history, `tr_` tools,
//! `ta_` agentic loop, `er_` error recovery, `ag_` agent). Template rows (TE) live with the
//! template module; real-model tests live in `tests/llama.rs`.

mod agent;
mod agentic_loop;
mod config_errors;
mod error_recovery;
mod history;
mod hostile;
mod request_queue;
mod runtime;
mod tool_context;
mod tool_registry;

use serde_json::json;
use zoo_core::{Agent, Config, MockBackend, Tool};

/// Tests that measure time (and the stress test, which loads both cores)
/// take this lock, so they do not run beside each other.
pub fn timing_lock() -> std::sync::MutexGuard<'static, ()> {
    static LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());
    LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

/// An agent on `mock` with the default config.
pub fn agent_on(mock: &MockBackend) -> Agent {
    Agent::with_backend(mock.clone(), Config::default()).expect("agent starts")
}

/// `get_weather(city: string, unit?: "celsius"|"fahrenheit")`.
pub fn weather_tool() -> Tool {
    Tool::new(
        "get_weather",
        "Current weather for a city",
        json!({
            "type": "object",
            "properties": {
                "city": {"type": "string"},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}
            },
            "required": ["city"]
        }),
        |args| Ok(json!({"city": args["city"], "temperature": 21})),
    )
    .unwrap()
}
