//! Fitting a conversation into the context window: the strategies
//! (`context_strategy`: `fifo`, or the `compact` cascade) and the text cuts
//! they share with tool-result hygiene. Token counts are the backend's own,
//! never a characters-per-token guess.

mod cascade;
mod cut;
mod host;
mod summary;

use serde::{Deserialize, Serialize};

use crate::message::Message;

pub use cascade::{compact, compact_with, drop_oldest_turns, Compaction, Helpers};
pub use cut::cut_middle;
pub use host::{adopt, Refusal};
pub use summary::{summary_request, Summarize, SummarizerConfig, DEFAULT_INSTRUCTIONS};

/// A message of the window with its exact token count.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// The message as the model sees it.
    pub message: Message,
    /// Its tokens as the backend renders it.
    pub tokens: u32,
    /// Its place in the whole conversation (a session store's row), or
    /// `None` for a message the compaction wrote.
    pub position: Option<usize>,
}

/// How the history is fitted into the window (config `context_strategy`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ContextStrategy {
    /// Drop the oldest turns first (the default).
    #[default]
    Fifo,
    /// The compaction cascade (`{"compact": {...}}`), see [`compact`].
    Compact(CompactSettings),
}

/// The compaction cascade's parameters; every one has a default, so
/// `{"compact": {}}` is a complete setting.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompactSettings {
    /// The newest messages no level touches (the current turn is always kept).
    pub keep_recent: u32,
    /// The oldest messages (rounded up to a whole turn) that survive dropping
    /// the middle.
    pub keep_first: u32,
    /// Older tool results longer than this many tokens keep their head and
    /// tail (level 1).
    pub tool_result_tokens: u32,
    /// A pass compacts down to this share of the budget (percent), so that
    /// the next turns fit without compacting again.
    pub target_percent: u32,
}

impl Default for CompactSettings {
    fn default() -> Self {
        CompactSettings {
            keep_recent: 6,
            keep_first: 2,
            tool_result_tokens: 200,
            target_percent: 75,
        }
    }
}

/// What a compaction pass did, as `history_compacted` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum CompactionLevel {
    /// `fifo`: the oldest turns were dropped.
    Fifo,
    /// Level 1: long tool results of older turns cut to head and tail.
    TruncateToolResults,
    /// Level 2: older tool calls and their results summarized in one line each.
    Summarize,
    /// Level 3: the middle dropped, the first and the newest messages kept.
    DropMiddle,
    /// Level 4, the last resort: the newest messages that fit.
    KeepNewest,
    /// The host's own strategy (the `context_strategy` hook) chose what
    /// stays.
    Custom,
}

/// One pass of a compaction: its level, the messages it removed or
/// rewrote (as they were), and the history's tokens before and after.
#[derive(Debug, Clone, PartialEq)]
pub struct Pass {
    /// What the pass did.
    pub level: CompactionLevel,
    /// The messages removed or rewritten, oldest first, as they were.
    pub removed: Vec<Message>,
    /// The history's tokens before the pass.
    pub tokens_before: u32,
    /// The history's tokens after it.
    pub tokens_after: u32,
}
