"""The agent runtime through Python, on the mock: a steer from another
thread while a tool runs, follow-ups, per-chat limits, event identity and
the argument checks. The shared scenarios cover the same behaviour as data;
these add threads and Python's own argument handling."""

import threading
from typing import Any, List

import pytest

import zoo_keeper as zk
from conftest import tool_call

# Only a broken test waits this long.
PROMPTLY = 30.0


def mock_agent(*replies: str, **config: Any) -> zk.Agent:
    return zk.Agent(provider={"type": "mock", "replies": list(replies)}, **config)


def test_a_steer_from_another_thread_while_a_tool_runs() -> None:
    two_calls = tool_call("search", {}) + tool_call("search", {})
    with mock_agent(two_calls, "It is 21 C.") as agent:
        steered = threading.Event()

        def steer_later() -> None:
            agent.steer("Use Celsius.")
            steered.set()

        @agent.tool
        def search() -> str:
            """Searches."""
            threading.Thread(target=steer_later).start()
            assert steered.wait(PROMPTLY)
            return "found"

        events: List[zk.Event] = []
        response = agent.chat("Weather?", on_event=events.append)
        assert response.text == "It is 21 C."
        assert [e.type for e in events] == [
            "chat_started", "turn_started", "turn_finished", "tool_call_started", "tool_call_finished",
            "steering_received", "turn_started", "turn_finished", "chat_finished",
        ]
        assert {(e.agent_id, e.chat_id) for e in events} == {(agent.id, 1)}
        assert [e.seq for e in events] == list(range(len(events)))
        history = agent.history
        assert history[3]["content"] == "Not executed: the user sent a new message before it ran."
        assert history[4] == {"role": "user", "content": "Use Celsius."}


def test_follow_ups_queues_and_limits() -> None:
    with mock_agent("Sunny.", "Rainy tomorrow.", tool_call("noop", {}), "unused") as agent:
        @agent.tool
        def noop() -> str:
            """Does nothing."""
            return "done"

        agent.follow_up("And tomorrow?")
        response = agent.chat("Today?")
        assert (response.text, response.metrics.iterations) == ("Rainy tomorrow.", 2)
        agent.follow_up("Dropped")
        agent.clear_queues()
        events: List[zk.Event] = []
        response = agent.chat("Go", max_turns=1, on_event=events.append)
        assert response.stop_reason == "limit"
        limit = [e for e in events if e.type == "limit_reached"]
        assert [(e.data["limit"], e.data["value"]) for e in limit] == [("max_turns", 1)]


@pytest.mark.parametrize("key", ["max_turns", "max_total_tokens", "max_duration_ms"])
def test_a_negative_limit_is_an_invalid_argument(key: str) -> None:
    with mock_agent() as agent:
        with pytest.raises(zk.InvalidArgumentError) as raised:
            agent.chat("hi", **{key: -1})
        maximum = 4294967295 if key == "max_turns" else 9223372036854775807
        assert str(raised.value) == f"invalid argument: `{key}` must be an integer from 0 to {maximum}, got -1"
        assert agent.chat("hi").text == "echo: hi"


def test_agents_have_their_own_ids() -> None:
    with mock_agent() as first, mock_agent() as second:
        assert first.id != second.id
