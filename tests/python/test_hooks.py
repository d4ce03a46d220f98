"""Hooks and input filters through Python, on the mock: a rejecting and a
warning filter, deny and rewrite of a call, an after_tool_call replacement,
before_turn ending a chat, transform_context, async hooks, and hooks that
raise (they fail safe, as zoo_keeper._hooks documents, and reach on_error)."""

from typing import Any, Dict, List, Optional, Tuple, Union

import pytest

import zoo_keeper as zk
from conftest import tool_call


def mock_agent(*replies: str, **config: Any) -> zk.Agent:
    return zk.Agent(provider={"type": "mock", "replies": list(replies)}, **config)


def weather_agent(*replies: str) -> Tuple[zk.Agent, List[str]]:
    agent = mock_agent(*replies)
    cities: List[str] = []

    @agent.tool
    def get_weather(city: str) -> str:
        """Weather in a city."""
        cities.append(city)
        return "sunny"

    return agent, cities


def test_a_rejecting_filter_ends_the_chat_and_leaves_the_history() -> None:
    with mock_agent("never read") as agent:
        seen: List[str] = []

        @agent.input_filter
        def no_secrets(message: str) -> Optional[zk.Reject]:
            seen.append(message)
            return zk.Reject("no secrets") if "password" in message else None

        events: List[zk.Event] = []
        response = agent.chat("my password is hunter2", on_event=events.append)
        assert response.stop_reason == "rejected"
        assert response.text == ""
        assert agent.history == []
        assert [e.type for e in events] == ["chat_started", "input_rejected", "chat_finished"]
        assert events[1].data["reason"] == "no secrets"
        assert seen == ["my password is hunter2"]
        # A message that passes goes through unchanged.
        assert agent.chat("hello").text == "never read"
        assert agent.history[0]["content"] == "hello"


def test_a_warning_is_appended_and_transform_context_edits_only_the_request() -> None:
    with mock_agent() as agent:

        @agent.input_filter
        def careful(message: str) -> zk.Warn:
            return zk.Warn("(be careful)")

        sent: List[List[Dict[str, Any]]] = []

        @agent.transform_context
        def mark(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
            sent.append(messages)
            return messages[:-1] + [dict(messages[-1], content="rewritten for the model")]

        # The mock echoes the last message it was sent.
        assert agent.chat("delete it").text == "echo: rewritten for the model"
        assert sent[0][-1]["content"] == "delete it\n\n(be careful)"
        assert agent.history[0]["content"] == "delete it\n\n(be careful)"


def test_before_tool_call_denies_or_rewrites_and_after_tool_call_replaces() -> None:
    call = tool_call("get_weather", {"city": "Rome"})
    agent, cities = weather_agent(call, "denied", call, "rewritten", call, "kept")
    with agent:
        decision: Union[None, zk.Deny, zk.Rewrite] = zk.Deny("not today")
        seen: List[Tuple[zk.ToolCall, Any, Optional[str]]] = []

        @agent.before_tool_call
        def veto(call: zk.ToolCall) -> Union[None, zk.Deny, zk.Rewrite]:
            assert call.name == "get_weather" and call.arguments == {"city": "Rome"}
            return decision

        @agent.after_tool_call
        def replace(call: zk.ToolCall, result: Any, error: Optional[str]) -> Any:
            seen.append((call, result, error))
            return {"forecast": "replaced"} if result is not None else None

        response = agent.chat("Weather?")
        assert response.text == "denied"
        assert response.tool_calls[0].error == "tool `get_weather` failed: the call was denied: not today"
        assert cities == []
        assert seen[0][1:] == (None, "tool `get_weather` failed: the call was denied: not today")

        decision = zk.Rewrite({"city": "Paris"})
        response = agent.chat("Weather?")
        assert response.text == "rewritten"
        assert cities == ["Paris"]
        assert response.tool_calls[0].result == {"forecast": "replaced"}
        assert response.tool_calls[0].error is None
        # after_tool_call reads the call as the model wrote it.
        assert seen[1] == (zk.ToolCall(id=seen[1][0].id, name="get_weather", arguments={"city": "Rome"}), "sunny", None)

        # Replace(None) replaces the result with null; None keeps it.
        decision = None

        @agent.after_tool_call
        def to_null(call: zk.ToolCall, result: Any, error: Optional[str]) -> zk.Replace:
            return zk.Replace(None)

        response = agent.chat("Weather?")
        assert cities == ["Paris", "Rome"]
        assert response.tool_calls[0].result is None and response.tool_calls[0].error is None
        assert agent.history[-2]["content"] == "null"


def test_before_turn_ends_the_chat_and_after_turn_sees_each_reply() -> None:
    agent, _ = weather_agent(tool_call("get_weather", {"city": "Rome"}), "unused")
    with agent:
        turns: List[Tuple[int, str]] = []

        @agent.before_turn
        def stop_at_two(turn: int) -> Optional[Any]:
            return zk.EndChat if turn == 2 else None

        @agent.after_turn
        def record(turn: int, text: str) -> None:
            turns.append((turn, text))

        response = agent.chat("Weather?")
        assert (response.stop_reason, response.metrics.iterations) == ("stop", 1)
        assert [t for t, _ in turns] == [1]
        assert "get_weather" in turns[0][1]


def test_async_hooks_are_awaited() -> None:
    agent, cities = weather_agent(tool_call("get_weather", {"city": "Rome"}), "done")
    with agent:

        @agent.before_tool_call
        async def veto(call: zk.ToolCall) -> zk.Rewrite:
            return zk.Rewrite({"city": "Oslo"})

        assert agent.chat("Weather?").text == "done"
        assert cities == ["Oslo"]


def test_hooks_that_raise_fail_safe_and_reach_on_error() -> None:
    call = tool_call("get_weather", {"city": "Rome"})
    agent, cities = weather_agent(call, "went on")
    with agent:
        errors: List[zk.ZooError] = []

        @agent.on_error
        def record(error: zk.ZooError) -> None:
            errors.append(error)

        @agent.input_filter
        def broken_filter(message: str) -> None:
            raise ValueError("filter broke")

        response = agent.chat("Weather?")
        assert response.stop_reason == "rejected"
        assert agent.history == []
        assert isinstance(errors[0], zk.InternalError)
        assert str(errors[0]) == "internal error: the filter_input hook failed: ValueError: filter broke"

        # A failing before_tool_call denies; a failing after_tool_call
        # changes nothing; the chat goes on.
        @agent.input_filter
        def fine(message: str) -> None:
            return None

        @agent.before_tool_call
        def broken_veto(call: zk.ToolCall) -> None:
            raise RuntimeError("veto broke")

        @agent.after_tool_call
        def broken_after(call: zk.ToolCall, result: Any, error: Optional[str]) -> None:
            raise RuntimeError("after broke")

        response = agent.chat("Weather?")
        assert response.text == "went on"
        assert response.tool_calls[0].error == (
            "tool `get_weather` failed: the call was denied: the before_tool_call hook failed: RuntimeError: veto broke"
        )
        assert cities == []
        assert [str(e) for e in errors[1:]] == [
            "internal error: the before_tool_call hook failed: RuntimeError: veto broke",
            "internal error: the after_tool_call hook failed: RuntimeError: after broke",
        ]

        # A return value a hook may not give is a failing hook too.
        @agent.input_filter
        def wrong(message: str) -> Any:
            return "yes"

        assert agent.chat("hello").stop_reason == "rejected"
        assert "TypeError: the input_filter hook must return None, Warn(...) or Reject(...), not 'yes'" in str(errors[-1])

        # After clear_hooks the agent answers as if none had been set.
        agent.clear_hooks()
        before = len(errors)
        assert agent.chat("hello").text == "echo: hello"
        assert len(errors) == before


def test_on_error_hears_of_a_failed_chat() -> None:
    with zk.Agent(provider={"type": "mock", "replies": [{"error": "boom"}]}) as agent:
        errors: List[zk.ZooError] = []
        agent.on_error(errors.append)
        with pytest.raises(zk.InferenceError):
            agent.chat("hi")
        assert len(errors) == 1 and isinstance(errors[0], zk.InferenceError)
        assert "boom" in str(errors[0])


def test_a_hook_must_be_callable() -> None:
    with mock_agent() as agent:
        with pytest.raises(zk.InvalidArgumentError, match="the `before_turn` hook must be a function, got int"):
            agent.before_turn(42)  # type: ignore[type-var]
