//! `zoo models` and `zoo sessions`: what there is.

use std::path::{Path, PathBuf};

use serde_json::Value;
use zoo_core::SessionStore;

use crate::config_file;

/// Prints each GGUF file found in ./models, the config's `model_path` and
/// `[cli] models_dir`, and `dirs`, with what its metadata says.
pub fn models(dirs: &[PathBuf], config: Option<&Path>) -> Result<(), String> {
    let mut keys = config_file::read_file(config)?;
    let cli = config_file::take_cli(&mut keys)?;
    let configured = keys
        .get("model_path")
        .and_then(Value::as_str)
        .map(PathBuf::from);
    let folders = std::iter::once(PathBuf::from("models"))
        .chain(cli.models_dir)
        .chain(dirs.iter().cloned());
    let mut found: Vec<PathBuf> = configured.iter().cloned().collect();
    for folder in folders {
        for file in gguf_files(&folder) {
            if !found.iter().any(|f| same_file(f, &file)) {
                found.push(file);
            }
        }
    }
    if found.is_empty() {
        println!("No GGUF files in ./models, the config's models_dir or the given folders.");
    }
    for path in found {
        let default = configured.as_ref().is_some_and(|c| same_file(c, &path));
        let mark = if default { "  (default)" } else { "" };
        println!("{}{mark}\n  {}", path.display(), describe(&path));
    }
    Ok(())
}

/// The `.gguf` files of a folder, sorted (none when it cannot be read).
fn gguf_files(folder: &Path) -> Vec<PathBuf> {
    let Ok(entries) = std::fs::read_dir(folder) else {
        return Vec::new();
    };
    let mut files: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
        .collect();
    files.sort();
    files
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => a == b,
    }
}

/// One line of metadata, read without loading the weights.
#[cfg(feature = "llama")]
fn describe(path: &Path) -> String {
    match zoo_core::Model::inspect(path) {
        Ok(m) => {
            let or = |v: Option<String>, d: &str| v.unwrap_or_else(|| d.to_owned());
            format!(
                "{}, {} {}, {}, {:.1} MB, trained context {}{}",
                or(m.name, "unnamed"),
                or(m.architecture, "unknown architecture"),
                m.size_label.unwrap_or_default(),
                or(m.quantization, "unknown quantization"),
                m.bytes as f64 / 1e6,
                m.trained_context
                    .map_or_else(|| "unknown".into(), |n| n.to_string()),
                if m.has_chat_template {
                    ", chat template"
                } else {
                    ", no chat template"
                }
            )
        }
        Err(e) => format!("does not load: {e}"),
    }
}

#[cfg(not(feature = "llama"))]
fn describe(_path: &Path) -> String {
    "(built without local models)".into()
}

/// Prints the sessions of `store` (else the config's `session_store`,
/// else the store `zoo chat` keeps by default), the latest first.
pub fn sessions(store: Option<&Path>, config: Option<&Path>) -> Result<(), String> {
    let keys = config_file::read_file(config)?;
    let path = match store {
        Some(path) => path.to_path_buf(),
        None => match keys.get("session_store").and_then(Value::as_str) {
            Some(path) => PathBuf::from(path),
            None => config_file::default_store().ok_or("no session store: give --store FILE")?,
        },
    };
    if !path.exists() {
        println!("No sessions ({} does not exist yet).", path.display());
        return Ok(());
    }
    print_sessions(&path)
}

/// Prints the sessions of the store at `path`, the latest first.
pub fn print_sessions(path: &Path) -> Result<(), String> {
    let store = SessionStore::open(path).map_err(|e| e.to_string())?;
    let sessions = store.sessions().map_err(|e| e.to_string())?;
    if sessions.is_empty() {
        println!("No sessions.");
    }
    for s in sessions {
        println!(
            "{}  {}  {} messages  {}",
            s.id,
            s.updated_at,
            s.message_count,
            s.title.as_deref().unwrap_or("")
        );
    }
    Ok(())
}
