//! MCP servers: tools from Model Context Protocol servers, federated into an
//! agent as `{name}__{tool}`.

use std::ffi::c_char;

use zoo_core::McpTransport;

use crate::agent::zoo_agent;
use crate::boundary::{guard, handle_arg, into_c_string, out_arg, str_arg, OutPtr};
use crate::status::zoo_status;

/// Connects the agent to an MCP server and registers each of its tools as
/// `{name}__{tool}` (the server's JSON schema validates the arguments and
/// constrains the call grammar). Blocks for the handshake and the tool list.
///
/// `name`: 1 to 32 letters, digits, `_` or `-`, without `__`, not already
/// added. `transport_json` describes the server, either a process on stdio:
/// `{"type": "stdio", "command": "npx", "args": ["-y", "pkg"], "env": {"K": "V"},
/// "cwd": "/dir", "timeout_ms": 60000}` (only `command` is required; `env` adds
/// to this process's environment), or Streamable HTTP:
/// `{"type": "http", "url": "https://host/mcp", "bearer_token": "...",
/// "headers": {"X": "y"}, "timeout_ms": 60000}` (only `url` is required).
/// `timeout_ms` bounds every request (default 60 s); `max_message_bytes`
/// (either kind) bounds every message read from the server (default 16 MiB).
/// `type` may be left out: `command` means stdio, `url` Streamable HTTP.
///
/// On success, if `out_info_json` is not NULL, `*out_info_json` is a JSON
/// object `{"name", "server_name", "server_version", "protocol_version",
/// "tools": [registered names], "skipped": [reasons], "state": "running" or
/// "dead", "state_reason": null or why it died}` to free with
/// `zoo_string_free`.
///
/// A tool call that fails at the server (an `isError` result, a JSON-RPC
/// error, a crash, a timeout, malformed output, a message larger than
/// `max_message_bytes`) is a tool error the model reads, never a chat
/// failure. The server's tools follow its `notifications/tools/list_changed`;
/// a server that dies (exits, closes its stdin or stdout) has its tools
/// withdrawn and is listed as `"dead"`.
///
/// @param agent The agent.
/// @param name The server's name, the prefix of its tools' names.
/// @param transport_json How to reach the server, a JSON object.
/// @param out_info_json On success, the server's description (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, `ZOO_INVALID_ARGUMENT` (NULL agent, name or transport, a bad or duplicate
/// name, a description that cannot work: a missing, unknown or mistyped key, named with its
/// rule, as in every front door), `ZOO_INVALID_JSON` (`transport_json` is not JSON) or
/// `ZOO_MCP` (the server could not start or answer: the message names the command or URL and
/// what the process wrote on stderr).
#[no_mangle]
pub extern "C" fn zoo_agent_add_mcp_server(
    agent: *const zoo_agent,
    name: *const c_char,
    transport_json: *const c_char,
    out_info_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out: Option<OutPtr<*mut c_char>> = if out_info_json.is_null() {
            None
        } else {
            Some(out_arg(out_info_json, "out_info_json")?)
        };
        let agent = handle_arg(agent, "agent")?;
        let name = str_arg(name, "name")?;
        let transport = McpTransport::from_json(str_arg(transport_json, "transport_json")?)?;
        let info = agent.agent.add_mcp_server(name, transport)?;
        if let Some(out) = out {
            out.write(into_c_string(serde_json::to_string(&info)?));
        }
        Ok(())
    })
}

/// Closes the MCP server added as `name` (a process gets its stdin closed,
/// then is killed if it has not exited within 2 s, and is reaped) and
/// unregisters its tools. `*out_removed` (may be NULL) says whether such a
/// server was added; removing an unknown name is not an error.
///
/// @param agent The agent.
/// @param name The name the server was added as.
/// @param out_removed Whether such a server was added (may be NULL).
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL agent or name.
#[no_mangle]
pub extern "C" fn zoo_agent_remove_mcp_server(
    agent: *const zoo_agent,
    name: *const c_char,
    out_removed: *mut bool,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out: Option<OutPtr<bool>> = if out_removed.is_null() {
            None
        } else {
            Some(out_arg(out_removed, "out_removed")?)
        };
        let agent = handle_arg(agent, "agent")?;
        let removed = agent.agent.remove_mcp_server(str_arg(name, "name")?);
        if let Some(out) = out {
            out.write(removed);
        }
        Ok(())
    })
}

/// The MCP servers added to the agent, as a JSON array of the objects
/// `zoo_agent_add_mcp_server` describes. `*out_json` is freed with
/// `zoo_string_free`.
///
/// @param agent The agent.
/// @param out_json On success, the servers; free it with `zoo_string_free`.
/// @param out_error On failure, the error message (may be NULL; free it with
/// `zoo_string_free`).
/// @return `ZOO_OK`, or `ZOO_INVALID_ARGUMENT` for a NULL argument.
#[no_mangle]
pub extern "C" fn zoo_agent_mcp_servers_json(
    agent: *const zoo_agent,
    out_json: *mut *mut c_char,
    out_error: *mut *mut c_char,
) -> zoo_status {
    guard(out_error, || {
        let out = out_arg(out_json, "out_json")?;
        let agent = handle_arg(agent, "agent")?;
        let json = serde_json::to_string(&agent.agent.mcp_servers())?;
        out.write(into_c_string(json));
        Ok(())
    })
}
