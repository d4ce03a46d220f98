"""Backends written in Python: an object whose `generate(request)` is a
generator (`def` or `async def`) of the reply's items, passed as
`Agent(backend=obj)`. The agentic loop, validation, hooks, limits, steering,
events and sessions work on it as on any model::

    class Gateway:
        def generate(self, request: BackendRequest) -> Iterator[BackendItem]:
            for piece in my_client.stream(request.messages, tools=request.tools):
                yield piece                                   # text, streamed as it comes
            yield {"type": "usage", "prompt_tokens": 40, "completion_tokens": 9}

    agent = Agent(backend=Gateway(), system_prompt="Be brief.")

Items are a `str` (a piece of text) or a dict in the shape every language
shares: `{"type": "text", "text": ...}`, `{"type": "thinking", "text":
...}` (kept out of the text), `{"type": "tool_call", "name": ...,
"arguments": {...}}` (a call returned as data; the agent gives it its id,
validates and runs it), `{"type": "usage", "prompt_tokens": N,
"cached_tokens": N, "completion_tokens": N}`, `{"type": "finish", "reason":
"length"}` or `{"type": "error", "message": ...}`. A call may also be
written in the text, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`.

`generate` runs on the agent's own host thread, one call at a time. An
exception fails the chat with `ProviderError` ("provider host failed:
ValueError: ..."), the history as before. A stop ends the chat at once: the
engine stops reading, closes a sync generator (`GeneratorExit` at its
`yield`) and cancels an async one's task (`CancelledError` where it
awaits); code that blocks between items can poll `request.cancelled` or
`request.wait_cancelled()`. An async generator runs on the event loop of
the `chat_async` or `astream` in progress (else on a loop of its own).

A backend may also have `count_tokens(message) -> int` (the tokens one
message takes, a dict of the history's shape); without it the agent
estimates 4 bytes a token, plus 4 a message, as for remote models.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import inspect
import json
from dataclasses import dataclass, field
from typing import (
    Any,
    AsyncIterable,
    Callable,
    Dict,
    Iterable,
    List,
    Literal,
    Optional,
    Protocol,
    Tuple,
    TypedDict,
    Union,
)

from . import _native
from ._native import InvalidArgumentError


class TextItem(TypedDict):
    type: Literal["text"]
    text: str


class ThinkingItem(TypedDict):
    type: Literal["thinking"]
    text: str


class _ToolCallRequired(TypedDict):
    type: Literal["tool_call"]
    name: str


class ToolCallItem(_ToolCallRequired, total=False):
    """`arguments`: an object, or its JSON text as the model wrote it ({} when left out)."""

    arguments: Union[Dict[str, Any], str]


class _UsageRequired(TypedDict):
    type: Literal["usage"]
    prompt_tokens: int
    completion_tokens: int


class UsageItem(_UsageRequired, total=False):
    cached_tokens: int


class FinishItem(TypedDict):
    type: Literal["finish"]
    reason: Literal["stop", "length"]


class ErrorItem(TypedDict):
    type: Literal["error"]
    message: str


# What a backend's `generate` yields.
BackendItem = Union[str, TextItem, ThinkingItem, ToolCallItem, UsageItem, FinishItem, ErrorItem]


class Sampling(TypedDict):
    """The agent's sampling settings, for the backend to pass on."""

    temperature: float
    top_p: float
    top_k: int
    min_p: float
    repeat_penalty: float
    seed: Optional[int]


@dataclass
class BackendRequest:
    """One reply to generate: the conversation (system prompt first, in the
    history's shape), the tools the model may call (`name`, `description`,
    `parameters`), `tool_choice` (`auto`, `required`, `none` or a tool's
    name), `max_tokens` (None: no limit but the model's), `max_calls`,
    `stop` strings (the agent also cuts the text at the first), the
    `sampling` settings, `thinking` (`off`, `low`, `medium`, `high`: the
    `host` provider's `thinking`), `stable_prefix` (leading messages
    unchanged since the last request) and `time_left_ms` (before the chat's
    time limit; None without one)."""

    messages: List[Dict[str, Any]]
    tools: List[Dict[str, Any]]
    tool_choice: str
    max_tokens: Optional[int]
    max_calls: int
    stop: List[str]
    sampling: Sampling
    thinking: str
    stable_prefix: int
    time_left_ms: Optional[int]
    _sink: Any = field(default=None, repr=False, compare=False)

    @property
    def cancelled(self) -> bool:
        """Whether the reply is no longer wanted (a stop, the chat's time
        limit, a stop string): return soon, what comes after is dropped."""
        return bool(self._sink is not None and self._sink.cancelled)

    def wait_cancelled(self, timeout: Optional[float] = None) -> bool:
        """Blocks (without the GIL) until the reply is no longer wanted or
        `timeout` seconds pass; returns `cancelled`."""
        if self._sink is None:
            return False
        return bool(self._sink.wait_cancelled(timeout))

    @classmethod
    def _from_json(cls, text: str, sink: Any) -> "BackendRequest":
        return cls(**json.loads(text), _sink=sink)


class Backend(Protocol):
    """A model written in Python: `generate` is a generator (or an async
    generator) of `BackendItem`s. It may also have `count_tokens(message:
    dict) -> int`."""

    def generate(self, request: BackendRequest) -> Union[Iterable[BackendItem], AsyncIterable[BackendItem]]: ...


class _AsyncRunner(Protocol):
    loop: Optional[asyncio.AbstractEventLoop]

    def private_loop(self) -> asyncio.AbstractEventLoop: ...


def _put(sink: _native.NativeBackendSink, item: Any) -> bool:
    """Hands one item to the engine; whether it was taken."""
    if isinstance(item, str):
        return sink.text(item)
    if isinstance(item, dict):
        return sink.emit_json(json.dumps(item))
    raise TypeError(f"a backend yields str or dict items, got {type(item).__name__}")


def _drain(items: Any, sink: _native.NativeBackendSink) -> None:
    """Runs a sync generator to its end or until the reply is cut, then closes it."""
    try:
        iterator = iter(items)
    except TypeError:
        raise TypeError(f"generate must return an iterator of str and dict items (a generator), got {type(items).__name__}") from None
    try:
        for item in iterator:
            if not _put(sink, item):
                break
    finally:
        close = getattr(iterator, "close", None)
        if close is not None:
            close()


async def _drain_async(items: Any, sink: _native.NativeBackendSink) -> None:
    """Runs an async generator to its end or until the reply is cut, then closes it."""
    iterator = items.__aiter__()
    try:
        async for item in iterator:
            if not _put(sink, item):
                break
    finally:
        aclose = getattr(iterator, "aclose", None)
        if aclose is not None:
            await aclose()


def _run_async(runner: _AsyncRunner, coroutine: Any, sink: _native.NativeBackendSink) -> None:
    """Runs the drain of an async generator on the chat's loop (else a
    private one); the reply's end cancels its task."""
    loop = runner.loop
    try:
        if loop is not None and loop.is_running():
            future = asyncio.run_coroutine_threadsafe(coroutine, loop)
            sink.on_cancel(future.cancel)
            future.result()
            return
        private = runner.private_loop()
        task = private.create_task(coroutine)
        sink.on_cancel(lambda: private.call_soon_threadsafe(task.cancel))
        private.run_until_complete(task)
    except (asyncio.CancelledError, concurrent.futures.CancelledError):
        pass  # the reply was cut: the engine stopped reading


def backend_callbacks(backend: Any, runner: _AsyncRunner) -> Tuple[Callable[[str, Any], None], Optional[Callable[[str], int]]]:
    """The native agent's `backend(request_json, sink)` and
    `count_tokens(message_json)` for a user's backend object."""
    generate = getattr(backend, "generate", None)
    if not callable(generate):
        raise InvalidArgumentError(
            f"invalid argument: a backend needs a generate(request) method, and {type(backend).__name__} has none"
        )

    def run(request_json: str, sink: _native.NativeBackendSink) -> None:
        items = generate(BackendRequest._from_json(request_json, sink))
        if hasattr(items, "__aiter__"):
            _run_async(runner, _drain_async(items, sink), sink)
        elif inspect.isawaitable(items):
            close = getattr(items, "close", None)
            if close is not None:
                close()  # never awaited: say what to write instead
            raise TypeError("generate must yield its items (a generator, or an async generator with `yield`), not return a coroutine")
        else:
            _drain(items, sink)

    count = getattr(backend, "count_tokens", None)
    if not callable(count):
        return run, None

    def count_tokens(message_json: str) -> int:
        assert callable(count)
        tokens: int = count(json.loads(message_json))
        return tokens

    return run, count_tokens
