"""`Model` and `Agent`: the Pythonic surface over `zoo_keeper._native`."""

from __future__ import annotations

import asyncio
import atexit
import dataclasses
import inspect
import json
import os
import queue
import threading
import weakref
from typing import Any, AsyncIterator, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, TypeVar, Union, overload

from . import _logs, _native
from ._backend import Backend, backend_callbacks
from ._mcp import McpServerInfo, transport_json
from ._hooks import _HookMethods
from ._native import InvalidArgumentError
from ._response import Event, Response, Thinking, Token
from ._schema import context_parameter, convert_arguments, function_schema
from ._tool_context import ToolContext

# A tool function, returned unchanged by the `tool` decorator.
_F = TypeVar("_F", bound=Callable[..., Any])

# Agents still open at interpreter exit are closed then, so that no
# inference thread touches Python while it shuts down. The wait is bounded:
# a tool stuck in user code must not hang the exit.
_LIVE: "weakref.WeakSet[Agent]" = weakref.WeakSet()
_EXIT_TIMEOUT_S = 2.0


@atexit.register
def _close_all() -> None:
    for agent in list(_LIVE):
        agent.close(timeout=_EXIT_TIMEOUT_S)


class Model:
    """A GGUF model loaded once and shared by several agents."""

    def __init__(
        self, path: str, *, gpu_layers: int = 0, use_mmap: bool = True, cpu_variant: Optional[str] = None
    ) -> None:
        """Loads a GGUF file. `cpu_variant` forces llama.cpp's CPU variant
        (see `backend_info()`); only the first model of a process chooses."""
        # The core checks the values (and names a bad key) as it does for C.
        params = {"gpu_layers": gpu_layers, "use_mmap": use_mmap, "cpu_variant": cpu_variant}
        self._native = _native.NativeModel(str(path), json.dumps(params))

    @property
    def path(self) -> str:
        """The GGUF file the model was loaded from."""
        return self._native.path

    @property
    def metadata(self) -> Dict[str, Any]:
        """GGUF metadata: chat_template, architecture, name and special
        ({"bos", "eos"}: the model's special token texts)."""
        return json.loads(self._native.metadata_json())


def _json_default(value: Any) -> Any:
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return dataclasses.asdict(value)
    raise TypeError(f"tool result of type {type(value).__name__} is not JSON serializable")


class _AsyncToolRunner:
    """Runs `async def` tools from the inference thread: on the event loop
    of the `chat_async` / `astream` that is running (so tools can use objects
    bound to it), otherwise on a private loop of the inference thread."""

    def __init__(self) -> None:
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self._local = threading.local()

    def run(self, coroutine: Any) -> Any:
        loop = self.loop
        if loop is not None and loop.is_running():
            return asyncio.run_coroutine_threadsafe(coroutine, loop).result()
        return self.private_loop().run_until_complete(coroutine)

    def private_loop(self) -> asyncio.AbstractEventLoop:
        """This thread's own loop, made on first use."""
        private: Optional[asyncio.AbstractEventLoop] = getattr(self._local, "loop", None)
        if private is None:
            private = self._local.loop = asyncio.new_event_loop()
        return private


class Agent(_HookMethods):
    """A tool-using agent with its own inference thread.

    Create it with `model_path=...` (or `model=` a shared `Model`) and any
    config key (`temperature`, `context_size`, `tool_choice`, ...). Use it as a
    context manager, or call `close()`.

    `provider=` runs it on something else than a local model, and `backend=`
    on a model written in Python (an object whose `generate(request)` yields
    the reply's items; see `zoo_keeper.BackendRequest`). To test code
    that uses an agent without a model file, the mock gives scripted replies
    in order (a string is streamed word by word; a tool call is written
    `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`;
    `{"error": "message"}` fails that chat with `InferenceError`), then
    echoes `echo: <message>`::

        Agent(provider={"type": "mock", "replies": ["Hello!", {"error": "boom"}], "piece_delay_ms": 5})

    Hooks and input filters (`@agent.input_filter`, `@agent.before_turn`,
    `@agent.after_turn`, `@agent.before_tool_call`,
    `@agent.after_tool_call`, `@agent.transform_context`,
    `@agent.context_strategy`, `@agent.on_error`) run at fixed points of
    every chat; see `zoo_keeper._hooks`. `context_strategy=` takes a function
    too: your own strategy, as the `context_strategy` hook.
    """

    def __init__(
        self,
        model_path: Optional[str] = None,
        *,
        model: Optional[Model] = None,
        backend: Optional[Backend] = None,
        **config: Any,
    ) -> None:
        if model_path is not None:
            config["model_path"] = str(model_path)
        self._async_tools = _AsyncToolRunner()
        run, count_tokens = backend_callbacks(backend, self._async_tools) if backend is not None else (None, None)
        _logs.sync_level()
        # A function as the strategy is the context_strategy hook; the
        # config keeps its built-in strategy for when the hook declines.
        strategy = config.get("context_strategy")
        own_strategy = config.pop("context_strategy") if callable(strategy) else None
        self._native = _native.NativeAgent(
            # json.dumps writes NaN and Infinity for non-finite floats; the
            # core reads them and raises InvalidConfigError naming the key.
            json.dumps(config),
            model._native if model is not None else None,
            run,
            count_tokens,
        )
        _LIVE.add(self)
        if own_strategy is not None:
            self._set_hook("context_strategy", own_strategy)

    # -- lifecycle ---------------------------------------------------------

    def close(self, timeout: Optional[float] = None) -> bool:
        """Cancels the running chat, fails queued ones and stops the inference
        thread, waiting at most `timeout` seconds. Idempotent."""
        _LIVE.discard(self)
        return self._native.close(timeout)

    def __enter__(self) -> "Agent":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def state(self) -> str:
        """Where the agent is in its life: "idle" (waiting for a chat),
        "processing" (running one), "cancelling" (after `stop`, while the
        chat winds down) or "terminated"; AgentNotRunningError once closed."""
        return self._native.state

    # -- tools -------------------------------------------------------------

    @overload
    def tool(self, fn: _F, *, name: Optional[str] = None, description: Optional[str] = None, exclusive: bool = False, timeout_ms: Optional[int] = None) -> _F: ...

    @overload
    def tool(
        self, fn: None = None, *, name: Optional[str] = None, description: Optional[str] = None, exclusive: bool = False, timeout_ms: Optional[int] = None
    ) -> Callable[[_F], _F]: ...

    def tool(
        self,
        fn: Optional[Callable[..., Any]] = None,
        *,
        name: Optional[str] = None,
        description: Optional[str] = None,
        exclusive: bool = False,
        timeout_ms: Optional[int] = None,
    ) -> Any:
        """Decorator: registers `fn` as a tool. The schema comes from its type
        hints, the description from its docstring. Works on `def` and
        `async def`. Returns `fn` unchanged. `exclusive` and `timeout_ms`
        are those of `register_tool`: `@agent.tool(exclusive=True, timeout_ms=500)`."""

        def register(function: Callable[..., Any]) -> Callable[..., Any]:
            tool_name, doc, schema = function_schema(function)
            self.register_tool(
                name or tool_name,
                description if description is not None else doc,
                schema,
                function,
                exclusive=exclusive,
                timeout_ms=timeout_ms,
                _typed=True,
            )
            return function

        return register(fn) if fn is not None else register

    def register_tool(
        self,
        name: str,
        description: str,
        schema: Dict[str, Any],
        fn: Callable[..., Any],
        *,
        exclusive: bool = False,
        timeout_ms: Optional[int] = None,
        _typed: bool = False,
    ) -> None:
        """Registers a tool with an explicit JSON schema. `fn` is called with
        the arguments as keyword arguments; its return value (any JSON-able
        value) is the result; an exception is reported to the model as a tool
        error and the chat goes on.

        With `tool_execution="parallel"` (or `{"batched": N}`) the calls of
        one reply run at once on the agent's tool threads: sync tools overlap
        wherever they release the GIL (`time.sleep`, I/O), async tools run
        concurrently on the event loop. `exclusive=True` makes the tool run
        alone, never beside another call (for writes and shell commands).
        `timeout_ms` bounds a call: one still running after that many
        milliseconds is a tool error the model reads ("tool `name` failed: it
        did not finish within N ms") and the chat goes on; the function
        finishes in the background, its result discarded. None or 0 is no
        limit. A bad value raises `InvalidArgumentError`.

        A parameter annotated `ToolContext` receives the call's context (its
        id, `cancelled`, `update()` and `progress()`; see
        `zoo_keeper.ToolContext`), also for `async def` tools; the timeout
        and the chat's stop set its `cancelled`."""
        runner = self._async_tools
        context_name = context_parameter(fn) if callable(fn) else None

        def call(arguments_json: str, context: Optional[_native.NativeToolContext] = None) -> str:
            arguments = json.loads(arguments_json)
            if _typed:
                arguments = convert_arguments(fn, arguments)
            if context_name is not None:
                arguments[context_name] = ToolContext(context)  # type: ignore[arg-type]
            result = fn(**arguments)
            if inspect.isawaitable(result):
                result = runner.run(result)
            return json.dumps(result, default=_json_default)

        try:
            schema_json = json.dumps(schema, allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidArgumentError(f"invalid argument: the parameters of tool `{name}` cannot be written as JSON: {error}") from None
        # The engine checks the options, in the words of every front door:
        # json.dumps writes NaN and Infinity for non-finite floats, and a
        # value JSON cannot hold goes as an object, which the check refuses.
        options_json = json.dumps({"exclusive": exclusive, "timeout_ms": timeout_ms}, default=lambda _: {})
        # A handler that cannot be called goes to the native check, which
        # words the error as every front door does.
        self._native.register_tool(
            name, description, schema_json, call if callable(fn) else fn, options_json, context_name is not None
        )

    def unregister_tool(self, name: str) -> bool:
        """Removes the tool `name`; returns whether it was registered."""
        return self._native.unregister_tool(name)

    # -- built-in tools ----------------------------------------------------

    def add_builtin_tools(
        self,
        tools: Sequence[str],
        *,
        workspace: Union[str, "os.PathLike[str]"],
        confirm: Optional[Callable[[str, Dict[str, Any]], Any]] = None,
        bash_deny: Sequence[str] = (),
    ) -> None:
        """Adds built-in tools by name (`read_file`, `write_file`,
        `edit_file`, `list_files`, `search`, `bash`), every path confined to
        `workspace` (an existing folder). `confirm(tool, arguments)` is asked
        before each `write_file`, `edit_file` and `bash` call (on a tool
        thread; it may be `async def`): a true answer lets it run, a false one
        refuses it and the model reads "the user refused this bash call"; an
        exception refuses it too, and the model reads it. No `bash` command
        may contain a `bash_deny` entry (checked before anything runs; a deny
        list is not a sandbox). Raises `InvalidArgumentError` for an unknown
        name or a bad workspace; nothing is added then."""
        runner = self._async_tools

        def ask(tool: str, arguments_json: str) -> bool:
            assert confirm is not None
            answer = confirm(tool, json.loads(arguments_json))
            if inspect.isawaitable(answer):
                answer = runner.run(answer)
            return bool(answer)

        options = {"tools": list(tools), "workspace": os.fspath(workspace), "bash_deny": list(bash_deny)}
        # A confirm that cannot be called goes to the native check, which
        # words the error as every front door does.
        self._native.add_builtin_tools(json.dumps(options), ask if callable(confirm) else confirm)

    # -- MCP servers -------------------------------------------------------

    def add_mcp_server(
        self,
        name: str,
        command: Optional[Union[str, "os.PathLike[str]"]] = None,
        *,
        args: Sequence[Union[str, "os.PathLike[str]"]] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[Union[str, "os.PathLike[str]"]] = None,
        url: Optional[str] = None,
        bearer_token: Optional[str] = None,
        headers: Optional[Mapping[str, str]] = None,
        timeout: Optional[float] = None,
        max_message_bytes: Optional[int] = None,
    ) -> McpServerInfo:
        """Connects an MCP server and registers each of its tools as
        `{name}__{tool}`, validated and constrained by the server's schema.

        Either `command` (with `args`, `env` added to this process's
        environment, `cwd`) starts a server on stdio, or `url` (with
        `bearer_token`, `headers`) reaches one over Streamable HTTP.
        `timeout` (seconds, default 60) bounds every request;
        `max_message_bytes` (default 16 MiB) bounds every message read from
        the server, and a larger one fails the call with an error that says
        so. A failing call (an error result, a crash, a timeout) is a tool
        error the model reads; a server that dies has its tools withdrawn
        and is listed with `state == "dead"`. Raises `McpError` when the
        server cannot start or answer, naming the command or URL and what
        the process wrote on stderr."""
        description = transport_json(
            command, args, env, cwd, url, bearer_token, headers, timeout, max_message_bytes
        )
        return McpServerInfo._from_json(self._native.add_mcp_server(name, description))

    def remove_mcp_server(self, name: str) -> bool:
        """Closes the server and unregisters its tools; returns whether it
        was added."""
        return self._native.remove_mcp_server(name)

    @property
    def mcp_servers(self) -> List[McpServerInfo]:
        """The MCP servers added, by name."""
        return [McpServerInfo._from_dict(d) for d in json.loads(self._native.mcp_servers_json())]

    # -- chat --------------------------------------------------------------

    def chat(
        self,
        message: str,
        *,
        on_token: Optional[Callable[[str], Any]] = None,
        on_event: Optional[Callable[[Event], Any]] = None,
        tool_choice: Optional[str] = None,
        max_tokens: Optional[int] = None,
        rag_context: Optional[str] = None,
        max_turns: Optional[int] = None,
        max_total_tokens: Optional[int] = None,
        max_duration_ms: Optional[int] = None,
        hooks: Optional[Mapping[str, Callable[..., Any]]] = None,
        on_thinking: Optional[Callable[[str], Any]] = None,
    ) -> Response:
        """Sends a message and blocks until the reply is complete (the GIL is
        released meanwhile; Ctrl-C cancels). Callbacks run on the inference
        thread; an exception raised in one stops the chat and is raised here.
        `max_turns`, `max_total_tokens` and `max_duration_ms` override the
        agent's limits for this chat (0 keeps the agent's); past one, the
        chat ends with stop reason "limit". `hooks` (a mapping from the hook
        decorators' names to functions) run in this chat instead of the
        agent's hooks; see `zoo_keeper._hooks`. `on_thinking` receives the
        reasoning of a model that reasons before it answers, as it streams
        (it is in `Response.thinking` too, never in the text)."""
        payload = self._native.chat(
            message, on_token, on_event, tool_choice, max_tokens, rag_context,
            max_turns=max_turns, max_total_tokens=max_total_tokens, max_duration_ms=max_duration_ms,
            on_thinking=on_thinking, **self._start(hooks),
        )
        return Response.from_json(payload)

    def _start(self, hooks: Optional[Mapping[str, Callable[..., Any]]]) -> Dict[str, Any]:
        """What every chat does as it starts: the logger's level is read
        again, and the chat's own hooks become native arguments."""
        _logs.sync_level()
        return self._chat_hooks(hooks)

    def continue_chat(
        self,
        *,
        on_token: Optional[Callable[[str], Any]] = None,
        on_event: Optional[Callable[[Event], Any]] = None,
        **options: Any,
    ) -> Response:
        """Answers the history as it stands, without a new user message:
        after restoring a conversation that ends with tool results, or after
        a stop cut a reply short. Takes `chat`'s options; raises
        InvalidMessageSequenceError when there is nothing to answer."""
        return self._answer(None, False, on_token, on_event, options)

    def regenerate(
        self,
        *,
        on_token: Optional[Callable[[str], Any]] = None,
        on_event: Optional[Callable[[Event], Any]] = None,
        **options: Any,
    ) -> Response:
        """Drops the last assistant turn (its replies, tool calls and
        results) and answers the last user message again. If the new answer
        fails, or is stopped before the model says anything, the old turn
        stays. Takes `chat`'s options."""
        return self._answer(None, True, on_token, on_event, options)

    def _answer(
        self,
        message: Optional[str],
        regenerate: bool,
        on_token: Optional[Callable[[str], Any]],
        on_event: Optional[Callable[[Event], Any]],
        options: Dict[str, Any],
    ) -> Response:
        unknown = set(options) - _CHAT_OPTIONS
        if unknown:
            raise TypeError(f"unexpected chat option(s): {', '.join(sorted(unknown))}")
        hooks = self._start(options.pop("hooks", None))
        payload = self._native.chat(message, on_token, on_event, regenerate=regenerate, **options, **hooks)
        return Response.from_json(payload)

    async def chat_async(
        self,
        message: str,
        *,
        on_token: Optional[Callable[[str], Any]] = None,
        on_event: Optional[Callable[[Event], Any]] = None,
        tool_choice: Optional[str] = None,
        max_tokens: Optional[int] = None,
        rag_context: Optional[str] = None,
        max_turns: Optional[int] = None,
        max_total_tokens: Optional[int] = None,
        max_duration_ms: Optional[int] = None,
        hooks: Optional[Mapping[str, Callable[..., Any]]] = None,
        on_thinking: Optional[Callable[[str], Any]] = None,
    ) -> Response:
        """`chat` for asyncio. Cancelling the task cancels the chat."""
        loop = asyncio.get_running_loop()
        future: "asyncio.Future[Response]" = loop.create_future()

        def settle(code: int, payload: Any) -> None:
            if future.done():
                return
            if code == 0:
                future.set_result(Response.from_json(payload))
            elif code == -1:  # the exception raised by one of our callbacks
                future.set_exception(payload)
            else:
                future.set_exception(_error(code, payload))

        def complete(code: int, payload: Any) -> None:
            loop.call_soon_threadsafe(settle, code, payload)

        self._async_tools.loop = loop
        chat = self._native.chat_start(
            message, on_token, on_event, complete, tool_choice, max_tokens, rag_context,
            max_turns=max_turns, max_total_tokens=max_total_tokens, max_duration_ms=max_duration_ms,
            on_thinking=on_thinking, **self._start(hooks),
        )
        try:
            return await asyncio.shield(future)
        except asyncio.CancelledError:
            chat.cancel()
            raise

    def stream(self, message: str, **options: Any) -> "ChatStream":
        """Iterates over the reply as it is made: `Token` items for text,
        `Thinking` items for the reasoning of a model that reasons before it
        answers, and `Event` items for progress; `.response` holds the
        result afterwards. Leaving the loop early cancels the chat."""
        return ChatStream(self, message, options)

    async def astream(self, message: str, **options: Any) -> AsyncIterator[Union[Token, Thinking, Event]]:
        """`stream` for asyncio: an async iterator of `Token`, `Thinking` and `Event`."""
        loop = asyncio.get_running_loop()
        items: "asyncio.Queue[Any]" = asyncio.Queue()

        def put(item: Any) -> None:
            loop.call_soon_threadsafe(items.put_nowait, item)

        self._async_tools.loop = loop
        chat = self._native.chat_start(
            message,
            lambda text: put(Token(text)),
            put,
            lambda code, payload: put((code, payload)),
            options.get("tool_choice"),
            options.get("max_tokens"),
            options.get("rag_context"),
            max_turns=options.get("max_turns"),
            max_total_tokens=options.get("max_total_tokens"),
            max_duration_ms=options.get("max_duration_ms"),
            on_thinking=lambda text: put(Thinking(text)),
            **self._start(options.get("hooks")),
        )
        try:
            while True:
                item = await items.get()
                if isinstance(item, tuple):
                    code, payload = item
                    if code == -1:
                        raise payload
                    if code != 0:
                        raise _error(code, payload)
                    return
                yield item
        finally:
            if not chat.done():
                chat.cancel()

    def steer(self, text: str) -> None:
        """Sends a message to the running chat, from any thread: it joins the
        conversation before the model's next reply, and the calls of the
        current reply not yet started are skipped (the model reads why).
        Without a running chat it waits for the next one."""
        self._native.steer(text)

    def follow_up(self, text: str) -> None:
        """Queues a message that starts a new round when the running chat
        (or the next) would otherwise end, within the same chat."""
        self._native.follow_up(text)

    def clear_queues(self) -> None:
        """Drops every queued steering and follow-up message."""
        self._native.clear_queues()

    @property
    def id(self) -> int:
        """The agent's id, unique in the process: the `agent_id` of its events."""
        return int(self._native.id())

    def stop(self) -> None:
        """Cancels the chat in flight; it ends as "cancelled" within ~100 ms."""
        self._native.stop()

    # -- history -----------------------------------------------------------

    @property
    def tools(self) -> List[Dict[str, Any]]:
        """The tools the model is shown (name, description, parameters), in
        registration order."""
        result: List[Dict[str, Any]] = json.loads(self._native.tools_json())
        return result

    # -- sub-agents --------------------------------------------------------

    def add_subagent(self, name: str, description: str, *, tools: Sequence[str] = (), **config: Any) -> None:
        """Offers a child agent to the model as the tool `name`, which takes a
        `task` and returns the child's answer (the model reads it; the
        call's `result` is `{"text": answer, "details": {"stop_reason",
        "usage"}}`). `config` is the child's
        (system_prompt, max_turns, ...): with a `provider` it runs there,
        without one on this agent's loaded model. `tools` names tools of this
        agent the child may call."""
        spec = {"name": name, "description": description, "tools": list(tools), "config": config}
        self._native.add_subagent(json.dumps(spec))

    # -- skills ------------------------------------------------------------

    @property
    def skills(self) -> List[Dict[str, Any]]:
        """The config's skills: name, description, allowed_tools, path."""
        result: List[Dict[str, Any]] = json.loads(self._native.skills_json())
        return result

    def activate_skill(self, name: str) -> str:
        """Activates a skill as the model's `load_skill` does: returns its
        instructions and, when it names `allowed-tools`, shows only those
        until `deactivate_skill()`."""
        return self._native.activate_skill(name)

    def deactivate_skill(self) -> None:
        """Shows every tool again after a skill restricted them."""
        self._native.deactivate_skill()

    @property
    def session_id(self) -> Optional[str]:
        """The id of the session the conversation is kept in (config
        `session_store`), or None without one."""
        return self._native.session_id()

    @property
    def history(self) -> List[Dict[str, Any]]:
        """The conversation, system prompt first, as a list of message dicts
        (`role`, `content`, and as they apply `tool_calls`, `tool_call_id`,
        `name`, `is_error`, `images`: `[{"mime_type", "data"}]` in base64)."""
        return json.loads(self._native.history_json())

    @history.setter
    def history(self, messages: List[Dict[str, Any]]) -> None:
        self._native.set_history_json(json.dumps(messages))

    def clear_history(self) -> None:
        """Forgets the conversation, keeping the system prompt. Applies after
        the chats queued before it."""
        self._native.clear_history()

    def set_system_prompt(self, prompt: Optional[str]) -> None:
        """Sets the system prompt; None removes it. Applies after the chats
        queued before it."""
        self._native.set_system_prompt(prompt)


class ChatStream:
    """An iterator over a chat's tokens and events (see `Agent.stream`)."""

    _DONE = object()

    def __init__(self, agent: Agent, message: str, options: Dict[str, Any]) -> None:
        self.response: Optional[Response] = None
        self._items: "queue.Queue[Any]" = queue.Queue()
        put = self._items.put
        self._chat = agent._native.chat_start(
            message,
            lambda text: put(Token(text)),
            put,
            lambda code, payload: put((self._DONE, code, payload)),
            options.get("tool_choice"),
            options.get("max_tokens"),
            options.get("rag_context"),
            max_turns=options.get("max_turns"),
            max_total_tokens=options.get("max_total_tokens"),
            max_duration_ms=options.get("max_duration_ms"),
            on_thinking=lambda text: put(Thinking(text)),
            **agent._start(options.get("hooks")),
        )

    def __iter__(self) -> Iterator[Union[Token, Thinking, Event]]:
        try:
            while True:
                try:
                    item = self._items.get(timeout=0.05)
                except queue.Empty:
                    continue  # lets Ctrl-C in between waits
                if isinstance(item, tuple) and item[0] is self._DONE:
                    _, code, payload = item
                    if code == -1:
                        raise payload
                    if code != 0:
                        raise _error(code, payload)
                    self.response = Response.from_json(payload)
                    return
                yield item
        finally:
            if self.response is None and not self._chat.done():
                self._chat.cancel()


_BY_CODE = {
    cls.code: cls
    for cls in (getattr(_native, name) for name in dir(_native))
    if isinstance(cls, type) and issubclass(cls, _native.ZooError) and cls is not _native.ZooError
}


# The options every way of starting a chat takes, besides its callbacks.
_CHAT_OPTIONS = {
    "tool_choice", "max_tokens", "rag_context", "max_turns", "max_total_tokens", "max_duration_ms", "hooks",
    "on_thinking",
}


def _error(code: int, message: str) -> Exception:
    return _BY_CODE.get(code, _native.ZooError)(message)
