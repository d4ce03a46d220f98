//! A chat's budget: how many model replies, tokens and milliseconds it may
//! take before it ends with stop reason `limit`. The defaults stop a runaway
//! loop (a model that calls tools forever) but never a real task.

use std::time::{Duration, Instant};

/// The limits of one chat; 0 in the config means "no limit".
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Limits {
    /// Model replies in the chat, follow-ups included.
    pub max_turns: Option<u32>,
    /// Prompt plus completion tokens over the chat's replies.
    pub max_total_tokens: Option<u64>,
    /// Wall-clock time of the chat, from its start.
    pub max_duration: Option<Duration>,
}

/// A limit that was reached.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LimitHit {
    /// `max_turns`.
    Turns(u32),
    /// `max_total_tokens`.
    TotalTokens(u64),
    /// `max_duration_ms`.
    Duration(Duration),
}

impl LimitHit {
    /// The config key of the limit.
    pub fn name(&self) -> &'static str {
        match self {
            LimitHit::Turns(_) => "max_turns",
            LimitHit::TotalTokens(_) => "max_total_tokens",
            LimitHit::Duration(_) => "max_duration_ms",
        }
    }

    /// The limit's value, in the config's unit.
    pub fn value(&self) -> u64 {
        match self {
            LimitHit::Turns(n) => u64::from(*n),
            LimitHit::TotalTokens(n) => *n,
            LimitHit::Duration(d) => d.as_millis() as u64,
        }
    }
}

impl Limits {
    /// From config values, where 0 means none.
    pub fn new(max_turns: u32, max_total_tokens: u64, max_duration_ms: u64) -> Self {
        Limits {
            max_turns: (max_turns > 0).then_some(max_turns),
            max_total_tokens: (max_total_tokens > 0).then_some(max_total_tokens),
            max_duration: (max_duration_ms > 0).then(|| Duration::from_millis(max_duration_ms)),
        }
    }

    /// The first limit a chat that started at `started` has reached, having
    /// made `turns` replies that used `tokens`.
    pub fn reached(&self, turns: u32, tokens: u64, started: Instant) -> Option<LimitHit> {
        if let Some(max) = self.max_turns.filter(|&max| turns >= max) {
            return Some(LimitHit::Turns(max));
        }
        if let Some(max) = self.max_total_tokens.filter(|&max| tokens >= max) {
            return Some(LimitHit::TotalTokens(max));
        }
        self.time_up(started)
    }

    /// The time limit, once the chat that started at `started` is past it:
    /// the one limit that can pass while tools run.
    pub fn time_up(&self, started: Instant) -> Option<LimitHit> {
        self.max_duration
            .filter(|&max| started.elapsed() >= max)
            .map(LimitHit::Duration)
    }

    /// When the chat must end, for a backend to stop a reply in progress.
    pub fn deadline(&self, started: Instant) -> Option<Instant> {
        self.max_duration.map(|max| started + max)
    }

    /// The most tokens the next reply may generate: what the token budget
    /// leaves (`None`: no budget).
    pub fn tokens_left(&self, tokens: u64) -> Option<u32> {
        self.max_total_tokens
            .map(|max| max.saturating_sub(tokens).min(u64::from(u32::MAX)) as u32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_means_no_limit() {
        let limits = Limits::new(0, 0, 0);
        assert_eq!(limits, Limits::default());
        assert_eq!(limits.reached(u32::MAX, u64::MAX, Instant::now()), None);
        assert_eq!(limits.tokens_left(5), None);
        assert_eq!(limits.deadline(Instant::now()), None);
    }

    #[test]
    fn each_limit_is_named_with_its_value() {
        let limits = Limits::new(3, 100, 0);
        assert_eq!(limits.reached(2, 99, Instant::now()), None);
        let turns = limits.reached(3, 0, Instant::now()).unwrap();
        assert_eq!((turns.name(), turns.value()), ("max_turns", 3));
        let tokens = limits.reached(1, 100, Instant::now()).unwrap();
        assert_eq!((tokens.name(), tokens.value()), ("max_total_tokens", 100));
        let started = Instant::now() - Duration::from_millis(50);
        let time = Limits::new(0, 0, 10).reached(0, 0, started).unwrap();
        assert_eq!((time.name(), time.value()), ("max_duration_ms", 10));
    }

    #[test]
    fn the_token_budget_bounds_the_next_reply() {
        let limits = Limits::new(0, 100, 0);
        assert_eq!(limits.tokens_left(30), Some(70));
        assert_eq!(limits.tokens_left(130), Some(0));
        assert_eq!(Limits::new(0, u64::MAX, 0).tokens_left(0), Some(u32::MAX));
    }
}
