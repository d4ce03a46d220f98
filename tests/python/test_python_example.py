"""The Python example (examples/python/agent.py) run as a user runs it: on
the mock provider (a scripted model that calls the calculator, then
answers), where its tool error path shows too, and on SmolLM2."""

import json
import os
import subprocess
import sys
from typing import Dict, List, Optional

import pytest

from conftest import ROOT, model_path, tool_call

EXAMPLE = ROOT / "examples" / "python" / "agent.py"


def run_example(env: Dict[str, str], question: Optional[str] = None) -> "subprocess.CompletedProcess[str]":
    args: List[str] = [sys.executable, str(EXAMPLE)] + ([question] if question else [])
    env = {k: v for k, v in os.environ.items() if k not in ("ZOO_PROVIDER", "ZOO_MODEL")} | env
    return subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)


def mock(*replies: str) -> Dict[str, str]:
    return {"ZOO_PROVIDER": json.dumps({"type": "mock", "replies": list(replies)})}


def test_the_example_calls_the_calculator_and_streams_the_answer_on_the_mock() -> None:
    run = run_example(mock(tool_call("calculator", {"a": 17, "b": 23, "op": "multiply"}), "17 times 23 is 391."))
    assert run.returncode == 0, run.stderr
    # The reply streamed to stdout, the tool call, its result and the
    # summary to stderr.
    assert run.stdout == "17 times 23 is 391.\n"
    assert "you: Multiply 17 by 23.\n" in run.stderr
    assert '[tool] calculator({"a": 17, "b": 23, "op": "multiply"})\n  [tool] -> "17 * 23 = 391"\n' in run.stderr
    assert "[stop] 1 tool call(s), " in run.stderr


def test_the_example_shows_a_tool_error_the_model_read_on_the_mock() -> None:
    run = run_example(
        mock(tool_call("calculator", {"a": 1, "b": 0, "op": "divide"}), "I cannot divide by zero."),
        "Divide 1 by 0.",
    )
    assert run.returncode == 0, run.stderr
    assert run.stdout == "I cannot divide by zero.\n"
    assert "you: Divide 1 by 0.\n" in run.stderr
    assert "[tool] -> failed: tool `calculator` failed: ValueError: division by zero\n" in run.stderr


@pytest.mark.model
def test_the_example_calls_the_calculator_on_smollm2() -> None:
    run = run_example({"ZOO_MODEL": model_path()})
    assert run.returncode == 0, run.stderr
    # Greedy decoding: SmolLM2 calls the calculator with the question's
    # numbers (as scripts/demo's Rust agent does), and its reply follows.
    assert '[tool] calculator({"a": 17, "b": 23, "op": "multiply"})\n  [tool] -> "17 * 23 = 391"\n' in run.stderr
    assert "[stop] 1 tool call(s), " in run.stderr
    assert run.stdout.strip(), "no reply on stdout"
