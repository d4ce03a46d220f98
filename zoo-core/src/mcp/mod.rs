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
//! - `federation`: [`Agent::add_mcp_server`](crate::Agent::add_mcp_server)
//!   registers every tool of a server as `{server}__{tool}`.
//!
//! Everything blocks on plain threads: tool handlers already run on the
//! agent's inference thread, so an async runtime would buy nothing.

mod content;
pub(crate) mod federation;
mod http;
mod jsonrpc;
mod router;
mod rpc;
mod session;
mod sse;
mod stdio;
mod transport_config;

pub use content::McpToolOutput;
pub use federation::{McpServerInfo, MAX_SERVER_NAME, SEPARATOR};
pub use session::{McpClient, McpHandshake, McpTool, PROTOCOL_VERSIONS};
pub use transport_config::{HttpTransport, McpTransport, StdioTransport, DEFAULT_TIMEOUT};
