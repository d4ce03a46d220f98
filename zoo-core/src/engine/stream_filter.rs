//! Keeps tool-call markup out of the token stream a user sees: text is
//! forwarded as it comes, except that a piece that might be the start of the
//! call trigger is held back until it is known not to be, and nothing is
//! forwarded once the trigger appears (the call is reported as events).

/// A streaming filter for one model reply.
pub(crate) struct StreamFilter<'a> {
    trigger: &'a str,
    held: String,
    in_call: bool,
}

impl<'a> StreamFilter<'a> {
    /// A filter for `trigger`; an empty trigger forwards everything.
    pub(crate) fn new(trigger: &'a str) -> Self {
        StreamFilter {
            trigger,
            held: String::new(),
            in_call: false,
        }
    }

    /// Takes a piece; returns what may be shown now.
    pub(crate) fn push(&mut self, piece: &str) -> Option<String> {
        if self.in_call {
            return None;
        }
        if self.trigger.is_empty() {
            return Some(piece.to_string());
        }
        self.held.push_str(piece);
        if let Some(pos) = self.held.find(self.trigger) {
            self.in_call = true;
            let shown: String = self.held[..pos].to_string();
            self.held.clear();
            return (!shown.is_empty()).then_some(shown);
        }
        // Hold back the longest suffix that is a prefix of the trigger.
        let keep = (1..self.trigger.len().min(self.held.len()) + 1)
            .rev()
            .find(|&n| {
                self.held.is_char_boundary(self.held.len() - n)
                    && self.trigger.starts_with(&self.held[self.held.len() - n..])
            })
            .unwrap_or(0);
        let split = self.held.len() - keep;
        let shown: String = self.held.drain(..split).collect();
        (!shown.is_empty()).then_some(shown)
    }

    /// The reply ended: returns held text that turned out not to be a call.
    pub(crate) fn finish(&mut self) -> Option<String> {
        if self.in_call || self.held.is_empty() {
            return None;
        }
        Some(std::mem::take(&mut self.held))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(trigger: &str, pieces: &[&str]) -> String {
        let mut f = StreamFilter::new(trigger);
        let mut out: String = pieces.iter().filter_map(|p| f.push(p)).collect();
        out.extend(f.finish());
        out
    }

    #[test]
    fn hides_calls_and_keeps_prose() {
        assert_eq!(run("<tool_call>", &["Hi", " there"]), "Hi there");
        assert_eq!(
            run("<tool_call>", &["Let me", " <tool", "_call>{\"a\"", "}"]),
            "Let me "
        );
        assert_eq!(run("<tool_call>", &["a <", "b"]), "a <b");
        assert_eq!(run("<tool_call>", &["x <tool"]), "x <tool");
        assert_eq!(run("", &["<tool_call>"]), "<tool_call>");
        assert_eq!(run("<tool_call>", &["é<", "ü"]), "é<ü");
    }
}
