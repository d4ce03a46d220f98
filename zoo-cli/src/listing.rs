//! `zoo models` and `zoo sessions`: what there is.

use std::path::{Path, PathBuf};

use zoo_core::SessionStore;

/// Prints each GGUF file found in ./models and `dirs`, with its size and,
/// when it loads, its architecture and name.
pub fn models(dirs: &[PathBuf]) -> Result<(), String> {
    let mut found = Vec::new();
    for dir in std::iter::once(Path::new("models")).chain(dirs.iter().map(PathBuf::as_path)) {
        let Ok(entries) = std::fs::read_dir(dir) else {
            continue;
        };
        let mut files: Vec<PathBuf> = entries
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "gguf"))
            .collect();
        files.sort();
        found.extend(files);
    }
    if found.is_empty() {
        println!("No GGUF files in ./models or the given folders.");
    }
    for path in found {
        let size = std::fs::metadata(&path).map_or(0, |m| m.len());
        println!(
            "{}  {:.1} MB  {}",
            path.display(),
            size as f64 / 1e6,
            describe(&path)
        );
    }
    Ok(())
}

#[cfg(feature = "llama")]
fn describe(path: &Path) -> String {
    match zoo_core::Model::load(path, zoo_core::ModelParams::default()) {
        Ok(model) => {
            let meta = model.metadata();
            format!(
                "{} ({})",
                meta.name.as_deref().unwrap_or("unnamed"),
                meta.architecture
                    .as_deref()
                    .unwrap_or("unknown architecture")
            )
        }
        Err(e) => format!("does not load: {e}"),
    }
}

#[cfg(not(feature = "llama"))]
fn describe(_path: &Path) -> String {
    "(built without local models)".into()
}

/// Prints the sessions of `store`, the most recently updated first.
pub fn sessions(store: &Path) -> Result<(), String> {
    let store = SessionStore::open(store).map_err(|e| e.to_string())?;
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
