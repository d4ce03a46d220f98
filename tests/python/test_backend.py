"""Backends written in Python (`Agent(backend=obj)`): what `generate`
receives, text streamed from a generator and an async generator, a native
tool call the loop runs and answers, usage reaching the response, a backend
that raises (ProviderError, history unchanged, next chat works), a stop
during a reply (the generator is closed, the async one's task cancelled),
a counter of tokens, and bad items. The shared scenarios run on a Python
backend too (test_scenarios.py)."""

import asyncio
import threading
from typing import Any, AsyncIterator, Dict, Iterator, List

import pytest

import zoo_keeper as zk

WAIT = 60.0  # only a broken engine waits this long


class Scripted:
    """Each reply is `replies[turn](request)`, a generator; keeps the requests."""

    def __init__(self, *replies: Any) -> None:
        self.replies = list(replies)
        self.requests: List[zk.BackendRequest] = []

    def generate(self, request: zk.BackendRequest) -> Any:
        self.requests.append(request)
        return self.replies[len(self.requests) - 1](request)


def weather(city: str) -> Dict[str, Any]:
    "Current weather for a city."
    return {"city": city, "temperature": 21}


def test_text_streams_and_usage_reaches_the_response() -> None:
    def reply(request: zk.BackendRequest) -> Iterator[zk.BackendItem]:
        yield "Hello"
        yield {"type": "text", "text": ", world"}
        yield {"type": "usage", "prompt_tokens": 12, "cached_tokens": 3, "completion_tokens": 4}

    backend = Scripted(reply)
    with zk.Agent(backend=backend, system_prompt="Be brief.", temperature=0.25) as agent:
        tokens: List[str] = []
        response = agent.chat("Hi", on_token=tokens.append)
        assert response.text == "Hello, world"
        assert tokens == ["Hello", ", world"]
        assert (response.usage.prompt_tokens, response.usage.cached_tokens, response.usage.completion_tokens) == (12, 3, 4)
        assert response.usage.total_tokens == 16
        request = backend.requests[0]
        assert [m["role"] for m in request.messages] == ["system", "user"]
        assert request.messages[1]["content"] == "Hi"
        assert request.tools == [] and request.tool_choice == "auto"
        assert request.sampling["temperature"] == 0.25 and request.sampling["seed"] is None
        assert request.thinking == "off" and request.max_calls == 1 and request.max_tokens is None
        assert request.stable_prefix == 0 and request.time_left_ms is None
        assert agent.history[-1] == {"role": "assistant", "content": "Hello, world"}


def test_a_native_tool_call_runs_and_is_answered() -> None:
    def call(request: zk.BackendRequest) -> Iterator[zk.BackendItem]:
        assert request.tools[0]["name"] == "weather"
        yield "Let me look."
        yield {"type": "tool_call", "name": "weather", "arguments": {"city": "Paris"}}

    def answer(request: zk.BackendRequest) -> Iterator[zk.BackendItem]:
        result = request.messages[-1]
        assert result["role"] == "tool" and result["tool_call_id"] == "call_1"
        yield f"It is {result['content']}."

    with zk.Agent(backend=Scripted(call, answer), provider={"type": "host", "thinking": "low"}) as agent:
        agent.tool(weather)
        response = agent.chat("Weather in Paris?")
        assert [(c.name, c.arguments, c.result) for c in response.tool_calls] == [
            ("weather", {"city": "Paris"}, {"city": "Paris", "temperature": 21})
        ]
        assert response.text == 'It is {"city":"Paris","temperature":21}.'
        assert response.metrics.iterations == 2


def test_a_raising_backend_is_provider_error_and_the_agent_goes_on() -> None:
    def fine(request: zk.BackendRequest) -> Iterator[str]:
        yield "One."

    def raises(request: zk.BackendRequest) -> Iterator[str]:
        yield "partial"
        raise ValueError("the gateway answered 503")

    def error_item(request: zk.BackendRequest) -> Iterator[zk.BackendItem]:
        yield {"type": "error", "message": "quota exceeded"}
        yield "never streamed"

    def again(request: zk.BackendRequest) -> Iterator[str]:
        yield "Fine again."

    with zk.Agent(backend=Scripted(fine, raises, error_item, again)) as agent:
        agent.chat("one")
        before = agent.history
        with pytest.raises(zk.ProviderError) as raised:
            agent.chat("two")
        assert str(raised.value) == "provider host failed: ValueError: the gateway answered 503"
        assert raised.value.code == 17
        assert agent.history == before
        with pytest.raises(zk.ProviderError, match="^provider host failed: quota exceeded$"):
            agent.chat("three")
        assert agent.history == before
        assert agent.chat("four").text == "Fine again."


def test_an_async_generator_streams_on_the_chats_loop() -> None:
    loops: List[Any] = []

    class Async:
        async def generate(self, request: zk.BackendRequest) -> AsyncIterator[zk.BackendItem]:
            loops.append(asyncio.get_running_loop())
            for piece in ["Hel", "lo"]:
                await asyncio.sleep(0)
                yield piece

    async def main(agent: zk.Agent) -> None:
        response = await agent.chat_async("Hi")
        assert response.text == "Hello"
        assert loops == [asyncio.get_running_loop()]

    with zk.Agent(backend=Async()) as agent:
        asyncio.run(main(agent))
        # Without a chat's loop it runs on a loop of the host thread's own.
        assert agent.chat("Again").text == "Hello"
        assert len(loops) == 2 and loops[1] is not loops[0]


def test_a_stop_closes_the_generator_and_the_agent_goes_on() -> None:
    started = threading.Event()
    seen: Dict[str, Any] = {}

    def waits(request: zk.BackendRequest) -> Iterator[str]:
        try:
            yield "Thinking about it"
            started.set()
            seen["cancelled"] = request.wait_cancelled(WAIT)
            yield " and more"  # dropped: the generator is closed here
            seen["resumed"] = True
        finally:
            seen["closed"] = True

    def again(request: zk.BackendRequest) -> Iterator[str]:
        yield "Again."

    with zk.Agent(backend=Scripted(waits, again)) as agent:
        chat = threading.Thread(target=lambda: seen.setdefault("response", agent.chat("Go")))
        chat.start()
        assert started.wait(WAIT)
        agent.stop()
        chat.join(WAIT)
        response = seen["response"]
        assert response.stop_reason == "cancelled" and response.text == "Thinking about it"
        assert agent.chat("Once more").text == "Again."
        assert seen["cancelled"] is True and seen["closed"] is True and "resumed" not in seen


def test_a_stop_cancels_an_async_generators_task() -> None:
    started = threading.Event()
    seen: Dict[str, Any] = {}

    class Slow:
        async def generate(self, request: zk.BackendRequest) -> AsyncIterator[str]:
            if "cancelled" in seen:
                yield "Next."
                return
            yield "Waiting"
            started.set()
            try:
                await asyncio.sleep(WAIT)
            except asyncio.CancelledError:
                seen["cancelled"] = True
                raise
            yield "never"

    async def main() -> None:
        with zk.Agent(backend=Slow()) as agent:
            chat = asyncio.ensure_future(agent.chat_async("Go"))
            await asyncio.to_thread(started.wait, WAIT)
            agent.stop()
            response = await asyncio.wait_for(chat, WAIT)
            assert response.stop_reason == "cancelled" and response.text == "Waiting"
            # The next reply waits for the cancelled one to finish.
            assert (await agent.chat_async("Next")).text == "Next."

    asyncio.run(main())
    assert seen == {"cancelled": True}


def test_a_backend_that_counts_tokens_is_asked() -> None:
    class Counting:
        def generate(self, request: zk.BackendRequest) -> Iterator[str]:
            yield "ok"

        def count_tokens(self, message: Dict[str, Any]) -> int:
            if message["content"] == "uncountable":
                raise LookupError("no tokenizer for that")
            return len(message["content"])

    with zk.Agent(backend=Counting(), context_size=64) as agent:
        assert agent.chat("short").text == "ok"
        with pytest.raises(zk.ContextOverflowError):
            agent.chat("x" * 100)
        with pytest.raises(zk.ProviderError) as raised:
            agent.chat("uncountable")
        assert str(raised.value) == "provider host failed: count_tokens failed: LookupError: no tokenizer for that"


def test_bad_backends_and_items_say_what_was_wrong() -> None:
    def yields_a_number(request: zk.BackendRequest) -> Iterator[Any]:
        yield 42

    def yields_a_bad_item(request: zk.BackendRequest) -> Iterator[Any]:
        yield {"type": "txt", "text": "x"}

    def returns_nothing(request: zk.BackendRequest) -> None:
        return None

    async def awaits_only(request: zk.BackendRequest) -> str:
        return "x"

    def calls_the_agent(request: zk.BackendRequest) -> Iterator[str]:
        holder["agent"].chat("recursion")
        yield "unreachable"

    holder: Dict[str, zk.Agent] = {}
    backend = Scripted(yields_a_number, yields_a_bad_item, returns_nothing, awaits_only, calls_the_agent)
    with zk.Agent(backend=backend) as agent:
        holder["agent"] = agent
        with pytest.raises(zk.ProviderError, match="^provider host failed: TypeError: a backend yields str or dict items, got int$"):
            agent.chat("1")
        with pytest.raises(zk.ProviderError, match="InvalidJsonError: invalid JSON: backend output: unknown variant `txt`"):
            agent.chat("2")
        with pytest.raises(zk.ProviderError, match="TypeError: generate must return an iterator of str and dict items"):
            agent.chat("3")
        with pytest.raises(zk.ProviderError, match="generate must yield its items"):
            agent.chat("4")
        with pytest.raises(zk.ProviderError, match="cannot be called from this agent's own callbacks"):
            agent.chat("5")
        assert agent.history == []
    with pytest.raises(zk.InvalidArgumentError, match="a backend needs a generate\\(request\\) method, and int has none"):
        zk.Agent(backend=42)  # type: ignore[arg-type]
    with pytest.raises(zk.InvalidConfigError, match="`host` needs the backend object itself"):
        zk.Agent(provider={"type": "host"})
    with pytest.raises(zk.InvalidConfigError, match="takes no other provider"):
        zk.Agent(backend=Scripted(), provider={"type": "mock"})
