//! The command line's shape (clap).

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

/// Local tool-using LLM agents on llama.cpp.
#[derive(Debug, Parser)]
#[command(name = "zoo", version, about)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Answer one question (the argument, or standard input) on stdout.
    Run {
        /// The question; read from standard input when absent.
        question: Option<String>,
        /// Print the whole response as JSON.
        #[arg(long)]
        json: bool,
        /// The agent.
        #[command(flatten)]
        agent: AgentArgs,
    },
    /// Chat in a REPL (/help lists its commands).
    Chat {
        /// The agent.
        #[command(flatten)]
        agent: AgentArgs,
    },
    /// List the GGUF models found (./models and the given folders).
    Models {
        /// More folders to look in.
        #[arg(long)]
        dir: Vec<PathBuf>,
    },
    /// List the sessions of a session store.
    Sessions {
        /// The SQLite file.
        #[arg(long)]
        store: PathBuf,
    },
}

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// A GGUF file in this process (`--model PATH`).
    Local,
    /// An OpenAI-compatible server (`--base-url`, `--model NAME`).
    Openai,
}

/// The agent's settings; each flag overrides the config file's key.
#[derive(Debug, Clone, Args)]
pub struct AgentArgs {
    /// A TOML file of config keys (default: $XDG_CONFIG_HOME/zoo/config.toml
    /// or ~/.config/zoo/config.toml, when it exists).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Local or remote.
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// The GGUF file (local) or the model's name (openai).
    #[arg(long)]
    pub model: Option<String>,
    /// The server's base URL (openai).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (openai).
    #[arg(long)]
    pub api_key_env: Option<String>,
    /// The system prompt.
    #[arg(long)]
    pub system: Option<String>,
    /// Sampling temperature (0 is greedy).
    #[arg(long)]
    pub temperature: Option<f32>,
    /// Tokens per reply at most.
    #[arg(long)]
    pub max_tokens: Option<u32>,
    /// The session store (an SQLite file) to keep the conversation in.
    #[arg(long)]
    pub store: Option<String>,
    /// The session to continue (needs --store).
    #[arg(long)]
    pub session: Option<String>,
}
