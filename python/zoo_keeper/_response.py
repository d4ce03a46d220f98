"""The typed results of a chat: the same JSON shape in every language."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call made during a chat."""

    id: str
    name: str
    arguments: Any
    result: Any = None
    error: Optional[str] = None
    duration_ms: float = 0.0


@dataclass(frozen=True)
class ToolErrorRecord:
    """One tool error the model was told about."""

    tool: str
    kind: str
    message: str
    attempt: int


@dataclass(frozen=True)
class Usage:
    """Token counts, summed over the chat's model replies."""

    prompt_tokens: int = 0
    cached_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0


@dataclass(frozen=True)
class Metrics:
    """Timings in milliseconds."""

    time_to_first_token_ms: float = 0.0
    prompt_ms: float = 0.0
    generation_ms: float = 0.0
    total_ms: float = 0.0
    tokens_per_second: float = 0.0
    iterations: int = 0


@dataclass(frozen=True)
class Response:
    """The result of a chat. `stop_reason` is "stop" (the model finished),
    "length" (`max_tokens` or the window), "tool_limit"
    (`max_tool_iterations`), "limit" (`max_turns`, `max_total_tokens` or
    `max_duration_ms`; the `limit_reached` event says which), "rejected" (an
    input filter refused the message; nothing was decoded) or "cancelled".
    A chat that fails raises instead (its `chat_finished` event says
    "error")."""

    text: str
    stop_reason: str
    tool_calls: List[ToolCallRecord] = field(default_factory=list)
    tool_errors: List[ToolErrorRecord] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    metrics: Metrics = field(default_factory=Metrics)
    thinking: Optional[str] = None
    """The final reply's reasoning, for a model that reasons before it
    answers (`<think>`, gpt-oss's analysis channel); never part of `text`."""

    @classmethod
    def from_json(cls, text: str) -> "Response":
        data: Dict[str, Any] = json.loads(text)
        return cls(
            text=data["text"],
            stop_reason=data["stop_reason"],
            tool_calls=[ToolCallRecord(**c) for c in data["tool_calls"]],
            tool_errors=[ToolErrorRecord(**e) for e in data["tool_errors"]],
            usage=Usage(**data["usage"]),
            metrics=Metrics(**data["metrics"]),
            thinking=data.get("thinking"),
        )


@dataclass(frozen=True)
class Token:
    """A piece of streamed reply text."""

    text: str


@dataclass(frozen=True)
class Thinking:
    """A piece of the model's streamed reasoning (never part of the text)."""

    text: str


@dataclass(frozen=True)
class Event:
    """A progress event of a chat. `type` is one of "chat_started",
    "turn_started", "turn_finished", "tool_call_started", "tool_call_update",
    "tool_call_progress", "tool_call_finished", "tool_error", "history_compacted",
    "steering_received", "follow_up_started", "input_rejected", "limit_reached",
    "retry" or "chat_finished" ("chat_started" comes first and "chat_finished"
    last; a call's "tool_call_update" (`data["update"]`) and
    "tool_call_progress" (`data["text"]`) come between its start and its
    finish; a "retry" says a remote model's request failed and is tried again
    after `data["delay_ms"]`, with `attempt`, `max_retries`, `status` and
    `reason`); `agent_id`, `chat_id` and `seq` say whose event it is and its
    place in the chat; `data` holds the fields of its type."""

    type: str
    agent_id: int
    chat_id: int
    seq: int
    data: Dict[str, Any]

    @classmethod
    def from_json(cls, text: str) -> "Event":
        data = json.loads(text)
        return cls(
            type=data.pop("type"),
            agent_id=data.pop("agent_id"),
            chat_id=data.pop("chat_id"),
            seq=data.pop("seq"),
            data=data,
        )
