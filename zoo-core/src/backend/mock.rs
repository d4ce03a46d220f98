//! `MockBackend`: a scripted model, for the engine's tests and for users
//! who test their own agents without a model file (the `mock` provider,
//! [`crate::provider::MockProvider`]). It replays replies in order, streams
//! them piece by piece with a configurable delay, injects errors, and
//! records every call it receives.

use std::collections::VecDeque;
use std::sync::Arc;
use std::thread::ThreadId;
use std::time::{Duration, Instant};

use parking_lot::Mutex;

use super::{Backend, CacheHint, FinishReason, GenerateRequest, Generation};
use crate::cancel::CancelToken;
use crate::error::Result;
use crate::logs::targets;
use crate::message::{Message, Role};
use crate::thinking::ThinkingFormat;
use crate::tools::ToolChoice;
use crate::tools::{ToolCallFormat, ToolDefinition};

use crate::provider::MockProvider;
pub use crate::provider::MockReply;

impl MockProvider {
    /// The backend that plays this script.
    pub(crate) fn backend(&self) -> MockBackend {
        let mock = MockBackend::with_script(self.replies.iter().cloned());
        mock.set_piece_delay(std::time::Duration::from_millis(u64::from(
            self.piece_delay_ms,
        )));
        mock
    }
}

/// What the mock was asked, for tests to inspect.
#[derive(Debug, Clone)]
pub struct RecordedCall {
    /// The conversation it was given.
    pub messages: Vec<Message>,
    /// The tools it was given.
    pub tools: Vec<ToolDefinition>,
    /// The tool choice.
    pub tool_choice: ToolChoice,
    /// The token limit.
    pub max_tokens: Option<u32>,
    /// The KV-cache hint.
    pub cache_hint: CacheHint,
    /// The thread it ran on.
    pub thread: ThreadId,
}

/// Generate calls a mock keeps for inspection unless told otherwise: a
/// long-running test (thousands of chats) must not keep every request.
pub const DEFAULT_RECORD_LIMIT: usize = 100;

#[derive(Debug)]
struct MockState {
    script: VecDeque<MockReply>,
    piece_delay: Duration,
    context_size: u32,
    /// The most recent generate calls, at most `record_limit`.
    calls: VecDeque<RecordedCall>,
    record_limit: usize,
    call_count: usize,
    /// The thread of each of the latest `THREAD_RECORDS` method calls.
    threads: VecDeque<ThreadId>,
}

/// Method calls whose thread a mock remembers.
const THREAD_RECORDS: usize = 1000;

impl MockState {
    fn saw_thread(&mut self) {
        if self.threads.len() == THREAD_RECORDS {
            self.threads.pop_front();
        }
        self.threads.push_back(std::thread::current().id());
    }
}

/// A scripted backend. Clones share their script and records, so a test
/// keeps one clone and gives the other to the agent. With an empty script it
/// echoes the last user message as `echo: …`.
#[derive(Debug, Clone)]
pub struct MockBackend {
    state: Arc<Mutex<MockState>>,
}

impl Default for MockBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl MockBackend {
    /// A mock with an empty script, no delay and a 4096-token context.
    pub fn new() -> Self {
        MockBackend {
            state: Arc::new(Mutex::new(MockState {
                script: VecDeque::new(),
                piece_delay: Duration::ZERO,
                context_size: 4096,
                calls: VecDeque::new(),
                record_limit: DEFAULT_RECORD_LIMIT,
                call_count: 0,
                threads: VecDeque::new(),
            })),
        }
    }

    /// A mock that will give these replies in order.
    pub fn with_script(replies: impl IntoIterator<Item = MockReply>) -> Self {
        let mock = Self::new();
        mock.push_replies(replies);
        mock
    }

    /// Appends replies to the script.
    pub fn push_replies(&self, replies: impl IntoIterator<Item = MockReply>) {
        self.state.lock().script.extend(replies);
    }

    /// Drops the replies not yet used (after a cancelled chat, say).
    pub fn clear_script(&self) {
        self.state.lock().script.clear();
    }

    /// Sleeps this long before each streamed piece.
    pub fn set_piece_delay(&self, delay: Duration) {
        self.state.lock().piece_delay = delay;
    }

    /// Sets the context window the mock reports.
    pub fn set_context_size(&self, tokens: u32) {
        self.state.lock().context_size = tokens;
    }

    /// Keeps at most this many of the latest generate calls for
    /// [`calls`](Self::calls) (default [`DEFAULT_RECORD_LIMIT`]).
    pub fn set_record_limit(&self, calls: usize) {
        let mut state = self.state.lock();
        state.record_limit = calls;
        while state.calls.len() > calls {
            state.calls.pop_front();
        }
    }

    /// The latest generate calls, oldest first (at most the record limit).
    pub fn calls(&self) -> Vec<RecordedCall> {
        self.state.lock().calls.iter().cloned().collect()
    }

    /// How many generate calls were made in all, recorded or not.
    pub fn call_count(&self) -> usize {
        self.state.lock().call_count
    }

    /// The thread of each of the latest 1,000 backend method calls.
    pub fn threads(&self) -> Vec<ThreadId> {
        self.state.lock().threads.iter().copied().collect()
    }

    /// How many clones of this mock exist (the agent holds one while it runs).
    pub fn share_count(&self) -> usize {
        Arc::strong_count(&self.state)
    }

    /// Scripted replies not yet used.
    pub fn remaining(&self) -> usize {
        self.state.lock().script.len()
    }

    /// The mock's token rule: one token per whitespace-separated word, plus
    /// four for the message's markup.
    pub fn tokens_of(message: &Message) -> u32 {
        let calls: usize = message
            .tool_calls
            .iter()
            .map(|c| 2 + c.arguments.to_string().split_whitespace().count())
            .sum();
        // Images count as the placeholder a text-only model reads.
        let text = message.text_with_placeholders();
        (text.split_whitespace().count() + calls) as u32 + 4
    }
}

/// Splits text into pieces the way a tokenizer roughly would: each piece is
/// a word with the whitespace before it.
fn pieces(text: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut in_word = false;
    for (i, ch) in text.char_indices() {
        if ch.is_whitespace() && in_word {
            out.push(&text[start..i]);
            start = i;
            in_word = false;
        } else if !ch.is_whitespace() {
            in_word = true;
        }
    }
    if start < text.len() {
        out.push(&text[start..]);
    }
    out
}

impl Backend for MockBackend {
    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        let started = Instant::now();
        // The mock renders nothing: what it received is its prompt.
        tracing::debug!(
            target: targets::PROMPT,
            form = "messages",
            "{}",
            serde_json::to_string(request.messages).unwrap_or_default()
        );
        let (reply, delay) = {
            let mut state = self.state.lock();
            state.saw_thread();
            state.call_count += 1;
            if state.calls.len() == state.record_limit {
                state.calls.pop_front();
            }
            if state.record_limit > 0 {
                state.calls.push_back(RecordedCall {
                    messages: request.messages.to_vec(),
                    tools: request.tools.to_vec(),
                    tool_choice: request.tool_choice.clone(),
                    max_tokens: request.max_tokens,
                    cache_hint: request.cache_hint,
                    thread: std::thread::current().id(),
                });
            }
            let reply = state.script.pop_front().unwrap_or_else(|| {
                let last_user = request
                    .messages
                    .iter()
                    .rev()
                    .find(|m| m.role == Role::User)
                    .map(|m| m.content.clone())
                    .unwrap_or_default();
                MockReply::Text(format!("echo: {last_user}"))
            });
            (reply, state.piece_delay)
        };
        let text = match reply {
            MockReply::Text(text) => text,
            MockReply::Fail(error) => return Err(error),
        };
        let prompt_tokens: u32 = request.messages.iter().map(Self::tokens_of).sum();
        let cached_tokens: u32 = request
            .messages
            .iter()
            .take(request.cache_hint.stable_prefix)
            .map(Self::tokens_of)
            .sum();
        let prompt_time = started.elapsed();

        let mut out = String::new();
        let mut finish = FinishReason::Stop;
        for (count, piece) in pieces(&text).into_iter().enumerate() {
            if request.max_tokens.is_some_and(|max| count as u32 >= max) {
                finish = FinishReason::Length;
                break;
            }
            // Sleep in short slices so that cancellation is seen promptly.
            let mut wake = Instant::now() + delay;
            if let Some(deadline) = request.deadline {
                wake = wake.min(deadline);
            }
            while Instant::now() < wake && !cancel.is_cancelled() {
                std::thread::sleep((wake - Instant::now()).min(Duration::from_millis(2)));
            }
            if cancel.is_cancelled() {
                finish = FinishReason::Cancelled;
                break;
            }
            if request.deadline.is_some_and(|d| Instant::now() >= d) {
                finish = FinishReason::Length;
                break;
            }
            out.push_str(piece);
            on_piece(piece);
        }
        if let Some(stop) = request.stop.iter().find_map(|s| out.find(s.as_str())) {
            out.truncate(stop);
        }
        let completion_tokens = pieces(&out).len() as u32;
        Ok(Generation {
            text: out,
            thinking: String::new(),
            finish,
            prompt_tokens,
            cached_tokens,
            completion_tokens,
            prompt_time,
            generation_time: started.elapsed() - prompt_time,
        })
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32> {
        self.state.lock().saw_thread();
        Ok(Self::tokens_of(message))
    }

    fn context_size(&self) -> u32 {
        self.state.lock().context_size
    }

    fn tool_call_format(&self) -> ToolCallFormat {
        ToolCallFormat::Hermes
    }

    /// A scripted reply may reason between `<think>` and `</think>` first,
    /// as Qwen3 does, so thinking can be tested on the mock.
    fn thinking_format(&self) -> ThinkingFormat {
        ThinkingFormat::ThinkTags
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pieces_keep_every_character() {
        let text = "  hello wörld\n<tool_call>{\"a\": 1}  ";
        assert_eq!(pieces(text).concat(), text);
        assert_eq!(pieces("a b"), vec!["a", " b"]);
        assert!(pieces("").is_empty());
    }
}
