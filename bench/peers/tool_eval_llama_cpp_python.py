"""examples/rust/tool_eval.rs's tool-call evaluation through llama-cpp-python,
for the side-by-side (issue 18, point 5): the same cases
(tests/eval/tool_cases.json), tool sets (tests/eval/tool_sets.json), model
and scoring (tool_eval_summary.verdicts).

    # PYTHON: a venv with llama-cpp-python==0.3.36 (bench/peers/requirements.txt)
    ZOO_EVAL_THREADS=1 $PYTHON bench/peers/tool_eval_llama_cpp_python.py \
        --model models/SmolLM2-135M-Instruct.Q4_1.gguf --split report \
        --out llama_cpp_python.jsonl
    python3 bench/peers/tool_eval_summary.py llama_cpp_python.jsonl

Each case is a fresh chat: the system message "You are a helpful
assistant.", the case's prompt as the one user message, the case's tool set
as `tools=`, through `Llama.create_chat_completion` with the
`chatml-function-calling` chat format (the one its README gives for a model
without a tool template of its own, as SmolLM2), greedy (temperature 0, no
repeat penalty, as tool_eval), `max_tokens` 96. The model is loaded once,
context 4096, `ZOO_EVAL_THREADS` threads (default 1).

`tool_choice`: that chat format takes "none", "auto" or one named function;
"required" is not among them (its handler asserts "auto" after the other
two). `--mode required` tries it once and, when it is refused, records the
mode as not supported: forcing the expected function instead would hand
this side the tool choice the others are scored on. In "auto" (read in
0.3.36's llama_chat_format.py): a grammar first picks "functions.NAME:" or
"message:"; the format does not apply `max_tokens` to a call's arguments
or to a prose reply (it passes None); after a call it generates one more
step (another call or the end) and drops it, as that name keeps its ':'
and matches no tool, so a reply holds at most one call (the extra step is
in the time). A case that raises is recorded with its error, scored wrong.

Writes one JSON line per case and mode: the case, the library's raw
message, the calls read from it, the verdicts and the seconds it took.
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import llama_cpp

from tool_eval_summary import row, verdicts

ROOT = Path(__file__).resolve().parents[2]
SYSTEM = "You are a helpful assistant."
SEED = 42


def read_calls(message):
    """The calls in the library's reply, and those whose arguments are not a
    JSON object (invalid calls)."""
    calls, failures = [], []
    for call in message.get("tool_calls") or []:
        name, text = call["function"]["name"], call["function"]["arguments"]
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError:
            arguments = None
        if isinstance(arguments, dict):
            calls.append({"name": name, "arguments": arguments})
        else:
            failures.append({"name": name, "arguments": text})
    return calls, failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="report", choices=["report", "tune", "all"])
    parser.add_argument("--mode", choices=["required", "auto"], help="default: both")
    parser.add_argument("--model", default=str(ROOT / "models/SmolLM2-135M-Instruct.Q4_1.gguf"))
    parser.add_argument("--limit", type=int, help="only the first N cases of the split")
    parser.add_argument("--out", default="-", help="JSON lines file (default stdout)")
    args = parser.parse_args()

    sets = json.loads((ROOT / "tests/eval/tool_sets.json").read_text())
    cases = json.loads((ROOT / "tests/eval/tool_cases.json").read_text())["cases"]
    cases = [c for c in cases if args.split in ("all", c["split"])][: args.limit]
    threads = int(os.environ.get("ZOO_EVAL_THREADS", "1"))
    llm = llama_cpp.Llama(model_path=args.model, n_ctx=4096, n_threads=threads,
                          n_threads_batch=threads, seed=SEED,
                          chat_format="chatml-function-calling", verbose=False)
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    side = f"llama-cpp-python {llama_cpp.__version__}"
    for mode in [args.mode] if args.mode else ["required", "auto"]:
        rows = []
        for i, case in enumerate(cases):
            tools = [{"type": "function", "function": t} for t in sets[case["set"]]]
            started = time.perf_counter()
            try:
                reply = llm.create_chat_completion(
                    messages=[{"role": "system", "content": SYSTEM},
                              {"role": "user", "content": case["prompt"]}],
                    tools=tools, tool_choice=mode, temperature=0, repeat_penalty=1.0,
                    max_tokens=96, seed=SEED)
                error = None
            except Exception as e:  # noqa: BLE001 - recorded, scored as wrong
                if mode == "required" and i == 0:
                    note = (f"tool_choice='required' raised {type(e).__name__} {e}".strip()
                            + " (chatml-function-calling takes 'none', 'auto' or one named"
                            " function; the expected one is not forced)")
                    print(json.dumps({"side": side, "mode": mode, "unsupported": note}), file=out)
                    print(f"{mode}: {note}; not measured", file=sys.stderr)
                    break
                reply, error = {"choices": [{"message": {}}]}, f"{type(e).__name__}: {e}"
            seconds = time.perf_counter() - started
            message = reply["choices"][0]["message"]
            calls, failures = read_calls(message)
            content = message.get("content") or ""
            verdict = verdicts(case, calls, [None] if error else failures, content)
            if error:
                verdict["invalid_calls"] = 0
            rows.append({"side": side, "mode": mode, "model": Path(args.model).name, **case,
                         "raw": message, "calls": calls, "failures": failures,
                         "content": content, "error": error, "seconds": round(seconds, 3),
                         **verdict})
            print(json.dumps(rows[-1]), file=out, flush=True)
            print(f"{mode} {i + 1}/{len(cases)} {seconds:.1f} s | {case['prompt']} -> "
                  f"{calls or failures or content!r}", file=sys.stderr)
        if rows:
            print(f"{mode}: " + " | ".join(row(rows)), file=sys.stderr)


if __name__ == "__main__":
    main()
