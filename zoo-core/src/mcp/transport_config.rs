//! How to reach an MCP server: the description every language passes to
//! `add_mcp_server` (as Rust values, or as JSON from C).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// How long a request may wait for its response when no timeout is given.
/// MCP's reference SDK uses the same default.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(60);

/// The largest message read from a server when no `max_message_bytes` is
/// given: 16 MiB, the bound the official Rust SDK puts on an SSE event.
pub const DEFAULT_MAX_MESSAGE_BYTES: u64 = 16 * 1024 * 1024;

/// A server started as a child process, speaking newline-delimited JSON-RPC
/// on its stdin and stdout. Its stderr goes to the `zoo_core::mcp` tracing
/// target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StdioTransport {
    /// The program, found on `PATH` when it has no slash.
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Variables added to (or replacing those of) this process's environment.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Its working directory (this process's when absent).
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    /// The longest any request may wait for its response, in milliseconds
    /// (60 000 when absent).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The largest message read from the server, in bytes (16 MiB when
    /// absent). A larger one fails the requests it could answer with an
    /// error that says so; nothing bigger is ever held in memory.
    #[serde(default)]
    pub max_message_bytes: Option<u64>,
}

impl StdioTransport {
    /// A server started with `command` and no arguments.
    pub fn new(command: impl Into<String>) -> Self {
        StdioTransport {
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
            cwd: None,
            timeout_ms: None,
            max_message_bytes: None,
        }
    }

    /// Appends arguments.
    pub fn args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Sets one environment variable for the server.
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(key.into(), value.into());
        self
    }

    /// Sets the server's working directory.
    pub fn cwd(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cwd = Some(dir.into());
        self
    }

    /// Sets the request timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(duration_ms(timeout));
        self
    }

    /// Sets the largest message read from the server, in bytes.
    pub fn max_message_bytes(mut self, bytes: u64) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }

    /// The command line, for messages.
    pub fn command_line(&self) -> String {
        std::iter::once(self.command.as_str())
            .chain(self.args.iter().map(String::as_str))
            .collect::<Vec<_>>()
            .join(" ")
    }
}

/// A server reached over MCP's Streamable HTTP transport: every message is a
/// POST to one endpoint, answered with JSON or a server-sent-event stream.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HttpTransport {
    /// The MCP endpoint, such as `http://127.0.0.1:3001/mcp`.
    pub url: String,
    /// Sent as `Authorization: Bearer <token>` when given.
    #[serde(default)]
    pub bearer_token: Option<String>,
    /// Extra headers sent with every request.
    #[serde(default)]
    pub headers: BTreeMap<String, String>,
    /// The longest any request may wait for its response, in milliseconds
    /// (60 000 when absent).
    #[serde(default)]
    pub timeout_ms: Option<u64>,
    /// The largest message read from the server, in bytes (16 MiB when
    /// absent). A larger one fails the requests it could answer with an
    /// error that says so; nothing bigger is ever held in memory.
    #[serde(default)]
    pub max_message_bytes: Option<u64>,
}

impl HttpTransport {
    /// A server at `url`.
    pub fn new(url: impl Into<String>) -> Self {
        HttpTransport {
            url: url.into(),
            bearer_token: None,
            headers: BTreeMap::new(),
            timeout_ms: None,
            max_message_bytes: None,
        }
    }

    /// Authenticates with a bearer token.
    pub fn bearer_token(mut self, token: impl Into<String>) -> Self {
        self.bearer_token = Some(token.into());
        self
    }

    /// Adds a header to every request.
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.insert(name.into(), value.into());
        self
    }

    /// Sets the request timeout.
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout_ms = Some(duration_ms(timeout));
        self
    }

    /// Sets the largest message read from the server, in bytes.
    pub fn max_message_bytes(mut self, bytes: u64) -> Self {
        self.max_message_bytes = Some(bytes);
        self
    }
}

/// How to reach an MCP server. As JSON (the C ABI's form) it is an object
/// with `"type": "stdio"` and the fields of [`StdioTransport`], or
/// `"type": "http"` and those of [`HttpTransport`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum McpTransport {
    /// A child process on stdin/stdout.
    Stdio(StdioTransport),
    /// Streamable HTTP.
    #[serde(alias = "streamable_http")]
    Http(HttpTransport),
}

impl McpTransport {
    /// A child process started with `command`; see [`StdioTransport`] for
    /// arguments, environment and working directory.
    pub fn stdio(command: impl Into<String>) -> StdioTransport {
        StdioTransport::new(command)
    }

    /// A Streamable HTTP endpoint; see [`HttpTransport`].
    pub fn http(url: impl Into<String>) -> HttpTransport {
        HttpTransport::new(url)
    }

    /// Parses the JSON description: `{"type": "stdio" | "http", ...}`, or
    /// without `type`, the kind its `command` (stdio) or `url` (Streamable
    /// HTTP) says. Every front door passes its description here, so a
    /// wrong one gets the same error everywhere: `invalid_json` for text
    /// that is not JSON, `invalid_argument` naming the key and its rule for
    /// anything else.
    pub fn from_json(json: &str) -> Result<Self> {
        let value: serde_json::Value = serde_json::from_str(json)
            .map_err(|e| Error::InvalidJson(format!("MCP transport: {e}")))?;
        Self::from_value(&value)
    }

    /// [`from_json`](Self::from_json) on a parsed value.
    pub fn from_value(value: &serde_json::Value) -> Result<Self> {
        let object = value.as_object().ok_or_else(|| {
            refused(
                "the transport must be an object: {command, args?, env?, cwd?} (stdio) or \
                 {url, bearer_token?, headers?} (Streamable HTTP)"
                    .into(),
            )
        })?;
        let stdio = kind_of(object)?;
        let (allowed, kind) = if stdio {
            (STDIO_KEYS, "a stdio")
        } else {
            (HTTP_KEYS, "an HTTP")
        };
        for (key, item) in object.iter().filter(|(key, _)| *key != "type") {
            let Some((_, rule)) = allowed.iter().find(|(name, _)| name == key) else {
                let names: Vec<String> = allowed.iter().map(|(n, _)| format!("`{n}`")).collect();
                return Err(refused(format!(
                    "unknown key `{key}` for {kind} server (expected {})",
                    names.join(", ")
                )));
            };
            rule.check(key, item).map_err(refused)?;
        }
        let mut tagged = object.clone();
        tagged.insert("type".into(), (if stdio { "stdio" } else { "http" }).into());
        let transport: McpTransport =
            serde_json::from_value(tagged.into()).map_err(|e| refused(e.to_string()))?;
        transport.check()?;
        Ok(transport)
    }

    /// Rejects descriptions that could never work, before anything starts.
    pub fn check(&self) -> Result<()> {
        let bad = |what: &str| Err(refused(what.to_owned()));
        match self {
            McpTransport::Stdio(s) if s.command.trim().is_empty() => bad("`command` is empty"),
            McpTransport::Http(h)
                if !(h.url.starts_with("http://") || h.url.starts_with("https://")) =>
            {
                bad(&format!(
                    "`url` must start with http:// or https://, got `{}`",
                    h.url
                ))
            }
            _ if self.timeout().is_zero() => {
                bad("`timeout_ms` must be a positive integer (milliseconds), got 0")
            }
            _ if self.max_message_bytes() == 0 => {
                bad("`max_message_bytes` must be a positive integer (bytes), got 0")
            }
            _ => Ok(()),
        }
    }

    /// The request timeout.
    pub fn timeout(&self) -> Duration {
        let ms = match self {
            McpTransport::Stdio(s) => s.timeout_ms,
            McpTransport::Http(h) => h.timeout_ms,
        };
        ms.map(Duration::from_millis).unwrap_or(DEFAULT_TIMEOUT)
    }

    /// The largest message read from the server, in bytes.
    pub fn max_message_bytes(&self) -> u64 {
        let bytes = match self {
            McpTransport::Stdio(s) => s.max_message_bytes,
            McpTransport::Http(h) => h.max_message_bytes,
        };
        bytes.unwrap_or(DEFAULT_MAX_MESSAGE_BYTES)
    }

    /// The command line or URL, for messages.
    pub fn describe(&self) -> String {
        match self {
            McpTransport::Stdio(s) => format!("command `{}`", s.command_line()),
            McpTransport::Http(h) => format!("URL {}", h.url),
        }
    }
}

/// The keys of a stdio description and what each holds.
const STDIO_KEYS: &[(&str, Rule)] = &[
    ("command", Rule::Text),
    ("args", Rule::Texts),
    ("env", Rule::TextMap),
    ("cwd", Rule::Text),
    ("timeout_ms", Rule::Milliseconds),
    ("max_message_bytes", Rule::Bytes),
];

/// The keys of a Streamable HTTP description and what each holds.
const HTTP_KEYS: &[(&str, Rule)] = &[
    ("url", Rule::Text),
    ("bearer_token", Rule::Text),
    ("headers", Rule::TextMap),
    ("timeout_ms", Rule::Milliseconds),
    ("max_message_bytes", Rule::Bytes),
];

/// What one key of a description must hold.
#[derive(Clone, Copy)]
enum Rule {
    Text,
    Texts,
    TextMap,
    Milliseconds,
    Bytes,
}

impl Rule {
    /// Why `value` breaks the rule, naming `key` (or the entry of it).
    fn check(self, key: &str, value: &serde_json::Value) -> std::result::Result<(), String> {
        let positive = value.as_u64().is_some_and(|n| n >= 1);
        match self {
            Rule::Text if value.is_string() => Ok(()),
            Rule::Text => Err(format!("`{key}` must be a string")),
            Rule::Texts
                if value
                    .as_array()
                    .is_some_and(|a| a.iter().all(|v| v.is_string())) =>
            {
                Ok(())
            }
            Rule::Texts => Err(format!("`{key}` must be an array of strings")),
            Rule::TextMap => {
                let entries = value
                    .as_object()
                    .ok_or_else(|| format!("`{key}` must be an object of strings"))?;
                match entries.iter().find(|(_, v)| !v.is_string()) {
                    Some((name, _)) => Err(format!("`{key}.{name}` must be a string")),
                    None => Ok(()),
                }
            }
            Rule::Milliseconds if positive => Ok(()),
            Rule::Milliseconds => Err(format!(
                "`{key}` must be a positive integer (milliseconds), got {value}"
            )),
            Rule::Bytes if positive => Ok(()),
            Rule::Bytes => Err(format!(
                "`{key}` must be a positive integer (bytes), got {value}"
            )),
        }
    }
}

/// Whether a description is of a stdio server (else Streamable HTTP): its
/// `type`, or without one, which of `command` and `url` it has.
fn kind_of(object: &serde_json::Map<String, serde_json::Value>) -> Result<bool> {
    match object.get("type").map(|t| t.as_str()) {
        Some(Some("stdio")) => Ok(true),
        Some(Some("http" | "streamable_http")) => Ok(false),
        Some(other) => Err(refused(format!(
            "`type` must be \"stdio\" or \"http\", got {}",
            other.map_or_else(|| object["type"].to_string(), |t| format!("\"{t}\""))
        ))),
        None => match (object.contains_key("command"), object.contains_key("url")) {
            (true, false) => Ok(true),
            (false, true) => Ok(false),
            _ => Err(refused(
                "the transport needs exactly one of `command` (stdio) or `url` (Streamable HTTP)"
                    .into(),
            )),
        },
    }
}

/// A description that cannot work: `invalid_argument`, saying why.
fn refused(why: String) -> Error {
    Error::InvalidArgument(format!("MCP transport: {why}"))
}

impl From<StdioTransport> for McpTransport {
    fn from(t: StdioTransport) -> Self {
        McpTransport::Stdio(t)
    }
}

impl From<HttpTransport> for McpTransport {
    fn from(t: HttpTransport) -> Self {
        McpTransport::Http(t)
    }
}

fn duration_ms(d: Duration) -> u64 {
    u64::try_from(d.as_millis()).unwrap_or(u64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_both_kinds_and_rejects_unknown_keys() {
        let t = McpTransport::from_json(
            r#"{"type":"stdio","command":"node","args":["s.js"],"env":{"A":"1"},"cwd":"/tmp","timeout_ms":500}"#,
        )
        .unwrap();
        assert_eq!(
            t,
            McpTransport::stdio("node")
                .args(["s.js"])
                .env("A", "1")
                .cwd("/tmp")
                .timeout(Duration::from_millis(500))
                .into()
        );
        assert_eq!(t.timeout(), Duration::from_millis(500));
        let t = McpTransport::from_json(
            r#"{"type":"http","url":"http://127.0.0.1:1/mcp","bearer_token":"x"}"#,
        )
        .unwrap();
        assert_eq!(t.timeout(), DEFAULT_TIMEOUT);
        let e = McpTransport::from_json(r#"{"type":"stdio","command":"x","argz":[]}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("argz"), "{e}");
        let e = McpTransport::from_json(r#"{"type":"pigeon"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("pigeon"), "{e}");
        let e = McpTransport::from_json(r#"{"type":"http","url":"ftp://x"}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("http://"), "{e}");
        let e = McpTransport::from_json(r#"{"type":"stdio","command":"x","timeout_ms":0}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("timeout_ms"), "{e}");
        let t = McpTransport::from_json(
            r#"{"type":"http","url":"http://127.0.0.1:1/mcp","max_message_bytes":1024}"#,
        )
        .unwrap();
        assert_eq!(t.max_message_bytes(), 1024);
        assert_eq!(
            McpTransport::from(McpTransport::stdio("x")).max_message_bytes(),
            DEFAULT_MAX_MESSAGE_BYTES
        );
        let e = McpTransport::from_json(r#"{"type":"stdio","command":"x","max_message_bytes":0}"#)
            .unwrap_err()
            .to_string();
        assert!(e.contains("max_message_bytes"), "{e}");
    }

    #[test]
    fn the_kind_follows_command_or_url_and_every_error_names_its_key() {
        let t = McpTransport::from_json(r#"{"command":"x","args":["-v"]}"#).unwrap();
        assert!(matches!(t, McpTransport::Stdio(ref s) if s.args == ["-v"]));
        let t = McpTransport::from_json(r#"{"url":"https://host/mcp"}"#).unwrap();
        assert!(matches!(t, McpTransport::Http(_)));
        let error = |json: &str| {
            let e = McpTransport::from_json(json).unwrap_err();
            assert_eq!(e.code(), crate::ErrorCode::InvalidArgument, "{json}");
            e.to_string()
        };
        let prefix = "invalid argument: MCP transport: ";
        for (json, why) in [
            ("[]", "the transport must be an object"),
            ("{}", "the transport needs exactly one of `command` (stdio) or `url`"),
            (r#"{"command":"x","url":"http://h"}"#, "exactly one of"),
            (r#"{"command":"x","bearer_token":"t"}"#, "unknown key `bearer_token` for a stdio server (expected `command`, `args`, `env`, `cwd`, `timeout_ms`, `max_message_bytes`)"),
            (r#"{"url":"http://h","args":[]}"#, "unknown key `args` for an HTTP server"),
            (r#"{"command":"x","args":"-v"}"#, "`args` must be an array of strings"),
            (r#"{"command":"x","env":{"N":1}}"#, "`env.N` must be a string"),
            (r#"{"command":"x","timeout_ms":1.5}"#, "`timeout_ms` must be a positive integer (milliseconds), got 1.5"),
            (r#"{"url":"http://h","max_message_bytes":"1"}"#, "`max_message_bytes` must be a positive integer (bytes), got \"1\""),
            (r#"{"type":7,"command":"x"}"#, "`type` must be \"stdio\" or \"http\", got 7"),
            (r#"{"type":"stdio"}"#, "missing field `command`"),
        ] {
            let got = error(json);
            assert!(got.starts_with(prefix) && got.contains(why), "{json}: {got}");
        }
        let e = McpTransport::from_json("{").unwrap_err();
        assert_eq!(e.code(), crate::ErrorCode::InvalidJson);
    }
}
