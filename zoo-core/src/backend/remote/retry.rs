//! When to try a request again and how long to wait first.
//!
//! Rate limits (429), server errors (5xx), 408 and failures to connect are
//! transient: they are tried again up to `max_retries` times, after an
//! exponential backoff with jitter, or after the server's own `Retry-After`
//! when it gave one. Every other failure is final. The wait is cut short
//! by a cancel within a few milliseconds.

use std::time::{Duration, Instant};

use crate::error::Error;

/// The first backoff; each retry doubles it.
const BASE_DELAY: Duration = Duration::from_millis(500);
/// No backoff waits longer than this, whatever the attempt.
const MAX_DELAY: Duration = Duration::from_secs(30);
/// A `Retry-After` longer than this is not waited for: the failure is
/// reported at once (a server asking for an hour will not be helped by
/// a chat that hangs for one).
pub(crate) const MAX_RETRY_AFTER: Duration = Duration::from_secs(120);
/// How often a wait looks at the cancel token.
const CANCEL_POLL: Duration = Duration::from_millis(10);

/// How an attempt failed.
#[derive(Debug)]
pub(crate) enum Failure {
    /// Worth another try, after `retry_after` if the server said how long.
    Transient {
        error: Error,
        retry_after: Option<Duration>,
    },
    /// Final: trying again would fail the same way.
    Fatal(Error),
}

/// The wait before retry number `retry` (0 for the first): the server's
/// `Retry-After` when it gave one, else `BASE_DELAY * 2^retry` (at most
/// `MAX_DELAY`) scaled by a random factor from 0.5 to 1, so that clients
/// that failed together do not all come back together.
pub(crate) fn delay(retry: u32, retry_after: Option<Duration>) -> Duration {
    if let Some(after) = retry_after {
        return after;
    }
    let exponential = BASE_DELAY
        .saturating_mul(1u32.checked_shl(retry).unwrap_or(u32::MAX))
        .min(MAX_DELAY);
    exponential.mul_f64(0.5 + fastrand::f64() * 0.5)
}

/// Sleeps for `duration` unless `stop` says to stop first (it is asked
/// every few milliseconds); returns false if it did.
pub(crate) fn wait(duration: Duration, stop: impl Fn() -> bool) -> bool {
    let until = Instant::now() + duration;
    loop {
        if stop() {
            return false;
        }
        let now = Instant::now();
        if now >= until {
            return true;
        }
        std::thread::sleep((until - now).min(CANCEL_POLL));
    }
}

/// Reads `Retry-After` in its seconds form (`"2"`, also `"1.5"`), or
/// OpenAI's `retry-after-ms`. An HTTP date or garbage gives `None` (the
/// backoff is used instead).
pub(crate) fn parse_retry_after(seconds: Option<&str>, millis: Option<&str>) -> Option<Duration> {
    let parse = |text: &str, scale: f64| {
        text.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .map(|v| Duration::from_secs_f64((v * scale).min(1e9)))
    };
    millis
        .and_then(|ms| parse(ms, 0.001))
        .or_else(|| seconds.and_then(|s| parse(s, 1.0)))
}

/// The wait a Google error body asks for (`google.rpc.RetryInfo`'s
/// `retryDelay`, such as `"34.4s"`), which Gemini sends with a 429
/// instead of a `Retry-After` header.
pub(crate) fn retry_delay_in_body(body: &str) -> Option<Duration> {
    let json: serde_json::Value = serde_json::from_str(body).ok()?;
    let error = match &json {
        serde_json::Value::Array(items) => items.first()?.get("error")?,
        other => other.get("error")?,
    };
    error
        .get("details")?
        .as_array()?
        .iter()
        .find_map(|detail| detail.get("retryDelay")?.as_str())
        .and_then(|delay| parse_retry_after(Some(delay.trim().strip_suffix('s')?), None))
}

/// Whether an HTTP status is worth another try.
pub(crate) fn is_transient(status: u16) -> bool {
    status == 408 || status == 429 || (500..600).contains(&status)
}

/// What servers say when a prompt does not fit their context window, in
/// lower case: OpenAI (`context_length_exceeded`, "maximum context
/// length"), vLLM ("maximum context length", "maximum model length"),
/// llama.cpp's server (`exceed_context_size_error`, "exceeds the available
/// context size"), TGI, Anthropic ("prompt is too long", "exceed context
/// limit") and Gemini ("input token count ... exceeds the maximum number of
/// tokens").
const OVERFLOW_PHRASES: &[&str] = &[
    "context_length_exceeded",
    "maximum context length",
    "context length exceeded",
    "exceeds the context window",
    "exceed_context_size",
    "exceeds the available context size",
    "maximum model length",
    "reduce the length of the messages",
    "prompt is too long",
    "input token count",
    "tokens + `max_new_tokens` must be",
    "exceed context limit",
    "exceeds the maximum number of tokens",
];

/// Whether a 400, 413 or 422 answer says the prompt is too long.
pub(crate) fn is_context_overflow(status: u16, body: &str) -> bool {
    matches!(status, 400 | 413 | 422) && mentions_context_overflow(body)
}

/// Whether an error text says the prompt is too long (for errors a
/// server reports inside a stream, which have no status of their own).
pub(crate) fn mentions_context_overflow(text: &str) -> bool {
    let text = text.to_lowercase();
    OVERFLOW_PHRASES.iter().any(|phrase| text.contains(phrase))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_with_jitter_and_is_capped() {
        for retry in 0..4 {
            let full = BASE_DELAY * 2u32.pow(retry);
            for _ in 0..50 {
                let d = delay(retry, None);
                assert!(d >= full / 2 && d <= full, "retry {retry}: {d:?}");
            }
        }
        for _ in 0..50 {
            let d = delay(40, None);
            assert!(d >= MAX_DELAY / 2 && d <= MAX_DELAY, "{d:?}");
        }
        assert_eq!(
            delay(3, Some(Duration::from_secs(2))),
            Duration::from_secs(2)
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_milliseconds() {
        assert_eq!(
            parse_retry_after(Some("2"), None),
            Some(Duration::from_secs(2))
        );
        assert_eq!(
            parse_retry_after(Some(" 1.5 "), None),
            Some(Duration::from_millis(1500))
        );
        assert_eq!(
            parse_retry_after(Some("7"), Some("250")),
            Some(Duration::from_millis(250))
        );
        assert_eq!(
            parse_retry_after(Some("Wed, 21 Oct 2015 07:28:00 GMT"), None),
            None
        );
        assert_eq!(parse_retry_after(Some("-1"), None), None);
        assert_eq!(parse_retry_after(None, None), None);
    }

    #[test]
    fn a_stop_ends_a_wait_at_once() {
        let started = Instant::now();
        assert!(!wait(Duration::from_secs(60), || true));
        assert!(started.elapsed() < Duration::from_secs(5));
        assert!(wait(Duration::from_millis(1), || false));
    }

    #[test]
    fn overflow_messages_of_common_servers_are_recognised() {
        for body in [
            r#"{"error": {"message": "This model's maximum context length is 4096 tokens. However, your messages resulted in 5000 tokens.", "code": "context_length_exceeded"}}"#,
            r#"{"object": "error", "message": "This model's maximum context length is 2048 tokens. However, you requested 3000 tokens (2900 in the messages, 100 in the completion). Please reduce the length of the messages or completion."}"#,
            r#"{"error": {"code": 400, "message": "the request exceeds the available context size, try increasing it", "type": "exceed_context_size_error"}}"#,
            r#"{"error": "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4096. Given: 4000 `inputs` tokens and 200 `max_new_tokens`"}"#,
            r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "prompt is too long: 208000 tokens > 200000 maximum"}}"#,
            r#"{"type": "error", "error": {"type": "invalid_request_error", "message": "input length and `max_tokens` exceed context limit: 197202 + 21333 > 200000, decrease input length or `max_tokens` and try again"}}"#,
            r#"{"error": {"code": 400, "message": "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).", "status": "INVALID_ARGUMENT"}}"#,
        ] {
            assert!(is_context_overflow(400, body), "{body}");
        }
        assert!(!is_context_overflow(
            400,
            r#"{"error": "unknown field `tools`"}"#
        ));
        assert!(!is_context_overflow(
            500,
            "This model's maximum context length is 4096 tokens"
        ));
    }

    #[test]
    fn googles_retry_delay_is_read_from_the_body() {
        let body = r#"{"error": {"code": 429, "message": "You exceeded your current quota.",
            "status": "RESOURCE_EXHAUSTED", "details": [
              {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []},
              {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "34.4s"}]}}"#;
        assert_eq!(
            retry_delay_in_body(body),
            Some(Duration::from_millis(34_400))
        );
        assert_eq!(
            retry_delay_in_body(&format!("[{body}]")),
            Some(Duration::from_millis(34_400))
        );
        assert_eq!(retry_delay_in_body(r#"{"error": {"message": "x"}}"#), None);
        assert_eq!(retry_delay_in_body("Bad Gateway"), None);
    }

    #[test]
    fn transient_statuses() {
        for status in [408, 429, 500, 502, 503, 504, 529] {
            assert!(is_transient(status), "{status}");
        }
        for status in [400, 401, 403, 404, 413, 422] {
            assert!(!is_transient(status), "{status}");
        }
    }
}
