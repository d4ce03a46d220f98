//! MCP's Streamable HTTP transport: each message is a POST to the endpoint;
//! a request is answered with a JSON body or a server-sent-event stream
//! that carries the response (and possibly notifications first). The
//! server's `Mcp-Session-Id` is sent back on every later request. Blocking
//! `ureq`, so MCP needs no async runtime.

use std::io::BufReader;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::router::{excerpt, Router};
use super::rpc::{seconds, Transport};
use super::sse;
use super::transport_config::HttpTransport;
use crate::error::{Error, Result};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The largest JSON body read from a server.
const BODY_LIMIT: u64 = 64 * 1024 * 1024;
/// How long ending the session may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// A connection to a Streamable HTTP endpoint.
pub(crate) struct HttpConnection {
    server: String,
    config: HttpTransport,
    agent: ureq::Agent,
    router: std::sync::Arc<Router>,
    timeout: Duration,
    session_id: Mutex<Option<String>>,
    protocol_version: Mutex<Option<String>>,
    /// Set on close, so the listener drops what arrives after it.
    closed: Arc<AtomicBool>,
}

impl HttpConnection {
    pub(crate) fn new(
        server: &str,
        config: &HttpTransport,
        router: std::sync::Arc<Router>,
        timeout: Duration,
    ) -> Self {
        let agent = ureq::Agent::config_builder()
            // Error statuses carry JSON-RPC errors worth reading.
            .http_status_as_error(false)
            .build()
            .new_agent();
        HttpConnection {
            server: server.to_string(),
            config: config.clone(),
            agent,
            router,
            timeout,
            session_id: Mutex::new(None),
            protocol_version: Mutex::new(None),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::mcp(&self.server, message)
    }

    fn transport_error(&self, e: ureq::Error, timeout: Duration) -> Error {
        match e {
            ureq::Error::Timeout(_) => self.error(format!(
                "no answer from {} within {} (the request timeout)",
                self.config.url,
                seconds(timeout)
            )),
            other => self.error(format!("cannot reach {}: {other}", self.config.url)),
        }
    }

    fn with_headers<B>(&self, mut request: ureq::RequestBuilder<B>) -> ureq::RequestBuilder<B> {
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        request
    }

    /// The headers every request carries: authorization, the session, the
    /// protocol version and the configured extras.
    fn headers(&self) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        if let Some(token) = &self.config.bearer_token {
            headers.push(("Authorization".to_string(), format!("Bearer {token}")));
        }
        if let Some(id) = self.session_id.lock().as_deref() {
            headers.push((SESSION_HEADER.to_string(), id.to_string()));
        }
        if let Some(version) = self.protocol_version.lock().as_deref() {
            headers.push((VERSION_HEADER.to_string(), version.to_string()));
        }
        for (name, value) in &self.config.headers {
            headers.push((name.clone(), value.clone()));
        }
        headers
    }
}

impl Transport for HttpConnection {
    /// Sends `MCP-Protocol-Version` from now on, as the spec asks once a
    /// version is negotiated.
    fn set_protocol_version(&self, version: &str) {
        *self.protocol_version.lock() = Some(version.to_string());
    }

    fn send(&self, message: &Value) -> Result<()> {
        // The id of the response this POST must bring back, if it is a request.
        let expected = match (message.get("method"), message.get("id")) {
            (Some(_), Some(id)) => Some(id.clone()),
            _ => None,
        };
        let request = self
            .agent
            .post(&self.config.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        let request = self
            .with_headers(request)
            .config()
            .timeout_global(Some(self.timeout))
            .build();
        let mut response = request
            .send(message.to_string())
            .map_err(|e| self.transport_error(e, self.timeout))?;
        if let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        {
            *self.session_id.lock() = Some(id.to_string());
        }
        let status = response.status().as_u16();
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if !(200..300).contains(&status) {
            let body = response
                .body_mut()
                .with_config()
                .limit(BODY_LIMIT)
                .read_to_string()
                .unwrap_or_default();
            // The reference SDK puts the reason in a JSON-RPC error body.
            let reason = serde_json::from_str::<Value>(&body)
                .ok()
                .and_then(|v| {
                    v.pointer("/error/message")
                        .and_then(Value::as_str)
                        .map(str::to_string)
                })
                .unwrap_or_else(|| excerpt(&body));
            let hint = if status == 404 && self.session_id.lock().is_some() {
                " (the server no longer knows this session)"
            } else if status == 401 || status == 403 {
                " (check the bearer token)"
            } else {
                ""
            };
            return Err(self.error(format!(
                "{} answered HTTP {status}{hint}: {reason}",
                self.config.url
            )));
        }
        let Some(expected) = expected else {
            // Notifications and responses are acknowledged with 202 and no body.
            return Ok(());
        };
        if content_type.starts_with("text/event-stream") {
            let mut reader = BufReader::new(response.body_mut().as_reader());
            let mut answered = false;
            sse::read_events(&mut reader, |data| {
                if data.trim().is_empty() {
                    return true;
                }
                let is_answer = serde_json::from_str::<Value>(data)
                    .ok()
                    .is_some_and(|v| v.get("id") == Some(&expected) && v.get("method").is_none());
                self.router.deliver_text(data);
                answered = is_answer;
                !answered
            })
            .map_err(|e| match e.kind() {
                std::io::ErrorKind::TimedOut => self.error(format!(
                    "no answer from {} within {} (the request timeout)",
                    self.config.url,
                    seconds(self.timeout)
                )),
                _ => self.error(format!(
                    "the event stream from {} broke: {e}",
                    self.config.url
                )),
            })?;
            if answered {
                Ok(())
            } else {
                Err(self.error(format!(
                    "the event stream from {} ended without answering request {expected}",
                    self.config.url
                )))
            }
        } else if content_type.starts_with("application/json") {
            let body = response
                .body_mut()
                .with_config()
                .limit(BODY_LIMIT)
                .read_to_string()
                .map_err(|e| self.transport_error(e, self.timeout))?;
            self.router.deliver_text(&body);
            Ok(())
        } else {
            Err(self.error(format!(
                "{} answered a request with HTTP {status} and content type `{content_type}`, \
                 expected application/json or text/event-stream",
                self.config.url
            )))
        }
    }

    /// Opens the GET event stream on which the server sends what it says
    /// unasked (`tools/list_changed`, pings, log messages). Optional in the
    /// spec: a server that answers 405 has none, and that is fine.
    fn start_listening(&self) {
        let mut request = self
            .agent
            .get(&self.config.url)
            .header("Accept", "text/event-stream");
        for (name, value) in self.headers() {
            request = request.header(name, value);
        }
        let (server, url) = (self.server.clone(), self.config.url.clone());
        let (router, closed) = (self.router.clone(), self.closed.clone());
        let spawned = std::thread::Builder::new()
            .name(format!("zoo-mcp-{server}-events"))
            .spawn(move || {
                // No timeout: the stream is meant to stay open; it ends when
                // the session is deleted on close.
                let mut response = match request.call() {
                    Ok(response) => response,
                    Err(e) => {
                        tracing::debug!(target: "zoo_core::mcp", server = %server, "no event stream at {url}: {e}");
                        return;
                    }
                };
                let is_stream = response
                    .headers()
                    .get("content-type")
                    .and_then(|v| v.to_str().ok())
                    .is_some_and(|t| t.to_ascii_lowercase().starts_with("text/event-stream"));
                if !response.status().is_success() || !is_stream {
                    tracing::debug!(target: "zoo_core::mcp", server = %server, "no event stream at {url}: HTTP {}", response.status());
                    return;
                }
                let mut reader = BufReader::new(response.body_mut().as_reader());
                let outcome = sse::read_events(&mut reader, |data| {
                    if closed.load(Ordering::SeqCst) {
                        return false;
                    }
                    if !data.trim().is_empty() {
                        router.deliver_text(data);
                    }
                    true
                });
                if let Err(e) = outcome {
                    tracing::debug!(target: "zoo_core::mcp", server = %server, "the event stream ended: {e}");
                }
            });
        if let Err(e) = spawned {
            tracing::warn!(target: "zoo_core::mcp", server = %self.server, "cannot start the event-stream listener: {e}");
        }
    }

    /// Ends the session at the server (`DELETE`), when it gave one.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let Some(id) = self.session_id.lock().take() else {
            return;
        };
        let mut request = self
            .agent
            .delete(&self.config.url)
            .header(SESSION_HEADER, &id);
        if let Some(token) = &self.config.bearer_token {
            request = request.header("Authorization", format!("Bearer {token}"));
        }
        let outcome = request
            .config()
            .timeout_global(Some(DELETE_TIMEOUT))
            .build()
            .call();
        if let Err(e) = outcome {
            tracing::debug!(target: "zoo_core::mcp", server = %self.server, "ending the session failed: {e}");
        }
    }
}
