"""A coding agent in a few lines: the built-in tools on a temporary
workspace holding a tiny project whose test fails, and every write, edit
and command confirmed on the terminal. It shows what the model did (each
call and what came back), then runs the test itself to say honestly whether
the fix worked.

    python examples/coding-agent/coding_agent.py                    # SmolLM2 from models/
    ZOO_MODEL=path/to/bigger.gguf python examples/coding-agent/coding_agent.py
    ZOO_PROVIDER='{"type": "openai", "base_url": "http://127.0.0.1:8080/v1"}' \\
        python examples/coding-agent/coding_agent.py
    yes y | python examples/coding-agent/coding_agent.py           # allow everything

A 135M model rarely manages the fix (it may call the wrong tools); a 7B
model or a remote one does. tests/python/test_coding_agent_example.py runs
this script on the mock with a scripted fix that succeeds.
"""

import json
import os
import pathlib
import subprocess
import sys
import tempfile
from typing import Any, Dict, TextIO

from zoo_keeper import Agent, Event

CALC = "def add(a, b):\n    return a - b\n"
TEST = 'from calc import add\n\nassert add(2, 3) == 5, f"add(2, 3) returned {add(2, 3)}, expected 5"\nprint("all tests passed")\n'
TASK = (
    "The test in test_calc.py fails. Run it with `python3 test_calc.py`, "
    "read calc.py, fix it with edit_file, and run the test again."
)


def config_from_env() -> Dict[str, Any]:
    """`ZOO_PROVIDER` (a provider object as JSON), else `ZOO_MODEL`, else
    SmolLM2 from the repository's `models/`."""
    provider = os.environ.get("ZOO_PROVIDER")
    if provider:
        backend: Dict[str, Any] = {"provider": json.loads(provider)}
    else:
        default = pathlib.Path(__file__).resolve().parents[2] / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
        backend = {"model_path": os.environ.get("ZOO_MODEL", str(default))}
    return {
        **backend,
        "temperature": 0,
        "max_turns": 12,
        "max_tokens": 256,
        "max_tool_result_tokens": 400,
        "system_prompt": (
            "You fix code. Run the tests with bash, read the files, fix them with edit_file, "
            "and run the tests again. Call one tool at a time."
        ),
    }


def run(config: Dict[str, Any], answers: TextIO, out: TextIO) -> bool:
    """Makes the project in a temporary workspace, lets the agent work on it
    (each write, edit and command asked on `answers`: `y` allows, anything
    else or the end of the input refuses), reports on `out`, and returns
    whether the test passes afterwards."""
    with tempfile.TemporaryDirectory() as folder:
        workspace = pathlib.Path(folder)
        (workspace / "calc.py").write_text(CALC)
        (workspace / "test_calc.py").write_text(TEST)

        def confirm(tool: str, arguments: Dict[str, Any]) -> bool:
            print(f"  allow {tool} {json.dumps(arguments)}? [y/N] ", end="", file=out, flush=True)
            line = answers.readline()
            if not line:
                print("(no answer: refused)", file=out, flush=True)
                return False
            print(line.strip(), file=out, flush=True)
            return line.strip().lower() == "y"

        def show(event: Event) -> None:
            if event.type == "tool_call_started":
                print(f"> {event.data['name']} {json.dumps(event.data['arguments'])}", file=out, flush=True)
            elif event.type == "tool_call_finished":
                if "error" in event.data:
                    print(f"< error: {event.data['error']}", file=out, flush=True)
                else:
                    result = event.data["result"]
                    text = result["text"] if isinstance(result, dict) and "text" in result else json.dumps(result)
                    print("< " + text.rstrip().replace("\n", "\n  "), file=out, flush=True)

        with Agent(**config) as agent:
            agent.add_builtin_tools(
                ["list_files", "read_file", "edit_file", "write_file", "bash"],
                workspace=workspace,
                confirm=confirm,
                bash_deny=["sudo", "rm -rf"],
            )
            print(f"Task: {TASK}", file=out, flush=True)
            # The first reply must call a tool (a small model would otherwise
            # only talk about the task); after a call succeeds it is free again.
            response = agent.chat(TASK, tool_choice="required", on_event=show)
        test = subprocess.run([sys.executable, "test_calc.py"], cwd=workspace, capture_output=True, text=True)
        passed = test.returncode == 0
        print(f"\nThe model said: {response.text.strip()}", file=out)
        print(f"[{response.stop_reason}] {len(response.tool_calls)} tool calls, {response.usage.total_tokens} tokens", file=out)
        print("calc.py is now:\n" + (workspace / "calc.py").read_text(), end="", file=out)
        print(f"python3 test_calc.py after the agent's work: {'passes' if passed else 'still fails'}", file=out)
        print(test.stdout + test.stderr, end="", file=out, flush=True)
        return passed


def main() -> int:
    # Whether the fix worked is in the report: a model that could not fix
    # the project is an outcome, not an error.
    run(config_from_env(), sys.stdin, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
