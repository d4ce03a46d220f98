//! The history manager: the conversation the agent remembers, with a token
//! count per message, role-order rules, FIFO pruning that keeps the system
//! prompt and never splits a tool call from its result, and the KV-cache
//! hint (how many leading messages are unchanged since the last request).

use crate::context::{self, CompactSettings, Compaction, Entry, Helpers, Pass, Refusal};
use crate::error::{Error, Result};
use crate::message::{Message, Role};

/// The part of a conversation a saved copy lacks.
#[derive(Debug, Clone, PartialEq)]
pub struct Unsaved {
    /// Saved messages from this position on are no longer in the
    /// conversation (a failed turn was undone, an answer regenerated).
    pub stale_from: usize,
    /// The messages to save, with their positions (past `stale_from`;
    /// with gaps where messages left the window before they were saved).
    pub messages: Vec<(usize, Message)>,
}

/// The conversation: an optional system prompt, then the messages.
#[derive(Debug, Clone, Default)]
pub struct History {
    system: Option<Entry>,
    entries: Vec<Entry>,
    /// Leading messages (system prompt included) unchanged since `mark_sent`.
    stable: usize,
    next_call: u64,
    /// The position (in the whole conversation, as a session store numbers
    /// its messages) the next message takes.
    next_position: usize,
    /// Messages before this position are saved unchanged (see
    /// [`unsaved`](Self::unsaved)).
    saved: usize,
    /// Whether anything a saved copy holds (a message, the system prompt)
    /// changed since [`mark_saved`](Self::mark_saved): a chat that changed
    /// nothing then costs its session no write at all.
    changed: bool,
}

impl History {
    /// An empty history.
    pub fn new() -> Self {
        Self::default()
    }

    /// Sets (or with `None` removes) the system prompt. The KV cache cannot
    /// be reused after this: everything follows the system prompt.
    pub fn set_system_prompt(&mut self, prompt: Option<(String, u32)>) {
        self.system = prompt.map(|(text, tokens)| Entry {
            message: Message::system(text),
            tokens,
            position: None,
        });
        self.stable = 0;
        self.changed = true;
    }

    /// The system prompt, if any.
    pub fn system_prompt(&self) -> Option<&str> {
        self.system.as_ref().map(|e| e.message.content.as_str())
    }

    /// Appends a message after checking the role order:
    /// - no two user messages in a row, and no user message while an
    ///   assistant's tool calls are unanswered;
    /// - a tool message only answers a call of the latest assistant message
    ///   that has not been answered yet;
    /// - a system message at the very start becomes the system prompt.
    pub fn push(&mut self, message: Message, tokens: u32) -> Result<()> {
        if message.role == Role::System && self.entries.is_empty() && self.system.is_none() {
            self.system = Some(Entry {
                message,
                tokens,
                position: None,
            });
            self.changed = true;
            return Ok(());
        }
        self.check_order(&message)?;
        self.reserve_call_ids(&message);
        self.entries.push(Entry {
            message,
            tokens,
            position: Some(self.next_position),
        });
        self.next_position += 1;
        self.changed = true;
        Ok(())
    }

    /// Keeps [`next_call_id`](Self::next_call_id) past every `call_N` id the
    /// history holds, so that a restored conversation never sees an id again.
    fn reserve_call_ids(&mut self, message: &Message) {
        for call in &message.tool_calls {
            if let Some(n) = call
                .id
                .strip_prefix("call_")
                .and_then(|n| n.parse::<u64>().ok())
            {
                self.next_call = self.next_call.max(n);
            }
        }
    }

    /// Checks that a restored history can be answered: no tool call may be
    /// left without its result (the next reply could not follow it). A
    /// history may end with a user message the model never answered: the
    /// next chat adds its message to that one, and `continue_chat` answers it.
    pub fn check_can_continue(&self) -> Result<()> {
        if let Some(id) = self.unanswered_calls().first() {
            return Err(Error::InvalidMessageSequence(format!(
                "the history ends with tool call `{id}`, which has no result; \
                 add its tool message or leave the call out"
            )));
        }
        Ok(())
    }

    fn check_order(&self, message: &Message) -> Result<()> {
        let last = self
            .entries
            .iter()
            .rev()
            .find(|e| e.message.role != Role::System)
            .map(|e| &e.message);
        match message.role {
            Role::User => {
                if last.is_some_and(|m| m.role == Role::User) {
                    return Err(Error::InvalidMessageSequence(
                        "a user message cannot follow another user message; \
                         the assistant has not answered yet"
                            .into(),
                    ));
                }
                if let Some(id) = self.unanswered_calls().first() {
                    return Err(Error::InvalidMessageSequence(format!(
                        "tool call `{id}` has no result yet; add its tool message first"
                    )));
                }
            }
            Role::Tool => {
                let id = message.tool_call_id.as_deref().ok_or_else(|| {
                    Error::InvalidMessageSequence("a tool message needs a tool_call_id".into())
                })?;
                if !self.unanswered_calls().contains(&id) {
                    return Err(Error::InvalidMessageSequence(format!(
                        "tool message for `{id}` does not answer a pending tool call \
                         of the preceding assistant message"
                    )));
                }
            }
            Role::Assistant | Role::System => {}
        }
        Ok(())
    }

    /// Ids of the latest assistant message's calls that have no result yet.
    /// Runs for every injected result, so it stays linear in the reply's
    /// calls (a set, not a list scan per call).
    fn unanswered_calls(&self) -> Vec<&str> {
        let Some(pos) = self
            .entries
            .iter()
            .rposition(|e| e.message.role == Role::Assistant)
        else {
            return Vec::new();
        };
        let answered: std::collections::HashSet<&str> = self.entries[pos + 1..]
            .iter()
            .filter_map(|e| e.message.tool_call_id.as_deref())
            .collect();
        self.entries[pos]
            .message
            .tool_calls
            .iter()
            .map(|c| c.id.as_str())
            .filter(|id| !answered.contains(id))
            .collect()
    }

    /// Every message, system prompt first.
    pub fn messages(&self) -> Vec<Message> {
        self.system
            .iter()
            .chain(&self.entries)
            .map(|e| e.message.clone())
            .collect()
    }

    /// Where the last user message is (after the system prompt).
    pub fn last_user_index(&self) -> Option<usize> {
        self.entries
            .iter()
            .rposition(|e| e.message.role == Role::User)
    }

    /// Whether the history could be reopened as it stands: it does not end
    /// with a user message and every call has its result (what
    /// [`check_can_continue`](Self::check_can_continue) accepts).
    pub fn is_closed(&self) -> bool {
        self.last_spoken_role() != Some(Role::User) && self.unanswered_calls().is_empty()
    }

    /// The role of the last message that is not a system note.
    fn last_spoken_role(&self) -> Option<Role> {
        self.entries
            .iter()
            .rev()
            .find(|e| e.message.role != Role::System)
            .map(|e| e.message.role)
    }

    /// Checks that the model can answer the history as it stands: there is
    /// something to answer, and no call waits for its result.
    pub fn check_can_answer(&self) -> Result<()> {
        if let Some(id) = self.unanswered_calls().first() {
            return Err(Error::InvalidMessageSequence(format!(
                "tool call `{id}` has no result yet; add its tool message first"
            )));
        }
        if self.entries.is_empty() {
            return Err(Error::InvalidMessageSequence(
                "there is nothing to continue: the history has no messages".into(),
            ));
        }
        Ok(())
    }

    /// The last message after the system prompt.
    pub fn last(&self) -> Option<&Message> {
        self.entries.last().map(|e| &e.message)
    }

    /// Replaces the last message with `message` of the same role (a user
    /// message the model has not answered, given one more paragraph). A
    /// saved copy is stale from its position on, and the KV-cache hint
    /// drops to it.
    pub fn replace_last(&mut self, message: Message, tokens: u32) -> Result<()> {
        let index = self.entries.len() + usize::from(self.system.is_some());
        let last = self
            .entries
            .last_mut()
            .filter(|e| e.message.role == message.role)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "no {} message at the end of the history to replace",
                    message.role.as_str()
                ))
            })?;
        last.message = message;
        last.tokens = tokens;
        if let Some(position) = last.position {
            self.saved = self.saved.min(position);
        }
        self.changed = true;
        self.stable = self.stable.min(index - 1);
        Ok(())
    }

    /// The role of the last message after the system prompt.
    pub fn last_role(&self) -> Option<Role> {
        self.entries.last().map(|e| e.message.role)
    }

    /// Messages after the system prompt.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are no messages after the system prompt.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    /// Token count of each message, system prompt first (same order as `messages`).
    pub fn token_counts(&self) -> Vec<u32> {
        self.system
            .iter()
            .chain(&self.entries)
            .map(|e| e.tokens)
            .collect()
    }

    /// Sum of the token counts.
    pub fn total_tokens(&self) -> u32 {
        self.token_counts().iter().sum()
    }

    /// Drops messages after the first `len` (system prompt not counted),
    /// used to undo a turn that failed.
    pub fn truncate(&mut self, len: usize) {
        let removed = self.entries.get(len..).unwrap_or_default();
        if let Some(first) = removed.iter().find_map(|e| e.position) {
            self.next_position = first;
            self.saved = self.saved.min(first);
            self.changed = true;
        }
        self.entries.truncate(len);
        let kept = self.entries.len() + usize::from(self.system.is_some());
        self.stable = self.stable.min(kept);
    }

    /// Puts back `earlier`, a copy taken before a turn that is now undone.
    /// The turn may have saved rounds meanwhile, so the saved copy counts
    /// as changed: the next save takes them out again.
    pub fn restore(&mut self, earlier: History) {
        *self = earlier;
        self.changed = true;
    }

    /// Removes every message but the system prompt.
    pub fn clear(&mut self) {
        self.entries.clear();
        self.next_position = 0;
        self.saved = 0;
        self.changed = true;
        self.stable = self.stable.min(usize::from(self.system.is_some()));
    }

    /// Removes the oldest turns (a user message and everything up to the
    /// next user message, so a call is never split from its result) until
    /// the total is at most `budget`. The system prompt and the turn that
    /// starts at `keep_from` (the current one) are never removed. Returns the
    /// removed messages, oldest first.
    pub fn prune_to_fit(&mut self, budget: u32, keep_from: usize) -> Vec<Message> {
        let fixed = self.system.as_ref().map_or(0, |e| e.tokens);
        let removed = context::drop_oldest_turns(&mut self.entries, fixed, budget, keep_from);
        if !removed.is_empty() {
            self.stable = self.stable.min(usize::from(self.system.is_some()));
        }
        removed
    }

    /// Runs the compaction cascade until the history fits `budget`, keeping
    /// the turn that starts at `keep_from` whole; `helpers` count a
    /// message's tokens and may write level 2's summaries. The KV-cache
    /// hint drops to the first change.
    pub fn compact(
        &mut self,
        budget: u32,
        keep_from: usize,
        settings: &CompactSettings,
        helpers: &mut Helpers<'_>,
    ) -> Result<Compaction> {
        let fixed = self.system.as_ref().map_or(0, |e| e.tokens);
        let done = context::compact_with(
            &mut self.entries,
            fixed,
            budget,
            keep_from,
            settings,
            helpers,
        )?;
        if let Some(first) = done.first_changed {
            self.stable = self.stable.min(first + usize::from(self.system.is_some()));
        }
        Ok(done)
    }

    /// Puts a host strategy's `kept` messages in place of the history's
    /// when they keep every rule: role order (a call never without its
    /// result), the turn that starts at `keep_from` kept whole and last,
    /// and the whole within `budget`. Messages kept unchanged keep their
    /// place in the conversation; new ones are counted with `count`. The
    /// KV-cache hint drops to the first change. On a refusal (why, in
    /// words) the history is unchanged.
    pub fn adopt(
        &mut self,
        budget: u32,
        keep_from: usize,
        kept: Vec<Message>,
        count: &mut dyn FnMut(&Message) -> Result<u32>,
    ) -> Result<std::result::Result<Pass, Refusal>> {
        if let Err(e) = Self::check_sequence(&kept) {
            return Ok(Err(format!(
                "the messages it returned are out of order: {e}"
            )));
        }
        let fixed = self.system.as_ref().map_or(0, |e| e.tokens);
        let adopted = context::adopt(&mut self.entries, fixed, budget, keep_from, kept, count)?;
        Ok(adopted.map(|(pass, first_changed)| {
            self.stable = self
                .stable
                .min(first_changed + usize::from(self.system.is_some()));
            pass
        }))
    }

    /// Checks that `messages` could follow one another in a history, and
    /// leave no call without its result.
    fn check_sequence(messages: &[Message]) -> Result<()> {
        // A system message among them is a note, not the system prompt.
        let mut scratch = History {
            system: Some(Entry {
                message: Message::system(String::new()),
                tokens: 0,
                position: None,
            }),
            ..History::new()
        };
        for message in messages {
            scratch.push(message.clone(), 0)?;
        }
        match scratch.unanswered_calls().first() {
            Some(id) => Err(Error::InvalidMessageSequence(format!(
                "tool call `{id}` has no result"
            ))),
            None => Ok(()),
        }
    }

    /// The messages after the system prompt with their token counts, and
    /// the system prompt's tokens: what a host strategy is shown.
    pub fn counted(&self) -> (Vec<Message>, Vec<u32>, u32) {
        let messages = self.entries.iter().map(|e| e.message.clone()).collect();
        let tokens = self.entries.iter().map(|e| e.tokens).collect();
        (
            messages,
            tokens,
            self.system.as_ref().map_or(0, |e| e.tokens),
        )
    }

    /// Leading messages (system prompt included) unchanged since the last
    /// request was sent.
    pub fn stable_prefix(&self) -> usize {
        self.stable
    }

    /// Records that the current messages were sent to the backend.
    pub fn mark_sent(&mut self) {
        self.stable = self.entries.len() + usize::from(self.system.is_some());
    }

    /// What changed since [`mark_saved`](Self::mark_saved), by position in
    /// the whole conversation (pruned messages counted).
    pub fn unsaved(&self) -> Unsaved {
        Unsaved {
            stale_from: self.saved,
            messages: self
                .entries
                .iter()
                .filter_map(|e| Some((e.position?, &e.message)))
                .filter(|(position, _)| *position >= self.saved)
                .map(|(position, message)| (position, message.clone()))
                .collect(),
        }
    }

    /// Whether a saved copy lacks anything (see [`unsaved`](Self::unsaved)
    /// and the system prompt) since [`mark_saved`](Self::mark_saved).
    pub fn has_unsaved_changes(&self) -> bool {
        self.changed
    }

    /// Records that the messages are those of a saved copy whose system
    /// prompt is `stored`: only a different system prompt is left unsaved.
    pub fn mark_loaded(&mut self, stored: Option<&str>) {
        let prompt_differs = self.system_prompt() != stored;
        self.mark_saved();
        self.changed = prompt_differs;
    }

    /// Records that every message is saved.
    pub fn mark_saved(&mut self) {
        self.changed = false;
        self.saved = self.next_position;
    }

    /// A fresh tool-call id, unique within this history.
    pub fn next_call_id(&mut self) -> String {
        self.next_call += 1;
        format!("call_{}", self.next_call)
    }
}
