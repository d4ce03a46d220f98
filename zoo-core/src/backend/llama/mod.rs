//! `LlamaBackend`: real inference on llama.cpp through `llama-cpp-2`.
//!
//! Each reply: render the conversation with the chat template, tokenize it,
//! keep the longest prefix already in the KV cache and decode only the rest
//! in full batches, then sample token by token, constrained by a tool-call
//! grammar when tools are in play. The chat's cancel flag is also llama.cpp's
//! abort flag, so a stop interrupts even a long batch within milliseconds.

mod argument_bias;
mod calibration;
mod channel;
mod cpu_backend;
mod grammar;
mod logs;
mod model;
mod repetition;
mod reply_sampler;
mod snapshot;
mod text;
mod threads;
mod value_copy;
mod word_match;

use std::collections::VecDeque;
use std::num::NonZeroU32;
use std::time::{Duration, Instant};

use llama_cpp_2::context::params::LlamaContextParams;
use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::llama_batch::LlamaBatch;
use llama_cpp_2::model::LlamaModel;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::LlamaToken;
use llama_cpp_2::DecodeError;

pub use argument_bias::ArgumentBias;
pub use channel::{ChannelScore, MAX_QUESTION_TOKENS};
pub use cpu_backend::{backend_info, BACKENDS_FOLDER};
pub use model::{Model, ModelParams, ModelSummary};
pub use value_copy::ValueCopy;
pub use word_match::WordMatch;

use self::channel::ChannelScorer;
use self::model::ModelInner;
use self::repetition::RepetitionGuard;
use self::reply_sampler::ReplySampler;
use self::text::{StopMatcher, StopScan, Utf8Decoder};
use self::threads::{Generating, ThreadPlanner, ThreadSetting};
use super::{Backend, FinishReason, GenerateRequest, Generation};
use crate::cancel::CancelToken;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::logs::targets;
use crate::message::Message;
use crate::template::ChatTemplate;
use crate::thinking::ThinkingFormat;
use crate::tools::ToolChoice;
use crate::tools::{ToolCallFormat, ToolDefinition};

/// The `auto` call-or-prose threshold SmolLM2-135M was tuned with before it
/// was measured per model (`calibration`): prompts that need a tool score
/// -9.0 to -2.9 (median -5.2), prompts that need none -16.7 to -4.4 (median
/// -10.3) (`examples/rust/tool_eval.rs`). Kept to compare against.
pub const CALL_OPENING_THRESHOLD: f32 = -6.5;
/// Tokens each tool call may take once it has begun, whatever the request's
/// `max_tokens`: a call cut off by the reply limit is no call at all, so a
/// forced call (and an `auto` call once its trigger is written) runs past
/// `max_tokens` up to this hard cap. The call grammar bounds every string
/// and array (`bound_for_grammar`), so real calls end far below it.
pub const MAX_CALL_TOKENS: u32 = 1024;
/// How a call's argument values are pulled toward the user's words by
/// default (see [`ArgumentBias`]): off. On the tool evaluation's tune split
/// with SmolLM2 (BENCHMARKS.md), 2 toward the question and 5 away from
/// tool names took the right arguments from 16 to 23 of 39 forced calls
/// (and from 42 to 46 of 81 on the report split beside the channel score),
/// but a free-text value that should not come from the question suffers:
/// the coding agent example's first call wrote the task's words over the
/// user's `calc.py`.
pub const DEFAULT_ARGUMENT_BIAS: ArgumentBias = ArgumentBias::OFF;
/// How the question's words weigh in a forced call's tool choice by
/// default (see [`WordMatch`]): 5 for a word of the tool's name, 1 for one
/// only its description holds. On the tool evaluation with SmolLM2
/// (BENCHMARKS.md) it took the right tool from 28 to 32 of 39 forced calls
/// on the tune split and from 54 to 62 of 81 on the report split. It
/// abstains when the words do not single out one tool (the coding agent's
/// task names `read_file` and `edit_file` alike) and once tools have
/// answered in the turn.
pub const DEFAULT_WORD_MATCH: WordMatch = WordMatch {
    name: 5.0,
    description: 1.0,
};
/// How the channel score (see [`ChannelScore`]) weighs in a forced call's
/// tool choice by default: one nat of the question's log-probability
/// counts as one of the name's. On the tool evaluation with SmolLM2
/// (BENCHMARKS.md), added to the whole-name score and the word prior, it
/// took the right tool from 32 to 37 of 39 forced calls on the tune split
/// (where the weight was chosen) and from 61 to 71 of 80 scored on the
/// report split, and turned no right choice wrong on either.
pub const DEFAULT_CHANNEL_SCORE: ChannelScore = ChannelScore { weight: 1.0 };
/// How a call's values are copied whole from the question by default (see
/// [`ValueCopy`]): a span within 4 nats of the model's own value. On the
/// tool evaluation with SmolLM2 (BENCHMARKS.md) margins 0, 2, 4 and 8 took
/// the tune split's right arguments from 20 to 24, 28, 29 and 29 of 39
/// (8 changed only prompts that need no tool), and with it the report
/// split's `required` calls from 42 to 53 of 81, turning no right call
/// wrong. The order bonus ([`ValueCopy::in_order`]), which acts only on
/// codes of one form (currencies), is 10 nats: SmolLM2 scored a skipped
/// currency 4 to 10 nats below the one it wrote (4 did not put `from: USD`
/// for "75.5 CAD in USD" right, 10 did); it put the tune split's swapped pair right and the report
/// split's four, and turned no right call wrong.
pub const DEFAULT_VALUE_COPY: ValueCopy = ValueCopy {
    margin: 4.0,
    in_order: 10.0,
};

/// What opens a reasoning block in the `<think>` format.
const THINK_OPEN: &str = "<think>";

/// Fewest cached tokens worth a shift: below this, decoding them again
/// costs about what the shift does.
const MIN_SHIFTED_TOKENS: usize = 32;

/// Where in `cached` (after `common`) the longest run that `rest` begins
/// with starts, and its length: the part of the old prompt that survived
/// the cut. Candidates are the positions holding `rest`'s first token.
fn kept_span(cached: &[LlamaToken], common: usize, rest: &[LlamaToken]) -> Option<(usize, usize)> {
    let first = *rest.first()?;
    let mut best: Option<(usize, usize)> = None;
    for start in (common + 1..cached.len()).filter(|&i| cached[i] == first) {
        let len = cached[start..]
            .iter()
            .zip(rest)
            .take_while(|(a, b)| a == b)
            .count();
        if !matches!(best, Some((_, longest)) if longest >= len) {
            best = Some((start, len));
        }
    }
    best
}

/// What a reply may call, decided before its first token.
enum CallTools {
    /// Prose, or a call to any tool the request shows (`auto`).
    Any,
    /// A call, to one of these tools.
    Only(Vec<ToolDefinition>),
    /// The abort flag interrupted the decision.
    Cancelled,
}

/// Sampling settings, from the agent's config.
#[derive(Debug, Clone, Copy)]
struct Sampling {
    temperature: f32,
    top_k: u32,
    top_p: f32,
    min_p: f32,
    repeat_penalty: f32,
    seed: u32,
}

/// A llama.cpp context on a shared [`Model`], with its KV cache.
pub struct LlamaBackend<'m> {
    model: &'m ModelInner,
    ctx: LlamaContext<'m>,
    template: ChatTemplate,
    /// The tokens whose keys and values are in the cache, positions 0…n.
    cached: Vec<LlamaToken>,
    batch: LlamaBatch<'static>,
    batch_size: usize,
    sampling: Sampling,
    /// The grammar of the last tool set, which rarely changes between replies.
    grammar_cache: Option<(String, String)>,
    /// The tokens that can begin the result marker (see [`Self::echo_openings`]),
    /// worked out once per marker.
    echo_cache: Option<(&'static str, Vec<LlamaToken>)>,
    /// The tokens that begin with the format's string delimiter (see
    /// [`Self::string_closers`]), worked out once per delimiter.
    closer_cache: Option<(&'static str, Vec<LlamaToken>)>,
    /// The tokens that can end a number inside a call, worked out once.
    number_closer_cache: Vec<LlamaToken>,
    /// Whether a forced call's tool is chosen by the score of its whole name.
    score_tool_names: bool,
    /// Whether the tool-call grammar is applied to every token before the
    /// pick (see [`ReplySampler`]).
    grammar_first: bool,
    /// How a call's argument values are pulled toward the question.
    argument_bias: ArgumentBias,
    /// How the question's words weigh in the choice of a forced call's tool.
    word_match: WordMatch,
    /// When a value is copied whole from the question.
    value_copy: ValueCopy,
    /// How the question's probability after each tool's text weighs in it.
    channel: ChannelScore,
    /// The context that scores it, apart from the conversation's.
    channel_scorer: ChannelScorer<'m>,
    /// A fixed call-or-prose threshold instead of the calibrated one.
    fixed_threshold: Option<f32>,
    /// Whether the last prompt ends inside an opened `<think>` (the
    /// DeepSeek-R1 distills' templates open it): the reply then starts in
    /// the model's reasoning.
    opens_thinking: bool,
    /// Whether cached cells may be shifted into place (`Config::context_shift`).
    context_shift: bool,
    /// Thread counts, following the free cores unless the config fixes them.
    threads: ThreadPlanner,
}

impl<'m> LlamaBackend<'m> {
    /// A context for `model` with the agent's settings.
    pub fn new(model: &'m Model, config: &Config) -> Result<Self> {
        let runtime = model::runtime(None)?;
        let inner: &'m ModelInner = &model.inner;
        let template = ChatTemplate::resolve(&config.template, &inner.metadata)?;
        let n_ctx = match config.context_size {
            0 => inner.llama.n_ctx_train(),
            n => n,
        };
        let threads = ThreadSetting::from_config(config.threads, config.threads_batch);
        let (n_threads, n_threads_batch) = threads.initial();
        let batch_size = config.batch_size.min(n_ctx) as usize;
        let params = LlamaContextParams::default()
            .with_n_ctx(NonZeroU32::new(n_ctx))
            .with_n_batch(batch_size as u32)
            .with_n_ubatch(batch_size as u32)
            .with_n_threads(n_threads)
            .with_n_threads_batch(n_threads_batch)
            // Sliding-window models (Gemma 3) can only drop part of their
            // cache when it keeps every position, which prefix reuse needs.
            .with_swa_full(true);
        let ctx = inner
            .llama
            .new_context(runtime, params)
            .map_err(|e| Error::ModelLoadFailed {
                path: inner.path.clone(),
                reason: format!("cannot create a {n_ctx}-token context: {e}"),
            })?;
        tracing::debug!(
            n_ctx,
            ?threads,
            batch_size,
            template = template.origin(),
            "llama context ready"
        );
        Ok(LlamaBackend {
            model: inner,
            ctx,
            template,
            cached: Vec::new(),
            batch: LlamaBatch::new(batch_size, 1),
            batch_size,
            sampling: Sampling {
                temperature: config.temperature,
                top_k: config.top_k,
                top_p: config.top_p,
                min_p: config.min_p,
                repeat_penalty: config.repeat_penalty,
                seed: config.seed.unwrap_or_else(random_seed),
            },
            grammar_cache: None,
            echo_cache: None,
            closer_cache: None,
            number_closer_cache: Vec::new(),
            score_tool_names: true,
            grammar_first: false,
            argument_bias: DEFAULT_ARGUMENT_BIAS,
            word_match: DEFAULT_WORD_MATCH,
            value_copy: DEFAULT_VALUE_COPY,
            channel: DEFAULT_CHANNEL_SCORE,
            channel_scorer: ChannelScorer::new(),
            fixed_threshold: None,
            opens_thinking: false,
            context_shift: config.context_shift,
            threads: ThreadPlanner::new(threads),
        })
    }

    /// The chat template in use.
    pub fn template(&self) -> &ChatTemplate {
        &self.template
    }

    /// Tokens currently held in the KV cache.
    pub fn cached_tokens(&self) -> usize {
        self.cached.len()
    }

    /// Turns the choice of a forced call's tool by name score on or off (on
    /// by default); off, greedy decoding under the grammar picks the name.
    /// For measuring what the scoring brings (`examples/rust/tool_eval.rs`).
    pub fn set_tool_name_scoring(&mut self, on: bool) {
        self.score_tool_names = on;
    }

    /// Applies the tool-call grammar to every token of the vocabulary
    /// before each pick (llama.cpp's `grammar_first`) instead of checking
    /// the token picked first; the picks are the same, only slower. Off by
    /// default; on, it is the baseline that `tool_eval --grammar-ratio`
    /// measures the check against.
    pub fn set_grammar_first(&mut self, on: bool) {
        self.grammar_first = on;
    }

    /// Sets how a call's argument values are pulled toward the user's
    /// words (default [`DEFAULT_ARGUMENT_BIAS`]); for measuring what the
    /// bias brings (`examples/rust/tool_eval.rs`).
    pub fn set_argument_bias(&mut self, bias: ArgumentBias) {
        self.argument_bias = bias;
    }

    /// Sets when a call's values are copied whole from the question
    /// (default [`DEFAULT_VALUE_COPY`]); for measuring what copying brings
    /// (`examples/rust/tool_eval.rs`).
    pub fn set_value_copy(&mut self, copy: ValueCopy) {
        self.value_copy = copy;
    }

    /// Sets how the question's words weigh in a forced call's tool choice
    /// (default [`DEFAULT_WORD_MATCH`]); for measuring what the prior brings
    /// (`examples/rust/tool_eval.rs`).
    pub fn set_word_match(&mut self, prior: WordMatch) {
        self.word_match = prior;
    }

    /// Sets how the question's probability after each tool's text weighs
    /// in a forced call's tool choice (default [`DEFAULT_CHANNEL_SCORE`]);
    /// for measuring what it brings (`examples/rust/tool_eval.rs`).
    pub fn set_channel_score(&mut self, channel: ChannelScore) {
        self.channel = channel;
    }

    /// Uses `threshold` for `auto`'s call-or-prose decision instead of the
    /// one calibrated on the model (`None`, the default); for measuring what
    /// the calibration brings (`examples/rust/tool_eval.rs`).
    pub fn set_call_threshold(&mut self, threshold: Option<f32>) {
        self.fixed_threshold = threshold;
    }

    /// The call-or-prose threshold of `auto` for this model and call
    /// format: measured once on the probe prompts of `calibration` (their
    /// trigger scores, each after its own prompt), then shared by every
    /// agent on the model. `None` when the abort flag interrupted it.
    fn call_threshold(&mut self, cancel: &CancelToken) -> Result<Option<f32>> {
        if let Some(fixed) = self.fixed_threshold {
            return Ok(Some(fixed));
        }
        let format = self.tool_call_format();
        if let Some(&known) = self.model.call_thresholds.lock().get(&format) {
            return Ok(Some(known));
        }
        let started = Instant::now();
        let tools = calibration::probe_tools();
        let mut scores = [Vec::new(), Vec::new()];
        let probes = [&calibration::NEEDS_TOOL[..], &calibration::NEEDS_NONE[..]];
        for (kind, prompts) in probes.into_iter().enumerate() {
            for prompt in prompts {
                let messages = calibration::probe_messages(prompt);
                let request = GenerateRequest {
                    messages: &messages,
                    tools: &tools,
                    tool_choice: &ToolChoice::Auto,
                    max_tokens: None,
                    max_calls: 1,
                    stop: &[],
                    cache_hint: super::CacheHint::default(),
                    deadline: None,
                };
                if self.prepare_prompt(&request, cancel)?.is_none() {
                    return Ok(None);
                }
                match self.trigger_logprob()? {
                    Some(score) => scores[kind].push(score),
                    None => return Ok(None),
                }
            }
        }
        let threshold = calibration::threshold(&scores[0], &scores[1]);
        tracing::debug!(
            ?format,
            threshold,
            calls = ?scores[0],
            prose = ?scores[1],
            ms = started.elapsed().as_millis() as u64,
            "calibrated the call-or-prose threshold"
        );
        self.model.call_thresholds.lock().insert(format, threshold);
        Ok(Some(threshold))
    }

    /// Teaches and parses `format` instead of the one detected from the
    /// model (for comparing formats on one model, `examples/rust/tool_eval.rs`).
    pub fn set_tool_call_format(&mut self, format: ToolCallFormat) {
        self.template = self.template.clone().with_tool_format(format);
        self.grammar_cache = None;
        self.echo_cache = None;
    }

    /// Forgets the KV cache, so the next reply decodes its whole prompt.
    pub fn clear_cache(&mut self) {
        self.ctx.clear_kv_cache();
        self.cached.clear();
    }

    fn tokenize(&self, text: &str, special: bool) -> Vec<LlamaToken> {
        let vocab = self.model.llama.vocab();
        // Templates usually write the BOS token themselves; add it only when
        // the model wants one and the text does not begin with it.
        let bos = &self.model.metadata.special.bos;
        let starts_with_bos = !bos.is_empty() && text.starts_with(bos.as_str());
        let add_bos = special && vocab.should_add_bos() && !starts_with_bos;
        vocab.tokenize(text.as_bytes(), add_bos, special)
    }

    /// Keeps the longest cached prefix of `tokens` and drops the rest of the
    /// cache. Returns how many tokens are reused. At least the last prompt
    /// token is always decoded again, because sampling needs its logits.
    fn reuse_prefix(&mut self, tokens: &[LlamaToken]) -> usize {
        let common = self
            .cached
            .iter()
            .zip(tokens)
            .take_while(|(a, b)| a == b)
            .count()
            .min(tokens.len().saturating_sub(1));
        if common < self.cached.len() {
            if let Some(reused) = self.shift_into_place(tokens, common) {
                return reused;
            }
            let removed = self
                .ctx
                .clear_kv_cache_seq(Some(0), Some(common as u32), None)
                .unwrap_or(false);
            if !removed {
                // Some caches (sliding-window attention) refuse a partial
                // removal: start again from an empty cache.
                tracing::debug!(common, "partial KV removal refused; re-decoding the prompt");
                self.clear_cache();
                return 0;
            }
            self.cached.truncate(common);
        }
        common
    }

    /// When the engine dropped old turns from a full window, the new prompt
    /// is the cached one with a span cut out after `common`: the cells of
    /// what follows the cut are moved down over it (llama.cpp's sequence
    /// remove and position shift) instead of being decoded again. Returns
    /// how many prompt tokens the cache now holds, or `None` to reuse only
    /// the prefix (shifting is off, the cache cannot shift, or too little
    /// would be kept to be worth it).
    fn shift_into_place(&mut self, tokens: &[LlamaToken], common: usize) -> Option<usize> {
        if !self.context_shift || !self.ctx.kv_cache_can_shift() {
            return None;
        }
        // The last prompt token is always decoded again, for its logits.
        let room = tokens.len().saturating_sub(1).saturating_sub(common);
        let (start, found) = kept_span(&self.cached, common, &tokens[common..])?;
        let kept = found.min(room);
        if kept < MIN_SHIFTED_TOKENS {
            return None;
        }
        let end = start + kept;
        let moved = self.ctx.clear_kv_cache_seq(Some(0), Some(end as u32), None) == Ok(true)
            && self
                .ctx
                .clear_kv_cache_seq(Some(0), Some(common as u32), Some(start as u32))
                == Ok(true)
            && self
                .ctx
                .kv_cache_seq_add(
                    0,
                    Some(start as u32),
                    Some(end as u32),
                    common as i32 - start as i32,
                )
                .is_ok();
        if !moved {
            tracing::debug!(
                common,
                start,
                kept,
                "KV shift refused; re-decoding the prompt"
            );
            self.clear_cache();
            return Some(0);
        }
        tracing::debug!(
            common,
            removed = start - common,
            kept,
            "shifted the cache into place"
        );
        self.cached.truncate(end);
        self.cached.drain(common..start);
        Some(common + kept)
    }

    /// Decodes prompt tokens after the reused prefix, a full batch per
    /// `llama_decode` call: as fast as llama.cpp gets, and a stop still
    /// lands within milliseconds through the abort flag. Returns false when
    /// cancelled.
    fn decode_prompt(&mut self, tokens: &[LlamaToken], cancel: &CancelToken) -> Result<bool> {
        for (i, chunk) in tokens.chunks(self.batch_size).enumerate() {
            let last = (i + 1) * self.batch_size >= tokens.len();
            if cancel.is_cancelled() || !self.decode(chunk, last)? {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Decodes tokens at the end of the cache; logits for the last one only
    /// if `want_logits`. Returns false when the abort flag interrupted it,
    /// with the cache as it was before the call.
    fn decode(&mut self, tokens: &[LlamaToken], want_logits: bool) -> Result<bool> {
        follow_load(&mut self.threads, &mut self.ctx);
        self.batch.clear();
        let start = self.cached.len();
        for (i, token) in tokens.iter().enumerate() {
            let last = i + 1 == tokens.len();
            self.batch
                .add(*token, (start + i) as i32, &[0], last && want_logits)
                .map_err(|e| Error::InferenceFailed(format!("batch: {e}")))?;
        }
        match self.ctx.decode(&mut self.batch) {
            Ok(()) => {
                self.cached.extend_from_slice(tokens);
                Ok(true)
            }
            Err(DecodeError::Aborted) => {
                // llama.cpp already dropped the interrupted batch's cells;
                // removing them again keeps the cache and `cached` in step
                // even if a future llama.cpp stops doing so.
                let _ = self
                    .ctx
                    .clear_kv_cache_seq(Some(0), Some(self.cached.len() as u32), None);
                Ok(false)
            }
            Err(e) => Err(Error::InferenceFailed(format!("llama_decode failed: {e}"))),
        }
    }

    /// Renders, tokenizes and decodes the prompt of `request` (reusing the
    /// cache). Returns the prompt's token count and how many were reused, or
    /// `None` when cancelled during the decode.
    fn prepare_prompt(
        &mut self,
        request: &GenerateRequest<'_>,
        cancel: &CancelToken,
    ) -> Result<Option<(usize, usize)>> {
        let prompt = self
            .template
            .render(request.messages, request.tools, true)?;
        self.opens_thinking = prompt.trim_end().ends_with(THINK_OPEN);
        let tokens = self.tokenize(&prompt, true);
        tracing::debug!(target: targets::PROMPT, form = "text", tokens = tokens.len(), "{prompt}");
        let n_ctx = self.ctx.n_ctx() as usize;
        if tokens.len() >= n_ctx {
            return Err(Error::ContextOverflow(format!(
                "the prompt has {} tokens but the context holds {n_ctx}",
                tokens.len()
            )));
        }
        let reused = self.reuse_prefix(&tokens);
        if !self.decode_prompt(&tokens[reused..], cancel)? {
            return Ok(None);
        }
        Ok(Some((tokens.len(), reused)))
    }

    /// How likely the model is to open a tool call as the first thing in its
    /// reply: the log-probability of the call format's trigger tokens right
    /// after the prompt. Small models almost never make the trigger their
    /// first choice, yet give it far more weight when a tool fits the
    /// question than when none does; this measures that weight. The KV cache
    /// and the logits are left as they were after the prompt.
    pub fn call_opening_logprob(&mut self, request: &GenerateRequest<'_>) -> Result<f32> {
        let cancelled = || Error::Cancelled("prompt decode".into());
        self.ctx.set_abort_flag(None);
        self.prepare_prompt(request, &CancelToken::new())?
            .ok_or_else(cancelled)?;
        self.trigger_logprob()?.ok_or_else(cancelled)
    }

    /// The log-probability of each of `texts` as the beginning of the reply
    /// to `request`'s conversation (its prompt is decoded first, reusing the
    /// cache). What the call-or-prose decision and the tool choice compare;
    /// public for evaluating and calibrating them.
    pub fn reply_logprobs(
        &mut self,
        request: &GenerateRequest<'_>,
        texts: &[&str],
    ) -> Result<Vec<f32>> {
        let cancelled = || Error::Cancelled("prompt decode".into());
        self.ctx.set_abort_flag(None);
        self.prepare_prompt(request, &CancelToken::new())?
            .ok_or_else(cancelled)?;
        texts
            .iter()
            .map(|text| self.continuation_logprob(text)?.ok_or_else(cancelled))
            .collect()
    }

    /// The question's log-probability after each of `tools`' texts: the
    /// channel score at weight 1 (see [`ChannelScore`]), zero for each
    /// where it abstains. Public for evaluating and tuning it.
    pub fn channel_logprobs(
        &mut self,
        messages: &[Message],
        tools: &[ToolDefinition],
    ) -> Result<Vec<f32>> {
        self.channel_scorer
            .bonuses(
                &self.model.llama,
                ChannelScore { weight: 1.0 },
                messages,
                tools,
                &mut || follow_load(&mut self.threads, &mut self.ctx),
                &CancelToken::new().shared_flag(),
            )?
            .ok_or_else(|| Error::Cancelled("tool scoring".into()))
    }

    /// `None` when the abort flag interrupted the scoring.
    fn trigger_logprob(&mut self) -> Result<Option<f32>> {
        let trigger = self.tool_call_format().trigger();
        self.continuation_logprob(trigger)
    }

    /// Which of `tools` the model would most likely call: the one whose
    /// call opening (the format's prefix and `{"name": "<tool>"`) has the
    /// highest log-probability after the prompt. Greedy decoding under a
    /// grammar commits to a name on its first token, often a generic one
    /// (`"get`, `"set`) that ends in the wrong tool; the whole name's
    /// probability compares the tools on what the model means, and the
    /// question's words found in each tool's name and description add
    /// their prior ([`WordMatch`]), and the question's probability after
    /// each tool's text its ([`ChannelScore`]). `None` when a cancel
    /// interrupted the scoring.
    fn best_scored_tool<'t>(
        &mut self,
        messages: &[Message],
        tools: &'t [ToolDefinition],
        cancel: &CancelToken,
    ) -> Result<Option<&'t ToolDefinition>> {
        let format = self.tool_call_format();
        let words = self.word_match.bonuses(messages, tools);
        let Some(channel) = self.channel_scorer.bonuses(
            &self.model.llama,
            self.channel,
            messages,
            tools,
            &mut || follow_load(&mut self.threads, &mut self.ctx),
            &cancel.shared_flag(),
        )?
        else {
            return Ok(None);
        };
        let openings: Vec<String> = tools
            .iter()
            .map(|tool| format.call_opening(&tool.name))
            .collect();
        let Some(logprobs) = self.continuation_logprobs(&openings)? else {
            return Ok(None);
        };
        let mut best: Option<(f32, &ToolDefinition)> = None;
        let scored = tools.iter().zip(words).zip(channel).zip(logprobs);
        for (((tool, word), channel), logprob) in scored {
            let score = logprob + word + channel;
            tracing::trace!(tool = %tool.name, logprob, score, "tool-name score");
            if !matches!(best, Some((top, _)) if top >= score) {
                best = Some((score, tool));
            }
        }
        Ok(best.map(|(_, tool)| tool))
    }

    /// The log-probability of each of `texts` right after the cached
    /// tokens, whose logits are current; the cache and the logits are left
    /// as they were. The texts' common first tokens (a call format's
    /// `<tool_call>\n{"name": "`, the same before every tool's name) are
    /// decoded once, then each text's own tokens after them, and the logits
    /// are restored once at the end: a tool costs the decode of its name,
    /// where it cost its whole opening and a restore. `None` when the abort
    /// flag interrupted the scoring.
    fn continuation_logprobs(&mut self, texts: &[String]) -> Result<Option<Vec<f32>>> {
        let vocab = self.model.llama.vocab();
        let tokens: Vec<Vec<LlamaToken>> = texts
            .iter()
            .map(|text| vocab.tokenize(text.as_bytes(), false, true))
            .collect();
        let Some(first) = tokens.first() else {
            return Ok(Some(Vec::new()));
        };
        let shared = common_prefix(&tokens);
        let start = self.ctx.get_logits_ith(-1).to_vec();
        let base = self.cached.len();
        let Some((prefix, after_prefix)) = self.scratch_logprob(&start, &first[..shared], base)?
        else {
            return Ok(None);
        };
        let mut out = Vec::with_capacity(texts.len());
        for own in &tokens {
            let Some((rest, _)) =
                self.scratch_logprob(&after_prefix, &own[shared..], base + shared)?
            else {
                return Ok(None);
            };
            out.push(prefix + rest);
            // The next text's own tokens go where these were.
            let _ = self
                .ctx
                .clear_kv_cache_seq(Some(0), Some((base + shared) as u32), None);
        }
        if !self.rewind_to(base)? {
            return Ok(None);
        }
        Ok(Some(out))
    }

    /// The log-probability of `tokens` decoded as scratch cells from
    /// position `at` after logits `start`, and the logits after the last
    /// one (`start` for no tokens). The cells stay until the caller removes
    /// them, and the context's logits are left overwritten. `None` when the
    /// abort flag interrupted the decode (its cells are removed then).
    fn scratch_logprob(
        &mut self,
        start: &[f32],
        tokens: &[LlamaToken],
        at: usize,
    ) -> Result<Option<(f32, Vec<f32>)>> {
        let Some(&first) = tokens.first() else {
            return Ok(Some((0.0, start.to_vec())));
        };
        if !self.decode_scratch(tokens, at)? {
            return Ok(None);
        }
        let mut total = log_softmax_at(start, first);
        for (i, &token) in tokens.iter().enumerate().skip(1) {
            total += log_softmax_at(self.ctx.get_logits_ith(i as i32 - 1), token);
        }
        let last = self.ctx.get_logits_ith(tokens.len() as i32 - 1).to_vec();
        Ok(Some((total, last)))
    }

    /// The log-probability of `text` right after the cached tokens, whose
    /// logits are current. The cache and the logits are left as they were.
    /// `None` when the abort flag interrupted the scoring.
    fn continuation_logprob(&mut self, text: &str) -> Result<Option<f32>> {
        let tokens = self
            .model
            .llama
            .vocab()
            .tokenize(text.as_bytes(), false, true);
        let Some((&first, rest)) = tokens.split_first() else {
            return Ok(Some(0.0));
        };
        let mut total = log_softmax_at(self.ctx.get_logits_ith(-1), first);
        if rest.is_empty() {
            return Ok(Some(total));
        }
        // Decode the trigger but its last token, with logits everywhere, read
        // the probabilities, then rewind to the prompt.
        let prompt_len = self.cached.len();
        let scratch = &tokens[..tokens.len() - 1];
        self.batch.clear();
        for (i, token) in scratch.iter().enumerate() {
            self.batch
                .add(*token, (prompt_len + i) as i32, &[0], true)
                .map_err(|e| Error::InferenceFailed(format!("batch: {e}")))?;
        }
        match self.ctx.decode(&mut self.batch) {
            Ok(()) => {}
            Err(DecodeError::Aborted) => {
                let _ = self
                    .ctx
                    .clear_kv_cache_seq(Some(0), Some(prompt_len as u32), None);
                return Ok(None);
            }
            Err(e) => return Err(Error::InferenceFailed(format!("llama_decode failed: {e}"))),
        }
        for (i, token) in rest.iter().enumerate() {
            total += log_softmax_at(self.ctx.get_logits_ith(i as i32), *token);
        }
        if !self.rewind_to(prompt_len)? {
            return Ok(None);
        }
        Ok(Some(total))
    }

    /// Drops everything after the first `len` cached tokens and restores the
    /// logits of the last one (by decoding it again). False when the abort
    /// flag interrupted that decode.
    fn rewind_to(&mut self, len: usize) -> Result<bool> {
        let last = *self
            .cached
            .get(len.wrapping_sub(1))
            .ok_or_else(|| Error::Internal("rewind past the start of the cache".into()))?;
        let removed = self
            .ctx
            .clear_kv_cache_seq(Some(0), Some(len as u32 - 1), None)
            .unwrap_or(false);
        if !removed {
            let prompt: Vec<LlamaToken> = self.cached[..len].to_vec();
            self.clear_cache();
            return self.decode_prompt(&prompt, &CancelToken::new());
        }
        self.cached.truncate(len - 1);
        self.decode(&[last], true)
    }

    /// Whether an `auto` reply must decide between a call and prose: it
    /// answers a user message (after a tool result the model must be free
    /// to answer) with tools to call.
    fn decides_call(request: &GenerateRequest<'_>) -> bool {
        let answers_user = request
            .messages
            .last()
            .is_some_and(|m| m.role == crate::message::Role::User);
        !request.tools.is_empty() && *request.tool_choice == ToolChoice::Auto && answers_user
    }

    /// Whether an `auto` reply should be a tool call: when it decides one
    /// (see [`Self::decides_call`]) and the model's own weight on opening a
    /// call is above `threshold`. `None` when the abort flag interrupted
    /// the scoring.
    fn should_open_call(
        &mut self,
        request: &GenerateRequest<'_>,
        threshold: f32,
    ) -> Result<Option<bool>> {
        if !Self::decides_call(request) {
            return Ok(Some(false));
        }
        let Some(logprob) = self.trigger_logprob()? else {
            return Ok(None);
        };
        tracing::debug!(logprob, threshold, "call-opening score");
        Ok(Some(logprob > threshold))
    }

    /// The tools a forced call may name: under `required` (or an `auto`
    /// reply the call-opening score forced), the one whose name the model
    /// scores best, unless the request turns scoring off; under a named
    /// tool, that tool.
    fn call_tools(
        &mut self,
        request: &GenerateRequest<'_>,
        force_call: bool,
        cancel: &CancelToken,
    ) -> Result<CallTools> {
        let forced = match request.tool_choice {
            ToolChoice::Required | ToolChoice::Tool(_) => true,
            ToolChoice::Auto => force_call,
            ToolChoice::None => false,
        };
        if !forced || request.tools.is_empty() {
            return Ok(CallTools::Any);
        }
        if request.tools.len() == 1 || !self.score_tool_names {
            return Ok(CallTools::Only(request.tools.to_vec()));
        }
        Ok(
            match self.best_scored_tool(request.messages, request.tools, cancel)? {
                Some(tool) => CallTools::Only(vec![tool.clone()]),
                None => CallTools::Cancelled,
            },
        )
    }

    /// The tokens an unconstrained reply to a tool result (with or without
    /// user messages after it) may not begin with: every token that can start the format's result marker
    /// (`<tool_response>`). Small models answer a result by echoing it in
    /// that markup, which is no answer; denied the opening, they write
    /// prose. The marker is compared after leading whitespace; a token
    /// that could also open a call is denied too, so a call right after a
    /// result (rare and mostly a repeat) needs some prose first.
    fn echo_openings(&mut self, request: &GenerateRequest<'_>) -> &[LlamaToken] {
        // A result the model has not replied to yet, even with a user
        // message after it (a steer that arrived during the call): small
        // models echo it then too.
        let after_result = request
            .messages
            .iter()
            .rev()
            .take_while(|m| m.role != crate::message::Role::Assistant)
            .any(|m| m.role == crate::message::Role::Tool);
        let marker = match self.template.tool_call_format().result_marker() {
            Some(marker) if after_result => marker,
            _ => return &[],
        };
        if !matches!(&self.echo_cache, Some((cached, _)) if *cached == marker) {
            let tokens = vocab_tokens_where(&self.model.llama, false, |piece| {
                let text = String::from_utf8_lossy(piece);
                let text = text.trim_start();
                !text.is_empty() && (marker.starts_with(text) || text.starts_with(marker))
            });
            self.echo_cache = Some((marker, tokens));
        }
        self.echo_cache.as_ref().map_or(&[], |(_, tokens)| tokens)
    }

    /// The tokens that begin with the call format's string delimiter (`"`,
    /// `",`, `"}`; FunctionGemma's `<escape>`): what ends a string value
    /// inside a call, where the grammar admits one.
    fn string_closers(&mut self) -> Vec<LlamaToken> {
        let delimiter = self.template.tool_call_format().string_delimiter();
        if !matches!(&self.closer_cache, Some((cached, _)) if *cached == delimiter) {
            let tokens = vocab_tokens_where(&self.model.llama, true, |piece| {
                piece.starts_with(delimiter.as_bytes())
            });
            self.closer_cache = Some((delimiter, tokens));
        }
        self.closer_cache
            .as_ref()
            .map_or_else(Vec::new, |(_, tokens)| tokens.clone())
    }

    /// The grammar for up to `max_calls` calls to `tools`, cached by tool
    /// set and count.
    fn grammar_for(
        &mut self,
        format: ToolCallFormat,
        tools: &[ToolDefinition],
        max_calls: u32,
    ) -> Result<String> {
        let key = format!("{format:?}{max_calls}{}", serde_json::to_string(tools)?);
        if let Some((cached_key, grammar)) = &self.grammar_cache {
            if *cached_key == key {
                return Ok(grammar.clone());
            }
        }
        let grammar = grammar::tool_call_grammar(format, tools, max_calls)?;
        self.grammar_cache = Some((key, grammar.clone()));
        Ok(grammar)
    }

    /// The reply's samplers: the tool-call grammar (whole reply for a
    /// forced call, lazily from the trigger for `auto`), and the chain of
    /// penalties, the usual truncation, and greedy or seeded random choice.
    /// `call_tools` is `Some` when the reply must be a call (to one of
    /// those tools); otherwise an `auto` reply may open a call to any tool.
    fn sampler(
        &mut self,
        request: &GenerateRequest<'_>,
        call_tools: Option<&[ToolDefinition]>,
    ) -> Result<(ReplySampler, bool)> {
        let format = self.template.tool_call_format();
        let constrained = call_tools.is_some();
        let bad = |e| Error::Internal(format!("llama.cpp rejected the tool-call grammar: {e}"));
        let grammar = if let Some(tools) = call_tools {
            let grammar = self.grammar_for(format, tools, request.max_calls)?;
            let llama = &self.model.llama;
            Some(LlamaSampler::grammar(llama, &grammar, "root").map_err(bad)?)
        } else if !request.tools.is_empty()
            && *request.tool_choice == ToolChoice::Auto
            && !format.trigger_only_at_start()
        {
            let grammar = self.grammar_for(format, request.tools, request.max_calls)?;
            let llama = &self.model.llama;
            Some(
                LlamaSampler::grammar_lazy(llama, &grammar, "root", [format.trigger()], &[])
                    .map_err(bad)?,
            )
        } else {
            None
        };
        let s = self.sampling;
        // A reply constrained to a call is decoded greedily: arguments want
        // the model's best guess, and sampling noise picks the wrong tool
        // or operation far more often on small models.
        if constrained || s.temperature <= 0.0 {
            let chain = LlamaSampler::chain_simple([LlamaSampler::greedy()]);
            return Ok((
                ReplySampler::new(grammar, chain, self.grammar_first),
                constrained,
            ));
        }
        let mut chain = Vec::new();
        if s.repeat_penalty != 1.0 {
            chain.push(LlamaSampler::penalties(
                self.model.llama.n_vocab(),
                64,
                s.repeat_penalty,
                0.0,
                0.0,
            ));
        }
        if s.top_k > 0 {
            chain.push(LlamaSampler::top_k(s.top_k as i32));
        }
        chain.push(LlamaSampler::top_p(s.top_p, 1));
        chain.push(LlamaSampler::min_p(s.min_p, 1));
        chain.push(LlamaSampler::temp(s.temperature));
        chain.push(LlamaSampler::dist(s.seed));
        let chain = LlamaSampler::chain_simple(chain);
        Ok((
            ReplySampler::new(grammar, chain, self.grammar_first),
            constrained,
        ))
    }
}

impl Backend for LlamaBackend<'_> {
    fn save_snapshot(&mut self, path: &std::path::Path) -> Result<Option<u64>> {
        LlamaBackend::save_snapshot(self, path)
    }

    fn load_snapshot(&mut self, path: &std::path::Path) -> Result<bool> {
        LlamaBackend::load_snapshot(self, path)
    }

    fn generate(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        // The flag belongs to this chat: hand it to llama.cpp for the reply
        // only, so a later decode never sees an old chat's stop.
        self.ctx.set_abort_flag(Some(cancel.shared_flag()));
        let _generating = Generating::start();
        let generation = self.generate_reply(request, on_piece, cancel);
        self.ctx.set_abort_flag(None);
        generation
    }

    fn count_tokens(&mut self, message: &Message) -> Result<u32> {
        // Content plus calls, and a few tokens for the role markup around them.
        let mut text = message.text_with_placeholders().into_owned();
        for call in &message.tool_calls {
            text.push_str(&call.name);
            text.push_str(&call.arguments.to_string());
        }
        Ok(self.tokenize(&text, false).len() as u32 + 8)
    }

    fn context_size(&self) -> u32 {
        self.ctx.n_ctx()
    }

    fn tool_call_format(&self) -> ToolCallFormat {
        self.template.tool_call_format()
    }

    fn thinking_format(&self) -> ThinkingFormat {
        self.template.thinking_format()
    }
}

impl LlamaBackend<'_> {
    /// One reply: the prompt, the call-or-prose decision in `auto` mode,
    /// then sampling until a stop, the limit or a cancel.
    fn generate_reply(
        &mut self,
        request: &GenerateRequest<'_>,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<Generation> {
        let started = Instant::now();
        let mut generation = Generation {
            text: String::new(),
            thinking: String::new(),
            finish: FinishReason::Cancelled,
            prompt_tokens: 0,
            cached_tokens: 0,
            completion_tokens: 0,
            prompt_time: Duration::ZERO,
            generation_time: Duration::ZERO,
        };
        let Some(plan) = self.plan_reply(request, started, &mut generation, cancel)? else {
            return Ok(generation);
        };
        let gen_started = Instant::now();
        generation.finish = self.sample_reply(request, plan, &mut generation, on_piece, cancel)?;
        generation.generation_time = gen_started.elapsed();
        Ok(generation)
    }

    /// Everything before the first sampled token: the call threshold, the
    /// prompt decoded (its counts and time go into `generation`), whether
    /// and which call opens, and the sampler with its bans and biases.
    /// `None` when a cancel came first.
    fn plan_reply(
        &mut self,
        request: &GenerateRequest<'_>,
        started: Instant,
        generation: &mut Generation,
        cancel: &CancelToken,
    ) -> Result<Option<ReplyPlan>> {
        // The threshold is measured before this prompt is decoded: its
        // probes take the cache.
        let threshold = match Self::decides_call(request) {
            true => match self.call_threshold(cancel)? {
                Some(threshold) => threshold,
                None => return Ok(None),
            },
            false => f32::INFINITY,
        };
        let prepared = self.prepare_prompt(request, cancel)?;
        generation.prompt_time = started.elapsed();
        let Some((prompt_tokens, reused)) = prepared else {
            return Ok(None);
        };
        generation.prompt_tokens = prompt_tokens as u32;
        generation.cached_tokens = reused as u32;

        let Some(force_call) = self.should_open_call(request, threshold)? else {
            return Ok(None);
        };
        let call_tools = match self.call_tools(request, force_call, cancel)? {
            CallTools::Cancelled => return Ok(None),
            CallTools::Any => None,
            CallTools::Only(tools) => Some(tools),
        };
        let (sampler, constrained) = self.sampler(request, call_tools.as_deref())?;
        let denied_openings = match constrained {
            true => Vec::new(),
            false => self.echo_openings(request).to_vec(),
        };
        // Only where the grammar writes the tool's name (a call to one
        // tool): elsewhere the bias on name tokens would sway the choice of
        // the tool itself.
        let argument_bias = match call_tools.as_deref() {
            Some([_]) => {
                self.argument_bias
                    .logits(&self.model.llama, request.messages, request.tools)
            }
            _ => Vec::new(),
        };
        // Each call the grammar admits gets its own budget.
        let calls_budget = MAX_CALL_TOKENS.saturating_mul(request.max_calls.max(1));
        let limit = match constrained {
            true => calls_budget,
            false => request.max_tokens.unwrap_or(u32::MAX),
        };
        // What steers a call out of a loop (see `sample_reply`); prose
        // needs none.
        let may_call =
            constrained || !request.tools.is_empty() && *request.tool_choice != ToolChoice::None;
        let string_closers = match may_call {
            true => self.string_closers(),
            false => Vec::new(),
        };
        Ok(Some(ReplyPlan {
            sampler,
            constrained,
            denied_openings,
            argument_bias,
            string_closers,
            calls_budget,
            limit,
        }))
    }

    /// Samples and decodes the reply token by token into `generation`
    /// until it ends (end of generation, a stop string, the limit, the
    /// window, the deadline, a repetition, a cancel), and says how.
    fn sample_reply(
        &mut self,
        request: &GenerateRequest<'_>,
        plan: ReplyPlan,
        generation: &mut Generation,
        on_piece: &mut dyn FnMut(&str),
        cancel: &CancelToken,
    ) -> Result<FinishReason> {
        let ReplyPlan {
            mut sampler,
            constrained,
            denied_openings,
            mut argument_bias,
            string_closers,
            calls_budget,
            mut limit,
        } = plan;
        let n_ctx = self.ctx.n_ctx() as usize;
        let mut call_begun = constrained;
        let mut repetition = RepetitionGuard::default();
        let mut call_loops = RepetitionGuard::for_calls();
        // The bias that steers the next token out of a loop inside a call.
        let mut loop_exit: Vec<(LlamaToken, f32)> = Vec::new();
        // The rest of a value copied from the question, written next: for
        // each token, what it may be (see `copied_value`).
        let mut copying: VecDeque<Vec<LlamaToken>> = VecDeque::new();
        let format = self.template.tool_call_format();
        let vocab = self.model.llama.vocab();
        let mut utf8 = Utf8Decoder::default();
        let mut stops = StopMatcher::new(request.stop);
        let mut piece = Vec::with_capacity(32);
        // A reply whose prompt opened the reasoning reads, to the engine,
        // like one that opens it itself.
        if self.opens_thinking && !constrained {
            emit(&mut generation.text, on_piece, "<think>\n");
        }
        let finish = loop {
            if cancel.is_cancelled() {
                break FinishReason::Cancelled;
            }
            let past_deadline = request.deadline.is_some_and(|d| Instant::now() >= d);
            if generation.completion_tokens >= limit || self.cached.len() >= n_ctx || past_deadline
            {
                break FinishReason::Length;
            }
            let denied: &[LlamaToken] = match generation.text.trim().is_empty() {
                true => &denied_openings,
                false => &[],
            };
            let step_bias: Vec<(LlamaToken, f32)>;
            let bias: &[(LlamaToken, f32)] = match (call_begun, loop_exit.is_empty()) {
                _ if !copying.is_empty() => {
                    step_bias = copying[0]
                        .iter()
                        .map(|&t| (t, value_copy::WRITE_BIAS))
                        .collect();
                    &step_bias
                }
                (false, _) => &[],
                (true, true) => &argument_bias,
                (true, false) => {
                    step_bias = argument_bias
                        .iter()
                        .copied()
                        .chain(loop_exit.drain(..))
                        .collect();
                    &step_bias
                }
            };
            let Some(token) = sampler.sample(&self.ctx, denied, bias) else {
                // The lazy grammar refused the text around its trigger (a
                // token that ends the trigger and begins something the
                // call cannot hold): the reply ends before that token, and
                // the loop reads what came before as it would any reply.
                tracing::debug!("the tool-call grammar refused its trigger's token");
                break FinishReason::Stop;
            };
            if vocab.is_eog(token) {
                break FinishReason::Stop;
            }
            // The grammar refused the copy's next token: the model goes on
            // from what was written.
            if copying
                .pop_front()
                .is_some_and(|step| !step.contains(&token))
            {
                copying.clear();
            }
            // Each of the question's tokens is pulled toward once: pulled
            // on after use, a value loops on it ("door_lock_door_door_...")
            // to the grammar's bound. Tool names stay pushed away.
            if call_begun {
                argument_bias.retain(|&(t, pull)| t != token || pull < 0.0);
            }
            // A call must finish what its grammar began, so a loop inside
            // it is steered out instead: away from the token that carries
            // the loop on, toward the end of the string it fills.
            if call_begun && call_loops.push(token.0) {
                tracing::debug!(
                    tokens = generation.completion_tokens,
                    "a tool call repeats itself: steering out of the loop"
                );
                loop_exit = loop_exit_bias(call_loops.next_in_loop(), &string_closers);
            }
            // Prose is bounded only by this.
            if !call_begun && repetition.push(token.0) {
                tracing::debug!(
                    tokens = generation.completion_tokens,
                    "reply ended: it repeats itself"
                );
                break FinishReason::Stop;
            }
            generation.completion_tokens += 1;
            piece.clear();
            text::reply_piece(&vocab, token, &mut piece);
            let text = utf8.push(&piece);
            let (out, stop_hit) = match stops.push(&text) {
                StopScan::Continue(out) => (out, false),
                StopScan::Stop(out) => (out, true),
            };
            emit(&mut generation.text, on_piece, &out);
            if stop_hit {
                break FinishReason::Stop;
            }
            if !call_begun && lazy_call_begun(request, &generation.text, format) {
                call_begun = true;
                limit = limit.max(generation.completion_tokens.saturating_add(calls_budget));
            }
            if !self.decode(&[token], true)? {
                break FinishReason::Cancelled;
            }
            if call_begun && copying.is_empty() {
                let copy = self.copied_value(request.messages, request.tools, &generation.text)?;
                copying.extend(copy.into_iter().flatten());
            }
        };
        if finish != FinishReason::Cancelled {
            // What the decoder and the stop matcher still hold.
            let tail = utf8.finish();
            let mut rest = match stops.push(&tail) {
                StopScan::Continue(out) | StopScan::Stop(out) => out,
            };
            rest.push_str(&stops.finish());
            emit(&mut generation.text, on_piece, &rest);
        }
        Ok(finish)
    }
}

/// How a reply is to be sampled, settled before its first token.
struct ReplyPlan {
    sampler: ReplySampler,
    /// The grammar holds the reply to a call from its first token.
    constrained: bool,
    /// Tokens the reply may not open with (an echoed result's marker).
    denied_openings: Vec<LlamaToken>,
    /// Logit biases while a call is written (see `argument_bias`).
    argument_bias: Vec<(LlamaToken, f32)>,
    /// The tokens that end a string inside a call (see
    /// `LlamaBackend::string_closers`), pulled toward when a call loops.
    string_closers: Vec<LlamaToken>,
    /// The tokens each admitted call may take.
    calls_budget: u32,
    /// The reply's token limit (raised once a call begins).
    limit: u32,
}

/// How many first tokens all of `lists` share.
fn common_prefix(lists: &[Vec<LlamaToken>]) -> usize {
    let Some((first, rest)) = lists.split_first() else {
        return 0;
    };
    (0..first.len())
        .take_while(|&i| rest.iter().all(|list| list.get(i) == Some(&first[i])))
        .count()
}

/// The tokens of `model`'s vocabulary whose piece (special tokens written
/// out when `special`) `keep` accepts: one pass over the vocabulary, for
/// the token sets the backend works out once and caches.
fn vocab_tokens_where(
    model: &LlamaModel,
    special: bool,
    keep: impl Fn(&[u8]) -> bool,
) -> Vec<LlamaToken> {
    let vocab = model.vocab();
    let mut piece = Vec::new();
    (0..vocab.n_tokens())
        .map(LlamaToken)
        .filter(|&token| {
            piece.clear();
            vocab.token_to_piece_into(token, &mut piece, special, None);
            keep(&piece)
        })
        .collect()
}

/// How far the token that carries a loop on is pushed away, in logits:
/// finite, so it still comes where the grammar admits nothing else.
const LOOP_EXIT_PUSH: f32 = 100.0;
/// How far the tokens that end a string are pulled toward out of a loop:
/// enough to beat the model's other continuations of the loop, which it
/// ranks far above closing the value.
const LOOP_EXIT_PULL: f32 = 15.0;

/// The bias for the token after a loop inside a call: `next` (the token
/// that would carry the loop on) pushed away, `closers` pulled toward.
fn loop_exit_bias(next: Option<i32>, closers: &[LlamaToken]) -> Vec<(LlamaToken, f32)> {
    let pull = closers.iter().map(|&token| (token, LOOP_EXIT_PULL));
    pull.chain(next.map(|token| (LlamaToken(token), -LOOP_EXIT_PUSH)))
        .collect()
}

/// Whether an `auto` reply has begun a call, which its lazy grammar now
/// constrains: from then on the call may run past `max_tokens`. Formats
/// without a lazy grammar (a bare Python list) never begin one this way.
/// Only the end of `text` is searched (the trigger arrives there), so the
/// check stays constant per token however long the reply.
fn lazy_call_begun(request: &GenerateRequest<'_>, text: &str, format: ToolCallFormat) -> bool {
    if *request.tool_choice != ToolChoice::Auto
        || request.tools.is_empty()
        || format.trigger_only_at_start()
    {
        return false;
    }
    let trigger = format.trigger();
    let mut start = text.len().saturating_sub(trigger.len() + 64);
    while !text.is_char_boundary(start) {
        start -= 1;
    }
    text[start..].contains(trigger)
}

/// The thread counts for the next decode, following the free cores (see
/// [`ThreadPlanner`]): `ctx`, the conversation's context, takes them at
/// once; the tool-scoring context takes what this returns.
fn follow_load(threads: &mut ThreadPlanner, ctx: &mut LlamaContext<'_>) -> threads::ThreadCounts {
    if let Some((n_threads, n_threads_batch)) = threads.update() {
        ctx.set_n_threads(n_threads, n_threads_batch);
    }
    threads.current()
}

/// `log softmax(logits)[token]`.
fn log_softmax_at(logits: &[f32], token: LlamaToken) -> f32 {
    let max = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
    let sum: f32 = logits.iter().map(|l| (l - max).exp()).sum();
    logits[token.0 as usize] - max - sum.ln()
}

fn emit(text: &mut String, on_piece: &mut dyn FnMut(&str), out: &str) {
    if !out.is_empty() {
        text.push_str(out);
        on_piece(out);
    }
}

fn random_seed() -> u32 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos()),
    );
    h.finish() as u32
}
