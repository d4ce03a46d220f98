"""Built-in tools in Python: through the config (registered on the
workspace, a search that runs, a bad workspace named in the error) and
through `agent.add_builtin_tools` (its errors, confirmation allowing,
refusing, failing and async, hostile paths, bash's timeout, cap and stop,
the model reading a result's text, an image)."""

import base64
import json
import pathlib
import time

import pytest

from zoo_keeper import Agent, InvalidArgumentError, InvalidConfigError


def test_builtin_tools_from_the_config(tmp_path: pathlib.Path) -> None:
    (tmp_path / "notes.txt").write_text("buy milk\n")
    call = "<tool_call>" + json.dumps({"name": "search", "arguments": {"pattern": "milk"}}) + "</tool_call>"
    builtin = {"tools": ["list_files", "search", "read_file"], "workspace": str(tmp_path)}
    with Agent(provider={"type": "mock", "replies": [call, "Found."]}, builtin_tools=builtin) as agent:
        assert [t["name"] for t in agent.tools] == ["list_files", "search", "read_file"]
        response = agent.chat("where is milk?")
        assert response.tool_calls[0].result["text"] == "notes.txt:1: buy milk"
    with pytest.raises(InvalidConfigError, match="builtin_tools.workspace"):
        Agent(provider={"type": "mock"}, builtin_tools={"tools": ["read_file"], "workspace": str(tmp_path / "missing")})


def call(name: str, arguments: dict) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def mock(*replies: object) -> Agent:
    # The hostile calls fail on purpose more often than the default retries
    # allow; bash's output is cut to fit the mock's window.
    return Agent(
        provider={"type": "mock", "replies": list(replies)}, max_tool_retries=5, max_tool_result_tokens=500
    )


def test_add_builtin_tools_registers_and_checks(tmp_path: pathlib.Path) -> None:
    with mock() as agent:
        agent.add_builtin_tools(["read_file", "bash"], workspace=tmp_path, bash_deny=["sudo"])
        assert [t["name"] for t in agent.tools] == ["read_file", "bash"]
        with pytest.raises(InvalidArgumentError, match="unknown built-in tool `rm_rf`"):
            agent.add_builtin_tools(["rm_rf"], workspace=tmp_path)
        with pytest.raises(InvalidArgumentError, match="workspace"):
            agent.add_builtin_tools(["write_file"], workspace=tmp_path / "missing")
        with pytest.raises(
            InvalidArgumentError,
            match="the confirm callback of the built-in tools must be a function, got int",
        ):
            agent.add_builtin_tools(["write_file"], workspace=tmp_path, confirm=3)  # type: ignore[arg-type]
        assert [t["name"] for t in agent.tools] == ["read_file", "bash"]


def test_confirmation_allows_refuses_and_fails(tmp_path: pathlib.Path) -> None:
    write = call("write_file", {"path": "notes/a.txt", "content": "hello"})
    answers = iter([False, RuntimeError("no terminal"), True])
    asked = []

    def confirm(tool: str, arguments: dict) -> bool:
        asked.append((tool, arguments))
        answer = next(answers)
        if isinstance(answer, Exception):
            raise answer
        return answer

    with mock(write, "Refused.", write, "Failed.", write, "Written.") as agent:
        agent.add_builtin_tools(["write_file"], workspace=str(tmp_path), confirm=confirm)
        refused = agent.chat("write")
        assert refused.tool_calls[0].error == "tool `write_file` failed: the user refused this write_file call"
        assert not (tmp_path / "notes").exists()
        failed = agent.chat("write")
        assert failed.tool_calls[0].error == (
            "tool `write_file` failed: the write_file call was refused: the confirmation callback failed: "
            "RuntimeError: no terminal"
        )
        assert not (tmp_path / "notes").exists()
        written = agent.chat("write")
        assert written.tool_calls[0].result == {
            "text": "wrote 5 bytes to notes/a.txt",
            "details": {"path": "notes/a.txt", "bytes": 5},
        }
        assert (tmp_path / "notes" / "a.txt").read_text() == "hello"
    assert asked == [("write_file", {"path": "notes/a.txt", "content": "hello"})] * 3


def test_an_async_confirmation(tmp_path: pathlib.Path) -> None:
    async def confirm(tool: str, arguments: dict) -> bool:
        return arguments["command"] == "echo yes"

    with mock(call("bash", {"command": "echo yes"}), call("bash", {"command": "echo no"}), "ok") as agent:
        agent.add_builtin_tools(["bash"], workspace=tmp_path, confirm=confirm)
        response = agent.chat("run")
        assert response.tool_calls[0].result["details"]["stdout"] == "yes\n"
        assert response.tool_calls[1].error == "tool `bash` failed: the user refused this bash call"


def test_hostile_paths_are_refused(tmp_path: pathlib.Path) -> None:
    (tmp_path / "inside.txt").write_text("fine\n")
    (tmp_path / "etc_link").symlink_to("/etc")
    paths = ["../outside.txt", "/etc/passwd", "etc_link/passwd", "a\nb", "x" * 5000]
    replies = [call("read_file", {"path": p}) for p in paths] + [call("read_file", {"path": "inside.txt"}), "ok"]
    with mock(*replies) as agent:
        agent.add_builtin_tools(["read_file"], workspace=tmp_path)
        response = agent.chat("read")
    errors = [c.error for c in response.tool_calls]
    assert "'../outside.txt' is outside the workspace" in errors[0]
    assert "'/etc/passwd' is outside the workspace" in errors[1]
    assert "'etc_link/passwd' is outside the workspace" in errors[2]
    assert "control character" in errors[3]
    assert "the path is too long" in errors[4]
    assert response.tool_calls[5].result["text"] == "     1\tfine\n"


def test_bash_timeout_cap_and_text_for_the_model(tmp_path: pathlib.Path) -> None:
    replies = [
        call("bash", {"command": "sleep 30", "timeout_ms": 300}),
        call("bash", {"command": "yes x | head -c 300000"}),
        "done",
    ]
    with mock(*replies) as agent:
        agent.add_builtin_tools(["bash"], workspace=tmp_path)
        response = agent.chat("run")
        history = agent.history
    timed_out = response.tool_calls[0].result
    assert timed_out["details"]["timed_out"] is True
    assert timed_out["details"]["exit_code"] is None
    assert "the command timed out after 300 ms and was killed" in timed_out["text"]
    capped = response.tool_calls[1].result["details"]
    assert len(capped["stdout"]) == 256 * 1024
    assert capped["stdout_truncated_bytes"] == 300000 - 256 * 1024
    # The model read the text only: the first result's tool message.
    tool_messages = [m for m in history if m["role"] == "tool"]
    assert tool_messages[0]["content"] == timed_out["text"]


def test_the_chats_stop_kills_a_running_command(tmp_path: pathlib.Path) -> None:
    command = "sleep 300 & echo $! > sleeper.pid; wait"
    with mock(call("bash", {"command": command}), "never") as agent:
        agent.add_builtin_tools(["bash"], workspace=tmp_path)
        seen = []

        def on_event(event: object) -> None:
            # The command reports progress once a second while it runs.
            if getattr(event, "type", None) == "tool_call_progress" and not seen:
                seen.append(event)
                agent.stop()

        response = agent.chat("run", on_event=on_event)
        assert seen and response.stop_reason == "cancelled"
        pid = int((tmp_path / "sleeper.pid").read_text())
        deadline = time.monotonic() + 30
        while pathlib.Path(f"/proc/{pid}").exists() and not _zombie(pid) and time.monotonic() < deadline:
            time.sleep(0.01)
        assert not pathlib.Path(f"/proc/{pid}").exists() or _zombie(pid), f"process {pid} outlived the stop"
        assert agent.chat("next").text == "never"


def _zombie(pid: int) -> bool:
    try:
        stat = pathlib.Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[-1].split()[0] == "Z"


def test_read_file_returns_an_image(tmp_path: pathlib.Path) -> None:
    png = b"\x89PNG\r\n\x1a\n\0\0\0\x0dIHDR" + (5).to_bytes(4, "big") + (7).to_bytes(4, "big") + b"\x08\x06\0\0\0" + b"\0" * 4
    (tmp_path / "pic.png").write_bytes(png)
    with mock(call("read_file", {"path": "pic.png"}), "A picture.") as agent:
        agent.add_builtin_tools(["read_file"], workspace=tmp_path)
        response = agent.chat("look")
        result = response.tool_calls[0].result
        assert result["details"] == {
            "path": "pic.png", "mime_type": "image/png", "bytes": len(png), "width": 5, "height": 7,
        }
        assert "images" not in result
        tool_message = [m for m in agent.history if m["role"] == "tool"][0]
        assert tool_message["images"] == [{"mime_type": "image/png", "data": base64.b64encode(png).decode()}]
        # A history with an image can be restored as it is.
        agent.history = agent.history
        assert [m for m in agent.history if m["role"] == "tool"][0]["images"][0]["mime_type"] == "image/png"
