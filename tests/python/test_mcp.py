"""MCP servers from Python, on the mock backend: the fake server's faults
(tests/mcp/fake_server.py) and the real @modelcontextprotocol servers
installed by scripts/fetch-mcp-servers."""

import os
import pathlib
import socket
import subprocess
import sys
import time

import pytest

import zoo_keeper as zk
from conftest import ROOT, quick_tier_guard, tool_call

FAKE = str(ROOT / "tests" / "mcp" / "fake_server.py")
SERVERS = ROOT / "tests" / "mcp" / "node_modules" / "@modelcontextprotocol"
FAKE_TOOLS = 15  # how many tools the fake server lists
# Failures that must not wait for a server's timeout are bounded at
# AT_ONCE seconds, far below the 60 s default timeout: a loaded machine
# cannot turn one into the other.
AT_ONCE = 30


def npm_server(package: str) -> str:
    quick_tier_guard("the MCP servers from npm", "mcp_servers")
    path = SERVERS / package / "dist" / "index.js"
    if not path.exists():
        pytest.fail(f"{path} is missing: run scripts/fetch-mcp-servers to install the MCP test servers")
    return str(path)


def mock_agent(*replies: str) -> zk.Agent:
    return zk.Agent(provider={"type": "mock", "replies": list(replies)})


def test_fake_server_tools_results_and_errors_in_a_chat():
    with mock_agent(
        tool_call("fake__echo", {"text": "from Python"}),
        tool_call("fake__fail", {"message": "disk full"}),
        tool_call("fake__rpc_error", {}),
        "Done.",
    ) as agent:
        info = agent.add_mcp_server("fake", sys.executable, args=[FAKE], timeout=60)
        assert isinstance(info, zk.McpServerInfo)
        assert info.name == "fake" and info.server_name == "fake-server"
        assert info.tools[0] == "fake__echo" and len(info.tools) == FAKE_TOOLS
        assert info.state == "running" and info.state_reason is None
        assert agent.mcp_servers == [info]
        response = agent.chat("go")
        assert response.text == "Done."
        assert response.tool_calls[0].result == "echo: from Python"
        assert response.tool_calls[1].error == "tool `fake__fail` failed: disk full"
        assert "the database is locked" in response.tool_calls[2].error
        assert "JSON-RPC error -32001" in response.tool_calls[2].error
        assert agent.remove_mcp_server("fake") is True
        assert agent.remove_mcp_server("fake") is False
        assert agent.mcp_servers == []


def test_env_and_cwd_reach_the_server(tmp_path: pathlib.Path):
    script = tmp_path / "where.py"
    # A wrapper that checks its environment and directory, then runs the fake.
    script.write_text(
        "import os, runpy, sys\n"
        "assert os.environ['ZOO_TEST_VAR'] == 'set', 'env not passed'\n"
        f"assert os.getcwd() == {str(tmp_path)!r}, os.getcwd()\n"
        f"sys.argv = [{FAKE!r}]\n"
        f"runpy.run_path({FAKE!r}, run_name='__main__')\n"
    )
    with mock_agent(tool_call("w__echo", {"text": "ok"}), "done") as agent:
        agent.add_mcp_server("w", sys.executable, args=[script], env={"ZOO_TEST_VAR": "set"}, cwd=tmp_path)
        assert agent.chat("go").tool_calls[0].result == "echo: ok"


def test_startup_failures_and_bad_arguments():
    with mock_agent() as agent:
        with pytest.raises(zk.McpError) as failure:
            agent.add_mcp_server("db", sys.executable, args=[FAKE, "--exit-early"])
        assert failure.value.code == 14
        message = str(failure.value)
        assert "fake_server.py --exit-early" in message
        assert "cannot open database /nonexistent/db.sqlite" in message
        assert "exit status: 3" in message
        with pytest.raises(zk.McpError, match="/nonexistent/zoo-mcp"):
            agent.add_mcp_server("nope", "/nonexistent/zoo-mcp")
        with pytest.raises(zk.InvalidArgumentError):
            agent.add_mcp_server("bad name", sys.executable, args=[FAKE])
        # The engine checks the description: the same error as in C and Node.
        bad = [
            ({}, "the transport needs exactly one of `command` (stdio) or `url` (Streamable HTTP)"),
            ({"command": "cmd", "url": "http://127.0.0.1:1/mcp"}, "exactly one of `command`"),
            ({"command": "cmd", "bearer_token": "t"}, "unknown key `bearer_token` for a stdio server"),
            ({"command": "cmd", "args": "--flag"}, "`args` must be an array of strings"),
            ({"command": "cmd", "timeout": 0}, "`timeout_ms` must be a positive integer (milliseconds), got 0"),
            ({"command": "cmd", "max_message_bytes": 0}, "`max_message_bytes` must be a positive integer (bytes), got 0"),
            ({"command": "cmd", "max_message_bytes": 1.5}, "`max_message_bytes` must be a positive integer (bytes), got 1.5"),
            ({"url": "ftp://example.com"}, "`url` must start with http:// or https://"),
        ]
        for kwargs, message in bad:
            with pytest.raises(zk.InvalidArgumentError) as info:
                agent.add_mcp_server("x", **kwargs)  # type: ignore[arg-type]
            assert message in str(info.value), (kwargs, str(info.value))
        assert agent.mcp_servers == []


def test_crash_and_hang_are_tool_errors_and_the_agent_goes_on():
    with mock_agent(
        tool_call("slow__hang", {}),
        tool_call("slow__echo", {"text": "after the hang"}),
        tool_call("fake__crash", {}),
        "survived",
        "still answering",
    ) as agent:
        agent.add_mcp_server("fake", sys.executable, args=[FAKE])
        # The timeout bounds the handshake too: long enough for python to
        # start on a loaded machine.
        agent.add_mcp_server("slow", sys.executable, args=[FAKE], timeout=3)
        started = time.monotonic()
        response = agent.chat("go")
        assert time.monotonic() - started < 3 + AT_ONCE
        assert "no answer to `tools/call` within 3 s" in response.tool_calls[0].error
        assert response.tool_calls[1].result == "echo: after the hang"
        assert "segmentation fault (simulated)" in response.tool_calls[2].error
        assert response.text == "survived"
        # The crashed server is listed as dead, its tools withdrawn.
        fake = next(s for s in agent.mcp_servers if s.name == "fake")
        assert fake.state == "dead" and fake.tools == []
        assert "exit status: 7" in fake.state_reason
        slow = next(s for s in agent.mcp_servers if s.name == "slow")
        assert slow.state == "running" and len(slow.tools) == FAKE_TOOLS
        assert agent.chat("again").text == "still answering"


def test_max_message_bytes_fails_the_call_and_the_server_goes_on():
    with mock_agent(
        tool_call("big__flood", {"stream": "stdout", "mb": 2}),
        tool_call("big__echo", {"text": "small"}),
        "Done.",
    ) as agent:
        agent.add_mcp_server("big", sys.executable, args=[FAKE], max_message_bytes=64 * 1024)
        started = time.monotonic()
        response = agent.chat("go")
        assert time.monotonic() - started < AT_ONCE
        assert "larger than 64 KiB (the transport's max_message_bytes)" in response.tool_calls[0].error
        assert response.tool_calls[1].result == "echo: small"
        assert agent.mcp_servers[0].state == "running"


def test_a_server_that_stopped_reading_fails_the_call_at_once_and_is_dead():
    # The fake server shuts the reading side of its stdin before it answers
    # the last tools/list page, so the call's write finds no reader: the
    # call fails at once (not after its 60 s timeout) and the server's
    # tools are withdrawn.
    with mock_agent(tool_call("quiet__echo", {"text": "anyone?"}), "Done.") as agent:
        agent.add_mcp_server("quiet", sys.executable, args=[FAKE, "--close-stdin"], timeout=60)
        started = time.monotonic()
        response = agent.chat("go")
        assert time.monotonic() - started < AT_ONCE
        assert response.text == "Done."
        assert "closed its stdin" in response.tool_calls[0].error
        assert agent.mcp_servers[0].state == "dead"


def test_tool_list_entries_that_are_no_tools_are_skipped_and_listed():
    with mock_agent() as agent:
        info = agent.add_mcp_server("fake", sys.executable, args=[FAKE, "--bad-tools"])
        assert len(info.tools) == FAKE_TOOLS
        assert len(info.skipped) == 2
        assert any(s.startswith("`42`") for s in info.skipped)
        assert any(s.startswith("bad_schema") for s in info.skipped)


@pytest.mark.mcp_servers
def test_everything_over_stdio_through_the_agent():
    with mock_agent(tool_call("everything__get-sum", {"a": 40, "b": 2}), "It is 42.") as agent:
        info = agent.add_mcp_server("everything", "node", args=[npm_server("server-everything"), "stdio"], timeout=30)
        assert "everything__echo" in info.tools
        response = agent.chat("40 + 2?")
        assert "42" in response.tool_calls[0].result


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


FAKE_HTTP = str(ROOT / "tests" / "mcp" / "fake_http_server.py")


def start_fake_http(port: int) -> subprocess.Popen:
    """tests/mcp/fake_http_server.py on `port`, once it listens (it prints
    its port first; it runs until its stdin closes)."""
    server = subprocess.Popen(
        [sys.executable, FAKE_HTTP, "--port", str(port)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert server.stdout is not None
    assert server.stdout.readline().strip() == str(port)
    return server


def test_an_http_session_is_renewed_when_the_server_restarts_at_the_same_url():
    # The MCP spec: a client whose session gets 404 starts a new one. The
    # restarted server knows no old session; the next call renews it.
    port = free_port()
    server = start_fake_http(port)
    try:
        with mock_agent(
            tool_call("h__echo", {"text": "before"}), "one", tool_call("h__echo", {"text": "after"}), "two"
        ) as agent:
            agent.add_mcp_server("h", url=f"http://127.0.0.1:{port}/mcp", bearer_token="secret", timeout=60)
            assert agent.chat("go").tool_calls[0].result == "echo: before"
            server.kill()
            server.wait()
            server = start_fake_http(port)
            call = agent.chat("again").tool_calls[0]
            assert call.result == "echo: after", call.error
            assert agent.mcp_servers[0].state == "running"
    finally:
        server.kill()
        server.wait()


@pytest.mark.mcp_servers
def test_everything_over_streamable_http_through_the_agent():
    port = free_port()
    server = subprocess.Popen(
        ["node", npm_server("server-everything"), "streamableHttp"],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert server.poll() is None, "the HTTP server exited at start"
                assert time.monotonic() < deadline, "the HTTP server did not listen within 60 s"
                time.sleep(0.05)
        with mock_agent(tool_call("web__echo", {"message": "over HTTP"}), "ok") as agent:
            info = agent.add_mcp_server("web", url=f"http://127.0.0.1:{port}/mcp", bearer_token="unused", timeout=30)
            assert info.protocol_version
            assert agent.chat("go").tool_calls[0].result == "Echo: over HTTP"
    finally:
        server.kill()
        server.wait()


@pytest.mark.mcp_servers
def test_filesystem_server_confined_to_a_temp_dir(tmp_path: pathlib.Path):
    root = tmp_path.resolve()
    (root / "note.txt").write_text("a note")
    with mock_agent(
        tool_call("fs__read_text_file", {"path": str(root / "note.txt")}),
        tool_call("fs__read_text_file", {"path": "/etc/hostname"}),
        "read it",
    ) as agent:
        agent.add_mcp_server("fs", "node", args=[npm_server("server-filesystem"), root], timeout=30)
        response = agent.chat("read the note")
        assert response.tool_calls[0].result == "a note"
        assert response.tool_calls[1].error is not None
