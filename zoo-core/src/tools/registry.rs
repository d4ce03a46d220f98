//! The tool registry: named tools with a description, a JSON schema and a
//! handler, shared between the agent's callers and its inference thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::Value;

use super::validate::ArgumentValidator;
use super::ToolDefinition;
use crate::error::{Error, Result};

/// What a handler returns: a JSON result, or a message the model will read.
pub type ToolResult = std::result::Result<Value, String>;

/// A tool handler. It runs on the agent's tool thread, one call at a time,
/// and may block: a stop does not wait for it.
pub type ToolHandler = Arc<dyn Fn(Value) -> ToolResult + Send + Sync>;

/// The error every front door gives for a tool registered with something
/// that cannot be called (`None`, a number, NULL): `got` names what it was.
pub fn handler_not_callable(tool: &str, got: &str) -> Error {
    Error::InvalidArgument(format!(
        "the handler of tool `{tool}` must be a function, got {got}"
    ))
}

/// Whether `name` fits `^[A-Za-z0-9_-]{1,64}$`.
pub fn is_valid_tool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// A tool: its definition, a compiled validator for its arguments and its handler.
#[derive(Clone)]
pub struct Tool {
    definition: ToolDefinition,
    validator: Arc<ArgumentValidator>,
    handler: ToolHandler,
    /// Runs alone, never beside another call of the same reply.
    exclusive: bool,
    /// A call still running after this is a tool error.
    timeout: Option<Duration>,
}

impl std::fmt::Debug for Tool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tool")
            .field("definition", &self.definition)
            .finish_non_exhaustive()
    }
}

impl Tool {
    /// A tool with an explicit JSON schema for its arguments. The name must
    /// fit `^[A-Za-z0-9_-]{1,64}$` and the schema must be a valid JSON schema
    /// of an object.
    pub fn new(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: impl Fn(Value) -> ToolResult + Send + Sync + 'static,
    ) -> Result<Self> {
        Self::from_handler(name, description, parameters, Arc::new(handler))
    }

    /// Like [`Tool::new`] with a handler that is already shared.
    pub fn from_handler(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: ToolHandler,
    ) -> Result<Self> {
        let name = name.into();
        if !is_valid_tool_name(&name) {
            return Err(Error::InvalidArgument(format!(
                "tool name `{name}` must match ^[A-Za-z0-9_-]{{1,64}}$"
            )));
        }
        let validator = ArgumentValidator::new(&name, &parameters)?;
        Ok(Tool {
            definition: ToolDefinition {
                name,
                description: description.into(),
                parameters,
            },
            validator: Arc::new(validator),
            handler,
            exclusive: false,
            timeout: None,
        })
    }

    /// Marks the tool as one that must never run beside another call (a
    /// write, a shell command): under `parallel` execution it runs alone.
    pub fn exclusive(mut self, exclusive: bool) -> Self {
        self.exclusive = exclusive;
        self
    }

    /// Bounds a call's time: one still running after `timeout` is answered
    /// with a tool error (the handler finishes in the background).
    pub fn timeout(mut self, timeout: Option<Duration>) -> Self {
        self.timeout = timeout;
        self
    }

    /// Whether the tool runs alone.
    pub fn is_exclusive(&self) -> bool {
        self.exclusive
    }

    /// The tool's time bound, if any.
    pub fn time_limit(&self) -> Option<Duration> {
        self.timeout
    }

    /// The tool's name.
    pub fn name(&self) -> &str {
        &self.definition.name
    }

    /// What the model is told about the tool.
    pub fn definition(&self) -> &ToolDefinition {
        &self.definition
    }

    /// Checks arguments against the schema; the error lists every violation.
    pub fn validate(&self, arguments: &Value) -> Result<()> {
        self.validator.validate(arguments)
    }

    /// Runs the handler. A panicking handler is reported as an error, so
    /// that one bad tool cannot take the inference thread down.
    pub fn call(&self, arguments: Value) -> ToolResult {
        catch_unwind(AssertUnwindSafe(|| (self.handler)(arguments)))
            .unwrap_or_else(|payload| Err(Error::from_panic(payload.as_ref()).to_string()))
    }

    /// Validates, then runs the handler: the whole invocation, with typed errors.
    pub fn invoke(&self, arguments: Value) -> Result<Value> {
        self.validate(&arguments)?;
        self.invoke_validated(arguments)
    }

    /// Runs the handler on arguments that [`validate`](Self::validate)
    /// accepted, with its failure as a typed error.
    pub fn invoke_validated(&self, arguments: Value) -> Result<Value> {
        self.call(arguments)
            .map_err(|message| Error::ToolHandlerFailed {
                tool: self.definition.name.clone(),
                message,
            })
    }
}

/// Registered tools in registration order (so prompts are stable from turn
/// to turn). Safe to change while a chat runs: each model reply sees the
/// tools registered when it started.
#[derive(Debug, Default)]
pub struct ToolRegistry {
    tools: RwLock<Vec<Tool>>,
}

impl ToolRegistry {
    /// An empty registry.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a tool; one with the same name is replaced in place.
    pub fn register(&self, tool: Tool) {
        let mut tools = self.tools.write();
        match tools.iter_mut().find(|t| t.name() == tool.name()) {
            Some(slot) => *slot = tool,
            None => tools.push(tool),
        }
    }

    /// Removes a tool; returns whether it was there.
    pub fn unregister(&self, name: &str) -> bool {
        let mut tools = self.tools.write();
        let before = tools.len();
        tools.retain(|t| t.name() != name);
        tools.len() != before
    }

    /// Removes every tool whose name starts with `prefix`; returns how many.
    pub fn unregister_prefix(&self, prefix: &str) -> usize {
        let mut tools = self.tools.write();
        let before = tools.len();
        tools.retain(|t| !t.name().starts_with(prefix));
        before - tools.len()
    }

    /// The tool called `name`.
    pub fn get(&self, name: &str) -> Option<Tool> {
        self.tools.read().iter().find(|t| t.name() == name).cloned()
    }

    /// Every tool, in registration order.
    pub fn snapshot(&self) -> Vec<Tool> {
        self.tools.read().clone()
    }

    /// The definitions the model is shown, in registration order.
    pub fn definitions(&self) -> Vec<ToolDefinition> {
        self.tools
            .read()
            .iter()
            .map(|t| t.definition.clone())
            .collect()
    }

    /// How many tools are registered.
    pub fn len(&self) -> usize {
        self.tools.read().len()
    }

    /// Whether no tool is registered.
    pub fn is_empty(&self) -> bool {
        self.tools.read().is_empty()
    }

    /// Looks a tool up, validates the arguments and runs it.
    pub fn invoke(&self, name: &str, arguments: Value) -> Result<Value> {
        let tool = self
            .get(name)
            .ok_or_else(|| Error::ToolNotFound(name.to_string()))?;
        tool.invoke(arguments)
    }
}
