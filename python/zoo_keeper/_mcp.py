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
    """The engine's JSON description of a transport (the C ABI's form), with
    the arguments given: the engine checks it, so a wrong one is the same
    `InvalidArgumentError` as in every other language (`timeout` is sent as
    `timeout_ms`, which its messages name)."""
    given: Dict[str, Any] = {
        "command": _path(command),
        "args": [_path(a) for a in args] if isinstance(args, (list, tuple)) else args,
        "env": dict(env) if isinstance(env, Mapping) else env,
        "cwd": _path(cwd),
        "url": url,
        "bearer_token": bearer_token,
        "headers": dict(headers) if isinstance(headers, Mapping) else headers,
        "timeout_ms": _milliseconds(timeout),
        "max_message_bytes": max_message_bytes,
    }
    return json.dumps({key: value for key, value in given.items() if value is not None and value != []})


def _path(value: Any) -> Any:
    """A path-like value as text; anything else as it is, for the engine to judge."""
    return os.fspath(value) if isinstance(value, (str, os.PathLike)) else value


def _milliseconds(seconds: Optional[float]) -> Any:
    """Seconds as whole milliseconds (at least 1 for a positive number); a
    value that is not a number is passed on for the engine to refuse."""
    if seconds is None or isinstance(seconds, bool) or not isinstance(seconds, (int, float)):
        return seconds
    return max(1, round(seconds * 1000)) if seconds > 0 else round(seconds * 1000)
