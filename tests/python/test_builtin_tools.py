"""Built-in tools through Python's config: registered on the workspace, a
search that runs, and a bad workspace named in the error."""

import json
import pathlib

import pytest

from zoo_keeper import Agent, InvalidConfigError


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
