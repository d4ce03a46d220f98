#!/usr/bin/env bash
# test-examples: the example programs (examples/c/chat.c and
# examples/cpp/chat.cpp) run as their comments say, on the default model
# (ZOO_MODEL overrides it): asked "Multiply 17 by 23.", each must show the
# calculator's call with 17, 23 and multiply and its result on stderr, and
# a reply on stdout. Ends with "N passed, M failed".
set -uo pipefail

here=$(cd "$(dirname "$0")" && pwd)
# The folder the Makefile built them in (build/<profile>), relative to here.
build=$here/${1:-build/release}
work=$(mktemp -d /tmp/zoo-examples-test.XXXXXX)
trap 'rm -rf "$work"' EXIT
passed=0
failed=0

# run_example PROGRAM: one question on stdin, then what it printed.
run_example() {
  local program=$1
  printf 'Multiply 17 by 23.\n' | "$build/$program" >"$work/out" 2>"$work/err" || {
    echo "$program exited with status $?"
    return 1
  }
  grep -qF '"type":"tool_call_started","id":"call_1","name":"calculator","arguments":{"a":17,"b":23,"op":"multiply"}' "$work/err" || {
    echo "$program did not show the calculator's call for 17 * 23"
    return 1
  }
  grep -qF '"type":"tool_call_finished","id":"call_1","name":"calculator","result":"17 * 23 = 391"' "$work/err" || {
    echo "$program did not show the calculator's result"
    return 1
  }
  grep -q '[^[:space:]]' "$work/out" || {
    echo "$program printed no reply"
    return 1
  }
}

for program in chat_c chat_cpp; do
  echo "[ RUN  ] $program"
  if run_example "$program" >"$work/log" 2>&1; then
    passed=$((passed + 1))
    echo "[  OK  ] $program"
  else
    failed=$((failed + 1))
    sed 's/^/    /' "$work/log"
    echo "    stderr:"
    tr '\r' '\n' <"$work/err" | grep -v '^\[#* *\] *[0-9]*%$' | sed 's/^/    /' | tail -n 20
    echo "[ FAIL ] $program"
  fi
done

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
