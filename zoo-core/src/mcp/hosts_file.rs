//! The `mcpServers` shape that Claude Desktop, Claude Code, Cursor, VS Code
//! and other MCP hosts keep their servers in, read as it is, so that a user
//! points us at the file they already have:
//!
//! ```json
//! {"mcpServers": {
//!   "files": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"]},
//!   "search": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "..."}}
//! }}
//! ```
//!
//! Keys that hosts add for themselves (`autoApprove`, `alwaysAllow`, ...)
//! are ignored; `"disabled": true` leaves a server out. A server of the old
//! SSE transport (`"type": "sse"`) is refused with a message that says so:
//! our client speaks stdio and Streamable HTTP.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::Deserialize;
use serde_json::Value;

use super::transport_config::{HttpTransport, McpTransport, StdioTransport};
use crate::error::{Error, Result};

/// One entry of `mcpServers`, with the keys hosts use; the rest ignored.
#[derive(Deserialize)]
struct HostEntry {
    #[serde(rename = "type")]
    kind: Option<String>,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: BTreeMap<String, String>,
    cwd: Option<PathBuf>,
    url: Option<String>,
    #[serde(default)]
    headers: BTreeMap<String, String>,
    #[serde(default)]
    disabled: bool,
    timeout: Option<u64>,
}

/// The servers of a host's config: `value` is the whole file (whose
/// `mcpServers` is read, other keys ignored) or the `mcpServers` object
/// itself. Disabled servers are left out; the order is the file's.
pub fn servers_from_hosts_file(value: &Value) -> Result<Vec<(String, McpTransport)>> {
    let servers = value.get("mcpServers").unwrap_or(value);
    let Value::Object(servers) = servers else {
        return Err(Error::InvalidArgument(
            "`mcpServers` must be an object of servers by name".into(),
        ));
    };
    let mut out = Vec::new();
    for (name, entry) in servers {
        let entry: HostEntry = serde_json::from_value(entry.clone())
            .map_err(|e| Error::InvalidArgument(format!("MCP server `{name}`: {e}")))?;
        if entry.disabled {
            continue;
        }
        let transport = transport(name, entry)?;
        transport
            .check()
            .map_err(|e| Error::InvalidArgument(format!("MCP server `{name}`: {e}")))?;
        out.push((name.clone(), transport));
    }
    Ok(out)
}

fn transport(name: &str, entry: HostEntry) -> Result<McpTransport> {
    let bad = |what: String| {
        Err(Error::InvalidArgument(format!(
            "MCP server `{name}`: {what}"
        )))
    };
    match (entry.kind.as_deref(), entry.command, entry.url) {
        (Some("sse"), _, _) => bad(
            "the old SSE transport is not supported; use the server's Streamable HTTP URL".into(),
        ),
        (None | Some("stdio"), Some(command), None) => Ok(McpTransport::Stdio(StdioTransport {
            command,
            args: entry.args,
            env: entry.env,
            cwd: entry.cwd,
            timeout_ms: entry.timeout,
            max_message_bytes: None,
        })),
        (None | Some("http" | "streamable-http" | "streamableHttp"), None, Some(url)) => {
            Ok(McpTransport::Http(HttpTransport {
                url,
                bearer_token: None,
                headers: entry.headers,
                timeout_ms: entry.timeout,
                max_message_bytes: None,
            }))
        }
        (_, Some(_), Some(_)) => bad("give either `command` or `url`, not both".into()),
        (_, None, None) => bad("needs a `command` (stdio) or a `url` (HTTP)".into()),
        (Some(other), _, _) => bad(format!(
            "`type` `{other}` does not match its keys (stdio servers have a `command`, \
             http ones a `url`)"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_claude_desktop_file_is_read_as_it_is() {
        let file = json!({
            "globalShortcut": "Ctrl+Space",
            "mcpServers": {
                "filesystem": {
                    "command": "npx",
                    "args": ["-y", "@modelcontextprotocol/server-filesystem", "/Users/me/Desktop"],
                    "env": {"DEBUG": "1"},
                    "autoApprove": ["read_file"]
                },
                "off": {"command": "x", "disabled": true},
                "remote": {"type": "http", "url": "https://example.com/mcp", "headers": {"X-Key": "k"}}
            }
        });
        let servers = servers_from_hosts_file(&file).unwrap();
        let names: Vec<&str> = servers.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["filesystem", "remote"]);
        assert_eq!(
            servers[0].1,
            McpTransport::stdio("npx")
                .args([
                    "-y",
                    "@modelcontextprotocol/server-filesystem",
                    "/Users/me/Desktop"
                ])
                .env("DEBUG", "1")
                .into()
        );
        assert_eq!(
            servers[1].1,
            McpTransport::http("https://example.com/mcp")
                .header("X-Key", "k")
                .into()
        );
        // The object alone works too.
        let alone = servers_from_hosts_file(&file["mcpServers"]).unwrap();
        assert_eq!(alone, servers);
    }

    #[test]
    fn entries_that_cannot_work_say_why() {
        let cases = [
            (json!({"mcpServers": []}), "must be an object"),
            (json!({"mcpServers": {"a": {}}}), "needs a `command`"),
            (
                json!({"mcpServers": {"a": {"command": "x", "url": "http://h/"}}}),
                "not both",
            ),
            (
                json!({"mcpServers": {"a": {"type": "sse", "url": "http://h/sse"}}}),
                "old SSE transport",
            ),
            (
                json!({"mcpServers": {"a": {"type": "http", "command": "x"}}}),
                "does not match",
            ),
            (json!({"mcpServers": {"a": {"url": "ftp://h/"}}}), "http://"),
            (json!({"mcpServers": {"a": {"command": 5}}}), "`a`"),
        ];
        for (file, expected) in cases {
            let e = servers_from_hosts_file(&file).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidArgument, "{file}");
            assert!(e.to_string().contains(expected), "{file}: {e}");
        }
    }
}
