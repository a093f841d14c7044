#!/usr/bin/env bash
# Counts the instructions Redis executes per fired schedule tick, with callgrind: the library's
# BenchmarkFireKeyedTicks (bench_test.go) fires 100,000 schedules due at one second, a key each, with
# one firing loop and no pool (the claims, the plans in Go, the commits with their lane jobs), and
# tells callgrind when to count. The count holds the scripts' calls and commands, not the Go side.
#
#   benches/callgrind/fire.sh [ticks]    # default 100,000
#
# Needs valgrind (apt-get install valgrind), redis-server, redis-cli, python3 (for a free port) and
# Go; starts its own server on a free port.
set -euo pipefail
cd "$(dirname "$0")"
ticks=${1:-100000}
. ./server.sh

(cd ../.. && WORK_TEST_REDIS="127.0.0.1:$port" WORK_CALLGRIND_PID="$vg" WORK_BENCH_TICKS="$ticks" \
  go test -run '^$' -bench '^BenchmarkFireKeyedTicks$' -benchtime 1x -count 1 . >"$tmp/bench.log" 2>&1) ||
  { cat "$tmp/bench.log" >&2; exit 1; }
ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$tmp/cg.out.1")
printf '%-58s %7d ticks  %9d instructions a tick\n' "fire keyed schedules due at one second" "$ticks" $((ir / ticks))
