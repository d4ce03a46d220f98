"""The Python agent on the real default model (SmolLM2-135M-Instruct)."""

import asyncio
import threading
import time

import pytest

import zoo_keeper as zk
from conftest import model_path

pytestmark = pytest.mark.model

@pytest.fixture(scope="module")
def model() -> zk.Model:
    return zk.Model(model_path())


def test_decorated_tool_called_with_valid_arguments(model):
    calls = []
    with zk.Agent(model=model, temperature=0, max_tokens=64) as agent:

        @agent.tool
        def get_weather(city: str, unit: str = "celsius") -> str:
            """Get the current weather for a city."""
            calls.append((city, unit))
            return f"17 degrees {unit} and cloudy in {city}"

        tokens = []
        response = agent.chat("What is the weather in Paris?", tool_choice="required", on_token=tokens.append)
    assert len(calls) == 1 and "Paris" in calls[0][0], calls
    assert response.tool_errors == []
    assert "".join(tokens) == response.text
    assert response.metrics.tokens_per_second > 0


def test_streaming_and_async_on_the_model(model):
    with zk.Agent(model=model, temperature=0, max_tokens=16) as agent:
        items = list(stream := agent.stream("Say hello."))
        tokens = [i.text for i in items if isinstance(i, zk.Token)]
        assert tokens and "".join(tokens) == stream.response.text

        async def main():
            return await agent.chat_async("Name a color.")

        assert asyncio.run(main()).usage.completion_tokens > 0


def test_two_agents_share_one_model_in_two_threads(model):
    results = {}

    def run(name: str, question: str) -> None:
        with zk.Agent(model=model, temperature=0, max_tokens=12) as agent:
            results[name] = agent.chat(question)

    threads = [threading.Thread(target=run, args=(n, q)) for n, q in [("a", "Say hi."), ("b", "Say bye.")]]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert set(results) == {"a", "b"}
    assert all(r.text for r in results.values())
    assert model.metadata["architecture"] == "llama"
    assert model.metadata["special"]["eos"] == "<|im_end|>"


RUNAWAY_TEMPLATE = (
    "{% for i in range(100000) %}{% for j in range(100000) %}"
    "{% for k in range(100) %}{% endfor %}{% endfor %}{% endfor %}"
)


def test_a_runaway_chat_template_fails_the_chat_and_close_is_prompt(model):
    # 10^12 loop steps: the template runs out of fuel and the chat fails
    # with the engine's error; the agent closes promptly after a stop.
    agent = zk.Agent(model=model, temperature=0, template=RUNAWAY_TEMPLATE)
    for _ in range(2):
        started = time.monotonic()
        with pytest.raises(zk.InvalidConfigError, match="ran out of fuel") as info:
            agent.chat("Hi")
        assert str(info.value).startswith("invalid config `template`:"), str(info.value)
        assert time.monotonic() - started < 30
    agent.stop()
    started = time.monotonic()
    assert agent.close(timeout=30)
    assert time.monotonic() - started < 30


def test_backend_info_reports_the_cpu_variant(model):
    # The model fixture loaded llama.cpp's CPU backend: the best variant,
    # from zoo-backends/ inside the installed package.
    info = zk.backend_info()
    assert set(info) == {"cpu_variant", "chosen_by", "features", "usable", "refused", "directory"}
    assert info["chosen_by"] == "best" and info["cpu_variant"] == info["usable"][0], info
    assert "x64" in info["usable"] and info["features"], info
    assert info["directory"].endswith("zoo_keeper/zoo-backends"), info
    assert info["directory"].startswith(str(__import__("pathlib").Path(zk.__file__).parent)), info
    for refused in info["refused"]:
        assert set(refused) == {"variant", "reason"} and refused["reason"], refused
    # One variant per process: asking for another is a config error, and the
    # one running is fine.
    other = "haswell" if info["cpu_variant"] == "x64" else "x64"
    with pytest.raises(zk.InvalidConfigError, match="already runs llama.cpp's"):
        zk.Model(model_path(), cpu_variant=other)
    with pytest.raises(zk.InvalidConfigError, match="unknown CPU variant `pentium`"):
        zk.Model(model_path(), cpu_variant="pentium")
    zk.Model(model_path(), cpu_variant=info["cpu_variant"])
