//! What a provider wants back with the tool calls of its earlier replies,
//! kept by the backend because the history has no place for it: Anthropic's
//! signed thinking blocks, which must precede a reply's `tool_use` blocks
//! when their results are sent while thinking is on, and Gemini's thought
//! signatures on `functionCall` parts, which Gemini 3 checks for every call
//! of the current turn.
//!
//! A reply is found again by its calls (names and arguments, as the
//! history holds them), so nothing needs an id the history does not keep.
//! Only the last few replies are kept: the API wants them for the exchange
//! in progress, not for old turns.

use std::collections::VecDeque;

use serde_json::Value as Json;

use super::reply::PartialCall;
use crate::message::ToolCall;

/// Replies remembered at most (a tool-using exchange rarely has more rounds).
const KEPT: usize = 16;

/// Values kept per reply, found by the reply's calls.
#[derive(Debug)]
pub(crate) struct Signed<T> {
    entries: VecDeque<(Vec<(String, Json)>, T)>,
}

impl<T> Default for Signed<T> {
    fn default() -> Self {
        Signed {
            entries: VecDeque::new(),
        }
    }
}

impl<T> Signed<T> {
    /// Keeps `value` for the reply that made `calls` (as streamed).
    pub(crate) fn remember<'a>(&mut self, calls: impl Iterator<Item = &'a PartialCall>, value: T) {
        let key: Vec<(String, Json)> = calls
            .map(|c| (c.name.clone(), arguments_value(&c.arguments)))
            .collect();
        if key.is_empty() {
            return;
        }
        self.entries.retain(|(k, _)| *k != key);
        if self.entries.len() == KEPT {
            self.entries.pop_front();
        }
        self.entries.push_back((key, value));
    }

    /// The value kept for the reply whose calls are `calls` (as the
    /// history holds them), if any.
    pub(crate) fn find(&self, calls: &[ToolCall]) -> Option<&T> {
        self.entries
            .iter()
            .rev()
            .find(|(key, _)| {
                key.len() == calls.len()
                    && key
                        .iter()
                        .zip(calls)
                        .all(|((name, args), call)| *name == call.name && *args == call.arguments)
            })
            .map(|(_, value)| value)
    }
}

/// Arguments as the agentic loop reads them: empty is `{}`, text that is
/// not JSON stays a string (such a call is refused, never sent back).
fn arguments_value(text: &str) -> Json {
    match text.trim() {
        "" => Json::Object(Default::default()),
        json => serde_json::from_str(json).unwrap_or_else(|_| Json::String(text.to_string())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn partial(name: &str, arguments: &str) -> PartialCall {
        PartialCall {
            name: name.into(),
            arguments: arguments.into(),
            ..PartialCall::default()
        }
    }

    fn call(name: &str, arguments: Json) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn replies_are_found_by_their_calls_and_only_the_last_are_kept() {
        let mut signed = Signed::default();
        signed.remember([partial("f", r#"{"a": 1, "b": 2}"#)].iter(), "one");
        signed.remember([partial("g", "")].iter(), "two");
        assert_eq!(
            signed.find(&[call("f", json!({"b": 2, "a": 1}))]),
            Some(&"one")
        );
        assert_eq!(signed.find(&[call("g", json!({}))]), Some(&"two"));
        assert_eq!(signed.find(&[call("f", json!({"a": 2}))]), None);
        assert_eq!(signed.find(&[]), None);
        for i in 0..KEPT {
            signed.remember([partial("h", &format!("{{\"i\": {i}}}"))].iter(), "more");
        }
        assert_eq!(signed.find(&[call("f", json!({"a": 1, "b": 2}))]), None);
        assert_eq!(signed.entries.len(), KEPT);
    }
}
