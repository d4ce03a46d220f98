//! The MCP client: tools from any Model Context Protocol server, federated
//! into an agent.
//!
//! - `jsonrpc`: JSON-RPC 2.0 messages; `router`: responses routed to
//!   their requests by id (several in flight at once); `rpc`: ids,
//!   timeouts and the transport boundary.
//! - Transports: `stdio` (a child process) and `http` (Streamable HTTP,
//!   with `sse` for event-stream replies), described by [`McpTransport`].
//! - [`McpClient`] (`session`): the handshake, `tools/list`, `tools/call`
//!   and the server's notifications; `content` renders tool results.
//! - `hosts_file`: the `mcpServers` file of Claude Desktop and other hosts.
//! - `federation`: [`Agent::add_mcp_server`](crate::Agent::add_mcp_server)
//!   registers every tool of a server as `{server}__{tool}`.
//!
//! Everything blocks on plain threads: tool handlers already run on the
//! agent's inference thread, so an async runtime would buy nothing.
//!
//! What a server sends is bounded: no message larger than the transport's
//! `max_message_bytes` (16 MiB by default) is ever held, be it a stdout
//! line, an HTTP body or an SSE event, nor more of its stderr than its last
//! 20 lines of at most 1 KiB. A server that goes away by itself (exits,
//! closes its stdin or stdout) fails its requests in flight at once and has
//! its tools withdrawn; an HTTP session the server forgot (404) is renewed
//! with a fresh `initialize`, once per failed request.
//!
//! ## Why not the official Rust SDK (`rmcp`)
//!
//! Weighed at rmcp 3.11: it covers the whole spec (resources, prompts,
//! sampling, elicitation, OAuth) and has met the same faults we fix here
//! (bounded lines and a 16 MiB SSE event cap, session renewal on 404). We
//! keep this client because rmcp is async only: every transport needs a
//! tokio runtime (process, net, time), and the HTTP one brings reqwest and
//! hyper beside the ureq we already use. libzoo is embedded in C hosts,
//! games and Python and Node processes; a runtime inside it would start
//! worker threads the host does not know about, would have to be shut down
//! when a handle is freed or the library unloaded, and turns a blocking
//! call made from a host's own tokio task into a panic ("cannot start a
//! runtime from within a runtime"). Our tool handlers run on the agent's
//! inference thread and block anyway, and federation needs only the tools
//! part of the spec (initialize, tools/list, tools/call, list_changed,
//! ping), which is small enough to own and test against the reference
//! servers. Revisit if we need the server-side features or OAuth.

mod content;
pub(crate) mod federation;
mod hosts_file;
mod http;
mod jsonrpc;
mod lines;
mod router;
mod rpc;
mod session;
mod sse;
mod stdio;
mod transport_config;

pub use content::McpToolOutput;
pub use federation::{McpServerInfo, McpServerState, MAX_SERVER_NAME, SEPARATOR};
pub use hosts_file::servers_from_hosts_file;
pub use session::{McpClient, McpHandshake, McpTool, McpToolList, PROTOCOL_VERSIONS};
pub use transport_config::{
    HttpTransport, McpTransport, StdioTransport, DEFAULT_MAX_MESSAGE_BYTES, DEFAULT_TIMEOUT,
};
