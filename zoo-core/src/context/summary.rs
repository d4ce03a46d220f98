//! Summaries written by a model: level 2 of the cascade and tool-result
//! hygiene ask a [`Summarize`] for one when the config names a
//! `summarizer`, instead of writing a call and its result as one line or
//! cutting a result to its head and tail.

use serde::{Deserialize, Serialize};

use crate::cancel::CancelToken;
use crate::error::Result;
use crate::message::{Message, Role};
use crate::provider::Provider;

/// The `summarizer` config: what writes the summaries. Without a
/// `provider`, the agent's own model does (its loaded model, in a context
/// of its own; or its provider, on a connection of its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizerConfig {
    /// The model that writes summaries, when not the agent's own.
    pub provider: Option<Provider>,
    /// The longest summary, in tokens.
    pub max_tokens: u32,
    /// The summarizer's instructions (a default asks for a short, factual
    /// summary).
    pub system_prompt: Option<String>,
}

impl Default for SummarizerConfig {
    fn default() -> Self {
        SummarizerConfig {
            provider: None,
            max_tokens: 160,
            system_prompt: None,
        }
    }
}

/// The summarizer's instructions when the config gives none.
pub const DEFAULT_INSTRUCTIONS: &str = "You write short, factual summaries of parts of a \
conversation between a user, an assistant and its tools. Keep names, numbers, results and \
decisions; leave out greetings and repetition. Answer with the summary only.";

/// Writes a summary of messages (older turns, or one long tool result).
pub trait Summarize: Send + Sync + std::fmt::Debug {
    /// A summary of `messages` in at most about `max_words` words; `cancel`
    /// is the chat's, so that a stop does not wait for it.
    fn summarize(
        &self,
        messages: &[Message],
        max_words: u32,
        cancel: &CancelToken,
    ) -> Result<String>;
}

/// The request a summarizer model reads: the instruction and the messages
/// as a transcript, a call as `name(arguments)` and a result under its
/// tool's name.
pub fn summary_request(messages: &[Message], max_words: u32) -> String {
    let mut lines = vec![format!(
        "Summarize this part of the conversation in at most {max_words} words:\n"
    )];
    for message in messages {
        let speaker = match message.role {
            Role::Tool => format!("result of {}", message.name.as_deref().unwrap_or("a tool")),
            role => role.as_str().to_owned(),
        };
        if !message.content.trim().is_empty() {
            lines.push(format!("{speaker}: {}", message.content.trim()));
        }
        for call in &message.tool_calls {
            lines.push(format!(
                "{speaker} called {}({})",
                call.name, call.arguments
            ));
        }
    }
    lines.join("\n")
}
