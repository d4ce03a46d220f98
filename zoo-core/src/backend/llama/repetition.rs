//! Ending degenerate replies: a small model under greedy decoding can fall
//! into a loop ("I'm looking at you, I'm looking at you, ...") and, with no
//! `max_tokens`, run to the end of the context: minutes of output nobody
//! reads. A reply is degenerate when its newest tokens repeat one short
//! cycle many times over; such a reply ends there.

/// Longest cycle looked for, in tokens: a repeated sentence fits.
const MAX_PERIOD: usize = 64;
/// Tokens a repeating run must span before the reply is cut: long enough
/// that a word, a rule of dashes or a short refrain written twice or three
/// times never trips it.
const MIN_RUN: usize = 96;
/// Copies of the cycle that run must hold, so a long cycle is cut only
/// after it has come back several times.
const MIN_COPIES: usize = 4;

/// Watches a reply's tokens for a loop. For each period `p` it counts how
/// many tokens in a row equal the token `p` places earlier: a reply that
/// repeats a `p`-token cycle grows that count by one per token, any other
/// token resets it. Constant work per token.
#[derive(Debug)]
pub(crate) struct RepetitionGuard {
    recent: Vec<i32>,
    runs: [usize; MAX_PERIOD + 1],
}

impl Default for RepetitionGuard {
    fn default() -> Self {
        RepetitionGuard {
            recent: Vec::with_capacity(MAX_PERIOD + 1),
            runs: [0; MAX_PERIOD + 1],
        }
    }
}

impl RepetitionGuard {
    /// Adds the reply's next token; true when the reply has become a loop.
    pub(crate) fn push(&mut self, token: i32) -> bool {
        let mut looping = false;
        for period in 1..=MAX_PERIOD.min(self.recent.len()) {
            let earlier = self.recent[self.recent.len() - period];
            self.runs[period] = match earlier == token {
                true => self.runs[period] + 1,
                false => 0,
            };
            // `run` tokens matching the cycle plus the first copy itself.
            let span = self.runs[period] + period;
            looping |= span >= MIN_RUN && span >= MIN_COPIES * period;
        }
        if self.recent.len() == MAX_PERIOD {
            self.recent.remove(0);
        }
        self.recent.push(token);
        looping
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
}
