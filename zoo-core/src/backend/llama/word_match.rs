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
//!
//! The prior abstains where the words are no evidence of the step: when
//! they do not single out one tool (a task that names `read_file` and
//! `edit_file` alike says what it needs, not what comes first), and once
//! tools have answered in the turn (the next call follows from results).

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
    "from", "hi", "how", "i", "i'm", "im", "in", "into", "is", "it", "it's", "its", "me", "much",
    "my", "of", "please", "some", "that", "the", "this", "to", "want", "what", "what's", "whats",
    "with", "would", "you",
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

    /// What the question in `messages` adds to each of `tools`' scores,
    /// in their order: nothing when the prior is off, when the question
    /// is not the last message (tools have answered in this turn, and the
    /// next call follows from their results), or when the words do not
    /// single out one tool (two or more share the highest bonus: a task
    /// that names several tools says what it needs, not which step comes
    /// first).
    pub fn bonuses(&self, messages: &[Message], tools: &[ToolDefinition]) -> Vec<f32> {
        let none = vec![0.0; tools.len()];
        let question = match messages.last() {
            Some(m) if m.role == Role::User && !self.is_off() => m.content.as_str(),
            _ => return none,
        };
        let mut asked = words(question);
        asked.retain(|w| !is_stop_word(w));
        asked.sort();
        asked.dedup();
        let bonuses: Vec<f32> = tools.iter().map(|t| self.bonus(&asked, t)).collect();
        let top = bonuses.iter().copied().fold(0.0, f32::max);
        match top > 0.0 && bonuses.iter().filter(|&&b| b == top).count() == 1 {
            true => bonuses,
            false => none,
        }
    }

    /// What the question's content words `asked` add to `tool`'s score.
    fn bonus(&self, asked: &[String], tool: &ToolDefinition) -> f32 {
        let name = words(&tool.name);
        let description = words(&tool.description);
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

/// Whether `word` (any case) says nothing about what is asked.
pub(super) fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word.to_lowercase().as_str())
}

/// The lowercase words of `text` (`lights_off` is `lights`, `off`).
pub(super) fn words(text: &str) -> Vec<String> {
    text.split(|c: char| !(c.is_alphanumeric() || c == '\''))
        .map(|w| w.trim_matches('\'').to_lowercase())
        .filter(|w| !w.is_empty())
        .collect()
}

/// Equal, or one a prefix of the other and that prefix four letters or more.
pub(super) fn same_word(a: &str, b: &str) -> bool {
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

    /// The bonus of the first of `tools` for `question`, asked alone.
    fn bonus(question: &str, tools: &[ToolDefinition]) -> f32 {
        PRIOR.bonuses(&[Message::user(question)], tools)[0]
    }

    #[test]
    fn name_words_count_more_than_description_words() {
        let on = tool("lights_on", "Turn on the lights in a room");
        let off = tool("lights_off", "Turn off the lights in a room");
        // "lights" and "off" in the name; "turn" in neither question.
        let both = [off.clone(), on.clone()];
        assert_eq!(bonus("Lights off in the office.", &both), 4.0);
        // "lights" in the name; "off" nowhere, "office" is not "off".
        assert_eq!(bonus("Lights off in the office.", &[on.clone(), off]), 2.0);
        assert_eq!(bonus("Turn the kitchen lights on", &[on]), 4.5);
    }

    #[test]
    fn prefixes_of_four_letters_match_and_stop_words_do_not() {
        let get = tool(
            "get_booking",
            "Show the details of a booking by its booking code",
        );
        let get = [get];
        assert_eq!(bonus("Show me my booking", &get), 2.5);
        assert_eq!(bonus("What is the code for the book?", &get), 2.5);
        assert_eq!(bonus("the a of to", &get), 0.0);
    }

    #[test]
    fn the_last_user_message_is_the_question_and_off_adds_nothing() {
        let timer = [tool("set_timer", "Start a countdown timer")];
        let messages = [
            Message::user("Set a timer"),
            Message::assistant("Done."),
            Message::user("Thanks"),
        ];
        assert_eq!(PRIOR.bonuses(&messages, &timer), [0.0]);
        assert_eq!(
            WordMatch::OFF.bonuses(&[Message::user("timer")], &timer),
            [0.0]
        );
    }

    #[test]
    fn words_that_name_several_tools_alike_add_nothing() {
        let tools = [
            tool("bash", "Run a shell command"),
            tool("read_file", "Read a file"),
            tool("edit_file", "Replace text in a file"),
        ];
        // read_file and edit_file both hold two of its words.
        let task = "Run the test, read calc.py, fix it with edit_file";
        assert_eq!(PRIOR.bonuses(&[Message::user(task)], &tools), [0.0; 3]);
        assert_eq!(
            PRIOR.bonuses(&[Message::user("Read the file calc.py")], &tools),
            [0.0, 4.0, 2.0]
        );
    }

    #[test]
    fn after_a_tool_result_the_words_add_nothing() {
        let tools = [tool("read_file", "Read a file")];
        let mut messages = vec![Message::user("Read calc.py")];
        assert_eq!(PRIOR.bonuses(&messages, &tools), [2.0]);
        messages.push(Message::assistant("calling"));
        assert_eq!(PRIOR.bonuses(&messages, &tools), [0.0]);
    }
}

/// The coding agent example's task (examples/coding-agent) against the
/// built-in tools it registers.
#[cfg(test)]
mod coding_task {
    use super::*;
    use crate::tools::builtin::{builtin_tools, BuiltinOptions};

    #[test]
    fn the_coding_agent_task_names_two_tools_alike() {
        let options = BuiltinOptions {
            workspace: std::env::temp_dir(),
            confirm: None,
            bash_deny: Vec::new(),
        };
        let names = ["list_files", "read_file", "edit_file", "write_file", "bash"];
        let tools: Vec<ToolDefinition> = builtin_tools(&names, &options)
            .unwrap()
            .iter()
            .map(|t| t.definition().clone())
            .collect();
        let task = "The test in test_calc.py fails. Run it with `python3 test_calc.py`, \
                    read calc.py, fix it with edit_file, and run the test again.";
        let prior = WordMatch {
            name: 5.0,
            description: 1.0,
        };
        let mut asked = words(task);
        asked.retain(|w| !is_stop_word(w));
        asked.sort();
        asked.dedup();
        // read_file and edit_file hold two of its words each.
        let each: Vec<f32> = tools.iter().map(|t| prior.bonus(&asked, t)).collect();
        assert_eq!(each, [5.0, 10.0, 10.0, 5.0, 1.0]);
        assert_eq!(prior.bonuses(&[Message::user(task)], &tools), [0.0; 5]);
    }
}
