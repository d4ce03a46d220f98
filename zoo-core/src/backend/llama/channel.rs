//! A forced call's tool chosen by how well each tool explains the question.
//!
//! The whole-name score ([`super::LlamaBackend`]'s tool choice) asks the
//! model which name follows the conversation. A small model has standing
//! preferences among names (`search_flights`, `add_to_shopping_list`,
//! `calculate`) that outweigh what was asked: "Put on music by Miles Davis"
//! scores `add_to_shopping_list`. The noisy channel (Min et al. 2022,
//! "Noisy Channel Language Model Prompting for Few-Shot Text
//! Classification") asks the other way round: the log-probability of the
//! question's tokens after a short text that names one tool
//! (`Function: get weather. Get the current weather for a city.` then
//! `A user asks: <question>`), in a context of its own, for each tool.
//! Every word of the question then counts, and a preference among names
//! cannot outweigh them.
//!
//! Like the word prior it abstains once tools have answered in the turn
//! (the next call follows from results, not from the question), and for a
//! question too long to be a request (over [`MAX_QUESTION_TOKENS`]).

use std::num::NonZeroU32;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;

use super::threads::ThreadCounts;
use crate::error::{Error, Result};
use crate::message::{Message, Role};
use crate::tools::ToolDefinition;

/// How much the channel score weighs in a forced call's tool choice: its
/// log-probability of the question (in nats) times `weight` is added to
/// each tool's whole-name score. Measured on the tool evaluation's tune
/// split (`examples/rust/tool_eval.rs`; BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChannelScore {
    /// What one nat of the question's log-probability adds to a tool's
    /// score.
    pub weight: f32,
}

impl ChannelScore {
    /// No channel score: the whole-name score and the word prior alone.
    pub const OFF: ChannelScore = ChannelScore { weight: 0.0 };

    /// Whether the channel score changes nothing.
    pub fn is_off(&self) -> bool {
        self.weight == 0.0
    }
}

/// The scoring context's window: a tool's text and the question.
const WINDOW: usize = 512;

/// The longest question the channel scores; a longer message is no short
/// request, and scoring it for every tool would cost more than the call.
pub const MAX_QUESTION_TOKENS: usize = 256;

/// A context of its own for the channel score, made on first use, so the
/// conversation's cache stays as it is.
pub(super) struct ChannelScorer<'m> {
    ctx: Option<LlamaContext<'m>>,
    batch: LlamaBatch<'static>,
}

impl<'m> ChannelScorer<'m> {
    /// A scorer whose context is not made yet.
    pub(super) fn new() -> Self {
        ChannelScorer {
            ctx: None,
            batch: LlamaBatch::new(WINDOW, 1),
        }
    }

    /// What the channel adds to each of `tools`' scores, in their order:
    /// `weight` times the log-probability of the user's last message after
    /// each tool's text. All zero when the setting is off, when the last
    /// message is not the user's, or when it is too long. `threads` gives
    /// the thread counts before each decode. `None` when `abort`
    /// interrupted the scoring.
    pub(super) fn bonuses(
        &mut self,
        model: &'m LlamaModel,
        setting: ChannelScore,
        messages: &[Message],
        tools: &[ToolDefinition],
        threads: &mut dyn FnMut() -> ThreadCounts,
        abort: &Arc<AtomicBool>,
    ) -> Result<Option<Vec<f32>>> {
        let none = vec![0.0; tools.len()];
        let question = match messages.last() {
            Some(m) if m.role == Role::User && !setting.is_off() => m.content.as_str(),
            _ => return Ok(Some(none)),
        };
        let vocab = model.vocab();
        let asked = vocab.tokenize(format!(" {}", question.trim()).as_bytes(), false, false);
        if asked.is_empty() || asked.len() > MAX_QUESTION_TOKENS {
            return Ok(Some(none));
        }
        // The score is an aid: without room for its context the choice
        // goes on without it rather than failing the chat.
        let ctx = match context(&mut self.ctx, model, threads()) {
            Ok(ctx) => ctx,
            Err(e) => {
                tracing::warn!("tool choice without the channel score: {e}");
                return Ok(Some(none));
            }
        };
        ctx.set_abort_flag(Some(Arc::clone(abort)));
        let mut bonuses = Vec::with_capacity(tools.len());
        let mut scored = Ok(Some(()));
        for tool in tools {
            // A pass over many tools lasts long enough for the load to change.
            let (n_threads, n_threads_batch) = threads();
            ctx.set_n_threads(n_threads, n_threads_batch);
            let mut prompt = vocab.tokenize(tool_text(tool).as_bytes(), true, false);
            prompt.truncate(WINDOW - asked.len());
            match question_logprob(ctx, &mut self.batch, &prompt, &asked) {
                Ok(Some(logprob)) => {
                    tracing::trace!(tool = %tool.name, logprob, "channel score");
                    bonuses.push(setting.weight * logprob);
                }
                other => {
                    scored = other.map(|_| None);
                    break;
                }
            }
        }
        // Whatever ended the pass, the next one sets its own flag.
        ctx.set_abort_flag(None);
        Ok(scored?.map(|()| bonuses))
    }
}

/// The scoring context in `slot`, made the first time with `threads`.
fn context<'s, 'm>(
    slot: &'s mut Option<LlamaContext<'m>>,
    model: &'m LlamaModel,
    threads: ThreadCounts,
) -> Result<&'s mut LlamaContext<'m>> {
    let ctx = match slot.take() {
        Some(ctx) => ctx,
        None => {
            let params = LlamaContextParams::default()
                .with_n_ctx(NonZeroU32::new(WINDOW as u32))
                .with_n_batch(WINDOW as u32)
                .with_n_ubatch(WINDOW as u32)
                .with_n_threads(threads.0)
                .with_n_threads_batch(threads.1);
            model
                .new_context(super::model::runtime(None)?, params)
                .map_err(|e| {
                    Error::InferenceFailed(format!("cannot create the tool-scoring context: {e}"))
                })?
        }
    };
    Ok(slot.insert(ctx))
}

/// The text that names `tool` before the question: its name in words and
/// its description.
fn tool_text(tool: &ToolDefinition) -> String {
    let name = tool.name.replace(['_', '-'], " ");
    let description = tool.description.trim().trim_end_matches('.');
    match description.is_empty() {
        true => format!("Function: {name}.\nA user asks:"),
        false => format!("Function: {name}. {description}.\nA user asks:"),
    }
}

/// The log-probability of `asked` right after `prompt`, decoded from the
/// start of `ctx`'s cache. `None` when the abort flag interrupted it.
fn question_logprob(
    ctx: &mut LlamaContext<'_>,
    batch: &mut LlamaBatch<'static>,
    prompt: &[LlamaToken],
    asked: &[LlamaToken],
) -> Result<Option<f32>> {
    ctx.clear_kv_cache();
    batch.clear();
    let tokens = prompt.iter().chain(&asked[..asked.len() - 1]);
    // Logits where the next token is one of the question's: from the
    // prompt's last token on.
    let first_read = prompt.len().saturating_sub(1);
    for (i, &token) in tokens.enumerate() {
        batch
            .add(token, i as i32, &[0], i >= first_read)
            .map_err(|e| Error::InferenceFailed(format!("batch: {e}")))?;
    }
    match ctx.decode(batch) {
        Ok(()) => {}
        Err(DecodeError::Aborted) => return Ok(None),
        Err(e) => return Err(Error::InferenceFailed(format!("llama_decode failed: {e}"))),
    }
    let total = asked
        .iter()
        .enumerate()
        .map(|(i, &token)| {
            super::log_softmax_at(ctx.get_logits_ith((first_read + i) as i32), token)
        })
        .sum();
    Ok(Some(total))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object", "properties": {}}),
        }
    }

    #[test]
    fn a_tools_text_names_it_in_words_and_ends_its_description_once() {
        assert_eq!(
            tool_text(&tool("get_weather", "Get the current weather for a city.")),
            "Function: get weather. Get the current weather for a city.\nA user asks:"
        );
        assert_eq!(
            tool_text(&tool("lights-on", "")),
            "Function: lights on.\nA user asks:"
        );
    }
}
