"""Hooks and input filters: Python functions the agent calls at fixed points
of every chat, to watch it, veto or rewrite tool calls, replace results,
edit what the model is shown, and filter the user's message.

Register them with the agent's decorators (each returns the function
unchanged; registering a point again replaces its hook)::

    @agent.input_filter
    def no_secrets(message: str) -> Optional[Reject]:
        return Reject("no secrets") if "password" in message else None

    @agent.before_tool_call
    def guard(call: ToolCall) -> Union[None, Deny, Rewrite]:
        if call.name == "delete_file":
            return Deny("deleting is not allowed")  # the model reads the reason
        return None  # run it as the model wrote it

What each hook returns (None always means "change nothing"):

- ``input_filter(message)``: None (pass), ``Warn(text)`` (appended to the
  message the model sees) or ``Reject(reason)`` (the chat ends with stop
  reason ``"rejected"``, an ``input_rejected`` event, and no change to the
  history).
- ``before_turn(turn)`` (1 for the first model reply): None, or
  ``EndChat`` to end the chat there with stop reason ``"stop"``.
- ``after_turn(turn, text)``: its return value is ignored.
- ``before_tool_call(call)``: None (allow), ``Deny(reason)`` or
  ``Rewrite(arguments)`` (run with these arguments, validated again).
- ``after_tool_call(call, result, error)``: ``call`` is the call as the
  model wrote it, ``result`` the tool's result (None when it failed) and
  ``error`` its error message (None when it succeeded). None keeps the
  result; any other value replaces it (a failed call then succeeds with
  it); ``Replace(None)`` replaces it with null.
- ``transform_context(messages)``: the message dicts sent to the model
  for the next reply, system prompt first; return the list to send
  instead, or None. The stored history is never touched.
- ``on_error(error)``: a ``ZooError`` when a chat failed, or an
  ``InternalError`` naming the hook when another hook failed.

One chat may run its own hooks instead of the agent's: pass them as a
mapping from these names to functions (`None` values are skipped), e.g.
``agent.chat(text, hooks={"before_tool_call": allow_all})``; the agent's
hooks do not run in that chat (``hooks={}`` runs none), and they run again
in the next. Every way of starting a chat (`chat`, `chat_async`,
`stream`, `astream`, `continue_chat`, `regenerate`) takes `hooks`.

Hooks run on the agent's inference thread while the chat waits for them;
an ``async def`` hook runs as an async tool does. A hook that raises (or
returns something it may not) never crashes the agent and fails safe: a
failing ``input_filter`` rejects the message, a failing
``before_tool_call`` denies the call, any other failing hook changes
nothing; the exception reaches ``on_error``. An exception raised by
``on_error`` itself goes to ``sys.unraisablehook``.
"""

from __future__ import annotations

import inspect
import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, TypeVar

from ._native import InvalidArgumentError

if TYPE_CHECKING:
    from ._agent import _AsyncToolRunner
    from ._native import NativeAgent


@dataclass(frozen=True)
class ToolCall:
    """A tool call as the model wrote it."""

    id: str
    name: str
    arguments: Any


@dataclass(frozen=True)
class Deny:
    """``before_tool_call``: do not run the call; the model reads `reason`
    as its error."""

    reason: str


@dataclass(frozen=True)
class Rewrite:
    """``before_tool_call``: run the call with these arguments instead
    (validated again against the tool's schema)."""

    arguments: Dict[str, Any]


@dataclass(frozen=True)
class Warn:
    """``input_filter``: send the message with `warning` appended."""

    warning: str


@dataclass(frozen=True)
class Reject:
    """``input_filter``: do not send the message; the chat ends with stop
    reason ``"rejected"`` and the history unchanged."""

    reason: str


@dataclass(frozen=True)
class Replace:
    """``after_tool_call``: the result the model reads instead, also when
    it is None (which a plain ``return None`` cannot say)."""

    value: Any


class _EndChatType:
    """The type of `EndChat`, which a ``before_turn`` hook returns to end the
    chat before this reply, with stop reason "stop" and the last reply's
    text. It has one value."""

    _instance: Optional["_EndChatType"] = None

    def __new__(cls) -> "_EndChatType":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "EndChat"


#: ``before_turn``: end the chat before this reply, with stop reason "stop".
EndChat = _EndChatType()

_InputFilter = TypeVar("_InputFilter", bound=Callable[[str], Any])
_BeforeTurn = TypeVar("_BeforeTurn", bound=Callable[[int], Any])
_AfterTurn = TypeVar("_AfterTurn", bound=Callable[[int, str], Any])
_BeforeToolCall = TypeVar("_BeforeToolCall", bound=Callable[[ToolCall], Any])
_AfterToolCall = TypeVar("_AfterToolCall", bound=Callable[[ToolCall, Any, Optional[str]], Any])
_TransformContext = TypeVar("_TransformContext", bound=Callable[[List[Dict[str, Any]]], Any])
_OnError = TypeVar("_OnError", bound=Callable[[Any], Any])


def _not_callable(hook: str, got: Any) -> InvalidArgumentError:
    # The words of every front door (Node: "the `inputFilter` hook ...").
    return InvalidArgumentError(f"invalid argument: the `{hook}` hook must be a function, got {type(got).__name__}")


def _expected(hook: str, allowed: str, got: Any) -> TypeError:
    return TypeError(f"the {hook} hook must return {allowed}, not {got!r}")


def _input_filter(result: Any) -> Optional[Dict[str, Any]]:
    if result is None:
        return None
    if isinstance(result, Warn):
        return {"action": "warn", "warning": result.warning}
    if isinstance(result, Reject):
        return {"action": "reject", "reason": result.reason}
    raise _expected("input_filter", "None, Warn(...) or Reject(...)", result)


def _before_turn(result: Any) -> Optional[Dict[str, Any]]:
    if result is None:
        return None
    if result is EndChat:
        return {"action": "end"}
    raise _expected("before_turn", "None or EndChat", result)


def _before_tool_call(result: Any) -> Optional[Dict[str, Any]]:
    if result is None:
        return None
    if isinstance(result, Deny):
        return {"action": "deny", "reason": result.reason}
    if isinstance(result, Rewrite):
        return {"action": "rewrite", "arguments": result.arguments}
    raise _expected("before_tool_call", "None, Deny(...) or Rewrite(...)", result)


def _after_tool_call(result: Any) -> Optional[Dict[str, Any]]:
    if result is None:
        return None
    return {"result": result.value if isinstance(result, Replace) else result}


def _transform_context(result: Any) -> Any:
    if result is None or isinstance(result, list):
        return result
    raise _expected("transform_context", "None or a list of messages", result)


def _dispatcher(hooks: Dict[str, Callable[..., Any]], runner: "_AsyncToolRunner") -> Callable[[str, str], Optional[str]]:
    """One function the native side calls for every hook point:
    `dispatch(name, input_json)` returns the decision as JSON, or None."""

    def run(name: str, *args: Any) -> Any:
        result = hooks[name](*args)
        return runner.run(result) if inspect.isawaitable(result) else result

    def dispatch(name: str, input_json: str) -> Optional[str]:
        data = json.loads(input_json)
        decision: Any
        if name == "input_filter":
            decision = _input_filter(run(name, data["message"]))
        elif name == "before_turn":
            decision = _before_turn(run(name, data["turn"]))
        elif name == "after_turn":
            run(name, data["turn"], data["text"])
            decision = None
        elif name == "before_tool_call":
            decision = _before_tool_call(run(name, ToolCall(**data)))
        elif name == "after_tool_call":
            call = ToolCall(**data["call"])
            decision = _after_tool_call(run(name, call, data.get("result"), data.get("error")))
        elif name == "transform_context":
            decision = _transform_context(run(name, data["messages"]))
        else:  # on_error
            from ._agent import _error

            run(name, _error(data["code"], data["message"]))
            decision = None
        if decision is None:
            return None
        from ._agent import _json_default

        return json.dumps(decision, default=_json_default)

    return dispatch


class _HookMethods:
    """The hook decorators of `Agent` (mixed in; it owns `_native` and
    `_async_tools`)."""

    _native: "NativeAgent"
    _async_tools: "_AsyncToolRunner"

    @property
    def _hooks(self) -> Dict[str, Callable[..., Any]]:
        hooks: Optional[Dict[str, Callable[..., Any]]] = self.__dict__.get("_hook_functions")
        if hooks is None:
            hooks = self.__dict__["_hook_functions"] = {}
        return hooks

    def _set_hook(self, name: str, fn: Callable[..., Any]) -> None:
        if not callable(fn):
            raise _not_callable(name, fn)
        self._hooks[name] = fn
        self._install_hooks()

    def clear_hooks(self) -> None:
        """Removes every hook and input filter."""
        self._hooks.clear()
        self._install_hooks()

    def _install_hooks(self) -> None:
        hooks = dict(self._hooks)
        if not hooks:
            self._native.set_hooks(None, [])
            return
        self._native.set_hooks(_dispatcher(hooks, self._async_tools), list(hooks))

    def _chat_hooks(self, hooks: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
        """The native keyword arguments for a chat's own `hooks` (a mapping
        from the decorators' names to functions); none for None."""
        if hooks is None:
            return {}
        if not isinstance(hooks, Mapping):
            raise TypeError(f"`hooks` must map hook names to functions, not {hooks!r}")
        functions = {}
        for name, fn in hooks.items():
            if fn is None:
                continue
            if not callable(fn):
                raise _not_callable(name, fn)
            functions[name] = fn
        # Unknown names go to the native check, worded as in every language.
        return {"hooks": _dispatcher(functions, self._async_tools), "hook_names": list(functions)}

    def input_filter(self, fn: _InputFilter) -> _InputFilter:
        """Decorator: checks the user's message before anything is decoded;
        returns None, `Warn(text)` or `Reject(reason)`."""
        self._set_hook("input_filter", fn)
        return fn

    def before_turn(self, fn: _BeforeTurn) -> _BeforeTurn:
        """Decorator: runs before model reply `turn` (1 for the first);
        returns None, or `EndChat` to end the chat."""
        self._set_hook("before_turn", fn)
        return fn

    def after_turn(self, fn: _AfterTurn) -> _AfterTurn:
        """Decorator: runs after model reply `turn` with its text (tool-call
        markup included)."""
        self._set_hook("after_turn", fn)
        return fn

    def before_tool_call(self, fn: _BeforeToolCall) -> _BeforeToolCall:
        """Decorator: runs before a tool call with its `ToolCall`; returns
        None (allow), `Deny(reason)` or `Rewrite(arguments)`."""
        self._set_hook("before_tool_call", fn)
        return fn

    def after_tool_call(self, fn: _AfterToolCall) -> _AfterToolCall:
        """Decorator: runs after a tool call with `(call, result, error)`;
        returns None to keep the result, or the value the model reads
        instead (`Replace(None)` for null)."""
        self._set_hook("after_tool_call", fn)
        return fn

    def transform_context(self, fn: _TransformContext) -> _TransformContext:
        """Decorator: edits the message dicts sent to the model for the next
        reply (the stored history is untouched); returns the list to send,
        or None."""
        self._set_hook("transform_context", fn)
        return fn

    def on_error(self, fn: _OnError) -> _OnError:
        """Decorator: called with the `ZooError` of a failed chat, or an
        `InternalError` naming a hook that failed."""
        self._set_hook("on_error", fn)
        return fn
