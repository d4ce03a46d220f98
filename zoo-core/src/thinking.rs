//! A reasoning model's reasoning, kept apart from its answer.
//!
//! Models that reason before answering write their reasoning in the reply:
//! Qwen3 and the DeepSeek-R1 distills between `<think>` and `</think>`
//! (the distills' template opens the block in the prompt; the backend then
//! starts the reply with `<think>` so it reads the same), gpt-oss in its
//! `analysis` channel (harmony: `<|channel|>analysis<|message|>…<|end|>`,
//! then `<|start|>assistant<|channel|>final<|message|>…`). The reasoning
//! goes to the reply's `thinking`, and while streaming to its own channel;
//! the answer, and the call markup the parser reads, stay in the text.

use serde::{Deserialize, Serialize};

/// How a model marks its reasoning in a reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ThinkingFormat {
    /// The model does not reason in its text (or its backend already gives
    /// the reasoning apart, as remote APIs do).
    #[default]
    None,
    /// `<think>…</think>` at the start of the reply.
    ThinkTags,
    /// Harmony's channels: `analysis` is reasoning, `final` the answer,
    /// `commentary` holds calls (and preambles the user may read).
    Harmony,
}

const THINK_OPEN: &str = "<think>";
const THINK_CLOSE: &str = "</think>";
const CHANNEL: &str = "<|channel|>";
const MESSAGE: &str = "<|message|>";
const END: &str = "<|end|>";
const START: &str = "<|start|>";

/// A reply split into its reasoning and the rest.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Split {
    /// The reasoning.
    pub thinking: String,
    /// The answer and any call markup, for the parser.
    pub text: String,
}

/// Splits a whole reply written in `format`.
pub fn split(format: ThinkingFormat, reply: &str) -> Split {
    let mut splitter = ThinkingSplitter::new(format);
    let mut out = splitter.push(reply);
    let rest = splitter.finish();
    out.thinking.push_str(&rest.thinking);
    out.text.push_str(&rest.text);
    match format {
        ThinkingFormat::None => out,
        _ => Split {
            thinking: out.thinking.trim().to_string(),
            text: out.text.trim_start().to_string(),
        },
    }
}

/// Where a streamed reply is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Section {
    /// Nothing but whitespace yet: a `<think>` may still open.
    Start,
    /// Inside the reasoning.
    Thinking,
    /// In the answer (or, for harmony, a message the user or the parser reads).
    Text,
    /// Harmony markup between messages (`<|start|>assistant<|channel|>…`).
    Header,
}

/// Splits a reply as it streams: each piece in, the reasoning and the text
/// it completes out. Text that may be the start of a marker is held until
/// the next piece tells.
#[derive(Debug)]
pub struct ThinkingSplitter {
    format: ThinkingFormat,
    section: Section,
    held: String,
    /// Harmony: the header of the message being read, up to `<|message|>`.
    header: String,
}

impl ThinkingSplitter {
    /// A splitter for replies in `format`.
    pub fn new(format: ThinkingFormat) -> Self {
        ThinkingSplitter {
            format,
            section: match format {
                ThinkingFormat::Harmony => Section::Header,
                _ => Section::Start,
            },
            held: String::new(),
            header: String::new(),
        }
    }

    /// Takes one piece of the reply.
    pub fn push(&mut self, piece: &str) -> Split {
        let mut out = Split::default();
        if self.format == ThinkingFormat::None {
            out.text.push_str(piece);
            return out;
        }
        self.held.push_str(piece);
        loop {
            let progressed = match self.format {
                ThinkingFormat::ThinkTags => self.step_tags(&mut out),
                ThinkingFormat::Harmony => self.step_harmony(&mut out),
                ThinkingFormat::None => false,
            };
            if !progressed {
                return out;
            }
        }
    }

    /// The reply ended: whatever was held, where it belongs.
    pub fn finish(&mut self) -> Split {
        let mut out = Split::default();
        let held = std::mem::take(&mut self.held);
        match self.section {
            Section::Thinking => out.thinking.push_str(&held),
            Section::Start | Section::Text => out.text.push_str(&held),
            // An unfinished header: a call's, which the parser reads, or
            // stray markup.
            Section::Header => {
                if self.header.contains(" to=") || held.contains(" to=") {
                    out.text.push_str(&self.header);
                    out.text.push_str(&held);
                }
            }
        }
        self.header.clear();
        out
    }

    /// One step of `<think>` splitting; false when more text is needed.
    fn step_tags(&mut self, out: &mut Split) -> bool {
        match self.section {
            Section::Start => {
                let trimmed = self.held.trim_start();
                if trimmed.starts_with(THINK_OPEN) {
                    let at = self.held.len() - trimmed.len() + THINK_OPEN.len();
                    self.held.drain(..at);
                    self.section = Section::Thinking;
                    true
                } else if THINK_OPEN.starts_with(trimmed) {
                    false
                } else {
                    self.section = Section::Text;
                    true
                }
            }
            Section::Thinking => {
                if let Some(at) = self.held.find(THINK_CLOSE) {
                    out.thinking.push_str(&self.held[..at]);
                    self.held.drain(..at + THINK_CLOSE.len());
                    self.section = Section::Text;
                    return true;
                }
                let keep = partial_marker(&self.held, &[THINK_CLOSE]);
                let ready = self.held.len() - keep;
                out.thinking.push_str(&self.held[..ready]);
                self.held.drain(..ready);
                false
            }
            Section::Text | Section::Header => {
                out.text.push_str(&self.held);
                self.held.clear();
                false
            }
        }
    }

    /// One step of harmony splitting; false when more text is needed.
    fn step_harmony(&mut self, out: &mut Split) -> bool {
        match self.section {
            Section::Header => match self.held.find(MESSAGE) {
                Some(at) => {
                    self.header.push_str(&self.held[..at + MESSAGE.len()]);
                    self.held.drain(..at + MESSAGE.len());
                    let header = std::mem::take(&mut self.header);
                    self.section = match channel(&header) {
                        "analysis" => Section::Thinking,
                        _ if header.contains(" to=") => {
                            // A call: its header and message stay together
                            // for the parser.
                            out.text.push_str(&header);
                            Section::Text
                        }
                        _ => Section::Text,
                    };
                    true
                }
                None => {
                    let keep = partial_marker(&self.held, &[MESSAGE]);
                    let ready = self.held.len() - keep;
                    self.header.push_str(&self.held[..ready]);
                    self.held.drain(..ready);
                    false
                }
            },
            Section::Thinking | Section::Text | Section::Start => {
                let ends = [END, START, CHANNEL];
                let found = ends
                    .iter()
                    .filter_map(|m| self.held.find(m).map(|at| (at, *m)))
                    .min_by_key(|(at, _)| *at);
                let sink = match self.section {
                    Section::Thinking => &mut out.thinking,
                    _ => &mut out.text,
                };
                match found {
                    Some((at, marker)) => {
                        sink.push_str(&self.held[..at]);
                        if self.section == Section::Thinking && marker == END {
                            sink.push('\n');
                        }
                        let skip = if marker == END { END.len() } else { 0 };
                        self.held.drain(..at + skip);
                        self.section = Section::Header;
                        true
                    }
                    None => {
                        let keep = partial_marker(&self.held, &ends);
                        let ready = self.held.len() - keep;
                        sink.push_str(&self.held[..ready]);
                        self.held.drain(..ready);
                        false
                    }
                }
            }
        }
    }
}

/// The channel a harmony header names (`<|channel|>analysis`).
fn channel(header: &str) -> &str {
    header
        .rfind(CHANNEL)
        .map(|at| &header[at + CHANNEL.len()..])
        .and_then(|rest| rest.split([' ', '<']).next())
        .unwrap_or("")
}

/// How many bytes at the end of `text` may begin one of `markers`.
fn partial_marker(text: &str, markers: &[&str]) -> usize {
    markers
        .iter()
        .map(|marker| {
            (1..marker.len().min(text.len() + 1))
                .rev()
                .find(|&n| {
                    text.is_char_boundary(text.len() - n)
                        && marker.starts_with(&text[text.len() - n..])
                })
                .unwrap_or(0)
        })
        .max()
        .unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Streams `pieces` and checks that both the streamed parts and the
    /// whole-text split give `thinking` and `text`.
    fn check(format: ThinkingFormat, pieces: &[&str], thinking: &str, text: &str) {
        let mut splitter = ThinkingSplitter::new(format);
        let mut streamed = Split::default();
        for piece in pieces {
            let part = splitter.push(piece);
            streamed.thinking.push_str(&part.thinking);
            streamed.text.push_str(&part.text);
        }
        let rest = splitter.finish();
        streamed.thinking.push_str(&rest.thinking);
        streamed.text.push_str(&rest.text);
        assert_eq!(streamed.thinking.trim(), thinking, "{pieces:?}");
        assert_eq!(streamed.text.trim_start(), text, "{pieces:?}");
        let whole = split(format, &pieces.concat());
        assert_eq!(whole.thinking, thinking);
        assert_eq!(whole.text, text);
    }

    #[test]
    fn think_tags_split_reasoning_from_the_answer() {
        let reply = [
            "<th",
            "ink>\nThe user",
            " wants Paris.</th",
            "ink>\n\nIt is sunny.",
        ];
        check(
            ThinkingFormat::ThinkTags,
            &reply,
            "The user wants Paris.",
            "It is sunny.",
        );
        // A call after the reasoning stays in the text for the parser.
        check(
            ThinkingFormat::ThinkTags,
            &["<think>Need weather.</think>\n<tool_call>\n{\"name\": \"w\"}\n</tool_call>"],
            "Need weather.",
            "<tool_call>\n{\"name\": \"w\"}\n</tool_call>",
        );
        // No reasoning: all text, even a `<` at the start.
        check(
            ThinkingFormat::ThinkTags,
            &["<", "b>bold</b>"],
            "",
            "<b>bold</b>",
        );
        // Cut off while reasoning: all reasoning, no answer.
        check(
            ThinkingFormat::ThinkTags,
            &["<think>Still going"],
            "Still going",
            "",
        );
        // A reply without the format's reasoning is untouched.
        check(
            ThinkingFormat::None,
            &["<think>x</think>y"],
            "",
            "<think>x</think>y",
        );
    }

    #[test]
    fn harmony_channels() {
        check(
            ThinkingFormat::Harmony,
            &[
                "<|channel|>analysis<|message|>User asks",
                " weather.<|end|><|start|>assistant<|channel|>final<|message|>It is ",
                "sunny.",
            ],
            "User asks weather.",
            "It is sunny.",
        );
        // A call keeps its header for the parser; reasoning before it goes.
        let call = "<|start|>assistant<|channel|>commentary to=functions.get_weather <|constrain|>json<|message|>{\"city\":\"Paris\"}";
        check(
            ThinkingFormat::Harmony,
            &["<|channel|>analysis<|message|>Need the tool.<|end|>", call],
            "Need the tool.",
            call,
        );
        let parsed = crate::tools::parser::parse(
            &split(
                ThinkingFormat::Harmony,
                &format!("<|channel|>analysis<|message|>x<|end|>{call}"),
            )
            .text,
        );
        assert_eq!(parsed.calls.len(), 1);
        assert_eq!(parsed.content, "");
    }
}
