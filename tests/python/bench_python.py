"""Python binding benchmarks (run by scripts/bench-python, not by pytest).

1. Per-token callback cost: a zero-delay mock streams N tokens; chats with a
   no-op `on_token` against chats without, interleaved; the difference per
   token is what a Python callback costs on the inference thread.
2. Per-event cost: the same mock chat (one reply with EVENT_CALLS calls to
   tools that do not exist, each settled at once with three events, then a
   final reply: 3 * EVENT_CALLS + 6 events) with an `on_event` that
   receives every `Event` against none, interleaved; the difference per
   event, beside the token callback's cost of 1.
3. Generation throughput through Python against the Rust engine: the same
   greedy generation on the default model, in this process (streaming to a
   Python callback) and in a Rust process (examples/rust/generate.rs),
   interleaved (Python first in odd rounds, Rust first in even ones); the
   ratio of the medians and the median of the per-round ratios.
"""

import json
import statistics
import subprocess
import sys
import time

import zoo_keeper as zk

EVENT_CALLS = 100
EVENT_ROUNDS = 61

N_TOKENS = 20_000
ROUNDS = 7
THROUGHPUT_ROUNDS = 15
PROMPT = "Write a long story about a lighthouse keeper and the sea."
MAX_TOKENS = 128


def callback_cost() -> float:
    reply = " ".join(["tok"] * N_TOKENS)
    plain, streamed = [], []
    # One agent per side for all rounds, as an application keeps its agent:
    # the first callback of an inference thread sets up its Python thread
    # state once, which is not what a callback costs.
    provider = {"type": "mock", "replies": [reply] * ROUNDS}
    with zk.Agent(provider=provider) as quiet, zk.Agent(provider=provider) as loud:
        for _ in range(ROUNDS):
            for agent, sink, out in ((quiet, None, plain), (loud, lambda _t: None, streamed)):
                agent.clear_history()
                started = time.perf_counter()
                agent.chat("go", on_token=sink)
                out.append(time.perf_counter() - started)
    per_token_ns = (statistics.median(streamed) - statistics.median(plain)) / N_TOKENS * 1e9
    print(f"callback: {N_TOKENS} tokens, median {statistics.median(plain)*1e3:.1f} ms without on_token, "
          f"{statistics.median(streamed)*1e3:.1f} ms with a Python on_token: {per_token_ns:.0f} ns per token callback")
    return per_token_ns


def event_cost(per_token_ns: float) -> None:
    calls = "".join(
        "<tool_call>\n" + json.dumps({"name": f"missing_{i}", "arguments": {"n": i}}) + "\n</tool_call>"
        for i in range(EVENT_CALLS)
    )
    events = 3 * EVENT_CALLS + 6
    plain, observed = [], []
    # One agent per side for all rounds (see callback_cost), and the same
    # callback as the token benchmark's: what is compared is the event.
    provider = {"type": "mock", "replies": [calls, "done"] * (EVENT_ROUNDS + 1)}
    with zk.Agent(provider=provider) as quiet, zk.Agent(provider=provider) as loud:
        for agent in (quiet, loud):
            # With no tool at all the reply would be plain text.
            agent.register_tool("real", "A tool", {"type": "object"}, lambda: 1)
        # The events are all there (counted once, untimed).
        seen = []
        response = loud.chat("go", on_event=seen.append)
        assert response.text == "done" and len(response.tool_calls) == EVENT_CALLS
        assert len(seen) == events and seen[0].type == "chat_started", len(seen)
        quiet.chat("go")
        order = ((quiet, None, plain), (loud, lambda _e: None, observed))
        for round in range(EVENT_ROUNDS):
            for agent, sink, out in order if round % 2 == 0 else order[::-1]:
                agent.clear_history()
                started = time.perf_counter()
                response = agent.chat("go", on_event=sink)
                out.append(time.perf_counter() - started)
                assert response.text == "done" and len(response.tool_calls) == EVENT_CALLS
    paired = statistics.median((o - p) / events * 1e9 for o, p in zip(observed, plain))
    per_event_ns = (statistics.median(observed) - statistics.median(plain)) / events * 1e9
    print(f"events: {events} per chat, median {statistics.median(plain)*1e3:.2f} ms without on_event, "
          f"{statistics.median(observed)*1e3:.2f} ms with a Python on_event ({EVENT_ROUNDS} interleaved rounds): "
          f"{per_event_ns:.0f} ns per event (median of per-round differences {paired:.0f} ns), "
          f"{per_event_ns - per_token_ns:.0f} ns more than a token callback")


def throughput(model: str, rust_binary: str) -> None:
    python, rust = [], []

    def run_python() -> None:
        with zk.Agent(model_path=model, temperature=0, threads=2, max_tokens=MAX_TOKENS) as agent:
            r = agent.chat(PROMPT, on_token=lambda _t: None)
            python.append(r.metrics.tokens_per_second)

    def run_rust() -> None:
        out = subprocess.run([rust_binary, model, PROMPT, str(MAX_TOKENS)], capture_output=True, text=True, check=True)
        rust.append(json.loads(out.stdout.strip().splitlines()[-1])["generation_tps"])

    for i in range(THROUGHPUT_ROUNDS):
        # Alternate who goes first so that a slow spell of the machine does
        # not always land on the same side.
        for run in (run_python, run_rust) if i % 2 == 0 else (run_rust, run_python):
            run()
    py_median, rust_median = statistics.median(python), statistics.median(rust)
    paired = statistics.median(p / r for p, r in zip(python, rust))
    print(f"generation: Python {py_median:.1f} tokens/s, Rust {rust_median:.1f} tokens/s "
          f"(medians of {THROUGHPUT_ROUNDS} interleaved runs): ratio {py_median / rust_median:.3f}, "
          f"median of per-round ratios {paired:.3f}")


if __name__ == "__main__":
    # `--events`: the callback and event costs only (no model needed).
    token_ns = callback_cost()
    event_cost(token_ns)
    if sys.argv[1:2] != ["--events"]:
        throughput(sys.argv[1], sys.argv[2])
