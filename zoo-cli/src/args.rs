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
    /// List the GGUF models found (./models, the config's `model_path` and
    /// `[cli] models_dir`, and the given folders) with their metadata.
    Models {
        /// More folders to look in.
        #[arg(long)]
        dir: Vec<PathBuf>,
        /// A TOML config file (default: the user's, when it exists).
        #[arg(long)]
        config: Option<PathBuf>,
    },
    /// List the sessions of a session store, the latest first.
    Sessions {
        /// The SQLite file (default: the config's `session_store`, else the
        /// one `zoo chat` keeps in the user's data folder).
        #[arg(long)]
        store: Option<PathBuf>,
        /// A TOML config file (default: the user's, when it exists).
        #[arg(long)]
        config: Option<PathBuf>,
    },
}

/// Where the model runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Backend {
    /// A GGUF file in this process (`--model PATH`).
    Local,
    /// An OpenAI-compatible server (`--base-url`, `--model NAME`).
    Openai,
    /// Anthropic's Messages API (`--model NAME`, `--api-key-env`).
    Anthropic,
    /// Google's Gemini API (`--model NAME`, `--api-key-env`).
    Gemini,
}

impl Backend {
    /// The provider's `type` in the config, for a remote backend.
    pub fn provider_type(self) -> Option<&'static str> {
        match self {
            Backend::Local => None,
            Backend::Openai => Some("openai"),
            Backend::Anthropic => Some("anthropic"),
            Backend::Gemini => Some("gemini"),
        }
    }
}

/// The agent's settings; each flag overrides the config file's key.
#[derive(Debug, Clone, Default, Args)]
pub struct AgentArgs {
    /// A TOML file of config keys (default: zoo/config.toml in the
    /// platform's config folder, e.g. ~/.config/zoo/config.toml, when it
    /// exists).
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Local or remote.
    #[arg(long, value_enum)]
    pub backend: Option<Backend>,
    /// The GGUF file (local) or the model's name (remote).
    #[arg(long)]
    pub model: Option<String>,
    /// The server's base URL (remote; each provider has a default but openai).
    #[arg(long)]
    pub base_url: Option<String>,
    /// The environment variable holding the API key (remote).
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
    /// The session store (an SQLite file) to keep conversations in.
    #[arg(long)]
    pub store: Option<String>,
    /// The session to continue (or to start, under this id).
    #[arg(long, conflicts_with = "resume")]
    pub session: Option<String>,
    /// Continue the latest session of the store.
    #[arg(long)]
    pub resume: bool,
    /// Built-in tools to give the model: names separated by commas
    /// (read_file, write_file, edit_file, list_files, search, bash) or `all`.
    #[arg(long, value_delimiter = ',')]
    pub tools: Vec<String>,
    /// The folder the built-in tools are confined to (default: the current
    /// folder).
    #[arg(long)]
    pub workspace: Option<PathBuf>,
    /// Run tools that need confirmation without asking when there is no
    /// terminal to ask on (otherwise they are refused).
    #[arg(long)]
    pub allow_tools: bool,
    /// MCP servers from a JSON file in the `mcpServers` shape of Claude
    /// Desktop and other MCP hosts.
    #[arg(long)]
    pub mcp_config: Option<PathBuf>,
    /// Show the prompt as rendered and the raw model output (on stderr).
    #[arg(long, short)]
    pub verbose: bool,
}
