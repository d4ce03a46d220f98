//! The agent's lifecycle states.

use serde::{Deserialize, Serialize};

/// The lifecycle of an agent: loading, then idle and processing in turn,
/// until it is shut down; `Agent::state` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentState {
    /// The inference thread is starting and setting up its backend.
    Loading,
    /// Setup failed; the agent cannot be used.
    Failed,
    /// Waiting for a request.
    Idle,
    /// Running a chat.
    Processing,
    /// `stop()` was called; the chat in flight is winding down.
    Cancelling,
    /// The agent was dropped; its thread has ended or is ending.
    Terminated,
}
