//! Per-chat options: callbacks, this turn's context and limits.

use crate::cancel::CancelToken;
use crate::engine::hooks::Hooks;
use crate::error::Result;
use crate::event::AgentEvent;
use crate::response::Response;
use crate::tools::ToolChoice;

/// Receives reply text as it is generated (never a split UTF-8 character).
pub type TokenCallback = Box<dyn FnMut(&str) + Send>;
/// Receives progress events.
pub type EventCallback = Box<dyn FnMut(&AgentEvent) + Send>;
/// Receives the result once, after the last token.
pub type CompleteCallback = Box<dyn FnOnce(&Result<Response>) + Send>;

/// Options of one chat. All callbacks run on the inference thread, in order.
#[derive(Default)]
pub struct ChatOptions {
    /// Streamed reply text (tool-call markup is not streamed).
    pub on_token: Option<TokenCallback>,
    /// Streamed reasoning of a model that reasons before it answers (its
    /// own channel: never part of the text `on_token` receives).
    pub on_thinking: Option<TokenCallback>,
    /// Progress events.
    pub on_event: Option<EventCallback>,
    /// Called once with the result, after the handle resolves.
    pub on_complete: Option<CompleteCallback>,
    /// Retrieved context for this turn only; never stored in the history.
    pub rag_context: Option<String>,
    /// Overrides the agent's `tool_choice` for this chat.
    pub tool_choice: Option<ToolChoice>,
    /// Overrides the agent's `max_tokens` for this chat.
    pub max_tokens: Option<u32>,
    /// A token of the caller's to cancel this chat with.
    pub cancel: Option<CancelToken>,
    /// Overrides the agent's `max_turns` for this chat (0 keeps the agent's).
    pub max_turns: Option<u32>,
    /// Overrides the agent's `max_total_tokens` for this chat (0 keeps the agent's).
    pub max_total_tokens: Option<u64>,
    /// Overrides the agent's `max_duration_ms` for this chat (0 keeps the agent's).
    pub max_duration_ms: Option<u64>,
    /// Overrides the agent's hooks for this chat.
    pub hooks: Option<std::sync::Arc<dyn Hooks>>,
}

impl std::fmt::Debug for ChatOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChatOptions")
            .field("rag_context", &self.rag_context)
            .field("tool_choice", &self.tool_choice)
            .field("max_tokens", &self.max_tokens)
            .field("max_turns", &self.max_turns)
            .field("max_total_tokens", &self.max_total_tokens)
            .field("max_duration_ms", &self.max_duration_ms)
            .finish_non_exhaustive()
    }
}

impl ChatOptions {
    /// No callbacks, the agent's defaults.
    pub fn new() -> Self {
        Self::default()
    }

    /// Streams reply text to `f`.
    pub fn on_token(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.on_token = Some(Box::new(f));
        self
    }

    /// Streams the model's reasoning to `f`.
    pub fn on_thinking(mut self, f: impl FnMut(&str) + Send + 'static) -> Self {
        self.on_thinking = Some(Box::new(f));
        self
    }

    /// Sends progress events to `f`.
    pub fn on_event(mut self, f: impl FnMut(&AgentEvent) + Send + 'static) -> Self {
        self.on_event = Some(Box::new(f));
        self
    }

    /// Calls `f` once with the result, on the inference thread, just after
    /// the chat's handle is resolved: a thread waiting on the handle may
    /// return before `f` has finished (as with a future's done callbacks).
    pub fn on_complete(mut self, f: impl FnOnce(&Result<Response>) + Send + 'static) -> Self {
        self.on_complete = Some(Box::new(f));
        self
    }

    /// Adds retrieved context for this turn only.
    pub fn rag_context(mut self, context: impl Into<String>) -> Self {
        self.rag_context = Some(context.into());
        self
    }

    /// Overrides the tool choice.
    pub fn tool_choice(mut self, choice: ToolChoice) -> Self {
        self.tool_choice = Some(choice);
        self
    }

    /// Overrides the reply token limit.
    pub fn max_tokens(mut self, max_tokens: u32) -> Self {
        self.max_tokens = Some(max_tokens);
        self
    }

    /// Overrides the limit on model replies (0 keeps the agent's).
    pub fn max_turns(mut self, max_turns: u32) -> Self {
        self.max_turns = Some(max_turns);
        self
    }

    /// Overrides the limit on tokens over the chat (0 keeps the agent's).
    pub fn max_total_tokens(mut self, max_total_tokens: u64) -> Self {
        self.max_total_tokens = Some(max_total_tokens);
        self
    }

    /// Overrides the chat's time limit in milliseconds (0 keeps the agent's).
    pub fn max_duration_ms(mut self, max_duration_ms: u64) -> Self {
        self.max_duration_ms = Some(max_duration_ms);
        self
    }

    /// Runs these hooks in this chat instead of the agent's.
    pub fn hooks(mut self, hooks: std::sync::Arc<dyn Hooks>) -> Self {
        self.hooks = Some(hooks);
        self
    }

    /// Uses the caller's cancel token.
    pub fn cancel_token(mut self, token: CancelToken) -> Self {
        self.cancel = Some(token);
        self
    }
}
