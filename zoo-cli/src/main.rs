//! `zoo`: Zoo-Keeper's command line. `zoo run` answers one question for a
//! script, `zoo chat` is a REPL for people, `zoo models` and `zoo sessions`
//! list what there is. Every agent setting is a zoo-core config key, from a
//! TOML file or the flags; this binary only wires them to the engine and
//! the terminal.

mod args;
mod commands;
mod config_file;
mod confirm;
mod display;
mod interrupt;
mod launch;
mod listing;
mod repl;
mod reply;
mod run;
mod verbose;

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
        args::Command::Models { dir, config } => listing::models(&dir, config.as_deref()),
        args::Command::Sessions { store, config } => {
            listing::sessions(store.as_deref(), config.as_deref())
        }
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            eprintln!("zoo: {error}");
            ExitCode::FAILURE
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory;

    #[test]
    fn the_command_line_is_well_formed() {
        crate::args::Cli::command().debug_assert();
    }
}
