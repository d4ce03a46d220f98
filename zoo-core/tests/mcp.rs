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
use zoo_core::mcp::PROTOCOL_VERSIONS;
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

fn fake(args: &[&str]) -> StdioTransport {
    McpTransport::stdio("python3")
        .args([repo()
            .join("tests/mcp/fake_server.py")
            .display()
            .to_string()])
        .args(args.iter().copied())
        .timeout(Duration::from_secs(10))
}

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
        let deadline = Instant::now() + Duration::from_secs(20);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            if let Ok(Some(status)) = server.child.try_wait() {
                panic!("the HTTP server exited at start: {status}");
            }
            assert!(
                Instant::now() < deadline,
                "the HTTP server did not listen within 20 s"
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
        use std::io::BufRead;
        let mut child = Command::new("python3")
            .arg(repo().join("tests/mcp/fake_http_server.py"))
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
    assert_eq!(info.tools, ["h__echo", "h__add_tool"]);
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
    assert_eq!(
        response.tool_calls[0].result,
        Some(json!("echo: json reply"))
    );
    assert_eq!(response.tool_calls[1].result, Some(json!("added")));
    // The change notice comes on the GET event stream.
    let deadline = Instant::now() + Duration::from_secs(10);
    while !agent.tools().iter().any(|t| t.name == "h__late") {
        assert!(Instant::now() < deadline, "the list change was not applied");
        std::thread::sleep(Duration::from_millis(20));
    }
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
    let response = agent.chat("go", ChatOptions::new()).wait().unwrap();
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
    // The agent goes on; calls to the dead server fail at once.
    let started = Instant::now();
    let response = agent.chat("again", ChatOptions::new()).wait().unwrap();
    let dead = response.tool_calls[0].error.as_deref().unwrap();
    assert!(dead.contains("exited"), "{dead}");
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(response.text, "the crashed server stays down");
}

#[test]
fn a_hang_times_out_and_the_server_keeps_serving() {
    let client = McpClient::connect(
        "fake",
        &fake(&[]).timeout(Duration::from_millis(700)).into(),
    )
    .unwrap();
    let started = Instant::now();
    let e = client.call_tool("hang", json!({})).unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(700));
    assert!(started.elapsed() < Duration::from_secs(5));
    assert_eq!(e.code(), ErrorCode::Mcp);
    assert!(
        e.to_string()
            .contains("no answer to `tools/call` within 700 ms"),
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
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited for the timeout"
    );
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
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "waited for the timeout"
    );
    assert!(
        e.contains("closed its stdout but is still running") && e.contains("closing stdout"),
        "{e}"
    );
    let e = client
        .call_tool("echo", json!({"text": "x"}))
        .unwrap_err()
        .to_string();
    assert!(e.contains("closed its stdout"), "{e}");
    // Closing kills the process that would not exit by itself.
    let started = Instant::now();
    client.close();
    assert!(started.elapsed() < Duration::from_secs(5));
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
    assert_eq!(names.len(), 11, "{names:?}");
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
    let started = Instant::now();
    let threads: Vec<_> = (0..4)
        .map(|i| {
            let client = client.clone();
            // Later requests answer first, so responses arrive out of order.
            let ms = 800 - 150 * i;
            std::thread::spawn(move || {
                text_of(
                    &client,
                    "slow",
                    json!({"ms": ms, "text": format!("reply {i}")}),
                )
            })
        })
        .collect();
    for (i, t) in threads.into_iter().enumerate() {
        assert_eq!(t.join().unwrap(), format!("reply {i}"));
    }
    // One after another they would take 2.3 s.
    assert!(
        started.elapsed() < Duration::from_millis(1800),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn federation_names_lists_changes_and_removal() {
    let agent = agent_with(&MockBackend::new());
    let info = agent.add_mcp_server("fake", fake(&[])).unwrap();
    assert_eq!(info.server_name, "fake-server");
    assert_eq!(info.tools.len(), 11);
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
    assert_eq!(agent.tools().len(), 22);
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
        let deadline = Instant::now() + Duration::from_secs(10);
        while !agent2.tools().iter().any(|t| t.name == "fake__late") {
            assert!(Instant::now() < deadline, "the list change was not applied");
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(agent2.mcp_servers()[0].tools.len(), 12);
        response
    };
    assert_eq!(response.tool_calls[0].result, Some(json!("added")));

    // Removal takes the server's tools and only those.
    assert!(agent.remove_mcp_server("fake"));
    assert!(!agent.remove_mcp_server("fake"));
    let names: Vec<String> = agent.tools().into_iter().map(|t| t.name).collect();
    assert_eq!(names.len(), 11);
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
