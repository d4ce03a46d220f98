//! The inference thread: takes jobs from the queue in order and runs them
//! against the backend it owns. The history lives here, touched by no other
//! thread; callers read the copy published after every change.

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::ThreadId;

use parking_lot::Mutex;

use super::agentic_loop::{run_turn, Callbacks, ChatInput, TurnInput, TurnSettings};
use super::completion::Completion;
use super::history::History;
use super::hooks::Hooks;
use super::limits::Limits;
use super::options::ChatOptions;
use super::queue::RequestQueue;
use super::session_log::SessionLog;
use super::state::AgentState;
use super::steering::MessageQueues;
use super::tool_runner::ToolRunner;
use crate::backend::Backend;
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::context::Summarize;
use crate::error::{Error, ErrorCode, Result};
use crate::event::EventKind;
use crate::logs::targets;
use crate::message::{Message, Role};
use crate::response::{Metrics, Response, StopReason, Usage};
use crate::skills::{self, Skills};
use crate::tools::registry::ToolRegistry;

/// A chat waiting for the inference thread.
pub(crate) struct ChatJob {
    /// The chat's id in its agent, stamped on its events.
    pub chat_id: u64,
    pub input: ChatInput,
    pub options: ChatOptions,
    pub cancel: CancelToken,
    pub completion: Arc<Completion<Result<Response>>>,
}

/// Work for the inference thread, run in the order it was queued.
pub(crate) enum Job {
    Chat(Box<ChatJob>),
    SetSystemPrompt(Option<String>, Arc<Completion<Result<()>>>),
    ClearHistory(Arc<Completion<Result<()>>>),
    ReplaceHistory(Vec<Message>, Arc<Completion<Result<()>>>),
}

impl Job {
    /// Resolves a job that will never run.
    pub(crate) fn abandon(self, error: Error) {
        match self {
            Job::Chat(job) => finish_chat(*job, Err(error)),
            Job::SetSystemPrompt(_, done)
            | Job::ClearHistory(done)
            | Job::ReplaceHistory(_, done) => done.complete(Err(error)),
        }
    }
}

/// State shared by the agent's handles and its inference thread.
pub(crate) struct Shared {
    /// The agent's id in the process, stamped on its events.
    pub agent_id: u64,
    /// The id the next chat gets.
    pub next_chat_id: AtomicU64,
    /// Messages sent with `steer()` and `follow_up()`.
    pub queues: MessageQueues,
    /// The agent's hooks, for chats that bring none of their own.
    pub hooks: Mutex<Option<Arc<dyn Hooks>>>,
    pub config: Config,
    pub queue: RequestQueue<Job>,
    /// Shared with MCP federation, which registers and withdraws tools.
    pub tools: Arc<ToolRegistry>,
    pub status: Mutex<Status>,
    pub history: Mutex<Vec<Message>>,
    /// The config's skills (empty without any).
    pub skills: Arc<Skills>,
    /// The id of the session the history is kept in, once it is open.
    pub session_id: Mutex<Option<String>>,
    /// The model that writes summaries, when the config names one.
    pub summarizer: Option<Arc<dyn Summarize>>,
    /// The inference thread and the tool thread: where callbacks and tool
    /// handlers run, and where blocking on the agent would wait for itself.
    pub agent_threads: Mutex<Vec<ThreadId>>,
}

/// The lifecycle state and the cancel token of the chat in flight, under
/// one lock so that `stop()` never misses a chat that is just starting.
pub(crate) struct Status {
    pub state: AgentState,
    pub current: Option<CancelToken>,
}

impl Shared {
    /// The agent's shared state; loads the config's skills and registers
    /// `load_skill` when there are any.
    pub(crate) fn new(config: Config, summarizer: Option<Arc<dyn Summarize>>) -> Result<Arc<Self>> {
        let skills = Arc::new(Skills::load(&config.skills)?);
        let shared = Arc::new(Self::with_skills(config, skills.clone(), summarizer));
        if !skills.is_empty() {
            let tool = skills::load_skill_tool(skills, Arc::downgrade(&shared.tools))?;
            shared.tools.register(tool);
        }
        if let Some(builtin) = &shared.config.builtin_tools {
            for tool in builtin.build().map_err(|e| match e {
                // The workspace is a config value: name the key.
                Error::InvalidArgument(reason) => Error::config("builtin_tools.workspace", reason),
                other => other,
            })? {
                shared.tools.register(tool);
            }
        }
        Ok(shared)
    }

    fn with_skills(
        config: Config,
        skills: Arc<Skills>,
        summarizer: Option<Arc<dyn Summarize>>,
    ) -> Self {
        /// The id the next agent of the process gets.
        static NEXT_AGENT_ID: AtomicU64 = AtomicU64::new(1);
        Shared {
            agent_id: NEXT_AGENT_ID.fetch_add(1, Ordering::Relaxed),
            next_chat_id: AtomicU64::new(1),
            queues: MessageQueues::default(),
            hooks: Mutex::new(None),
            config,
            queue: RequestQueue::new(),
            tools: Arc::new(ToolRegistry::new()),
            status: Mutex::new(Status {
                state: AgentState::Loading,
                current: None,
            }),
            history: Mutex::new(Vec::new()),
            skills,
            session_id: Mutex::new(None),
            summarizer,
            agent_threads: Mutex::new(Vec::new()),
        }
    }

    /// A fresh chat id.
    pub(crate) fn new_chat_id(&self) -> u64 {
        self.next_chat_id.fetch_add(1, Ordering::Relaxed)
    }

    pub(crate) fn set_state(&self, state: AgentState) {
        self.status.lock().state = state;
    }

    /// Whether the calling thread is one of the agent's own.
    pub(crate) fn on_agent_thread(&self) -> bool {
        self.agent_threads
            .lock()
            .contains(&std::thread::current().id())
    }
}

/// Serves jobs until the queue is closed. `ready` is completed once the
/// history is set up, which is when the agent becomes usable.
pub(crate) fn serve(
    shared: &Arc<Shared>,
    backend: &mut dyn Backend,
    ready: &Completion<Result<()>>,
) {
    let mut history = History::new();
    let registry = Arc::downgrade(shared);
    // Dropped at the end of this function, which waits for a handler still
    // running after a stop: no tool runs once the agent has shut down.
    let mut runner = ToolRunner::new(move |thread| {
        if let Some(shared) = registry.upgrade() {
            shared.agent_threads.lock().push(thread);
        }
    });
    let session = match start_history(shared, backend, &mut history) {
        Ok(session) => session,
        Err(e) => {
            shared.set_state(AgentState::Failed);
            ready.complete(Err(e));
            return;
        }
    };
    let snapshots = session.as_ref().filter(|_| shared.config.session_snapshot);
    if let Some(session) = snapshots {
        session.load_snapshot(backend);
    }
    publish(shared, &history);
    shared.set_state(AgentState::Idle);
    ready.complete(Ok(()));

    while let Some(job) = shared.queue.pop() {
        let session = session.as_ref();
        match job {
            Job::Chat(job) => run_chat(shared, backend, &mut history, &mut runner, session, *job),
            // Publish and save before completing: a caller woken by the
            // completion must read the new history.
            Job::SetSystemPrompt(prompt, done) => {
                let prompt = with_skills(prompt, &shared.skills);
                let result = set_system_prompt(backend, &mut history, prompt);
                done.complete(result.and(commit(shared, session, &mut history)));
            }
            Job::ClearHistory(done) => {
                history.clear();
                done.complete(commit(shared, session, &mut history));
            }
            Job::ReplaceHistory(messages, done) => {
                let result = replace_history(backend, &mut history, messages);
                done.complete(result.and(commit(shared, session, &mut history)));
            }
        }
    }
    if let Some(session) = snapshots {
        session.save_snapshot(backend);
    }
}

/// Sets up the history: the config's session (its conversation and, when
/// the config sets none, its system prompt) and the system prompt.
fn start_history(
    shared: &Shared,
    backend: &mut dyn Backend,
    history: &mut History,
) -> Result<Option<SessionLog>> {
    let mut prompt = shared.config.system_prompt.clone();
    let Some((session, data)) = SessionLog::open(&shared.config)? else {
        set_system_prompt(backend, history, with_skills(prompt, &shared.skills))?;
        return Ok(None);
    };
    replace_history(backend, history, data.messages)?;
    prompt = prompt.or_else(|| data.system_prompt.clone());
    set_system_prompt(backend, history, with_skills(prompt, &shared.skills))?;
    history.mark_loaded(data.system_prompt.as_deref());
    session.save(history)?;
    *shared.session_id.lock() = Some(session.id().to_owned());
    Ok(Some(session))
}

/// The system prompt with the skills' list after it (once: a prompt
/// restored from a session already has it).
fn with_skills(prompt: Option<String>, skills: &Skills) -> Option<String> {
    if skills.is_empty()
        || prompt
            .as_deref()
            .is_some_and(|p| p.contains("<available_skills>"))
    {
        return prompt;
    }
    let block = skills.prompt_block();
    Some(match prompt {
        Some(prompt) => format!("{prompt}\n\n{block}"),
        None => block,
    })
}

/// Publishes the history and writes it to the session, if there is one.
fn commit(shared: &Shared, session: Option<&SessionLog>, history: &mut History) -> Result<()> {
    publish(shared, history);
    session.map_or(Ok(()), |session| session.save(history))
}

fn run_chat(
    shared: &Shared,
    backend: &mut dyn Backend,
    history: &mut History,
    runner: &mut ToolRunner,
    session: Option<&SessionLog>,
    job: ChatJob,
) {
    let ChatJob {
        chat_id,
        input,
        mut options,
        cancel,
        completion,
    } = job;
    let job_completion = ChatJob {
        chat_id,
        input: ChatInput::Continue,
        options: ChatOptions {
            on_complete: options.on_complete.take(),
            ..ChatOptions::default()
        },
        cancel: cancel.clone(),
        completion,
    };
    // Every record the chat emits on this thread carries its identity. The
    // span is context, not a record: at the error level, it is there
    // whatever level the records are collected at.
    let span =
        tracing::error_span!(target: targets::CHAT, "chat", agent_id = shared.agent_id, chat_id);
    let _in_chat = span.enter();
    let mut settings = turn_settings(&shared.config, &mut options);
    settings.summarizer = shared.summarizer.clone();
    let rag_context = options.rag_context.take();
    let mut callbacks = Callbacks {
        on_token: options.on_token.as_deref_mut().map(|f| f as _),
        on_event: options.on_event.as_deref_mut().map(|f| f as _),
        on_thinking: options.on_thinking.as_deref_mut().map(|f| f as _),
        agent_id: shared.agent_id,
        chat_id,
        next_seq: 0,
        hooks: options.hooks.take().or_else(|| shared.hooks.lock().clone()),
    };
    let message = match &input {
        ChatInput::Message(text) => Some(text.clone()),
        ChatInput::Continue | ChatInput::Regenerate => None,
    };
    callbacks.event(EventKind::ChatStarted { message });
    let result = if cancel.is_cancelled() {
        match cancel.abort_reason() {
            Some(reason) => Err(Error::Cancelled(reason)),
            None => Ok(cancelled_before_start()),
        }
    } else {
        {
            let mut status = shared.status.lock();
            status.state = AgentState::Processing;
            status.current = Some(cancel.clone());
        }
        let input = TurnInput { input, rag_context };
        // Each round the history closes is written at once; one that
        // fails is logged, kept by the history, and written (or reported
        // as the chat's error) by the commit at the chat's end.
        let mut checkpoint = |history: &mut History| {
            if let Some(Err(e)) = session.map(|session| session.save(history)) {
                tracing::warn!(target: targets::CHAT, "the session could not keep the round: {e}");
            }
        };
        let result = run_turn(
            backend,
            history,
            &shared.tools,
            runner,
            &shared.queues,
            &settings,
            input,
            &mut callbacks,
            &cancel,
            &mut checkpoint,
        );
        // A reply the session could not keep fails the chat: the user must
        // know the conversation is not saved (the history keeps it, and the
        // next save writes it).
        let saved = commit(shared, session, history);
        let result = result.and_then(|response| saved.map(|()| response));
        let mut status = shared.status.lock();
        status.current = None;
        if status.state != AgentState::Terminated {
            status.state = AgentState::Idle;
        }
        result
    };
    log_chat_end(&result);
    if let (Err(error), Some(hooks)) = (&result, &callbacks.hooks) {
        hooks.on_error(error);
    }
    let (stop_reason, usage) = match &result {
        Ok(response) => (response.stop_reason, response.usage),
        Err(e) if e.code() == ErrorCode::Cancelled => (StopReason::Cancelled, Usage::default()),
        Err(_) => (StopReason::Error, Usage::default()),
    };
    callbacks.event(EventKind::ChatFinished { stop_reason, usage });
    // The token and event callbacks and the chat's hooks (and whatever they
    // own) go before the handle resolves, so a caller woken by the result
    // sees them released.
    drop(callbacks);
    drop(options);
    finish_chat(job_completion, result);
}

/// The chat's one `zoo::chat` line: how it ended, in how many turns and
/// calls, with its tokens and time.
fn log_chat_end(result: &Result<Response>) {
    match result {
        Ok(response) => tracing::info!(
            target: targets::CHAT,
            stop_reason = response.stop_reason.name(),
            turns = response.metrics.iterations,
            tool_calls = response.tool_calls.len(),
            prompt_tokens = response.usage.prompt_tokens,
            completion_tokens = response.usage.completion_tokens,
            latency_ms = response.metrics.total_ms,
            "chat ended ({}) after {} turns and {} tool calls in {:.1} ms",
            response.stop_reason.name(),
            response.metrics.iterations,
            response.tool_calls.len(),
            response.metrics.total_ms,
        ),
        Err(error) => tracing::warn!(
            target: targets::CHAT,
            stop_reason = StopReason::Error.name(),
            error = %error,
            "chat failed: {error}",
        ),
    }
}

/// A chat's settings: the agent's config with the chat's overrides.
fn turn_settings(config: &Config, options: &mut ChatOptions) -> TurnSettings {
    TurnSettings {
        max_tool_iterations: config.max_tool_iterations,
        max_tool_retries: config.max_tool_retries,
        tool_choice: options
            .tool_choice
            .take()
            .unwrap_or_else(|| config.tool_choice.clone()),
        // 0 is "the agent's limit" in every front door (C's zeroed options).
        max_tokens: options.max_tokens.filter(|&n| n > 0).or(config.max_tokens),
        stop: config.stop.clone(),
        // As with `max_tokens`, a chat's 0 keeps the agent's limit.
        limits: Limits::new(
            options
                .max_turns
                .filter(|&n| n > 0)
                .unwrap_or(config.max_turns),
            options
                .max_total_tokens
                .filter(|&n| n > 0)
                .unwrap_or(config.max_total_tokens),
            options
                .max_duration_ms
                .filter(|&n| n > 0)
                .unwrap_or(config.max_duration_ms),
        ),
        steering_mode: config.steering_mode,
        follow_up_mode: config.follow_up_mode,
        tool_execution: config.tool_execution,
        context_strategy: config.context_strategy,
        max_tool_result_tokens: config.max_tool_result_tokens,
        summarizer: None,
    }
}

/// Resolves the handle, then runs `on_complete`: waiters get their result
/// first, and the callback may even free the agent.
fn finish_chat(job: ChatJob, result: Result<Response>) {
    let ChatJob {
        mut options,
        completion,
        ..
    } = job;
    completion.complete(result.clone());
    if let Some(on_complete) = options.on_complete.take() {
        let _ = catch_unwind(AssertUnwindSafe(|| on_complete(&result)));
    }
}

fn cancelled_before_start() -> Response {
    Response {
        text: String::new(),
        thinking: None,
        stop_reason: StopReason::Cancelled,
        tool_calls: Vec::new(),
        tool_errors: Vec::new(),
        usage: Usage::default(),
        metrics: Metrics::default(),
    }
}

fn set_system_prompt(
    backend: &mut dyn Backend,
    history: &mut History,
    prompt: Option<String>,
) -> Result<()> {
    let entry = match prompt {
        Some(text) => {
            let tokens = backend.count_tokens(&Message::system(text.clone()))?;
            Some((text, tokens))
        }
        None => None,
    };
    history.set_system_prompt(entry);
    Ok(())
}

/// Replaces the whole conversation, checking role order as if each message
/// had been added in turn; on error the old history stays.
fn replace_history(
    backend: &mut dyn Backend,
    history: &mut History,
    messages: Vec<Message>,
) -> Result<()> {
    let mut fresh = History::new();
    for message in messages {
        check_images(&message)?;
        let tokens = backend.count_tokens(&message)?;
        fresh.push(message, tokens)?;
    }
    fresh.check_can_continue()?;
    *history = fresh;
    Ok(())
}

/// A restored message's images: on a tool message only, each well formed.
fn check_images(message: &Message) -> Result<()> {
    if message.images.is_empty() {
        return Ok(());
    }
    if message.role != Role::Tool {
        return Err(Error::InvalidMessageSequence(format!(
            "only a tool message carries images, not a {} message",
            message.role.as_str()
        )));
    }
    for image in &message.images {
        image.check().map_err(Error::InvalidArgument)?;
    }
    Ok(())
}

fn publish(shared: &Shared, history: &History) {
    *shared.history.lock() = history.messages();
}
