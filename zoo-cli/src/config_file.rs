//! The settings of one `zoo` command: the TOML file's keys, then the flags
//! on top.
//!
//! The file holds zoo-core config keys as they are everywhere
//! (`model_path`, `temperature`, `[provider]`, `skills`, `[builtin_tools]`,
//! ...), read by `zoo_core::Config::from_json` so errors name the key, plus
//! what only the command line has:
//! - `[cli]`: `confirm` (the tools asked about before they run; default
//!   `write_file`, `edit_file`, `bash`), `allow_tools` (run those without a
//!   terminal to ask on), `models_dir` (folders `zoo models` looks in),
//!   `mcp_config` (a Claude Desktop style JSON file of MCP servers);
//! - `[mcpServers.NAME]`: MCP servers in the `mcpServers` shape of Claude
//!   Desktop and other MCP hosts (`command`, `args`, `env`, or `url`).

use std::path::{Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Map, Value};
use zoo_core::{Config, McpTransport, SessionStore};

use crate::args::{AgentArgs, Backend};

/// The tools asked about before they run, unless the file says otherwise.
const CONFIRM_BY_DEFAULT: [&str; 3] = ["write_file", "edit_file", "bash"];

/// What only the command line has (`[cli]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CliSettings {
    /// Tool names asked about on the terminal before they run.
    pub confirm: Vec<String>,
    /// Run those tools without asking when there is no terminal.
    pub allow_tools: bool,
    /// More folders `zoo models` looks in.
    pub models_dir: Vec<PathBuf>,
    /// A JSON file of MCP servers in the `mcpServers` shape.
    pub mcp_config: Option<PathBuf>,
}

impl Default for CliSettings {
    fn default() -> Self {
        CliSettings {
            confirm: CONFIRM_BY_DEFAULT.map(String::from).to_vec(),
            allow_tools: false,
            models_dir: Vec::new(),
            mcp_config: None,
        }
    }
}

/// What a command runs with.
pub struct Settings {
    /// The agent's config.
    pub config: Config,
    /// The command line's own settings.
    pub cli: CliSettings,
    /// MCP servers to add, by name.
    pub mcp_servers: Vec<(String, McpTransport)>,
    /// Show the prompt as rendered and the raw output.
    pub verbose: bool,
}

/// Whether conversations are kept when nothing names a store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Keep {
    /// `zoo chat`: in the store of the user's data folder.
    ByDefault,
    /// `zoo run`: only in a store the config or the flags name.
    WhenAsked,
}

/// The settings for `args`.
pub fn load(args: &AgentArgs, keep: Keep) -> Result<Settings, String> {
    let mut keys = read_file(args.config.as_deref())?;
    let mut cli = take_cli(&mut keys)?;
    cli.allow_tools |= args.allow_tools;
    let mut mcp_servers = take_mcp_servers(&mut keys, "the config file")?;
    if let Some(path) = args.mcp_config.as_ref().or(cli.mcp_config.as_ref()) {
        mcp_servers.extend(read_hosts_file(path)?);
    }
    apply_flags(&mut keys, args);
    apply_tools(&mut keys, args)?;
    if keep == Keep::ByDefault && !keys.contains_key("session_store") {
        if let Some(store) = default_store() {
            keys.insert("session_store".into(), json!(store));
        }
    }
    if args.resume {
        resume_latest(&mut keys)?;
    }
    let config = Config::from_json(&Value::Object(keys).to_string()).map_err(|e| e.to_string())?;
    Ok(Settings {
        config,
        cli,
        mcp_servers,
        verbose: args.verbose,
    })
}

/// The config keys of `--config` or the user's default file (none when it
/// does not exist).
pub fn read_file(config: Option<&Path>) -> Result<Map<String, Value>, String> {
    match config.map(Path::to_path_buf).or_else(default_file) {
        Some(path) => read(&path),
        None => Ok(Map::new()),
    }
}

/// `[cli]` of a file's keys, taken out of them.
pub fn take_cli(keys: &mut Map<String, Value>) -> Result<CliSettings, String> {
    match keys.remove("cli") {
        Some(table) => serde_json::from_value(table).map_err(|e| format!("[cli]: {e}")),
        None => Ok(CliSettings::default()),
    }
}

/// The user's config file, when it exists: zoo/config.toml in the
/// platform's config folder.
fn default_file() -> Option<PathBuf> {
    dirs::config_dir()
        .map(|dir| dir.join("zoo").join("config.toml"))
        .filter(|p| p.is_file())
}

/// The session store `zoo chat` keeps conversations in when none is named.
pub fn default_store() -> Option<PathBuf> {
    dirs::data_dir().map(|dir| dir.join("zoo").join("sessions.db"))
}

fn read(path: &Path) -> Result<Map<String, Value>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let table: toml::Table =
        toml::from_str(&text).map_err(|e| format!("{}: {e}", path.display()))?;
    match serde_json::to_value(table).map_err(|e| e.to_string())? {
        Value::Object(map) => Ok(map),
        _ => Err(format!("{}: not a table of config keys", path.display())),
    }
}

fn take_mcp_servers(
    keys: &mut Map<String, Value>,
    source: &str,
) -> Result<Vec<(String, McpTransport)>, String> {
    match keys.remove("mcpServers") {
        Some(servers) => {
            zoo_core::mcp::servers_from_hosts_file(&servers).map_err(|e| format!("{source}: {e}"))
        }
        None => Ok(Vec::new()),
    }
}

/// The servers of a Claude Desktop style JSON file.
fn read_hosts_file(path: &Path) -> Result<Vec<(String, McpTransport)>, String> {
    let shown = path.display();
    let text = std::fs::read_to_string(path).map_err(|e| format!("{shown}: {e}"))?;
    let value: Value = serde_json::from_str(&text).map_err(|e| format!("{shown}: {e}"))?;
    zoo_core::mcp::servers_from_hosts_file(&value).map_err(|e| format!("{shown}: {e}"))
}

fn apply_flags(keys: &mut Map<String, Value>, args: &AgentArgs) {
    if let Some(kind) = args.backend.and_then(Backend::provider_type) {
        keys.remove("model_path");
        let mut provider = json!({"type": kind});
        if let Some(url) = &args.base_url {
            provider["base_url"] = json!(url);
        }
        if let Some(var) = &args.api_key_env {
            provider["api_key_env"] = json!(var);
        }
        if let Some(model) = &args.model {
            provider["model"] = json!(model);
        }
        keys.insert("provider".into(), provider);
    } else if let Some(model) = &args.model {
        keys.remove("provider");
        keys.insert("model_path".into(), json!(model));
    }
    let flags = [
        ("system_prompt", args.system.as_ref().map(|s| json!(s))),
        ("temperature", args.temperature.map(|t| json!(t))),
        ("max_tokens", args.max_tokens.map(|n| json!(n))),
        ("session_store", args.store.as_ref().map(|s| json!(s))),
        ("session", args.session.as_ref().map(|s| json!(s))),
    ];
    for (key, value) in flags {
        if let Some(value) = value {
            keys.insert(key.into(), value);
        }
    }
}

/// `--tools` and `--workspace` into the `builtin_tools` key.
fn apply_tools(keys: &mut Map<String, Value>, args: &AgentArgs) -> Result<(), String> {
    if args.tools.is_empty() && args.workspace.is_none() {
        return Ok(());
    }
    let mut builtin = match keys.remove("builtin_tools") {
        Some(Value::Object(table)) => table,
        Some(_) => return Err("`builtin_tools` must be a table".into()),
        None => Map::new(),
    };
    if !args.tools.is_empty() {
        let names: Vec<&str> = if args.tools.iter().any(|t| t == "all") {
            zoo_core::tools::builtin::BUILTIN_TOOL_NAMES.to_vec()
        } else {
            args.tools.iter().map(String::as_str).collect()
        };
        builtin.insert("tools".into(), json!(names));
    }
    let workspace = match &args.workspace {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().map_err(|e| format!("the current folder: {e}"))?,
    };
    if args.workspace.is_some() || !builtin.contains_key("workspace") {
        builtin.insert("workspace".into(), json!(workspace));
    }
    keys.insert("builtin_tools".into(), Value::Object(builtin));
    Ok(())
}

/// `--resume`: the store's latest session, or a new one when it has none.
fn resume_latest(keys: &mut Map<String, Value>) -> Result<(), String> {
    let Some(Value::String(path)) = keys.get("session_store") else {
        return Err("--resume needs a session store (--store FILE or `session_store`)".into());
    };
    let store = SessionStore::open(path).map_err(|e| e.to_string())?;
    let sessions = store.sessions().map_err(|e| e.to_string())?;
    if let Some(latest) = sessions.first() {
        keys.insert("session".into(), json!(latest.id));
    }
    Ok(())
}
