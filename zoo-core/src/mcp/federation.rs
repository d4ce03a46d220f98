//! Federation: an agent's MCP servers, each of whose tools is registered in
//! the agent's tool registry as `{server}__{tool}` with the server's JSON
//! schema (so arguments are validated and calls constrained by a grammar
//! like any other tool). A `tools/list_changed` notification re-lists the
//! tools; removing the server removes them.

use std::collections::{BTreeMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Weak};

use parking_lot::Mutex;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::session::{McpClient, McpTool};
use super::transport_config::McpTransport;
use crate::error::{Error, Result};
use crate::tools::registry::{is_valid_tool_name, Tool, ToolRegistry};

/// Between the server's name and the tool's in a federated tool's name.
pub const SEPARATOR: &str = "__";
/// The longest server name, so that its tools' names keep room in the
/// 64-character limit on tool names.
pub const MAX_SERVER_NAME: usize = 32;

/// An MCP server as the agent sees it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct McpServerInfo {
    /// The name it was added under (the prefix of its tools).
    pub name: String,
    /// The server's own name (`serverInfo.name`).
    pub server_name: String,
    /// The server's version.
    pub server_version: String,
    /// The negotiated MCP protocol version.
    pub protocol_version: String,
    /// The names its tools are registered under, in the server's order.
    pub tools: Vec<String>,
    /// Tools that could not be registered, each with the reason (such as a
    /// schema the validator rejects, or a name that is not a string).
    pub skipped: Vec<String>,
    /// Whether the server is usable: `running`, or `dead` once it went
    /// away by itself (its process exited or closed its pipes), when its
    /// tools are withdrawn from the agent. Add it again to restart it.
    pub state: McpServerState,
    /// Why it is dead (what it did, its exit status and the last lines of
    /// its stderr); `None` while it runs.
    pub state_reason: Option<String>,
}

/// Whether an added MCP server is usable; see [`McpServerInfo::state`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum McpServerState {
    /// Connected; its tools are offered to the model.
    Running,
    /// Gone by itself; its tools were withdrawn.
    Dead,
}

/// One added server.
struct Federated {
    name: String,
    client: Arc<McpClient>,
    removed: AtomicBool,
    /// Held while tools are listed and (un)registered, so refreshes and
    /// removal never interleave. Not held by [`Federated::withdraw`], which
    /// runs on the transport's reader while a listing may be waiting for
    /// that reader.
    state: Mutex<ToolSet>,
    /// The names registered in the agent, and whether the server is dead.
    /// Held only while the registry is changed, never across a request.
    registered: Mutex<Registered>,
}

#[derive(Default)]
struct ToolSet {
    skipped: Vec<String>,
}

#[derive(Default)]
struct Registered {
    names: Vec<String>,
    dead: bool,
}

/// The MCP servers of one agent. Closes them all when dropped.
#[derive(Default)]
pub(crate) struct McpServers {
    servers: Mutex<BTreeMap<String, Arc<Federated>>>,
}

impl McpServers {
    /// Connects to the server and registers its tools in `registry`.
    pub(crate) fn add(
        &self,
        registry: &Arc<ToolRegistry>,
        name: &str,
        transport: McpTransport,
    ) -> Result<McpServerInfo> {
        if !is_valid_tool_name(name) || name.len() > MAX_SERVER_NAME || name.contains(SEPARATOR) {
            return Err(Error::InvalidArgument(format!(
                "MCP server name `{name}` must be 1 to {MAX_SERVER_NAME} letters, digits, `_` \
                 or `-`, without `{SEPARATOR}` (it prefixes the server's tool names)"
            )));
        }
        if self.servers.lock().contains_key(name) {
            return Err(already_added(name));
        }
        let client = McpClient::connect(name, &transport)?;
        let server = Arc::new(Federated {
            name: name.to_string(),
            client,
            removed: AtomicBool::new(false),
            state: Mutex::new(ToolSet::default()),
            registered: Mutex::new(Registered::default()),
        });
        // Listing happens under the lock, so a change notified meanwhile
        // is applied after this first listing, never before it.
        let mut tools = server.state.lock();
        let weak_server = Arc::downgrade(&server);
        let weak_registry = Arc::downgrade(registry);
        server.client.on_tools_changed(move || {
            refresh_in_background(weak_server.clone(), weak_registry.clone())
        });
        let (weak_server, weak_registry) = (Arc::downgrade(&server), Arc::downgrade(registry));
        server.client.on_lost(move |reason| {
            if let (Some(server), Some(registry)) = (weak_server.upgrade(), weak_registry.upgrade())
            {
                server.withdraw(&registry, reason);
            }
        });
        let synced = sync_tools(&server, registry, &mut tools).and_then(|()| {
            // A server that died while it was listed is no server to add.
            match server.client.lost_reason() {
                Some(reason) => Err(Error::mcp(name, reason)),
                None => Ok(()),
            }
        });
        if let Err(e) = synced {
            drop(tools);
            server.remove(registry);
            return Err(e);
        }
        let info = server.info(&tools);
        drop(tools);
        let mut servers = self.servers.lock();
        if servers.contains_key(name) {
            // Added by another thread while this one connected.
            drop(servers);
            server.remove(registry);
            return Err(already_added(name));
        }
        servers.insert(name.to_string(), server);
        Ok(info)
    }

    /// Closes the server and unregisters its tools; whether it was there.
    pub(crate) fn remove(&self, registry: &ToolRegistry, name: &str) -> bool {
        let server = self.servers.lock().remove(name);
        match server {
            Some(server) => {
                server.remove(registry);
                true
            }
            None => false,
        }
    }

    /// Every added server, by name.
    pub(crate) fn list(&self) -> Vec<McpServerInfo> {
        let servers: Vec<_> = self.servers.lock().values().cloned().collect();
        servers.iter().map(|s| s.info(&s.state.lock())).collect()
    }
}

impl Drop for McpServers {
    fn drop(&mut self) {
        for server in self.servers.get_mut().values() {
            server.removed.store(true, Ordering::SeqCst);
            server.client.close();
        }
    }
}

impl Federated {
    fn info(&self, tools: &ToolSet) -> McpServerInfo {
        let handshake = self.client.handshake();
        let field = |f: fn(&super::session::McpHandshake) -> &String| {
            handshake.map(f).cloned().unwrap_or_default()
        };
        let state_reason = self.client.lost_reason();
        McpServerInfo {
            name: self.name.clone(),
            server_name: field(|h| &h.server_name),
            server_version: field(|h| &h.server_version),
            protocol_version: field(|h| &h.protocol_version),
            tools: self.registered.lock().names.clone(),
            skipped: tools.skipped.clone(),
            state: match state_reason {
                Some(_) => McpServerState::Dead,
                None => McpServerState::Running,
            },
            state_reason,
        }
    }

    fn remove(&self, registry: &ToolRegistry) {
        self.removed.store(true, Ordering::SeqCst);
        // Closing first fails a refresh in flight at once, so the lock
        // below is not held for a whole request timeout.
        self.client.close();
        let _tools = self.state.lock();
        let mut registered = self.registered.lock();
        for name in registered.names.drain(..) {
            registry.unregister(&name);
        }
    }

    /// The server went away by itself: its tools are no longer offered, so
    /// the model cannot call what cannot answer. Runs before the requests
    /// in flight fail, so the turn after a failed call sees the tools gone.
    fn withdraw(&self, registry: &ToolRegistry, reason: &str) {
        let mut registered = self.registered.lock();
        registered.dead = true;
        for name in registered.names.drain(..) {
            registry.unregister(&name);
        }
        tracing::warn!(target: "zoo_core::mcp", server = %self.name, "its tools are withdrawn: {reason}");
    }
}

fn already_added(name: &str) -> Error {
    Error::InvalidArgument(format!(
        "an MCP server named `{name}` is already added; remove it first"
    ))
}

/// Re-lists the tools on a thread of its own: the notification arrives on
/// the transport's reader, which must stay free to read the answer.
fn refresh_in_background(server: Weak<Federated>, registry: Weak<ToolRegistry>) {
    let spawned = std::thread::Builder::new()
        .name("zoo-mcp-refresh".into())
        .spawn(move || {
            let (Some(server), Some(registry)) = (server.upgrade(), registry.upgrade()) else {
                return;
            };
            let mut tools = server.state.lock();
            if server.removed.load(Ordering::SeqCst) {
                return;
            }
            match sync_tools(&server, &registry, &mut tools) {
                Ok(()) => tracing::info!(
                    target: "zoo_core::mcp",
                    server = %server.name,
                    "tool list changed: {} tools",
                    server.registered.lock().names.len()
                ),
                Err(e) => tracing::warn!(
                    target: "zoo_core::mcp",
                    server = %server.name,
                    "cannot refresh the tools after a change: {e}"
                ),
            }
        });
    if let Err(e) = spawned {
        tracing::warn!(target: "zoo_core::mcp", "cannot start a tool refresh: {e}");
    }
}

/// Lists the server's tools and makes the registry match: new ones added,
/// changed ones replaced in place, vanished ones removed.
fn sync_tools(server: &Federated, registry: &ToolRegistry, set: &mut ToolSet) -> Result<()> {
    let listed = server.client.tool_list()?;
    let mut used = HashSet::new();
    let mut tools = Vec::new();
    let mut skipped = listed.skipped;
    for mcp_tool in listed.tools {
        let local = local_name(&server.name, &mcp_tool.name, &used);
        match federated_tool(&server.client, &local, &mcp_tool) {
            Ok(tool) => {
                used.insert(local);
                tools.push(tool);
            }
            Err(e) => {
                tracing::warn!(target: "zoo_core::mcp", server = %server.name, "skipping tool `{}`: {e}", mcp_tool.name);
                skipped.push(format!("{}: {e}", mcp_tool.name));
            }
        }
    }
    set.skipped = skipped;
    let mut registered = server.registered.lock();
    if registered.dead {
        // It died after answering: its tools stay withdrawn.
        return Ok(());
    }
    for old in &registered.names {
        if !used.contains(old) {
            registry.unregister(old);
        }
    }
    registered.names = tools.iter().map(|t| t.name().to_string()).collect();
    for tool in tools {
        registry.register(tool);
    }
    Ok(())
}

/// `{server}__{tool}`, with characters tool names cannot hold replaced by
/// `_`, cut to 64 characters and made unique among `used`.
fn local_name(server: &str, tool: &str, used: &HashSet<String>) -> String {
    let clean: String = tool
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || c == '_' || c == '-' {
                c
            } else {
                '_'
            }
        })
        .collect();
    let base: String = format!("{server}{SEPARATOR}{clean}")
        .chars()
        .take(64)
        .collect();
    if !used.contains(&base) {
        return base;
    }
    (2..)
        .map(|n| {
            let suffix = format!("_{n}");
            let keep = 64 - suffix.len();
            format!("{}{suffix}", &base[..base.len().min(keep)])
        })
        .find(|candidate| !used.contains(candidate))
        .unwrap_or(base)
}

/// A registry tool whose handler calls the MCP tool. A result flagged
/// `isError` and any transport failure become the handler's error, which
/// the model reads as the tool's error.
fn federated_tool(client: &Arc<McpClient>, local: &str, mcp_tool: &McpTool) -> Result<Tool> {
    let description = if mcp_tool.description.is_empty() {
        mcp_tool.title.clone().unwrap_or_default()
    } else {
        mcp_tool.description.clone()
    };
    let client = client.clone();
    let remote = mcp_tool.name.clone();
    let handler = move |arguments: Value| match client.call_tool(&remote, arguments) {
        Ok(output) if output.is_error => Err(output.text),
        Ok(output) => Ok(Value::String(output.text)),
        Err(e) => Err(e.to_string()),
    };
    let schema = mcp_tool.input_schema.clone();
    match Tool::new(local, description.clone(), schema.clone(), handler.clone()) {
        Ok(tool) => Ok(tool),
        // A `$schema` naming a dialect the validator does not know is the
        // usual cause; the schema itself is then still usable without it.
        Err(first) => match without_dialect(&schema) {
            Some(plain) => Tool::new(local, description, plain, handler).map_err(|_| first),
            None => Err(first),
        },
    }
}

fn without_dialect(schema: &Value) -> Option<Value> {
    let mut plain = schema.clone();
    plain.as_object_mut()?.remove("$schema")?;
    Some(plain)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_names_fit_the_tool_name_rules() {
        let mut used = HashSet::new();
        assert_eq!(local_name("fs", "read_file", &used), "fs__read_file");
        assert_eq!(local_name("fs", "get.sum/v2", &used), "fs__get_sum_v2");
        let long = "x".repeat(100);
        let a = local_name("fs", &long, &used);
        assert_eq!(a.len(), 64);
        assert!(is_valid_tool_name(&a));
        used.insert(a.clone());
        let b = local_name("fs", &long, &used);
        assert!(b.len() <= 64 && b != a && b.ends_with("_2"), "{b}");
    }
}
