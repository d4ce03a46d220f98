//! The store's WAL checkpoints, on a thread of their own. A checkpoint
//! copies the write-ahead log into the database file and syncs it (a few
//! milliseconds on a VM's disk); run inside a commit, as SQLite does by
//! default, it lands on whichever chat's round happens to cross the
//! threshold. SQLite's documentation suggests this arrangement: automatic
//! checkpoints off on the writing connection, a passive checkpoint run by
//! another, which never blocks the writer.

use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::mpsc::{sync_channel, SyncSender, TrySendError};
use std::thread::JoinHandle;

use rusqlite::Connection;

/// A checkpoint after this many commits: with a few pages a round, the log
/// stays near SQLite's default of 1,000 pages.
const COMMITS_PER_CHECKPOINT: u32 = 200;

/// The checkpointing thread of one store, with its own connection; it
/// ends, after a last checkpoint, when the store is dropped.
pub(super) struct Checkpointer {
    wake: Option<SyncSender<()>>,
    commits: AtomicU32,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    /// Starts the thread on `conn`, a connection of its own to the store.
    pub(super) fn start(conn: Connection, path: &Path) -> std::io::Result<Checkpointer> {
        // One pending wake is enough: a checkpoint takes in every commit
        // before it.
        let (wake, woken) = sync_channel::<()>(1);
        let label = path.display().to_string();
        let thread = std::thread::Builder::new()
            .name("zoo-checkpoint".into())
            .spawn(move || {
                while woken.recv().is_ok() {
                    checkpoint(&conn, &label);
                }
                checkpoint(&conn, &label);
            })?;
        Ok(Checkpointer {
            wake: Some(wake),
            commits: AtomicU32::new(0),
            thread: Some(thread),
        })
    }

    /// Counts a commit of the writing connection; every
    /// [`COMMITS_PER_CHECKPOINT`]th wakes the thread, without waiting.
    pub(super) fn committed(&self) {
        let n = self.commits.fetch_add(1, Ordering::Relaxed) + 1;
        if n.is_multiple_of(COMMITS_PER_CHECKPOINT) {
            if let Some(wake) = &self.wake {
                // Full: a checkpoint is already due, and will take this
                // commit in too.
                if let Err(TrySendError::Disconnected(())) = wake.try_send(()) {
                    tracing::warn!("the session store's checkpoint thread has ended");
                }
            }
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        // Closing the channel ends the thread's loop.
        self.wake = None;
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// A passive checkpoint: copies what no reader still needs, never waits.
fn checkpoint(conn: &Connection, label: &str) {
    let done = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
        Ok((row.get::<_, i64>(1)?, row.get::<_, i64>(2)?))
    });
    match done {
        Ok((log, copied)) => tracing::trace!(store = label, log, copied, "WAL checkpoint"),
        Err(e) => tracing::warn!(store = label, "WAL checkpoint failed: {e}"),
    }
}
