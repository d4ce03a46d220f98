"""The compaction cascade and tool-result hygiene through Python: the config
keys, and history_compacted events with their level."""

import json
from typing import Any, Callable, Dict, List

import pytest

from zoo_keeper import Agent, ContextRequest, Event, InvalidConfigError


def tool_call(name: str) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": {}}) + "</tool_call>"


def test_a_long_tool_result_is_cut_before_it_enters_the_history() -> None:
    with Agent(provider={"type": "mock", "replies": [tool_call("weather"), "Done."]}, max_tool_result_tokens=40) as agent:
        agent.register_tool("weather", "Weather report", {"type": "object", "properties": {}}, lambda: " ".join(["sunny"] * 3000))
        agent.chat("weather?")
        stored = agent.history[2]
        assert stored["role"] == "tool"
        assert "tokens cut" in stored["content"]
        assert len(stored["content"]) < 1000


def test_a_summarizer_summarizes_a_long_tool_result() -> None:
    summarizer = {"provider": {"type": "mock", "replies": ["Sunny all week."]}, "max_tokens": 32}
    with Agent(provider={"type": "mock", "replies": [tool_call("weather"), "Done."]}, max_tool_result_tokens=40, summarizer=summarizer) as agent:
        agent.register_tool("weather", "Weather report", {"type": "object", "properties": {}}, lambda: " ".join(["sunny"] * 3000))
        agent.chat("weather?")
        assert agent.history[2]["content"] == "[summary of a 3004-token result] Sunny all week."
    # Without a provider the summarizer is the agent's own (the mock, which
    # echoes what it is asked).
    with Agent(provider={"type": "mock", "replies": [tool_call("weather"), "Done."]}, max_tool_result_tokens=40, summarizer={"max_tokens": 16}) as agent:
        agent.register_tool("weather", "Weather report", {"type": "object", "properties": {}}, lambda: " ".join(["sunny"] * 3000))
        agent.chat("weather?")
        assert agent.history[2]["content"].startswith("[summary of a 3004-token result] ")


def test_a_bad_summarizer_is_refused() -> None:
    with pytest.raises(InvalidConfigError, match=r"^invalid config `summarizer.max_tokens`: expected a whole number from 16 to 4096, got 8$"):
        Agent(provider={"type": "mock"}, summarizer={"max_tokens": 8})


def test_compaction_reports_its_levels() -> None:
    replies = [tool_call("weather"), "It is sunny."] * 40
    strategy = {"compact": {"keep_recent": 2, "tool_result_tokens": 50}}
    with Agent(provider={"type": "mock", "replies": replies}, context_strategy=strategy) as agent:
        agent.register_tool("weather", "Weather report", {"type": "object", "properties": {}}, lambda: " ".join(["sunny"] * 400))
        levels = set()

        def on_event(event: Event) -> None:
            if event.type == "history_compacted":
                assert event.data["tokens_after"] < event.data["tokens_before"]
                levels.add(event.data["level"])

        for turn in range(40):
            assert agent.chat(f"day {turn}?", on_event=on_event).text == "It is sunny."
        assert "truncate_tool_results" in levels, levels


def question(n: int) -> str:
    return f"message number {n} with a few words"


def test_a_function_as_context_strategy_is_your_own_strategy() -> None:
    # A window of 120 tokens: a budget of 90; each question is 11 tokens and each echo 12.
    requests: List[ContextRequest] = []

    def keep(request: ContextRequest) -> List[Dict[str, Any]]:
        requests.append(request)
        summary = {"role": "assistant", "content": f"(summary of {request.current_turn} messages)"}
        return [summary] + request.messages[request.current_turn :]

    compacted: List[Event] = []
    with Agent(provider={"type": "mock"}, context_size=120, context_strategy=keep) as agent:
        for n in range(5):
            agent.chat(question(n), on_event=lambda e: compacted.append(e) if e.type == "history_compacted" else None)
        [request] = requests
        assert len(request.messages) == 9 and request.current_turn == 8
        assert request.budget == 90 and request.system_tokens == 0
        assert request.tokens == [11, 12, 11, 12, 11, 12, 11, 12, 11]
        [event] = compacted
        assert event.data["level"] == "custom"
        # "(summary of 8 messages)" is 4 words and the markup's 4.
        assert (event.data["tokens_before"], event.data["tokens_after"]) == (103, 8 + 11)
        assert len(event.data["removed"]) == 8
        assert [m["content"] for m in agent.history] == ["(summary of 8 messages)", question(4), "echo: " + question(4)]


def test_a_context_strategy_that_breaks_a_rule_or_raises_fails_safe() -> None:
    errors: List[str] = []
    answer: Callable[[ContextRequest], Any] = lambda request: request.messages  # everything: over the budget
    levels: List[str] = []
    with Agent(provider={"type": "mock"}, context_size=120) as agent:
        agent.context_strategy(lambda request: answer(request))
        agent.on_error(lambda error: errors.append(str(error)))

        def chat(n: int) -> None:
            agent.chat(question(n), on_event=lambda e: levels.append(e.data["level"]) if e.type == "history_compacted" else None)

        for n in range(5):
            chat(n)
        assert levels == ["fifo"]
        assert errors == [
            "internal error: the context_strategy hook failed: the messages it returned take 103 tokens "
            "with the system prompt, over the budget of 90"
        ]

        def refuse(request: ContextRequest) -> Any:
            raise RuntimeError("no strategy today")

        answer = refuse
        chat(5)
        assert levels == ["fifo", "fifo"]
        assert "the context_strategy hook failed: RuntimeError: no strategy today" in errors[1], errors
