//! An agent a front door holds for its host object (a Python `Agent`, a
//! Node `Agent`) until the host closes it: shared with the calls in
//! flight, closed once, and an `agent_not_running` error after that.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use super::Agent;
use crate::error::{Error, Result};

/// The host object's agent, until it is closed.
#[derive(Debug)]
pub struct AgentSlot {
    agent: Mutex<Option<Arc<Agent>>>,
}

impl AgentSlot {
    /// Holds `agent`.
    pub fn new(agent: Agent) -> Self {
        AgentSlot {
            agent: Mutex::new(Some(Arc::new(agent))),
        }
    }

    /// The agent, for one call; `agent_not_running` once it is closed.
    pub fn get(&self) -> Result<Arc<Agent>> {
        self.agent
            .lock()
            .clone()
            .ok_or_else(|| Error::AgentNotRunning("the agent is closed".into()))
    }

    /// Whether [`take`](Self::take) has been called.
    pub fn is_closed(&self) -> bool {
        self.agent.lock().is_none()
    }

    /// Empties the slot, returning the agent for [`Agent::close`] (`None`
    /// when it was closed already): later calls get `agent_not_running`.
    pub fn take(&self) -> Option<Arc<Agent>> {
        self.agent.lock().take()
    }
}

impl Agent {
    /// Closes an agent that calls in flight may still share: cancels its
    /// chat, fails the queued ones and, when this is the last reference,
    /// waits up to `timeout` (`None`: no limit) for its inference thread.
    /// Returns whether the thread finished. While another call still holds
    /// the agent, it is stopped, and that call's end drops it (false).
    pub fn close(self: Arc<Self>, timeout: Option<Duration>) -> bool {
        match Arc::try_unwrap(self) {
            Ok(agent) => match timeout {
                Some(limit) => agent.close_within(limit),
                None => {
                    drop(agent);
                    true
                }
            },
            Err(shared) => {
                shared.stop();
                false
            }
        }
    }
}
