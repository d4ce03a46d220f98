//! The agent's side of a session: opens the session the config names,
//! hands its conversation to the history, and writes what the history
//! committed each time it closes a round (see `agentic_loop::Checkpoint`),
//! after each chat and after each history change.

use std::collections::HashSet;
use std::fs::{File, TryLockError};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};

use parking_lot::Mutex;

use super::history::History;
use crate::backend::Backend;
use crate::config::Config;
use crate::error::{Error, Result};
use crate::provider::Provider;
use crate::session::{SessionData, SessionStore};

/// The sessions an agent of this process has open: a second agent on the
/// same session would interleave its writes with the first one's.
fn open_sessions() -> &'static Mutex<HashSet<(PathBuf, String)>> {
    static OPEN: OnceLock<Mutex<HashSet<(PathBuf, String)>>> = OnceLock::new();
    OPEN.get_or_init(Default::default)
}

/// An open session, held by one agent until it is dropped.
pub(crate) struct SessionLog {
    store: Arc<SessionStore>,
    id: String,
    /// The key in [`open_sessions`].
    key: (PathBuf, String),
    /// The session's lock file, locked while it is open (released with
    /// the file, or by the OS when the process dies).
    _lock: File,
}

impl SessionLog {
    /// Opens the config's `session` in its `session_store` (a new session
    /// when no id is given, or the id is new), or `None` without a store.
    pub(crate) fn open(config: &Config) -> Result<Option<(SessionLog, SessionData)>> {
        let Some(path) = &config.session_store else {
            return Ok(None);
        };
        let store = Arc::new(SessionStore::open(path)?);
        let id = store.open_session(config.session.as_deref(), model_label(config).as_deref())?;
        let key = (canonical(Path::new(path)), id.clone());
        let busy = || {
            Error::InvalidArgument(format!(
                "session `{id}` of `{path}` is open in another agent (of this process or \
                 another); close that agent first (two agents writing one session would mix \
                 their turns)"
            ))
        };
        // In this process first: a lock file's lock is per open file on
        // most systems, not on all.
        if !open_sessions().lock().insert(key.clone()) {
            return Err(busy());
        }
        let lock = match lock_session(&store.lock_path(&id)) {
            Ok(Some(lock)) => lock,
            // Held elsewhere (`Ok(None)`), or the lock file failed.
            other => {
                open_sessions().lock().remove(&key);
                return Err(other.err().unwrap_or_else(busy));
            }
        };
        let log = SessionLog {
            store,
            id,
            key,
            _lock: lock,
        };
        let data = log.store.load(&log.id)?;
        Ok(Some((log, data)))
    }

    /// The session's id.
    pub(crate) fn id(&self) -> &str {
        &self.id
    }

    /// Loads the session's KV snapshot into the backend, if it has one for
    /// this model; a snapshot that cannot be used only costs a decode.
    pub(crate) fn load_snapshot(&self, backend: &mut dyn Backend) {
        let path = self.store.snapshot_path(&self.id);
        match backend.load_snapshot(&path) {
            Ok(loaded) => tracing::debug!(session = %self.id, loaded, "KV snapshot"),
            Err(e) => tracing::warn!(session = %self.id, "KV snapshot not loaded: {e}"),
        }
    }

    /// Writes the backend's KV cache as the session's snapshot, for the
    /// next agent on this session.
    pub(crate) fn save_snapshot(&self, backend: &mut dyn Backend) {
        let path = self.store.snapshot_path(&self.id);
        let started = std::time::Instant::now();
        match backend.save_snapshot(&path) {
            Ok(bytes) => tracing::debug!(
                session = %self.id,
                bytes,
                ms = started.elapsed().as_millis() as u64,
                "KV snapshot saved"
            ),
            Err(e) => tracing::warn!(session = %self.id, "KV snapshot not saved: {e}"),
        }
    }

    /// Writes what the history holds that the session lacks, in one
    /// transaction; on failure the history keeps it for the next save.
    /// Nothing changed, nothing written: a chat's closing save after its
    /// last round was written costs no transaction.
    pub(crate) fn save(&self, history: &mut History) -> Result<()> {
        if !history.has_unsaved_changes() {
            return Ok(());
        }
        let unsaved = history.unsaved();
        self.store.write_tail(
            &self.id,
            unsaved.stale_from,
            &unsaved.messages,
            history.system_prompt(),
        )?;
        history.mark_saved();
        Ok(())
    }
}

impl Drop for SessionLog {
    fn drop(&mut self) {
        open_sessions().lock().remove(&self.key);
    }
}

/// Takes the OS lock on a session's lock file: the locked file, `None`
/// when another holder has it.
fn lock_session(path: &Path) -> Result<Option<File>> {
    let io = |e: std::io::Error| Error::Io(format!("session lock `{}`: {e}", path.display()));
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).map_err(io)?;
    }
    let file = File::options()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)
        .map_err(io)?;
    match file.try_lock() {
        Ok(()) => Ok(Some(file)),
        Err(TryLockError::WouldBlock) => Ok(None),
        Err(TryLockError::Error(e)) => Err(io(e)),
    }
}

/// The store's path as one key whatever way it was written.
fn canonical(path: &Path) -> PathBuf {
    path.canonicalize().unwrap_or_else(|_| path.to_path_buf())
}

/// What the session records as its model: the GGUF file's name, or the
/// provider's model.
fn model_label(config: &Config) -> Option<String> {
    if let Some(path) = &config.model_path {
        return Path::new(path)
            .file_name()
            .map(|name| name.to_string_lossy().into_owned());
    }
    match &config.provider {
        Some(Provider::OpenAi(openai)) => openai.model.clone(),
        Some(Provider::Anthropic(anthropic)) => Some(anthropic.model.clone()),
        Some(Provider::Gemini(gemini)) => Some(gemini.model.clone()),
        Some(provider) => Some(provider.type_name().to_owned()),
        None => None,
    }
}
