"""Benchmark: our agent against the official `openai` Python client, each
streaming the same reply from the same llama-cpp-python server (SmolLM2,
greedy, the same request: one user message, temperature 0, seed 7,
max_tokens), in interleaved rounds (the order flips each round, so neither
always follows the other). Prints the median time to first token and total
time of each and our ratio to `openai` (below 1: we are faster).

Not run by CI. Needs zoo_keeper and openai in the running python, and the
server from scripts/fetch-llama-server:

    pip install ./python openai     # into a venv of your own; openai is not a dependency
    python tests/python/bench_llama_server.py [--rounds 15] [--max-tokens 128]
"""

import argparse
import os
import pathlib
import statistics
import sys
import time

import zoo_keeper as zk
from llama_server import MODEL, ROOT, LlamaServer

try:
    import openai
except ImportError:
    sys.exit("this benchmark needs the openai package: pip install openai")

PROMPT = "Write a short story about a lighthouse keeper who finds a message in a bottle."


def ours(base_url: str, max_tokens: int) -> tuple[float, float, str]:
    """Time to first token and total time (s) of a fresh agent's chat, and its text."""
    provider = {"type": "openai", "base_url": base_url, "model": MODEL}
    with zk.Agent(provider=provider, temperature=0, seed=7, max_tokens=max_tokens) as agent:
        first: list[float] = []
        start = time.perf_counter()
        response = agent.chat(PROMPT, on_token=lambda _: first or first.append(time.perf_counter()))
        end = time.perf_counter()
    return first[0] - start, end - start, response.text


def official(client: "openai.OpenAI", max_tokens: int) -> tuple[float, float, str]:
    """The same, streamed by the official client."""
    first: list[float] = []
    text: list[str] = []
    start = time.perf_counter()
    stream = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": PROMPT}], stream=True,
        stream_options={"include_usage": True}, temperature=0, seed=7, max_tokens=max_tokens,
    )
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            if not first:
                first.append(time.perf_counter())
            text.append(chunk.choices[0].delta.content)
    end = time.perf_counter()
    return first[0] - start, end - start, "".join(text)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--max-tokens", type=int, default=128)
    args = parser.parse_args()
    python = pathlib.Path(os.environ.get("ZOO_LLAMA_SERVER_PYTHON", ROOT / "target/llama-server/bin/python"))
    model = pathlib.Path(os.environ.get("ZOO_MODELS_DIR", ROOT / "models")) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    server = LlamaServer(python, str(model))
    try:
        client = openai.OpenAI(base_url=server.base_url, api_key="unused")
        runs = {"zoo-keeper": lambda: ours(server.base_url, args.max_tokens),
                "openai": lambda: official(client, args.max_tokens)}
        # Warm-up: python's first imports, the server's first decode.
        texts = {name: run()[2] for name, run in runs.items()}
        if texts["zoo-keeper"] != texts["openai"]:
            sys.exit(f"the two replies differ, the comparison would not be fair:\n{texts}")
        times: dict[str, list[tuple[float, float]]] = {name: [] for name in runs}
        for round_ in range(args.rounds):
            order = list(runs) if round_ % 2 == 0 else list(reversed(runs))
            for name in order:
                ttft, total, _ = runs[name]()
                times[name].append((ttft, total))
    finally:
        server.close()

    medians = {name: (statistics.median(t for t, _ in ts), statistics.median(t for _, t in ts))
               for name, ts in times.items()}
    print(f"llama-cpp-python server, SmolLM2-135M Q4_1, {args.max_tokens} tokens max, "
          f"{args.rounds} interleaved rounds, medians (reply: {len(texts['openai'])} characters)")
    print(f"{'client':<12} {'first token':>12} {'total':>10}")
    for name, (ttft, total) in medians.items():
        print(f"{name:<12} {ttft * 1000:>9.1f} ms {total * 1000:>7.1f} ms")
    (our_ttft, our_total), (their_ttft, their_total) = medians["zoo-keeper"], medians["openai"]
    print(f"ratio zoo-keeper/openai: first token {our_ttft / their_ttft:.3f}, total {our_total / their_total:.3f}")


if __name__ == "__main__":
    main()
