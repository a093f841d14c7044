#!/usr/bin/env bash
# Counts the instructions Redis executes per exchange call that fetches from one empty group (a
# queue, then a name's keyed jobs), with callgrind: what every call of the pools' hot script costs
# before any job (its text run anew, its arguments and reply turned into Lua and back). The
# library's BenchmarkExchangeIdleFetch (internal/rdb/exchange_bench_test.go) makes the calls through
# the store and tells callgrind when to count.
#
#   benches/callgrind/exchange.sh [calls]    # default 5,000 a group
#
# Needs valgrind (apt-get install valgrind), redis-server, redis-cli, python3 (for a free port) and
# Go; starts its own server on a free port.
set -euo pipefail
cd "$(dirname "$0")"
calls=${1:-5000}
. ./server.sh

(cd ../.. && WORK_TEST_REDIS="127.0.0.1:$port" WORK_CALLGRIND_PID="$vg" \
  go test -run '^$' -bench '^BenchmarkExchangeIdleFetch$' -benchtime "${calls}x" -count 1 ./internal/rdb >"$tmp/bench.log" 2>&1) ||
  { cat "$tmp/bench.log" >&2; exit 1; }
for i in 1 2; do
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$tmp/cg.out.$i")
  label=$([ "$i" = 1 ] && echo "a queue" || echo "a name's keyed jobs")
  printf '%-58s %7d calls  %9d instructions a call\n' "exchange fetching from one empty group: $label" "$calls" $((ir / calls))
done
