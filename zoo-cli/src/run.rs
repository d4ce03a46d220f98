//! `zoo run`: one answer on stdout, for scripts.

use std::io::Read;

use zoo_core::{Agent, ChatOptions};

use crate::args::AgentArgs;
use crate::config_file;

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
    let agent = Agent::create(config_file::load(args)?).map_err(|e| e.to_string())?;
    let response = agent
        .chat(question.trim(), ChatOptions::new())
        .wait()
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
