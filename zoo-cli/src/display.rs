//! How a chat looks on the screen: reply text as it streams, tool calls
//! and their results on lines of their own (dimmed on a terminal, plain
//! when piped), and the engine's notes.

use std::io::Write;

use serde_json::Value;
use zoo_core::{AgentEvent, EventKind};

/// At most this much of a tool's result is shown.
const SHOWN_RESULT_CHARS: usize = 300;
/// At most this many of its lines.
const SHOWN_RESULT_LINES: usize = 4;

/// The screen's style.
#[derive(Debug, Clone, Copy)]
pub struct Display {
    /// Colors (stdout is a terminal).
    pub color: bool,
}

impl Display {
    /// Plain when stdout is not a terminal.
    pub fn for_stdout() -> Display {
        use std::io::IsTerminal;
        Display {
            color: std::io::stdout().is_terminal(),
        }
    }

    /// A piece of the reply.
    pub fn token(&self, text: &str) {
        print!("{text}");
        let _ = std::io::stdout().flush();
    }

    /// A tool call starting, reporting progress or finishing; other events
    /// show nothing.
    pub fn event(&self, event: &AgentEvent) {
        match &event.kind {
            EventKind::ToolCallStarted {
                name, arguments, ..
            } => self.note(&format!("\n[tool] {name} {arguments}")),
            EventKind::ToolCallProgress { name, text, .. } => {
                self.note(&format!("[tool] {name}: {text}"))
            }
            EventKind::ToolCallFinished {
                name,
                result,
                error,
                ..
            } => match (result, error) {
                (_, Some(error)) => self.note(&format!("[tool] {name} failed: {error}")),
                (Some(result), _) => self.note(&format!("[tool] {name} -> {}", shown(result))),
                _ => {}
            },
            _ => {}
        }
    }

    /// A line in the dimmed style.
    pub fn note(&self, text: &str) {
        if self.color {
            println!("\x1b[2m{text}\x1b[0m");
        } else {
            println!("{text}");
        }
    }

    /// A line that tells of something wrong.
    pub fn error(&self, text: &str) {
        if self.color {
            println!("\x1b[31m[error] {text}\x1b[0m");
        } else {
            println!("[error] {text}");
        }
    }
}

/// A tool result cut to a few lines: a built-in tool's `text`, or the JSON.
fn shown(result: &Value) -> String {
    let text = match result.get("text").and_then(Value::as_str) {
        Some(text) => text.to_owned(),
        None => match result {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        },
    };
    let mut out: String = text
        .lines()
        .take(SHOWN_RESULT_LINES)
        .collect::<Vec<_>>()
        .join("\n  ");
    let cut = out.chars().count() > SHOWN_RESULT_CHARS || text.lines().count() > SHOWN_RESULT_LINES;
    if out.chars().count() > SHOWN_RESULT_CHARS {
        out = out.chars().take(SHOWN_RESULT_CHARS).collect();
    }
    if cut {
        out.push_str(" …");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn results_are_cut_to_a_few_lines() {
        assert_eq!(shown(&json!("17 * 23 = 391")), "17 * 23 = 391");
        assert_eq!(shown(&json!({"a": 1})), r#"{"a":1}"#);
        let long = (1..=10).map(|n| format!("line {n}")).collect::<Vec<_>>();
        let text = shown(&json!({"text": long.join("\n"), "path": "x"}));
        assert_eq!(text, "line 1\n  line 2\n  line 3\n  line 4 …");
        let wide = shown(&json!("x".repeat(1000)));
        assert_eq!(wide.chars().count(), SHOWN_RESULT_CHARS + 2);
    }
}
