//! Ending degenerate replies: a small model under greedy decoding can fall
//! into a loop ("I'm looking at you, I'm looking at you, ...") and, with no
//! `max_tokens`, run to the end of the context: minutes of output nobody
//! reads. A reply is degenerate when its newest tokens repeat one short
//! cycle many times over; such a reply ends there.
//!
//! Inside a tool call the grammar must finish what it began, so a loop
//! there (`"message": "I'm running late. I'm running late. ...`, `{{{{`)
//! cannot simply end the reply: it ran to the grammar's bound of 512
//! characters a string, seconds of a small model's time. The backend asks
//! [`RepetitionGuard::for_calls`], which trips sooner, and then steers the
//! next token out of the loop (see `sample_reply`).

/// Longest cycle looked for, in tokens: a repeated sentence fits.
const MAX_PERIOD: usize = 64;
/// Tokens a repeating run must span before prose is cut: long enough that
/// a word, a rule of dashes or a short refrain written twice or three
/// times never trips it.
const MIN_RUN: usize = 96;
/// Copies of the cycle that run must hold, so a long cycle is cut only
/// after it has come back several times.
const MIN_COPIES: usize = 4;
/// The same two inside a call. A value is short (a name, a city, a
/// sentence); 32 tokens of one cycle written three times over is a loop,
/// while a number or a rule of dashes stays below it.
const MIN_CALL_RUN: usize = 32;
const MIN_CALL_COPIES: usize = 3;

/// Watches a reply's tokens for a loop. For each period `p` it counts how
/// many tokens in a row equal the token `p` places earlier: a reply that
/// repeats a `p`-token cycle grows that count by one per token, any other
/// token resets it. Constant work per token.
#[derive(Debug)]
pub(crate) struct RepetitionGuard {
    recent: Vec<i32>,
    runs: [usize; MAX_PERIOD + 1],
    min_run: usize,
    min_copies: usize,
    /// The shortest period of the loop the last token completed.
    looping: Option<usize>,
}

impl Default for RepetitionGuard {
    /// The guard for prose.
    fn default() -> Self {
        RepetitionGuard {
            recent: Vec::with_capacity(MAX_PERIOD + 1),
            runs: [0; MAX_PERIOD + 1],
            min_run: MIN_RUN,
            min_copies: MIN_COPIES,
            looping: None,
        }
    }
}

impl RepetitionGuard {
    /// The guard for a tool call's text, which trips sooner.
    pub(crate) fn for_calls() -> Self {
        RepetitionGuard {
            min_run: MIN_CALL_RUN,
            min_copies: MIN_CALL_COPIES,
            ..RepetitionGuard::default()
        }
    }

    /// Adds the reply's next token; true when the reply has become a loop.
    pub(crate) fn push(&mut self, token: i32) -> bool {
        self.looping = None;
        for period in 1..=MAX_PERIOD.min(self.recent.len()) {
            let earlier = self.recent[self.recent.len() - period];
            self.runs[period] = match earlier == token {
                true => self.runs[period] + 1,
                false => 0,
            };
            // `run` tokens matching the cycle plus the first copy itself.
            let span = self.runs[period] + period;
            if self.looping.is_none() && span >= self.min_run && span >= self.min_copies * period {
                self.looping = Some(period);
            }
        }
        if self.recent.len() == MAX_PERIOD {
            self.recent.remove(0);
        }
        self.recent.push(token);
        self.looping.is_some()
    }

    /// The token that would carry the loop on, when the last token pushed
    /// completed one.
    pub(crate) fn next_in_loop(&self) -> Option<i32> {
        let period = self.looping?;
        Some(self.recent[self.recent.len() - period])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first_loop_at(tokens: &[i32]) -> Option<usize> {
        let mut guard = RepetitionGuard::default();
        tokens.iter().position(|&t| guard.push(t))
    }

    #[test]
    fn a_repeated_sentence_is_cut_once_it_spans_the_minimum() {
        let sentence: Vec<i32> = (100..106).collect();
        let reply: Vec<i32> = (1..=10)
            .chain(sentence.iter().copied().cycle().take(600))
            .collect();
        let at = first_loop_at(&reply).expect("a loop");
        // Ten tokens of preamble, then the run must span MIN_RUN tokens.
        assert_eq!(at, 10 + MIN_RUN - 1);
    }

    #[test]
    fn a_long_cycle_needs_four_copies() {
        let cycle: Vec<i32> = (0..40).collect();
        let reply: Vec<i32> = cycle.iter().copied().cycle().take(400).collect();
        assert_eq!(first_loop_at(&reply), Some(4 * 40 - 1));
    }

    #[test]
    fn varied_text_and_short_repeats_pass() {
        // A refrain written three times, separated by other lines.
        let refrain: Vec<i32> = (500..520).collect();
        let mut reply = Vec::new();
        for verse in 0..3 {
            reply.extend((0..30).map(|i| 1000 + verse * 100 + i));
            reply.extend(&refrain);
        }
        // A rule of 60 identical tokens (a line of dashes).
        reply.extend(std::iter::repeat_n(7, 60));
        reply.extend(2000..2400);
        assert_eq!(first_loop_at(&reply), None);
    }

    #[test]
    fn a_single_token_loop_is_cut() {
        let reply: Vec<i32> = std::iter::repeat_n(9, 200).collect();
        assert_eq!(first_loop_at(&reply), Some(MIN_RUN - 1));
    }

    #[test]
    fn a_loop_in_a_call_trips_sooner_and_names_its_next_token() {
        // "I'm running late. " as six tokens, over and over.
        let sentence = [11, 12, 13, 14, 15, 16];
        let value: Vec<i32> = sentence.iter().copied().cycle().take(100).collect();
        let mut guard = RepetitionGuard::for_calls();
        let at = value.iter().position(|&t| guard.push(t)).expect("a loop");
        assert_eq!(at, MIN_CALL_RUN - 1);
        // The loop would go on with the token six places back.
        assert_eq!(guard.next_in_loop(), Some(value[at + 1]));
        // Any other token ends it.
        assert!(!guard.push(99));
        assert_eq!(guard.next_in_loop(), None);
        // `a-d-d-d...`: a two-token cycle, then its next token.
        let mut guard = RepetitionGuard::for_calls();
        let dashes: Vec<i32> = std::iter::once(1).chain([2, 3].repeat(40)).collect();
        let at = dashes.iter().position(|&t| guard.push(t)).expect("a loop");
        assert_eq!(guard.next_in_loop(), Some(dashes[at + 1]));
    }

    #[test]
    fn values_a_call_really_holds_pass_the_call_guard() {
        // A big number digit by digit, a rule of dashes, a line written
        // twice: none is a loop.
        let mut value: Vec<i32> = std::iter::once(1)
            .chain(std::iter::repeat_n(0, 20))
            .collect();
        value.extend(std::iter::repeat_n(7, 24));
        let line: Vec<i32> = (40..52).collect();
        value.extend(&line);
        value.extend(&line);
        let mut guard = RepetitionGuard::for_calls();
        assert_eq!(value.iter().position(|&t| guard.push(t)), None);
    }
}
