//! Sub-agents: a child agent offered to the model as a tool. The child has
//! its own system prompt, limits and history, and runs on the parent's
//! loaded model (its own context) or on any provider (the oracle pattern:
//! a small local agent asks a bigger remote one). Each call is a fresh task;
//! the parent's stop (and the tool's time limit) reaches the child; the
//! child's final text is the result (a [`ToolOutput`]: its details hold the
//! child's stop reason and usage).
//!
//! While the child works, its progress reaches the parent's chat as
//! `tool_call_update` events of the parent's call, one per step of the
//! child, each a [`SubAgentUpdate`]:
//!
//! ```json
//! {"subagent": "researcher", "event": "turn_finished", "turn": 1,
//!  "usage": {"prompt_tokens": 40, "cached_tokens": 0, "completion_tokens": 9, "total_tokens": 49}}
//! {"subagent": "researcher", "event": "tool_call_started", "id": "call_1", "name": "weather"}
//! {"subagent": "researcher", "event": "tool_call_finished", "id": "call_1", "name": "weather",
//!  "ok": true, "duration_ms": 0.4}
//! ```
//!
//! The child's usage joins the parent's: each of the child's replies adds
//! its tokens to the parent chat's usage (its `Response.usage` and its
//! `chat_finished`) as it ends, so a child cut short still counts.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::Agent;
use crate::config::Config;
use crate::engine::options::ChatOptions;
use crate::error::{Error, Result};
use crate::event::{AgentEvent, EventKind};
use crate::response::{StopReason, Usage};
use crate::tools::context::ToolContext;
use crate::tools::output::ToolOutput;
use crate::tools::registry::Tool;

/// How often a waiting sub-agent call looks at the parent's stop.
const STOP_POLL: Duration = Duration::from_millis(20);

/// What the result says when the child wrote no text.
const NO_ANSWER: &str = "(the sub-agent finished without an answer)";

/// A child agent to offer as a tool.
#[derive(Debug, Clone)]
pub struct SubAgent {
    /// The tool's name.
    pub name: String,
    /// When the model should delegate to it.
    pub description: String,
    /// The child's config (system prompt, `max_turns`, sampling...). With
    /// a `provider` it runs there; without, on the parent's loaded model.
    pub config: Config,
    /// Tools of the parent the child may call, by name.
    pub tools: Vec<String>,
}

impl SubAgent {
    /// Reads `{"name", "description", "tools": [...], "config": {...}}`
    /// (`tools` and `config` optional), the shape every front door passes.
    ///
    /// # Errors
    /// [`Error::InvalidJson`] for text that is not JSON;
    /// [`Error::InvalidArgument`] naming a missing or mistyped field; the
    /// config's own errors for `config`.
    pub fn from_json(json: &str) -> Result<Self> {
        let value: Value = serde_json::from_str(json)
            .map_err(|e| Error::InvalidJson(format!("sub-agent: {e}")))?;
        let text = |key: &str| {
            value[key]
                .as_str()
                .filter(|s| !s.is_empty())
                .map(str::to_owned)
                .ok_or_else(|| {
                    Error::InvalidArgument(format!("a sub-agent needs `{key}`, a non-empty string"))
                })
        };
        let tools = match &value["tools"] {
            Value::Null => Vec::new(),
            Value::Array(items) => items
                .iter()
                .map(|t| t.as_str().map(str::to_owned))
                .collect::<Option<Vec<String>>>()
                .ok_or_else(|| {
                    Error::InvalidArgument("a sub-agent's `tools` are tool names (strings)".into())
                })?,
            _ => {
                return Err(Error::InvalidArgument(
                    "a sub-agent's `tools` is an array of tool names".into(),
                ))
            }
        };
        let config = match &value["config"] {
            Value::Null => Config::default(),
            config => Config::from_json(&config.to_string())?,
        };
        Ok(SubAgent {
            name: text("name")?,
            description: text("description")?,
            config,
            tools,
        })
    }
}

/// One step of a sub-agent, the `update` of a `tool_call_update` event of
/// the parent's call: `{"subagent": name, "event": ..., ...}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SubAgentUpdate {
    /// The sub-agent's tool name.
    pub subagent: String,
    /// What it did.
    #[serde(flatten)]
    pub step: SubAgentStep,
}

/// What a sub-agent did, by `event` (the name of the child's own event).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum SubAgentStep {
    /// One of the child's replies ended.
    TurnFinished {
        /// Which reply of the child's task (1 for the first).
        turn: u32,
        /// Its tokens (also added to the parent chat's usage).
        usage: Usage,
    },
    /// The child called a tool.
    ToolCallStarted {
        /// The child's call id.
        id: String,
        /// The tool's name.
        name: String,
    },
    /// The child's tool call ended.
    ToolCallFinished {
        /// The child's call id.
        id: String,
        /// The tool's name.
        name: String,
        /// Whether it gave a result (false: an error).
        ok: bool,
        /// Time in the tool, in milliseconds.
        duration_ms: f64,
    },
}

impl SubAgentStep {
    /// The step a child's event reports, if it is one worth reporting.
    fn of(event: &EventKind) -> Option<Self> {
        Some(match event {
            EventKind::TurnFinished { turn, usage } => SubAgentStep::TurnFinished {
                turn: *turn,
                usage: *usage,
            },
            EventKind::ToolCallStarted { id, name, .. } => SubAgentStep::ToolCallStarted {
                id: id.clone(),
                name: name.clone(),
            },
            EventKind::ToolCallFinished {
                id,
                name,
                error,
                duration_ms,
                ..
            } => SubAgentStep::ToolCallFinished {
                id: id.clone(),
                name: name.clone(),
                ok: error.is_none(),
                duration_ms: *duration_ms,
            },
            _ => return None,
        })
    }
}

/// How the child is built, once, on its first call.
type Build = Box<dyn Fn() -> Result<Agent> + Send + Sync>;

/// The tool that runs `sub` with `tools` (the parent's, already looked up).
pub(crate) fn subagent_tool(sub: &SubAgent, tools: Vec<Tool>, build: Build) -> Result<Tool> {
    let child: Arc<Mutex<Option<Agent>>> = Arc::new(Mutex::new(None));
    let schema = json!({
        "type": "object",
        "properties": {"task": {
            "type": "string",
            "description": "What to do, with everything needed to do it"
        }},
        "required": ["task"],
    });
    let name = sub.name.clone();
    Tool::with_output(
        sub.name.clone(),
        sub.description.clone(),
        schema,
        move |args, ctx| {
            let task = args["task"].as_str().unwrap_or_default().to_owned();
            let mut slot = child.lock();
            if slot.is_none() {
                let agent = build().map_err(|e| format!("the sub-agent could not start: {e}"))?;
                for tool in &tools {
                    agent.register_tool(tool.clone());
                }
                *slot = Some(agent);
            }
            let agent = slot.as_ref().expect("built above");
            run_task(agent, &name, task, ctx)
        },
    )
}

/// One task on a fresh history, its steps reported to the parent's call;
/// the call's cancel token (the parent's stop, the tool's time limit)
/// cancels it. A child that failed or ended before it finished (a backend
/// error, a limit, a stop) is an error the parent's model reads.
fn run_task(
    agent: &Agent,
    name: &str,
    task: String,
    ctx: &ToolContext,
) -> std::result::Result<ToolOutput, String> {
    agent
        .clear_history()
        .map_err(|e| failed(name, &e.to_string()))?;
    let (reporter, subagent) = (ctx.clone(), name.to_owned());
    let limit: Arc<Mutex<Option<(String, u64)>>> = Arc::default();
    let reached = limit.clone();
    let options = ChatOptions::new().on_event(move |event| {
        if let EventKind::LimitReached { limit, value } = &event.kind {
            *reached.lock() = Some((limit.clone(), *value));
        }
        report(&reporter, &subagent, event);
    });
    let handle = agent.chat(task, options);
    let response = loop {
        if let Some(result) = handle.wait_timeout(STOP_POLL) {
            break result.map_err(|e| failed(name, &e.to_string()))?;
        }
        if ctx.is_cancelled() {
            handle.cancel();
        }
    };
    if let Some(why) = unfinished(response.stop_reason, limit.lock().take()) {
        return Err(failed(name, &with_partial(why, &response.text)));
    }
    let text = if response.text.trim().is_empty() {
        NO_ANSWER.to_owned()
    } else {
        response.text.clone()
    };
    Ok(ToolOutput::text(text).with_details(json!({
        "stop_reason": response.stop_reason,
        "usage": response.usage,
    })))
}

/// Why a child that ended this way did not finish its task, or `None` for
/// an answer (a reply cut at `max_tokens` is still the child's answer).
fn unfinished(stop: StopReason, limit: Option<(String, u64)>) -> Option<String> {
    Some(match stop {
        StopReason::Stop | StopReason::Length => return None,
        StopReason::Limit => match limit {
            Some((limit, value)) => format!("it reached its {limit} limit ({value})"),
            None => "it reached one of its limits".to_owned(),
        },
        StopReason::ToolLimit => "it reached its max_tool_iterations limit".to_owned(),
        StopReason::Rejected => "its input filter rejected the task".to_owned(),
        StopReason::Cancelled => "it was stopped".to_owned(),
        StopReason::Error => "it failed".to_owned(),
    })
}

/// `why`, with what the child wrote before it ended, if anything.
fn with_partial(why: String, text: &str) -> String {
    let text = text.trim();
    if text.is_empty() {
        format!("{why} before it finished")
    } else {
        format!("{why} before it finished; its last text: {text}")
    }
}

/// The tool error of a child that failed: the parent's model reads it.
fn failed(name: &str, why: &str) -> String {
    format!("the sub-agent `{name}` did not answer: {why}")
}

/// Reports one of the child's events to the parent's call, and adds the
/// tokens of each of its replies to the parent's usage.
fn report(ctx: &ToolContext, subagent: &str, event: &AgentEvent) {
    let Some(step) = SubAgentStep::of(&event.kind) else {
        return;
    };
    if let SubAgentStep::TurnFinished { usage, .. } = &step {
        ctx.add_usage(*usage);
    }
    let update = SubAgentUpdate {
        subagent: subagent.to_owned(),
        step,
    };
    if let Ok(update) = serde_json::to_value(update) {
        ctx.update(update);
    }
}

impl Agent {
    /// Offers a child agent to the model as the tool `sub.name`, which
    /// takes a `task` and returns the child's answer: the model reads its
    /// text, the host's record has it as `text` with `details` holding the
    /// child's `stop_reason` and `usage`. The child is started on its first call;
    /// without a `provider` it shares this agent's loaded model. Its steps
    /// are `tool_call_update` events of the call ([`SubAgentUpdate`]) and
    /// its tokens join this chat's usage.
    ///
    /// # Errors
    /// [`Error::ToolNotFound`] for a tool the parent does not have;
    /// [`Error::InvalidArgument`] for a child without a provider when this
    /// agent has no local model; the config's own errors.
    pub fn add_subagent(&self, sub: SubAgent) -> Result<()> {
        sub.config.validate()?;
        let tools = sub
            .tools
            .iter()
            .map(|name| {
                self.shared
                    .tools
                    .get(name)
                    .ok_or_else(|| Error::ToolNotFound(name.clone()))
            })
            .collect::<Result<Vec<Tool>>>()?;
        let build = self.child_builder(&sub.config)?;
        self.register_tool(subagent_tool(&sub, tools, build)?);
        Ok(())
    }

    /// How the child is started: on its provider, or on this agent's model.
    fn child_builder(&self, config: &Config) -> Result<Build> {
        let config = config.clone();
        if config.provider.is_some() {
            return Ok(Box::new(move || Agent::create(config.clone())));
        }
        #[cfg(feature = "llama")]
        if let Some(model) = self.model.clone() {
            return Ok(Box::new(move || {
                Agent::with_model(model.clone(), config.clone())
            }));
        }
        Err(Error::InvalidArgument(
            "a sub-agent without a `provider` runs on the parent's loaded model, \
             and this agent has none (give the sub-agent a provider)"
                .into(),
        ))
    }
}
