"""The summary of a scripts/bench-peers run: medians per side, the ratios
of Zoo-Keeper to each peer in the same language, and the goals of issue 19.

    python summary.py RESULTS.jsonl
"""

import json
import statistics
import sys

SIDES = ("zoo-python", "llama-cpp-python", "zoo-node", "node-llama-cpp")
# (ours, peer, goal for prompt, goal for generation): issue 19 asks prompt
# speed at least the best peer's, generation 1.05x llama-cpp-python and
# 1.2x node-llama-cpp.
PAIRS = (("zoo-python", "llama-cpp-python", 1.0, 1.05), ("zoo-node", "node-llama-cpp", 1.0, 1.2))


def main() -> None:
    rows = [json.loads(line) for line in open(sys.argv[1], encoding="utf-8") if line.strip()]
    by_side = {side: [r for r in rows if r["side"] == side] for side in SIDES}
    med = {side: {key: statistics.median(r[key] for r in runs) for key in ("prompt_tps", "gen_tps", "ttft_ms", "cold_ms")}
           for side, runs in by_side.items() if runs}

    print("\nbuilds:")
    for side, runs in by_side.items():
        if runs:
            print(f"  {side:<17} {runs[0]['build']}")
    print(f"\n{'side':<17} {'runs':>4} {'prompt tok':>10} {'gen tok':>8} {'TTFT ms':>8} "
          f"{'prompt tok/s':>13} {'gen tok/s':>10} {'cold ms':>8}   (medians)")
    for side, runs in by_side.items():
        if not runs:
            continue
        prompt_tokens = "/".join(str(t) for t in sorted({r["prompt_tokens"] for r in runs}))
        gen_tokens = "/".join(str(t) for t in sorted({r["gen_tokens"] for r in runs}))
        m = med[side]
        print(f"{side:<17} {len(runs):>4} {prompt_tokens:>10} {gen_tokens:>8} {m['ttft_ms']:>8.0f} "
              f"{m['prompt_tps']:>13.1f} {m['gen_tps']:>10.1f} {m['cold_ms']:>8.0f}")
    for side in ("zoo-python", "zoo-node"):
        runs = by_side[side]
        if runs:
            print(f"  {side} engine's own metrics (cross-check): prompt "
                  f"{statistics.median(r['prompt_tokens'] * 1000 / r['engine_prompt_ms'] for r in runs):.1f} tok/s, "
                  f"generation {statistics.median(r['engine_tokens_per_second'] for r in runs):.1f} tok/s")

    print("\nreplies begin (greedy, same model):")
    for side, runs in by_side.items():
        if runs:
            print(f"  {side:<17} {runs[0]['text_start']!r}")

    best_peer_prompt = max(med[p]["prompt_tps"] for p in ("llama-cpp-python", "node-llama-cpp") if p in med)
    print("\nratios (ratio of medians; median of per-round ratios):")
    for ours, peer, prompt_goal, gen_goal in PAIRS:
        if ours not in med or peer not in med:
            continue
        rounds = {r["round"]: r for r in by_side[ours]}
        paired = [(rounds[r["round"]], r) for r in by_side[peer] if r["round"] in rounds]
        for key, name, goal in (("prompt_tps", "prompt", prompt_goal), ("gen_tps", "generation", gen_goal)):
            ratio = med[ours][key] / med[peer][key]
            per_round = statistics.median(o[key] / p[key] for o, p in paired)
            verdict = "met" if ratio >= goal else "NOT met"
            print(f"  {ours}/{peer} {name}: {ratio:.3f} ({per_round:.3f}); goal >= {goal}: {verdict}")
        ahead = med[ours]["cold_ms"] < med[peer]["cold_ms"]
        print(f"  cold start (spawn to first token) {ours} {med[ours]['cold_ms']:.0f} ms, {peer} "
              f"{med[peer]['cold_ms']:.0f} ms; goal: ahead: {'met' if ahead else 'NOT met'}")
        best = med[ours]["prompt_tps"] / best_peer_prompt
        print(f"  {ours} prompt / best peer's prompt ({best_peer_prompt:.1f} tok/s): {best:.3f}; "
              f"goal >= 1.0: {'met' if best >= 1.0 else 'NOT met'}")


if __name__ == "__main__":
    main()
