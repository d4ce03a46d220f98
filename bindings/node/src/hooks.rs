//! `NodeHooks`: the agent's JavaScript hooks as `zoo_core::Hooks`.
//!
//! The package (`wrapHooks` in `node/lib/zoo-keeper.js`) gives the native
//! side one dispatcher that never rejects, called like a tool handler with
//! `{"hook": name, "input": {...}}` and resolving to
//! `{"ok":true,"value":decision or null}` or `{"ok":false,"error":"..."}`.
//! It runs on the JS thread; the inference thread waits for it as a tool
//! thread waits for a tool (`tools::call`). A throw or a rejection is a
//! failing hook, which fails safe as `zoo_core::Hooks` documents.

use serde_json::{json, Value};
use zoo_core::{
    ContextRequest, Error, Hooks, InputDecision, Message, ToolCall, ToolCallDecision, TurnDecision,
};

use crate::tools::{self, ToolFunction};

/// The hook points, by the names the dispatcher is called with (the JSON
/// names; the package maps them to `inputFilter`, `beforeTurn`, ...).
const NAMES: [&str; 8] = [
    "input_filter",
    "before_turn",
    "after_turn",
    "before_tool_call",
    "after_tool_call",
    "transform_context",
    "context_strategy",
    "on_error",
];

/// JavaScript hooks: the dispatcher, and the points that have a hook (the
/// others are not called, so they cost no crossing to the JS thread).
pub struct NodeHooks {
    dispatch: ToolFunction,
    set: [bool; NAMES.len()],
}

impl NodeHooks {
    /// Hooks calling `dispatch` for the points in `names`; an unknown name
    /// is an invalid argument.
    pub fn new(dispatch: ToolFunction, names: &[String]) -> Result<Self, Error> {
        let mut set = [false; NAMES.len()];
        for name in names {
            let index = NAMES.iter().position(|n| n == name).ok_or_else(|| {
                Error::InvalidArgument(format!(
                    "`{name}` is not a hook (expected one of {})",
                    NAMES.join(", ")
                ))
            })?;
            set[index] = true;
        }
        Ok(NodeHooks { dispatch, set })
    }

    /// Calls the hook `name` with `input`: its decision, `None` when it has
    /// none or gave none, or its failure.
    fn call(&self, name: &str, input: impl FnOnce() -> Value) -> Result<Option<Value>, String> {
        if !NAMES.iter().zip(self.set).any(|(n, set)| set && *n == name) {
            return Ok(None);
        }
        let decision = tools::call(&self.dispatch, &json!({ "hook": name, "input": input() }))?;
        Ok(Some(decision).filter(|d| !d.is_null()))
    }

    /// Calls a hook whose decision has a serde shape (`parse` is
    /// `serde_json::from_value` for it).
    fn decide<T: Default>(
        &self,
        name: &str,
        input: impl FnOnce() -> Value,
        parse: impl FnOnce(Value) -> serde_json::Result<T>,
    ) -> Result<T, String> {
        match self.call(name, input)? {
            None => Ok(T::default()),
            Some(decision) => parse(decision.clone())
                .map_err(|e| format!("the decision {decision} is not valid: {e}")),
        }
    }
}

impl Hooks for NodeHooks {
    fn filter_input(&self, message: &str) -> Result<InputDecision, String> {
        self.decide(
            "input_filter",
            || json!({ "message": message }),
            serde_json::from_value,
        )
    }

    fn before_turn(&self, turn: u32) -> Result<TurnDecision, String> {
        self.decide(
            "before_turn",
            || json!({ "turn": turn }),
            serde_json::from_value,
        )
    }

    fn after_turn(&self, turn: u32, text: &str) -> Result<(), String> {
        self.call("after_turn", || json!({ "turn": turn, "text": text }))
            .map(drop)
    }

    fn before_tool_call(&self, call: &ToolCall) -> Result<ToolCallDecision, String> {
        self.decide("before_tool_call", || json!(call), serde_json::from_value)
    }

    fn after_tool_call(
        &self,
        call: &ToolCall,
        outcome: &Result<Value, String>,
    ) -> Result<Option<Value>, String> {
        // A replacement is `{"result": value}`, so that it may be null.
        let decision = self.call("after_tool_call", || match outcome {
            Ok(result) => json!({ "call": call, "result": result }),
            Err(error) => json!({ "call": call, "error": error }),
        })?;
        match decision {
            None => Ok(None),
            Some(Value::Object(mut replace)) if replace.contains_key("result") => {
                Ok(replace.remove("result"))
            }
            Some(other) => Err(format!(
                "the decision {other} is not valid: expected {{\"result\": ...}}"
            )),
        }
    }

    fn transform_context(&self, messages: Vec<Message>) -> Result<Vec<Message>, String> {
        match self.call("transform_context", || json!({ "messages": &messages }))? {
            None => Ok(messages),
            Some(edited) => serde_json::from_value(edited)
                .map_err(|e| format!("the messages it returned are not valid: {e}")),
        }
    }

    fn context_strategy(&self, request: &ContextRequest) -> Result<Option<Vec<Message>>, String> {
        match self.call("context_strategy", || json!(request))? {
            None => Ok(None),
            Some(kept) => serde_json::from_value(kept)
                .map(Some)
                .map_err(|e| format!("the messages it returned are not valid: {e}")),
        }
    }

    fn on_error(&self, error: &Error) {
        // The package reports on_error's own throw (it has no one to tell).
        let _ = self.call(
            "on_error",
            || json!({ "code": error.code().as_i32(), "message": error.to_string() }),
        );
    }
}
