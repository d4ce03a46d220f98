//! Asking the person before a tool with side effects runs.
//!
//! The tools named in `[cli] confirm` (by default `write_file`, `edit_file`
//! and `bash`) run only after a yes. The hook runs on the agent's inference
//! thread, which cannot read the terminal while the REPL owns it, so it
//! hands the question to the main thread (see `chat_wait`) and waits for the
//! answer. Without a terminal to ask on, those tools are refused unless
//! `--allow-tools` (or `[cli] allow_tools`) allows them; a refusal is a tool
//! error the model reads.

use std::collections::HashSet;
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::Mutex;

use zoo_core::{Hooks, ToolCall, ToolCallDecision};

/// What the person answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// Run this call.
    Yes,
    /// Do not run it.
    No,
    /// Run it, and every later call of this tool, without asking.
    Always,
}

impl Answer {
    /// Reads `y`, `n` or `a` (and the whole words); anything else is no.
    pub fn parse(line: &str) -> Answer {
        match line.trim().to_ascii_lowercase().as_str() {
            "y" | "yes" => Answer::Yes,
            "a" | "always" => Answer::Always,
            _ => Answer::No,
        }
    }
}

/// A question for the main thread to ask, and where its answer goes.
pub struct Question {
    /// The question, one line.
    pub text: String,
    /// Receives the answer.
    pub answer: Sender<Answer>,
}

/// What happens to a tool that needs confirmation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// Ask on the terminal.
    Ask,
    /// Run it without asking (`--allow-tools`, no terminal).
    Allow,
    /// Refuse it: there is no terminal to ask on.
    Refuse,
}

/// The `before_tool_call` hook that asks.
pub struct Confirm {
    tools: HashSet<String>,
    policy: Policy,
    always: Mutex<HashSet<String>>,
    questions: Mutex<Sender<Question>>,
}

impl Confirm {
    /// The hook for `tools`, and the receiving end of its questions.
    pub fn new(tools: &[String], policy: Policy) -> (Confirm, Receiver<Question>) {
        let (questions, receiver) = mpsc::channel();
        let hook = Confirm {
            tools: tools.iter().cloned().collect(),
            policy,
            always: Mutex::default(),
            questions: Mutex::new(questions),
        };
        (hook, receiver)
    }

    fn ask(&self, call: &ToolCall) -> Answer {
        let (answer, reply) = mpsc::channel();
        let question = Question {
            text: describe(call),
            answer,
        };
        let sent = self
            .questions
            .lock()
            .map(|q| q.send(question).is_ok())
            .unwrap_or(false);
        // Nobody to ask (the main thread has gone): the safe answer.
        if !sent {
            return Answer::No;
        }
        reply.recv().unwrap_or(Answer::No)
    }
}

impl Hooks for Confirm {
    fn before_tool_call(&self, call: &ToolCall) -> Result<ToolCallDecision, String> {
        if !self.tools.contains(&call.name) {
            return Ok(ToolCallDecision::Allow);
        }
        let always = |name: &str| self.always.lock().is_ok_and(|set| set.contains(name));
        let denied = |reason: String| Ok(ToolCallDecision::Deny { reason });
        match self.policy {
            Policy::Allow => Ok(ToolCallDecision::Allow),
            Policy::Refuse => denied(format!(
                "`{}` needs the user's confirmation and there is no terminal to ask on \
                 (zoo --allow-tools runs it without asking)",
                call.name
            )),
            Policy::Ask if always(&call.name) => Ok(ToolCallDecision::Allow),
            Policy::Ask => match self.ask(call) {
                Answer::Yes => Ok(ToolCallDecision::Allow),
                Answer::Always => {
                    if let Ok(mut set) = self.always.lock() {
                        set.insert(call.name.clone());
                    }
                    Ok(ToolCallDecision::Allow)
                }
                Answer::No => denied(format!("the user did not allow `{}` to run", call.name)),
            },
        }
    }
}

/// The call in one line: the command of a `bash` call, the path of a file
/// tool, the arguments of anything else.
fn describe(call: &ToolCall) -> String {
    let args = &call.arguments;
    let shown = match call.name.as_str() {
        "bash" => args["command"].as_str().map(str::to_owned),
        "write_file" | "edit_file" => args["path"].as_str().map(str::to_owned),
        _ => None,
    }
    .unwrap_or_else(|| args.to_string());
    format!("Allow {} {}? [y]es [n]o [a]lways: ", call.name, shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn call(name: &str, arguments: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "call_1".into(),
            name: name.into(),
            arguments,
        }
    }

    #[test]
    fn answers_are_read_leniently_and_default_to_no() {
        assert_eq!(Answer::parse(" Y\n"), Answer::Yes);
        assert_eq!(Answer::parse("always"), Answer::Always);
        assert_eq!(Answer::parse("a"), Answer::Always);
        assert_eq!(Answer::parse(""), Answer::No);
        assert_eq!(Answer::parse("sure"), Answer::No);
    }

    #[test]
    fn only_the_named_tools_are_asked_about_and_always_sticks() {
        let (hook, questions) = Confirm::new(&["bash".into()], Policy::Ask);
        let other = hook.before_tool_call(&call("read_file", json!({"path": "a"})));
        assert_eq!(other, Ok(ToolCallDecision::Allow));
        let asker = std::thread::spawn(move || {
            let q = questions.recv().unwrap();
            assert_eq!(q.text, "Allow bash ls -l? [y]es [n]o [a]lways: ");
            q.answer.send(Answer::Always).unwrap();
            questions
        });
        let first = hook.before_tool_call(&call("bash", json!({"command": "ls -l"})));
        assert_eq!(first, Ok(ToolCallDecision::Allow));
        let questions = asker.join().unwrap();
        // Allowed always: no second question.
        let second = hook.before_tool_call(&call("bash", json!({"command": "pwd"})));
        assert_eq!(second, Ok(ToolCallDecision::Allow));
        assert!(questions.try_recv().is_err());
    }

    #[test]
    fn without_a_terminal_the_tool_is_refused_unless_allowed() {
        let (refuse, _q) = Confirm::new(&["bash".into()], Policy::Refuse);
        let decision = refuse.before_tool_call(&call("bash", json!({"command": "ls"})));
        let Ok(ToolCallDecision::Deny { reason }) = decision else {
            panic!("{decision:?}");
        };
        assert!(reason.contains("--allow-tools"), "{reason}");
        let (allow, _q) = Confirm::new(&["bash".into()], Policy::Allow);
        let decision = allow.before_tool_call(&call("bash", json!({"command": "ls"})));
        assert_eq!(decision, Ok(ToolCallDecision::Allow));
    }

    #[test]
    fn a_no_or_a_gone_asker_denies() {
        let (hook, questions) = Confirm::new(&["write_file".into()], Policy::Ask);
        let asker = std::thread::spawn(move || {
            let q = questions.recv().unwrap();
            assert!(q.text.contains("notes.txt"), "{}", q.text);
            q.answer.send(Answer::No).unwrap();
        });
        let decision = hook.before_tool_call(&call("write_file", json!({"path": "notes.txt"})));
        asker.join().unwrap();
        assert!(matches!(decision, Ok(ToolCallDecision::Deny { .. })));
        // The receiver is gone now: no one to ask, so no.
        let decision = hook.before_tool_call(&call("write_file", json!({"path": "x"})));
        assert!(matches!(decision, Ok(ToolCallDecision::Deny { .. })));
    }
}
