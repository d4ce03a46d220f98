//! `Agent`: the one entry point. It owns the inference thread, which owns the
//! backend and the history; every method here only enqueues work, sets a
//! cancel flag or reads a copy, so all of them are safe from any thread.

pub(crate) mod handle;
mod slot;
mod subagent;
mod summarizer;

use std::sync::Arc;
use std::thread::JoinHandle;

pub use crate::engine::options::{ChatOptions, CompleteCallback, EventCallback, TokenCallback};
pub use crate::engine::state::AgentState;
pub use handle::ChatHandle;
pub use slot::AgentSlot;
pub use subagent::{SubAgent, SubAgentStep, SubAgentUpdate};
use summarizer::OwnModel;

use crate::backend::host::{self, HostBackend, HostModel};
use crate::backend::remote::RemoteBackend;
use crate::backend::Backend;
use crate::config::Config;
use crate::context::Summarize;
use crate::engine::agentic_loop::ChatInput;
use crate::engine::completion::Completion;
use crate::engine::hooks::Hooks;
use crate::engine::worker::{self, ChatJob, Job, Shared};
use crate::error::{Error, Result};
use crate::mcp::federation::McpServers;
use crate::mcp::{McpServerInfo, McpTransport};
use crate::message::Message;
use crate::provider::Provider;
use crate::tools::registry::Tool;
use crate::tools::typed::{typed_tool, TypedHandler};
use crate::tools::ToolDefinition;

/// A tool-using agent on its own inference thread. `Send + Sync`: share it
/// across threads by reference or in an `Arc`.
pub struct Agent {
    shared: Arc<Shared>,
    thread: Option<JoinHandle<()>>,
    /// Completed when the inference thread has finished its last job.
    finished: Arc<Completion<()>>,
    /// MCP servers whose tools are registered; closed after the thread ends.
    mcp: McpServers,
    /// The loaded model it runs on, which sub-agents share.
    #[cfg(feature = "llama")]
    model: Option<crate::backend::llama::Model>,
}

impl std::fmt::Debug for Agent {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Agent")
            .field("state", &self.state())
            .finish_non_exhaustive()
    }
}

/// The inference thread's side of agent start-up: it is handed to the code
/// that builds the backend on that thread, which then serves with it.
pub(crate) struct Startup {
    shared: Arc<Shared>,
    ready: Arc<Completion<Result<()>>>,
}

impl Startup {
    /// Runs the agent on `backend` until it is dropped.
    pub(crate) fn serve(self, backend: &mut dyn Backend) {
        worker::serve(&self.shared, backend, &self.ready);
    }

    /// Reports that the backend could not be built.
    pub(crate) fn fail(self, error: Error) {
        self.shared.set_state(AgentState::Failed);
        self.ready.complete(Err(error));
    }

    /// The agent's configuration.
    pub(crate) fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Counts `thread` as one of the agent's own (where a blocking call on
    /// the agent would wait for itself).
    fn add_thread(&self, thread: std::thread::ThreadId) {
        self.shared.agent_threads.lock().push(thread);
    }
}

impl Agent {
    /// An agent on the given backend (a `MockBackend` the test keeps a
    /// clone of, say). The backend moves to the inference thread. The
    /// config's `provider` must be unset: the backend is given here.
    pub fn with_backend<B: Backend + Send + 'static>(backend: B, config: Config) -> Result<Self> {
        if let Some(provider) = &config.provider {
            return Err(Error::config(
                "provider",
                format!(
                    "an agent on a backend given in code takes no provider (got `{}`)",
                    provider.type_name()
                ),
            ));
        }
        Self::on_backend(backend, config)
    }

    /// An agent on a backend written in the host language (see
    /// [`HostModel`]; the C, Python and Node front doors each implement
    /// it). The config's `provider` is unset or `host` (its settings, such
    /// as `thinking`); the host's calls run on a thread of the agent's own.
    pub fn with_host_backend(host: impl HostModel, config: Config) -> Result<Self> {
        if let Some(provider) = &config.provider {
            if !matches!(provider, Provider::Host(_)) {
                return Err(Error::config(
                    "provider",
                    format!(
                        "an agent on a host backend takes no other provider (got `{}`)",
                        provider.type_name()
                    ),
                ));
            }
        }
        let summarizer = summarizer::summarizer_for(&config, OwnModel::Nothing)?;
        Self::start(config, summarizer, move |startup| {
            match HostBackend::new(host, startup.config()) {
                Ok(mut backend) => {
                    startup.add_thread(backend.thread_id());
                    startup.serve(&mut backend);
                }
                Err(error) => startup.fail(error),
            }
        })
    }

    /// Starts the inference thread on `backend`, whatever the config's
    /// `provider` says (the caller built the backend from it).
    fn on_backend<B: Backend + Send + 'static>(backend: B, config: Config) -> Result<Self> {
        let summarizer = summarizer::summarizer_for(&config, OwnModel::of(&config))?;
        Self::start(config, summarizer, move |startup| {
            let mut backend = backend;
            startup.serve(&mut backend);
        })
    }

    /// Validates the config, starts the inference thread, lets `body` build
    /// the backend there, and waits until it is ready or has failed;
    /// `summarizer` writes the summaries the config's `summarizer` asks for.
    pub(crate) fn start(
        config: Config,
        summarizer: Option<Arc<dyn Summarize>>,
        body: impl FnOnce(Startup) + Send + 'static,
    ) -> Result<Self> {
        config.validate()?;
        let shared = Shared::new(config, summarizer)?;
        let ready = Completion::new();
        let startup = Startup {
            shared: shared.clone(),
            ready: ready.clone(),
        };
        let thread_shared = shared.clone();
        let finished = Completion::new();
        let thread_finished = finished.clone();
        let thread = std::thread::Builder::new()
            .name("zoo-inference".into())
            .spawn(move || {
                thread_shared
                    .agent_threads
                    .lock()
                    .push(std::thread::current().id());
                body(startup);
                thread_finished.complete(());
            })
            .map_err(|e| Error::Internal(format!("cannot start the inference thread: {e}")))?;
        let mut agent = Agent {
            shared,
            thread: Some(thread),
            finished,
            mcp: McpServers::default(),
            #[cfg(feature = "llama")]
            model: None,
        };
        match ready.wait() {
            Ok(()) => Ok(agent),
            Err(error) => {
                agent.shutdown(None);
                Err(error)
            }
        }
    }

    /// Starts an agent on what the config names: its `provider` (the
    /// scripted mock, say), or else the GGUF model at `model_path`, loaded
    /// here. Errors: `invalid_config` (neither or both given, a bad value),
    /// `model_load_failed`.
    pub fn create(config: Config) -> Result<Self> {
        config.validate()?;
        match &config.provider {
            Some(Provider::Mock(mock)) => {
                let backend = mock.backend();
                // The mock's window is the config's, as a model's is (0,
                // "the model's own", keeps the mock's 4096).
                if config.context_size > 0 {
                    backend.set_context_size(config.context_size);
                }
                Self::on_backend(backend, config)
            }
            Some(Provider::OpenAi(openai)) => {
                let backend = RemoteBackend::openai(openai, &config)?;
                Self::on_backend(backend, config)
            }
            Some(Provider::Anthropic(anthropic)) => {
                let backend = RemoteBackend::anthropic(anthropic, &config)?;
                Self::on_backend(backend, config)
            }
            Some(Provider::Gemini(gemini)) => {
                let backend = RemoteBackend::gemini(gemini, &config)?;
                Self::on_backend(backend, config)
            }
            Some(Provider::Host(_)) => Err(host::needs_an_object()),
            None => Self::create_local(config),
        }
    }

    /// Loads the model at `config.model_path` and starts an agent on it.
    #[cfg(feature = "llama")]
    fn create_local(config: Config) -> Result<Self> {
        let path = config.model_path.clone().ok_or_else(|| {
            Error::config(
                "model_path",
                "is required to create an agent (or a `provider`)",
            )
        })?;
        let model = crate::backend::llama::Model::load(&path, (&config).into())?;
        Self::with_model(model, config)
    }

    /// Without the `llama` feature there is no local model to load.
    #[cfg(not(feature = "llama"))]
    fn create_local(_config: Config) -> Result<Self> {
        Err(Error::config(
            "provider",
            "is required: this build of zoo-core has no local models (feature `llama`)",
        ))
    }

    /// Starts an agent on a loaded model; several agents may share one
    /// model, each with its own context and history.
    #[cfg(feature = "llama")]
    pub fn with_model(model: crate::backend::llama::Model, config: Config) -> Result<Self> {
        if let Some(provider) = &config.provider {
            return Err(Error::config(
                "provider",
                format!(
                    "an agent on a loaded model takes no provider (got `{}`)",
                    provider.type_name()
                ),
            ));
        }
        let shared_model = model.clone();
        let summarizer = summarizer::summarizer_for(&config, OwnModel::Loaded(model.clone()))?;
        let mut agent = Self::start(config, summarizer, move |startup| {
            // The context borrows the model, so the model lives in this
            // thread's frame for as long as the context does.
            let model = model;
            let backend = crate::backend::llama::LlamaBackend::new(&model, startup.config());
            match backend {
                Ok(mut backend) => startup.serve(&mut backend),
                Err(error) => startup.fail(error),
            };
        })?;
        agent.model = Some(shared_model);
        Ok(agent)
    }

    /// The lifecycle state.
    pub fn state(&self) -> AgentState {
        self.shared.status.lock().state
    }

    /// Requests waiting behind the one in flight.
    pub fn queue_depth(&self) -> usize {
        self.shared.queue.depth()
    }

    /// The configuration the agent was created with.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// Sends a message; returns at once with a handle to the reply. Chats
    /// run one at a time, in the order they were sent.
    pub fn chat(&self, message: impl Into<String>, options: ChatOptions) -> ChatHandle {
        self.submit(ChatInput::Message(message.into()), options)
    }

    /// Answers the history as it stands, without a new user message: after
    /// a restore that ends in tool results, or after a stop cut a reply
    /// short. Events and results as for [`chat`](Self::chat); the chat fails
    /// with `invalid_message_sequence` when there is nothing to answer.
    pub fn continue_chat(&self, options: ChatOptions) -> ChatHandle {
        self.submit(ChatInput::Continue, options)
    }

    /// Drops the last assistant turn (its replies, tool calls and results)
    /// and answers the last user message again. If the new answer fails or
    /// is stopped before the model says anything, the old turn stays.
    pub fn regenerate(&self, options: ChatOptions) -> ChatHandle {
        self.submit(ChatInput::Regenerate, options)
    }

    fn submit(&self, input: ChatInput, mut options: ChatOptions) -> ChatHandle {
        let cancel = options.cancel.take().unwrap_or_default();
        let completion = Completion::new();
        let handle = ChatHandle {
            completion: completion.clone(),
            cancel: cancel.clone(),
        };
        let job = ChatJob {
            chat_id: self.shared.new_chat_id(),
            input,
            options,
            cancel,
            completion,
        };
        if let Err(job) = self.shared.queue.push(Job::Chat(Box::new(job))) {
            job.abandon(Error::AgentNotRunning("the agent has shut down".into()));
        }
        handle
    }

    /// Cancels the chat in flight (queued chats still run). It ends as
    /// `cancelled` within about 100 ms, with its partial text.
    pub fn stop(&self) {
        let mut status = self.shared.status.lock();
        if let Some(cancel) = &status.current {
            cancel.cancel();
            if status.state == AgentState::Processing {
                status.state = AgentState::Cancelling;
            }
        }
    }

    /// The agent's id, unique in the process: the `agent_id` of its events.
    pub fn id(&self) -> u64 {
        self.shared.agent_id
    }

    /// Sends a message to the running chat from any thread: it joins the
    /// conversation before the model's next reply, and the calls of the
    /// current reply not yet started are skipped (the model is told why).
    /// Without a running chat, it waits for the next one.
    pub fn steer(&self, text: impl Into<String>) {
        self.shared.queues.steer(text.into());
    }

    /// Queues a message that starts a new round when the running chat (or
    /// the next) would otherwise end, within the same chat.
    pub fn follow_up(&self, text: impl Into<String>) {
        self.shared.queues.follow_up(text.into());
    }

    /// Drops every queued steering and follow-up message.
    pub fn clear_queues(&self) {
        self.shared.queues.clear();
    }

    /// Sets the hooks every chat runs (a chat's own, given in its options,
    /// win); `None` removes them. Chats that already started keep theirs.
    pub fn set_hooks(&self, hooks: Option<std::sync::Arc<dyn Hooks>>) {
        *self.shared.hooks.lock() = hooks;
    }

    /// Adds a tool (replacing one of the same name). Chats in progress see it
    /// from their next model reply.
    pub fn register_tool(&self, tool: Tool) {
        self.shared.tools.register(tool);
    }

    /// Adds the named built-in tools (`read_file`, `write_file`,
    /// `edit_file`, `bash`), confined to `options.workspace`. Nothing is added when
    /// a name or the workspace is wrong.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] for an unknown name or a workspace that is
    /// not an existing folder.
    pub fn add_builtin_tools(
        &self,
        names: &[&str],
        options: crate::tools::builtin::BuiltinOptions,
    ) -> Result<()> {
        for tool in crate::tools::builtin::builtin_tools(names, &options)? {
            self.register_tool(tool);
        }
        Ok(())
    }

    /// Adds a tool whose schema is generated from the closure's parameter
    /// types; `params` names and describes the parameters in order.
    pub fn register_fn<Args, F: TypedHandler<Args>>(
        &self,
        name: &str,
        description: &str,
        params: &[(&str, &str)],
        handler: F,
    ) -> Result<()> {
        self.register_tool(typed_tool(name, description, params, handler)?);
        Ok(())
    }

    /// Removes a tool; returns whether it was registered.
    pub fn unregister_tool(&self, name: &str) -> bool {
        self.shared.tools.unregister(name)
    }

    /// Connects to an MCP server and registers each of its tools as
    /// `{name}__{tool}`, with the server's JSON schema for validation and
    /// the call grammar. The tools follow the server's
    /// `notifications/tools/list_changed`. A failing call (a crash, a
    /// timeout, malformed output, an `isError` result) is a tool error the
    /// model reads. Blocks for the handshake and the first `tools/list`.
    pub fn add_mcp_server(
        &self,
        name: &str,
        transport: impl Into<McpTransport>,
    ) -> Result<McpServerInfo> {
        self.mcp.add(&self.shared.tools, name, transport.into())
    }

    /// Closes an MCP server and unregisters its tools; returns whether it
    /// was added.
    pub fn remove_mcp_server(&self, name: &str) -> bool {
        self.mcp.remove(&self.shared.tools, name)
    }

    /// The MCP servers added, by name.
    pub fn mcp_servers(&self) -> Vec<McpServerInfo> {
        self.mcp.list()
    }

    /// The registered tools' definitions, in registration order.
    pub fn tools(&self) -> Vec<ToolDefinition> {
        self.shared.tools.definitions()
    }

    /// Activates a skill of the config's `skills`, as the model's
    /// `load_skill` does: returns its instructions and, when it names its
    /// `allowed-tools`, shows only those (and `load_skill`) until
    /// [`deactivate_skill`](Self::deactivate_skill).
    pub fn activate_skill(&self, name: &str) -> Result<String> {
        crate::skills::activate(&self.shared.skills, &self.shared.tools, name)
    }

    /// Shows every tool again after a skill restricted them.
    pub fn deactivate_skill(&self) {
        crate::skills::deactivate(&self.shared.tools);
    }

    /// The config's skills: name, description and allowed tools.
    pub fn skills(&self) -> Vec<crate::skills::Skill> {
        self.shared.skills.list().into_iter().cloned().collect()
    }

    /// The id of the session the conversation is kept in (config
    /// `session_store`), or `None` without one.
    pub fn session_id(&self) -> Option<String> {
        self.shared.session_id.lock().clone()
    }

    /// A copy of the conversation, system prompt first, as of the last
    /// finished chat or history change. Never blocks on a running chat.
    pub fn history(&self) -> Vec<Message> {
        self.shared.history.lock().clone()
    }

    /// Sets the system prompt (`None` removes it). Applied after the chats
    /// queued before it; waits for that unless called from a callback.
    pub fn set_system_prompt(&self, prompt: Option<String>) -> Result<()> {
        self.run_job(|done| Job::SetSystemPrompt(prompt, done))
    }

    /// Forgets the conversation but keeps the system prompt.
    pub fn clear_history(&self) -> Result<()> {
        self.run_job(Job::ClearHistory)
    }

    /// Replaces the conversation (to restore a saved one). A leading system
    /// message becomes the system prompt; role order is checked.
    pub fn set_history(&self, messages: Vec<Message>) -> Result<()> {
        self.run_job(|done| Job::ReplaceHistory(messages, done))
    }

    fn run_job(&self, make: impl FnOnce(Arc<Completion<Result<()>>>) -> Job) -> Result<()> {
        let done = Completion::new();
        if let Err(job) = self.shared.queue.push(make(done.clone())) {
            job.abandon(Error::AgentNotRunning("the agent has shut down".into()));
        }
        if self.on_inference_thread() {
            // Waiting here would wait for ourselves; it runs after this chat.
            return Ok(());
        }
        done.wait()
    }

    /// Whether the calling thread is this agent's inference thread or its
    /// tool thread (that is, the caller is one of its callbacks or tool
    /// handlers), where blocking on the agent would wait for itself.
    pub fn on_inference_thread(&self) -> bool {
        self.shared.on_agent_thread()
    }

    /// Shuts the agent down like dropping it, but waits at most `timeout`
    /// for the inference thread (a tool handler may be stuck in user code).
    /// Returns whether the thread finished; if not, it is left to end by
    /// itself once its current call returns. Used by bindings at
    /// interpreter exit, where an unbounded join could hang the process.
    pub fn close_within(mut self, timeout: std::time::Duration) -> bool {
        self.shutdown(Some(timeout))
    }

    fn shutdown(&mut self, timeout: Option<std::time::Duration>) -> bool {
        let pending = self.shared.queue.close();
        for job in pending {
            job.abandon(Error::AgentNotRunning("the agent was dropped".into()));
        }
        {
            let mut status = self.shared.status.lock();
            if let Some(cancel) = &status.current {
                cancel.cancel();
            }
            status.state = AgentState::Terminated;
        }
        let Some(thread) = self.thread.take() else {
            return true;
        };
        if self.shared.on_agent_thread() {
            // Dropped from one of its own callbacks or tool handlers: the
            // thread sees the closed queue after this chat and ends by itself.
            return false;
        }
        let done = match timeout {
            None => true,
            Some(limit) => self.finished.wait_timeout(limit).is_some(),
        };
        if done {
            let _ = thread.join();
        }
        done
    }
}

impl Drop for Agent {
    fn drop(&mut self) {
        self.shutdown(None);
    }
}
