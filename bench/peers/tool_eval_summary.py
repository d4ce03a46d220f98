"""Tables of the tool-call evaluation's peer runs, in the format of
BENCHMARKS.md's tool tables, one row per side and `tool_choice` mode.

    python3 bench/peers/tool_eval_summary.py llama_cpp_python.jsonl node_llama_cpp.jsonl
    python3 bench/peers/tool_eval_summary.py --zoo tool_eval.txt *.jsonl

Reads the JSON lines of tool_eval_llama_cpp_python.py and
tool_eval_node_llama_cpp.mjs (one per case and mode, with its verdicts).
`--zoo FILE` adds the rows of examples/rust/tool_eval's own output (its
summary lines), for the side-by-side.

The scoring is examples/rust/tool_eval.rs's `Tally::record`, mirrored here
(`verdicts`, which the Python runner imports; the Node runner has the same
lines in JavaScript):
- right tool: the case needs a tool and the reply makes exactly one call,
  to it;
- right arguments: the right tool, and every expected argument present with
  the expected value (strings trimmed and compared ASCII-case-insensitively,
  numbers by value, other values equal); keys not listed are not checked;
- prose when none: the case needs no tool and the reply has no call and no
  call that could not be read;
- all right: right arguments, or prose when none;
- invalid calls: calls begun that could not be read;
- markup in prose: a prose answer showing call or result markup;
- the time per case, median (the upper one, as tool_eval's) and max.
"""

import argparse
import json
import re

# tool_eval.rs's `has_markup`, and each peer's own call opener
# (llama-cpp-python's chatml-function-calling, node-llama-cpp's default).
MARKUP = ("<tool_call>", "</tool_call>", "<tool_response>", "[TOOL_CALLS]")
PEER_MARKUP = re.compile(r"functions\.\w+:|\|\|call:")


def value_matches(want, got):
    if isinstance(want, str) and isinstance(got, str):
        return want.strip().encode().lower() == got.strip().encode().lower()  # ASCII only
    number = (int, float)
    if (isinstance(want, number) and not isinstance(want, bool)
            and isinstance(got, number) and not isinstance(got, bool)):
        return float(want) == float(got)
    return type(want) is type(got) and want == got


def verdicts(case, calls, failures, content):
    """The verdicts on one reply: `calls` are {name, arguments} the library
    returned, `failures` the calls it began but that could not be read."""
    one = calls[0] if len(calls) == 1 else None
    if case["tool"] is not None:
        right_tool = one is not None and one["name"] == case["tool"]
        args = one["arguments"] if right_tool else {}
        right_arguments = right_tool and all(
            key in args and value_matches(want, args[key])
            for key, want in case.get("arguments", {}).items())
        prose, markup = None, None
    else:
        right_tool = right_arguments = None
        prose = not calls and not failures
        markup = prose and (any(m in content for m in MARKUP)
                            or PEER_MARKUP.search(content) is not None)
    return {
        "right_tool": right_tool,
        "right_arguments": right_arguments,
        "prose_when_none": prose,
        "all_right": bool(right_arguments or prose),
        "invalid_calls": len(failures),
        "markup_in_prose": markup,
    }


def count(rows, key):
    scored = [r[key] for r in rows if r[key] is not None]
    return sum(scored), len(scored)


def fraction(rows, key, percent=False):
    right, of = count(rows, key)
    return f"{right}/{of}" + (f" ({100 * right / of:.0f} %)" if percent and of else "")


def row(rows):
    times = sorted(r["seconds"] for r in rows)
    errors = sum(1 for r in rows if r.get("error"))
    return [
        fraction(rows, "right_tool"),
        fraction(rows, "right_arguments", True),
        fraction(rows, "prose_when_none", True),
        f"{sum(r['all_right'] for r in rows)}/{len(rows)} "
        f"({100 * sum(r['all_right'] for r in rows) / len(rows):.0f} %)",
        str(sum(r["invalid_calls"] for r in rows)) + (f" (+{errors} errors)" if errors else ""),
        str(sum(bool(r["markup_in_prose"]) for r in rows)),
        f"{times[len(times) // 2]:.1f} s / {times[-1]:.1f} s",
    ]


ZOO_LINE = re.compile(
    r"^\s*(\w+): right tool (\d+/\d+), right tool and arguments (\d+)/(\d+), "
    r"prose when none (\d+)/(\d+); all right (\d+/\d+ \(\d+ %\)); "
    r"invalid calls (\d+), markup in prose (\d+); per case median (\d+) ms, max (\d+) ms")


def zoo_rows(path):
    """The rows of tool_eval's summary lines (its `Tally::summary`)."""
    rows = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            m = ZOO_LINE.match(line)
            if m:
                (mode, tool, args, of, prose, none, everything,
                 invalid, markup, median, most) = m.groups()
                pct = lambda a, b: f"{a}/{b} ({100 * int(a) / max(int(b), 1):.0f} %)"  # noqa: E731
                rows.append((f"zoo-keeper `{mode}`", [
                    tool, pct(args, of), pct(prose, none), everything, invalid, markup,
                    f"{int(median) / 1e3:.1f} s / {int(most) / 1e3:.1f} s"]))
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="+", help="JSON lines of the peer runners")
    parser.add_argument("--zoo", help="examples/rust/tool_eval's output, for its rows")
    args = parser.parse_args()
    table = zoo_rows(args.zoo) if args.zoo else []
    groups, notes, splits, models = {}, [], set(), set()
    for path in args.files:
        with open(path, encoding="utf-8") as f:
            for line in filter(str.strip, f):
                r = json.loads(line)
                if "unsupported" in r:
                    notes.append((f"{r['side']} `{r['mode']}`", r["unsupported"]))
                    continue
                splits.add(r["split"])
                models.add(r["model"])
                groups.setdefault((r["side"], r["mode"]), []).append(r)
    for (side, mode), rows in groups.items():
        table.append((f"{side} `{mode}`", row(rows)))
    head = ["right tool", "right arguments", "prose when none", "all right",
            "invalid calls", "markup in prose", "median / max per case"]
    title = f"{' + '.join(sorted(splits))} split, {', '.join(sorted(models))}"
    print(f"| {title} | " + " | ".join(head) + " |")
    print("|---|" + "---:|" * len(head))
    for name, cells in table:
        print(f"| {name} | " + " | ".join(cells) + " |")
    for name, why in notes:
        print(f"| {name} | not supported: {why} |" + " |" * (len(head) - 1))


if __name__ == "__main__":
    main()
