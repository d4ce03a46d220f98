"""The coding-agent example (examples/coding-agent/coding_agent.py) run as
a user runs it, on the mock: a scripted model runs the failing test, reads
the code, fixes it and runs the test again, each write and command
confirmed on the example's standard input; the example then runs the test
itself and reports that it passes. Without answers, nothing changes."""

import json
import os
import subprocess
import sys

import pytest

from conftest import ROOT, model_path, tool_call

EXAMPLE = ROOT / "examples" / "coding-agent" / "coding_agent.py"


def script() -> str:
    test = {"command": "python3 test_calc.py"}
    replies = [
        tool_call("bash", test),
        tool_call("read_file", {"path": "calc.py"}),
        tool_call("edit_file", {"path": "calc.py", "old_text": "return a - b", "new_text": "return a + b"}),
        tool_call("bash", test),
        "Fixed: add subtracted instead of adding.",
    ]
    return json.dumps({"type": "mock", "replies": replies})


def run_example(answers: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "ZOO_PROVIDER": script()}
    return subprocess.run(
        [sys.executable, str(EXAMPLE)], input=answers, env=env, capture_output=True, text=True, timeout=120
    )


def test_the_example_fixes_the_project_on_the_mock() -> None:
    run = run_example("y\ny\ny\n")
    assert run.returncode == 0, run.stderr
    out = run.stdout
    for part in [
        '> bash {"command": "python3 test_calc.py"}\n  allow bash {"command": "python3 test_calc.py"}? [y/N] y\n',
        "< exit code: 1\n  stderr:\n",
        "AssertionError: add(2, 3) returned -1, expected 5",
        "<      1\tdef add(a, b):\n       2\t    return a - b\n",
        "< edited calc.py at line 2\n",
        "< exit code: 0\n  stdout:\n  all tests passed\n",
        "The model said: Fixed: add subtracted instead of adding.\n[stop] 4 tool calls",
        "calc.py is now:\ndef add(a, b):\n    return a + b\n",
        "python3 test_calc.py after the agent's work: passes\nall tests passed\n",
    ]:
        assert part in out, f"missing {part!r} in:\n{out}"


def test_without_answers_nothing_changes() -> None:
    run = run_example("")
    assert run.returncode == 0, run.stderr
    assert "(no answer: refused)\n< error: tool `bash` failed: the user refused this bash call" in run.stdout
    assert "after the agent's work: still fails" in run.stdout


@pytest.mark.model
def test_the_example_runs_end_to_end_on_smollm2() -> None:
    """On the real default model the fix may not succeed (135M parameters),
    but the example runs through: the model calls tools (the first reply
    must), each change is asked on the terminal, and the report says
    whether the test passes.

    Greedy decoding is reproducible only on the same kernels, and llama.cpp's
    CPU variants round differently (zen4's AVX-512 sums are not haswell's):
    over 30 turns of a 135M model that is another path. CI machines differ
    (AVX2 only, AVX-512, AMX), so the run is pinned to the haswell variant,
    which every one of them runs, to take the same path everywhere."""
    env = {**os.environ, "ZOO_MODEL": model_path(), "ZOO_CPU_VARIANT": "haswell"}
    env.pop("ZOO_PROVIDER", None)
    run = subprocess.run(
        [sys.executable, str(EXAMPLE)], input="y\n" * 20, env=env, capture_output=True, text=True, timeout=900
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert out.startswith("Task: The test in test_calc.py fails.")
    assert "\n> " in out, out
    assert "? [y/N] y\n" in out, out
    assert "python3 test_calc.py after the agent's work: " in out, out
