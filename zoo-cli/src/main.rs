//! `zoo`: Zoo-Keeper's command line. `zoo run` answers one question for a
//! script, `zoo chat` is a REPL for people, `zoo models` and `zoo sessions`
//! list what there is. Every setting is a zoo-core config key, from a TOML
//! file or the flags; this binary only wires them to the engine.

mod args;
mod config_file;
mod listing;
mod repl;
mod run;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = args::Cli::parse();
    let result = match cli.command {
        args::Command::Run {
            question,
            json,
            agent,
        } => run::run(question, json, &agent),
        args::Command::Chat { agent } => repl::chat(&agent),
        args::Command::Models { dir } => listing::models(&dir),
        args::Command::Sessions { store } => listing::sessions(&store),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("zoo: {error}");
            ExitCode::FAILURE
        }
    }
}
