"""One bench-peers run of Zoo-Keeper's Python package (the wheel in a venv).

    python zoo_python.py MODEL PROMPT_FILE THREADS CTX N_GEN

Loads the model, sends the prompt file as one user message on a fresh
agent (the engine applies the model's chat template), generates greedily
up to N_GEN tokens and prints one JSON line. Times are taken here, around
the call and in `on_token`, the same way as in the three other sides, so
that every side is measured by the same clock at the same points:
prompt tokens/s = prompt tokens / (call to first token), generation
tokens/s = (tokens - 1) / (first token to last token). The engine's own
`metrics` go along for a cross-check.
"""

import json
import os
import sys
import time

import zoo_keeper as zk


def main() -> None:
    model_path, prompt_file, threads, ctx, n_gen = sys.argv[1:6]
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read()
    # Zoo-Keeper has no ignore-EOS setting: max_tokens bounds the reply and
    # the model may end it earlier (the token counts are printed).
    agent = zk.Agent(
        model_path=model_path,
        temperature=0,
        threads=int(threads),
        context_size=int(ctx),
        max_tokens=int(n_gen),
    )
    stamps = []
    with agent:
        started = time.perf_counter()
        response = agent.chat(prompt, on_token=lambda _t: stamps.append(time.perf_counter()))
    usage, metrics = response.usage, response.metrics
    tokens = usage.completion_tokens
    info = zk.backend_info()
    print(json.dumps({
        "side": "zoo-python",
        "prompt_tokens": usage.prompt_tokens,
        "cached_tokens": usage.cached_tokens,
        "gen_tokens": tokens,
        "token_callbacks": len(stamps),
        "ttft_ms": (stamps[0] - started) * 1e3,
        "cold_ms": (time.time_ns() - (time.perf_counter() - stamps[0]) * 1e9
                    - int(os.environ["BENCH_SPAWNED_NS"])) / 1e6,
        "prompt_tps": usage.prompt_tokens / (stamps[0] - started),
        "gen_tps": (tokens - 1) / (stamps[-1] - stamps[0]),
        "engine_prompt_ms": metrics.prompt_ms,
        "engine_tokens_per_second": metrics.tokens_per_second,
        "text_start": response.text[:60],
        "build": f"zoo_keeper {getattr(zk, '__version__', '?')}, llama.cpp CPU variant "
                 f"{info['cpu_variant']} ({info['chosen_by']}): {' '.join(info['features'])}",
    }))


if __name__ == "__main__":
    main()
