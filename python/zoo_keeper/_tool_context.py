"""`ToolContext`: what a tool reaches of the call it serves.

A tool function asks for it with a parameter annotated `ToolContext`; that
parameter is left out of the schema the model sees::

    @agent.tool(timeout_ms=30_000)
    def crawl(url: str, ctx: ToolContext) -> int:
        "Crawls a site."
        pages = 0
        for page in site_pages(url):
            if ctx.cancelled:          # the chat was stopped, or the 30 s passed
                break
            pages += 1
            ctx.progress(f"read {page}")
            ctx.update({"pages": pages})
        return pages

`update` and `progress` become the chat's `tool_call_update` and
`tool_call_progress` events, between the call's `tool_call_started` and
`tool_call_finished`. Once the call has finished (with a result, an error,
a timeout or a stop) its reports are dropped and return False. Any thread
may use the context, and `async def` tools get it too.
"""

from __future__ import annotations

import json
from typing import Any, Optional

from . import _native


def _json_default(value: Any) -> Any:
    import dataclasses

    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"a tool update of type {type(value).__name__} is not JSON serializable")


class ToolContext:
    """The context of one tool call: its id, its cancel token, its reports."""

    __slots__ = ("_native",)

    def __init__(self, native: "_native.NativeToolContext") -> None:
        self._native = native

    @property
    def call_id(self) -> str:
        """The call's id ("call_1", ...), as its events carry it."""
        return self._native.call_id

    @property
    def cancelled(self) -> bool:
        """Whether the call is cancelled: the chat was stopped or the tool's
        `timeout_ms` passed. Its result is then discarded: return early."""
        return self._native.cancelled

    def wait_cancelled(self, timeout: Optional[float] = None) -> bool:
        """Blocks (releasing the GIL) until the call is cancelled or `timeout`
        seconds pass (None: no limit); returns whether it is cancelled."""
        return self._native.wait_cancelled(timeout)

    def update(self, partial: Any) -> bool:
        """Reports a partial result (anything JSON can hold, dataclasses
        too) as a `tool_call_update` event; returns whether it was taken
        (False once the call has finished)."""
        return self._native.update_json(json.dumps(partial, default=_json_default))

    def progress(self, text: str) -> bool:
        """Reports progress in words as a `tool_call_progress` event;
        returns whether it was taken (False once the call has finished)."""
        return self._native.progress(text)

    def __repr__(self) -> str:
        return f"ToolContext(call_id={self.call_id!r}, cancelled={self.cancelled})"
