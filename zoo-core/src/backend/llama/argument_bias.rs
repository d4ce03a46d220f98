//! Pulling a call's argument values toward what the user wrote.
//!
//! Small models fill arguments with plausible values that are not the
//! question's (`convert_currency(amount=100, from="USD")` for "40 EUR"),
//! or with the tool's own name. While a call is written, the grammar fixes
//! its structure; inside the values the model chooses freely. This raises
//! the logits of the tokens of the user's last message (its words and
//! numbers, with and without a leading space) and lowers those of the
//! tools' names that the message does not use. Only tokens holding a
//! letter or a digit are touched, so quotes, commas and brackets keep the
//! model's own weights.
//!
//! Only the first call of a turn is pulled: after a tool result, values
//! come from the results. A question's token is pulled toward until the
//! call has used it once (the backend drops its pull then): a pull that
//! stays makes values loop on it (`door_lock_door_door_...`) until the
//! grammar's bound.

use std::collections::HashSet;

use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;

use super::word_match::is_stop_word;
use crate::message::{Message, Role};
use crate::tools::ToolDefinition;

/// How strongly argument values are pulled toward the question and pushed
/// away from tool names, in logits. Measured on the tool evaluation's tune
/// split (`examples/rust/tool_eval.rs`; BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ArgumentBias {
    /// Added to the logit of each token of the content words (not `the`,
    /// `with`) of the user's message, when it is the last one.
    pub toward_question: f32,
    /// Subtracted from the logit of each token of a tool's name that the
    /// message does not contain.
    pub against_tool_names: f32,
}

impl ArgumentBias {
    /// No bias: the model's own weights.
    pub const OFF: ArgumentBias = ArgumentBias {
        toward_question: 0.0,
        against_tool_names: 0.0,
    };

    /// Whether the bias changes nothing.
    pub fn is_off(&self) -> bool {
        self.toward_question == 0.0 && self.against_tool_names == 0.0
    }

    /// The logit changes for a call to one of `tools` answering `messages`:
    /// none unless the user's message is the last one. Once tools have
    /// answered in this turn, the next call's values come from what they
    /// returned (the coding agent's `edit_file` needs an `old_text` it read
    /// in a file, not the task's words).
    pub(super) fn logits(
        &self,
        model: &LlamaModel,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> Vec<(LlamaToken, f32)> {
        let question = match messages.last() {
            Some(m) if m.role == Role::User && !self.is_off() => m.content.as_str(),
            _ => return Vec::new(),
        };
        // Only content words: `the` and `with` pulled into a value start
        // prose there, which a small model then loops on.
        let content = question
            .split_whitespace()
            .filter(|w| !is_stop_word(w.trim_matches(|c: char| !c.is_alphanumeric())));
        let asked = word_tokens(model, content);
        let names = word_tokens(
            model,
            tools
                .iter()
                .flat_map(|t| std::iter::once(t.name.as_str()).chain(t.name.split(['_', '-']))),
        );
        let mut out: Vec<(LlamaToken, f32)> = asked
            .iter()
            .map(|&token| (token, self.toward_question))
            .collect();
        out.extend(
            names
                .difference(&asked)
                .map(|&token| (token, -self.against_tool_names)),
        );
        out.retain(|(_, bias)| *bias != 0.0);
        out
    }
}

/// The tokens of `words` as a value could begin or continue them: each
/// word alone and after a space, trimmed of the punctuation around it,
/// keeping only tokens that hold a letter or a digit.
fn word_tokens<'w>(
    model: &LlamaModel,
    words: impl Iterator<Item = &'w str>,
) -> HashSet<LlamaToken> {
    let vocab = model.vocab();
    let mut tokens = HashSet::new();
    let mut piece = Vec::new();
    for word in words {
        let word = word.trim_matches(|c: char| !c.is_alphanumeric());
        if word.is_empty() {
            continue;
        }
        for variant in [word.to_string(), format!(" {word}")] {
            for token in vocab.tokenize(variant.as_bytes(), false, false) {
                piece.clear();
                vocab.token_to_piece_into(token, &mut piece, false, None);
                if piece.iter().any(u8::is_ascii_alphanumeric) {
                    tokens.insert(token);
                }
            }
        }
    }
    tokens
}
