//! An MCP session: the `initialize` handshake with protocol-version
//! negotiation, `tools/list` with pagination, `tools/call`, and the
//! server's notifications and requests (`ping` is answered; sampling, roots
//! and elicitation are declined since this client does not offer them).

use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::content::{render_result, McpToolOutput};
use super::http::HttpConnection;
use super::jsonrpc::{Incoming, RpcError, METHOD_NOT_FOUND};
use super::lines::size_text;
use super::router::{clip, excerpt, Router};
use super::rpc::{RpcClient, Transport};
use super::stdio::StdioConnection;
use super::transport_config::McpTransport;
use crate::error::{Error, Result};

/// The protocol versions this client speaks, newest first; the first is
/// proposed in `initialize`.
pub const PROTOCOL_VERSIONS: [&str; 4] = ["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// The most `tools/list` pages read, so a server that keeps returning a
/// cursor cannot loop the client forever.
const MAX_PAGES: usize = 1000;
/// How much of a log message from the server is logged.
const LOG_CHARS: usize = 4096;

/// A tool as an MCP server describes it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpTool {
    /// The server's name for it.
    pub name: String,
    /// A display name, if the server gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it does.
    #[serde(default)]
    pub description: String,
    /// The JSON schema of its arguments.
    #[serde(rename = "inputSchema", default = "empty_object_schema")]
    pub input_schema: Value,
}

fn empty_object_schema() -> Value {
    json!({"type": "object"})
}

/// What the server said about itself in the handshake.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpHandshake {
    /// The negotiated protocol version.
    pub protocol_version: String,
    /// The server's `serverInfo.name`.
    pub server_name: String,
    /// The server's `serverInfo.version`.
    pub server_version: String,
    /// Its usage instructions, if it gave any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// Its capabilities object, as sent.
    pub capabilities: Value,
}

type Callback = Arc<dyn Fn() + Send + Sync>;

/// A connected, initialized MCP server. `Send + Sync`: requests from
/// several threads are in flight together. Closed when dropped.
pub struct McpClient {
    name: String,
    rpc: RpcClient,
    max_message_bytes: u64,
    handshake: OnceLock<McpHandshake>,
    tools_changed: Mutex<Option<Callback>>,
}

impl std::fmt::Debug for McpClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("McpClient")
            .field("name", &self.name)
            .field("handshake", &self.handshake.get())
            .finish_non_exhaustive()
    }
}

impl McpClient {
    /// Starts or reaches the server, and runs the handshake. `name` names it
    /// in errors and logs. A server that cannot start, exits, or does not
    /// answer within the transport's timeout gives an [`Error::Mcp`] that
    /// names the command or URL and, for a process, what it wrote on stderr.
    pub fn connect(name: &str, transport: &McpTransport) -> Result<Arc<Self>> {
        transport.check()?;
        let router = Router::new(name);
        let connection: Box<dyn Transport> = match transport {
            McpTransport::Stdio(config) => Box::new(StdioConnection::spawn(
                name,
                config,
                router.clone(),
                transport.timeout(),
                transport.max_message_bytes(),
            )?),
            McpTransport::Http(config) => Box::new(HttpConnection::new(
                name,
                config,
                router.clone(),
                transport.timeout(),
                transport.max_message_bytes(),
            )),
        };
        let client = Arc::new(McpClient {
            name: name.to_string(),
            rpc: RpcClient::new(name, connection, router, transport.timeout()),
            max_message_bytes: transport.max_message_bytes(),
            handshake: OnceLock::new(),
            tools_changed: Mutex::new(None),
        });
        let weak = Arc::downgrade(&client);
        client
            .rpc
            .router()
            .set_handler(Arc::new(move |message| handle_incoming(&weak, message)));
        client.initialize().map_err(|e| {
            // At once: a server that failed its handshake has nothing to
            // finish, and the caller has waited long enough.
            client.rpc.abort("the server failed to start");
            prefix(e, &format!("failed to start ({})", transport.describe()))
        })?;
        Ok(client)
    }

    fn initialize(&self) -> Result<()> {
        let result = self.rpc.request(
            "initialize",
            Some(json!({
                "protocolVersion": PROTOCOL_VERSIONS[0],
                "capabilities": {},
                "clientInfo": {"name": "zoo-keeper", "version": env!("CARGO_PKG_VERSION")}
            })),
        )?;
        let version = result
            .get("protocolVersion")
            .and_then(Value::as_str)
            .ok_or_else(|| {
                Error::mcp(&self.name, "the initialize result has no `protocolVersion`")
            })?;
        if !PROTOCOL_VERSIONS.contains(&version) {
            return Err(Error::mcp(
                &self.name,
                format!(
                    "the server speaks MCP protocol version {version}, which this client \
                     does not (it speaks {})",
                    PROTOCOL_VERSIONS.join(", ")
                ),
            ));
        }
        let info = result.get("serverInfo");
        let text = |v: Option<&Value>, key: &str| {
            v.and_then(|v| v.get(key))
                .and_then(Value::as_str)
                .unwrap_or("")
                .to_string()
        };
        let handshake = McpHandshake {
            protocol_version: version.to_string(),
            server_name: text(info, "name"),
            server_version: text(info, "version"),
            instructions: result
                .get("instructions")
                .and_then(Value::as_str)
                .map(str::to_string),
            capabilities: result.get("capabilities").cloned().unwrap_or(json!({})),
        };
        self.rpc.set_protocol_version(version);
        let _ = self.handshake.set(handshake);
        self.rpc.notify("notifications/initialized", None)?;
        self.rpc.start_listening();
        Ok(())
    }

    /// The name this client was connected under.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// What the server said in the handshake.
    pub fn handshake(&self) -> Option<&McpHandshake> {
        self.handshake.get()
    }

    /// Every tool the server offers, following `nextCursor` page by page;
    /// entries that are no valid tool are left out (see
    /// [`tool_list`](Self::tool_list) for them). A server without the
    /// `tools` capability has none.
    pub fn list_tools(&self) -> Result<Vec<McpTool>> {
        self.tool_list().map(|list| list.tools)
    }

    /// Every tool the server offers, and the entries of its list that are
    /// no valid tool (a name that is not a string, a malformed field), each
    /// described with the reason. The whole list, across its pages, is
    /// bounded like one message (`max_message_bytes`).
    pub fn tool_list(&self) -> Result<McpToolList> {
        let mut list = McpToolList::default();
        let offers_tools = self
            .handshake()
            .is_some_and(|h| h.capabilities.get("tools").is_some());
        if !offers_tools {
            return Ok(list);
        }
        let mut held = 0u64;
        let mut cursor: Option<String> = None;
        for _ in 0..MAX_PAGES {
            let params = cursor.as_ref().map(|c| json!({"cursor": c}));
            let mut page = self.rpc.request("tools/list", params)?;
            let listed = match page.get_mut("tools").map(Value::take) {
                Some(Value::Array(listed)) => listed,
                _ => {
                    return Err(Error::mcp(
                        &self.name,
                        "the tools/list result has no `tools` array",
                    ))
                }
            };
            for entry in listed {
                held += serde_json::to_string(&entry).map_or(0, |t| t.len() as u64);
                if held > self.max_message_bytes {
                    return Err(Error::mcp(
                        &self.name,
                        format!(
                            "the tool list is larger than {} (the transport's max_message_bytes)",
                            size_text(self.max_message_bytes)
                        ),
                    ));
                }
                match serde_json::from_value::<McpTool>(entry.clone()) {
                    Ok(tool) => list.tools.push(tool),
                    Err(e) => {
                        let what = match entry.get("name") {
                            Some(Value::String(name)) => format!("`{name}`"),
                            Some(name) => excerpt(&name.to_string()),
                            None => excerpt(&entry.to_string()),
                        };
                        tracing::warn!(target: "zoo_core::mcp", server = %self.name, "skipping the tool-list entry {what}: {e}");
                        list.skipped.push(format!("{what}: not a valid tool ({e})"));
                    }
                }
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(next) if Some(next) != cursor.as_deref() => cursor = Some(next.to_string()),
                _ => return Ok(list),
            }
        }
        Err(Error::mcp(
            &self.name,
            format!("tools/list went on for more than {MAX_PAGES} pages"),
        ))
    }

    /// Calls a tool. A result flagged `isError` is `Ok` with
    /// [`McpToolOutput::is_error`] set; `Err` is a protocol or transport
    /// failure (including a JSON-RPC error such as an unknown tool).
    pub fn call_tool(&self, tool: &str, arguments: Value) -> Result<McpToolOutput> {
        let result = self.rpc.request(
            "tools/call",
            Some(json!({"name": tool, "arguments": arguments})),
        )?;
        Ok(render_result(&result))
    }

    /// Runs `callback` (on a transport thread) whenever the server says its
    /// tool list changed.
    pub fn on_tools_changed(&self, callback: impl Fn() + Send + Sync + 'static) {
        *self.tools_changed.lock() = Some(Arc::new(callback));
    }

    /// Runs `callback` (on a transport thread, once) when the server goes
    /// away by itself: a process that exited or closed its stdin or
    /// stdout, or stopped reading for a whole timeout. The callback gets the
    /// reason, and runs before the requests in flight fail with it.
    pub fn on_lost(&self, callback: impl Fn(&str) + Send + Sync + 'static) {
        self.rpc.router().set_on_lost(Arc::new(callback));
    }

    /// Why the server went away by itself, if it did; every request then
    /// fails at once with this reason. `None` while it runs, and after
    /// [`close`](Self::close).
    pub fn lost_reason(&self) -> Option<String> {
        self.rpc.router().lost_reason()
    }

    /// Closes the connection (a process is asked to exit, then killed);
    /// requests in flight fail. Idempotent.
    pub fn close(&self) {
        self.rpc.close("the server was closed");
    }
}

/// A server's tool list, as [`McpClient::tool_list`] reads it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct McpToolList {
    /// The valid tools, in the server's order.
    pub tools: Vec<McpTool>,
    /// The entries that are no valid tool, each named (or quoted) with the
    /// reason.
    pub skipped: Vec<String>,
}

fn handle_incoming(client: &Weak<McpClient>, message: Incoming) {
    let Some(client) = client.upgrade() else {
        return;
    };
    match message {
        Incoming::Request { id, method, .. } if method == "ping" => {
            client.rpc.respond(id, Ok(json!({})))
        }
        Incoming::Request { id, method, .. } => client.rpc.respond(
            id,
            Err(RpcError {
                code: METHOD_NOT_FOUND,
                message: format!("this client (Zoo-Keeper) does not support `{method}`"),
                data: None,
            }),
        ),
        Incoming::Notification { method, params } => match method.as_str() {
            "notifications/tools/list_changed" => {
                let callback = client.tools_changed.lock().clone();
                if let Some(callback) = callback {
                    callback();
                }
            }
            "notifications/message" => {
                let level = params
                    .get("level")
                    .and_then(Value::as_str)
                    .unwrap_or("info");
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                let text = match &data {
                    Value::String(text) => clip(text, LOG_CHARS),
                    other => clip(&other.to_string(), LOG_CHARS),
                };
                tracing::info!(target: "zoo_core::mcp", server = %client.name, level, "{text}");
            }
            _ => {
                tracing::debug!(target: "zoo_core::mcp", server = %client.name, "notification {method}")
            }
        },
        // Responses and garbage never reach the handler.
        Incoming::Response { .. } | Incoming::Invalid { .. } => {}
    }
}

/// Puts `context` before an MCP error's message.
fn prefix(error: Error, context: &str) -> Error {
    match error {
        Error::Mcp {
            server,
            rpc_code,
            message,
        } => Error::Mcp {
            server,
            rpc_code,
            message: format!("{context}: {message}"),
        },
        other => other,
    }
}
