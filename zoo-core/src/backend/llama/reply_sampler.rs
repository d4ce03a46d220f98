//! How a reply's next token is picked: the sampler chain, with the
//! tool-call grammar checked on the token the chain picks first.
//!
//! Applying a grammar to the whole vocabulary walks its stacks once per
//! token of the vocabulary (49,152 on SmolLM2) at every step, which made
//! writing a call cost more than decoding it. llama.cpp's own sampler
//! (`common_sampler_sample`) does what is done here: the chain picks a
//! token from the logits as they are, the grammar checks that one token,
//! and only when it refuses it is the grammar applied to the whole
//! vocabulary and the token picked again. Greedy picks what it picked
//! before: the likeliest token the grammar admits is the likeliest token
//! when the grammar admits it. A random pick keeps its distribution over
//! what the grammar admits (a refused draw is drawn again from the
//! admitted tokens alone); truncation (top-k, top-p, min-p) then counts
//! the refused tokens too, as llama.cpp's does.

use llama_cpp_2::context::LlamaContext;
use llama_cpp_2::sampling::LlamaSampler;
use llama_cpp_2::token::data::LlamaTokenData;
use llama_cpp_2::token::data_array::LlamaTokenDataArray;
use llama_cpp_2::token::LlamaToken;

/// The samplers of one reply.
pub(super) struct ReplySampler {
    /// The tool-call grammar (lazy from its trigger under `auto`), if any.
    grammar: Option<LlamaSampler>,
    /// What picks among the tokens: greedy, or penalties, truncation,
    /// temperature and a seeded draw.
    chain: LlamaSampler,
    /// Whether the grammar is applied to the whole vocabulary before every
    /// pick, as a baseline to measure the check against.
    grammar_first: bool,
}

impl ReplySampler {
    /// A sampler that picks with `chain` among what `grammar` admits,
    /// applying the grammar to every token first when `grammar_first`.
    pub(super) fn new(
        grammar: Option<LlamaSampler>,
        chain: LlamaSampler,
        grammar_first: bool,
    ) -> Self {
        ReplySampler {
            grammar,
            chain,
            grammar_first,
        }
    }

    /// The next token after the logits of `ctx`'s last output (never one of
    /// `denied`, the logits of `bias` shifted), accepted by the samplers.
    /// Acceptance goes through the wrapper that catches C++ exceptions:
    /// a lazy grammar throws when the token that completes its trigger
    /// carries text the grammar cannot begin with (`<tool_call>[` for a
    /// grammar that wants `<tool_call>\n{`), and unwinding a C++ exception
    /// through Rust aborts the process. `None` when the grammar refused the
    /// token.
    pub(super) fn sample(
        &mut self,
        ctx: &LlamaContext<'_>,
        denied: &[LlamaToken],
        bias: &[(LlamaToken, f32)],
    ) -> Option<LlamaToken> {
        let mut candidates = ctx.token_data_array_ith(-1);
        shift(&mut candidates, denied, bias);
        let token = match &mut self.grammar {
            None => pick(&mut self.chain, &mut candidates)?,
            Some(grammar) if self.grammar_first => {
                grammar.apply(&mut candidates);
                pick(&mut self.chain, &mut candidates)?
            }
            Some(grammar) => {
                let first = pick(&mut self.chain, &mut candidates.clone());
                match first.filter(|&token| admits(grammar, &candidates, token)) {
                    Some(token) => token,
                    None => {
                        grammar.apply(&mut candidates);
                        pick(&mut self.chain, &mut candidates)?
                    }
                }
            }
        };
        if let Some(grammar) = &mut self.grammar {
            grammar.try_accept(token).ok()?;
        }
        self.chain.try_accept(token).ok()?;
        Some(token)
    }
}

/// Bans `denied` and shifts the logits of `bias`, in `candidates` (every
/// token of the vocabulary, in id order).
fn shift(candidates: &mut LlamaTokenDataArray, denied: &[LlamaToken], bias: &[(LlamaToken, f32)]) {
    let changes = denied
        .iter()
        .map(|&token| (token, None))
        .chain(bias.iter().map(|&(token, delta)| (token, Some(delta))));
    for (token, delta) in changes {
        if let Some(data) = candidates.data.get_mut(token.0 as usize) {
            if data.id() == token {
                let logit = delta.map_or(f32::NEG_INFINITY, |d| data.logit() + d);
                data.set_logit(logit);
            }
        }
    }
}

/// The token `chain` picks from `candidates`.
fn pick(chain: &mut LlamaSampler, candidates: &mut LlamaTokenDataArray) -> Option<LlamaToken> {
    chain.apply(candidates);
    candidates.selected_token()
}

/// Whether `grammar` admits `token` next, checked on that token alone
/// (with its logit from `candidates`, in id order): a refused token's
/// logit becomes negative infinity.
fn admits(grammar: &mut LlamaSampler, candidates: &LlamaTokenDataArray, token: LlamaToken) -> bool {
    let Some(data) = candidates.data.get(token.0 as usize).copied() else {
        return false;
    };
    if data.logit() == f32::NEG_INFINITY {
        return false;
    }
    let mut one =
        LlamaTokenDataArray::new(vec![LlamaTokenData::new(token, data.logit(), 0.0)], false);
    grammar.apply(&mut one);
    one.data[0].logit() != f32::NEG_INFINITY
}
