//! KV snapshots: the cache's state written to a file beside a session, so
//! that an agent reopened on the session decodes only what is new. A
//! snapshot is loaded only when its fingerprint (the model file, the
//! window, this build) matches and the file's checksum is the one written
//! with it (llama.cpp would load damaged state data as it is); anything
//! else falls back to decoding, and the tokens saved with the state make
//! the usual prefix check decide what is reused, so a snapshot never
//! changes what the model is given.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::UNIX_EPOCH;

use super::LlamaBackend;
use crate::error::{Error, Result};

/// The file holding the snapshot's fingerprint, beside the state.
fn fingerprint_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".fingerprint");
    PathBuf::from(name)
}

impl LlamaBackend<'_> {
    /// What must be equal for a snapshot to be loaded: the model file (path,
    /// size, modification time), the window and this build.
    fn fingerprint(&self) -> String {
        let path = &self.model.path;
        let meta = std::fs::metadata(path).ok();
        let size = meta.as_ref().map_or(0, std::fs::Metadata::len);
        let modified = meta
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |d| d.as_secs());
        format!(
            "zoo-core {} | model {path} | {size} bytes | modified {modified} | n_ctx {}",
            env!("CARGO_PKG_VERSION"),
            self.ctx.n_ctx()
        )
    }

    /// Writes the cache to `path` (through a temporary file, so a crash
    /// never leaves half a snapshot). Returns the bytes written, or `None`
    /// when the cache is empty (and an old snapshot is removed).
    pub fn save_snapshot(&mut self, path: &Path) -> Result<Option<u64>> {
        let io = |e: std::io::Error| Error::Io(format!("KV snapshot `{}`: {e}", path.display()));
        if self.cached.is_empty() {
            let _ = std::fs::remove_file(path);
            return Ok(None);
        }
        if let Some(dir) = path.parent() {
            std::fs::create_dir_all(dir).map_err(io)?;
        }
        let mut temporary = path.as_os_str().to_owned();
        temporary.push(".tmp");
        let temporary = PathBuf::from(temporary);
        let written = self
            .ctx
            .state_seq_save_file(&temporary, 0, &self.cached)
            .map_err(|e| Error::Io(format!("KV snapshot `{}`: {e}", path.display())))?;
        let checksum = checksum_of(&temporary).map_err(io)?;
        // The fingerprint first: a crash between the two leaves a snapshot
        // whose checksum does not match, which is decoded again.
        let fingerprint = format!("{} | crc32 {checksum:08x}", self.fingerprint());
        std::fs::write(fingerprint_path(path), fingerprint).map_err(io)?;
        std::fs::rename(&temporary, path).map_err(io)?;
        Ok(Some(written as u64))
    }

    /// Loads the snapshot at `path` if there is one for this model and
    /// window; returns whether it was loaded. A snapshot that does not load
    /// leaves the cache empty: the next reply decodes its whole prompt.
    pub fn load_snapshot(&mut self, path: &Path) -> Result<bool> {
        let Ok(fingerprint) = std::fs::read_to_string(fingerprint_path(path)) else {
            return Ok(false);
        };
        let Some((fingerprint, checksum)) = fingerprint.rsplit_once(" | crc32 ") else {
            tracing::debug!(path = %path.display(), "KV snapshot without a checksum; decoding instead");
            return Ok(false);
        };
        if fingerprint != self.fingerprint() || !path.exists() {
            tracing::debug!(path = %path.display(), "KV snapshot of another model or window; decoding instead");
            return Ok(false);
        }
        match checksum_of(path) {
            Ok(actual) if format!("{actual:08x}") == checksum => {}
            Ok(_) => {
                tracing::warn!(path = %path.display(), "KV snapshot damaged (checksum mismatch); decoding instead");
                return Ok(false);
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), "KV snapshot unreadable ({e}); decoding instead");
                return Ok(false);
            }
        }
        self.clear_cache();
        let capacity = self.ctx.n_ctx() as usize;
        match self.ctx.state_seq_load_file(path, 0, capacity) {
            Ok((tokens, bytes)) => {
                tracing::debug!(tokens = tokens.len(), bytes, "KV snapshot loaded");
                self.cached = tokens;
                Ok(true)
            }
            Err(e) => {
                tracing::warn!(path = %path.display(), "KV snapshot not loaded ({e}); decoding instead");
                self.clear_cache();
                Ok(false)
            }
        }
    }
}

/// The CRC-32 of a file's bytes, read in large chunks.
fn checksum_of(path: &Path) -> std::io::Result<u32> {
    let mut file = std::fs::File::open(path)?;
    let mut hasher = crc32fast::Hasher::new();
    let mut buffer = vec![0u8; 1 << 20];
    loop {
        let read = file.read(&mut buffer)?;
        if read == 0 {
            return Ok(hasher.finalize());
        }
        hasher.update(&buffer[..read]);
    }
}
