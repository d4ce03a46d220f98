//! MCP's Streamable HTTP transport: each message is a POST to the endpoint;
//! a request is answered with a JSON body or a server-sent-event stream
//! that carries the response (and possibly notifications first). The
//! server's `Mcp-Session-Id` is sent back on every later request. Blocking
//! `ureq`, so MCP needs no async runtime.
//!
//! A server that restarts forgets its sessions and answers 404 to the old
//! one; the spec then asks the client to start a new session with a fresh
//! `initialize`. This transport does so by itself, once per failed POST,
//! replaying the `initialize` it sent first, and then sends the POST again.

use std::io::{BufReader, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;
use serde_json::Value;

use super::lines::size_text;
use super::router::{excerpt, Router};
use super::rpc::{seconds, Transport};
use super::sse::{self, Event};
use super::transport_config::HttpTransport;
use crate::error::{Error, Result};

const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// How much of an error status's body is read for its reason.
const ERROR_BODY_LIMIT: u64 = 64 * 1024;
/// How long ending the session may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);
/// The id of a replayed `initialize`: a string, so it can never be taken
/// for one of the router's numbered requests.
const RENEW_ID: &str = "zoo-keeper-renew-session";

/// The session the server gave, and how many times it was renewed (so that
/// several requests that all met the same 404 renew it only once).
#[derive(Default, Clone)]
struct Session {
    id: Option<String>,
    generation: u64,
}

/// Why a POST failed.
enum PostError {
    /// HTTP 404 for the session this POST carried.
    SessionGone {
        error: Error,
        generation: u64,
    },
    Other(Error),
}

impl From<Error> for PostError {
    fn from(e: Error) -> Self {
        PostError::Other(e)
    }
}

/// A connection to a Streamable HTTP endpoint.
pub(crate) struct HttpConnection {
    server: String,
    config: HttpTransport,
    agent: ureq::Agent,
    router: Arc<Router>,
    timeout: Duration,
    max_message_bytes: u64,
    session: Mutex<Session>,
    protocol_version: Mutex<Option<String>>,
    /// The first `initialize` sent, replayed to start a new session.
    initialize: Mutex<Option<Value>>,
    /// Held while a new session is started.
    renewing: Mutex<()>,
    /// Whether the GET event stream was asked for (and so is reopened for
    /// a new session).
    listening: AtomicBool,
    /// Set on close, so the listener drops what arrives after it.
    closed: Arc<AtomicBool>,
}

impl HttpConnection {
    pub(crate) fn new(
        server: &str,
        config: &HttpTransport,
        router: Arc<Router>,
        timeout: Duration,
        max_message_bytes: u64,
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
            max_message_bytes,
            session: Mutex::new(Session::default()),
            protocol_version: Mutex::new(None),
            initialize: Mutex::new(None),
            renewing: Mutex::new(()),
            listening: AtomicBool::new(false),
            closed: Arc::new(AtomicBool::new(false)),
        }
    }

    fn error(&self, message: impl Into<String>) -> Error {
        Error::mcp(&self.server, message)
    }

    fn too_large(&self) -> Error {
        self.error(format!(
            "{} sent a message larger than {} (the transport's max_message_bytes)",
            self.config.url,
            size_text(self.max_message_bytes)
        ))
    }

    fn transport_error(&self, e: ureq::Error) -> Error {
        match e {
            ureq::Error::Timeout(_) => self.timed_out(),
            ureq::Error::BodyExceedsLimit(_) => self.too_large(),
            other => self.error(format!("cannot reach {}: {other}", self.config.url)),
        }
    }

    fn timed_out(&self) -> Error {
        self.error(format!(
            "no answer from {} within {} (the request timeout)",
            self.config.url,
            seconds(self.timeout)
        ))
    }

    /// The headers every request carries: authorization, the session, the
    /// protocol version and the configured extras.
    fn headers(&self, session: &Session) -> Vec<(String, String)> {
        let mut headers = Vec::new();
        if let Some(token) = &self.config.bearer_token {
            headers.push(("Authorization".to_string(), format!("Bearer {token}")));
        }
        if let Some(id) = session.id.as_deref() {
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

    /// POSTs one message; what the server sends back goes to `deliver`
    /// (one JSON text at a time), until the response to a request arrives.
    fn post(&self, message: &Value, deliver: &mut dyn FnMut(&str)) -> Result<(), PostError> {
        // The id of the response this POST must bring back, if it is a request.
        let expected = match (message.get("method"), message.get("id")) {
            (Some(_), Some(id)) => Some(id.clone()),
            _ => None,
        };
        let session = self.session.lock().clone();
        let mut response = self.send(message, &session)?;
        self.note_session(&response, &session);
        let status = response.status().as_u16();
        if !(200..300).contains(&status) {
            return Err(self.refusal(&mut response, status, &session));
        }
        let Some(expected) = expected else {
            // Notifications and responses are acknowledged with 202 and no body.
            return Ok(());
        };
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .unwrap_or("")
            .to_ascii_lowercase();
        if content_type.starts_with("text/event-stream") {
            self.read_stream(&mut response, &expected, deliver)
                .map_err(PostError::Other)
        } else if content_type.starts_with("application/json") {
            let body = response
                .body_mut()
                .with_config()
                .limit(self.max_message_bytes)
                .read_to_string()
                .map_err(|e| self.transport_error(e))?;
            deliver(&body);
            Ok(())
        } else {
            Err(self
                .error(format!(
                    "{} answered a request with HTTP {status} and content type `{content_type}`, \
                     expected application/json or text/event-stream",
                    self.config.url
                ))
                .into())
        }
    }

    /// Sends one message with the session's headers.
    fn send(
        &self,
        message: &Value,
        session: &Session,
    ) -> Result<ureq::http::Response<ureq::Body>, PostError> {
        let mut request = self
            .agent
            .post(&self.config.url)
            .header("Content-Type", "application/json")
            .header("Accept", "application/json, text/event-stream");
        for (name, value) in self.headers(session) {
            request = request.header(name, value);
        }
        request
            .config()
            .timeout_global(Some(self.timeout))
            .build()
            .send(message.to_string())
            .map_err(|e| self.transport_error(e).into())
    }

    /// Keeps the session id a response assigns, unless the session was
    /// renewed meanwhile.
    fn note_session(&self, response: &ureq::http::Response<ureq::Body>, session: &Session) {
        let Some(id) = response
            .headers()
            .get(SESSION_HEADER)
            .and_then(|v| v.to_str().ok())
        else {
            return;
        };
        let mut current = self.session.lock();
        if current.generation == session.generation {
            current.id = Some(id.to_string());
        }
    }

    /// The error for a response that is not a success, from the start of
    /// its body (it is for a message); a 404 on a session means the server
    /// forgot it.
    fn refusal(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
        status: u16,
        session: &Session,
    ) -> PostError {
        let mut body = Vec::new();
        let _ = response
            .body_mut()
            .as_reader()
            .take(ERROR_BODY_LIMIT)
            .read_to_end(&mut body);
        let body = String::from_utf8_lossy(&body);
        // The reference SDK puts the reason in a JSON-RPC error body.
        let reason = serde_json::from_str::<Value>(&body)
            .ok()
            .and_then(|v| {
                v.pointer("/error/message")
                    .and_then(Value::as_str)
                    .map(excerpt)
            })
            .unwrap_or_else(|| excerpt(&body));
        let session_gone = status == 404 && session.id.is_some();
        let hint = if session_gone {
            " (the server no longer knows this session)"
        } else if status == 401 || status == 403 {
            " (check the bearer token)"
        } else {
            ""
        };
        let error = self.error(format!(
            "{} answered HTTP {status}{hint}: {reason}",
            self.config.url
        ));
        if session_gone {
            PostError::SessionGone {
                error,
                generation: session.generation,
            }
        } else {
            PostError::Other(error)
        }
    }

    /// Reads an event stream until the answer to request `expected`,
    /// delivering each message on the way (the server's own requests and
    /// notifications too).
    fn read_stream(
        &self,
        response: &mut ureq::http::Response<ureq::Body>,
        expected: &Value,
        deliver: &mut dyn FnMut(&str),
    ) -> Result<()> {
        let max = usize::try_from(self.max_message_bytes).unwrap_or(usize::MAX);
        let mut reader = BufReader::new(response.body_mut().as_reader());
        let (mut answered, mut too_large) = (false, false);
        sse::read_events(&mut reader, max, |event| {
            let data = match event {
                Event::TooLarge => {
                    too_large = true;
                    return false;
                }
                Event::Data(data) if data.trim().is_empty() => return true,
                Event::Data(data) => data,
            };
            let is_answer = serde_json::from_str::<Value>(data)
                .ok()
                .is_some_and(|v| v.get("id") == Some(expected) && v.get("method").is_none());
            deliver(data);
            answered = is_answer;
            !answered
        })
        .map_err(|e| match e.kind() {
            std::io::ErrorKind::TimedOut => self.timed_out(),
            _ => self.error(format!(
                "the event stream from {} broke: {e}",
                self.config.url
            )),
        })?;
        if too_large {
            Err(self.too_large())
        } else if answered {
            Ok(())
        } else {
            Err(self.error(format!(
                "the event stream from {} ended without answering request {expected}",
                self.config.url
            )))
        }
    }

    /// Starts a new session after the server answered 404 to the one of
    /// `generation`: the first `initialize` again, without a session, then
    /// `notifications/initialized`. Nothing to do when another request
    /// already renewed it.
    fn renew_session(&self, generation: u64) -> Result<()> {
        let _renewing = self.renewing.lock();
        if self.session.lock().generation != generation {
            return Ok(());
        }
        let Some(mut initialize) = self.initialize.lock().clone() else {
            return Err(self.error("no initialize to start a new session with"));
        };
        initialize["id"] = Value::from(RENEW_ID);
        {
            let mut session = self.session.lock();
            session.id = None;
            session.generation += 1;
        }
        let mut answer = None;
        let router = self.router.clone();
        self.post(&initialize, &mut |text| {
            let value = serde_json::from_str::<Value>(text).ok();
            match value {
                Some(v) if v.get("id").and_then(Value::as_str) == Some(RENEW_ID) => {
                    answer = Some(v)
                }
                // Notifications that came first go where they always do.
                _ => router.deliver_text(text),
            }
        })
        .map_err(|e| match e {
            PostError::SessionGone { error, .. } | PostError::Other(error) => error,
        })?;
        let answer =
            answer.ok_or_else(|| self.error("the new session's initialize got no answer"))?;
        if let Some(error) = answer.get("error") {
            return Err(self.error(format!("the new session's initialize failed: {error}")));
        }
        let negotiated = self.protocol_version.lock().clone();
        let version = answer
            .pointer("/result/protocolVersion")
            .and_then(Value::as_str);
        if version.is_none() || version != negotiated.as_deref() {
            return Err(self.error(format!(
                "the new session speaks protocol version {}, not {} as the first did",
                version.unwrap_or("(none)"),
                negotiated.as_deref().unwrap_or("(none)")
            )));
        }
        let initialized =
            serde_json::json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        self.post(&initialized, &mut |_| {}).map_err(|e| match e {
            PostError::SessionGone { error, .. } | PostError::Other(error) => error,
        })?;
        tracing::info!(target: "zoo_core::mcp", server = %self.server, "the server forgot the session (HTTP 404): a new one was started");
        if self.listening.load(Ordering::SeqCst) {
            self.listen();
        }
        Ok(())
    }

    /// Opens the GET event stream for the current session.
    fn listen(&self) {
        let session = self.session.lock().clone();
        let mut request = self
            .agent
            .get(&self.config.url)
            .header("Accept", "text/event-stream");
        for (name, value) in self.headers(&session) {
            request = request.header(name, value);
        }
        let (server, url) = (self.server.clone(), self.config.url.clone());
        let (router, closed) = (self.router.clone(), self.closed.clone());
        let max = usize::try_from(self.max_message_bytes).unwrap_or(usize::MAX);
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
                let outcome = sse::read_events(&mut reader, max, |event| {
                    if closed.load(Ordering::SeqCst) {
                        return false;
                    }
                    match event {
                        Event::Data(data) if !data.trim().is_empty() => router.deliver_text(data),
                        Event::Data(_) => {}
                        Event::TooLarge => tracing::warn!(
                            target: "zoo_core::mcp",
                            server = %server,
                            "an event larger than {} (max_message_bytes) on the event stream was dropped",
                            size_text(max as u64)
                        ),
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
}

impl Transport for HttpConnection {
    /// Sends `MCP-Protocol-Version` from now on, as the spec asks once a
    /// version is negotiated.
    fn set_protocol_version(&self, version: &str) {
        *self.protocol_version.lock() = Some(version.to_string());
    }

    fn send(&self, message: &Value) -> Result<()> {
        let is_initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
        if is_initialize {
            self.initialize
                .lock()
                .get_or_insert_with(|| message.clone());
        }
        let router = self.router.clone();
        let mut deliver = |text: &str| router.deliver_text(text);
        match self.post(message, &mut deliver) {
            Ok(()) => Ok(()),
            Err(PostError::Other(error)) => Err(error),
            Err(PostError::SessionGone { error, .. }) if is_initialize => Err(error),
            Err(PostError::SessionGone { error, generation }) => {
                self.renew_session(generation).map_err(|e| {
                    let why = match e {
                        Error::Mcp { message, .. } => message,
                        other => other.to_string(),
                    };
                    self.error(format!(
                        "{} and a new session could not be started: {why}",
                        mcp_message(&error)
                    ))
                })?;
                // Once: a second 404 is an error like any other.
                self.post(message, &mut deliver).map_err(|e| match e {
                    PostError::SessionGone { error, .. } | PostError::Other(error) => error,
                })
            }
        }
    }

    /// Opens the GET event stream on which the server sends what it says
    /// unasked (`tools/list_changed`, pings, log messages). Optional in the
    /// spec: a server that answers 405 has none, and that is fine.
    fn start_listening(&self) {
        self.listening.store(true, Ordering::SeqCst);
        self.listen();
    }

    /// Ends the session at the server (`DELETE`), when it gave one.
    fn close(&self) {
        self.closed.store(true, Ordering::SeqCst);
        let Some(id) = self.session.lock().id.take() else {
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

/// An MCP error's own message, without the server prefix.
fn mcp_message(error: &Error) -> String {
    match error {
        Error::Mcp { message, .. } => message.clone(),
        other => other.to_string(),
    }
}
