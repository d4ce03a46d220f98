"""MCP servers: how `Agent.add_mcp_server` describes a server to the engine,
and what it says back."""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union


@dataclass(frozen=True)
class McpServerInfo:
    """An MCP server added to an agent."""

    name: str
    """The name it was added under; its tools are called `{name}__{tool}`."""
    server_name: str
    """The server's own name (`serverInfo.name`)."""
    server_version: str
    protocol_version: str
    """The negotiated MCP protocol version."""
    tools: List[str] = field(default_factory=list)
    """The names its tools are registered under."""
    skipped: List[str] = field(default_factory=list)
    """Tools that could not be registered, each with the reason."""
    state: str = "running"
    """`"running"`, or `"dead"` once the server went away by itself (its
    process exited or closed its pipes); a dead server's tools are
    withdrawn from the agent. Add it again to restart it."""
    state_reason: Optional[str] = None
    """Why it is dead (its exit status and last stderr lines); None while
    it runs."""

    @classmethod
    def _from_json(cls, text: str) -> "McpServerInfo":
        return cls._from_dict(json.loads(text))

    @classmethod
    def _from_dict(cls, data: Dict[str, Any]) -> "McpServerInfo":
        return cls(
            name=data["name"],
            server_name=data["server_name"],
            server_version=data["server_version"],
            protocol_version=data["protocol_version"],
            tools=list(data["tools"]),
            skipped=list(data["skipped"]),
            state=data["state"],
            state_reason=data["state_reason"],
        )


def transport_json(
    command: Optional[Union[str, "os.PathLike[str]"]],
    args: Sequence[Union[str, "os.PathLike[str]"]],
    env: Optional[Mapping[str, str]],
    cwd: Optional[Union[str, "os.PathLike[str]"]],
    url: Optional[str],
    bearer_token: Optional[str],
    headers: Optional[Mapping[str, str]],
    timeout: Optional[float],
    max_message_bytes: Optional[int] = None,
) -> str:
    """The engine's JSON description of a transport (the C ABI's form);
    a `TypeError` for an inconsistent mix of keyword arguments."""
    if (command is None) == (url is None):
        raise TypeError("add_mcp_server needs exactly one of command=... (stdio) or url=... (HTTP)")
    if isinstance(args, (str, bytes)):
        raise TypeError("args must be a list of strings, not a single string")
    description: Dict[str, Any]
    if command is not None:
        if bearer_token is not None or headers is not None:
            raise TypeError("bearer_token and headers apply to url=... servers only")
        description = {"type": "stdio", "command": os.fspath(command), "args": [os.fspath(a) for a in args]}
        if env is not None:
            description["env"] = {str(k): str(v) for k, v in env.items()}
        if cwd is not None:
            description["cwd"] = os.fspath(cwd)
    else:
        if args or env is not None or cwd is not None:
            raise TypeError("args, env and cwd apply to command=... servers only")
        description = {"type": "http", "url": url}
        if bearer_token is not None:
            description["bearer_token"] = bearer_token
        if headers is not None:
            description["headers"] = dict(headers)
    if timeout is not None:
        if timeout <= 0:
            raise ValueError("timeout must be a positive number of seconds")
        description["timeout_ms"] = max(1, round(timeout * 1000))
    if max_message_bytes is not None:
        if isinstance(max_message_bytes, bool) or not isinstance(max_message_bytes, int):
            raise TypeError("max_message_bytes must be an int (bytes)")
        if max_message_bytes <= 0:
            raise ValueError("max_message_bytes must be a positive number of bytes")
        description["max_message_bytes"] = max_message_bytes
    return json.dumps(description)
