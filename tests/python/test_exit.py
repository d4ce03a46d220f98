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
        agent = zk.Agent(provider={"type": "mock", "replies": ["hi"]})
        agent.chat("x")
    """,
    "deleted_at_exit": """
        agent = zk.Agent(provider={"type": "mock", "replies": ["hi"]})
        agent.chat("x")
        import atexit
        atexit.register(lambda: globals().pop("agent"))
    """,
    "chat_running_at_exit": """
        agent = zk.Agent(provider={"type": "mock", "replies": [" ".join(["w"] * 5000)], "piece_delay_ms": 5})
        tokens = []
        agent._native.chat_start("x", tokens.append)
        while not tokens:
            time.sleep(0.01)
    """,
    "tool_running_at_exit": """
        import threading
        agent = zk.Agent(provider={"type": "mock", "replies": ['<tool_call>{"name": "slow", "arguments": {}}</tool_call>']})
        running = threading.Event()
        @agent.tool
        def slow() -> str:
            "Sleeps."
            running.set()
            time.sleep(30)
            return "late"
        agent._native.chat_start("x")
        assert running.wait(timeout=30)
    """,
    "real_model_generating_at_exit": """
        agent = zk.Agent(model_path=MODEL, max_tokens=2000)
        tokens = []
        agent._native.chat_start("Write a long story.", tokens.append)
        while not tokens:
            time.sleep(0.01)
    """,
}


@pytest.mark.parametrize(
    "name", [pytest.param(name, marks=pytest.mark.model) if name.startswith("real_") else name for name in sorted(SCENARIOS)]
)
def test_exit_is_prompt_and_clean(name):
    # The scenario's last line prints the (system-wide) monotonic clock: what
    # is timed is the exit from there, not the setup before it (loading a
    # model and waiting for a first token can take seconds on a busy
    # machine). The 120 s limit only catches a hang.
    code = (
        "import time, zoo_keeper as zk\nMODEL = %r\n" % (model_path() if name.startswith("real_") else None)
        + textwrap.dedent(SCENARIOS[name])
        + "print('exiting at', time.monotonic(), flush=True)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, env=os.environ.copy())
    ended = time.monotonic()
    assert proc.returncode == 0, proc.stderr
    marker = proc.stdout.split()
    assert marker[:2] == ["exiting", "at"], proc.stdout
    exit_took = ended - float(marker[2])
    # Well under a second when idle; an exit that waited for the running
    # chat or tool (25 s or more where one runs) would take far longer.
    assert exit_took < 10, f"{name} took {exit_took:.1f} s to exit"
