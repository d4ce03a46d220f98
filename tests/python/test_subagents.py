"""Sub-agents through Python: a child agent offered as a tool answers the
parent's task, may call the tools it was given, and bad specs raise."""

import json
import time

import pytest

from zoo_keeper import Agent, Event, InvalidArgumentError, ToolNotFoundError


def tool_call(name: str, arguments: dict) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def test_the_childs_answer_is_the_result() -> None:
    parent_replies = [tool_call("researcher", {"task": "weather in Oslo"}), "Done."]
    child_replies = [tool_call("weather", {}), "It is cold in Oslo."]
    with Agent(provider={"type": "mock", "replies": parent_replies}) as parent:
        ran = []
        parent.register_tool("weather", "Weather", {"type": "object", "properties": {}}, lambda: ran.append(1) or "cold")
        parent.add_subagent(
            "researcher",
            "Looks things up",
            tools=["weather"],
            system_prompt="You research.",
            provider={"type": "mock", "replies": child_replies},
        )
        response = parent.chat("Oslo?")
        assert response.text == "Done."
        assert response.tool_calls[0].result["text"] == "It is cold in Oslo."
        assert ran == [1]


def test_bad_specs_raise() -> None:
    with Agent(provider={"type": "mock"}) as parent:
        with pytest.raises(ToolNotFoundError):
            parent.add_subagent("r", "d", tools=["missing"], provider={"type": "mock"})
        with pytest.raises(InvalidArgumentError, match="give the sub-agent a provider"):
            parent.add_subagent("r", "d")
        with pytest.raises(InvalidArgumentError, match="`name`"):
            parent.add_subagent("", "d", provider={"type": "mock"})


def test_the_childs_steps_are_updates_and_its_usage_joins_the_parents() -> None:
    parent_replies = [tool_call("researcher", {"task": "weather in Oslo"}), "Done."]
    child_replies = [tool_call("weather", {}), "It is cold in Oslo."]
    with Agent(provider={"type": "mock", "replies": parent_replies}) as parent:
        parent.register_tool("weather", "Weather", {"type": "object", "properties": {}}, lambda: "cold")
        parent.add_subagent(
            "researcher",
            "Looks things up",
            tools=["weather"],
            provider={"type": "mock", "replies": child_replies},
        )
        events = []
        response = parent.chat("Oslo?", on_event=events.append)
        updates = [e.data for e in events if e.type == "tool_call_update"]
        assert all(u["id"] == "call_1" and u["name"] == "researcher" for u in updates)
        steps = [u["update"] for u in updates]
        assert [s["event"] for s in steps] == ["turn_finished", "tool_call_started", "tool_call_finished", "turn_finished"]
        assert all(s["subagent"] == "researcher" for s in steps)
        assert steps[1] == {"subagent": "researcher", "event": "tool_call_started", "id": "call_1", "name": "weather"}
        assert steps[2]["ok"] is True
        child = response.tool_calls[0].result["details"]["usage"]
        own = sum(e.data["usage"]["total_tokens"] for e in events if e.type == "turn_finished")
        assert child["total_tokens"] > 0
        assert response.usage.total_tokens == own + child["total_tokens"]
        assert events[-1].type == "chat_finished"
        assert events[-1].data["usage"]["total_tokens"] == response.usage.total_tokens


def test_the_parents_stop_reaches_the_child() -> None:
    # The child calls `started` (a parent tool it was given), then writes
    # 2,000 words at 50 ms each: 100 s unless the stop reaches it.
    parent_replies = [tool_call("researcher", {"task": "a long job"}), "Next."]
    long = " ".join(["word"] * 2000)
    child_replies = [tool_call("started", {}), long]
    with Agent(provider={"type": "mock", "replies": parent_replies}) as parent:
        parent.register_tool("started", "Signals", {"type": "object", "properties": {}}, lambda: "ok")
        parent.add_subagent(
            "researcher",
            "Looks things up",
            tools=["started"],
            provider={"type": "mock", "replies": child_replies, "piece_delay_ms": 50},
        )
        stopped_at = []

        def on_event(event: Event) -> None:
            # The child's call of `started` ended: it is writing now.
            step = event.data["update"]["event"] if event.type == "tool_call_update" else None
            if step == "tool_call_finished" and not stopped_at:
                stopped_at.append(time.monotonic())
                parent.stop()

        response = parent.chat("go", on_event=on_event)
        assert stopped_at, "the child never called its tool"
        assert response.stop_reason == "cancelled"
        # Generous for a busy machine; the child alone would take 100 s.
        assert time.monotonic() - stopped_at[0] < 20
        # The parent is usable again, and so is the child.
        assert parent.chat("next").text == "Next."
