//! `NativeAgent` and `NativeChat`: the agent, its tools and its chats.
//!
//! A chat's tokens, events and result travel through one ordered queue
//! (`Outbox`) to one JS function, so every `onToken` has run before the
//! chat's Promise settles. The inference thread appends to the queue and
//! wakes the JS thread only when the queue was empty; the JS side takes
//! everything queued at each wake-up, so a burst of tokens costs one
//! thread crossing, not one per token.

use std::sync::Arc;
use std::time::Duration;

use napi::bindgen_prelude::{
    AsyncTask, ClassInstance, FnArgs, Function, Promise, ToNapiValue, TypeName,
};
use napi::threadsafe_function::{ThreadsafeFunction, ThreadsafeFunctionCallMode};
use napi::{Env, Status, Task};
use napi_derive::napi;
use parking_lot::Mutex;
use serde_json::Value;
use zoo_core::{
    Agent, AgentSlot, ChatHandle, ChatOptions, Config, Error, McpTransport, Message, Response,
    Tool, ToolChoice, ToolOptions,
};

use zoo_core::tools::builtin::BuiltinToolsConfig;

use crate::backend::{self, NativeBackendSink, NodeBackend};
use crate::errors::{integer, message, to_napi, IntoNapi};
use crate::hooks::NodeHooks;
use crate::model::NativeModel;
use crate::tools::{self, ContextToolFunction};

/// Item kinds in a drained batch (see `Outbox`).
const TOKEN: u32 = 0;
const EVENT: u32 = 1;
const RESPONSE: u32 = 2;
const ERROR: u32 = 3;
const THINKING: u32 = 4;

/// What a chat sends to JavaScript, in order.
enum Item {
    Token(String),
    Thinking(String),
    Event(String),
    Done(zoo_core::Result<String>),
}

type Queue = Arc<Mutex<Vec<Item>>>;

/// A batch of items as the JS arguments `(kinds, texts)`.
type Batch = FnArgs<(Vec<u32>, Vec<String>)>;

/// Work that waits on the agent, run off the JS thread by `AgentJob`.
type AgentWork<T> = Box<dyn FnOnce(&Agent) -> zoo_core::Result<T> + Send>;

/// The JS function that receives a batch: `(kinds, texts)`.
type DrainFunction = ThreadsafeFunction<(), (), Batch, Status, false>;

/// One chat's ordered queue to JavaScript. Strong (ref'd) while the chat is
/// queued or running, so a pending `await agent.chat()` keeps Node alive;
/// released when the engine drops the chat's callbacks after the result.
struct Outbox {
    queue: Queue,
    drain: DrainFunction,
    finished: bool,
}

impl Outbox {
    fn push(&mut self, item: Item) {
        if self.finished {
            return;
        }
        self.finished = matches!(item, Item::Done(_));
        let was_empty = {
            let mut queue = self.queue.lock();
            let was_empty = queue.is_empty();
            queue.push(item);
            was_empty
        };
        if was_empty {
            // Unbounded queue: non-blocking calls fail only while Node
            // shuts down, when nobody is left to read the chat anyway.
            self.drain.call((), ThreadsafeFunctionCallMode::NonBlocking);
        }
    }
}

impl Drop for Outbox {
    fn drop(&mut self) {
        // The engine always reports a result; this is the safety net that
        // keeps a JS Promise from waiting forever if it ever did not.
        if !self.finished {
            self.push(Item::Done(Err(Error::Internal(
                "the chat ended without a result".into(),
            ))));
        }
    }
}

/// Moves the queued items into two JS arrays: kinds and texts.
fn take_batch(queue: &Queue) -> Batch {
    let items = std::mem::take(&mut *queue.lock());
    let mut kinds = Vec::with_capacity(items.len());
    let mut texts = Vec::with_capacity(items.len());
    for item in items {
        let (kind, text) = match item {
            Item::Token(text) => (TOKEN, text),
            Item::Thinking(text) => (THINKING, text),
            Item::Event(json) => (EVENT, json),
            Item::Done(Ok(json)) => (RESPONSE, json),
            Item::Done(Err(error)) => (ERROR, message(error.code(), &error.to_string())),
        };
        kinds.push(kind);
        texts.push(text);
    }
    FnArgs::from((kinds, texts))
}

/// An agent (wrapped by the package's `Agent`).
#[napi]
pub struct NativeAgent {
    agent: AgentSlot,
}

impl NativeAgent {
    fn agent(&self) -> napi::Result<Arc<Agent>> {
        self.agent.get().napi_err()
    }
}

#[napi]
impl NativeAgent {
    /// Registers a tool. `handler(argumentsJson, context)` is the package's
    /// wrapper, given the call's `NativeToolContext`: a Promise of
    /// `{"ok":true,"value":...}` or `{"ok":false,"error":"..."}`.
    /// `optionsJson` is `{"exclusive": ..., "timeout_ms": ...}` as the
    /// package writes the definition's `exclusive` and `timeoutMs`; the core
    /// checks it.
    #[napi]
    pub fn register_tool(
        &self,
        name: String,
        description: String,
        schema_json: String,
        handler: Function<'_, FnArgs<(String, tools::NativeToolContext)>, Promise<String>>,
        options_json: Option<String>,
    ) -> napi::Result<()> {
        let schema: Value = serde_json::from_str(&schema_json)
            .map_err(|e| to_napi(Error::InvalidJson(format!("tool schema: {e}"))))?;
        let agent = self.agent()?;
        let function: ContextToolFunction = tools::context_tool_function(handler)?;
        let tool = Tool::with_context(name, description, schema, move |arguments, context| {
            tools::call_tool(&function, &arguments, context)
        })
        .napi_err()?;
        // Checked after the name, so that an error names a valid tool.
        let options = options_json
            .map(|text| ToolOptions::from_json(tool.name(), &text))
            .transpose()
            .napi_err()?
            .unwrap_or_default();
        let tool = tool.with_options(options);
        agent.register_tool(tool);
        Ok(())
    }

    /// Adds built-in tools: `options_json` is `{"tools", "workspace",
    /// "bash_deny"}` (the config's `builtin_tools`); `confirm` (the
    /// package's wrapper of the host's callback, or null) is called with
    /// `{"tool", "arguments"}` before `write_file`, `edit_file` and `bash`
    /// run, and resolves to the envelope of a boolean.
    #[napi]
    pub fn add_builtin_tools(
        &self,
        options_json: String,
        confirm: Option<Function<'_, String, Promise<String>>>,
    ) -> napi::Result<()> {
        let config = BuiltinToolsConfig::from_json(&options_json).napi_err()?;
        let confirm = confirm
            .map(|confirm| tools::tool_function(confirm).map(tools::confirm_fn))
            .transpose()?;
        let names: Vec<&str> = config.tools.iter().map(String::as_str).collect();
        self.agent()?
            .add_builtin_tools(&names, config.options(confirm))
            .napi_err()
    }

    /// Removes a tool; returns whether it existed.
    #[napi]
    pub fn unregister_tool(&self, name: String) -> napi::Result<bool> {
        Ok(self.agent()?.unregister_tool(&name))
    }

    /// Sets the hooks every chat runs: `dispatch` is the package's wrapper
    /// (see `hooks::NodeHooks`), called for the points in `names`; null
    /// removes them. A chat already running keeps the hooks it started with.
    #[napi]
    pub fn set_hooks(
        &self,
        dispatch: Option<Function<'_, String, Promise<String>>>,
        names: Vec<String>,
    ) -> napi::Result<()> {
        let agent = self.agent()?;
        let hooks = match dispatch {
            None => None,
            Some(dispatch) => {
                let hooks = NodeHooks::new(tools::tool_function(dispatch)?, &names).napi_err()?;
                Some(Arc::new(hooks) as Arc<dyn zoo_core::Hooks>)
            }
        };
        agent.set_hooks(hooks);
        Ok(())
    }

    /// Starts a chat and returns at once. `drain(kinds, texts)` receives the
    /// chat's items in order: 0 token, 1 event (JSON), 2 the response (JSON,
    /// last), 3 an error (`[zoo:CODE] message`, last). Tokens and events
    /// are sent only when `withTokens` and `withEvents` ask for them, so a
    /// chat nobody streams costs no thread crossing per token. `hooks` (a
    /// dispatcher as `setHooks` takes it, for the points in `hookNames`)
    /// runs in this chat instead of the agent's hooks.
    // The generator would type `drain` as taking one `Batch`; it is called
    // with the batch's two arrays as separate arguments.
    #[napi(
        ts_args_type = "message: string | undefined | null, drain: (kinds: Array<number>, texts: Array<string>) => void, withTokens: boolean, withEvents: boolean, toolChoice?: string | undefined | null, maxTokens?: number | undefined | null, ragContext?: string | undefined | null, maxTurns?: number | undefined | null, maxTotalTokens?: number | undefined | null, maxDurationMs?: number | undefined | null, regenerate?: boolean | undefined | null, hooks?: ((json: string) => Promise<string>) | undefined | null, hookNames?: Array<string> | undefined | null, withThinking?: boolean | undefined | null"
    )]
    #[allow(clippy::too_many_arguments)]
    pub fn chat(
        &self,
        message: Option<String>,
        drain: Function<'_, Batch, ()>,
        with_tokens: bool,
        with_events: bool,
        tool_choice: Option<String>,
        max_tokens: Option<f64>,
        rag_context: Option<String>,
        max_turns: Option<f64>,
        max_total_tokens: Option<f64>,
        max_duration_ms: Option<f64>,
        regenerate: Option<bool>,
        hooks: Option<Function<'_, String, Promise<String>>>,
        hook_names: Option<Vec<String>>,
        with_thinking: Option<bool>,
    ) -> napi::Result<NativeChat> {
        let agent = self.agent()?;
        let mut options = ChatOptions::new();
        options.hooks = match hooks {
            None => None,
            Some(dispatch) => {
                let names = hook_names.unwrap_or_default();
                let hooks = NodeHooks::new(tools::tool_function(dispatch)?, &names).napi_err()?;
                Some(Arc::new(hooks) as Arc<dyn zoo_core::Hooks>)
            }
        };
        options.tool_choice = tool_choice
            .as_deref()
            .map(ToolChoice::parse)
            .transpose()
            .napi_err()?;
        options.max_tokens = max_tokens
            .map(|n| integer("maxTokens", n, 0, i64::from(u32::MAX)))
            .transpose()?
            .map(|n| n as u32);
        options.rag_context = rag_context;
        options.max_turns = max_turns
            .map(|n| integer("maxTurns", n, 0, i64::from(u32::MAX)))
            .transpose()?
            .map(|n| n as u32);
        // JavaScript numbers are exact up to 2^53.
        const SAFE: i64 = (1 << 53) - 1;
        options.max_total_tokens = max_total_tokens
            .map(|n| integer("maxTotalTokens", n, 0, SAFE))
            .transpose()?
            .map(|n| n as u64);
        options.max_duration_ms = max_duration_ms
            .map(|n| integer("maxDurationMs", n, 0, SAFE))
            .transpose()?
            .map(|n| n as u64);

        let queue: Queue = Arc::default();
        let batch_queue = queue.clone();
        let drain: DrainFunction = drain
            .build_threadsafe_function::<()>()
            .callee_handled::<false>()
            .build_callback(move |_context| Ok(take_batch(&batch_queue)))?;
        let outbox = Arc::new(Mutex::new(Outbox {
            queue,
            drain,
            finished: false,
        }));
        if with_tokens {
            let tokens = outbox.clone();
            options =
                options.on_token(move |text| tokens.lock().push(Item::Token(text.to_string())));
        }
        if with_thinking.unwrap_or(false) {
            let thinking = outbox.clone();
            options = options
                .on_thinking(move |text| thinking.lock().push(Item::Thinking(text.to_string())));
        }
        if with_events {
            let events = outbox.clone();
            options =
                options.on_event(move |event| events.lock().push(Item::Event(event.to_json())));
        }
        options = options.on_complete(move |result| {
            let done = result.as_ref().map(Response::to_json).map_err(Clone::clone);
            outbox.lock().push(Item::Done(done));
        });
        // Without a message: continue the history as it stands, or answer
        // its last user message again.
        let handle = match (message, regenerate.unwrap_or(false)) {
            (Some(message), _) => agent.chat(message, options),
            (None, true) => agent.regenerate(options),
            (None, false) => agent.continue_chat(options),
        };
        Ok(NativeChat { handle })
    }

    /// Cancels the chat in flight; it ends as `cancelled` within ~100 ms.
    #[napi]
    pub fn stop(&self) -> napi::Result<()> {
        self.agent()?.stop();
        Ok(())
    }

    /// Sends a message to the running chat (or the next one).
    #[napi]
    pub fn steer(&self, text: String) -> napi::Result<()> {
        self.agent()?.steer(text);
        Ok(())
    }

    /// Queues a message that starts a new round when the chat would end.
    #[napi]
    pub fn follow_up(&self, text: String) -> napi::Result<()> {
        self.agent()?.follow_up(text);
        Ok(())
    }

    /// Drops every queued steering and follow-up message.
    #[napi]
    pub fn clear_queues(&self) -> napi::Result<()> {
        self.agent()?.clear_queues();
        Ok(())
    }

    /// The agent's id, the `agentId` of its events.
    #[napi]
    pub fn id(&self) -> napi::Result<f64> {
        Ok(self.agent()?.id() as f64)
    }

    /// Connects an MCP server described by `transportJson` (the C ABI's
    /// JSON form) and registers its tools as `{name}__{tool}`, off the JS
    /// thread (the handshake waits for the server). Resolves to the
    /// server's description as JSON.
    #[napi(ts_return_type = "Promise<string>")]
    pub fn add_mcp_server(
        &self,
        name: String,
        transport_json: String,
    ) -> napi::Result<AsyncTask<AgentJob<String>>> {
        let transport = McpTransport::from_json(&transport_json).napi_err()?;
        self.job(move |agent| {
            let info = agent.add_mcp_server(&name, transport)?;
            serde_json::to_string(&info).map_err(Error::from)
        })
    }

    /// Closes an MCP server (its process may take a moment to end) and
    /// unregisters its tools, off the JS thread. Resolves to whether it
    /// was added.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn remove_mcp_server(&self, name: String) -> napi::Result<AsyncTask<AgentJob<bool>>> {
        self.job(move |agent| Ok(agent.remove_mcp_server(&name)))
    }

    /// The MCP servers added, as a JSON array.
    #[napi]
    pub fn mcp_servers_json(&self) -> napi::Result<String> {
        serde_json::to_string(&self.agent()?.mcp_servers()).map_err(|e| to_napi(Error::from(e)))
    }

    /// Offers a child agent as a tool (`specJson` as the core reads it).
    #[napi]
    pub fn add_subagent(&self, spec_json: String) -> napi::Result<()> {
        let spec = zoo_core::SubAgent::from_json(&spec_json).napi_err()?;
        self.agent()?.add_subagent(spec).napi_err()
    }

    /// Activates a skill; returns its instructions.
    #[napi]
    pub fn activate_skill(&self, name: String) -> napi::Result<String> {
        self.agent()?.activate_skill(&name).napi_err()
    }

    /// Shows every tool again after a skill restricted them.
    #[napi]
    pub fn deactivate_skill(&self) -> napi::Result<()> {
        self.agent()?.deactivate_skill();
        Ok(())
    }

    /// The tools the model is shown, as JSON.
    #[napi]
    pub fn tools_json(&self) -> napi::Result<String> {
        serde_json::to_string(&self.agent()?.tools())
            .map_err(|e| to_napi(Error::Internal(format!("tools: {e}"))))
    }

    /// The config's skills as JSON.
    #[napi]
    pub fn skills_json(&self) -> napi::Result<String> {
        serde_json::to_string(&self.agent()?.skills())
            .map_err(|e| to_napi(Error::Internal(format!("skills: {e}"))))
    }

    /// The id of the session the conversation is kept in, if any.
    #[napi]
    pub fn session_id(&self) -> napi::Result<Option<String>> {
        Ok(self.agent()?.session_id())
    }

    /// The conversation as JSON (never waits for a running chat).
    #[napi]
    pub fn history_json(&self) -> napi::Result<String> {
        serde_json::to_string(&self.agent()?.history())
            .map_err(|e| to_napi(Error::Internal(format!("history: {e}"))))
    }

    /// Replaces the conversation (a JSON array of messages), after the
    /// chats queued before it, off the JS thread.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_history_json(&self, json: String) -> napi::Result<AsyncTask<AgentJob<()>>> {
        let messages: Vec<Message> = serde_json::from_str(&json)
            .map_err(|e| to_napi(Error::InvalidJson(format!("history: {e}"))))?;
        self.job(move |agent| agent.set_history(messages))
    }

    /// Forgets the conversation, keeping the system prompt.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn clear_history(&self) -> napi::Result<AsyncTask<AgentJob<()>>> {
        self.job(|agent| agent.clear_history())
    }

    /// Sets or (with null) removes the system prompt.
    #[napi(ts_return_type = "Promise<void>")]
    pub fn set_system_prompt(
        &self,
        prompt: Option<String>,
    ) -> napi::Result<AsyncTask<AgentJob<()>>> {
        self.job(move |agent| agent.set_system_prompt(prompt))
    }

    /// The lifecycle state's name (`idle`, `processing`, ...).
    #[napi(getter)]
    pub fn state(&self) -> napi::Result<String> {
        let state = self.agent()?.state();
        Ok(serde_json::to_value(state)
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default())
    }

    /// Chats waiting behind the one in flight.
    #[napi(getter)]
    pub fn queue_depth(&self) -> napi::Result<u32> {
        Ok(u32::try_from(self.agent()?.queue_depth()).unwrap_or(u32::MAX))
    }

    /// Whether the agent has been closed.
    #[napi(getter)]
    pub fn closed(&self) -> bool {
        self.agent.is_closed()
    }

    /// Shuts the agent down off the JS thread: cancels its chat, fails
    /// queued ones and waits for its inference thread. Resolves to whether
    /// the thread finished. Idempotent.
    #[napi(ts_return_type = "Promise<boolean>")]
    pub fn close(&self) -> AsyncTask<CloseAgent> {
        AsyncTask::new(CloseAgent {
            agent: self.agent.take(),
            timeout: None,
        })
    }

    /// Shuts the agent down on this thread, waiting at most `timeoutMs` for
    /// its inference thread; for process exit, when no JS tool can run any
    /// more. Returns whether the thread finished.
    #[napi]
    pub fn close_within(&self, timeout_ms: f64) -> napi::Result<bool> {
        let timeout = integer("timeoutMs", timeout_ms, 0, 86_400_000)?;
        let mut task = CloseAgent {
            agent: self.agent.take(),
            timeout: Some(Duration::from_millis(timeout as u64)),
        };
        task.compute()
    }
}

impl NativeAgent {
    fn job<T>(
        &self,
        run: impl FnOnce(&Agent) -> zoo_core::Result<T> + Send + 'static,
    ) -> napi::Result<AsyncTask<AgentJob<T>>>
    where
        AgentJob<T>: Task,
    {
        Ok(AsyncTask::new(AgentJob {
            agent: self.agent()?,
            run: Some(Box::new(run)),
        }))
    }
}

impl Drop for NativeAgent {
    fn drop(&mut self) {
        // Garbage-collected without close(): join the inference thread on a
        // thread of its own, never on the JS thread, which a running JS tool
        // may be waiting for.
        if let Some(agent) = self.agent.take() {
            let _ = std::thread::Builder::new()
                .name("zoo-node-drop".into())
                .spawn(move || drop(agent));
        }
    }
}

/// Work on the agent that waits: a history or system-prompt change waits
/// for the chats queued before it, an MCP server for its handshake or its
/// process to end. Run on a libuv worker thread, never the JS thread.
pub struct AgentJob<T> {
    agent: Arc<Agent>,
    run: Option<AgentWork<T>>,
}

impl<T: ToNapiValue + TypeName + Send + 'static> Task for AgentJob<T> {
    type Output = T;
    type JsValue = T;

    fn compute(&mut self) -> napi::Result<T> {
        match self.run.take() {
            Some(run) => run(&self.agent).napi_err(),
            None => Err(to_napi(Error::Internal("an agent job ran twice".into()))),
        }
    }

    fn resolve(&mut self, _env: Env, output: T) -> napi::Result<T> {
        Ok(output)
    }
}

/// Closes an agent (see `NativeAgent::close`).
pub struct CloseAgent {
    agent: Option<Arc<Agent>>,
    timeout: Option<Duration>,
}

impl Task for CloseAgent {
    type Output = bool;
    type JsValue = bool;

    fn compute(&mut self) -> napi::Result<bool> {
        // A history job may still hold it; it ends (AgentNotRunning) and
        // drops the last reference.
        Ok(match self.agent.take() {
            Some(agent) => agent.close(self.timeout),
            None => true,
        })
    }

    fn resolve(&mut self, _env: Env, finished: bool) -> napi::Result<bool> {
        Ok(finished)
    }
}

/// Creates an agent on a libuv worker thread (loading the model there).
pub struct CreateAgent {
    config: Option<Config>,
    model: Option<zoo_core::Model>,
    backend: Option<NodeBackend>,
}

impl Task for CreateAgent {
    type Output = Agent;
    type JsValue = NativeAgent;

    fn compute(&mut self) -> napi::Result<Agent> {
        let config = self.config.take().unwrap_or_default();
        match (self.model.take(), self.backend.take()) {
            (Some(_), Some(_)) => Err(Error::InvalidArgument(
                "an agent runs on a model or on a backend, not both".into(),
            )),
            (None, Some(backend)) => Agent::with_host_backend(backend, config),
            (Some(model), None) => Agent::with_model(model, config),
            (None, None) => Agent::create(config),
        }
        .napi_err()
    }

    fn resolve(&mut self, _env: Env, agent: Agent) -> napi::Result<NativeAgent> {
        Ok(NativeAgent {
            agent: AgentSlot::new(agent),
        })
    }
}

/// Starts an agent off the JS thread. `configJson` holds the config keys
/// (snake_case JSON): a `model_path`, or a `provider` such as the scripted
/// mock (`{"type": "mock", "replies": [...], "piece_delay_ms": N}`);
/// `model` shares a loaded model instead; `generate(requestJson, sink)` is
/// the package's wrapper of a backend written in JavaScript (a Promise of
/// `{"ok":true}` or `{"ok":false,"error":"..."}`), with `countTokens`
/// (`messageJson` to the envelope of a number) if it counts.
#[napi(ts_return_type = "Promise<NativeAgent>")]
// napi derives the TypeScript declaration from the spelled-out types, so
// `generate`'s is not hidden behind an alias.
#[allow(clippy::type_complexity)]
pub fn create_agent(
    config_json: String,
    model: Option<ClassInstance<'_, NativeModel>>,
    generate: Option<Function<'_, FnArgs<(String, NativeBackendSink)>, Promise<String>>>,
    count_tokens: Option<Function<'_, String, Promise<String>>>,
) -> napi::Result<AsyncTask<CreateAgent>> {
    let config = Config::from_json(&config_json).napi_err()?;
    let backend = match generate {
        Some(generate) => Some(NodeBackend {
            generate: backend::generate_function(generate)?,
            count: count_tokens.map(tools::tool_function).transpose()?,
        }),
        None => None,
    };
    Ok(AsyncTask::new(CreateAgent {
        config: Some(config),
        model: model.map(|m| m.model.clone()),
        backend,
    }))
}

/// A chat started with `NativeAgent.chat`.
#[napi]
pub struct NativeChat {
    handle: ChatHandle,
}

#[napi]
impl NativeChat {
    /// Cancels the chat; it still delivers its (partial) result.
    #[napi]
    pub fn cancel(&self) {
        self.handle.cancel();
    }

    /// Stops the chat and fails it with `reason`, undoing its turn (a JS
    /// callback failed). No effect once the chat has finished.
    #[napi]
    pub fn abort(&self, reason: String) {
        self.handle.abort(reason);
    }

    /// Whether the chat has ended.
    #[napi(getter)]
    pub fn done(&self) -> bool {
        self.handle.is_finished()
    }
}
