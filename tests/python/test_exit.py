"""The interpreter exits promptly with code 0 whatever state agents are in."""

import os
import subprocess
import sys
import textwrap
import time

import pytest

from conftest import model_path

SCENARIOS = {
    "never_closed": """
        agent = zk.Agent(_mock_replies=["hi"])
        agent.chat("x")
    """,
    "deleted_at_exit": """
        agent = zk.Agent(_mock_replies=["hi"])
        agent.chat("x")
        import atexit
        atexit.register(lambda: globals().pop("agent"))
    """,
    "chat_running_at_exit": """
        agent = zk.Agent(_mock_replies=[" ".join(["w"] * 5000)], _mock_delay_ms=5)
        tokens = []
        agent._native.chat_start("x", tokens.append)
        time.sleep(0.2)
        assert tokens
    """,
    "tool_running_at_exit": """
        agent = zk.Agent(_mock_replies=['<tool_call>{"name": "slow", "arguments": {}}</tool_call>'])
        @agent.tool
        def slow() -> str:
            "Sleeps."
            time.sleep(30)
            return "late"
        agent._native.chat_start("x")
        time.sleep(0.3)
    """,
    "real_model_generating_at_exit": """
        agent = zk.Agent(model_path=MODEL, max_tokens=2000)
        tokens = []
        agent._native.chat_start("Write a long story.", tokens.append)
        while not tokens:
            time.sleep(0.01)
    """,
}


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_exit_is_prompt_and_clean(name):
    code = "import time, zoo_keeper as zk\nMODEL = %r\n" % model_path() + textwrap.dedent(SCENARIOS[name])
    started = time.monotonic()
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=os.environ.copy())
    elapsed = time.monotonic() - started
    assert proc.returncode == 0, proc.stderr
    assert elapsed < 15, f"{name} took {elapsed:.1f} s to exit"
