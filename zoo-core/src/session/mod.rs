//! Conversations that outlive the process: a [`SessionStore`] keeps
//! sessions and their messages in an SQLite file, written as the agent's
//! history commits them, so that an agent opened on a session id continues
//! where the last one stopped, even after a crash.
//!
//! This module knows messages, not agents: the engine writes into it, and
//! the front doors list, load, export and import through it.

mod checkpointer;
mod store;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::message::Message;

pub use store::SessionStore;

/// What a session is, without its messages: what `sessions()` lists.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionInfo {
    /// The session's id, chosen by the caller or generated.
    pub id: String,
    /// A title; the first user message's start until renamed.
    #[serde(default)]
    pub title: Option<String>,
    /// When the session was created (RFC 3339, UTC).
    pub created_at: String,
    /// When a message was last written (RFC 3339, UTC).
    pub updated_at: String,
    /// The model the session was started with (its file name or the
    /// provider's model), for the user's information only.
    #[serde(default)]
    pub model: Option<String>,
    /// The caller's own data, any JSON.
    #[serde(default)]
    pub metadata: Value,
    /// How many messages the session holds (the system prompt not counted).
    #[serde(default)]
    pub message_count: u64,
}

/// A whole session: what `load` returns and `export` writes as JSON, and
/// what `import` reads back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionData {
    /// The session's description.
    #[serde(flatten)]
    pub info: SessionInfo,
    /// The system prompt the conversation ran under, if any.
    #[serde(default)]
    pub system_prompt: Option<String>,
    /// Every message, oldest first (the system prompt is not among them).
    #[serde(default)]
    pub messages: Vec<Message>,
}
