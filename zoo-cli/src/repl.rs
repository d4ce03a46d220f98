//! `zoo chat`: a REPL. Replies stream as they are generated; tool calls
//! and their results show on their own lines; Ctrl-C stops a reply in
//! flight; Ctrl-D or /quit leaves. The conversation is kept in a session
//! (the user's store unless the config names one), so `--resume` picks it
//! up next time.

use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use zoo_core::Config;

use crate::args::AgentArgs;
use crate::commands::{self, Flow};
use crate::config_file::{self, Keep, Settings};
use crate::confirm::Answer;
use crate::display::Display;
use crate::launch::{self, Launched};
use crate::{interrupt, reply, verbose};

/// What the REPL runs: its settings, the agent and the screen.
pub struct Repl {
    /// The command's settings (the config the agent started with).
    pub settings: Settings,
    /// The agent and its questions; `None` only while it is replaced, or
    /// after a replacement and the old agent both failed to start.
    launched: Option<Launched>,
    /// The screen's style.
    pub display: Display,
}

impl Repl {
    /// The agent and its questions.
    pub fn launched(&self) -> Result<&Launched, String> {
        self.launched
            .as_ref()
            .ok_or_else(|| "no agent is running (it failed to start again); /quit".to_owned())
    }

    /// Closes the agent and starts one on `config` instead (a new model, a
    /// session switched to); if that fails, the old config starts again.
    pub fn relaunch(&mut self, config: Config) -> Result<(), String> {
        // One agent per session: the old one is closed before the new starts.
        let Some(Launched { agent, .. }) = self.launched.take() else {
            return Err("no agent is running".into());
        };
        let old = agent.config().clone();
        let history = agent.history();
        let had_session = agent.session_id().is_some();
        drop(agent);
        match launch::launch(&self.settings, config, self.display) {
            Ok(launched) => {
                if !had_session {
                    launched
                        .agent
                        .set_history(history)
                        .map_err(|e| e.to_string())?;
                }
                self.launched = Some(launched);
                Ok(())
            }
            Err(e) => {
                self.launched = Some(launch::launch(&self.settings, old, self.display)?);
                Err(e)
            }
        }
    }
}

/// Runs the REPL until Ctrl-D or /quit.
pub fn chat(args: &AgentArgs) -> Result<(), String> {
    let settings = config_file::load(args, Keep::ByDefault)?;
    verbose::install(settings.verbose);
    let display = Display::for_stdout();
    let launched = launch::launch(&settings, settings.config.clone(), display)?;
    let mut repl = Repl {
        settings,
        launched: Some(launched),
        display,
    };
    let mut editor = DefaultEditor::new().map_err(|e| e.to_string())?;
    // After the editor: it sets its own SIGINT handler when created, which
    // this one replaces (at its prompt Ctrl-C is a key, not a signal).
    interrupt::install()?;
    let history = history_file();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    commands::banner(&repl);
    loop {
        let line = match editor.readline("> ") {
            Ok(line) => line,
            Err(ReadlineError::Interrupted) => continue,
            Err(ReadlineError::Eof) => break,
            Err(e) => return Err(e.to_string()),
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        remember(&mut editor, history.as_ref(), line);
        if line.starts_with('/') {
            match commands::run(&mut repl, line) {
                Ok(Flow::Quit) => break,
                Ok(Flow::Continue) => {}
                Err(e) => display.error(&e),
            }
            continue;
        }
        match repl.launched() {
            Ok(launched) => answer(launched, display, &mut editor, line),
            Err(e) => display.error(&e),
        }
    }
    Ok(())
}

/// Streams the reply to `line`; questions of the confirmation hook are
/// asked on the line editor (Ctrl-C there stops the reply).
fn answer(launched: &Launched, display: Display, editor: &mut DefaultEditor, line: &str) {
    let Launched { agent, questions } = launched;
    let handle = agent.chat(line, reply::options(display));
    let mut ask = |question: &str| match editor.readline(question) {
        Ok(answer) => Some(Answer::parse(&answer)),
        Err(ReadlineError::Interrupted) => None,
        Err(_) => Some(Answer::No),
    };
    match reply::wait(handle, questions.as_ref(), &mut ask) {
        Ok(response) if response.stop_reason == zoo_core::StopReason::Cancelled => {
            println!();
            display.note("[stopped]");
        }
        Ok(_) => println!(),
        Err(e) => {
            println!();
            display.error(&e.to_string());
        }
    }
}

/// Adds `line` to the history and writes the file at once, so that a
/// killed terminal loses nothing.
fn remember(editor: &mut DefaultEditor, file: Option<&PathBuf>, line: &str) {
    let _ = editor.add_history_entry(line);
    if let Some(path) = file {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(path);
    }
}

/// Where the line history is kept across runs.
fn history_file() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("zoo").join("history.txt"))
}
