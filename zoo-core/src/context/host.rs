//! A host's own strategy (the `context_strategy` hook): the host gets the
//! conversation that does not fit and returns the messages to keep; this
//! module checks what it returned against the rules every strategy keeps
//! and, when they hold, puts it in place of the entries.

use super::{CompactionLevel, Entry, Pass};
use crate::error::Result;
use crate::message::Message;

/// Why a host's result was refused, in words for its author.
pub type Refusal = String;

/// Replaces `entries` with `kept` when it keeps the rules: it ends with
/// `entries[keep_from..]` (the current turn) unchanged, and it fits
/// `budget` beside the system prompt's `fixed` tokens. Role order (every
/// call with its result) is the history's to check, before this. A kept
/// message equal to one of the entries, in order, keeps that entry's
/// place in the conversation (so a session store still numbers it) and
/// its count; any other is counted with `count` and, like a summary of the
/// cascade, has no place. Returns the pass for `history_compacted` and the
/// first entry that changed; the entries are untouched on a refusal.
pub fn adopt(
    entries: &mut Vec<Entry>,
    fixed: u32,
    budget: u32,
    keep_from: usize,
    kept: Vec<Message>,
    count: &mut dyn FnMut(&Message) -> Result<u32>,
) -> Result<std::result::Result<(Pass, usize), Refusal>> {
    let turn = &entries[keep_from..];
    let ends_with_turn = kept.len() >= turn.len()
        && kept[kept.len() - turn.len()..]
            .iter()
            .zip(turn)
            .all(|(k, e)| *k == e.message);
    if !ends_with_turn {
        return Ok(Err(format!(
            "the messages it returned must end with the current turn, unchanged (the last {} \
             of the history)",
            turn.len()
        )));
    }
    let mut next = 0;
    let mut matched = vec![false; entries.len()];
    let mut adopted = Vec::with_capacity(kept.len());
    for message in kept {
        let found = entries[next..]
            .iter()
            .position(|e| e.message == message)
            .map(|offset| next + offset);
        adopted.push(match found {
            Some(index) => {
                next = index + 1;
                matched[index] = true;
                entries[index].clone()
            }
            None => Entry {
                tokens: count(&message)?,
                message,
                position: None,
            },
        });
    }
    let total = |entries: &[Entry]| fixed + entries.iter().map(|e| e.tokens).sum::<u32>();
    let tokens_after = total(&adopted);
    if tokens_after > budget {
        return Ok(Err(format!(
            "the messages it returned take {tokens_after} tokens with the system prompt, over \
             the budget of {budget}"
        )));
    }
    let first_changed = entries
        .iter()
        .zip(&adopted)
        .position(|(old, new)| old != new)
        .unwrap_or(entries.len().min(adopted.len()));
    let removed = entries
        .iter()
        .zip(&matched)
        .filter(|(_, &kept)| !kept)
        .map(|(old, _)| old.message.clone())
        .collect();
    let tokens_before = total(entries);
    *entries = adopted;
    let pass = Pass {
        level: CompactionLevel::Custom,
        removed,
        tokens_before,
        tokens_after,
    };
    Ok(Ok((pass, first_changed)))
}
