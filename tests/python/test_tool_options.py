"""Tool execution through Python, on the mock: `exclusive` and `timeout_ms`
at registration (`register_tool` and `@agent.tool`), their argument checks,
and concurrency under `tool_execution="parallel"` for sync tools (which
overlap where they release the GIL) and async tools (in a sync chat and
on the running loop of `chat_async`). Concurrency is proven by rendezvous:
every call of a reply waits for all the others to have started, which only
calls that run at once can do; nothing here depends on timing."""

import asyncio
import threading
from typing import Any, Dict, List

import pytest

import zoo_keeper as zk
from conftest import tool_call

# Only a broken test waits this long.
PROMPTLY = 30.0

TIMEOUT_RULE = (
    "invalid argument: the timeout of tool `slow` must be a whole number of milliseconds "
    "from 0 to 9223372036854775807 (0 or null for no limit), got "
)


def mock_agent(*replies: str, **config: Any) -> zk.Agent:
    return zk.Agent(provider={"type": "mock", "replies": list(replies)}, **config)


def calls(name: str, count: int) -> str:
    return "".join(tool_call(name, {"n": i}) for i in range(count))


@pytest.mark.parametrize(
    "options, got",
    [
        ({"timeout_ms": -5}, "-5"),
        ({"timeout_ms": 1.5}, "1.5"),
        ({"timeout_ms": 500.0}, "500.0"),
        ({"timeout_ms": float("nan")}, "NaN"),
        ({"timeout_ms": float("inf")}, "Infinity"),
        ({"timeout_ms": True}, "true"),
        ({"timeout_ms": "500"}, '"500"'),
        ({"timeout_ms": object()}, "an object"),
    ],
)
def test_a_bad_timeout_is_an_invalid_argument(options: Dict[str, Any], got: str) -> None:
    with mock_agent() as agent:
        with pytest.raises(zk.InvalidArgumentError) as raised:
            agent.register_tool("slow", "", {"type": "object"}, lambda: 1, **options)
        assert str(raised.value) == TIMEOUT_RULE + got
        assert raised.value.code == 1
        with pytest.raises(zk.InvalidArgumentError) as raised:
            agent.tool(name="slow", **options)(lambda: 1)
        assert str(raised.value) == TIMEOUT_RULE + got
        assert agent.chat("hi").text == "echo: hi"


@pytest.mark.parametrize("exclusive, got", [("yes", '"yes"'), (1, "1"), ([], "an array")])
def test_a_non_boolean_exclusive_is_an_invalid_argument(exclusive: Any, got: str) -> None:
    with mock_agent() as agent:
        with pytest.raises(zk.InvalidArgumentError) as raised:
            agent.register_tool("slow", "", {"type": "object"}, lambda: 1, exclusive=exclusive)
        assert str(raised.value) == f"invalid argument: the exclusive flag of tool `slow` must be true or false, got {got}"


def test_none_and_zero_mean_no_limit() -> None:
    with mock_agent(tool_call("a", {}), tool_call("b", {}), "done") as agent:
        agent.register_tool("a", "", {"type": "object"}, lambda: "A", timeout_ms=None)
        agent.register_tool("b", "", {"type": "object"}, lambda: "B", timeout_ms=0, exclusive=None)
        response = agent.chat("go")
        assert [c.result for c in response.tool_calls] == ["A", "B"]


def test_a_decorated_tool_past_its_timeout_is_a_tool_error_and_the_chat_goes_on() -> None:
    with mock_agent(tool_call("slow", {}), "Gave up.") as agent:
        release = threading.Event()

        # Held until the chat is over: only the time limit can answer it.
        @agent.tool(timeout_ms=50)
        def slow() -> str:
            """Takes its time."""
            release.wait(PROMPTLY)
            return "late"

        try:
            response = agent.chat("go")
        finally:
            release.set()
        assert response.text == "Gave up."
        assert response.tool_calls[0].error == "tool `slow` failed: it did not finish within 50 ms"
        assert agent.chat("again").text == "echo: again"


def test_sync_tools_overlap_under_parallel() -> None:
    # time.sleep and Barrier.wait release the GIL: four calls meet.
    with mock_agent(calls("meet", 4), "Met.", tool_execution="parallel") as agent:
        barrier = threading.Barrier(4, timeout=PROMPTLY)

        @agent.tool
        def meet(n: int) -> int:
            """Waits for the others."""
            barrier.wait()
            return n

        response = agent.chat("go")
        assert response.tool_errors == []
        assert [c.result for c in response.tool_calls] == [0, 1, 2, 3]


def test_an_exclusive_tool_runs_alone_under_parallel() -> None:
    reply = tool_call("meet", {"n": 0}) + tool_call("meet", {"n": 1}) + tool_call("write", {}) + tool_call("meet", {"n": 2}) + tool_call("meet", {"n": 3})
    with mock_agent(reply, "Done.", tool_execution="parallel") as agent:
        barrier = threading.Barrier(2, timeout=PROMPTLY)
        running = [0]
        lock = threading.Lock()
        seen: List[int] = []

        @agent.tool
        def meet(n: int) -> int:
            """Meets its neighbour."""
            with lock:
                running[0] += 1
            barrier.wait()
            with lock:
                running[0] -= 1
            return n

        @agent.tool(exclusive=True)
        def write() -> str:
            """Writes alone."""
            with lock:
                seen.append(running[0])
            return "written"

        events: List[zk.Event] = []
        response = agent.chat("go", on_event=events.append)
        assert response.tool_errors == []
        assert seen == [0]
        assert [c.result for c in response.tool_calls] == [0, 1, "written", 2, 3]
        steps = [(e.type[len("tool_call_"):], e.data["id"]) for e in events if e.type.startswith("tool_call_")]
        assert steps == [
            ("started", "call_1"), ("started", "call_2"), ("finished", "call_1"), ("finished", "call_2"),
            ("started", "call_3"), ("finished", "call_3"),
            ("started", "call_4"), ("started", "call_5"), ("finished", "call_4"), ("finished", "call_5"),
        ]


def test_async_tools_overlap_under_parallel_in_a_sync_chat() -> None:
    # Each tool thread runs its own event loop; the calls meet off-loop.
    with mock_agent(calls("meet", 4), "Met.", tool_execution="parallel") as agent:
        barrier = threading.Barrier(4, timeout=PROMPTLY)

        @agent.tool
        async def meet(n: int) -> int:
            """Waits for the others."""
            await asyncio.to_thread(barrier.wait)
            return n

        response = agent.chat("go")
        assert response.tool_errors == []
        assert [c.result for c in response.tool_calls] == [0, 1, 2, 3]


def test_async_tools_overlap_on_the_running_loop_of_chat_async() -> None:
    async def main() -> None:
        with mock_agent(calls("meet", 4), "Met.", tool_execution="parallel") as agent:
            arrived = [0]
            everyone = asyncio.Event()

            @agent.tool
            async def meet(n: int) -> int:
                """Waits for the others, on this loop."""
                arrived[0] += 1
                if arrived[0] == 4:
                    everyone.set()
                await asyncio.wait_for(everyone.wait(), PROMPTLY)
                return n

            response = await agent.chat_async("go")
            assert response.tool_errors == []
            assert [c.result for c in response.tool_calls] == [0, 1, 2, 3]

    asyncio.run(main())
