//! The tool registry: named tools with a description, a JSON schema and a
//! handler, shared between the agent's callers and its inference thread.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;
use serde_json::Value;

use super::context::ToolContext;
use super::output::ToolOutput;
use super::validate::ArgumentValidator;
use super::ToolDefinition;
use crate::cancel::CancelToken;
use crate::error::{Error, Result};
use crate::settings::{describe, non_finite_at, non_finite_name};

/// What a handler returns: a JSON result, or a message the model will read.
pub type ToolResult = std::result::Result<Value, String>;

/// A tool handler. It runs on the agent's tool thread, one call at a time,
/// and may block: a stop does not wait for it.
pub type ToolHandler = Arc<dyn Fn(Value) -> ToolResult + Send + Sync>;

/// A tool handler that takes its call's [`ToolContext`] (the call id, the
/// call's cancel token, progress reports).
pub type ContextToolHandler = Arc<dyn Fn(Value, &ToolContext) -> ToolResult + Send + Sync>;

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

/// The longest time limit a tool takes, in milliseconds (as the config's
/// durations).
pub const MAX_TOOL_TIMEOUT_MS: i64 = i64::MAX;

/// How a tool runs, beside its definition: alone or not, and how long a
/// call may take. Every front door reads its own spelling into this one
/// type (Python's `exclusive=` and `timeout_ms=`, Node's `exclusive` and
/// `timeoutMs`, C's `zoo_tool_options`), so that a bad value is refused
/// here, with the same code and words in every language.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ToolOptions {
    /// Runs alone, never beside another call, even under `parallel`.
    pub exclusive: bool,
    /// A call still running after this is a tool error; `None`: no limit.
    pub timeout: Option<Duration>,
}

impl ToolOptions {
    /// Reads `{"exclusive": true, "timeout_ms": 500}`, as Python and Node
    /// pass their arguments: both keys are optional and `null` means the
    /// default (not exclusive, no limit); `timeout_ms` 0 is no limit too.
    /// `NaN`, `Infinity` and `-Infinity` (which Python's `json.dumps` and
    /// the Node package write for such numbers) are refused by the rule of
    /// their key. A value against its rule, an unknown key or text that is
    /// not an object is [`Error::InvalidArgument`] naming the tool.
    pub fn from_json(tool: &str, text: &str) -> Result<Self> {
        let mut de = serde_json::Deserializer::from_str(text);
        let entries: serde_json::Map<String, Value> =
            match serde_path_to_error::deserialize(&mut de) {
                Ok(entries) => entries,
                Err(e) => {
                    let Some(value) = non_finite_at(text, e.inner()) else {
                        return Err(match serde_json::from_str::<Value>(text) {
                            // JSON, but not an object.
                            Ok(other) => Self::not_an_object(tool, &describe(&other)),
                            Err(_) => Error::InvalidJson(format!(
                                "the options of tool `{tool}`: {}",
                                e.into_inner()
                            )),
                        });
                    };
                    let got = non_finite_name(value);
                    return Err(match e.path().iter().next() {
                        Some(serde_path_to_error::Segment::Map { key }) => match key.as_str() {
                            "exclusive" => Self::bad_exclusive(tool, &got),
                            "timeout_ms" => Self::bad_timeout(tool, &got),
                            other => Self::unknown(tool, other),
                        },
                        _ => Self::not_an_object(tool, &got),
                    });
                }
            };
        de.end()
            .map_err(|e| Error::InvalidJson(format!("the options of tool `{tool}`: {e}")))?;
        let mut options = ToolOptions::default();
        for (key, value) in &entries {
            match key.as_str() {
                "exclusive" => options.exclusive = Self::exclusive_from(tool, value)?,
                "timeout_ms" => options.timeout = Self::timeout_from(tool, value)?,
                other => return Err(Self::unknown(tool, other)),
            }
        }
        Ok(options)
    }

    /// The time limit for a whole number of milliseconds, as C passes it:
    /// 0 is no limit, a negative number is refused.
    pub fn timeout_ms(tool: &str, ms: i64) -> Result<Option<Duration>> {
        Self::timeout_from(tool, &Value::from(ms))
    }

    fn exclusive_from(tool: &str, value: &Value) -> Result<bool> {
        match value {
            Value::Null => Ok(false),
            Value::Bool(exclusive) => Ok(*exclusive),
            other => Err(Self::bad_exclusive(tool, &describe(other))),
        }
    }

    fn timeout_from(tool: &str, value: &Value) -> Result<Option<Duration>> {
        let ms = match value {
            Value::Null => return Ok(None),
            Value::Number(n) => n
                .as_i64()
                .filter(|ms| (0..=MAX_TOOL_TIMEOUT_MS).contains(ms)),
            _ => None,
        };
        match ms {
            Some(0) => Ok(None),
            Some(ms) => Ok(Some(Duration::from_millis(ms.unsigned_abs()))),
            None => Err(Self::bad_timeout(tool, &describe(value))),
        }
    }

    fn bad_exclusive(tool: &str, got: &str) -> Error {
        Error::InvalidArgument(format!(
            "the exclusive flag of tool `{tool}` must be true or false, got {got}"
        ))
    }

    fn bad_timeout(tool: &str, got: &str) -> Error {
        Error::InvalidArgument(format!(
            "the timeout of tool `{tool}` must be a whole number of milliseconds from 0 to \
             {MAX_TOOL_TIMEOUT_MS} (0 or null for no limit), got {got}"
        ))
    }

    fn unknown(tool: &str, key: &str) -> Error {
        Error::InvalidArgument(format!(
            "unknown option `{key}` of tool `{tool}`; the options are `exclusive` and `timeout_ms`"
        ))
    }

    fn not_an_object(tool: &str, got: &str) -> Error {
        Error::InvalidArgument(format!(
            "the options of tool `{tool}` must be a JSON object such as \
             {{\"exclusive\": true, \"timeout_ms\": 500}}, got {got}"
        ))
    }
}

/// A tool: its definition, a compiled validator for its arguments and its handler.
#[derive(Clone)]
pub struct Tool {
    definition: ToolDefinition,
    validator: Arc<ArgumentValidator>,
    handler: ContextToolHandler,
    /// Runs alone, never beside another call of the same reply.
    exclusive: bool,
    /// A call still running after this is a tool error.
    timeout: Option<Duration>,
    /// The handler returns a [`ToolOutput`]: the model reads its text only.
    structured: bool,
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
        Self::build(
            name.into(),
            description.into(),
            parameters,
            Arc::new(move |arguments, _: &ToolContext| handler(arguments)),
        )
    }

    /// Like [`Tool::new`] with a handler that is already shared.
    pub fn from_handler(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: ToolHandler,
    ) -> Result<Self> {
        Self::build(
            name.into(),
            description.into(),
            parameters,
            Arc::new(move |arguments, _: &ToolContext| handler(arguments)),
        )
    }

    /// A tool whose handler takes its call's [`ToolContext`] beside the
    /// arguments: the call id, a cancel token set by the chat's stop and by
    /// the tool's time limit, and `update` / `progress` reports that become
    /// `tool_call_update` / `tool_call_progress` events.
    ///
    /// ```
    /// use zoo_core::Tool;
    /// let tool = Tool::with_context("count", "Counts to n", serde_json::json!({"type": "object"}),
    ///     |args, ctx| {
    ///         for i in 0..args["n"].as_u64().unwrap_or(3) {
    ///             if ctx.is_cancelled() { return Err("stopped".into()); }
    ///             ctx.progress(format!("at {i}"));
    ///         }
    ///         Ok(serde_json::json!("done"))
    ///     }).unwrap();
    /// assert_eq!(tool.name(), "count");
    /// ```
    pub fn with_context(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: impl Fn(Value, &ToolContext) -> ToolResult + Send + Sync + 'static,
    ) -> Result<Self> {
        Self::build(
            name.into(),
            description.into(),
            parameters,
            Arc::new(handler),
        )
    }

    fn build(
        name: String,
        description: String,
        parameters: Value,
        handler: ContextToolHandler,
    ) -> Result<Self> {
        if !is_valid_tool_name(&name) {
            return Err(Error::InvalidArgument(format!(
                "tool name `{name}` must match ^[A-Za-z0-9_-]{{1,64}}$"
            )));
        }
        let validator = ArgumentValidator::new(&name, &parameters)?;
        Ok(Tool {
            definition: ToolDefinition {
                name,
                description,
                parameters,
            },
            validator: Arc::new(validator),
            handler,
            exclusive: false,
            timeout: None,
            structured: false,
        })
    }

    /// A tool whose handler returns a [`ToolOutput`]: the model reads its
    /// `text` (and sees its images), while the response's record, the
    /// `tool_call_finished` event and the hooks get `{"text", "details"}`.
    /// The built-in tools are made so: a command's whole output is a
    /// detail for the host, and its text is what the model needs.
    ///
    /// ```
    /// use zoo_core::{Tool, ToolOutput};
    /// let tool = Tool::with_output("count_lines", "Counts lines", serde_json::json!({"type": "object"}),
    ///     |args, _ctx| {
    ///         let n = args["text"].as_str().unwrap_or("").lines().count();
    ///         Ok(ToolOutput::text(format!("{n} lines")).with_details(serde_json::json!({"lines": n})))
    ///     }).unwrap();
    /// assert!(tool.is_structured());
    /// ```
    pub fn with_output(
        name: impl Into<String>,
        description: impl Into<String>,
        parameters: Value,
        handler: impl Fn(Value, &ToolContext) -> std::result::Result<ToolOutput, String>
            + Send
            + Sync
            + 'static,
    ) -> Result<Self> {
        let mut tool = Self::build(
            name.into(),
            description.into(),
            parameters,
            Arc::new(move |arguments, context: &ToolContext| {
                handler(arguments, context).map(|output| output.to_value())
            }),
        )?;
        tool.structured = true;
        Ok(tool)
    }

    /// Whether the handler returns a [`ToolOutput`] (see [`Tool::with_output`]).
    pub fn is_structured(&self) -> bool {
        self.structured
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

    /// Sets both options at once, as a front door read them.
    pub fn with_options(self, options: ToolOptions) -> Self {
        self.exclusive(options.exclusive).timeout(options.timeout)
    }

    /// Whether the tool runs alone and its time bound.
    pub fn options(&self) -> ToolOptions {
        ToolOptions {
            exclusive: self.exclusive,
            timeout: self.timeout,
        }
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

    /// Runs the handler outside any chat, with a detached context (its
    /// reports go nowhere, its token is never set). A panicking handler is
    /// reported as an error, so that one bad tool cannot take the inference
    /// thread down.
    pub fn call(&self, arguments: Value) -> ToolResult {
        let context = ToolContext::detached("", self.name(), CancelToken::new());
        self.call_with(arguments, &context)
    }

    /// Runs the handler with the call's context; a panic is an error.
    pub fn call_with(&self, arguments: Value, context: &ToolContext) -> ToolResult {
        catch_unwind(AssertUnwindSafe(|| (self.handler)(arguments, context)))
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
        let context = ToolContext::detached("", self.name(), CancelToken::new());
        self.invoke_validated_with(arguments, &context)
    }

    /// [`invoke_validated`](Self::invoke_validated) with the call's context.
    pub fn invoke_validated_with(&self, arguments: Value, context: &ToolContext) -> Result<Value> {
        self.call_with(arguments, context)
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
    /// While a skill with `allowed-tools` is active: the only tools shown
    /// and run.
    visible: RwLock<Option<Vec<String>>>,
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
        if !self.is_visible(name) {
            return None;
        }
        self.tools.read().iter().find(|t| t.name() == name).cloned()
    }

    /// Shows and runs only the named tools (`None` shows every tool again).
    pub fn restrict(&self, names: Option<Vec<String>>) {
        *self.visible.write() = names;
    }

    fn is_visible(&self, name: &str) -> bool {
        self.visible
            .read()
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == name))
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
            .filter(|t| self.is_visible(t.name()))
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

#[cfg(test)]
mod tests {
    use super::*;

    fn read(text: &str) -> Result<ToolOptions> {
        ToolOptions::from_json("slow", text)
    }

    const TIMEOUT_RULE: &str = "invalid argument: the timeout of tool `slow` must be a whole \
        number of milliseconds from 0 to 9223372036854775807 (0 or null for no limit), got";

    #[test]
    fn options_read_from_json() {
        let ms = |n| Some(Duration::from_millis(n));
        for (text, exclusive, timeout) in [
            ("{}", false, None),
            ("{\"exclusive\": true}", true, None),
            ("{\"exclusive\": null, \"timeout_ms\": null}", false, None),
            ("{\"timeout_ms\": 0}", false, None),
            (
                "{\"exclusive\": false, \"timeout_ms\": 500}",
                false,
                ms(500),
            ),
            (
                "{\"timeout_ms\": 9223372036854775807}",
                false,
                ms(i64::MAX as u64),
            ),
        ] {
            let options = read(text).unwrap_or_else(|e| panic!("{text}: {e}"));
            assert_eq!(options, ToolOptions { exclusive, timeout }, "{text}");
        }
    }

    #[test]
    fn bad_options_are_invalid_arguments_naming_the_tool() {
        for (text, got) in [
            ("{\"timeout_ms\": -5}", "-5"),
            ("{\"timeout_ms\": 1.5}", "1.5"),
            ("{\"timeout_ms\": 500.0}", "500.0"),
            ("{\"timeout_ms\": \"500\"}", "\"500\""),
            ("{\"timeout_ms\": true}", "true"),
            (
                "{\"timeout_ms\": 9223372036854775808}",
                "9223372036854775808",
            ),
            ("{\"timeout_ms\": NaN}", "NaN"),
            (
                "{\"exclusive\": false, \"timeout_ms\": -Infinity}",
                "-Infinity",
            ),
            ("{\"timeout_ms\": [1]}", "an array"),
        ] {
            let e = read(text).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidArgument, "{text}");
            assert_eq!(e.to_string(), format!("{TIMEOUT_RULE} {got}"), "{text}");
        }
        for (text, got) in [
            ("{\"exclusive\": \"yes\"}", "\"yes\""),
            ("{\"exclusive\": 1}", "1"),
            ("{\"exclusive\": Infinity}", "Infinity"),
            ("{\"exclusive\": {}}", "an object"),
        ] {
            let e = read(text).unwrap_err();
            assert_eq!(
                e.to_string(),
                format!(
                    "invalid argument: the exclusive flag of tool `slow` must be true or false, got {got}"
                ),
                "{text}"
            );
        }
        let e = read("{\"timeoutMs\": 5}").unwrap_err();
        assert_eq!(
            e.to_string(),
            "invalid argument: unknown option `timeoutMs` of tool `slow`; \
             the options are `exclusive` and `timeout_ms`"
        );
        for (text, got) in [("[]", "an array"), ("5", "5"), ("NaN", "NaN")] {
            let e = read(text).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidArgument, "{text}");
            assert!(
                e.to_string().ends_with(&format!("got {got}")),
                "{text}: {e}"
            );
        }
        for text in ["{", "{\"exclusive\": true} x", "{\"timeout_ms\": Nope}"] {
            let e = read(text).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidJson, "{text}: {e}");
        }
    }

    #[test]
    fn c_milliseconds() {
        assert_eq!(ToolOptions::timeout_ms("slow", 0).unwrap(), None);
        assert_eq!(
            ToolOptions::timeout_ms("slow", 250).unwrap(),
            Some(Duration::from_millis(250))
        );
        let e = ToolOptions::timeout_ms("slow", -1).unwrap_err();
        assert_eq!(e.to_string(), format!("{TIMEOUT_RULE} -1"));
    }

    #[test]
    fn a_tool_carries_its_options() {
        let options = ToolOptions {
            exclusive: true,
            timeout: Some(Duration::from_millis(40)),
        };
        let tool = Tool::new("slow", "", serde_json::json!({"type": "object"}), |_| {
            Ok(Value::Null)
        })
        .unwrap()
        .with_options(options);
        assert!(tool.is_exclusive());
        assert_eq!(tool.time_limit(), options.timeout);
        assert_eq!(tool.options(), options);
    }
}
