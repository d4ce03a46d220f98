//! The agentic loop: one chat, from the user's message to the final reply,
//! through as many turns (model replies) as its tools need. Read top to
//! bottom, `Turn::run` takes these steps:
//!
//! 1. **Format**: append the user message.
//! 2. **Check limits** (`max_turns`, `max_total_tokens`, `max_duration_ms`)
//!    and **take steering**: messages sent with `steer()` join the
//!    conversation before the next reply. Old turns are pruned to fit.
//! 3. **Infer**: stream one model reply (tool-call markup hidden from `on_token`).
//!    A prompt the backend finds too long for its window (a server counts
//!    tokens its own way) is compacted to 3/4 and tried once more. A
//!    steering message that arrives meanwhile ends the reply at once: its
//!    prose is kept and the loop goes back to step 2.
//! 4. **Parse**: find tool calls in the reply. No call: the reply is final,
//!    unless a steering or follow-up message waits, which starts a new round.
//! 5. **Validate** each call against its tool's schema.
//! 6. **Execute** the valid ones, in order; a steering message skips the
//!    calls not yet started.
//! 7. **Inject** results and errors as tool messages; errors say exactly what
//!    was wrong so the model can correct itself. Repeat from 2.
//!
//! The loop ends on a reply without calls (`stop`/`length`), after
//! `max_tool_iterations` replies with calls (`tool_limit`), at a limit
//! (`limit`), on cancellation (`cancelled`) or on a backend error (the chat
//! is undone and the error returned; the agent stays usable).
//!
//! Whatever the moment of a cancel, the turn either completes or is undone,
//! so the history always takes the next user message: a cancel before the
//! model said anything undoes the turn; after that, the partial reply is
//! kept and every call already made is answered (a call cut short, or one
//! not started, with an error saying the chat was stopped). An abort (a
//! front door's callback failed) undoes the turn whatever it had done.

use std::cell::RefCell;
use std::collections::HashMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;

use super::history::History;
use super::hooks::{self, ContextRequest, Hooks, InputDecision, ToolCallDecision, TurnDecision};
use super::limits::{LimitHit, Limits};
use super::steering::{MessageQueues, QueueMode};
use super::stream_filter::StreamFilter;
use super::tool_runner::{Pending, ToolRun, ToolRunner};
use crate::backend::{
    Backend, CacheHint, FinishReason, GenerateRequest, Generation, NativeToolCall,
};
use crate::cancel::CancelToken;
use crate::config::ToolExecution;
use crate::context::{cut_middle, CompactionLevel, ContextStrategy, Helpers, Pass, Summarize};
use crate::error::{Error, ErrorCode, Result};
use crate::event::{AgentEvent, EventKind};
use crate::logs::targets;
use crate::message::{Message, Role, ToolCall};
use crate::response::{Metrics, Response, StopReason, ToolCallRecord, ToolErrorRecord, Usage};
use crate::thinking::{self, ThinkingFormat, ThinkingSplitter};
use crate::tools::context::{Drained, Report, ToolContext};
use crate::tools::output::Delivered;
use crate::tools::parser::{self, ParseFailure, ParsedCall, ParsedReply};
use crate::tools::registry::ToolRegistry;
use crate::tools::ToolChoice;
use crate::tools::ToolDefinition;

/// Tokens kept free for the reply when `max_tokens` is not set.
const DEFAULT_REPLY_RESERVE: u32 = 1024;

/// How long a summary of older turns may be, in words.
const SUMMARY_WORDS: u32 = 60;

/// The limits and defaults a turn runs with.
#[derive(Debug, Clone)]
pub struct TurnSettings {
    /// Replies with tool calls allowed before the turn ends as `tool_limit`.
    pub max_tool_iterations: u32,
    /// Failed attempts at one tool allowed after the first.
    pub max_tool_retries: u32,
    /// Tool choice for this turn.
    pub tool_choice: ToolChoice,
    /// Token limit per reply.
    pub max_tokens: Option<u32>,
    /// Stop strings.
    pub stop: Vec<String>,
    /// The chat's budget.
    pub limits: Limits,
    /// How many steering messages join before a reply.
    pub steering_mode: QueueMode,
    /// How many follow-up messages start a round.
    pub follow_up_mode: QueueMode,
    /// How a reply's calls run.
    pub tool_execution: ToolExecution,
    /// How the history is fitted into the window.
    pub context_strategy: ContextStrategy,
    /// Tool results over this many tokens are cut (0: kept whole).
    pub max_tool_result_tokens: u32,
    /// The model that writes level 2's summaries and summarizes a tool
    /// result over `max_tool_result_tokens`, when the config names one.
    pub summarizer: Option<Arc<dyn Summarize>>,
}

/// What starts a chat.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ChatInput {
    /// A new user message, stored in the history.
    Message(String),
    /// No new message: answer the history as it stands (it ends with a user
    /// message, tool results, or a reply that was cut short).
    Continue,
    /// Drop the last assistant turn (its replies, calls and results) and
    /// answer the last user message again.
    Regenerate,
}

impl Default for ChatInput {
    fn default() -> Self {
        ChatInput::Message(String::new())
    }
}

/// What the caller sends: the message and this turn's ephemeral context.
#[derive(Debug, Clone, Default)]
pub struct TurnInput {
    /// How the chat starts.
    pub input: ChatInput,
    /// Retrieved context shown to the model for this turn only, never stored.
    pub rag_context: Option<String>,
}

/// The chat's callbacks, run on the inference thread, and the identity
/// its events carry.
#[derive(Default)]
pub struct Callbacks<'a> {
    /// Receives reply text as it is generated.
    pub on_token: Option<&'a mut (dyn FnMut(&str) + Send)>,
    /// Receives progress events.
    pub on_event: Option<&'a mut (dyn FnMut(&AgentEvent) + Send)>,
    /// Receives the model's reasoning as it is generated (its own channel:
    /// never part of the text `on_token` receives).
    pub on_thinking: Option<&'a mut (dyn FnMut(&str) + Send)>,
    /// The agent's id, stamped on every event.
    pub agent_id: u64,
    /// The chat's id, stamped on every event.
    pub chat_id: u64,
    /// The next event's `seq`.
    pub next_seq: u64,
    /// The chat's hooks (its own, or the agent's).
    pub hooks: Option<Arc<dyn Hooks>>,
}

impl Callbacks<'_> {
    fn token(&mut self, text: &str) {
        if let Some(f) = self.on_token.as_mut() {
            f(text);
        }
    }

    fn thinking(&mut self, text: &str) {
        if let (Some(f), false) = (self.on_thinking.as_mut(), text.is_empty()) {
            f(text);
        }
    }

    /// Reports an event, numbered in the chat's stream.
    pub fn event(&mut self, kind: EventKind) {
        let Some(f) = self.on_event.as_mut() else {
            return;
        };
        let event = AgentEvent {
            agent_id: self.agent_id,
            chat_id: self.chat_id,
            seq: self.next_seq,
            kind,
        };
        self.next_seq += 1;
        f(&event);
    }
}

/// Called with the history each time it is closed (every call answered,
/// the last message not an unanswered user message): where a session
/// writes what the chat added so far.
pub(crate) type Checkpoint<'a> = &'a mut dyn FnMut(&mut History);

/// Runs one chat turn. On `Err` the history is as it was before the turn,
/// including any turns pruned on the way. A panic in a callback, a tool or
/// the backend is caught and returned as `Error::Internal`, so the inference
/// thread survives it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_turn(
    backend: &mut dyn Backend,
    history: &mut History,
    tools: &ToolRegistry,
    runner: &mut ToolRunner,
    queues: &MessageQueues,
    settings: &TurnSettings,
    input: TurnInput,
    callbacks: &mut Callbacks<'_>,
    cancel: &CancelToken,
    checkpoint: Checkpoint<'_>,
) -> Result<Response> {
    let before = history.clone();
    let mut turn = Turn {
        backend,
        history,
        checkpoint,
        tools,
        runner,
        queues,
        settings,
        callbacks,
        cancel,
        taken: (Vec::new(), Vec::new()),
        injected: None,
        turn_start: 0,
        replied: false,
        started: Instant::now(),
        first_token: None,
        usage: Usage::default(),
        metrics: Metrics::default(),
        records: Vec::new(),
        errors: Vec::new(),
        failures_by_tool: HashMap::new(),
        thinking: String::new(),
    };
    let result = catch_unwind(AssertUnwindSafe(|| turn.run(input)))
        .unwrap_or_else(|payload| Err(Error::from_panic(payload.as_ref())));
    // Calls a failure left unwaited for: cancelled, and their reports
    // dropped rather than shown in a later chat.
    turn.runner.abandon_running();
    let undo = match &result {
        Err(_) => true,
        // Cancelled before the model said anything: as if never sent.
        Ok(response) => response.stop_reason == StopReason::Cancelled && !turn.replied,
    };
    let (steering, follow_ups) = std::mem::take(&mut turn.taken);
    if undo {
        history.restore(before);
        // Messages the undone chat took wait for the next one.
        queues.give_back(steering, follow_ups);
    }
    result
}

/// What [`Turn::unfinished`] made of a reply cut short.
enum Unfinished {
    /// A steer ended the reply: the model replies again.
    Steered,
    /// The chat ends with this response.
    Ended(Response),
}

/// The calls of a turn, to tell a model that asks again for what it has
/// from one still at work. A small model that got its answer often asks
/// again, word for word (or going round a few calls), until the limit.
/// `answered` holds the calls that succeeded since the last round that
/// made a call never made before in the turn (`ever`): a round that
/// repeats only those has learnt nothing new since; one after a new call
/// (an edit before a test run again) may be checking its effect.
#[derive(Default)]
struct CallMemory {
    ever: Vec<(String, Value)>,
    answered: Vec<(String, Value)>,
}

impl CallMemory {
    /// Whether every call of `asked` already succeeded since the last new
    /// one.
    fn repeats(&self, asked: &[(String, Value)]) -> bool {
        asked.iter().all(|call| self.answered.contains(call))
    }

    /// Records a round whose calls all succeeded.
    fn succeeded(&mut self, asked: Vec<(String, Value)>) {
        if asked.iter().any(|call| !self.ever.contains(call)) {
            self.answered.clear();
        }
        self.ever.extend(asked.iter().cloned());
        self.answered.extend(asked);
    }
}

/// The state of one turn in progress.
struct Turn<'a, 'cb> {
    backend: &'a mut dyn Backend,
    history: &'a mut History,
    /// Run when an injected message closes the history (see [`Checkpoint`]).
    checkpoint: Checkpoint<'a>,
    tools: &'a ToolRegistry,
    runner: &'a mut ToolRunner,
    queues: &'a MessageQueues,
    settings: &'a TurnSettings,
    callbacks: &'a mut Callbacks<'cb>,
    cancel: &'a CancelToken,
    /// Steering and follow-up messages this chat took from the queues,
    /// given back if the chat is undone.
    taken: (Vec<String>, Vec<String>),
    /// The steering or follow-up messages of a user message injected for
    /// the next reply and not answered yet.
    injected: Option<(Vec<String>, Vec<String>)>,
    /// Where the chat's messages begin in the history.
    turn_start: usize,
    /// Whether an assistant message of this turn is in the history.
    replied: bool,
    started: Instant,
    first_token: Option<Duration>,
    usage: Usage,
    metrics: Metrics,
    records: Vec<ToolCallRecord>,
    errors: Vec<ToolErrorRecord>,
    /// Failed attempts per tool name in this turn; a success resets it.
    failures_by_tool: HashMap<String, u32>,
    /// The reasoning of the reply being handled (empty when it had none).
    thinking: String,
}

impl Turn<'_, '_> {
    fn run(&mut self, input: TurnInput) -> Result<Response> {
        // 1. Format: the user message joins the history; `turn_start` marks
        //    the chat's first message, which pruning never touches.
        let start = match self.filter_input(input.input) {
            Ok(start) => start,
            Err(reason) => return Ok(self.rejected(reason)),
        };
        self.turn_start = self.start(&start)?;
        let mut tool_choice = self.settings.tool_choice.clone();
        let mut tool_rounds = 0;
        let mut text = String::new();
        let mut memory = CallMemory::default();
        loop {
            // 2. Check limits, take steering, fit the window.
            if self.cancel.is_cancelled() {
                return self.cancelled(String::new());
            }
            if let Some(hit) = self.limit_reached() {
                return Ok(self.end_at_limit(hit, text));
            }
            if self.before_turn() == TurnDecision::End {
                return Ok(self.finish(text, StopReason::Stop));
            }
            self.take_steering()?;
            let definitions = self.visible_tools(&tool_choice)?;
            self.fit_context(&definitions)?;

            // 3. Infer.
            let generation = self.infer(&definitions, &tool_choice, &input.rag_context)?;
            self.thinking = generation.thinking.clone();
            match self.unfinished(&generation)? {
                Some(Unfinished::Steered) => continue,
                Some(Unfinished::Ended(response)) => return Ok(response),
                None => {}
            }

            // 4. Parse. No call: the reply is final, unless a message waits.
            let native = self.backend.take_tool_calls();
            let parsed = parse_reply(&definitions, &generation.text, native);
            if !parsed.has_calls() && parsed.failures.is_empty() {
                // The answer: no call or result markup reaches the user, even
                // from a reply that wrote a call when none could run or that
                // echoed a tool result.
                let answer = self.answer(&parsed.content);
                self.commit_reply(Message::assistant(answer.clone()))?;
                if !self.start_next_round()? {
                    return Ok(self.finish(answer, StopReason::Stop));
                }
                (tool_choice, tool_rounds) = (self.settings.tool_choice.clone(), 0);
                text = answer;
                continue;
            }
            let (calls, content) = self.commit_calls(&parsed)?;
            if tool_rounds == self.settings.max_tool_iterations {
                self.refuse_calls(&calls, "the tool-call limit of this turn was reached")?;
                return Ok(self.finish(content, StopReason::ToolLimit));
            }
            tool_rounds += 1;
            let asked: Vec<(String, Value)> = calls
                .iter()
                .map(|c| (c.name.clone(), c.arguments.clone()))
                .collect();
            if memory.repeats(&asked) && parsed.failures.is_empty() {
                self.refuse_calls(
                    &calls,
                    "the same call with the same arguments already ran; its result is above, \
                     answer the user with it",
                )?;
                tool_choice = ToolChoice::None;
                text = content;
                continue;
            }

            // 5–7. Validate, execute, inject; then unreadable calls.
            let batch = self.run_calls(&calls, &parsed)?;
            if matches!(batch, BatchOutcome::Succeeded) {
                memory.succeeded(asked);
            }
            // A forced choice holds until a call succeeds; after that the
            // model must be free to answer. Past the retry limit, tools are
            // withdrawn so the model answers with what it has.
            match batch {
                BatchOutcome::Cancelled => return self.cancelled(content),
                BatchOutcome::Limit(hit) => return Ok(self.end_at_limit(hit, content)),
                BatchOutcome::Exhausted => tool_choice = ToolChoice::None,
                BatchOutcome::Succeeded if tool_choice != ToolChoice::None => {
                    tool_choice = ToolChoice::Auto
                }
                _ => {}
            }
            text = content;
        }
    }

    /// A reply that did not end on its own: steered (`Steered`: the
    /// steer joins the history and the model replies again), cancelled
    /// or at its length (`Ended`). `None` for a reply that ended.
    fn unfinished(&mut self, generation: &Generation) -> Result<Option<Unfinished>> {
        let prose = || self.unfinished_prose(&generation.text);
        Ok(match generation.finish {
            FinishReason::Stop => None,
            FinishReason::Cancelled if !self.cancel.is_cancelled() => {
                let prose = prose();
                self.interrupted(prose)?;
                Some(Unfinished::Steered)
            }
            FinishReason::Cancelled => Some(Unfinished::Ended(self.cut_short(prose())?)),
            FinishReason::Length => {
                let text = prose();
                self.commit_reply(Message::assistant(text.clone()))?;
                Some(Unfinished::Ended(match self.limit_reached() {
                    Some(hit) => self.end_at_limit(hit, text),
                    None => self.finish(text, StopReason::Length),
                }))
            }
        })
    }

    /// Puts the chat's start in the history and returns where the current
    /// exchange begins: the new user message, or for a continue or a
    /// regenerate the last user message (kept through pruning).
    fn start(&mut self, input: &ChatInput) -> Result<usize> {
        let last_user = self.history.last_user_index();
        match input {
            ChatInput::Message(text) => self.add_user_message(text.clone()),
            ChatInput::Continue => {
                self.history.check_can_answer()?;
                Ok(last_user.unwrap_or(self.history.len()))
            }
            ChatInput::Regenerate => {
                let Some(index) = last_user else {
                    return Err(Error::InvalidMessageSequence(
                        "there is no user message to answer again".into(),
                    ));
                };
                self.history.truncate(index + 1);
                Ok(index)
            }
        }
    }

    /// Runs the input filter on a new user message: the message to store
    /// (with a warning appended), or the reason it was rejected. A failing
    /// filter rejects.
    fn filter_input(&self, input: ChatInput) -> std::result::Result<ChatInput, String> {
        let (Some(hooks), ChatInput::Message(text)) = (&self.callbacks.hooks, &input) else {
            return Ok(input);
        };
        match hooks.filter_input(text) {
            Ok(InputDecision::Pass) => Ok(input),
            Ok(InputDecision::Warn { warning }) => {
                Ok(ChatInput::Message(format!("{text}\n\n{warning}")))
            }
            Ok(InputDecision::Reject { reason }) => Err(reason),
            Err(message) => {
                hooks::report_failure(hooks.as_ref(), "filter_input", &message);
                Err(format!("the input filter failed: {message}"))
            }
        }
    }

    /// Ends a chat whose message an input filter rejected: nothing was
    /// decoded and the history is unchanged.
    fn rejected(&mut self, reason: String) -> Response {
        self.callbacks.event(EventKind::InputRejected { reason });
        self.finish(String::new(), StopReason::Rejected)
    }

    /// Asks the `before_turn` hook whether to generate the next reply; a
    /// failing hook changes nothing.
    fn before_turn(&self) -> TurnDecision {
        let Some(hooks) = &self.callbacks.hooks else {
            return TurnDecision::Continue;
        };
        hooks
            .before_turn(self.metrics.iterations + 1)
            .unwrap_or_else(|message| {
                hooks::report_failure(hooks.as_ref(), "before_turn", &message);
                TurnDecision::Continue
            })
    }

    /// The first limit of the chat it has reached, if any.
    fn limit_reached(&self) -> Option<LimitHit> {
        self.settings.limits.reached(
            self.metrics.iterations,
            u64::from(self.usage.total_tokens),
            self.started,
        )
    }

    /// Ends the chat at a limit. Every call is answered by then; a message
    /// injected for a reply that will not come goes back to its queue.
    fn end_at_limit(&mut self, hit: LimitHit, text: String) -> Response {
        self.withdraw_injected();
        self.callbacks.event(EventKind::LimitReached {
            limit: hit.name().to_string(),
            value: hit.value(),
        });
        self.finish(text, StopReason::Limit)
    }

    /// Steering messages join the conversation before the next reply. One
    /// queued before the chat waits while the history ends with a user
    /// message (the chat's own, not yet answered): two user messages never
    /// follow each other. (One that ends a reply early may join that
    /// message instead, see [`interrupted`](Self::interrupted).)
    fn take_steering(&mut self) -> Result<()> {
        if self.history.last_role() == Some(Role::User) {
            return Ok(());
        }
        let messages = self.queues.take_steering(self.settings.steering_mode);
        if messages.is_empty() {
            return Ok(());
        }
        for message in &messages {
            self.callbacks.event(EventKind::SteeringReceived {
                message: message.clone(),
            });
        }
        self.inject_queued(messages, Vec::new())
    }

    /// A reply that a steering message ended early: its prose is kept, as
    /// after a stop, and the message joins at the top of the loop. When the
    /// reply had said nothing yet and the model was answering a user
    /// message, the steering message is added to that message instead, as
    /// the rest of what the user said.
    fn interrupted(&mut self, prose: String) -> Result<()> {
        if !prose.is_empty() {
            return self.commit_reply(Message::assistant(prose));
        }
        if self.history.last_role() != Some(Role::User) {
            return Ok(());
        }
        let messages = self.queues.take_steering(self.settings.steering_mode);
        for message in &messages {
            self.callbacks.event(EventKind::SteeringReceived {
                message: message.clone(),
            });
        }
        self.add_to_last_user_message(&messages.join("\n\n"))?;
        self.taken.0.extend(messages.iter().cloned());
        if let Some(injected) = &mut self.injected {
            injected.0.extend(messages);
        }
        Ok(())
    }

    /// After a final reply: whether a waiting message starts another round
    /// of the chat. A steering message joins at the top of the loop; a
    /// follow-up joins here. Past a limit, messages wait for the next chat.
    fn start_next_round(&mut self) -> Result<bool> {
        if self.limit_reached().is_some() {
            return Ok(false);
        }
        if self.queues.has_steering() {
            return Ok(true);
        }
        let messages = self.queues.take_follow_ups(self.settings.follow_up_mode);
        if messages.is_empty() {
            return Ok(false);
        }
        for message in &messages {
            self.callbacks.event(EventKind::FollowUpStarted {
                message: message.clone(),
            });
        }
        self.inject_queued(Vec::new(), messages)?;
        Ok(true)
    }

    /// Adds queued messages as one user message, remembered until the
    /// model answers it.
    fn inject_queued(&mut self, steering: Vec<String>, follow_ups: Vec<String>) -> Result<()> {
        let text = steering
            .iter()
            .chain(&follow_ups)
            .cloned()
            .collect::<Vec<_>>();
        self.add_user_message(text.join("\n\n"))?;
        self.taken.0.extend(steering.iter().cloned());
        self.taken.1.extend(follow_ups.iter().cloned());
        self.injected = Some((steering, follow_ups));
        Ok(())
    }

    /// Takes back an injected message the model never answered (the chat
    /// was stopped or reached a limit first), so that the history does not
    /// end with it and the next chat gets it again.
    fn withdraw_injected(&mut self) {
        let Some((steering, follow_ups)) = self.injected.take() else {
            return;
        };
        self.history.truncate(self.history.len() - 1);
        let untake = |taken: &mut Vec<String>, n: usize| taken.truncate(taken.len() - n);
        untake(&mut self.taken.0, steering.len());
        untake(&mut self.taken.1, follow_ups.len());
        self.queues.give_back(steering, follow_ups);
    }

    /// Appends the user's message; returns its index, where the turn starts.
    /// A history that ends with a user message the model never answered (a
    /// restored one) gets the new text added to that message, which the
    /// turn then answers whole.
    fn add_user_message(&mut self, text: String) -> Result<usize> {
        if self.history.last_role() == Some(Role::User) {
            self.add_to_last_user_message(&text)?;
            return Ok(self.history.len() - 1);
        }
        let user = Message::user(text);
        let tokens = self.backend.count_tokens(&user)?;
        let turn_start = self.history.len();
        self.history.push(user, tokens)?;
        Ok(turn_start)
    }

    /// Adds `text` as a new paragraph of the last message, a user message
    /// not answered yet.
    fn add_to_last_user_message(&mut self, text: &str) -> Result<()> {
        let mut message = self
            .history
            .last()
            .cloned()
            .ok_or_else(|| Error::Internal("no user message to add steering to".into()))?;
        message.content = join_paragraphs(&message.content, text);
        let tokens = self.backend.count_tokens(&message)?;
        self.history.replace_last(message, tokens)
    }

    /// Records a reply that called tools, giving each call an id so that its
    /// result (or error) can answer it. Returns the calls and the reply's
    /// prose (unreadable call fragments included, for the model to see).
    fn commit_calls(&mut self, parsed: &ParsedReply) -> Result<(Vec<ToolCall>, String)> {
        let calls: Vec<ToolCall> = parsed
            .calls
            .iter()
            .map(|c| ToolCall {
                id: self.history.next_call_id(),
                name: c.name.clone(),
                arguments: c.arguments.clone(),
            })
            .collect();
        let mut content = parsed.content.clone();
        for failure in &parsed.failures {
            content = join_text(&content, &failure.fragment);
        }
        self.commit_reply(Message::assistant_with_tool_calls(
            content.clone(),
            calls.clone(),
        ))?;
        Ok((calls, content))
    }

    /// Runs a reply's calls in order, then reports its unreadable ones. A
    /// stop answers the call it cut short and every call not yet started;
    /// so do a steering message and the time limit, for the calls not yet
    /// started.
    fn run_calls(&mut self, calls: &[ToolCall], parsed: &ParsedReply) -> Result<BatchOutcome> {
        let mut outcome = BatchOutcome::Failed;
        let mut index = 0;
        while index < calls.len() {
            if let Some((why, end)) = self.interruption() {
                self.refuse_calls(&calls[index..], &why)?;
                return Ok(end);
            }
            let group = index..index + self.group_width(&parsed.calls[index..]);
            let launched: Vec<Launched> = group
                .clone()
                .map(|i| self.begin(i - index, &calls[i], &parsed.calls[i]))
                .collect();
            let mut abandoned = false;
            for (i, launched) in group.clone().zip(launched) {
                match self.settle(&calls[i], launched)? {
                    CallOutcome::Succeeded if outcome == BatchOutcome::Failed => {
                        outcome = BatchOutcome::Succeeded
                    }
                    CallOutcome::Exhausted => outcome = BatchOutcome::Exhausted,
                    CallOutcome::Abandoned => abandoned = true,
                    CallOutcome::Succeeded | CallOutcome::Failed => {}
                }
            }
            index = group.end;
            if abandoned {
                self.refuse_calls(&calls[index..], STOPPED)?;
                return Ok(BatchOutcome::Cancelled);
            }
        }
        for failure in &parsed.failures {
            if self.report_unreadable_call(failure)? {
                outcome = BatchOutcome::Exhausted;
            }
        }
        Ok(outcome)
    }

    /// How many of the next calls start together: up to the configured
    /// width (1 when sequential), stopping before an exclusive tool, which
    /// always runs alone.
    fn group_width(&self, next: &[ParsedCall]) -> usize {
        let exclusive = |c: &ParsedCall| self.tools.get(&c.name).is_some_and(|t| t.is_exclusive());
        if next.first().is_some_and(exclusive) {
            return 1;
        }
        next.iter()
            .take(self.settings.tool_execution.width())
            .take_while(|c| !exclusive(c))
            .count()
            .max(1)
    }

    /// What keeps the next call of a reply from starting: a stop, the time
    /// limit or a steering message, with the reason the model reads.
    fn interruption(&self) -> Option<(String, BatchOutcome)> {
        if self.cancel.is_cancelled() {
            return Some((STOPPED.into(), BatchOutcome::Cancelled));
        }
        if let Some(hit) = self.settings.limits.time_up(self.started) {
            let why = format!("the chat reached its `{}` limit", hit.name());
            return Some((why, BatchOutcome::Limit(hit)));
        }
        if self.queues.has_steering() {
            let why = "the user sent a new message before it ran".to_string();
            return Some((why, BatchOutcome::Steered));
        }
        None
    }

    /// A reply cut short by a cancel: its text is kept when there is any.
    fn cut_short(&mut self, text: String) -> Result<Response> {
        if !text.is_empty() && self.cancel.abort_reason().is_none() {
            self.commit_reply(Message::assistant(text.clone()))?;
        }
        self.cancelled(text)
    }

    /// Ends the chat on a cancel: `cancelled`, or the abort's error.
    fn cancelled(&mut self, text: String) -> Result<Response> {
        self.withdraw_injected();
        match self.cancel.abort_reason() {
            Some(reason) => Err(Error::Cancelled(reason)),
            None => Ok(self.finish(text, StopReason::Cancelled)),
        }
    }

    /// A final reply as the user gets it: for an agent with tools, without
    /// call or result markup (see [`parser::answer_text`]); an agent
    /// without tools keeps whatever its model wrote.
    fn answer(&self, text: &str) -> String {
        match self.tools.is_empty() {
            true => text.to_string(),
            false => parser::answer_text(text),
        }
    }

    /// What a reply cut off by a cancel or the token limit keeps: its
    /// prose, without the markup of a call it had begun (which could not
    /// run, and which neither the user nor the model's next turn should
    /// read) or of a result it echoed. Plain prose keeps its exact text.
    fn unfinished_prose(&self, text: &str) -> String {
        match self.tools.is_empty() || !parser::has_markup(text) {
            true => text.to_string(),
            false => parser::answer_text(text),
        }
    }

    /// The tools shown to the model for this choice.
    fn visible_tools(&self, choice: &ToolChoice) -> Result<Vec<ToolDefinition>> {
        match choice {
            ToolChoice::None => Ok(Vec::new()),
            ToolChoice::Tool(name) => self
                .tools
                .get(name)
                .map(|t| vec![t.definition().clone()])
                .ok_or_else(|| Error::ToolNotFound(name.clone())),
            ToolChoice::Auto | ToolChoice::Required => Ok(self.tools.definitions()),
        }
    }

    /// Prunes the oldest turns until the prompt, the tool descriptions and
    /// room for the reply fit the context window.
    fn fit_context(&mut self, tools: &[ToolDefinition]) -> Result<()> {
        let context = self.backend.context_size();
        let tool_tokens = if tools.is_empty() {
            0
        } else {
            let described = Message::system(serde_json::to_string(tools)?);
            self.backend.count_tokens(&described)?
        };
        let reply = reply_reserve(self.settings.max_tokens, context);
        let budget = context.saturating_sub(reply.saturating_add(tool_tokens));
        self.compact_to(budget)?;
        if self.history.total_tokens() > budget {
            return Err(Error::ContextOverflow(format!(
                "the current turn needs {} tokens but only {budget} of the {context}-token \
                 context are left after reserving {reply} for the reply and {tool_tokens} for \
                 tool descriptions",
                self.history.total_tokens()
            )));
        }
        Ok(())
    }

    /// Fits the history into `budget` by the configured strategy, reporting
    /// each pass as `history_compacted`. The current turn moves up by what
    /// was removed before it.
    fn compact_to(&mut self, budget: u32) -> Result<()> {
        let before = self.history.total_tokens();
        let passes = if let Some(pass) = self.host_strategy(budget)? {
            vec![pass]
        } else {
            self.builtin_strategy(budget, before)?
        };
        for pass in passes {
            tracing::debug!(level = ?pass.level, before = pass.tokens_before, after = pass.tokens_after, "compacted the history");
            self.callbacks.event(EventKind::HistoryCompacted {
                level: pass.level,
                removed: pass.removed,
                tokens_before: pass.tokens_before,
                tokens_after: pass.tokens_after,
            });
        }
        Ok(())
    }

    /// Asks the `context_strategy` hook, when there is one and the history
    /// does not fit `budget`: its pass, or `None` for the config's strategy
    /// (the hook declined, failed, or returned what breaks a rule; the last
    /// two are reported as hook failures).
    fn host_strategy(&mut self, budget: u32) -> Result<Option<Pass>> {
        let Some(hooks) = self.callbacks.hooks.clone() else {
            return Ok(None);
        };
        if self.history.total_tokens() <= budget {
            return Ok(None);
        }
        let (messages, tokens, system_tokens) = self.history.counted();
        let request = ContextRequest {
            messages,
            tokens,
            budget,
            system_tokens,
            current_turn: self.turn_start,
        };
        let kept = match hooks.context_strategy(&request) {
            Ok(Some(kept)) => kept,
            Ok(None) => return Ok(None),
            Err(message) => {
                hooks::report_failure(hooks.as_ref(), "context_strategy", &message);
                return Ok(None);
            }
        };
        let len = self.history.len();
        let backend = &mut *self.backend;
        match self
            .history
            .adopt(budget, self.turn_start, kept, &mut |m| {
                backend.count_tokens(m)
            })? {
            Ok(pass) => {
                // The current turn is the end of both, so it moved by
                // the difference in length.
                self.turn_start = self.turn_start + self.history.len() - len;
                Ok(Some(pass))
            }
            Err(refusal) => {
                hooks::report_failure(hooks.as_ref(), "context_strategy", &refusal);
                Ok(None)
            }
        }
    }

    /// The config's `context_strategy`: `fifo` or the `compact` cascade.
    fn builtin_strategy(&mut self, budget: u32, before: u32) -> Result<Vec<Pass>> {
        Ok(match self.settings.context_strategy {
            ContextStrategy::Fifo => {
                let len = self.history.len();
                let removed = self.history.prune_to_fit(budget, self.turn_start);
                self.turn_start -= len - self.history.len();
                if removed.is_empty() {
                    Vec::new()
                } else {
                    vec![Pass {
                        level: CompactionLevel::Fifo,
                        removed,
                        tokens_before: before,
                        tokens_after: self.history.total_tokens(),
                    }]
                }
            }
            ContextStrategy::Compact(settings) => {
                let backend = &mut *self.backend;
                let (summarizer, cancel) = (self.settings.summarizer.clone(), self.cancel);
                let mut summarize = summarizer.as_ref().map(|summarizer| {
                    move |span: &[Message]| summarizer.summarize(span, SUMMARY_WORDS, cancel)
                });
                let mut helpers = Helpers {
                    // Half the window: a summarizer on this model has the
                    // same one, and needs room for its instructions and
                    // its reply.
                    readable: backend.context_size() / 2,
                    count: &mut |m| backend.count_tokens(m),
                    summarize: summarize.as_mut().map(|f| f as _),
                };
                let done =
                    self.history
                        .compact(budget, self.turn_start, &settings, &mut helpers)?;
                self.turn_start -= done.removed_before_turn;
                done.passes
            }
        })
    }

    /// Generates one reply (a turn of the chat), streaming its prose to
    /// `on_token`, between `turn_started` and `turn_finished`.
    fn infer(
        &mut self,
        tools: &[ToolDefinition],
        tool_choice: &ToolChoice,
        rag_context: &Option<String>,
    ) -> Result<Generation> {
        self.metrics.iterations += 1;
        let turn = self.metrics.iterations;
        self.callbacks.event(EventKind::TurnStarted { turn });
        // Records of the reply (the prompt, the raw output, the backend's
        // own) carry the turn; at the error level, like the chat's span.
        let span = tracing::error_span!(target: targets::TURN, "turn", turn);
        let _in_turn = span.enter();
        let started = Instant::now();
        let mut generation = self.generate(tools, tool_choice, rag_context);
        if matches!(generation, Err(Error::ContextOverflow(_))) && self.compact_after_overflow()? {
            generation = self.generate(tools, tool_choice, rag_context);
        }
        log_turn(turn, &generation, started.elapsed());
        if let (Ok(reply), Some(hooks)) = (&generation, &self.callbacks.hooks) {
            if let Err(message) = hooks.after_turn(turn, &reply.text) {
                hooks::report_failure(hooks.as_ref(), "after_turn", &message);
            }
        }
        let usage = generation.as_ref().map_or(Usage::default(), |g| Usage {
            prompt_tokens: g.prompt_tokens,
            cached_tokens: g.cached_tokens,
            completion_tokens: g.completion_tokens,
            total_tokens: g.prompt_tokens + g.completion_tokens,
        });
        self.callbacks
            .event(EventKind::TurnFinished { turn, usage });
        generation
    }

    /// After the backend found the prompt too long for its window (a
    /// server's count is not our estimate): compacts the history by the
    /// strategy in force to 3/4 of its size, for one more try. False when
    /// nothing could be removed (the current turn alone is too long), and
    /// the overflow stands.
    fn compact_after_overflow(&mut self) -> Result<bool> {
        let before = self.history.total_tokens();
        let budget = before - before / 4;
        tracing::info!(
            tokens = before,
            budget,
            "the backend found the prompt too long; compacting"
        );
        self.compact_to(budget)?;
        Ok(self.history.total_tokens() < before)
    }

    /// The backend's reply to the conversation as it stands.
    fn generate(
        &mut self,
        tools: &[ToolDefinition],
        tool_choice: &ToolChoice,
        rag_context: &Option<String>,
    ) -> Result<Generation> {
        let mut messages = self.history.messages();
        if let Some(context) = rag_context {
            // Ephemeral: shown in this request, never stored in the history.
            let index = messages.len() - (self.history.len() - self.turn_start);
            let question = &messages[index].content;
            messages[index].content = format!("Context:\n{context}\n\n{question}");
        }
        let messages = self.transform_context(messages);
        let request = GenerateRequest {
            messages: &messages,
            tools,
            tool_choice,
            max_tokens: self.reply_limit(),
            max_calls: self.settings.tool_execution.calls_per_reply(),
            stop: &self.settings.stop,
            cache_hint: CacheHint {
                stable_prefix: self.history.stable_prefix(),
            },
            deadline: self.settings.limits.deadline(self.started),
        };
        let trigger = if tools.is_empty() {
            ""
        } else {
            self.backend.tool_call_format().trigger()
        };
        let mut filter = StreamFilter::new(trigger);
        let thinking_format = self.backend.thinking_format();
        let mut splitter = ThinkingSplitter::new(thinking_format);
        let started = self.started;
        let first_token = &mut self.first_token;
        // Text and retries are reported from inside one backend call, one
        // at a time: the callbacks are shared between the two closures.
        let callbacks = RefCell::new(&mut *self.callbacks);
        // The reply's own token: the chat's stop reaches it, and so does a
        // steering message, which ends the reply but not the chat.
        let reply = self.cancel.child();
        self.queues.set_reply(Some(reply.clone()));
        let generation = self.backend.generate_with_retries(
            &request,
            &mut |piece| {
                first_token.get_or_insert_with(|| started.elapsed());
                let part = splitter.push(piece);
                let mut callbacks = callbacks.borrow_mut();
                callbacks.thinking(&part.thinking);
                if let Some(text) = filter.push(&part.text).filter(|t| !t.is_empty()) {
                    callbacks.token(&text);
                }
            },
            &mut |retry| {
                callbacks
                    .borrow_mut()
                    .event(EventKind::Retry(retry.clone()))
            },
            &reply,
        );
        self.queues.set_reply(None);
        let generation = generation?;
        let rest = splitter.finish();
        self.callbacks.thinking(&rest.thinking);
        if let Some(text) = filter.push(&rest.text).filter(|t| !t.is_empty()) {
            self.callbacks.token(&text);
        }
        if let Some(text) = filter.finish() {
            self.callbacks.token(&text);
        }
        tracing::debug!(target: targets::RAW_OUTPUT, "{}", generation.text);
        // The reasoning leaves the text here, for the parser and the
        // history; a backend that had it apart (a remote API) streamed
        // none, so its channel gets it whole.
        let mut generation = generation;
        let split = thinking::split(thinking_format, &generation.text);
        if thinking_format != ThinkingFormat::None {
            generation.text = split.text;
        }
        if generation.thinking.is_empty() {
            generation.thinking = split.thinking;
        } else {
            self.callbacks.thinking(&generation.thinking);
        }
        self.history.mark_sent();
        self.usage.add(Usage {
            prompt_tokens: generation.prompt_tokens,
            cached_tokens: generation.cached_tokens,
            completion_tokens: generation.completion_tokens,
            total_tokens: generation.prompt_tokens + generation.completion_tokens,
        });
        self.metrics.prompt_ms += ms(generation.prompt_time);
        self.metrics.generation_ms += ms(generation.generation_time);
        Ok(generation)
    }

    /// The messages as the `transform_context` hook edits them for this
    /// reply; a failing hook changes nothing.
    fn transform_context(&self, messages: Vec<Message>) -> Vec<Message> {
        let Some(hooks) = &self.callbacks.hooks else {
            return messages;
        };
        hooks
            .transform_context(messages.clone())
            .unwrap_or_else(|message| {
                hooks::report_failure(hooks.as_ref(), "transform_context", &message);
                messages
            })
    }

    /// The reply's token limit: `max_tokens`, or less when the chat's token
    /// budget leaves less.
    fn reply_limit(&self) -> Option<u32> {
        let budget = self
            .settings
            .limits
            .tokens_left(u64::from(self.usage.total_tokens));
        match (self.settings.max_tokens, budget) {
            (Some(max), Some(left)) => Some(max.min(left)),
            (max, left) => max.or(left),
        }
    }

    /// Reports a call started, validates it and hands it to tool thread
    /// `lane`; a call that cannot run (an unknown tool, bad arguments) is
    /// settled at once.
    fn begin(&mut self, lane: usize, call: &ToolCall, parsed: &ParsedCall) -> Launched {
        let arguments = match self.before_tool_call(call) {
            ToolCallDecision::Allow => parsed.arguments.clone(),
            ToolCallDecision::Rewrite { arguments } => arguments,
            ToolCallDecision::Deny { reason } => {
                self.callbacks.event(EventKind::ToolCallStarted {
                    id: call.id.clone(),
                    name: call.name.clone(),
                    arguments: call.arguments.clone(),
                });
                let denied = Error::ToolHandlerFailed {
                    tool: call.name.clone(),
                    message: format!("the call was denied: {reason}"),
                };
                return Launched {
                    started: Instant::now(),
                    run: Launch::Settled(Err(denied)),
                    structured: false,
                };
            }
        };
        self.callbacks.event(EventKind::ToolCallStarted {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: arguments.clone(),
        });
        let started = Instant::now();
        let tool = self.tools.get(&parsed.name);
        let structured = tool.as_ref().is_some_and(|t| t.is_structured());
        let run = match tool {
            None => Launch::Settled(Err(Error::ToolNotFound(parsed.name.clone()))),
            Some(tool) => match tool.validate(&arguments) {
                Err(error) => Launch::Settled(Err(error)),
                Ok(()) => Launch::Running(
                    self.runner.start(lane, &call.id, &tool, arguments),
                    tool.time_limit(),
                ),
            },
        };
        Launched {
            started,
            run,
            structured,
        }
    }

    /// Asks the `before_tool_call` hook about a call; a failing hook denies it.
    fn before_tool_call(&self, call: &ToolCall) -> ToolCallDecision {
        let Some(hooks) = &self.callbacks.hooks else {
            return ToolCallDecision::Allow;
        };
        hooks.before_tool_call(call).unwrap_or_else(|message| {
            hooks::report_failure(hooks.as_ref(), "before_tool_call", &message);
            ToolCallDecision::Deny {
                reason: format!("the before_tool_call hook failed: {message}"),
            }
        })
    }

    /// The result the model reads: the `after_tool_call` hook, which sees
    /// what the host sees, may replace it; a failing hook changes nothing.
    fn after_tool_call(
        &self,
        call: &ToolCall,
        outcome: Result<Delivered>,
        structured: bool,
    ) -> Result<Delivered> {
        let Some(hooks) = &self.callbacks.hooks else {
            return outcome;
        };
        let seen = match &outcome {
            Ok(delivered) => Ok(delivered.record.clone()),
            Err(e) => Err(e.to_string()),
        };
        match hooks.after_tool_call(call, &seen) {
            Ok(Some(replacement)) => Ok(Delivered::of(replacement, structured)),
            Ok(None) => outcome,
            Err(message) => {
                hooks::report_failure(hooks.as_ref(), "after_tool_call", &message);
                outcome
            }
        }
    }

    /// Waits for a started call, reporting what the running calls report
    /// meanwhile, then injects its result or error.
    fn settle(&mut self, call: &ToolCall, launched: Launched) -> Result<CallOutcome> {
        let run = match launched.run {
            Launch::Settled(outcome) => ToolRun::Finished(outcome),
            Launch::Running(pending, limit) => {
                let (callbacks, usage) = (&mut *self.callbacks, &mut self.usage);
                self.runner
                    .wait(pending, self.cancel, limit, &mut |context, drained| {
                        report_call(callbacks, usage, context, drained)
                    })
            }
        };
        let outcome = match run {
            ToolRun::Finished(outcome) => outcome,
            ToolRun::TimedOut(limit) => Err(Error::ToolHandlerFailed {
                tool: call.name.clone(),
                message: format!("it did not finish within {} ms", limit.as_millis()),
            }),
            ToolRun::Abandoned => {
                let message = format!(
                    "the chat was stopped while `{}` was running; its result was discarded",
                    call.name
                );
                let elapsed = ms(launched.started.elapsed());
                self.record_call(call, None, Some(message.clone()), elapsed);
                self.inject(Message::tool_error(&call.id, &call.name, message))?;
                return Ok(CallOutcome::Abandoned);
            }
        };
        let outcome = outcome.map(|value| Delivered::of(value, launched.structured));
        let outcome = self.after_tool_call(call, outcome, launched.structured);
        let duration_ms = ms(launched.started.elapsed());
        let (result, error) = match &outcome {
            Ok(delivered) => (Some(delivered.record.clone()), None),
            Err(e) => (None, Some(e.to_string())),
        };
        self.record_call(call, result, error, duration_ms);
        match outcome {
            Ok(delivered) => {
                self.failures_by_tool.remove(&call.name);
                let mut message = Message::tool(&call.id, &call.name, delivered.text);
                message.images = delivered.images;
                self.inject(message)?;
                Ok(CallOutcome::Succeeded)
            }
            Err(error) => {
                let (message, exhausted) = self.record_failure(&call.name, &error);
                self.inject(Message::tool_error(&call.id, &call.name, message))?;
                Ok(if exhausted {
                    CallOutcome::Exhausted
                } else {
                    CallOutcome::Failed
                })
            }
        }
    }

    /// Keeps the call for the response and reports it finished.
    fn record_call(
        &mut self,
        call: &ToolCall,
        result: Option<Value>,
        error: Option<String>,
        duration_ms: f64,
    ) {
        log_tool_call(call, error.as_deref(), duration_ms);
        self.records.push(ToolCallRecord {
            id: call.id.clone(),
            name: call.name.clone(),
            arguments: call.arguments.clone(),
            result: result.clone(),
            error: error.clone(),
            duration_ms,
        });
        self.callbacks.event(EventKind::ToolCallFinished {
            id: call.id.clone(),
            name: call.name.clone(),
            result,
            error,
            duration_ms,
        });
    }

    /// A call that could not be parsed goes back to the model as a system
    /// message (there is no call id to answer). Returns whether retries ran out.
    fn report_unreadable_call(&mut self, failure: &ParseFailure) -> Result<bool> {
        let tool = failure.tool.clone().unwrap_or_default();
        let error = Error::InvalidJson(failure.message.clone());
        let (message, exhausted) = self.record_failure(&tool, &error);
        self.inject(Message::system(message))?;
        Ok(exhausted)
    }

    /// Counts a failed attempt, records it, and words the message the model
    /// reads. Returns the message and whether the retry limit was passed.
    fn record_failure(&mut self, tool: &str, error: &Error) -> (String, bool) {
        let attempt = {
            let n = self.failures_by_tool.entry(tool.to_string()).or_insert(0);
            *n += 1;
            *n
        };
        let mut message = self.correction_hint(tool, error);
        self.push_error(tool, error.code(), message.clone(), attempt);
        let exhausted = attempt > self.settings.max_tool_retries;
        if exhausted {
            let gave_up = Error::ToolRetriesExhausted {
                tool: tool.to_string(),
                attempts: attempt,
            };
            self.push_error(tool, gave_up.code(), gave_up.to_string(), attempt);
            message.push_str(&format!(
                " This failed {attempt} times: stop calling tools and answer the user \
                 with what you know."
            ));
        }
        (message, exhausted)
    }

    fn push_error(&mut self, tool: &str, kind: ErrorCode, message: String, attempt: u32) {
        let record = ToolErrorRecord {
            tool: tool.to_string(),
            kind,
            message,
            attempt,
        };
        self.callbacks.event(EventKind::ToolError(record.clone()));
        self.errors.push(record);
    }

    /// What the model is told, so that it can correct its call.
    fn correction_hint(&self, tool: &str, error: &Error) -> String {
        match error {
            Error::ToolNotFound(name) => {
                let names: Vec<String> = self
                    .tools
                    .definitions()
                    .into_iter()
                    .map(|d| d.name)
                    .collect();
                format!(
                    "Error: there is no tool named `{name}`. Available tools: {}.",
                    if names.is_empty() {
                        "none".to_string()
                    } else {
                        names.join(", ")
                    }
                )
            }
            Error::ToolValidationFailed { message, .. } => format!(
                "Error: invalid arguments for `{tool}`: {message}. Call `{tool}` again with \
                 arguments that match its parameters."
            ),
            Error::ToolHandlerFailed { message, .. } => {
                format!("Error: `{tool}` failed: {message}")
            }
            Error::InvalidJson(message) => format!(
                "Error: your tool call could not be read: {message}. Write each call as \
                 {} {{\"name\": \"<tool>\", \"arguments\": {{...}}}} with valid JSON.",
                self.backend.tool_call_format().trigger()
            ),
            other => format!("Error: {other}"),
        }
    }

    /// Answers calls that will not run, keeping every call paired with a result.
    fn refuse_calls(&mut self, calls: &[ToolCall], why: &str) -> Result<()> {
        for call in calls {
            self.inject(Message::tool_error(
                &call.id,
                &call.name,
                format!("Not executed: {why}."),
            ))?;
        }
        Ok(())
    }

    /// Adds a reply of the model's to the history, with the reasoning it
    /// wrote before it.
    fn commit_reply(&mut self, message: Message) -> Result<()> {
        let message = match message.thinking {
            None => message.with_thinking(self.thinking.clone()),
            Some(_) => message,
        };
        self.inject(message)?;
        self.replied = true;
        self.injected = None;
        Ok(())
    }

    fn inject(&mut self, mut message: Message) -> Result<()> {
        let mut tokens = self.backend.count_tokens(&message)?;
        let limit = self.settings.max_tool_result_tokens;
        if message.role == Role::Tool && limit > 0 && tokens > limit {
            // Hygiene: a huge result would push the conversation out of
            // the window. A summarizer says what it holds; without one
            // (or when it fails) its head and tail usually do.
            if let Some(summary) = self.summary_of_result(&message, tokens, limit)? {
                message.content = summary;
                tokens = self.backend.count_tokens(&message)?;
            }
            if tokens > limit {
                let backend = &mut *self.backend;
                let template = message.clone();
                message.content = cut_middle(&message.content, tokens, limit, &mut |text| {
                    backend.count_tokens(&Message {
                        content: text.to_owned(),
                        ..template.clone()
                    })
                })?;
                tokens = self.backend.count_tokens(&message)?;
            }
        }
        self.history.push(message, tokens)?;
        // A reply without calls, or the last result of a reply's calls:
        // the history can be reopened as it stands, so a session keeps it
        // now rather than at the chat's end (a crash then loses only the
        // round in flight). A user message or a call waits for its answer.
        if self.history.is_closed() {
            (self.checkpoint)(self.history);
        }
        Ok(())
    }

    /// The summarizer's summary of a tool result of `tokens` tokens, over
    /// `limit`, marked as one; `None` without a summarizer or when it fails
    /// (logged), and the result is cut instead. A result longer than half
    /// the window is cut to that first, so that the summarizer (on this
    /// model, the same window) can read it.
    fn summary_of_result(
        &mut self,
        message: &Message,
        tokens: u32,
        limit: u32,
    ) -> Result<Option<String>> {
        let Some(summarizer) = self.settings.summarizer.clone() else {
            return Ok(None);
        };
        let readable = self.backend.context_size() / 2;
        let mut shown = message.clone();
        if tokens > readable {
            let backend = &mut *self.backend;
            shown.content = cut_middle(&message.content, tokens, readable, &mut |text| {
                backend.count_tokens(&Message {
                    content: text.to_owned(),
                    ..message.clone()
                })
            })?;
        }
        // About three words in four tokens, leaving room for the marker.
        let words = (limit.saturating_sub(16) * 3 / 4).max(8);
        Ok(
            match summarizer.summarize(std::slice::from_ref(&shown), words, self.cancel) {
                Ok(text) if !text.trim().is_empty() => Some(format!(
                    "[summary of a {tokens}-token result] {}",
                    text.trim()
                )),
                Ok(_) => None,
                Err(e) => {
                    tracing::warn!("the summarizer failed ({e}); cutting the result instead");
                    None
                }
            },
        )
    }

    /// Builds the response.
    fn finish(&mut self, text: String, stop_reason: StopReason) -> Response {
        let mut metrics = self.metrics;
        metrics.total_ms = ms(self.started.elapsed());
        metrics.time_to_first_token_ms = self.first_token.map(ms).unwrap_or(0.0);
        metrics.tokens_per_second = if metrics.generation_ms > 0.0 {
            f64::from(self.usage.completion_tokens) * 1000.0 / metrics.generation_ms
        } else {
            0.0
        };
        Response {
            text,
            thinking: (!self.thinking.is_empty()).then(|| self.thinking.clone()),
            stop_reason,
            tool_calls: std::mem::take(&mut self.records),
            tool_errors: std::mem::take(&mut self.errors),
            usage: self.usage,
            metrics,
        }
    }
}

/// Turns what a running call reported into its events, in order; the
/// tokens it spent (a sub-agent's) join the chat's usage.
fn report_call(
    callbacks: &mut Callbacks<'_>,
    usage: &mut Usage,
    context: &ToolContext,
    drained: Drained,
) {
    usage.add(drained.usage);
    for report in drained.reports {
        let (id, name) = (context.call_id().to_owned(), context.tool_name().to_owned());
        callbacks.event(match report {
            Report::Update(update) => EventKind::ToolCallUpdate { id, name, update },
            Report::Progress(text) => EventKind::ToolCallProgress { id, name, text },
        });
    }
}

/// A call handed to a tool thread, or settled before it could run.
struct Launched {
    started: Instant,
    run: Launch,
    /// The tool returns a `ToolOutput` (see `Tool::with_output`).
    structured: bool,
}

enum Launch {
    /// Refused before running (an unknown tool, invalid arguments).
    Settled(Result<Value>),
    /// Running, with the tool's time limit.
    Running(Pending, Option<Duration>),
}

/// How one call went.
enum CallOutcome {
    Succeeded,
    Failed,
    Exhausted,
    /// A stop came while the handler ran.
    Abandoned,
}

/// What the model reads for a call a stop kept from running.
const STOPPED: &str = "the chat was stopped before it ran";

/// How a reply's calls went, taken together.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BatchOutcome {
    /// At least one call succeeded and none exhausted its retries.
    Succeeded,
    /// Every call failed, within the retry limit.
    Failed,
    /// A tool failed past the retry limit.
    Exhausted,
    /// A stop ended the batch; every call is answered.
    Cancelled,
    /// A limit ended the batch; every call is answered.
    Limit(LimitHit),
    /// A steering message skipped the calls not yet started.
    Steered,
}

/// The calls of a reply: those the backend returned as data when there
/// are any (a remote provider's), else those written in its text. With no
/// tools visible, the reply is plain text.
fn parse_reply(
    definitions: &[ToolDefinition],
    text: &str,
    native: Vec<NativeToolCall>,
) -> ParsedReply {
    if definitions.is_empty() {
        ParsedReply {
            content: text.trim().to_string(),
            ..Default::default()
        }
    } else if !native.is_empty() {
        native_reply(text, native)
    } else {
        parser::parse(text)
    }
}

/// A reply whose calls came as data: its text is all prose, and a call
/// whose arguments are not a JSON object cannot be read, like a garbled
/// call in a text (the model is told, and the try counts against the tool).
fn native_reply(text: &str, calls: Vec<NativeToolCall>) -> ParsedReply {
    let mut reply = ParsedReply {
        content: text.trim().to_string(),
        ..Default::default()
    };
    for NativeToolCall { name, arguments } in calls {
        // A call without arguments may come with an empty text.
        let parsed = match arguments.trim() {
            "" => Ok(Value::Object(Default::default())),
            json => serde_json::from_str::<Value>(json),
        };
        let problem = match parsed {
            Ok(arguments @ Value::Object(_)) => {
                reply.calls.push(ParsedCall { name, arguments });
                continue;
            }
            Ok(other) => format!("are {other}, not a JSON object"),
            Err(e) => format!("are not valid JSON ({e}): {arguments}"),
        };
        reply.failures.push(ParseFailure {
            message: format!("the arguments of `{name}` {problem}"),
            tool: Some(name),
            fragment: String::new(),
        });
    }
    reply
}

/// Tokens kept free for the reply when fitting the history. A `max_tokens`
/// larger than half the window reserves half of it: a huge limit means "as
/// long as the room left allows" (the backend stops at the window's end),
/// never a turn that cannot start.
fn reply_reserve(max_tokens: Option<u32>, context: u32) -> u32 {
    match max_tokens {
        Some(max) => max.min(context / 2),
        None => DEFAULT_REPLY_RESERVE.min(context / 4),
    }
}

/// A model reply's `zoo::turn` line.
fn log_turn(turn: u32, generation: &Result<Generation>, elapsed: Duration) {
    let latency_ms = ms(elapsed);
    match generation {
        Ok(g) => tracing::info!(
            target: targets::TURN,
            turn,
            finish = finish_name(g.finish),
            prompt_tokens = g.prompt_tokens,
            cached_tokens = g.cached_tokens,
            completion_tokens = g.completion_tokens,
            latency_ms,
            "turn {turn}: {} prompt tokens ({} cached), {} generated in {latency_ms:.1} ms",
            g.prompt_tokens,
            g.cached_tokens,
            g.completion_tokens,
        ),
        Err(error) => tracing::warn!(
            target: targets::TURN,
            turn,
            error = %error,
            latency_ms,
            "turn {turn} failed after {latency_ms:.1} ms: {error}",
        ),
    }
}

fn finish_name(finish: FinishReason) -> &'static str {
    match finish {
        FinishReason::Stop => "stop",
        FinishReason::Length => "length",
        FinishReason::Cancelled => "cancelled",
    }
}

/// A tool call's `zoo::tool` line.
fn log_tool_call(call: &ToolCall, error: Option<&str>, latency_ms: f64) {
    let (tool, call_id) = (call.name.as_str(), call.id.as_str());
    match error {
        None => tracing::info!(
            target: targets::TOOL,
            tool,
            call_id,
            ok = true,
            latency_ms,
            "tool `{tool}` ({call_id}) returned in {latency_ms:.1} ms",
        ),
        Some(error) => tracing::info!(
            target: targets::TOOL,
            tool,
            call_id,
            ok = false,
            error,
            latency_ms,
            "tool `{tool}` ({call_id}) failed in {latency_ms:.1} ms: {error}",
        ),
    }
}

fn join_text(a: &str, b: &str) -> String {
    join_with(a, b, "\n")
}

/// Two texts as paragraphs, a blank line between them.
fn join_paragraphs(a: &str, b: &str) -> String {
    join_with(a, b, "\n\n")
}

fn join_with(a: &str, b: &str, separator: &str) -> String {
    match (a.is_empty(), b.is_empty()) {
        (true, _) => b.to_string(),
        (_, true) => a.to_string(),
        _ => format!("{a}{separator}{b}"),
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}
