//! The agent's config: the TOML file's keys (the same keys as everywhere,
//! e.g. `model_path`, `temperature`, `[provider]`), then the flags on top,
//! read by `zoo_core::Config::from_json` so errors name the key.

use std::path::{Path, PathBuf};

use serde_json::{json, Map, Value};
use zoo_core::Config;

use crate::args::{AgentArgs, Backend};

/// The config for `args`.
pub fn load(args: &AgentArgs) -> Result<Config, String> {
    let mut keys = match file(args)? {
        Some(path) => read(&path)?,
        None => Map::new(),
    };
    apply_flags(&mut keys, args);
    Config::from_json(&Value::Object(keys).to_string()).map_err(|e| e.to_string())
}

/// The file named by `--config`, or the user's default one if it exists.
fn file(args: &AgentArgs) -> Result<Option<PathBuf>, String> {
    if let Some(path) = &args.config {
        return Ok(Some(path.clone()));
    }
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")));
    Ok(base
        .map(|b| b.join("zoo").join("config.toml"))
        .filter(|p| p.is_file()))
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

fn apply_flags(keys: &mut Map<String, Value>, args: &AgentArgs) {
    let remote = args.backend == Some(Backend::Openai);
    if remote {
        keys.remove("model_path");
        let mut provider = json!({"type": "openai"});
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
