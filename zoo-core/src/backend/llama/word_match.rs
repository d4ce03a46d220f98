//! A prior on a forced call's tool from the words of the question.
//!
//! The whole-name score ([`super::LlamaBackend`]'s tool choice) asks the
//! model which tool it means; a small model often means the wrong one
//! ("Lights off in the office" scores `lights_on`, "Play some Beatles"
//! scores `add_to_shopping_list`). The question's own words are evidence it
//! ignores: each content word of the user's last message that a tool's
//! name holds adds [`WordMatch::name`] to that tool's score, and one only
//! its description holds adds [`WordMatch::description`]. Words match
//! whole, or as a prefix of four letters or more (`book` and `booking`), so
//! `off` never matches `office`.

use crate::message::{Message, Role};
use crate::tools::ToolDefinition;

/// How much a question's word found in a tool's name or description adds to
/// the tool's score, in nats of the name's log-probability. Measured on the
/// tool evaluation's tune split (`examples/rust/tool_eval.rs`;
/// BENCHMARKS.md).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WordMatch {
    /// Added for each of the question's words the tool's name holds.
    pub name: f32,
    /// Added for each of the question's words only the description holds.
    pub description: f32,
}

/// Words that say nothing about which tool is meant.
const STOP_WORDS: &[&str] = &[
    "a", "about", "an", "and", "any", "are", "at", "be", "by", "can", "could", "do", "does", "for",
    "from", "hi", "how", "i", "i'm", "im", "in", "is", "it", "it's", "its", "me", "much", "my",
    "of", "please", "some", "that", "the", "this", "to", "want", "what", "what's", "whats", "with",
    "would", "you",
];

impl WordMatch {
    /// No prior: the model's scores alone.
    pub const OFF: WordMatch = WordMatch {
        name: 0.0,
        description: 0.0,
    };

    /// Whether the prior changes nothing.
    pub fn is_off(&self) -> bool {
        self.name == 0.0 && self.description == 0.0
    }

    /// What the question in `messages` (the user's last message) adds to
    /// `tool`'s score.
    pub fn bonus(&self, messages: &[Message], tool: &ToolDefinition) -> f32 {
        if self.is_off() {
            return 0.0;
        }
        let question = messages
            .iter()
            .rev()
            .find(|m| m.role == Role::User)
            .map_or("", |m| m.content.as_str());
        let name = words(&tool.name);
        let description = words(&tool.description);
        let mut asked = words(question);
        asked.retain(|w| !STOP_WORDS.contains(&w.as_str()));
        asked.sort();
        asked.dedup();
        asked
            .iter()
            .map(|word| {
                if name.iter().any(|n| same_word(word, n)) {
                    self.name
                } else if description.iter().any(|d| same_word(word, d)) {
                    self.description
                } else {
                    0.0
                }
            })
            .sum()
    }
}

/// The lowercase words of `text` (`lights_off` is `lights`, `off`).
fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Equal, or one a prefix of the other and that prefix four letters or more.
fn same_word(a: &str, b: &str) -> bool {
    let (short, long) = if a.len() <= b.len() { (a, b) } else { (b, a) };
    short == long || (short.chars().count() >= 4 && long.starts_with(short))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool(name: &str, description: &str) -> ToolDefinition {
        ToolDefinition {
            name: name.into(),
            description: description.into(),
            parameters: json!({"type": "object"}),
        }
    }

    const PRIOR: WordMatch = WordMatch {
        name: 2.0,
        description: 0.5,
    };

    fn bonus(question: &str, tool: &ToolDefinition) -> f32 {
        PRIOR.bonus(&[Message::user(question)], tool)
    }

    #[test]
    fn name_words_count_more_than_description_words() {
        let on = tool("lights_on", "Turn on the lights in a room");
        let off = tool("lights_off", "Turn off the lights in a room");
        // "lights" and "off" in the name; "turn" in neither question.
        assert_eq!(bonus("Lights off in the office.", &off), 4.0);
        // "lights" in the name; "off" nowhere, "office" is not "off".
        assert_eq!(bonus("Lights off in the office.", &on), 2.0);
        assert_eq!(bonus("Turn the kitchen lights on", &on), 4.5);
    }

    #[test]
    fn prefixes_of_four_letters_match_and_stop_words_do_not() {
        let get = tool(
            "get_booking",
            "Show the details of a booking by its booking code",
        );
        assert_eq!(bonus("Show me my booking", &get), 2.5);
        assert_eq!(bonus("What is the code for the book?", &get), 2.5);
        assert_eq!(bonus("the a of to", &get), 0.0);
    }

    #[test]
    fn the_last_user_message_is_the_question_and_off_adds_nothing() {
        let timer = tool("set_timer", "Start a countdown timer");
        let messages = [
            Message::user("Set a timer"),
            Message::assistant("Done."),
            Message::user("Thanks"),
        ];
        assert_eq!(PRIOR.bonus(&messages, &timer), 0.0);
        assert_eq!(WordMatch::OFF.bonus(&[Message::user("timer")], &timer), 0.0);
    }
}
