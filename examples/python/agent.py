"""An agent with a calculator answers a question that needs it, streaming
the reply: a tool and a chat, the smallest whole use of zoo_keeper.

    python examples/python/agent.py                       # SmolLM2 from models/
    python examples/python/agent.py "Add 2.5 and 4."
    ZOO_MODEL=path/to/model.gguf python examples/python/agent.py
    ZOO_PROVIDER='{"type": "openai", "base_url": "http://127.0.0.1:8080/v1"}' \\
        python examples/python/agent.py

The reply goes to stdout; the tool calls and the summary to stderr.
tests/python/test_python_example.py runs it on the mock provider (a
`ZOO_PROVIDER` with scripted replies), and on SmolLM2.
"""

import json
import os
import pathlib
import sys
from typing import Any, Dict, Literal

from zoo_keeper import Agent, Event


def config_from_env() -> Dict[str, Any]:
    """`ZOO_PROVIDER` (a provider object as JSON), else `ZOO_MODEL`, else
    SmolLM2 from the repository's `models/`."""
    provider = os.environ.get("ZOO_PROVIDER")
    if provider:
        return {"provider": json.loads(provider)}
    default = pathlib.Path(__file__).resolve().parents[2] / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return {"model_path": os.environ.get("ZOO_MODEL", str(default))}


def main(question: str) -> int:
    with Agent(**config_from_env(), temperature=0, max_tokens=256, system_prompt="You are a helpful assistant.") as agent:

        @agent.tool
        def calculator(a: float, b: float, op: Literal["add", "subtract", "multiply", "divide"]) -> str:
            """Apply an arithmetic operation to two numbers."""
            if op == "divide" and b == 0:
                # An exception is a tool error: the model reads it and may try again.
                raise ValueError("division by zero")
            value = {"add": a + b, "subtract": a - b, "multiply": a * b, "divide": a / b if b else 0.0}[op]
            sign = {"add": "+", "subtract": "-", "multiply": "*", "divide": "/"}[op]
            # A sentence, not a bare number: small models answer better when
            # the result reads like the answer.
            return f"{a:g} {sign} {b:g} = {value:g}"

        def show(event: Event) -> None:
            if event.type == "tool_call_started":
                print(f"\n  [tool] {event.data['name']}({json.dumps(event.data['arguments'])})", file=sys.stderr)
            elif event.type == "tool_call_finished":
                outcome = json.dumps(event.data["result"]) if "result" in event.data else f"failed: {event.data['error']}"
                print(f"  [tool] -> {outcome}", file=sys.stderr)

        print(f"you: {question}", file=sys.stderr)
        response = agent.chat(question, on_token=lambda text: print(text, end="", flush=True), on_event=show)
        print()
        print(
            f"[{response.stop_reason}] {len(response.tool_calls)} tool call(s), "
            f"{response.usage.total_tokens} tokens, {response.metrics.total_ms:.0f} ms",
            file=sys.stderr,
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "Multiply 17 by 23."))
