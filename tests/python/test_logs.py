"""Logs through Python's `logging` (logger "zoo_keeper"), on the mock: the
tool-call record with its chat id, tool and latency, the logger's level
respected, the debug prompt and raw output, records delivered on the
library's own thread without ever holding the engine up, and records
dropped (and counted) behind a handler that cannot keep up."""

import json
import logging
import pathlib
import threading
from typing import Any, Iterator, List

import pytest

import zoo_keeper as zk
from conftest import tool_call

LOGGER = logging.getLogger("zoo_keeper")
# Generous: the machine may be busy.
WAIT_S = 30.0


class Keep(logging.Handler):
    """Keeps every record it is given."""

    def __init__(self) -> None:
        super().__init__(level=1)
        self.records: List[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)

    def of(self, agent: zk.Agent, target: str = "") -> List[logging.LogRecord]:
        assert zk.flush_logs(WAIT_S), "the log queue did not drain"
        return [
            r for r in self.records
            if r.fields.get("agent_id") == agent.id and (not target or r.target == target)  # type: ignore[attr-defined]
        ]


@pytest.fixture
def kept() -> Iterator[Keep]:
    handler = Keep()
    LOGGER.addHandler(handler)
    level = LOGGER.level
    try:
        yield handler
    finally:
        LOGGER.removeHandler(handler)
        LOGGER.setLevel(level)


def adder(*replies: str) -> zk.Agent:
    agent = zk.Agent(provider={"type": "mock", "replies": list(replies)})

    @agent.tool
    def add(a: float, b: float) -> float:
        """Adds two numbers."""
        return a + b

    return agent


def test_a_tool_call_is_logged_with_its_chat_tool_and_latency(kept: Keep) -> None:
    LOGGER.setLevel(logging.INFO)
    with adder(tool_call("add", {"a": 2, "b": 3}), "5") as agent:
        assert agent.chat("2+3?").text == "5"
        tools = kept.of(agent, "zoo::tool")
        assert len(tools) == 1
        record = tools[0]
        assert record.levelno == logging.INFO
        assert record.name == "zoo_keeper"
        fields = record.fields  # type: ignore[attr-defined]
        assert fields["chat_id"] == 1
        assert fields["tool"] == "add"
        assert fields["call_id"] == "call_1"
        assert fields["ok"] is True
        assert fields["latency_ms"] >= 0
        assert record.getMessage().startswith("tool `add` (call_1) returned in ")
        turns = kept.of(agent, "zoo::turn")
        assert [r.fields["turn"] for r in turns] == [1, 2]  # type: ignore[attr-defined]
        chats = kept.of(agent, "zoo::chat")
        assert [r.fields["stop_reason"] for r in chats] == ["stop"]  # type: ignore[attr-defined]
        # Info leaves the debug records out.
        assert kept.of(agent, "zoo::prompt") == []
        # Delivered on the library's thread, not the caller's.
        assert record.thread != threading.get_ident()


def test_the_loggers_level_is_respected(kept: Keep) -> None:
    LOGGER.setLevel(logging.WARNING)
    with adder(tool_call("add", {"a": 1, "b": 1}), "2") as agent:
        agent.chat("1+1?")
        assert kept.of(agent) == []
        # Read again when the next chat starts.
        LOGGER.setLevel(logging.DEBUG)
        agent.chat("again")
        records = kept.of(agent)
        assert {r.fields["chat_id"] for r in records} == {2}  # type: ignore[attr-defined]
        prompt = [r for r in records if r.target == "zoo::prompt"]  # type: ignore[attr-defined]
        assert len(prompt) == 1
        assert prompt[0].levelno == logging.DEBUG
        assert prompt[0].fields["form"] == "messages"  # type: ignore[attr-defined]
        # The mock renders nothing: the record is what it received.
        sent = json.loads(prompt[0].getMessage())
        assert sent[-1] == {"role": "user", "content": "again"}
        raw = [r for r in records if r.target == "zoo::raw_output"]  # type: ignore[attr-defined]
        assert [r.getMessage() for r in raw] == ["echo: again"]


def test_a_stuck_handler_never_holds_the_engine_up(kept: Keep) -> None:
    LOGGER.setLevel(logging.DEBUG)
    release = threading.Event()
    entered = threading.Event()

    class Stuck(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            entered.set()
            release.wait(WAIT_S)

    stuck = Stuck()
    LOGGER.addHandler(stuck)
    dropped = zk.dropped_logs()
    try:
        with adder(tool_call("add", {"a": 1, "b": 2}), "3") as agent:
            # Chats go on while the handler is stuck on their first record;
            # past the queue's bound, records are dropped, never kept.
            assert agent.chat("1+2?").text == "3"
            assert entered.wait(WAIT_S)
            for i in range(2000):
                agent.chat(f"echo {i}")
                if zk.dropped_logs() > dropped:
                    break
            assert zk.dropped_logs() > dropped
    finally:
        release.set()
        assert zk.flush_logs(WAIT_S)
        LOGGER.removeHandler(stuck)
    warnings = [r for r in kept.records if getattr(r, "target", "") == "zoo::logs"]
    assert warnings, "the handlers are told records were dropped"
    assert warnings[0].levelno == logging.WARNING
    assert warnings[0].fields["dropped"] >= 1  # type: ignore[attr-defined]


def test_a_hook_failure_is_a_warning(kept: Keep) -> None:
    LOGGER.setLevel(logging.WARNING)
    with adder(tool_call("add", {"a": 1, "b": 2}), "denied") as agent:

        @agent.before_tool_call
        def broken(call: zk.ToolCall) -> None:
            raise RuntimeError("boom")

        agent.chat("1+2?")
        records = kept.of(agent, "zoo::hook")
        assert [r.getMessage() for r in records] == ["the before_tool_call hook failed: RuntimeError: boom"]
        assert records[0].fields["chat_id"] == 1  # type: ignore[attr-defined]


def test_per_chat_hooks_replace_the_agents_for_that_chat() -> None:
    replies = [tool_call("add", {"a": 1, "b": 2}), "agent", tool_call("add", {"a": 1, "b": 2}), "chat", tool_call("add", {"a": 1, "b": 2}), "agent again"]
    with adder(*replies) as agent:
        agent_calls: List[str] = []

        @agent.before_tool_call
        def deny(call: zk.ToolCall) -> zk.Deny:
            agent_calls.append(call.id)
            return zk.Deny("the agent says no")

        first = agent.chat("1+2?")
        assert first.tool_calls[0].error == "tool `add` failed: the call was denied: the agent says no"

        chat_calls: List[Any] = []

        def rewrite(call: zk.ToolCall) -> zk.Rewrite:
            chat_calls.append(call.arguments)
            return zk.Rewrite({"a": 10, "b": 20})

        second = agent.chat("1+2?", hooks={"before_tool_call": rewrite, "after_turn": None})
        assert second.text == "chat"
        assert second.tool_calls[0].result == 30
        assert chat_calls == [{"a": 1, "b": 2}]
        assert agent_calls == ["call_1"]

        third = agent.chat("1+2?")
        assert third.tool_calls[0].error is not None
        assert agent_calls == ["call_1", "call_3"]

        # An empty mapping runs no hook at all in that chat.
        agent.history = []
        with pytest.raises(zk.InvalidArgumentError, match="the `before_tool_call` hook must be a function, got int"):
            agent.chat("x", hooks={"before_tool_call": 3})
        with pytest.raises(zk.InvalidArgumentError, match="`before_everything` is not a hook"):
            agent.chat("x", hooks={"before_everything": print})
        assert agent.chat("plain", hooks={}).text == "echo: plain"


def test_per_chat_hooks_in_every_way_of_starting_a_chat() -> None:
    import asyncio

    with adder() as agent:
        seen: List[str] = []

        def note(message: str) -> zk.Warn:
            seen.append(message)
            return zk.Warn("(noted)")

        hooks = {"input_filter": note}
        assert agent.chat("one", hooks=hooks).text == "echo: one\n\n(noted)"
        stream = agent.stream("two", hooks=hooks)
        assert [e.type for e in stream if isinstance(e, zk.Event)][0] == "chat_started"
        assert stream.response is not None and stream.response.text == "echo: two\n\n(noted)"

        async def run() -> str:
            response = await agent.chat_async("three", hooks=hooks)
            items = [i async for i in agent.astream("four", hooks=hooks) if isinstance(i, zk.Token)]
            return response.text + "|" + "".join(t.text for t in items)

        assert asyncio.run(run()) == "echo: three\n\n(noted)|echo: four\n\n(noted)"
        # Regenerate answers the stored (already warned) message again.
        assert agent.regenerate(hooks={}).text == "echo: four\n\n(noted)"
        assert seen == ["one", "two", "three", "four"]


def test_a_session_write_is_a_debug_record(kept: Keep, tmp_path: pathlib.Path) -> None:
    LOGGER.setLevel(logging.DEBUG)
    db = str(tmp_path / "chats.db")
    with zk.Agent(provider={"type": "mock"}, session_store=db, session="logged") as agent:
        agent.chat("hello")
        # The chat's round, its question and reply, in one transaction.
        writes = kept.of(agent, "zoo::session")
        assert len(writes) == 1
        assert writes[0].levelno == logging.DEBUG
        assert writes[0].getMessage() == "session written"
        fields = writes[0].fields  # type: ignore[attr-defined]
        assert fields["session"] == "logged"
        assert fields["messages"] == 2
        assert fields["deleted_from"] == 0
        assert fields["latency_us"] >= 0
