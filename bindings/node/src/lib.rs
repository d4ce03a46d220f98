//! The native module of the `zoo-keeper` npm package: the napi-rs binding
//! of Zoo-Keeper. It calls the `zoo-core` API directly; the JavaScript
//! surface (camelCase config, `ZooError`, Promises, async iterators,
//! `AbortSignal`) lives in `node/lib`.
//!
//! Threading: models and agents are created, closed, have their history
//! changed and their MCP servers added and removed on libuv worker threads,
//! never blocking the JS thread. A chat's
//! callbacks reach JS through one strong threadsafe function per chat
//! (released when the chat ends); tools through one weak threadsafe
//! function each, so neither keeps a finished script alive.

mod agent;
mod backend;
mod errors;
mod hooks;
mod logs;
mod model;
mod session;
mod tools;

pub use agent::{create_agent, AgentJob, CloseAgent, CreateAgent, NativeAgent, NativeChat};
pub use backend::NativeBackendSink;
pub use logs::{dropped_logs, flush_logs, set_log_function, set_log_level, FlushLogs};
pub use model::{backend_info_json, load_model, LoadModel, NativeModel};
pub use session::{open_session_store, NativeSessionStore, OpenStore, StoreJob};
pub use tools::NativeToolContext;

/// The version of the native module (the workspace version).
#[napi_derive::napi]
pub fn native_version() -> String {
    env!("CARGO_PKG_VERSION").to_string()
}
