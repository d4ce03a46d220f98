"""Tool execution strategies through Python, against the clock (not run by
pytest): one mock reply with four tool calls, each sleeping 200 ms, with
tool_execution "sequential" and "parallel", against the same chat with one
call. Three kinds of tool: a sync `def` that calls `time.sleep` (which
releases the GIL, so parallel calls overlap on the agent's tool threads),
an `async def` that awaits `asyncio.sleep` in a sync `chat` (each tool
thread runs the coroutine on its own event loop), and the same `async def`
in `chat_async` (the coroutines run together on the caller's loop). A
fourth, a sync `def` that computes for about 200 ms (a loop calibrated
at start, holding the GIL), shows the limit: such calls take turns on the
GIL whatever the strategy.

Each round runs every case once, in a rotating order; a fresh agent per
chat, created outside the timed part. Medians and ratios are printed. The
issue's goal: parallel within 1.25x one call, sequential about 4x.

    python tests/python/bench_parallel_tools.py [ROUNDS]
"""

import asyncio
import json
import statistics
import sys
import time
from typing import Any, Callable, Dict, List, Tuple

import zoo_keeper as zk

SLEEP_S = 0.2
CALLS = 4


def reply(calls: int) -> str:
    return "".join("<tool_call>\n" + json.dumps({"name": "nap", "arguments": {"n": n}}) + "\n</tool_call>" for n in range(calls))


def agent(execution: str, calls: int, tool: Callable[..., Any]) -> zk.Agent:
    created = zk.Agent(provider={"type": "mock", "replies": [reply(calls), "Done."]}, tool_execution=execution)
    created.register_tool("nap", "Sleeps 200 ms", {"type": "object", "properties": {"n": {"type": "integer"}}}, tool)
    return created


def sync_nap(n: int) -> int:
    time.sleep(SLEEP_S)
    return n


def spin(iterations: int) -> None:
    for _ in range(iterations):
        pass


def calibrate() -> int:
    """Iterations of `spin` that take about SLEEP_S alone: fixed work, so
    that calls sharing the GIL take longer (a deadline would not)."""
    iterations = 100_000
    while True:
        started = time.perf_counter()
        spin(iterations)
        took = time.perf_counter() - started
        if took > 0.05:
            return int(iterations * SLEEP_S / took)
        iterations *= 2


SPIN = calibrate()


def busy_nap(n: int) -> int:
    spin(SPIN)
    return n


async def async_nap(n: int) -> int:
    await asyncio.sleep(SLEEP_S)
    return n


def check(response: zk.Response, calls: int) -> None:
    assert response.text == "Done.", response
    assert len(response.tool_calls) == calls and response.tool_errors == [], response


def timed_sync(execution: str, calls: int, tool: Callable[..., Any]) -> float:
    with agent(execution, calls, tool) as a:
        started = time.perf_counter()
        response = a.chat("Nap.")
        took = time.perf_counter() - started
    check(response, calls)
    return took


def timed_async(execution: str, calls: int) -> float:
    async def main() -> float:
        with agent(execution, calls, async_nap) as a:
            started = time.perf_counter()
            response = await a.chat_async("Nap.")
            took = time.perf_counter() - started
        check(response, calls)
        return took

    return asyncio.run(main())


KINDS: Dict[str, Callable[[str, int], float]] = {
    "sync def, time.sleep, chat": lambda e, c: timed_sync(e, c, sync_nap),
    "async def, asyncio.sleep, chat": lambda e, c: timed_sync(e, c, async_nap),
    "async def, asyncio.sleep, chat_async": timed_async,
    "sync def, 200 ms of pure-Python work, chat": lambda e, c: timed_sync(e, c, busy_nap),
}
CASES: List[Tuple[str, str, int]] = [
    ("one call", "sequential", 1),
    ("4 calls, sequential", "sequential", CALLS),
    ("4 calls, parallel", "parallel", CALLS),
]


def main() -> None:
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 7
    print(f"Python {sys.version.split()[0]}, {CALLS} calls of a tool sleeping {SLEEP_S * 1e3:.0f} ms, {rounds} rounds, medians:")
    for kind, run in KINDS.items():
        samples: List[List[float]] = [[] for _ in CASES]
        for r in range(rounds):
            for k in range(len(CASES)):
                i = (r + k) % len(CASES)
                _, execution, calls = CASES[i]
                samples[i].append(run(execution, calls))
        medians = [statistics.median(s) for s in samples]
        print(f"  {kind}:")
        for (name, _, _), m in zip(CASES, medians):
            print(f"    {name:<22} {m * 1e3:7.1f} ms  {m / medians[0]:.2f}x one call")
        print(f"    sequential / parallel: {medians[1] / medians[2]:.2f}x")


if __name__ == "__main__":
    main()
