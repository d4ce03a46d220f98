"""A coding agent in a few lines: the built-in tools on a workspace, every
change confirmed on the terminal. It is given a tiny project whose test
fails and asked to fix it.

    python examples/python/coding_agent.py                      # SmolLM2 from models/
    ZOO_MODEL=path/to/bigger.gguf python examples/python/coding_agent.py
    OPENAI_BASE_URL=http://127.0.0.1:8080/v1 python examples/python/coding_agent.py

A 135M model will rarely manage the fix; a 7B local model or a remote one
does. What it shows is the shape: tools confined to the workspace, and the
host deciding each write and each command.
"""

import os
import pathlib
import sys
import tempfile

from zoo_keeper import Agent, Deny, ToolCall

CHANGES = {"write_file", "edit_file", "bash"}


def make_project(root: pathlib.Path) -> None:
    (root / "calc.py").write_text("def add(a, b):\n    return a - b\n")
    (root / "test_calc.py").write_text(
        "from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n"
    )


def backend() -> dict:
    base_url = os.environ.get("OPENAI_BASE_URL")
    if base_url:
        return {"provider": {"type": "openai", "base_url": base_url, "api_key_env": "OPENAI_API_KEY"}}
    default = pathlib.Path(__file__).resolve().parents[2] / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return {"model_path": os.environ.get("ZOO_MODEL", str(default))}


def main() -> int:
    with tempfile.TemporaryDirectory() as workspace:
        make_project(pathlib.Path(workspace))
        tools = ["list_files", "read_file", "search", "edit_file", "write_file", "bash"]
        agent = Agent(
            **backend(),
            temperature=0,
            max_turns=12,
            system_prompt="You fix code. Read the files, run the tests with bash, edit, and run them again.",
            builtin_tools={"tools": tools, "workspace": workspace, "bash_deny": ["sudo", "rm -rf /"]},
        )

        @agent.before_tool_call
        def confirm(call: ToolCall) -> object:
            print(f"\n[tool] {call.name} {call.arguments}")
            if call.name not in CHANGES:
                return None
            if not sys.stdin.isatty():
                return Deny("the user is not at a terminal to confirm it")
            answer = input("allow? [y/N] ").strip().lower()
            return None if answer == "y" else Deny("the user said no")

        with agent:
            response = agent.chat(
                "The test in test_calc.py fails. Find out why with `python -m pytest -q` and fix calc.py.",
                on_token=lambda token: print(token, end="", flush=True),
            )
            print(f"\n\n[{response.stop_reason}] {len(response.tool_calls)} tool calls")
            print((pathlib.Path(workspace) / "calc.py").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
