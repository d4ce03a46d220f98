"""The Python agent on the scripted mock backend (no model needed)."""

import asyncio
import dataclasses
import threading
import time
from typing import List, Optional

import pytest

import zoo_keeper as zk
from conftest import tool_call


def mock_agent(*replies: str, delay_ms: int = 0, **config) -> zk.Agent:
    return zk.Agent(provider={"type": "mock", "replies": list(replies), "piece_delay_ms": delay_ms}, **config)


@dataclasses.dataclass
class Window:
    width: int
    height: int


def test_decorated_tool_with_several_parameter_types():
    seen = []
    args = {"name": "kitchen", "count": 3, "ratio": 0.5, "on": True, "tags": ["a", "b"], "window": {"width": 2, "height": 3}}
    with mock_agent(tool_call("configure", args), "done") as agent:

        @agent.tool
        def configure(name: str, count: int, ratio: float, on: bool, tags: List[str], window: Window, note: Optional[str] = None) -> dict:
            """Configure a room."""
            seen.append((name, count, ratio, on, tags, window, note))
            return {"ok": True, "area": window.width * window.height}

        response = agent.chat("configure the kitchen")
    assert seen == [("kitchen", 3, 0.5, True, ["a", "b"], Window(2, 3), None)]
    assert response.tool_calls[0].result == {"ok": True, "area": 6}
    assert response.text == "done"
    assert isinstance(response.usage, zk.Usage) and response.usage.total_tokens > 0


def test_streaming_tokens_and_events():
    with mock_agent(tool_call("ping", {}), "pong back to you") as agent:
        agent.register_tool("ping", "Ping", {"type": "object", "properties": {}}, lambda: "pong")
        tokens, events = [], []
        response = agent.chat("ping?", on_token=tokens.append, on_event=events.append)
        assert "".join(tokens) == response.text == "pong back to you"
        assert [e.type for e in events][:4] == ["chat_started", "turn_started", "turn_finished", "tool_call_started"]
        assert any(e.type == "tool_call_finished" and e.data["result"] == "pong" for e in events)

        items = list(stream := agent.stream("again"))
        assert [i.text for i in items if isinstance(i, zk.Token)] == ["echo:", " again"]
        assert stream.response is not None and stream.response.text == "echo: again"


def test_thinking_streams_apart_from_the_text():
    reply = "<think>Two plus two is four.</think>\n\nThe answer is 4."
    with mock_agent(reply, reply) as agent:
        tokens, thinking = [], []
        response = agent.chat("2+2?", on_token=tokens.append, on_thinking=thinking.append)
        assert response.text == "The answer is 4."
        assert response.thinking == "Two plus two is four."
        assert "".join(thinking).strip() == "Two plus two is four."
        assert "".join(tokens).strip() == "The answer is 4."
        assert agent.history[-1]["thinking"] == "Two plus two is four."

        items = list(stream := agent.stream("again"))
        streamed = "".join(i.text for i in items if isinstance(i, zk.Thinking))
        assert streamed.strip() == "Two plus two is four."
        assert "think" not in "".join(i.text for i in items if isinstance(i, zk.Token))
        assert stream.response is not None and stream.response.thinking == "Two plus two is four."
        assert agent.chat("plain").thinking is None


def test_tool_exceptions_go_back_to_the_model():
    with mock_agent(tool_call("fails", {}), "sorry") as agent:

        @agent.tool
        def fails() -> str:
            """Always fails."""
            raise ValueError("the disk is full")

        response = agent.chat("try")
    assert response.text == "sorry"
    assert response.tool_errors[0].kind == "tool_handler_failed"
    assert "ValueError: the disk is full" in response.tool_errors[0].message


def test_exception_in_on_token_stops_the_chat_and_is_raised():
    with mock_agent("one two three four five six", delay_ms=5) as agent:
        def boom(_text: str) -> None:
            raise RuntimeError("callback broke")

        with pytest.raises(RuntimeError, match="callback broke"):
            agent.chat("go", on_token=boom)
        assert agent.chat("next").text == "echo: next"


def test_async_chat_and_task_cancellation():
    async def main():
        # The long reply takes 25 s: only the task's cancellation ends it.
        with mock_agent("hello async", " ".join(["w"] * 5000), delay_ms=5) as agent:

            @agent.tool
            async def later(x: int) -> int:
                """Async tool."""
                await asyncio.sleep(0.01)
                return x * 2

            response = await agent.chat_async("hi")
            assert response.text == "hello async"

            # Cancelled once it streams, so the cancel reaches a running chat.
            loop = asyncio.get_running_loop()
            streaming = asyncio.Event()
            task = asyncio.create_task(
                agent.chat_async("long one", on_token=lambda _: loop.call_soon_threadsafe(streaming.set))
            )
            await asyncio.wait_for(streaming.wait(), timeout=30)
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            # The cancelled chat ended (had it run on, the next chat would
            # wait 25 s behind it); the agent takes the next one.
            started = time.monotonic()
            assert (await agent.chat_async("after")).text == "echo: after"
            assert time.monotonic() - started < 5

            got = [item async for item in agent.astream("streamed")]
            assert "".join(i.text for i in got if isinstance(i, zk.Token)) == "echo: streamed"

    asyncio.run(main())


def test_async_tool_from_a_sync_chat():
    with mock_agent(tool_call("double", {"x": 21}), "42") as agent:

        @agent.tool
        async def double(x: int) -> int:
            """Doubles."""
            await asyncio.sleep(0)
            return 2 * x

        response = agent.chat("double 21")
    assert response.tool_calls[0].result == 42


def test_stop_from_another_thread():
    # 25 s of reply: only the stop ends it. Another thread stops the chat
    # once it streams (a stop before the chat starts would stop nothing).
    with mock_agent(" ".join(["word"] * 5000), delay_ms=5) as agent:
        streaming = threading.Event()
        stopped_at = []

        def stopper() -> None:
            assert streaming.wait(timeout=30)
            stopped_at.append(time.monotonic())
            agent.stop()

        thread = threading.Thread(target=stopper)
        thread.start()
        response = agent.chat("talk", on_token=lambda _: streaming.set())
        ended = time.monotonic()
        thread.join()
        assert response.stop_reason == "cancelled"
        assert 0 < len(response.text.split()) < 5000
        # Documented: about 100 ms; a loaded machine gets ten times that.
        assert ended - stopped_at[0] < 1.0


def test_history_system_prompt_and_errors():
    with mock_agent(system_prompt="be brief") as agent:
        agent.chat("one")
        assert [m["role"] for m in agent.history] == ["system", "user", "assistant"]
        agent.set_system_prompt("be verbose")
        assert agent.history[0]["content"] == "be verbose"
        agent.clear_history()
        assert len(agent.history) == 1
        with pytest.raises(zk.InvalidMessageSequenceError) as info:
            agent.history = [{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]
        assert info.value.code == 5
        with pytest.raises(zk.ToolNotFoundError):
            agent.chat("x", tool_choice="missing_tool")
        with pytest.raises(zk.InvalidConfigError):
            agent.chat("x", tool_choice="not a name!")
    with pytest.raises(zk.AgentNotRunningError):
        agent.chat("closed")
    assert agent.close() is True  # idempotent


def test_the_mock_is_a_public_provider():
    # As a user testing their own agent without a model would write it.
    agent = zk.Agent(provider={"type": "mock", "replies": ["Hello there", {"error": "no luck"}], "piece_delay_ms": 1})
    with agent:
        tokens: List[str] = []
        assert agent.chat("hi", on_token=tokens.append).text == "Hello there"
        assert tokens == ["Hello", " there"]
        with pytest.raises(zk.InferenceError, match="^inference failed: no luck$"):
            agent.chat("again")
        assert agent.chat("third").text == "echo: third"
    # The private keys of earlier versions are gone: unknown config keys.
    with pytest.raises(zk.InvalidConfigError, match="^invalid config `_mock_replies`: unknown key"):
        zk.Agent(provider={"type": "mock"}, _mock_replies=["hi"])
    with pytest.raises(zk.InvalidConfigError) as info:
        zk.Agent(provider={"type": "mock", "piece_delay_ms": -5})
    assert str(info.value) == "invalid config `provider.piece_delay_ms`: expected a whole number from 0 to 60000, got -5"
    # Neither a model nor a provider: the engine's error, as in C and Node.
    with pytest.raises(zk.InvalidConfigError) as info:
        zk.Agent(temperature=0)
    assert str(info.value) == "invalid config `model_path`: is required to create an agent (or a `provider`)"


def test_error_classes_and_codes():
    codes = {cls.__name__: cls.code for cls in (zk.InvalidArgumentError, zk.InvalidConfigError, zk.ModelLoadError, zk.InternalError)}
    assert codes == {"InvalidArgumentError": 1, "InvalidConfigError": 2, "ModelLoadError": 4, "InternalError": 16}
    with pytest.raises(zk.ModelLoadError, match="does not exist"):
        zk.Agent(model_path="/no/such/model.gguf")
    with pytest.raises(zk.InvalidConfigError, match="temperature"):
        zk.Agent(provider={"type": "mock"}, temperature=-1)
    with pytest.raises(zk.InvalidConfigError):
        zk.Agent()
