//! Ctrl-C: during a reply it stops the reply (the program goes on); at
//! any other time it ends the program, as usual. At the REPL's prompt the
//! terminal is in raw mode and Ctrl-C reaches the line editor as a key
//! instead of a signal.

use std::sync::atomic::{AtomicBool, Ordering};

static IN_CHAT: AtomicBool = AtomicBool::new(false);
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Installs the SIGINT handler (once per process).
pub fn install() -> Result<(), String> {
    ctrlc::set_handler(|| {
        if IN_CHAT.load(Ordering::SeqCst) {
            INTERRUPTED.store(true, Ordering::SeqCst);
        } else {
            // 128 + SIGINT, what a shell reports for a program Ctrl-C ended.
            std::process::exit(130);
        }
    })
    .map_err(|e| format!("cannot handle Ctrl-C: {e}"))
}

/// Marks a reply in flight until dropped: Ctrl-C then asks to stop it.
pub struct InChat;

impl InChat {
    /// Starts the reply's span.
    pub fn begin() -> InChat {
        INTERRUPTED.store(false, Ordering::SeqCst);
        IN_CHAT.store(true, Ordering::SeqCst);
        InChat
    }

    /// Whether Ctrl-C was pressed since the last call (it is consumed).
    pub fn interrupted(&self) -> bool {
        INTERRUPTED.swap(false, Ordering::SeqCst)
    }
}

impl Drop for InChat {
    fn drop(&mut self) {
        IN_CHAT.store(false, Ordering::SeqCst);
    }
}
