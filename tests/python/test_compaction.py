"""The compaction cascade and tool-result hygiene through Python: the config
keys, and history_compacted events with their level."""

import json

from zoo_keeper import Agent, Event


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
