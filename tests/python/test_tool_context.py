"""Tool contexts through Python: a parameter annotated `ToolContext`
receives the call's context and is left out of the schema; `update` and
`progress` become events of the call, in order; the tool's timeout and the
chat's stop set `cancelled`; a context kept past its call reports nothing;
async tools get it too."""

import asyncio
import json
import threading
from typing import Any, Dict, List, Optional

import pytest

import zoo_keeper as zk
from zoo_keeper import Agent, InvalidArgumentError, ToolContext, function_schema

# Generous bound for a loaded machine; only a broken engine waits it out.
PROMPTLY = 30.0


def tool_call(name: str, arguments: Dict[str, Any]) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def mock(*replies: str) -> Agent:
    return Agent(provider={"type": "mock", "replies": list(replies)})


def reports(events: List[zk.Event]) -> List[Any]:
    return [(e.type, e.data.get("update", e.data.get("text"))) for e in events if e.type in ("tool_call_update", "tool_call_progress")]


def test_the_context_parameter_is_not_in_the_schema() -> None:
    def fetch(url: str, ctx: ToolContext, retries: Optional[int] = None) -> str:
        "Fetches a page."
        return url

    _, _, schema = function_schema(fetch)
    assert list(schema["properties"]) == ["url", "retries"]
    assert schema["required"] == ["url"]


def test_reports_become_events_between_the_calls_start_and_finish() -> None:
    with mock(tool_call("fetch", {"url": "https://example.com"}), "It is up.") as agent:
        seen: Dict[str, Any] = {}

        @agent.tool
        def fetch(url: str, ctx: ToolContext) -> Dict[str, int]:
            "Fetches a page."
            seen["call_id"] = ctx.call_id
            seen["cancelled"] = ctx.cancelled
            seen["taken"] = [ctx.progress("connecting"), ctx.update({"bytes_read": 512}), ctx.progress("done")]
            return {"status": 200}

        assert "ctx" not in json.dumps(agent.tools)
        events: List[zk.Event] = []
        response = agent.chat("Is it up?", on_event=events.append)
        assert response.tool_calls[0].result == {"status": 200}
        assert seen == {"call_id": "call_1", "cancelled": False, "taken": [True, True, True]}
        types = [e.type for e in events]
        start, finish = types.index("tool_call_started"), types.index("tool_call_finished")
        assert types[start + 1 : finish] == ["tool_call_progress", "tool_call_update", "tool_call_progress"]
        assert reports(events) == [("tool_call_progress", "connecting"), ("tool_call_update", {"bytes_read": 512}), ("tool_call_progress", "done")]
        assert all(e.data["id"] == "call_1" and e.data["name"] == "fetch" for e in events[start + 1 : finish])


def test_stream_yields_the_reports_as_events() -> None:
    with mock(tool_call("count", {}), "Counted.") as agent:

        def count(ctx: ToolContext) -> int:
            for i in range(3):
                ctx.progress(f"at {i}")
            return 3

        agent.register_tool("count", "Counts", {"type": "object", "properties": {}}, count)
        texts = [item.data["text"] for item in agent.stream("Count") if isinstance(item, zk.Event) and item.type == "tool_call_progress"]
        assert texts == ["at 0", "at 1", "at 2"]


def test_the_timeout_sets_cancelled_and_later_reports_are_dropped() -> None:
    with mock(tool_call("slow", {}), "Gave up.") as agent:
        seen: Dict[str, Any] = {}
        done = threading.Event()

        @agent.tool(timeout_ms=300)
        def slow(ctx: ToolContext) -> str:
            "Waits for its cancel token."
            seen["cancelled"] = ctx.wait_cancelled(PROMPTLY)
            seen["property"] = ctx.cancelled
            seen["late"] = ctx.progress("too late")
            done.set()
            return "ignored"

        events: List[zk.Event] = []
        response = agent.chat("Go", on_event=events.append)
        assert response.tool_calls[0].error == "tool `slow` failed: it did not finish within 300 ms"
        assert done.wait(PROMPTLY)
        assert seen == {"cancelled": True, "property": True, "late": False}
        assert reports(events) == []


def test_the_stop_sets_cancelled() -> None:
    with mock(tool_call("wait", {})) as agent:
        seen: Dict[str, bool] = {}
        done = threading.Event()

        @agent.tool
        def wait(ctx: ToolContext) -> str:
            "Stops the chat, then waits for its token."
            agent.stop()
            seen["cancelled"] = ctx.wait_cancelled(PROMPTLY)
            done.set()
            return "ignored"

        response = agent.chat("Go")
        assert response.stop_reason == "cancelled"
        assert done.wait(PROMPTLY)
        assert seen == {"cancelled": True}
        assert agent.chat("again").text == "echo: again"


def test_a_context_kept_past_its_call_reports_nothing() -> None:
    with mock(tool_call("keep", {}), "Kept.") as agent:
        kept: List[ToolContext] = []

        @agent.tool
        def keep(ctx: ToolContext) -> str:
            "Keeps its context."
            kept.append(ctx)
            return "ok"

        events: List[zk.Event] = []
        agent.chat("Go", on_event=events.append)
        assert kept[0].update({"late": True}) is False
        assert kept[0].progress("late") is False
        assert kept[0].cancelled is False
        assert reports(events) == []


def test_async_tools_get_the_context() -> None:
    with mock(tool_call("fetch", {"url": "a"}), "Done.") as agent:

        @agent.tool
        async def fetch(url: str, ctx: ToolContext) -> str:
            "Fetches asynchronously."
            ctx.progress("awaiting")
            await asyncio.sleep(0)
            ctx.update({"url": url, "cancelled": ctx.cancelled})
            return ctx.call_id

        async def main() -> Any:
            events: List[zk.Event] = []
            response = await agent.chat_async("Go", on_event=events.append)
            return response, events

        response, events = asyncio.run(main())
        assert response.tool_calls[0].result == "call_1"
        assert reports(events) == [("tool_call_progress", "awaiting"), ("tool_call_update", {"url": "a", "cancelled": False})]


def test_bad_reports_raise_in_the_tool() -> None:
    with mock(tool_call("bad", {}), "Reported.") as agent:
        raised: List[str] = []

        @agent.tool
        def bad(ctx: ToolContext) -> str:
            "Reports what JSON cannot hold."
            for attempt in (lambda: ctx.update({1, 2}), lambda: ctx.wait_cancelled(-1)):
                try:
                    attempt()
                except (TypeError, InvalidArgumentError) as error:
                    raised.append(type(error).__name__)
            return "ok"

        agent.chat("Go")
        assert raised == ["TypeError", "InvalidArgumentError"]
