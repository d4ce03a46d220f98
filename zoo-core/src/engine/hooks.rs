//! Hooks: host code the agentic loop calls at fixed points of a chat, to
//! watch it, veto or rewrite tool calls, replace results, edit what the
//! model is shown, and filter the user's input before anything is decoded.
//!
//! Every method has a default that changes nothing, so a host implements
//! only the points it cares about. A hook that fails (returns `Err`, or a
//! front door's callback throws) never crashes the agent; its effect is
//! defined and fails safe: a failing input filter rejects the message, a
//! failing `before_tool_call` denies the call, and any other failing hook
//! changes nothing. Each failure is logged and passed to `on_error`.
//!
//! The decisions are serde types, so front doors that speak JSON (C) read
//! and write them in one shape: `{"action": "deny", "reason": "..."}`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::logs::targets;
use crate::message::{Message, ToolCall};

/// What a `before_tool_call` hook decides about a call.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum ToolCallDecision {
    /// Run the call as the model wrote it.
    #[default]
    Allow,
    /// Do not run it; the model reads the reason as the call's error.
    Deny {
        /// Why, in words the model can act on.
        reason: String,
    },
    /// Run it with these arguments instead, validated again.
    Rewrite {
        /// The arguments to run with.
        arguments: Value,
    },
}

/// What an input filter decides about the user's message.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum InputDecision {
    /// Send it as it is.
    #[default]
    Pass,
    /// Send it with this warning appended, for the model to heed.
    Warn {
        /// The warning.
        warning: String,
    },
    /// Do not send it: the chat ends with stop reason `rejected`, an
    /// `input_rejected` event, and no change to the history.
    Reject {
        /// Why.
        reason: String,
    },
}

/// What a `before_turn` hook decides.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case")]
pub enum TurnDecision {
    /// Generate the reply.
    #[default]
    Continue,
    /// End the chat here, with stop reason `stop` and the last reply's text.
    End,
}

/// What the `context_strategy` hook is shown: a conversation that does
/// not fit its budget. Serialized as `{"messages", "tokens", "budget",
/// "system_tokens", "current_turn"}` for the front doors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ContextRequest {
    /// The messages after the system prompt, oldest first.
    pub messages: Vec<Message>,
    /// Each message's tokens as the model counts them, in the same order.
    pub tokens: Vec<u32>,
    /// The tokens the system prompt and the kept messages may take
    /// together: the window minus the reply's reserve and the tool
    /// descriptions.
    pub budget: u32,
    /// The system prompt's tokens (0 without one), which stay.
    pub system_tokens: u32,
    /// Where the current turn starts in `messages`: `messages[current_turn..]`
    /// must be the end of what is kept, unchanged.
    pub current_turn: usize,
}

/// The points of a chat where host code runs, on the inference thread.
pub trait Hooks: Send + Sync {
    /// Checks the user's message before anything is decoded.
    fn filter_input(&self, _message: &str) -> Result<InputDecision, String> {
        Ok(InputDecision::Pass)
    }

    /// Before model reply `turn` (1 for the first); may end the chat.
    fn before_turn(&self, _turn: u32) -> Result<TurnDecision, String> {
        Ok(TurnDecision::Continue)
    }

    /// After model reply `turn`, with its text (tool-call markup included).
    fn after_turn(&self, _turn: u32, _text: &str) -> Result<(), String> {
        Ok(())
    }

    /// Before a tool call runs: allow, deny or rewrite it.
    fn before_tool_call(&self, _call: &ToolCall) -> Result<ToolCallDecision, String> {
        Ok(ToolCallDecision::Allow)
    }

    /// After a tool call, with its result or error: `Some` replaces the
    /// result the model reads (an error becomes that result).
    fn after_tool_call(
        &self,
        _call: &ToolCall,
        _outcome: &std::result::Result<Value, String>,
    ) -> Result<Option<Value>, String> {
        Ok(None)
    }

    /// The messages sent to the model for the next reply (system prompt
    /// first); the stored history is not touched.
    fn transform_context(&self, messages: Vec<Message>) -> Result<Vec<Message>, String> {
        Ok(messages)
    }

    /// The host's own context strategy, asked before a reply whenever the
    /// history does not fit its budget, in place of the config's
    /// `context_strategy`: returns the messages to keep (the system prompt
    /// stays by itself), or `None` to let the config's strategy run. What
    /// it returns must keep the rules of every strategy: the current turn
    /// whole and last, every tool call with its result, and the whole
    /// within the budget. A result that breaks one, or a failing hook,
    /// counts as a hook failure (passed to `on_error`) and the config's
    /// strategy runs instead. Kept messages may be new (a summary): they
    /// are counted, and like the cascade's summaries, are not written to a
    /// session, which keeps the whole transcript. The pass is reported as
    /// `history_compacted` with level `custom`.
    fn context_strategy(&self, _request: &ContextRequest) -> Result<Option<Vec<Message>>, String> {
        Ok(None)
    }

    /// A chat failed with `error`, or another hook failed (then `error` is
    /// an `internal` error naming the hook).
    fn on_error(&self, _error: &Error) {}
}

/// A hook's failure: logged and passed to `on_error`, as the module says.
pub(crate) fn report_failure(hooks: &dyn Hooks, hook: &str, message: &str) {
    tracing::warn!(target: targets::HOOK, hook, error = message, "the {hook} hook failed: {message}");
    hooks.on_error(&Error::Internal(format!(
        "the {hook} hook failed: {message}"
    )));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn decisions_have_one_json_shape() {
        let deny: ToolCallDecision =
            serde_json::from_value(json!({"action": "deny", "reason": "no"})).unwrap();
        assert_eq!(
            deny,
            ToolCallDecision::Deny {
                reason: "no".into()
            }
        );
        let rewrite = ToolCallDecision::Rewrite {
            arguments: json!({"a": 1}),
        };
        assert_eq!(
            serde_json::to_value(&rewrite).unwrap(),
            json!({"action": "rewrite", "arguments": {"a": 1}})
        );
        let warn: InputDecision =
            serde_json::from_value(json!({"action": "warn", "warning": "careful"})).unwrap();
        assert_eq!(
            warn,
            InputDecision::Warn {
                warning: "careful".into()
            }
        );
        let end: TurnDecision = serde_json::from_value(json!({"action": "end"})).unwrap();
        assert_eq!(end, TurnDecision::End);
    }
}
