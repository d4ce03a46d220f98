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

#[derive(Default)]
struct State {
    pending: HashMap<u64, SyncSender<Result<Value>>>,
    /// Why the connection is gone, once it is.
    closed: Option<String>,
}

/// Routes one connection's incoming messages.
pub(crate) struct Router {
    server: String,
    state: Mutex<State>,
    handler: Mutex<Option<Handler>>,
}

impl Router {
    /// A router for the server called `server` (named in its errors).
    pub(crate) fn new(server: &str) -> Arc<Self> {
        Arc::new(Router {
            server: server.to_string(),
            state: Mutex::new(State::default()),
            handler: Mutex::new(None),
        })
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

    /// Garbage that names no request: nothing can tell which request it was
    /// meant to answer, so every request in flight fails with the reason
    /// rather than waiting out its timeout. The connection stays open, so a
    /// server that recovers keeps serving.
    fn malformed(&self, reason: String) {
        tracing::warn!(target: "zoo_core::mcp", server = %self.server, "{reason}");
        let pending: Vec<_> = self.state.lock().pending.drain().collect();
        for (_, slot) in pending {
            let _ = slot.try_send(Err(Error::mcp(&self.server, reason.clone())));
        }
    }

    /// The connection is gone: every request in flight and every later one
    /// fails with `reason`.
    pub(crate) fn close(&self, reason: String) {
        let pending: Vec<_> = {
            let mut state = self.state.lock();
            if state.closed.is_none() {
                state.closed = Some(reason.clone());
            }
            state.pending.drain().collect()
        };
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
    const MAX: usize = 200;
    let text = text.trim();
    match text.char_indices().nth(MAX) {
        None => format!("`{text}`"),
        Some((cut, _)) => format!("`{}…` ({} bytes)", &text[..cut], text.len()),
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
    fn notifications_go_to_the_handler() {
        let router = Router::new("s");
        let seen = Arc::new(Mutex::new(Vec::new()));
        let sink = seen.clone();
        router.set_handler(Arc::new(move |m| sink.lock().push(m)));
        router.deliver(json!([{"jsonrpc": "2.0", "method": "notifications/tools/list_changed"}]));
        assert_eq!(seen.lock().len(), 1);
    }
}
