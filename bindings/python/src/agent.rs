//! `NativeAgent` and `NativeChat`: the agent, its tools and its chats.

use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use pyo3::prelude::*;
use serde_json::Value;
use zoo_core::{
    Agent, AgentSlot, CancelToken, ChatHandle, ChatOptions, Config, Error, Message, Tool,
    ToolChoice, ToolContext, ToolOptions,
};

use zoo_core::tools::builtin::{confirm_not_callable, BuiltinToolsConfig, ConfirmFn};

use crate::backend::PyBackend;
use crate::errors::{to_py, IntoPy};
use crate::event;
use crate::hooks::PyHooks;
use crate::model::NativeModel;
use crate::thread_state;
use crate::tool_context::NativeToolContext;

/// How often a blocking wait wakes to let Ctrl-C (and other signals) in.
const SIGNAL_SLICE: Duration = Duration::from_millis(50);

/// An agent (wrapped by `zoo_keeper.Agent`).
#[pyclass(module = "zoo_keeper._native", frozen)]
pub struct NativeAgent {
    agent: AgentSlot,
}

/// The first exception raised by a chat's Python callback; it aborts the
/// chat, which undoes its turn, and is raised again in the caller.
#[derive(Clone, Default)]
struct CallbackError(Arc<Mutex<Option<PyErr>>>);

impl CallbackError {
    fn record(&self, py: Python<'_>, error: PyErr, cancel: &CancelToken) {
        cancel.abort(format!("a callback raised {}", describe(py, &error)));
        self.0.lock().get_or_insert(error);
    }

    fn is_set(&self) -> bool {
        self.0.lock().is_some()
    }

    fn take(&self) -> Option<PyErr> {
        self.0.lock().take()
    }
}

impl NativeAgent {
    fn agent(&self) -> PyResult<Arc<Agent>> {
        self.agent.get().py_err()
    }

    /// Builds core options; Python callbacks run on the inference thread.
    #[allow(clippy::too_many_arguments)]
    fn options(
        on_token: Option<Py<PyAny>>,
        on_event: Option<Py<PyAny>>,
        tool_choice: Option<String>,
        max_tokens: Option<i64>,
        rag_context: Option<String>,
        overrides: ChatOverrides,
        cancel: &CancelToken,
        failed: &CallbackError,
    ) -> PyResult<ChatOptions> {
        let mut options = ChatOptions::new().cancel_token(cancel.clone());
        options.hooks = overrides.hooks;
        options.tool_choice = tool_choice
            .as_deref()
            .map(ToolChoice::parse)
            .transpose()
            .py_err()?;
        options.max_tokens = max_tokens
            .map(|n| {
                u32::try_from(n)
                    .map_err(|_| Error::out_of_range("max_tokens", 0, u32::MAX.into(), n))
            })
            .transpose()
            .py_err()?;
        options.rag_context = rag_context;
        let count =
            |name, value: Option<i64>, max| value.map(|n| in_range(name, n, max)).transpose();
        options.max_turns = count("max_turns", overrides.max_turns, u32::MAX.into())
            .py_err()?
            .map(|n| n as u32);
        options.max_total_tokens =
            count("max_total_tokens", overrides.max_total_tokens, i64::MAX).py_err()?;
        options.max_duration_ms =
            count("max_duration_ms", overrides.max_duration_ms, i64::MAX).py_err()?;
        if let Some(callback) = on_token {
            let (failed, cancel) = (failed.clone(), cancel.clone());
            options = options.on_token(move |text| {
                if failed.is_set() {
                    return;
                }
                thread_state::attach(|py| {
                    if let Err(error) = callback.call1(py, (text,)) {
                        failed.record(py, error, &cancel);
                    }
                });
            });
        }
        if let Some(callback) = overrides.on_thinking {
            let (failed, cancel) = (failed.clone(), cancel.clone());
            options = options.on_thinking(move |text| {
                if failed.is_set() {
                    return;
                }
                thread_state::attach(|py| {
                    if let Err(error) = callback.call1(py, (text,)) {
                        failed.record(py, error, &cancel);
                    }
                });
            });
        }
        if let Some(callback) = on_event {
            let (failed, cancel) = (failed.clone(), cancel.clone());
            options = options.on_event(move |event| {
                if failed.is_set() {
                    return;
                }
                thread_state::attach(|py| {
                    // Straight from the serde type: the same keys as the
                    // JSON every front door sees, with nothing to parse.
                    let sent =
                        event::to_python(py, event).and_then(|event| callback.call1(py, (event,)));
                    if let Err(error) = sent {
                        failed.record(py, error, &cancel);
                    }
                });
            });
        }
        Ok(options)
    }
}

/// Starts a chat: on `message`, or without one to continue the history
/// as it stands or (`regenerate`) to answer its last user message again.
fn start(
    agent: &Agent,
    message: Option<String>,
    regenerate: bool,
    options: ChatOptions,
) -> ChatHandle {
    match (message, regenerate) {
        (Some(message), _) => agent.chat(message, options),
        (None, true) => agent.regenerate(options),
        (None, false) => agent.continue_chat(options),
    }
}

/// What a chat overrides: its own limits, as Python passes them (`None`
/// keeps the agent's), and its own hooks (`None` runs the agent's).
#[derive(Default)]
struct ChatOverrides {
    /// Receives the model's reasoning as it streams.
    on_thinking: Option<Py<PyAny>>,
    max_turns: Option<i64>,
    max_total_tokens: Option<i64>,
    max_duration_ms: Option<i64>,
    hooks: Option<Arc<dyn zoo_core::Hooks>>,
}

/// A chat's own hooks: `dispatch` for the points in `names`, as
/// `NativeAgent::set_hooks` takes them.
fn chat_hooks(
    dispatch: Option<Py<PyAny>>,
    names: Vec<String>,
) -> PyResult<Option<Arc<dyn zoo_core::Hooks>>> {
    dispatch
        .map(|dispatch| {
            PyHooks::new(dispatch, &names).map(|h| Arc::new(h) as Arc<dyn zoo_core::Hooks>)
        })
        .transpose()
        .py_err()
}

/// `value` as a count from 0 to `max`, or the core's out-of-range error.
fn in_range(name: &str, value: i64, max: i64) -> Result<u64, Error> {
    match value {
        0.. if value <= max => Ok(value as u64),
        _ => Err(Error::out_of_range(name, 0, max, value)),
    }
}

/// The tool's result, or the message the model reads: a Python exception
/// in a tool is a tool error, never a crash. With a context, the function
/// also gets a `NativeToolContext`.
fn call_python_tool(
    function: &Py<PyAny>,
    arguments: &Value,
    context: Option<&ToolContext>,
) -> Result<Value, String> {
    thread_state::attach(|py| {
        let returned = match context {
            None => function.call1(py, (arguments.to_string(),)),
            Some(context) => {
                let context = NativeToolContext {
                    context: context.clone(),
                };
                function.call1(py, (arguments.to_string(), context))
            }
        }
        .map_err(|error| describe(py, &error))?;
        let text: String = returned
            .extract(py)
            .map_err(|_| "the tool wrapper must return a JSON string".to_string())?;
        serde_json::from_str(&text).map_err(|e| format!("the tool returned invalid JSON: {e}"))
    })
}

/// A Python callable as the built-in tools' confirmation: called with the
/// tool's name and the arguments' JSON; its truth allows the call, an
/// exception refuses it (worded as Python prints it).
fn python_confirm(function: Py<PyAny>) -> ConfirmFn {
    Arc::new(move |tool: &str, arguments: &Value| {
        thread_state::attach(|py| {
            let answer = function
                .call1(py, (tool, arguments.to_string()))
                .and_then(|answer| answer.bind(py).is_truthy())
                .map_err(|error| describe(py, &error))?;
            Ok(answer)
        })
    })
}

/// `TypeName: message`, as Python prints an exception's last line.
pub(crate) fn describe(py: Python<'_>, error: &PyErr) -> String {
    let name = error
        .get_type(py)
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "Exception".into());
    let message = error.value(py).to_string();
    if message.is_empty() {
        name
    } else {
        format!("{name}: {message}")
    }
}

/// Waits for a chat with the GIL released, in slices so that signals
/// (Ctrl-C) are handled; a signal cancels the chat and is raised.
fn wait_interruptibly(
    py: Python<'_>,
    handle: &ChatHandle,
) -> PyResult<zoo_core::Result<zoo_core::Response>> {
    loop {
        if let Some(result) = py.detach(|| handle.wait_timeout(SIGNAL_SLICE)) {
            return Ok(result);
        }
        if let Err(signal) = py.check_signals() {
            handle.cancel();
            let _ = py.detach(|| handle.wait());
            return Err(signal);
        }
    }
}

#[pymethods]
impl NativeAgent {
    /// Starts an agent. `config_json` holds the config keys (a `provider`,
    /// such as the scripted mock, or a `model_path`); `model` shares a
    /// loaded model instead; `backend(request_json, sink)` is a backend
    /// written in Python (the package's runner of the user's `generate`),
    /// with `count_tokens(message_json) -> int` if it counts. The GIL is
    /// released while the model loads.
    #[new]
    #[pyo3(signature = (config_json, model = None, backend = None, count_tokens = None))]
    fn new(
        py: Python<'_>,
        config_json: &str,
        model: Option<&NativeModel>,
        backend: Option<Py<PyAny>>,
        count_tokens: Option<Py<PyAny>>,
    ) -> PyResult<Self> {
        let config = Config::from_json(config_json).py_err()?;
        let model = model.map(|m| m.model.clone());
        let backend = backend.map(|run| PyBackend {
            run,
            count: count_tokens,
        });
        let agent = py
            .detach(move || match (model, backend) {
                (Some(_), Some(_)) => Err(Error::InvalidArgument(
                    "an agent runs on a model or on a backend, not both".into(),
                )),
                (None, Some(backend)) => Agent::with_host_backend(backend, config),
                (Some(model), None) => Agent::with_model(model, config),
                (None, None) => Agent::create(config),
            })
            .py_err()?;
        Ok(NativeAgent {
            agent: AgentSlot::new(agent),
        })
    }

    /// Registers a tool. `function(arguments_json: str) -> str` returns the
    /// result as JSON; an exception becomes a tool error the model reads.
    /// With `with_context`, it is called as `function(arguments_json,
    /// context)` with the call's `NativeToolContext`. `options_json` is
    /// `{"exclusive": ..., "timeout_ms": ...}` as `json.dumps` writes the
    /// keyword arguments; the core checks it.
    #[pyo3(signature = (name, description, schema_json, function, options_json = None, with_context = false))]
    fn register_tool(
        &self,
        name: &str,
        description: &str,
        schema_json: &str,
        function: Bound<'_, PyAny>,
        options_json: Option<&str>,
        with_context: bool,
    ) -> PyResult<()> {
        if !function.is_callable() {
            let got = function.get_type().name()?.to_string();
            return Err(to_py(zoo_core::tools::registry::handler_not_callable(
                name, &got,
            )));
        }
        let function = function.unbind();
        let schema: Value = serde_json::from_str(schema_json)
            .map_err(|e| to_py(Error::InvalidJson(format!("tool schema: {e}"))))?;
        let tool = Tool::with_context(name, description, schema, move |arguments, context| {
            call_python_tool(&function, &arguments, with_context.then_some(context))
        })
        .py_err()?;
        // Checked after the name, so that an error names a valid tool.
        let options = options_json
            .map(|text| ToolOptions::from_json(name, text))
            .transpose()
            .py_err()?
            .unwrap_or_default();
        let tool = tool.with_options(options);
        self.agent()?.register_tool(tool);
        Ok(())
    }

    /// Adds built-in tools: `options_json` is `{"tools", "workspace",
    /// "bash_deny"}` (the config's `builtin_tools`); `confirm(tool,
    /// arguments_json) -> bool` (None: ask nothing) is asked before
    /// `write_file`, `edit_file` and `bash` run, on the tool thread with the
    /// GIL; an exception refuses the call and the model reads it.
    #[pyo3(signature = (options_json, confirm=None))]
    fn add_builtin_tools(
        &self,
        options_json: &str,
        confirm: Option<Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let config = BuiltinToolsConfig::from_json(options_json).py_err()?;
        let confirm = match confirm {
            None => None,
            Some(function) if function.is_callable() => Some(python_confirm(function.unbind())),
            Some(other) => {
                let got = other.get_type().name()?.to_string();
                return Err(to_py(confirm_not_callable(&got)));
            }
        };
        let names: Vec<&str> = config.tools.iter().map(String::as_str).collect();
        self.agent()?
            .add_builtin_tools(&names, config.options(confirm))
            .py_err()
    }

    /// Removes a tool; returns whether it existed.
    fn unregister_tool(&self, name: &str) -> PyResult<bool> {
        Ok(self.agent()?.unregister_tool(name))
    }

    /// Sets the hooks every chat runs: `dispatch(hook, input_json)` is
    /// called for the points in `names` (see `hooks::PyHooks`); None
    /// removes them. A chat already running keeps the hooks it started with.
    #[pyo3(signature = (dispatch, names))]
    fn set_hooks(&self, dispatch: Option<Py<PyAny>>, names: Vec<String>) -> PyResult<()> {
        let hooks = dispatch
            .map(|dispatch| PyHooks::new(dispatch, &names))
            .transpose()
            .py_err()?;
        self.agent()?
            .set_hooks(hooks.map(|hooks| Arc::new(hooks) as Arc<dyn zoo_core::Hooks>));
        Ok(())
    }

    /// Connects an MCP server described by `transport_json` (the C ABI's
    /// JSON form) and registers its tools as `{name}__{tool}`; returns the
    /// server's description as JSON. The GIL is released meanwhile.
    fn add_mcp_server(&self, py: Python<'_>, name: &str, transport_json: &str) -> PyResult<String> {
        let transport = zoo_core::McpTransport::from_json(transport_json).py_err()?;
        let agent = self.agent()?;
        let info = py
            .detach(move || agent.add_mcp_server(name, transport))
            .py_err()?;
        serde_json::to_string(&info).map_err(|e| to_py(Error::from(e)))
    }

    /// Closes an MCP server and unregisters its tools; whether it was added.
    fn remove_mcp_server(&self, py: Python<'_>, name: &str) -> PyResult<bool> {
        let agent = self.agent()?;
        Ok(py.detach(move || agent.remove_mcp_server(name)))
    }

    /// The MCP servers added, as a JSON array.
    fn mcp_servers_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.agent()?.mcp_servers()).map_err(|e| to_py(Error::from(e)))
    }

    /// Chats and blocks (GIL released) until the reply is complete; returns
    /// the response JSON. An exception in a callback stops the chat and is
    /// raised here; Ctrl-C cancels the chat and raises KeyboardInterrupt.
    ///
    /// `hooks` (a dispatcher as `set_hooks` takes it, for the points in
    /// `hook_names`) runs in this chat instead of the agent's hooks.
    #[pyo3(signature = (message, on_token = None, on_event = None, tool_choice = None, max_tokens = None, rag_context = None, max_turns = None, max_total_tokens = None, max_duration_ms = None, regenerate = false, hooks = None, hook_names = Vec::new(), on_thinking = None))]
    #[allow(clippy::too_many_arguments)]
    fn chat(
        &self,
        py: Python<'_>,
        message: Option<String>,
        on_token: Option<Py<PyAny>>,
        on_event: Option<Py<PyAny>>,
        tool_choice: Option<String>,
        max_tokens: Option<i64>,
        rag_context: Option<String>,
        max_turns: Option<i64>,
        max_total_tokens: Option<i64>,
        max_duration_ms: Option<i64>,
        regenerate: bool,
        hooks: Option<Py<PyAny>>,
        hook_names: Vec<String>,
        on_thinking: Option<Py<PyAny>>,
    ) -> PyResult<String> {
        let agent = self.agent()?;
        if agent.on_inference_thread() {
            return Err(to_py(Error::InvalidArgument(
                "chat() cannot be called from this agent's own callbacks or tools".into(),
            )));
        }
        let cancel = CancelToken::new();
        let failed = CallbackError::default();
        let options = Self::options(
            on_token,
            on_event,
            tool_choice,
            max_tokens,
            rag_context,
            ChatOverrides {
                on_thinking,
                max_turns,
                max_total_tokens,
                max_duration_ms,
                hooks: chat_hooks(hooks, hook_names)?,
            },
            &cancel,
            &failed,
        )?;
        let handle = start(&agent, message, regenerate, options);
        let result = wait_interruptibly(py, &handle)?;
        if let Some(error) = failed.take() {
            return Err(error);
        }
        result.map(|r| r.to_json()).py_err()
    }

    /// Starts a chat and returns at once. `on_complete(code, text)` runs on
    /// the inference thread when it ends: code 0 with the response JSON, or
    /// an error code with the message.
    #[pyo3(signature = (message, on_token = None, on_event = None, on_complete = None, tool_choice = None, max_tokens = None, rag_context = None, max_turns = None, max_total_tokens = None, max_duration_ms = None, regenerate = false, hooks = None, hook_names = Vec::new(), on_thinking = None))]
    #[allow(clippy::too_many_arguments)]
    fn chat_start(
        &self,
        message: Option<String>,
        on_token: Option<Py<PyAny>>,
        on_event: Option<Py<PyAny>>,
        on_complete: Option<Py<PyAny>>,
        tool_choice: Option<String>,
        max_tokens: Option<i64>,
        rag_context: Option<String>,
        max_turns: Option<i64>,
        max_total_tokens: Option<i64>,
        max_duration_ms: Option<i64>,
        regenerate: bool,
        hooks: Option<Py<PyAny>>,
        hook_names: Vec<String>,
        on_thinking: Option<Py<PyAny>>,
    ) -> PyResult<NativeChat> {
        let agent = self.agent()?;
        let cancel = CancelToken::new();
        let failed = CallbackError::default();
        let mut options = Self::options(
            on_token,
            on_event,
            tool_choice,
            max_tokens,
            rag_context,
            ChatOverrides {
                on_thinking,
                max_turns,
                max_total_tokens,
                max_duration_ms,
                hooks: chat_hooks(hooks, hook_names)?,
            },
            &cancel,
            &failed,
        )?;
        if let Some(callback) = on_complete {
            let failed = failed.clone();
            options = options.on_complete(move |result| {
                thread_state::attach(|py| {
                    let (code, text) = match (failed.take(), result) {
                        (Some(error), _) => {
                            // Hand the callback's own exception to on_complete.
                            let _ = callback.call1(py, (-1, error.into_value(py)));
                            return;
                        }
                        (None, Ok(response)) => (0, response.to_json()),
                        (None, Err(error)) => (error.code().as_i32(), error.to_string()),
                    };
                    let _ = callback.call1(py, (code, text));
                });
            });
        }
        Ok(NativeChat {
            handle: start(&agent, message, regenerate, options),
            failed,
        })
    }

    /// Cancels the chat in flight.
    fn stop(&self) -> PyResult<()> {
        self.agent()?.stop();
        Ok(())
    }

    /// Sends a message to the running chat (or the next), from any thread.
    fn steer(&self, text: String) -> PyResult<()> {
        self.agent()?.steer(text);
        Ok(())
    }

    /// Queues a message that starts a new round when the chat would end.
    fn follow_up(&self, text: String) -> PyResult<()> {
        self.agent()?.follow_up(text);
        Ok(())
    }

    /// Drops every queued steering and follow-up message.
    fn clear_queues(&self) -> PyResult<()> {
        self.agent()?.clear_queues();
        Ok(())
    }

    /// The agent's id, the `agent_id` of its events.
    fn id(&self) -> PyResult<u64> {
        Ok(self.agent()?.id())
    }

    /// Offers a child agent as a tool (`spec_json` as the core reads it).
    fn add_subagent(&self, spec_json: &str) -> PyResult<()> {
        let spec = zoo_core::SubAgent::from_json(spec_json).py_err()?;
        self.agent()?.add_subagent(spec).py_err()
    }

    /// Activates a skill; returns its instructions.
    fn activate_skill(&self, name: &str) -> PyResult<String> {
        self.agent()?.activate_skill(name).py_err()
    }

    /// Shows every tool again after a skill restricted them.
    fn deactivate_skill(&self) -> PyResult<()> {
        self.agent()?.deactivate_skill();
        Ok(())
    }

    /// The tools the model is shown, as JSON.
    fn tools_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.agent()?.tools()).map_err(|e| to_py(e.into()))
    }

    /// The config's skills as JSON.
    fn skills_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.agent()?.skills()).map_err(|e| to_py(e.into()))
    }

    /// The id of the session the conversation is kept in, if any.
    fn session_id(&self) -> PyResult<Option<String>> {
        Ok(self.agent()?.session_id())
    }

    /// The conversation as JSON.
    fn history_json(&self) -> PyResult<String> {
        serde_json::to_string(&self.agent()?.history()).map_err(|e| to_py(e.into()))
    }

    /// Replaces the conversation (JSON array of messages).
    fn set_history_json(&self, py: Python<'_>, json: &str) -> PyResult<()> {
        let messages: Vec<Message> = serde_json::from_str(json)
            .map_err(|e| to_py(Error::InvalidJson(format!("history: {e}"))))?;
        let agent = self.agent()?;
        py.detach(|| agent.set_history(messages)).py_err()
    }

    /// Forgets the conversation, keeping the system prompt.
    fn clear_history(&self, py: Python<'_>) -> PyResult<()> {
        let agent = self.agent()?;
        py.detach(|| agent.clear_history()).py_err()
    }

    /// Sets or (with None) removes the system prompt.
    #[pyo3(signature = (prompt))]
    fn set_system_prompt(&self, py: Python<'_>, prompt: Option<String>) -> PyResult<()> {
        let agent = self.agent()?;
        py.detach(|| agent.set_system_prompt(prompt)).py_err()
    }

    /// The lifecycle state's name.
    #[getter]
    fn state(&self) -> PyResult<String> {
        let state = self.agent()?.state();
        Ok(serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default())
    }

    /// Chats waiting behind the one in flight.
    #[getter]
    fn queue_depth(&self) -> PyResult<usize> {
        Ok(self.agent()?.queue_depth())
    }

    /// Whether `close` has been called.
    #[getter]
    fn closed(&self) -> bool {
        self.agent.is_closed()
    }

    /// Shuts the agent down (GIL released): cancels its chat, fails queued
    /// ones, waits up to `timeout` seconds (None: no limit) for its thread.
    /// Returns whether the thread finished. Idempotent.
    #[pyo3(signature = (timeout = None))]
    fn close(&self, py: Python<'_>, timeout: Option<f64>) -> bool {
        let Some(agent) = self.agent.take() else {
            return true;
        };
        let timeout = timeout.map(|seconds| Duration::from_secs_f64(seconds.max(0.0)));
        // A chat call in another thread may still hold it; that call ends
        // (AgentNotRunning or cancelled) and drops the last reference.
        py.detach(move || agent.close(timeout))
    }
}

impl Drop for NativeAgent {
    fn drop(&mut self) {
        if let Some(agent) = self.agent.take() {
            // The inference thread may be waiting for the GIL in a callback:
            // join it with the GIL released, or both would wait forever.
            // When the interpreter is already gone there is no GIL to release,
            // and the closure (with the agent) is simply dropped.
            let _ = Python::try_attach(|py| py.detach(move || drop(agent)));
        }
    }
}

/// A chat started with `chat_start` (wrapped by the Python package).
#[pyclass(module = "zoo_keeper._native", frozen)]
pub struct NativeChat {
    handle: ChatHandle,
    failed: CallbackError,
}

#[pymethods]
impl NativeChat {
    /// Cancels the chat.
    fn cancel(&self) {
        self.handle.cancel();
    }

    /// Whether the chat has ended.
    fn done(&self) -> bool {
        self.handle.is_finished()
    }

    /// Waits (GIL released) up to `timeout` seconds (None: until done);
    /// returns the response JSON, or None on timeout; raises on error.
    #[pyo3(signature = (timeout = None))]
    fn wait(&self, py: Python<'_>, timeout: Option<f64>) -> PyResult<Option<String>> {
        let result = match timeout {
            None => Some(wait_interruptibly(py, &self.handle)?),
            Some(seconds) => {
                let limit = Duration::from_secs_f64(seconds.max(0.0));
                py.detach(|| self.handle.wait_timeout(limit))
            }
        };
        let Some(result) = result else {
            return Ok(None);
        };
        if let Some(error) = self.failed.take() {
            return Err(error);
        }
        result.map(|r| Some(r.to_json())).py_err()
    }
}
