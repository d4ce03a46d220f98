"""Python binding benchmarks (run by scripts/bench-python, not by pytest).

1. Per-token callback cost: a zero-delay mock streams N tokens; chats with a
   no-op `on_token` against chats without, interleaved; the difference per
   token is what a Python callback costs on the inference thread.
2. Generation throughput through Python against the Rust engine: the same
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

N_TOKENS = 20_000
ROUNDS = 7
THROUGHPUT_ROUNDS = 15
PROMPT = "Write a long story about a lighthouse keeper and the sea."
MAX_TOKENS = 128


def callback_cost() -> None:
    reply = " ".join(["tok"] * N_TOKENS)
    plain, streamed = [], []
    for _ in range(ROUNDS):
        for sink, out in ((None, plain), (lambda _t: None, streamed)):
            with zk.Agent(provider={"type": "mock", "replies": [reply]}) as agent:
                started = time.perf_counter()
                agent.chat("go", on_token=sink)
                out.append(time.perf_counter() - started)
    per_token_ns = (statistics.median(streamed) - statistics.median(plain)) / N_TOKENS * 1e9
    print(f"callback: {N_TOKENS} tokens, median {statistics.median(plain)*1e3:.1f} ms without on_token, "
          f"{statistics.median(streamed)*1e3:.1f} ms with a Python on_token: {per_token_ns:.0f} ns per token callback")


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
    callback_cost()
    throughput(sys.argv[1], sys.argv[2])
