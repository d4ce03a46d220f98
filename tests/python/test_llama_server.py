"""The Python agent on a real third-party OpenAI-compatible server:
llama-cpp-python's server serving SmolLM2 on 127.0.0.1 (started here,
ended after the module), configured by `provider={"type": "openai", ...}`:
a plain chat, a call forced by `tool_choice` and run by the agentic loop,
streaming, and a stop during a long streamed reply."""

import json
import threading
import time
from typing import Iterator

import pytest

import zoo_keeper as zk
from conftest import llama_server_python, model_path
from llama_server import MODEL, LlamaServer

pytestmark = [pytest.mark.model, pytest.mark.llama_server]

HANG_S = 300.0
"""A bound for a chat that only a hang would pass (a busy two-core machine)."""
CANCEL_BOUND_S = 10.0
"""How long a stop may take to end a streamed chat, generously."""


@pytest.fixture(scope="module")
def server() -> Iterator[LlamaServer]:
    python = llama_server_python()
    running = LlamaServer(python, model_path())
    try:
        yield running
    finally:
        running.close()


def remote_agent(server: LlamaServer, **config: object) -> zk.Agent:
    provider = {"type": "openai", "base_url": server.base_url, "model": MODEL}
    return zk.Agent(provider=provider, temperature=0, seed=7, max_tokens=64, **config)


def test_a_plain_chat_through_the_openai_provider(server: LlamaServer) -> None:
    events: list[str] = []
    with remote_agent(server) as agent:
        response = agent.chat("Name three colors.", on_event=lambda e: events.append(e.type))
        assert response.stop_reason == "stop"
        assert response.text.strip()
        assert response.tool_calls == []
        assert agent.history == [
            {"role": "user", "content": "Name three colors."},
            {"role": "assistant", "content": response.text},
        ]
    assert events == ["chat_started", "turn_started", "turn_finished", "chat_finished"]


def test_a_forced_tool_call_runs_in_the_loop_and_the_model_answers_after_its_result(server: LlamaServer) -> None:
    calls: list[str] = []
    with remote_agent(server) as agent:

        @agent.tool
        def get_weather(city: str) -> dict:
            """Get the current weather for a city."""
            calls.append(city)
            return {"city": city, "temperature_celsius": 17, "sky": "cloudy"}

        response = agent.chat("What is the weather like in Paris today?", tool_choice="get_weather")
        history = agent.history
        roles = [m["role"] for m in history]
    assert len(calls) == 1 and "Paris" in calls[0], calls
    assert [(c.name, c.arguments, c.result) for c in response.tool_calls] == [
        ("get_weather", {"city": calls[0]}, {"city": calls[0], "temperature_celsius": 17, "sky": "cloudy"})
    ]
    assert response.tool_errors == []
    assert response.stop_reason == "stop"
    assert response.metrics.iterations == 2
    # An answer after the result, whose wording is not asserted: over a
    # server, SmolLM2-135M often ignores the result or echoes it (the local
    # engine bans the echo's tokens; a server cannot be told to).
    assert response.text.strip()
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert json.loads(history[2]["content"]) == response.tool_calls[0].result


def test_a_reply_streams_in_pieces_to_on_token(server: LlamaServer) -> None:
    pieces: list[str] = []
    with remote_agent(server) as agent:
        response = agent.chat("Write a short poem about the sea.", on_token=pieces.append, max_tokens=24)
    assert len(pieces) > 1, pieces
    assert "".join(pieces) == response.text
    assert response.usage.completion_tokens > 0


def test_a_stop_during_a_long_streamed_reply_ends_the_chat_and_the_agent_answers_the_next(server: LlamaServer) -> None:
    with remote_agent(server) as agent:
        pieces: list[str] = []
        streaming = threading.Event()

        def on_token(piece: str) -> None:
            pieces.append(piece)
            if len(pieces) >= 5:  # mid-stream: the reply runs to thousands of tokens
                streaming.set()

        result: list[zk.Response] = []
        chat = threading.Thread(target=lambda: result.append(agent.chat(
            "Write a very long story about a dragon, with many chapters.", on_token=on_token, max_tokens=3000)))
        chat.start()
        assert streaming.wait(HANG_S), "the reply does not stream"
        stopped = time.monotonic()
        agent.stop()
        chat.join(HANG_S)
        latency = time.monotonic() - stopped
        assert not chat.is_alive(), "the chat did not end"
        assert latency < CANCEL_BOUND_S, f"the stop took {latency:.2f} s"
        (response,) = result
        assert response.stop_reason == "cancelled"
        assert response.text and response.text == "".join(pieces)
        assert agent.history == [
            {"role": "user", "content": "Write a very long story about a dragon, with many chapters."},
            {"role": "assistant", "content": response.text},
        ]

        following = agent.chat("Say hello.")
        assert following.stop_reason in ("stop", "length")
        assert following.text.strip()
        assert len(agent.history) == 4
