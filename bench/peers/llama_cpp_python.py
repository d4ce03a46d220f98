"""One bench-peers run of llama-cpp-python (its default pip install: llama.cpp
built from source on this machine).

    python llama_cpp_python.py MODEL PROMPT_FILE THREADS CTX N_GEN

The same work as zoo_python.py: the prompt file as one user message through
`create_chat_completion` (the model's own chat template, which is what
llama-cpp-python uses by default), greedy, up to N_GEN tokens, streamed so
that the first and last token can be timed here. llama-cpp-python has no
ignore-EOS option in its chat API either: the reply may end early (the
token counts are printed). Tokens are counted by llama.cpp's perf counters,
not by stream chunks, which can join tokens.
"""

import json
import os
import sys
import time

import llama_cpp
from llama_cpp import Llama


def main() -> None:
    model_path, prompt_file, threads, ctx, n_gen = sys.argv[1:6]
    with open(prompt_file, encoding="utf-8") as f:
        prompt = f.read()
    # n_threads_batch defaults to all cores: set it like the other sides.
    llm = Llama(model_path=model_path, n_ctx=int(ctx), n_threads=int(threads),
                n_threads_batch=int(threads), verbose=False)
    llama_cpp.llama_perf_context_reset(llm.ctx)
    stamps, text = [], []
    started = time.perf_counter()
    for chunk in llm.create_chat_completion(
        messages=[{"role": "user", "content": prompt}],
        temperature=0,
        max_tokens=int(n_gen),
        stream=True,
    ):
        piece = chunk["choices"][0]["delta"].get("content")
        if piece:
            stamps.append(time.perf_counter())
            text.append(piece)
    perf = llama_cpp.llama_perf_context(llm.ctx)
    # The last sampled token is returned without being decoded, so the
    # decoded count is one short of the tokens generated when the limit ends
    # the reply (and equal when an end-of-generation token does).
    tokens = perf.n_eval + 1
    print(json.dumps({
        "side": "llama-cpp-python",
        "prompt_tokens": perf.n_p_eval,
        "gen_tokens": tokens,
        "token_callbacks": len(stamps),
        "ttft_ms": (stamps[0] - started) * 1e3,
        "cold_ms": (time.time_ns() - (time.perf_counter() - stamps[0]) * 1e9
                    - int(os.environ["BENCH_SPAWNED_NS"])) / 1e6,
        "prompt_tps": perf.n_p_eval / (stamps[0] - started),
        "gen_tps": (tokens - 1) / (stamps[-1] - stamps[0]),
        "text_start": "".join(text)[:60],
        "build": f"llama-cpp-python {llama_cpp.__version__}: "
                 f"{llama_cpp.llama_print_system_info().decode().strip()}",
    }))


if __name__ == "__main__":
    main()
