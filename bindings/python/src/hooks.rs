//! `PyHooks`: the agent's Python hooks as `zoo_core::Hooks`.
//!
//! The `zoo_keeper` package keeps the decorated functions and hands the
//! native side one dispatcher, `dispatch(hook, input_json) -> decision_json
//! or None`, which turns Python arguments and return values into the JSON
//! shapes every front door shares (`{"action": "deny", "reason": ...}`).
//! A Python exception is a failing hook, which fails safe as
//! `zoo_core::Hooks` documents.

use pyo3::prelude::*;
use serde_json::{json, Value};
use zoo_core::{
    ContextRequest, Error, Hooks, InputDecision, Message, ToolCall, ToolCallDecision, TurnDecision,
};

use crate::agent::describe;
use crate::thread_state;

/// The hook points, by the names the dispatcher is called with.
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

/// Python hooks: the dispatcher, and the points that have a hook (the
/// others are not called, so they cost no GIL).
pub struct PyHooks {
    dispatch: Py<PyAny>,
    set: [bool; NAMES.len()],
}

impl PyHooks {
    /// Hooks calling `dispatch` for the points in `names`; an unknown name
    /// is an invalid argument.
    pub fn new(dispatch: Py<PyAny>, names: &[String]) -> Result<Self, Error> {
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
        Ok(PyHooks { dispatch, set })
    }

    /// Calls the hook `name` with `input`: its decision, `None` when it
    /// has none or returned None, or its exception as a message.
    fn call(&self, name: &str, input: impl FnOnce() -> Value) -> Result<Option<Value>, String> {
        if !NAMES.iter().zip(self.set).any(|(n, set)| set && *n == name) {
            return Ok(None);
        }
        let input = input().to_string();
        thread_state::attach(|py| {
            let returned = self
                .dispatch
                .call1(py, (name, input))
                .map_err(|error| describe(py, &error))?;
            let text: Option<String> = returned
                .extract(py)
                .map_err(|_| "the hook dispatcher must return a JSON string or None".to_string())?;
            text.map(|text| {
                serde_json::from_str(&text)
                    .map_err(|e| format!("the hook returned invalid JSON: {e}"))
            })
            .transpose()
        })
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

impl Hooks for PyHooks {
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
        // The dispatcher answers {"result": value} to replace, so that a
        // replacement may itself be null.
        let decision = self.call("after_tool_call", || match outcome {
            Ok(result) => json!({ "call": call, "result": result }),
            Err(error) => json!({ "call": call, "error": error }),
        })?;
        match decision {
            None => Ok(None),
            Some(Value::Object(mut replace)) if replace.contains_key("result") => {
                Ok(replace.remove("result"))
            }
            Some(other) => Err(format!("the decision {other} is not valid")),
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
        if !self.set[NAMES.len() - 1] {
            return;
        }
        let input = json!({ "code": error.code().as_i32(), "message": error.to_string() });
        let input = input.to_string();
        thread_state::attach(|py| {
            // on_error has no one to report to: its own exception goes where
            // Python sends exceptions that cannot propagate
            // (sys.unraisablehook).
            if let Err(raised) = self.dispatch.call1(py, ("on_error", input)) {
                raised.write_unraisable(py, None);
            }
        });
    }
}
