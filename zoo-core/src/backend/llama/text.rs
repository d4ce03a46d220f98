//! Turning token bytes into text for streaming: pieces never split a UTF-8
//! character, and text that may be the start of a stop string is held back
//! until it is known not to be one.

/// Control tokens whose text a reply keeps: the markers of tool calls and
/// of reasoning, which the engine reads (and then hides from the answer).
/// Other control tokens write nothing, as llama.cpp renders them for text.
const KEPT_MARKERS: [&str; 17] = [
    "<tool_call>",
    "</tool_call>",
    "<|python_tag|>",
    "[TOOL_CALLS]",
    "<|tool_call|>",
    "<|tool_call_start|>",
    "<|tool_call_end|>",
    "<start_function_call>",
    "<end_function_call>",
    "<escape>",
    "<think>",
    "</think>",
    "<|channel|>",
    "<|message|>",
    "<|constrain|>",
    "<|start|>",
    "<|end|>",
];

/// The bytes a generated token adds to the reply: its text, or for a
/// control token that marks a call or reasoning, that marker.
pub(crate) fn reply_piece(
    vocab: &llama_cpp_2::vocab::LlamaVocab<'_>,
    token: llama_cpp_2::token::LlamaToken,
    out: &mut Vec<u8>,
) {
    vocab.token_to_piece_into(token, out, false, None);
    if !out.is_empty() {
        return;
    }
    vocab.token_to_piece_into(token, out, true, None);
    if !KEPT_MARKERS.iter().any(|m| m.as_bytes() == out.as_slice()) {
        out.clear();
    }
}

/// Assembles UTF-8 from token pieces that may end mid-character.
#[derive(Debug, Default)]
pub(crate) struct Utf8Decoder {
    pending: Vec<u8>,
}

impl Utf8Decoder {
    /// Adds a token's bytes; returns the complete characters available now.
    pub(crate) fn push(&mut self, bytes: &[u8]) -> String {
        self.pending.extend_from_slice(bytes);
        let mut out = String::new();
        loop {
            match std::str::from_utf8(&self.pending) {
                Ok(text) => {
                    out.push_str(text);
                    self.pending.clear();
                    return out;
                }
                Err(e) => {
                    let valid = e.valid_up_to();
                    // SAFETY-free: `valid_up_to` bytes are valid UTF-8 by definition.
                    out.push_str(std::str::from_utf8(&self.pending[..valid]).unwrap_or_default());
                    match e.error_len() {
                        // An incomplete character at the end: wait for more bytes.
                        None => {
                            self.pending.drain(..valid);
                            return out;
                        }
                        // Bytes that can never be valid: replace, go on.
                        Some(bad) => {
                            out.push(char::REPLACEMENT_CHARACTER);
                            self.pending.drain(..valid + bad);
                        }
                    }
                }
            }
        }
    }

    /// Flushes what is left at the end of generation.
    pub(crate) fn finish(&mut self) -> String {
        let rest = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        rest
    }
}

/// Finds stop strings in streamed text.
#[derive(Debug)]
pub(crate) struct StopMatcher<'a> {
    stops: &'a [String],
    held: String,
}

/// What to do after a piece of text.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum StopScan {
    /// Stream this text (possibly empty) and go on.
    Continue(String),
    /// A stop string was found: stream this text, then stop.
    Stop(String),
}

impl<'a> StopMatcher<'a> {
    pub(crate) fn new(stops: &'a [String]) -> Self {
        StopMatcher {
            stops,
            held: String::new(),
        }
    }

    pub(crate) fn push(&mut self, text: &str) -> StopScan {
        if self.stops.is_empty() {
            return StopScan::Continue(text.to_string());
        }
        self.held.push_str(text);
        if let Some(pos) = self
            .stops
            .iter()
            .filter_map(|s| self.held.find(s.as_str()))
            .min()
        {
            let out = self.held[..pos].to_string();
            self.held.clear();
            return StopScan::Stop(out);
        }
        let keep = self
            .stops
            .iter()
            .map(|stop| longest_suffix_prefix(&self.held, stop))
            .max()
            .unwrap_or(0);
        let split = self.held.len() - keep;
        StopScan::Continue(self.held.drain(..split).collect())
    }

    /// Text held back when generation ended for another reason.
    pub(crate) fn finish(&mut self) -> String {
        std::mem::take(&mut self.held)
    }
}

/// Length of the longest suffix of `text` that is a proper prefix of `stop`,
/// on a character boundary.
fn longest_suffix_prefix(text: &str, stop: &str) -> usize {
    (1..stop.len().min(text.len() + 1))
        .rev()
        .find(|&n| {
            text.is_char_boundary(text.len() - n) && stop.starts_with(&text[text.len() - n..])
        })
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utf8_split_across_tokens() {
        let mut d = Utf8Decoder::default();
        let bytes = "é🙂".as_bytes();
        assert_eq!(d.push(&bytes[..1]), "");
        assert_eq!(d.push(&bytes[1..3]), "é");
        assert_eq!(d.push(&bytes[3..5]), "");
        assert_eq!(d.push(&bytes[5..]), "🙂");
        assert_eq!(d.push(&[0xff, b'a']), "\u{fffd}a");
        assert_eq!(d.push(&[0xe2]), "");
        assert_eq!(d.finish(), "\u{fffd}");
    }

    #[test]
    fn stop_strings_are_cut_and_held_back() {
        let stops = vec!["END".to_string()];
        let mut m = StopMatcher::new(&stops);
        assert_eq!(m.push("abc E"), StopScan::Continue("abc ".into()));
        assert_eq!(m.push("N"), StopScan::Continue("".into()));
        assert_eq!(m.push("x"), StopScan::Continue("ENx".into()));
        assert_eq!(m.push("yEND z"), StopScan::Stop("y".into()));
        let mut m = StopMatcher::new(&stops);
        assert_eq!(m.push("E"), StopScan::Continue("".into()));
        assert_eq!(m.finish(), "E");
    }
}
