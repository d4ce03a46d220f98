#!/usr/bin/env bash
# make -C tests/c bench: the C ABI's overhead against the Rust API.
# Runs tests/c/bench_ffi (through libzoo.so) and its Rust twin
# zoo-ffi/benches/ffi_overhead.rs alternately, ROUNDS times each (default
# 7), so that both see the same machine state, and prints the median of
# every metric on each side, and their difference. Both sides are the dev
# profile build of zoo-core (as libzoo ships); the C program is -O2.
#
#   tests/c/bench.sh build/bench_ffi   (ROUNDS=7 SAMPLES=3 TOKENS=20000 CALLS=10 CHATS=100)
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
c_bench=$1
rounds=${ROUNDS:-7}
samples=${SAMPLES:-3}
tokens=${TOKENS:-20000}
calls=${CALLS:-10}
chats=${CHATS:-100}

# The release profile, as libzoo itself (see ffi_overhead.rs).
rust_bench=$(cd "$root" && cargo bench --release -p zoo-ffi --bench ffi_overhead --no-run \
  --message-format=json 2>/dev/null |
  python3 -c 'import json,sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "ffi_overhead":
        print(m["executable"])')
[ -x "$rust_bench" ] || { echo "bench.sh: could not build the Rust bench" >&2; exit 1; }

out=$(mktemp)
trap 'rm -f "$out"' EXIT
echo "bench: $rounds interleaved rounds (C and Rust, alternating who goes first) of $samples samples each;"
echo "       $tokens tokens per streamed chat, $calls tool calls per chat, $chats chats per tool sample"
for ((i = 1; i <= rounds; i++)); do
  # Alternate which side goes first, so neither always meets a cold CPU.
  if ((i % 2)); then
    "$c_bench" "$samples" "$tokens" "$calls" "$chats" >>"$out"
    "$rust_bench" "$samples" "$tokens" "$calls" "$chats" >>"$out"
  else
    "$rust_bench" "$samples" "$tokens" "$calls" "$chats" >>"$out"
    "$c_bench" "$samples" "$tokens" "$calls" "$chats" >>"$out"
  fi
  echo "  round $i/$rounds done"
done

python3 - "$out" <<'EOF'
import statistics, sys
data = {}
for line in open(sys.argv[1]):
    side, metric, value = line.split()
    data.setdefault(metric, {}).setdefault(side, []).append(float(value))
med = lambda key, side: statistics.median(data[key][side])
n = len(data["tool_call_ns"]["c"])
print(f"{'median of ' + str(n) + ' samples per side, ns':<58} {'C ABI':>9} {'Rust API':>9} {'C - Rust':>9}")
rows = [
    ("token_ns_without_callback", "per streamed token, no callback"),
    ("token_ns_with_callback", "per streamed token, with an on_token callback"),
    ("token_callback_ns", "per token callback (with - without)"),
    ("tool_call_ns", "per tool call (its chat's cost spread over its calls)"),
]
for key, label in rows:
    c, r = med(key, "c"), med(key, "rust")
    print(f"{label:<58} {c:>9.1f} {r:>9.1f} {c - r:>9.1f}")
# What zoo_agent_chat does that Agent::chat does not: the response as JSON.
tj, cj = med("token_response_json_ns", "rust"), med("tool_call_response_json_ns", "rust")
print(f"{'response JSON (to_json + CString), per token':<58} {'':>9} {tj:>9.1f}")
print(f"{'response JSON (to_json + CString), per tool call':<58} {'':>9} {cj:>9.1f}")
rt = med("token_ns_without_callback", "c") - med("token_ns_without_callback", "rust") - tj
rc = med("tool_call_ns", "c") - med("tool_call_ns", "rust") - cj
print(f"{'C - Rust - response JSON, per token (no callback)':<58} {'':>9} {'':>9} {rt:>9.1f}")
print(f"{'C - Rust - response JSON, per tool call':<58} {'':>9} {'':>9} {rc:>9.1f}")
EOF
