"""A user program that must type-check under mypy --strict (see test_stubs.py)."""

from typing import List, Optional

import zoo_keeper as zk


def run(path: str) -> Optional[str]:
    with zk.Agent(model_path=path, temperature=0.0) as agent:

        @agent.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

        @agent.tool(exclusive=True, timeout_ms=500)
        def save(text: str) -> str:
            """Save the text."""
            return text

        agent.register_tool("echo", "Echo", {"type": "object"}, lambda **kw: kw, exclusive=False, timeout_ms=None)

        tokens: List[str] = []
        response: zk.Response = agent.chat("2 + 3?", on_token=tokens.append)
        for item in agent.stream("again"):
            if isinstance(item, zk.Token):
                tokens.append(item.text)
        return response.text if response.stop_reason == "stop" else None
