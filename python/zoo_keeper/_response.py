"""The typed results of a chat: the same JSON shape in every language."""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any, Dict, List, Optional, Type, TypeVar

_Record = TypeVar("_Record")


def _record(cls: Type[_Record], data: Dict[str, Any]) -> _Record:
    """A record from the engine's JSON object: the fields `cls` declares
    (a key the engine leaves out keeps its default; a key it adds is left
    out here and stays in `Response.raw`)."""
    return cls(**{f.name: data[f.name] for f in fields(cls) if f.name in data})  # type: ignore[call-arg]


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call made during a chat."""

    id: str
    name: str
    arguments: Any
    duration_ms: float
    result: Any = None
    error: Optional[str] = None


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

    prompt_tokens: int
    cached_tokens: int
    completion_tokens: int
    total_tokens: int


@dataclass(frozen=True)
class Metrics:
    """Timings in milliseconds."""

    time_to_first_token_ms: float
    prompt_ms: float
    generation_ms: float
    total_ms: float
    tokens_per_second: float
    iterations: int


@dataclass(frozen=True)
class Response:
    """The result of a chat. `stop_reason` is "stop" (the model finished),
    "length" (`max_tokens` or the window), "tool_limit"
    (`max_tool_iterations`), "limit" (`max_turns`, `max_total_tokens` or
    `max_duration_ms`; the `limit_reached` event says which), "rejected" (an
    input filter refused the message; nothing was decoded) or "cancelled".
    A chat that fails raises instead (its `chat_finished` event says
    "error"). `raw` is the engine's JSON object as it came, every key
    included (also one this version of the package does not know yet)."""

    text: str
    stop_reason: str
    tool_calls: List[ToolCallRecord]
    tool_errors: List[ToolErrorRecord]
    usage: Usage
    metrics: Metrics
    thinking: Optional[str] = None
    """The final reply's reasoning, for a model that reasons before it
    answers (`<think>`, gpt-oss's analysis channel); never part of `text`."""
    raw: Dict[str, Any] = field(default_factory=dict, repr=False, compare=False)

    @classmethod
    def from_json(cls, text: str) -> "Response":
        """A Response from the engine's JSON (the shape every language
        shares: C's `zoo_agent_chat` writes it, Rust's `Response::to_json`);
        every key is kept in `raw`."""
        data: Dict[str, Any] = json.loads(text)
        return cls(
            text=data["text"],
            stop_reason=data["stop_reason"],
            tool_calls=[_record(ToolCallRecord, c) for c in data["tool_calls"]],
            tool_errors=[_record(ToolErrorRecord, e) for e in data["tool_errors"]],
            usage=_record(Usage, data["usage"]),
            metrics=_record(Metrics, data["metrics"]),
            thinking=data.get("thinking"),
            raw=data,
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
    `reason`; a "history_compacted" has the pass's `level` ("fifo",
    "truncate_tool_results", "summarize", "drop_middle", "keep_newest" or
    "custom" for a `context_strategy` hook), the `removed` messages and
    `tokens_before` and `tokens_after`); `agent_id`, `chat_id` and `seq` say whose event it is and its
    place in the chat; `data` holds the fields of its type."""

    type: str
    agent_id: int
    chat_id: int
    seq: int
    data: Dict[str, Any]

    @classmethod
    def from_json(cls, text: str) -> "Event":
        """An Event from the engine's JSON (what a C `on_event` callback
        receives): `type`, `agent_id`, `chat_id` and `seq`, the other keys in
        `data`."""
        return cls._from_dict(json.loads(text))

    @classmethod
    def _from_dict(cls, data: Dict[str, Any]) -> "Event":
        # `data` is the event's JSON object as a dict (the engine builds it
        # without JSON text); its own keys become the fields.
        return cls(
            type=data.pop("type"),
            agent_id=data.pop("agent_id"),
            chat_id=data.pop("chat_id"),
            seq=data.pop("seq"),
            data=data,
        )
