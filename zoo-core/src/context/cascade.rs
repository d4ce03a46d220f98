//! The compaction cascade: run before a reply when the history does not
//! fit its budget, each level only while the history still does not fit,
//! each only on the older messages (the newest `keep_recent` and the
//! current turn are never touched, and a tool call never loses its result).

use super::{cut_middle, CompactSettings, CompactionLevel, Entry, Pass};
use crate::error::Result;
use crate::message::{Message, Role};

/// Counts a message's tokens as the backend renders it.
pub type Count<'a> = &'a mut dyn FnMut(&Message) -> Result<u32>;

/// Writes a summary of messages (a model, see [`super::Summarize`]).
pub type Summarize<'a> = &'a mut dyn FnMut(&[Message]) -> Result<String>;

/// What the levels use besides the entries: the token counter, and the
/// model that writes level 2's summaries when there is one.
pub struct Helpers<'a> {
    /// Counts a message's tokens.
    pub count: Count<'a>,
    /// Writes a summary in place of level 2's one line per call.
    pub summarize: Option<Summarize<'a>>,
    /// The tokens of results the summarizer is shown at most, in all:
    /// longer results are cut to their head and tail first, so that the
    /// request fits its window.
    pub readable: u32,
}

/// What a compaction did to the entries.
#[derive(Debug, Default)]
pub struct Compaction {
    /// The passes that ran, in order.
    pub passes: Vec<Pass>,
    /// The first entry that changed, if any did (the KV cache is good up
    /// to there).
    pub first_changed: Option<usize>,
    /// Entries removed before the current turn (which moves up by as many).
    pub removed_before_turn: usize,
}

/// Runs the cascade on `entries` (the system prompt's `fixed` tokens
/// beside them) until they fit `budget`, keeping `entries[keep_from..]`
/// (the current turn) whole.
pub fn compact(
    entries: &mut Vec<Entry>,
    fixed: u32,
    budget: u32,
    keep_from: usize,
    settings: &CompactSettings,
    count: Count<'_>,
) -> Result<Compaction> {
    let mut helpers = Helpers {
        count,
        summarize: None,
        readable: u32::MAX,
    };
    compact_with(entries, fixed, budget, keep_from, settings, &mut helpers)
}

/// [`compact`], with a model writing level 2's summaries when `helpers`
/// has one (its failure falls back to the one-line summary).
pub fn compact_with(
    entries: &mut Vec<Entry>,
    fixed: u32,
    budget: u32,
    keep_from: usize,
    settings: &CompactSettings,
    helpers: &mut Helpers<'_>,
) -> Result<Compaction> {
    let mut done = Compaction::default();
    let target = (u64::from(budget) * u64::from(settings.target_percent.min(100)) / 100) as u32;
    let total = |entries: &[Entry]| fixed + entries.iter().map(|e| e.tokens).sum::<u32>();
    if total(entries) <= budget {
        return Ok(done);
    }
    let len_before = entries.len();
    type Level = fn(&mut Vec<Entry>, usize, &CompactSettings, &mut Helpers<'_>) -> Result<Changed>;
    let levels: [(CompactionLevel, Level); 3] = [
        (CompactionLevel::TruncateToolResults, truncate_tool_results),
        (CompactionLevel::Summarize, summarize_calls),
        (CompactionLevel::DropMiddle, drop_middle),
    ];
    for (level, run) in levels {
        if total(entries) <= target {
            break;
        }
        let old_end = old_end(entries, keep_from - (len_before - entries.len()), settings);
        let before = total(entries);
        let changed = run(entries, old_end, settings, helpers)?;
        if let Some(first) = changed.first {
            done.first_changed = Some(done.first_changed.map_or(first, |f| f.min(first)));
            done.passes.push(Pass {
                level,
                removed: changed.removed,
                tokens_before: before,
                tokens_after: total(entries),
            });
        }
    }
    let keep_from = keep_from - (len_before - entries.len());
    if total(entries) > target {
        let before = total(entries);
        let removed = drop_oldest_turns(entries, fixed, target, keep_from);
        if !removed.is_empty() {
            done.first_changed = Some(0);
            done.passes.push(Pass {
                level: CompactionLevel::KeepNewest,
                removed,
                tokens_before: before,
                tokens_after: total(entries),
            });
        }
    }
    done.removed_before_turn = len_before - entries.len();
    Ok(done)
}

/// What one level changed.
#[derive(Default)]
struct Changed {
    /// The first entry it touched.
    first: Option<usize>,
    /// The messages it removed or rewrote, as they were.
    removed: Vec<Message>,
}

impl Changed {
    fn touch(&mut self, index: usize, message: Message) {
        self.first.get_or_insert(index);
        self.removed.push(message);
    }
}

/// Where the older messages end: before the newest `keep_recent` and the
/// current turn, moved back to the start of a turn so that a call and its
/// result stay on one side.
fn old_end(entries: &[Entry], keep_from: usize, settings: &CompactSettings) -> usize {
    let recent = entries.len().saturating_sub(settings.keep_recent as usize);
    let mut end = keep_from.min(recent);
    while end > 0
        && entries
            .get(end)
            .is_some_and(|e| e.message.role != Role::User)
    {
        end -= 1;
    }
    end
}

/// Level 1: older tool results over `tool_result_tokens` keep their head
/// and tail.
// Every level has one signature, and the others remove entries.
#[allow(clippy::ptr_arg)]
fn truncate_tool_results(
    entries: &mut Vec<Entry>,
    old_end: usize,
    settings: &CompactSettings,
    helpers: &mut Helpers<'_>,
) -> Result<Changed> {
    let count = &mut helpers.count;
    let mut changed = Changed::default();
    let limit = settings.tool_result_tokens;
    for (index, entry) in entries.iter_mut().enumerate().take(old_end) {
        if entry.message.role != Role::Tool || entry.tokens <= limit {
            continue;
        }
        let original = entry.message.clone();
        let content = cut_middle(&original.content, entry.tokens, limit, &mut |text| {
            count(&Message {
                content: text.to_owned(),
                ..original.clone()
            })
        })?;
        entry.message.content = content;
        entry.tokens = count(&entry.message)?;
        changed.touch(index, original);
    }
    Ok(changed)
}

/// Level 2: each older assistant message with tool calls, and their
/// results, become one line per call, merged into the assistant's reply
/// that follows (so roles still alternate); with a summarizer, the model's
/// summary of them instead.
fn summarize_calls(
    entries: &mut Vec<Entry>,
    old_end: usize,
    _settings: &CompactSettings,
    helpers: &mut Helpers<'_>,
) -> Result<Changed> {
    let mut changed = Changed::default();
    let mut index = 0;
    let mut end = old_end;
    while index < end {
        if entries[index].message.tool_calls.is_empty() {
            index += 1;
            continue;
        }
        let results = entries[index + 1..end]
            .iter()
            .take_while(|e| e.message.role == Role::Tool)
            .count();
        let mut span = 1 + results;
        let merge = index + span < end && {
            let next = &entries[index + span].message;
            next.role == Role::Assistant && next.tool_calls.is_empty()
        };
        span += usize::from(merge);
        let originals: Vec<Message> = entries[index..index + span]
            .iter()
            .map(|e| e.message.clone())
            .collect();
        let summary = Message::assistant(written_summary(helpers, &originals)?);
        let tokens = (helpers.count)(&summary)?;
        for original in &originals {
            changed.touch(index, original.clone());
        }
        entries.splice(
            index..index + span,
            [Entry {
                message: summary,
                tokens,
                position: None,
            }],
        );
        end -= span - 1;
        index += 1;
    }
    Ok(changed)
}

/// The model's summary of a span when there is a summarizer and it
/// answers; the one-line summary otherwise.
fn written_summary(helpers: &mut Helpers<'_>, span: &[Message]) -> Result<String> {
    if helpers.summarize.is_none() {
        return Ok(summary_of(span));
    }
    let shown = readable_span(helpers, span)?;
    let summarize = helpers.summarize.as_mut().expect("checked above");
    Ok(match summarize(&shown) {
        Ok(text) if !text.trim().is_empty() => format!("[summary] {}", text.trim()),
        Ok(_) => summary_of(span),
        Err(e) => {
            tracing::warn!("the summarizer failed ({e}); summarizing in one line instead");
            summary_of(span)
        }
    })
}

/// The span as the summarizer is shown it: its results share
/// `helpers.readable` tokens, a longer one cut to its head and tail.
fn readable_span(helpers: &mut Helpers<'_>, span: &[Message]) -> Result<Vec<Message>> {
    let results = span.iter().filter(|m| m.role == Role::Tool).count().max(1);
    let share = helpers.readable / results as u32;
    let mut shown = span.to_vec();
    for message in shown.iter_mut().filter(|m| m.role == Role::Tool) {
        let tokens = (helpers.count)(message)?;
        if tokens > share {
            let template = message.clone();
            let count = &mut helpers.count;
            message.content = cut_middle(&template.content, tokens, share, &mut |text| {
                count(&Message {
                    content: text.to_owned(),
                    ..template.clone()
                })
            })?;
        }
    }
    Ok(shown)
}

/// How long a result may be in a summary line, in characters.
const RESULT_CHARS: usize = 120;

/// The text of a summarized call: one line per call with its result, then
/// the reply that followed, if it was merged.
fn summary_of(messages: &[Message]) -> String {
    let mut lines: Vec<String> = Vec::new();
    let prose = messages[0].content.trim();
    if !prose.is_empty() {
        lines.push(prose.to_owned());
    }
    for call in &messages[0].tool_calls {
        let result = messages
            .iter()
            .find(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()))
            .map_or("no result".to_owned(), |m| clip(&m.content, RESULT_CHARS));
        lines.push(format!(
            "[called {}({}) -> {result}]",
            call.name, call.arguments
        ));
    }
    if let Some(reply) = messages
        .last()
        .filter(|m| m.role == Role::Assistant && m.tool_calls.is_empty() && messages.len() > 1)
    {
        lines.push(reply.content.clone());
    }
    lines.join("\n")
}

fn clip(text: &str, chars: usize) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= chars {
        return one_line;
    }
    let kept: String = one_line.chars().take(chars).collect();
    format!("{kept}…")
}

/// Level 3: the older messages after the first `keep_first` (rounded up
/// to a whole turn) are dropped; the last kept first message says how
/// many are gone.
fn drop_middle(
    entries: &mut Vec<Entry>,
    old_end: usize,
    settings: &CompactSettings,
    helpers: &mut Helpers<'_>,
) -> Result<Changed> {
    let mut changed = Changed::default();
    let mut first_end = (settings.keep_first as usize).min(old_end);
    while first_end < old_end && entries[first_end].message.role != Role::User {
        first_end += 1;
    }
    if first_end == 0 || first_end >= old_end {
        return Ok(changed);
    }
    let dropped: Vec<Entry> = entries.drain(first_end..old_end).collect();
    let last = &mut entries[first_end - 1];
    changed.touch(first_end - 1, last.message.clone());
    changed
        .removed
        .extend(dropped.into_iter().map(|e| e.message));
    last.message.content.push_str(&format!(
        "\n\n[{} earlier messages were removed to fit the context window]",
        changed.removed.len() - 1
    ));
    last.tokens = (helpers.count)(&last.message)?;
    Ok(changed)
}

/// Removes the oldest turns (a user message and everything up to the next
/// user message, so a call is never split from its result) until the
/// total is at most `budget`; `entries[keep_from..]` stays. Returns the
/// removed messages, oldest first.
pub fn drop_oldest_turns(
    entries: &mut Vec<Entry>,
    fixed: u32,
    budget: u32,
    keep_from: usize,
) -> Vec<Message> {
    let total = |entries: &[Entry]| fixed + entries.iter().map(|e| e.tokens).sum::<u32>();
    let mut removed = Vec::new();
    let mut keep_from = keep_from.min(entries.len());
    while total(entries) > budget && keep_from > 0 {
        // The oldest turn ends where the next user message begins.
        let end = entries[1..keep_from]
            .iter()
            .position(|e| e.message.role == Role::User)
            .map_or(keep_from, |p| p + 1);
        removed.extend(entries.drain(..end).map(|e| e.message));
        keep_from -= end;
    }
    removed
}
