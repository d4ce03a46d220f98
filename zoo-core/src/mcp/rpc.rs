//! The JSON-RPC client over one transport: increasing request ids, a
//! timeout on every request, and answers to the server's own requests.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::RecvTimeoutError;
use std::sync::Arc;
use std::time::Duration;

use serde_json::{json, Value};

use super::jsonrpc::{self, RpcError};
use super::router::Router;
use crate::error::{Error, Result};

/// Moves messages to a server. Whatever the server sends back is handed to
/// the connection's [`Router`], by a reader thread (stdio) or before `send`
/// returns (HTTP).
pub(crate) trait Transport: Send + Sync {
    /// Sends one message.
    fn send(&self, message: &Value) -> Result<()>;
    /// Ends the connection and releases its resources; idempotent.
    fn close(&self);
    /// Ends a connection that never became usable, as fast as it can (a
    /// process is killed rather than given time to exit).
    fn abort(&self) {
        self.close();
    }
    /// The negotiated protocol version (HTTP sends it in a header).
    fn set_protocol_version(&self, _version: &str) {}
    /// The session is initialized: start listening for messages the server
    /// sends unasked, where the transport needs a channel for them (HTTP).
    fn start_listening(&self) {}
}

/// A JSON-RPC connection to one server.
pub(crate) struct RpcClient {
    server: String,
    transport: Box<dyn Transport>,
    router: Arc<Router>,
    next_id: AtomicU64,
    timeout: Duration,
}

impl RpcClient {
    pub(crate) fn new(
        server: &str,
        transport: Box<dyn Transport>,
        router: Arc<Router>,
        timeout: Duration,
    ) -> Self {
        RpcClient {
            server: server.to_string(),
            transport,
            router,
            next_id: AtomicU64::new(1),
            timeout,
        }
    }

    /// The connection's router.
    pub(crate) fn router(&self) -> &Arc<Router> {
        &self.router
    }

    /// Sends a request and waits for its result, at most the timeout. A
    /// request that times out is cancelled at the server
    /// (`notifications/cancelled`) and its late answer is dropped.
    pub(crate) fn request(&self, method: &str, params: Option<Value>) -> Result<Value> {
        let id = self.next_id.fetch_add(1, Ordering::Relaxed);
        let slot = self.router.expect(id)?;
        if let Err(e) = self.transport.send(&jsonrpc::request(id, method, params)) {
            self.router.forget(id);
            return Err(e);
        }
        match slot.recv_timeout(self.timeout) {
            Ok(outcome) => outcome,
            Err(RecvTimeoutError::Timeout) => {
                self.router.forget(id);
                let _ = self.notify(
                    "notifications/cancelled",
                    Some(json!({"requestId": id, "reason": "timed out"})),
                );
                Err(Error::mcp(
                    &self.server,
                    format!(
                        "no answer to `{method}` within {} (the request timeout)",
                        seconds(self.timeout)
                    ),
                ))
            }
            Err(RecvTimeoutError::Disconnected) => Err(Error::Internal(format!(
                "MCP server `{}`: the slot of request {id} was dropped unanswered",
                self.server
            ))),
        }
    }

    /// Records the negotiated protocol version.
    pub(crate) fn set_protocol_version(&self, version: &str) {
        self.transport.set_protocol_version(version);
    }

    /// See [`Transport::start_listening`].
    pub(crate) fn start_listening(&self) {
        self.transport.start_listening();
    }

    /// Sends a notification.
    pub(crate) fn notify(&self, method: &str, params: Option<Value>) -> Result<()> {
        if let Some(reason) = self.router.closed_reason() {
            return Err(Error::mcp(&self.server, reason));
        }
        self.transport.send(&jsonrpc::notification(method, params))
    }

    /// Answers a request from the server.
    pub(crate) fn respond(&self, id: Value, outcome: std::result::Result<Value, RpcError>) {
        let message = match outcome {
            Ok(result) => jsonrpc::result_response(id, result),
            Err(e) => jsonrpc::error_response(id, e.code, &e.message),
        };
        if let Err(e) = self.transport.send(&message) {
            tracing::warn!(target: "zoo_core::mcp", server = %self.server, "cannot answer a server request: {e}");
        }
    }

    /// Closes the transport; requests in flight fail with `reason`.
    pub(crate) fn close(&self, reason: &str) {
        // Requests in flight fail first, not after the server's grace.
        self.router.close(reason.to_string());
        self.transport.close();
    }

    /// Like [`close`](Self::close), without the grace a running server gets.
    pub(crate) fn abort(&self, reason: &str) {
        self.router.close(reason.to_string());
        self.transport.abort();
    }
}

impl Drop for RpcClient {
    fn drop(&mut self) {
        self.close("the connection was closed");
    }
}

/// "2.5 s", "60 s", "250 ms".
pub(crate) fn seconds(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else if d.subsec_millis() == 0 {
        format!("{} s", d.as_secs())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}
