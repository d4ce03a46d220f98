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

/// The smallest scoring context, in cells.
const MIN_WINDOW: usize = 512;
/// The largest: a tool set whose texts and questions need more is scored
/// in groups that each fit, which then take turns in the cells.
const MAX_WINDOW: usize = 4096;
/// The most tools scored side by side, one sequence each.
const MAX_SEQUENCES: usize = 64;
/// The longest tool text kept, in tokens.
const MAX_TEXT_TOKENS: usize = 256;

/// The longest question the channel scores; a longer message is no short
/// request, and scoring it for every tool would cost more than the call.
pub const MAX_QUESTION_TOKENS: usize = 256;

/// A context of its own for the channel score, made on first use, so the
/// conversation's cache stays as it is. Each tool's text stays decoded in
/// a sequence of its own: the next question (the same tools, turn after
/// turn) decodes only its own tokens after each text, all tools in one
/// batch.
pub(super) struct ChannelScorer<'m> {
    ctx: Option<LlamaContext<'m>>,
    /// The context's size in cells.
    window: usize,
    /// What each sequence holds: a tool's text but its last token.
    held: Vec<Vec<LlamaToken>>,
}

impl<'m> ChannelScorer<'m> {
    /// A scorer whose context is not made yet.
    pub(super) fn new() -> Self {
        ChannelScorer {
            ctx: None,
            window: 0,
            held: Vec::new(),
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
        let texts: Vec<Vec<LlamaToken>> = tools
            .iter()
            .map(|tool| {
                let mut text = vocab.tokenize(tool_text(tool).as_bytes(), true, false);
                text.truncate(MAX_TEXT_TOKENS);
                text
            })
            .collect();
        let groups = groups(&texts, asked.len());
        let need = groups.iter().map(|g| g.need).max().unwrap_or(0);
        // The score is an aid: without room for its context the choice
        // goes on without it rather than failing the chat.
        if let Err(e) = self.make_room(model, need, threads()) {
            tracing::warn!("tool choice without the channel score: {e}");
            return Ok(Some(none));
        }
        let Some(ctx) = self.ctx.as_mut() else {
            return Ok(Some(none));
        };
        ctx.set_abort_flag(Some(Arc::clone(abort)));
        let (n_threads, n_threads_batch) = threads();
        ctx.set_n_threads(n_threads, n_threads_batch);
        let mut logprobs = Vec::with_capacity(tools.len());
        let mut scored = Ok(Some(()));
        for group in &groups {
            let range = group.start..group.start + group.len;
            match score_group(ctx, &mut self.held, &texts[range], &asked) {
                Ok(Some(group_logprobs)) => logprobs.extend(group_logprobs),
                other => {
                    scored = other.map(|_| None);
                    break;
                }
            }
        }
        // Whatever ended the pass, the next one sets its own flag.
        ctx.set_abort_flag(None);
        if !matches!(scored, Ok(Some(()))) {
            // An interrupted decode leaves the cells unknown.
            ctx.clear_kv_cache();
            self.held.clear();
        }
        Ok(scored?.map(|()| {
            for (tool, logprob) in tools.iter().zip(&logprobs) {
                tracing::trace!(tool = %tool.name, logprob, "channel score");
            }
            logprobs.iter().map(|l| setting.weight * l).collect()
        }))
    }

    /// Makes the scoring context, or a larger one, so that it holds `need`
    /// cells (a larger one starts empty).
    fn make_room(
        &mut self,
        model: &'m LlamaModel,
        need: usize,
        threads: ThreadCounts,
    ) -> Result<()> {
        if self.ctx.is_some() && need <= self.window {
            return Ok(());
        }
        let window = need.next_power_of_two().clamp(MIN_WINDOW, MAX_WINDOW);
        self.ctx = None;
        self.held.clear();
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(window as u32))
            .with_n_batch(window as u32)
            .with_n_ubatch(MIN_WINDOW as u32)
            .with_n_seq_max(MAX_SEQUENCES as u32)
            // One pool of cells for every tool's sequence, not a slice each.
            .with_kv_unified(true)
            // Sliding-window models (Gemma 3) drop a question's cells only
            // when their cache keeps every position.
            .with_swa_full(true)
            .with_n_threads(threads.0)
            .with_n_threads_batch(threads.1);
        let ctx = model
            .new_context(super::model::runtime(None)?, params)
            .map_err(|e| {
                Error::InferenceFailed(format!("cannot create the tool-scoring context: {e}"))
            })?;
        self.ctx = Some(ctx);
        self.window = window;
        Ok(())
    }
}

/// Tools scored side by side: `len` of them from `start`, needing `need`
/// cells for their texts and the question after each.
struct Group {
    start: usize,
    len: usize,
    need: usize,
}

/// `texts` split into groups of at most [`MAX_SEQUENCES`] whose texts and
/// questions (`asked` tokens after each) fit in [`MAX_WINDOW`] cells.
fn groups(texts: &[Vec<LlamaToken>], asked: usize) -> Vec<Group> {
    let mut groups: Vec<Group> = Vec::new();
    for (i, text) in texts.iter().enumerate() {
        let need = text.len() + asked;
        match groups.last_mut() {
            Some(g) if g.len < MAX_SEQUENCES && g.need + need <= MAX_WINDOW => {
                g.len += 1;
                g.need += need;
            }
            _ => groups.push(Group {
                start: i,
                len: 1,
                need,
            }),
        }
    }
    groups
}

/// The log-probability of `asked` after each of `texts`, tool `i` in
/// sequence `i`: the texts (but their last token) unless `held` already,
/// then the question after every text in one batch, whose cells are
/// removed again. `None` when the abort flag interrupted a decode.
fn score_group(
    ctx: &mut LlamaContext<'_>,
    held: &mut Vec<Vec<LlamaToken>>,
    texts: &[Vec<LlamaToken>],
    asked: &[LlamaToken],
) -> Result<Option<Vec<f32>>> {
    let bodies: Vec<&[LlamaToken]> = texts
        .iter()
        .map(|text| &text[..text.len().saturating_sub(1)])
        .collect();
    let mut batch = LlamaBatch::new(ctx.n_batch() as usize, 1);
    // Any other text held: every text is decoded anew, each on its own and
    // in order into an empty cache. Where a text's cells lie changes the
    // attention's sums (by 0.18 and 0.27 nats on two of SmolLM2's home
    // tools in a test), so the cells are laid out the same way for a tool
    // set whatever came before it, and a tool's score depends only on the
    // tools and the question.
    if held.len() != bodies.len() || held.iter().zip(&bodies).any(|(h, b)| h != b) {
        ctx.clear_kv_cache();
        held.clear();
        for (seq, body) in bodies.iter().enumerate() {
            batch.clear();
            for (pos, &token) in body.iter().enumerate() {
                add(&mut batch, token, pos, seq, false)?;
            }
            if batch.n_tokens() > 0 && !decode(ctx, &mut batch)? {
                return Ok(None);
            }
            held.push(body.to_vec());
        }
    }
    // The question after each text: the text's last token, then the
    // question's but its last, each with the logits of the next token.
    batch.clear();
    let mut firsts = Vec::with_capacity(texts.len());
    for (seq, text) in texts.iter().enumerate() {
        firsts.push(batch.n_tokens() as usize);
        let start = text.len().saturating_sub(1);
        let tokens = text.last().into_iter().chain(&asked[..asked.len() - 1]);
        for (i, &token) in tokens.enumerate() {
            add(&mut batch, token, start + i, seq, true)?;
        }
    }
    if !decode(ctx, &mut batch)? {
        return Ok(None);
    }
    let logprobs = firsts
        .iter()
        .map(|&first| {
            asked
                .iter()
                .enumerate()
                .map(|(i, &token)| {
                    super::log_softmax_at(ctx.get_logits_ith((first + i) as i32), token)
                })
                .sum()
        })
        .collect();
    for (seq, text) in texts.iter().enumerate() {
        let start = text.len().saturating_sub(1) as u32;
        if !ctx
            .clear_kv_cache_seq(Some(seq as u32), Some(start), None)
            .unwrap_or(false)
        {
            // Not removable on their own: the next pass starts anew.
            ctx.clear_kv_cache();
            held.clear();
            break;
        }
    }
    Ok(Some(logprobs))
}

/// Adds `token` at `pos` of sequence `seq` to `batch`.
fn add(
    batch: &mut LlamaBatch<'_>,
    token: LlamaToken,
    pos: usize,
    seq: usize,
    logits: bool,
) -> Result<()> {
    batch
        .add(token, pos as i32, &[seq as i32], logits)
        .map_err(|e| Error::InferenceFailed(format!("batch: {e}")))
}

/// Decodes `batch`; false when the abort flag interrupted it.
fn decode(ctx: &mut LlamaContext<'_>, batch: &mut LlamaBatch<'_>) -> Result<bool> {
    match ctx.decode(batch) {
        Ok(()) => Ok(true),
        Err(DecodeError::Aborted) => Ok(false),
        Err(e) => Err(Error::InferenceFailed(format!("llama_decode failed: {e}"))),
    }
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
