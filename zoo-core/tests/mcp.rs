//! The MCP client against real servers this project did not write
//! (`@modelcontextprotocol/server-everything` over stdio and Streamable
//! HTTP, `@modelcontextprotocol/server-filesystem` over stdio), against
//! `tests/mcp/fake_server.py` for the faults, and through the agentic loop
//! on the mock backend. The npm servers come from `scripts/fetch-mcp-servers`.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{json, Value};
use zoo_core::mcp::{McpServerState, DEFAULT_MAX_MESSAGE_BYTES, PROTOCOL_VERSIONS};
use zoo_core::{
    Agent, ChatOptions, Config, Error, ErrorCode, HttpTransport, McpClient, McpTransport,
    MockBackend, MockReply, Role, StdioTransport,
};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// The entry point of an npm server; fails (never skips) when absent.
fn npm_server(package: &str) -> PathBuf {
    let path = repo()
        .join("tests/mcp/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    assert!(
        path.is_file(),
        "{} is missing: run scripts/fetch-mcp-servers to install the MCP test servers",
        path.display()
    );
    path
}

fn everything_stdio() -> StdioTransport {
    McpTransport::stdio("node")
        .args([
            npm_server("server-everything").display().to_string(),
            "stdio".into(),
        ])
        .timeout(Duration::from_secs(30))
}

/// The fake server. Its timeout is long (60 s), so that a test that checks
/// a failure comes "at once" can bound it far below the timeout (30 s) and
/// still hold on a loaded machine.
fn fake(args: &[&str]) -> StdioTransport {
    McpTransport::stdio("python3")
        .args([repo()
            .join("tests/mcp/fake_server.py")
            .display()
            .to_string()])
        .args(args.iter().copied())
        .timeout(LONG)
}

/// The timeout of servers whose failures must come before it.
const LONG: Duration = Duration::from_secs(60);
/// The bound on a failure that must not wait for [`LONG`].
const AT_ONCE: Duration = Duration::from_secs(30);
/// How many tools the fake server lists.
const FAKE_TOOLS: usize = 15;

fn text_of(client: &McpClient, tool: &str, args: Value) -> String {
    let out = client.call_tool(tool, args).expect("call succeeds");
    assert!(!out.is_error, "{tool} reported an error: {}", out.text);
    out.text
}

/// A temporary directory removed at the end of the test.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> Self {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos();
        let dir =
            std::env::temp_dir().join(format!("zoo-mcp-{tag}-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        // The server resolves symlinks (macOS /tmp); compare canonical paths.
        TempDir(dir.canonicalize().unwrap())
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

// ---------------------------------------------------------------- real servers

#[test]
fn everything_over_stdio_handshake_listing_calls_and_errors() {
    let client = McpClient::connect("everything", &everything_stdio().into()).unwrap();
    let hello = client.handshake().unwrap();
    assert!(PROTOCOL_VERSIONS.contains(&hello.protocol_version.as_str()));
    assert!(hello.server_name.contains("everything"), "{hello:?}");
    check_everything(&client);
    client.close();
    // After close, calls fail at once with a clear message.
    let e = client
        .call_tool("echo", json!({"message": "x"}))
        .unwrap_err();
    assert_eq!(e.code(), ErrorCode::Mcp);
    assert!(e.to_string().contains("closed"), "{e}");
}

fn check_everything(client: &McpClient) {
    let tools = client.list_tools().unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
    for expected in ["echo", "get-sum", "get-tiny-image"] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    let sum = tools.iter().find(|t| t.name == "get-sum").unwrap();
    assert_eq!(sum.input_schema["properties"]["a"]["type"], "number");
    assert_eq!(
        text_of(client, "echo", json!({"message": "hi"})),
        "Echo: hi"
    );
    let sum = text_of(client, "get-sum", json!({"a": 2, "b": 3.5}));
    assert!(sum.contains("5.5"), "{sum}");
    let image = text_of(client, "get-tiny-image", json!({}));
    assert!(image.contains("[image: image/png,"), "{image}");
    // Bad arguments: the server reports them, as a result flagged isError
    // or a JSON-RPC error; either way a failure naming the argument.
    let failure = match client.call_tool("get-sum", json!({"a": "two", "b": 3})) {
        Ok(out) => {
            assert!(out.is_error, "{}", out.text);
            out.text
        }
        Err(e) => e.to_string(),
    };
    assert!(failure.contains('a'), "{failure}");
    let unknown = match client.call_tool("no-such-tool", json!({})) {
        Ok(out) => {
            assert!(out.is_error, "{}", out.text);
            out.text
        }
        Err(e) => e.to_string(),
    };
    assert!(unknown.contains("no-such-tool"), "{unknown}");
}

/// The everything server in its Streamable HTTP mode, on a free port;
/// killed when dropped.
struct HttpServer {
    child: Child,
    url: String,
}

impl HttpServer {
    fn start() -> Self {
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("node")
            .arg(npm_server("server-everything"))
            .arg("streamableHttp")
            .env("PORT", port.to_string())
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node starts");
        let mut server = HttpServer {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the HTTP server exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the HTTP server did not listen within 60 s"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        server
    }
}

impl Drop for HttpServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn everything_over_streamable_http() {
    let server = HttpServer::start();
    let transport = HttpTransport::new(&server.url)
        .bearer_token("not-checked-by-this-server")
        .timeout(Duration::from_secs(30));
    let client = McpClient::connect("everything", &transport.clone().into()).unwrap();
    assert!(client
        .handshake()
        .unwrap()
        .server_name
        .contains("everything"));
    check_everything(&client);
    // Several requests in flight on one session (each its own POST).
    let client = Arc::new(client);
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || {
                text_of(&client, "echo", json!({"message": format!("m{i}")}))
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), format!("Echo: m{i}"));
    }
    client.close();

    // Federated into an agent, the model's call goes over HTTP.
    let mock = MockBackend::with_script([
        MockReply::tool_call("web__get-sum", json!({"a": 40, "b": 2})),
        MockReply::text("It is 42."),
    ]);
    let agent = Agent::with_backend(mock.clone(), Config::default()).unwrap();
    let info = agent.add_mcp_server("web", transport).unwrap();
    assert!(info.tools.contains(&"web__echo".to_string()), "{info:?}");
    let response = agent.chat("40 + 2?", ChatOptions::new()).wait().unwrap();
    let call = &response.tool_calls[0];
    assert!(
        call.result
            .as_ref()
            .unwrap()
            .as_str()
            .unwrap()
            .contains("42"),
        "{call:?}"
    );

    // A server that is not there: a clear error naming the URL.
    let e = McpClient::connect(
        "gone",
        &HttpTransport::new("http://127.0.0.1:9/mcp")
            .timeout(Duration::from_secs(5))
            .into(),
    )
    .unwrap_err()
    .to_string();
    assert!(e.contains("http://127.0.0.1:9/mcp"), "{e}");
}

/// `tests/mcp/fake_http_server.py` on a free port; ends when dropped.
struct FakeHttp {
    child: Child,
    url: String,
}

impl FakeHttp {
    fn start() -> Self {
        Self::start_with(&[])
    }

    /// With `--port N` to listen at a known port, `--forget-sessions`.
    fn start_with(args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .arg(repo().join("tests/mcp/fake_http_server.py"))
            .args(args)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 starts");
        let mut line = String::new();
        std::io::BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut line)
            .unwrap();
        let port: u16 = line
            .trim()
            .parse()
            .expect("the fake HTTP server prints its port");
        FakeHttp {
            child,
            url: format!("http://127.0.0.1:{port}/mcp"),
        }
    }
}

impl Drop for FakeHttp {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn http_json_replies_session_token_and_list_changed_on_the_event_stream() {
    let server = FakeHttp::start();
    let transport = HttpTransport::new(&server.url)
        .bearer_token("secret")
        .timeout(Duration::from_secs(10));
    let mock = MockBackend::with_script([
        MockReply::tool_calls(&[
            ("h__echo", json!({"text": "json reply"})),
            ("h__add_tool", json!({})),
        ]),
        MockReply::text("ok"),
    ]);
    let agent = agent_with(&mock);
    let info = agent.add_mcp_server("h", transport).unwrap();
    assert_eq!(info.tools, ["h__echo", "h__add_tool", "h__big"]);
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!("echo: json reply"))
    );
    assert_eq!(response.tool_calls[1].result, Some(json!("added")));
    // The change notice comes on the GET event stream.
    wait_for_tool(&agent, "h__late");
    assert!(agent.remove_mcp_server("h"));
    assert!(agent.tools().is_empty());

    // A wrong token: the status, the server's reason and a hint.
    let e = McpClient::connect(
        "h",
        &HttpTransport::new(&server.url).bearer_token("wrong").into(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("HTTP 401")
            && e.contains("bad or missing bearer token")
            && e.contains("check the bearer token"),
        "{e}"
    );
}

#[test]
fn filesystem_over_stdio_confined_to_a_temp_dir() {
    let dir = TempDir::new("fs");
    std::fs::write(dir.0.join("hello.txt"), "hello from the file\n").unwrap();
    let transport = McpTransport::stdio("node")
        .args([
            npm_server("server-filesystem").display().to_string(),
            dir.0.display().to_string(),
        ])
        .timeout(Duration::from_secs(30));
    let client = McpClient::connect("fs", &transport.clone().into()).unwrap();
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    for expected in ["read_text_file", "write_file", "list_directory"] {
        assert!(
            names.iter().any(|n| n == expected),
            "{expected} not in {names:?}"
        );
    }
    let written = dir.0.join("new.txt");
    text_of(
        &client,
        "write_file",
        json!({"path": written.display().to_string(), "content": "written by the test"}),
    );
    assert_eq!(
        std::fs::read_to_string(&written).unwrap(),
        "written by the test"
    );
    let listing = text_of(
        &client,
        "list_directory",
        json!({"path": dir.0.display().to_string()}),
    );
    assert!(
        listing.contains("hello.txt") && listing.contains("new.txt"),
        "{listing}"
    );
    // Outside the allowed directory: refused.
    let outside = client
        .call_tool("read_text_file", json!({"path": "/etc/hostname"}))
        .map(|o| {
            assert!(o.is_error, "{}", o.text);
            o.text
        })
        .unwrap_or_else(|e| e.to_string());
    assert!(
        outside.to_lowercase().contains("denied") || outside.contains("outside"),
        "{outside}"
    );
    client.close();

    // Through the agentic loop: the model reads the file.
    let mock = MockBackend::with_script([
        MockReply::tool_call(
            "fs__read_text_file",
            json!({"path": dir.0.join("hello.txt").display().to_string()}),
        ),
        MockReply::tool_call("fs__read_text_file", json!({"path": "/etc/hostname"})),
        MockReply::text("The file says hello."),
    ]);
    let agent = Agent::with_backend(mock.clone(), Config::default()).unwrap();
    agent.add_mcp_server("fs", transport).unwrap();
    let response = agent
        .chat("What is in hello.txt?", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(response.text, "The file says hello.");
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!("hello from the file\n"))
    );
    let refused = response.tool_calls[1].error.as_deref().unwrap();
    assert!(refused.contains("fs__read_text_file"), "{refused}");
    assert_eq!(response.tool_errors.len(), 1);
}

// ---------------------------------------------------------------- faults

fn agent_with(mock: &MockBackend) -> Agent {
    Agent::with_backend(mock.clone(), Config::default()).unwrap()
}

/// Waits until the agent has the tool `name`, which a refresh on its own
/// thread registers after a `tools/list_changed`. Nothing outside the
/// agent can wait on that thread, so this polls, with a bound far beyond
/// what a loaded machine needs.
fn wait_for_tool(agent: &Agent, name: &str) {
    let deadline = Instant::now() + AT_ONCE;
    while !agent.tools().iter().any(|t| t.name == name) {
        assert!(
            Instant::now() < deadline,
            "the list change did not register {name} within {AT_ONCE:?}"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn crash_mid_call_is_a_tool_error_and_other_servers_keep_working() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("fake__crash", json!({})),
        MockReply::tool_call("other__echo", json!({"text": "still here"})),
        MockReply::text("done"),
        MockReply::tool_call("fake__echo", json!({"text": "x"})),
        MockReply::text("the crashed server stays down"),
    ]);
    let agent = agent_with(&mock);
    agent.add_mcp_server("fake", fake(&[])).unwrap();
    agent.add_mcp_server("other", fake(&[])).unwrap();
    let started = Instant::now();
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert!(started.elapsed() < AT_ONCE, "waited for the timeout");
    let crash = response.tool_calls[0].error.as_deref().unwrap();
    assert!(
        crash.contains("exited") && crash.contains("exit status: 7"),
        "{crash}"
    );
    assert!(crash.contains("segmentation fault (simulated)"), "{crash}");
    assert_eq!(
        response.tool_calls[1].result,
        Some(json!("echo: still here"))
    );
    assert_eq!(response.text, "done");
    // The dead server's tools were withdrawn before the model's next turn:
    // it was not offered them.
    let offered: Vec<String> = mock.calls()[1]
        .tools
        .iter()
        .map(|t| t.name.clone())
        .collect();
    assert!(
        offered.iter().all(|t| !t.starts_with("fake__")) && offered.contains(&"other__echo".into()),
        "{offered:?}"
    );
    // It is listed as dead, with the reason; the other runs.
    let servers = agent.mcp_servers();
    let dead = servers.iter().find(|s| s.name == "fake").unwrap();
    assert_eq!(dead.state, McpServerState::Dead);
    assert!(dead.tools.is_empty(), "{dead:?}");
    let reason = dead.state_reason.as_deref().unwrap();
    assert!(reason.contains("exit status: 7"), "{reason}");
    let other = servers.iter().find(|s| s.name == "other").unwrap();
    assert_eq!(
        (other.state, other.state_reason.as_deref()),
        (McpServerState::Running, None)
    );
    assert_eq!(other.tools.len(), FAKE_TOOLS);
    // The agent goes on; a call to the dead server's tool is an unknown tool.
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    let unknown = response.tool_calls[0].error.as_deref().unwrap();
    assert!(unknown.contains("fake__echo"), "{unknown}");
    assert_eq!(response.text, "the crashed server stays down");
    // Removing it works as for a live one.
    assert!(agent.remove_mcp_server("fake"));
    assert_eq!(agent.mcp_servers().len(), 1);
}

#[test]
fn a_hang_times_out_and_the_server_keeps_serving() {
    // Long enough for python3 to start and answer initialize on a loaded
    // machine, since the timeout bounds the handshake too.
    let timeout = Duration::from_secs(3);
    let client = McpClient::connect("fake", &fake(&[]).timeout(timeout).into()).unwrap();
    let started = Instant::now();
    let e = client.call_tool("hang", json!({})).unwrap_err();
    assert!(started.elapsed() >= timeout);
    assert!(started.elapsed() < timeout + AT_ONCE);
    assert_eq!(e.code(), ErrorCode::Mcp);
    assert!(
        e.to_string()
            .contains("no answer to `tools/call` within 3 s"),
        "{e}"
    );
    assert_eq!(
        text_of(&client, "echo", json!({"text": "after"})),
        "echo: after"
    );
}

#[test]
fn garbage_on_stdout_fails_the_call_in_flight_and_the_server_keeps_serving() {
    let client = McpClient::connect("fake", &fake(&[]).into()).unwrap();
    let started = Instant::now();
    let e = client
        .call_tool("garbage", json!({}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("not JSON") && e.contains("Traceback"), "{e}");
    assert!(started.elapsed() < AT_ONCE, "waited for the timeout");
    assert_eq!(text_of(&client, "echo", json!({"text": "ok"})), "echo: ok");
}

#[test]
fn a_closed_pipe_fails_the_call_in_flight_at_once() {
    let client = McpClient::connect("fake", &fake(&[]).into()).unwrap();
    let started = Instant::now();
    let e = client
        .call_tool("close_stdout", json!({}))
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < AT_ONCE, "waited for the timeout");
    assert!(
        e.contains("closed its stdout but is still running") && e.contains("closing stdout"),
        "{e}"
    );
    let e = client
        .call_tool("echo", json!({"text": "x"}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("closed its stdout"), "{e}");
    assert!(client.lost_reason().unwrap().contains("closed its stdout"));
    // Closing kills the process that would not exit by itself (it sleeps
    // for 60 s): after the 2 s grace, not after the sleep.
    let started = Instant::now();
    client.close();
    assert!(started.elapsed() < AT_ONCE);
}

#[test]
fn a_server_that_exits_at_start_names_the_command_and_its_stderr() {
    let e = McpClient::connect("db", &fake(&["--exit-early"]).into()).unwrap_err();
    assert_eq!(e.code(), ErrorCode::Mcp);
    let message = e.to_string();
    for expected in [
        "MCP server `db`",
        "failed to start",
        "python3",
        "fake_server.py --exit-early",
        "exit status: 3",
        "cannot open database /nonexistent/db.sqlite",
    ] {
        assert!(message.contains(expected), "`{expected}` not in: {message}");
    }
    let e = McpClient::connect(
        "nope",
        &McpTransport::stdio("/nonexistent/zoo-mcp-server").into(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("cannot start `/nonexistent/zoo-mcp-server`"),
        "{e}"
    );
    // Through the agent: the same error, and no tools registered.
    let agent = agent_with(&MockBackend::new());
    assert!(agent.add_mcp_server("db", fake(&["--exit-early"])).is_err());
    assert!(agent.tools().is_empty() && agent.mcp_servers().is_empty());
}

#[test]
fn is_error_results_and_json_rpc_errors_reach_the_model_as_tool_errors() {
    let mock = MockBackend::with_script([
        MockReply::tool_calls(&[
            ("fake__fail", json!({"message": "disk full"})),
            ("fake__rpc_error", json!({})),
        ]),
        MockReply::text("ok"),
    ]);
    let agent = agent_with(&mock);
    agent.add_mcp_server("fake", fake(&[])).unwrap();
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].error.as_deref(),
        Some("tool `fake__fail` failed: disk full")
    );
    let rpc = response.tool_calls[1].error.as_deref().unwrap();
    assert!(
        rpc.contains("the database is locked") && rpc.contains("JSON-RPC error -32001"),
        "{rpc}"
    );
    // The model saw both as error results of their calls.
    let seen = &mock.calls()[1].messages;
    let tool_messages: Vec<_> = seen.iter().filter(|m| m.role == Role::Tool).collect();
    assert_eq!(tool_messages.len(), 2);
    assert!(tool_messages[0].content.contains("disk full"));
    assert!(tool_messages[1].content.contains("the database is locked"));

    // The error value itself keeps the server's code.
    let client = McpClient::connect("fake", &fake(&[]).into()).unwrap();
    match client.call_tool("rpc_error", json!({})).unwrap_err() {
        Error::Mcp {
            server,
            rpc_code,
            message,
        } => {
            assert_eq!((server.as_str(), rpc_code), ("fake", Some(-32001)));
            assert_eq!(message, "the database is locked");
        }
        other => panic!("expected Error::Mcp, got {other:?}"),
    }
}

// ---------------------------------------------------------------- the session

#[test]
fn pagination_negotiation_content_and_server_requests() {
    let client = McpClient::connect("fake", &fake(&["--page-size", "2"]).into()).unwrap();
    let names: Vec<String> = client
        .list_tools()
        .unwrap()
        .into_iter()
        .map(|t| t.name)
        .collect();
    assert_eq!(names.len(), FAKE_TOOLS, "{names:?}");
    assert_eq!(names[0], "echo");
    assert_eq!(names[10], "add_tool");
    assert_eq!(
        client.handshake().unwrap().protocol_version,
        PROTOCOL_VERSIONS[0]
    );
    let media = text_of(&client, "media", json!({}));
    assert_eq!(
        media,
        "a picture:\n[image: image/png, 8 bytes]\n[resource memo://note]\nremember"
    );
    assert_eq!(text_of(&client, "ping_client", json!({})), "pong received");

    let old = McpClient::connect("old", &fake(&["--protocol", "2024-11-05"]).into()).unwrap();
    assert_eq!(old.handshake().unwrap().protocol_version, "2024-11-05");
    let e = McpClient::connect("future", &fake(&["--protocol", "2099-01-01"]).into())
        .unwrap_err()
        .to_string();
    assert!(e.contains("2099-01-01") && e.contains("2025-06-18"), "{e}");
}

#[test]
fn several_requests_are_in_flight_at_once() {
    let client = McpClient::connect("fake", &fake(&[]).into()).unwrap();
    // The server answers none until all four are in flight together (a
    // client that sent them one after another would get "alone" after a
    // minute), then answers the last to arrive first, so responses come
    // back out of order.
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            std::thread::spawn(move || {
                text_of(
                    &client,
                    "rendezvous",
                    json!({"size": 4, "text": format!("reply {i}")}),
                )
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), format!("reply {i}"));
    }
}

#[test]
fn federation_names_lists_changes_and_removal() {
    let agent = agent_with(&MockBackend::new());
    let info = agent.add_mcp_server("fake", fake(&[])).unwrap();
    assert_eq!(info.server_name, "fake-server");
    assert_eq!(
        (info.state, info.state_reason),
        (McpServerState::Running, None)
    );
    assert_eq!(info.tools.len(), FAKE_TOOLS);
    assert!(info.tools.iter().all(|t| t.starts_with("fake__")));
    let echo = agent
        .tools()
        .into_iter()
        .find(|t| t.name == "fake__echo")
        .unwrap();
    assert_eq!(echo.description, "Echo the text");
    assert_eq!(echo.parameters["required"], json!(["text"]));

    // Two servers with the same tools live side by side.
    agent.add_mcp_server("twin", fake(&[])).unwrap();
    assert_eq!(agent.tools().len(), 2 * FAKE_TOOLS);
    let e = agent.add_mcp_server("twin", fake(&[])).unwrap_err();
    assert_eq!(e.code(), ErrorCode::InvalidArgument);
    for bad in ["", "has space", "a__b", &"x".repeat(40)] {
        let e = agent.add_mcp_server(bad, fake(&[])).unwrap_err();
        assert_eq!(e.code(), ErrorCode::InvalidArgument, "{bad}");
    }

    // notifications/tools/list_changed adds the new tool.
    let mock_reply = agent
        .mcp_servers()
        .into_iter()
        .map(|s| s.name)
        .collect::<Vec<_>>();
    assert_eq!(mock_reply, ["fake", "twin"]);
    let response = {
        let mock = MockBackend::with_script([
            MockReply::tool_call("fake__add_tool", json!({})),
            MockReply::text("added"),
        ]);
        let agent2 = agent_with(&mock);
        agent2.add_mcp_server("fake", fake(&[])).unwrap();
        let response = agent2.chat("add", ChatOptions::new()).wait().unwrap();
        wait_for_tool(&agent2, "fake__late");
        assert_eq!(agent2.mcp_servers()[0].tools.len(), FAKE_TOOLS + 1);
        response
    };
    assert_eq!(response.tool_calls[0].result, Some(json!("added")));

    // Removal takes the server's tools and only those.
    assert!(agent.remove_mcp_server("fake"));
    assert!(!agent.remove_mcp_server("fake"));
    let names: Vec<String> = agent.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), FAKE_TOOLS);
    assert!(names.iter().all(|n| n.starts_with("twin__")), "{names:?}");
}

#[test]
fn agentic_loop_calls_an_mcp_tool_and_the_model_reads_its_result() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("fake__echo", json!({"text": "hello MCP"})),
        MockReply::text("The server said hello."),
    ]);
    let agent = agent_with(&mock);
    agent.add_mcp_server("fake", fake(&[])).unwrap();
    let response = agent
        .chat("Say hello through MCP", ChatOptions::new())
        .wait()
        .unwrap();
    assert_eq!(response.text, "The server said hello.");
    assert_eq!(response.tool_calls.len(), 1);
    assert_eq!(response.tool_calls[0].name, "fake__echo");
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!("echo: hello MCP"))
    );
    let calls = mock.calls();
    // The model was shown the MCP tool with the server's schema…
    let shown = calls[0]
        .tools
        .iter()
        .find(|t| t.name == "fake__echo")
        .unwrap();
    assert_eq!(shown.parameters["properties"]["text"]["type"], "string");
    // …and read its result as the call's tool message.
    let result = calls[1]
        .messages
        .iter()
        .rfind(|m| m.role == Role::Tool)
        .unwrap();
    assert_eq!(result.content, "echo: hello MCP");

    // Arguments that break the server's schema never reach the server.
    mock.push_replies([
        MockReply::tool_call("fake__echo", json!({"text": 5})),
        MockReply::text("gave up"),
    ]);
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    let error = response.tool_calls[0].error.as_deref().unwrap();
    assert!(
        error.contains("validation failed") && error.contains("/text"),
        "{error}"
    );
}

// ---------------------------------------------------------------- a server that stops

#[test]
fn a_server_that_closes_its_stdin_fails_the_call_in_flight_at_once() {
    let agent = agent_with(&MockBackend::new());
    agent.add_mcp_server("fake", fake(&[])).unwrap();
    let client = McpClient::connect("direct", &fake(&[]).into()).unwrap();
    for (name, call) in [
        ("through the agent", None),
        ("on a client", Some(client.clone())),
    ] {
        let started = Instant::now();
        let e = match call {
            Some(client) => client
                .call_tool("close_stdin", json!({}))
                .unwrap_err()
                .to_string(),
            None => {
                let mock = MockBackend::with_script([
                    MockReply::tool_call("fake__close_stdin", json!({})),
                    MockReply::text("done"),
                ]);
                let agent = agent_with(&mock);
                agent.add_mcp_server("fake", fake(&[])).unwrap();
                let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
                let info = &agent.mcp_servers()[0];
                assert_eq!(info.state, McpServerState::Dead, "{info:?}");
                assert!(agent.tools().is_empty());
                response.tool_calls[0].error.clone().unwrap()
            }
        };
        // Not after the 60 s timeout: the server still runs, but it can
        // never read the request, and the client saw its stdin close.
        assert!(
            started.elapsed() < AT_ONCE,
            "{name}: waited for the timeout"
        );
        assert!(
            e.contains("closed its stdin but is still running"),
            "{name}: {e}"
        );
    }
    let e = client.call_tool("echo", json!({"text": "x"})).unwrap_err();
    assert!(e.to_string().contains("closed its stdin"), "{e}");
    // The first agent's server is another process: untouched.
    assert_eq!(agent.mcp_servers()[0].state, McpServerState::Running);
}

/// The fake server shuts down the reading side of its stdin before it
/// answers the last tools/list page, so the first write after the handshake
/// fails (EPIPE) whatever the timing: the write itself must notice, with
/// the same report as when the server is seen closing its stdin.
#[test]
fn a_write_to_a_server_that_stopped_reading_fails_and_withdraws_its_tools() {
    let mock = MockBackend::with_script([
        MockReply::tool_call("quiet__echo", json!({"text": "anyone?"})),
        MockReply::text("done"),
    ]);
    let agent = agent_with(&mock);
    agent
        .add_mcp_server("quiet", fake(&["--close-stdin"]))
        .unwrap();
    let started = Instant::now();
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert!(started.elapsed() < AT_ONCE, "waited for the timeout");
    let error = response.tool_calls[0].error.as_deref().unwrap();
    assert!(error.contains("closed its stdin"), "{error}");
    let info = &agent.mcp_servers()[0];
    assert_eq!(info.state, McpServerState::Dead);
    assert!(info
        .state_reason
        .as_deref()
        .unwrap()
        .contains("closed its stdin"));
    assert!(agent.tools().is_empty());
}

#[test]
fn a_server_that_does_not_read_cannot_block_a_write_forever() {
    let timeout = Duration::from_secs(3);
    let client = McpClient::connect("fake", &fake(&[]).timeout(timeout).into()).unwrap();
    assert_eq!(text_of(&client, "stop_reading", json!({})), "not reading");
    // Far more than a socket buffer holds: the write blocks until the timeout.
    let big = "w".repeat(8 * 1024 * 1024);
    let started = Instant::now();
    let e = client
        .call_tool("echo", json!({"text": big}))
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < timeout + AT_ONCE);
    assert!(e.contains("did not read its stdin for 3 s"), "{e}");
    let e = client.call_tool("echo", json!({"text": "x"})).unwrap_err();
    assert!(e.to_string().contains("did not read its stdin"), "{e}");
}

#[test]
fn a_failed_initialize_is_reported_within_its_timeout() {
    // The server never answers and ignores the end of its stdin: it used
    // to get the 2 s exit grace on top of the 2 s timeout.
    let timeout = Duration::from_secs(2);
    let started = Instant::now();
    let e = McpClient::connect(
        "slow",
        &fake(&["--hang-initialize"]).timeout(timeout).into(),
    )
    .unwrap_err()
    .to_string();
    let took = started.elapsed();
    assert!(e.contains("no answer to `initialize` within 2 s"), "{e}");
    assert!(took >= timeout, "{took:?}");
    assert!(took < Duration::from_millis(3500), "{took:?}");
}

// ---------------------------------------------------------------- sizes

/// The resident memory of this process, from /proc (Linux).
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .expect("VmRSS in /proc/self/status");
    let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kb * 1024
}

#[test]
fn a_message_without_end_is_cut_at_the_limit_and_the_server_keeps_serving() {
    let client = McpClient::connect("fake", &fake(&[]).into()).unwrap();
    let before = resident_bytes();
    let started = Instant::now();
    // 300 MiB without a newline on stdout.
    let e = client
        .call_tool("flood", json!({"stream": "stdout", "mb": 300}))
        .unwrap_err()
        .to_string();
    assert!(started.elapsed() < AT_ONCE, "waited for the timeout");
    assert!(
        e.contains("larger than 16 MiB") && e.contains("max_message_bytes") && e.contains("xxx"),
        "{e}"
    );
    // The rest is read past; the server answers once it is through.
    assert_eq!(
        text_of(&client, "echo", json!({"text": "after"})),
        "echo: after"
    );
    // And 300 MiB without a newline on stderr.
    assert_eq!(
        text_of(&client, "flood", json!({"stream": "stderr", "mb": 300})),
        "flooded"
    );
    let grown = resident_bytes().saturating_sub(before);
    // It was 287 MB on stdout and 179 MB more on stderr.
    assert!(grown < 100 * 1024 * 1024, "grew by {grown} bytes");
    // A crash now reports a stderr tail of bounded size.
    let e = client
        .call_tool("crash", json!({}))
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("exit status: 7") && e.contains("(cut"),
        "{}",
        &e[..e.len().min(2000)]
    );
    assert!(e.len() < 64 * 1024, "{} bytes", e.len());
}

#[test]
fn max_message_bytes_is_the_transport_option_in_force() {
    assert_eq!(DEFAULT_MAX_MESSAGE_BYTES, 16 * 1024 * 1024);
    let transport = fake(&[]).max_message_bytes(64 * 1024);
    let mock = MockBackend::with_script([
        MockReply::tool_calls(&[
            ("fake__flood", json!({"stream": "stdout", "mb": 1})),
            ("fake__echo", json!({"text": "small"})),
        ]),
        MockReply::text("done"),
    ]);
    let agent = agent_with(&mock);
    agent.add_mcp_server("fake", transport).unwrap();
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    let error = response.tool_calls[0].error.as_deref().unwrap();
    assert!(
        error.contains("larger than 64 KiB (the transport's max_message_bytes)"),
        "{error}"
    );
    assert_eq!(response.tool_calls[1].result, Some(json!("echo: small")));
    // Still running: one oversized message is no death.
    assert_eq!(agent.mcp_servers()[0].state, McpServerState::Running);
}

#[test]
fn http_bodies_and_events_over_the_limit_fail_that_request() {
    let server = FakeHttp::start();
    let client = McpClient::connect(
        "h",
        &HttpTransport::new(&server.url)
            .bearer_token("secret")
            .timeout(LONG)
            .max_message_bytes(1024 * 1024)
            .into(),
    )
    .unwrap();
    for sse in [false, true] {
        let small = text_of(&client, "big", json!({"kib": 100, "sse": sse}));
        assert_eq!(small.len(), 100 * 1024);
        let e = client
            .call_tool("big", json!({"kib": 4096, "sse": sse}))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("larger than 1 MiB (the transport's max_message_bytes)"),
            "sse {sse}: {e}"
        );
        assert_eq!(text_of(&client, "echo", json!({"text": "ok"})), "echo: ok");
    }
}

// ---------------------------------------------------------------- tool lists

#[test]
fn tool_list_entries_with_bad_names_or_schemas_are_skipped_and_listed() {
    let client = McpClient::connect("fake", &fake(&["--bad-tools"]).into()).unwrap();
    let list = client.tool_list().unwrap();
    assert_eq!(list.tools.len(), FAKE_TOOLS + 1, "{:?}", list.skipped);
    assert_eq!(list.skipped.len(), 1, "{:?}", list.skipped);
    assert!(list.skipped[0].starts_with("`42`"), "{:?}", list.skipped);
    // Through the agent: the server is added, with both listed as skipped.
    let agent = agent_with(&MockBackend::new());
    let info = agent
        .add_mcp_server("fake", fake(&["--bad-tools"]))
        .unwrap();
    assert_eq!(info.tools.len(), FAKE_TOOLS);
    assert_eq!(info.skipped.len(), 2, "{:?}", info.skipped);
    assert!(
        info.skipped.iter().any(|s| s.starts_with("`42`")),
        "{:?}",
        info.skipped
    );
    assert!(
        info.skipped.iter().any(|s| s.starts_with("bad_schema")),
        "{:?}",
        info.skipped
    );
}

// ---------------------------------------------------------------- HTTP sessions

/// A port no one listens on yet.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn http_session_is_renewed_when_the_server_restarts_at_the_same_url() {
    let port = free_port().to_string();
    let server = FakeHttp::start_with(&["--port", &port]);
    let url = server.url.clone();
    let mock = MockBackend::with_script([
        MockReply::tool_call("h__echo", json!({"text": "before"})),
        MockReply::text("one"),
        MockReply::tool_calls(&[
            ("h__echo", json!({"text": "after"})),
            ("h__add_tool", json!({})),
        ]),
        MockReply::text("two"),
    ]);
    let agent = agent_with(&mock);
    agent
        .add_mcp_server(
            "h",
            HttpTransport::new(&url)
                .bearer_token("secret")
                .timeout(LONG),
        )
        .unwrap();
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(response.tool_calls[0].result, Some(json!("echo: before")));
    // The server restarts: it knows none of the old sessions.
    drop(server);
    let server = FakeHttp::start_with(&["--port", &port]);
    assert_eq!(server.url, url);
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!("echo: after")),
        "{:?}",
        response.tool_calls[0].error
    );
    assert_eq!(response.tool_calls[1].result, Some(json!("added")));
    // The event stream was reopened for the new session.
    wait_for_tool(&agent, "h__late");
    assert_eq!(agent.mcp_servers()[0].state, McpServerState::Running);
}

#[test]
fn http_session_renewal_is_tried_once_per_failed_request() {
    // This server forgets every session right after making it.
    let server = FakeHttp::start_with(&["--forget-sessions"]);
    let started = Instant::now();
    let e = McpClient::connect(
        "h",
        &HttpTransport::new(&server.url)
            .bearer_token("secret")
            .timeout(LONG)
            .into(),
    )
    .and_then(|client| client.list_tools())
    .unwrap_err()
    .to_string();
    assert!(started.elapsed() < AT_ONCE);
    assert!(
        e.contains("HTTP 404 (the server no longer knows this session)"),
        "{e}"
    );
}
