//! The response router: every request in flight has a slot keyed by its id;
//! whatever reads the transport hands each message here, and responses go
//! to their slot while notifications and server requests go to a handler.
//! It is what lets several requests share one connection at once.

use std::collections::HashMap;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Arc;

use parking_lot::Mutex;
use serde_json::Value;

use super::jsonrpc::{classify, Incoming};
use crate::error::{Error, Result};

/// Receives notifications and server requests (never responses).
pub(crate) type Handler = Arc<dyn Fn(Incoming) + Send + Sync>;
/// Told, once, that the server went away by itself, with the reason.
pub(crate) type LostHandler = Arc<dyn Fn(&str) + Send + Sync>;

#[derive(Default)]
struct State {
    pending: HashMap<u64, SyncSender<Result<Value>>>,
    /// Why the connection is gone, once it is.
    closed: Option<String>,
    /// Set when it went because the server ended it (exited, closed a
    /// pipe), rather than because this side closed it.
    lost: bool,
}

/// Routes one connection's incoming messages.
pub(crate) struct Router {
    server: String,
    state: Mutex<State>,
    handler: Mutex<Option<Handler>>,
    on_lost: Mutex<Option<LostHandler>>,
}

impl Router {
    /// A router for the server called `server` (named in its errors).
    pub(crate) fn new(server: &str) -> Arc<Self> {
        Arc::new(Router {
            server: server.to_string(),
            state: Mutex::new(State::default()),
            handler: Mutex::new(None),
            on_lost: Mutex::new(None),
        })
    }

    /// Sets what learns that the server went away by itself.
    pub(crate) fn set_on_lost(&self, handler: LostHandler) {
        *self.on_lost.lock() = Some(handler);
    }

    /// Sets where notifications and server requests go.
    pub(crate) fn set_handler(&self, handler: Handler) {
        *self.handler.lock() = Some(handler);
    }

    /// Opens a slot for the response to request `id`; fails at once if the
    /// connection is already gone.
    pub(crate) fn expect(&self, id: u64) -> Result<Receiver<Result<Value>>> {
        let mut state = self.state.lock();
        if let Some(reason) = &state.closed {
            return Err(Error::mcp(&self.server, reason.clone()));
        }
        // One message fits, so a late response never blocks the reader.
        let (tx, rx) = sync_channel(1);
        state.pending.insert(id, tx);
        Ok(rx)
    }

    /// Drops the slot of a request that was abandoned (timed out or never sent).
    pub(crate) fn forget(&self, id: u64) {
        self.state.lock().pending.remove(&id);
    }

    /// Why the connection is gone, if it is.
    pub(crate) fn closed_reason(&self) -> Option<String> {
        self.state.lock().closed.clone()
    }

    /// Why the server went away by itself, if it did.
    pub(crate) fn lost_reason(&self) -> Option<String> {
        let state = self.state.lock();
        state.lost.then(|| state.closed.clone()).flatten()
    }

    /// Handles one line or body of text from the server.
    pub(crate) fn deliver_text(&self, text: &str) {
        match serde_json::from_str::<Value>(text) {
            Ok(value) => self.deliver(value),
            Err(e) => self.malformed(format!(
                "the server sent text that is not JSON ({e}): {}",
                excerpt(text)
            )),
        }
    }

    /// Handles one parsed message, or a batch of them.
    pub(crate) fn deliver(&self, message: Value) {
        match message {
            Value::Array(batch) => batch.into_iter().for_each(|m| self.deliver_one(m)),
            single => self.deliver_one(single),
        }
    }

    fn deliver_one(&self, message: Value) {
        match classify(message) {
            Incoming::Response { id, outcome } => {
                let slot = as_request_id(&id).and_then(|n| self.state.lock().pending.remove(&n));
                match slot {
                    Some(slot) => {
                        let outcome = outcome.map_err(|e| Error::Mcp {
                            server: self.server.clone(),
                            rpc_code: Some(e.code),
                            message: e.describe(),
                        });
                        let _ = slot.try_send(outcome);
                    }
                    // A request we gave up on (timed out) can still be
                    // answered; that is harmless.
                    None => tracing::debug!(
                        target: "zoo_core::mcp",
                        server = %self.server,
                        "response to unknown or abandoned request id {id}"
                    ),
                }
            }
            Incoming::Invalid {
                id: Some(id),
                reason,
            } if as_request_id(&id).is_some_and(|n| self.state.lock().pending.contains_key(&n)) => {
                self.fail(
                    as_request_id(&id).unwrap_or_default(),
                    format!("the server sent a malformed response: {reason}"),
                );
            }
            Incoming::Invalid { reason, .. } => {
                self.malformed(format!("the server sent a malformed message: {reason}"))
            }
            other => {
                let handler = self.handler.lock().clone();
                match handler {
                    Some(handler) => handler(other),
                    None => tracing::debug!(
                        target: "zoo_core::mcp",
                        server = %self.server,
                        "message before the session was ready: {other:?}"
                    ),
                }
            }
        }
    }

    fn fail(&self, id: u64, reason: String) {
        if let Some(slot) = self.state.lock().pending.remove(&id) {
            let _ = slot.try_send(Err(Error::mcp(&self.server, reason)));
        }
    }

    /// Garbage that names no request (or a message too large to read):
    /// nothing can tell which request it was meant to answer, so every
    /// request in flight fails with the reason rather than waiting out its
    /// timeout. The connection stays open, so a server that recovers keeps
    /// serving.
    pub(crate) fn malformed(&self, reason: String) {
        tracing::warn!(target: "zoo_core::mcp", server = %self.server, "{reason}");
        let pending: Vec<_> = self.state.lock().pending.drain().collect();
        for (_, slot) in pending {
            let _ = slot.try_send(Err(Error::mcp(&self.server, reason.clone())));
        }
    }

    /// The connection is gone: every request in flight and every later one
    /// fails with `reason`.
    pub(crate) fn close(&self, reason: String) {
        self.end(reason, false);
    }

    /// The server went away by itself (it exited, or closed its stdin or
    /// stdout): like [`close`](Self::close), and the lost handler is told
    /// first, so that whatever it withdraws is gone before any request in
    /// flight returns. Nothing happens if the connection was already closed.
    pub(crate) fn lost(&self, reason: String) {
        self.end(reason, true);
    }

    fn end(&self, reason: String, lost: bool) {
        let (pending, first) = {
            let mut state = self.state.lock();
            let first = state.closed.is_none();
            if first {
                state.closed = Some(reason.clone());
                state.lost = lost;
            }
            (std::mem::take(&mut state.pending), first)
        };
        if lost && first {
            let handler = self.on_lost.lock().clone();
            if let Some(handler) = handler {
                handler(&reason);
            }
        }
        for (_, slot) in pending {
            let _ = slot.try_send(Err(Error::mcp(&self.server, reason.clone())));
        }
    }
}

/// Our ids are numbers; a server that echoes them as strings is tolerated.
fn as_request_id(id: &Value) -> Option<u64> {
    id.as_u64()
        .or_else(|| id.as_str().and_then(|s| s.parse().ok()))
}

/// The start of a long text, for messages.
pub(crate) fn excerpt(text: &str) -> String {
    format!("`{}`", clip(text, 200))
}

/// `text`, cut after `max` characters with a note of its full size: what
/// a server sends may reach a message, a log or the model, never all of it
/// when it is huge.
pub(crate) fn clip(text: &str, max: usize) -> String {
    let text = text.trim();
    match text.char_indices().nth(max) {
        None => text.to_string(),
        Some((cut, _)) => format!("{}… ({} bytes)", &text[..cut], text.len()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn routes_responses_to_their_requests_in_any_order() {
        let router = Router::new("s");
        let one = router.expect(1).unwrap();
        let two = router.expect(2).unwrap();
        router.deliver(json!({"jsonrpc": "2.0", "id": 2, "result": "b"}));
        router.deliver(
            json!({"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "bad"}}),
        );
        assert_eq!(two.recv().unwrap().unwrap(), json!("b"));
        let e = one.recv().unwrap().unwrap_err();
        assert!(
            matches!(
                e,
                Error::Mcp {
                    rpc_code: Some(-32602),
                    ..
                }
            ),
            "{e}"
        );
        assert_eq!(e.to_string(), "MCP server `s`: bad (JSON-RPC error -32602)");
    }

    #[test]
    fn garbage_fails_the_requests_in_flight_and_close_fails_later_ones() {
        let router = Router::new("s");
        let one = router.expect(1).unwrap();
        router.deliver_text("Traceback (most recent call last):");
        let e = one.recv().unwrap().unwrap_err().to_string();
        assert!(e.contains("not JSON") && e.contains("Traceback"), "{e}");
        let two = router.expect(2).unwrap();
        router.close("the server exited".into());
        assert!(two
            .recv()
            .unwrap()
            .unwrap_err()
            .to_string()
            .contains("exited"));
        assert!(router.expect(3).unwrap_err().to_string().contains("exited"));
    }

    #[test]
    fn a_lost_server_tells_the_handler_before_the_requests_fail() {
        let router = Router::new("s");
        let one = Arc::new(Mutex::new(router.expect(1).unwrap()));
        let told = Arc::new(Mutex::new(Vec::new()));
        let (sink, slot) = (told.clone(), one.clone());
        router.set_on_lost(Arc::new(move |reason| {
            // The request in flight has not been failed yet.
            let unanswered = slot.lock().try_recv().is_err();
            sink.lock().push((reason.to_string(), unanswered));
        }));
        router.lost("the server exited".into());
        // Told once, even when the loss is reported twice.
        router.lost("again".into());
        assert_eq!(*told.lock(), [("the server exited".to_string(), true)]);
        assert!(one.lock().try_recv().unwrap().is_err());
        assert_eq!(router.lost_reason().as_deref(), Some("the server exited"));
        // A connection closed by this side is not lost.
        let closed = Router::new("t");
        closed.close("the server was closed".into());
        closed.lost("late".into());
        assert_eq!(closed.lost_reason(), None);
    }

    #[test]
    fn notifications_go_to_the_handler() {
        let router = Router::new("s");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        router.set_handler(Arc::new(move |m| sink.lock().push(m)));
        router.deliver(json!([{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]));
        assert_eq!(seen.lock().len(), 1);
    }
}
