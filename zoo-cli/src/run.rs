//! `zoo run`: one answer on stdout, for scripts.

use std::io::{BufRead, IsTerminal, Read, Write};

use zoo_core::ChatOptions;

use crate::args::AgentArgs;
use crate::config_file::{self, Keep};
use crate::confirm::Answer;
use crate::display::Display;
use crate::{interrupt, launch, reply, verbose};

/// Answers `question` (or standard input) and prints the text, or the whole
/// response as JSON.
pub fn run(question: Option<String>, json: bool, args: &AgentArgs) -> Result<(), String> {
    let question = match question {
        Some(q) => q,
        None => {
            let mut text = String::new();
            std::io::stdin()
                .read_to_string(&mut text)
                .map_err(|e| format!("reading the question from standard input: {e}"))?;
            text
        }
    };
    if question.trim().is_empty() {
        return Err("no question: give one as an argument or on standard input".into());
    }
    interrupt::install()?;
    let settings = config_file::load(args, Keep::WhenAsked)?;
    verbose::install(settings.verbose);
    let display = Display::for_stdout();
    let launched = launch::launch(&settings, settings.config.clone(), display)?;
    // Scripts read stdout: the answer only, tool calls not shown.
    let handle = launched.agent.chat(question.trim(), ChatOptions::new());
    let response = reply::wait(handle, launched.questions.as_ref(), &mut ask_on_stdin)
        .map_err(|e| e.to_string())?;
    if json {
        println!(
            "{}",
            serde_json::to_string(&response).map_err(|e| e.to_string())?
        );
    } else {
        println!("{}", response.text);
    }
    Ok(())
}

/// Asks on stderr and reads the answer from stdin (a terminal: the hook
/// refuses without asking otherwise).
fn ask_on_stdin(question: &str) -> Option<Answer> {
    if !std::io::stdin().is_terminal() {
        return Some(Answer::No);
    }
    eprint!("{question}");
    let _ = std::io::stderr().flush();
    let mut line = String::new();
    match std::io::stdin().lock().read_line(&mut line) {
        Ok(0) | Err(_) => None,
        Ok(_) => Some(Answer::parse(&line)),
    }
}
