//! `zoo chat`: a REPL. Replies stream as they are generated; tool calls
//! and their results show on their own lines; Ctrl-D or /quit leaves.

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

use rustyline::error::ReadlineError;
use rustyline::DefaultEditor;
use zoo_core::{Agent, ChatOptions, EventKind};

use crate::args::AgentArgs;
use crate::config_file;

const HELP: &str = "/help  this list\n/clear  forget the conversation\n/system TEXT  set the system prompt\n/tools  the tools the model has\n/quit  leave (or Ctrl-D)";

/// Runs the REPL until Ctrl-D or /quit.
pub fn chat(args: &AgentArgs) -> Result<(), String> {
    let agent = Agent::create(config_file::load(args)?).map_err(|e| e.to_string())?;
    let mut editor = DefaultEditor::new().map_err(|e| e.to_string())?;
    let history = history_file();
    if let Some(path) = &history {
        let _ = editor.load_history(path);
    }
    let color = std::io::stdout().is_terminal();
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
        let _ = editor.add_history_entry(line);
        if line.starts_with('/') {
            if !command(&agent, line)? {
                break;
            }
            continue;
        }
        reply(&agent, line, color);
    }
    if let Some(path) = &history {
        if let Some(dir) = path.parent() {
            let _ = std::fs::create_dir_all(dir);
        }
        let _ = editor.save_history(path);
    }
    Ok(())
}

/// Runs a slash command; false to leave.
fn command(agent: &Agent, line: &str) -> Result<bool, String> {
    let (name, rest) = line.split_once(' ').unwrap_or((line, ""));
    match name {
        "/quit" | "/exit" => return Ok(false),
        "/help" => println!("{HELP}"),
        "/clear" => agent.clear_history().map_err(|e| e.to_string())?,
        "/system" => agent
            .set_system_prompt((!rest.trim().is_empty()).then(|| rest.trim().to_owned()))
            .map_err(|e| e.to_string())?,
        "/tools" => {
            for tool in agent.tools() {
                println!("{}  {}", tool.name, tool.description);
            }
        }
        other => println!("unknown command {other}; /help lists them"),
    }
    Ok(true)
}

/// Streams the reply to `line`, tool calls on their own lines.
fn reply(agent: &Agent, line: &str, color: bool) {
    let (dim, reset) = if color {
        ("\x1b[2m", "\x1b[0m")
    } else {
        ("", "")
    };
    let options = ChatOptions::new()
        .on_token(|token| {
            print!("{token}");
            let _ = std::io::stdout().flush();
        })
        .on_event(move |event| match &event.kind {
            EventKind::ToolCallStarted {
                name, arguments, ..
            } => {
                println!("\n{dim}[tool] {name} {arguments}{reset}");
            }
            EventKind::ToolCallFinished {
                name,
                result,
                error,
                ..
            } => match (result, error) {
                (_, Some(error)) => println!("{dim}[tool] {name} failed: {error}{reset}"),
                (Some(result), _) => println!("{dim}[tool] {name} -> {result}{reset}"),
                _ => {}
            },
            _ => {}
        });
    match agent.chat(line, options).wait() {
        Ok(_) => println!(),
        Err(e) => println!("\n[error] {e}"),
    }
}

/// Where the line history is kept across runs.
fn history_file() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_DATA_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/share")))?;
    Some(base.join("zoo").join("history.txt"))
}
