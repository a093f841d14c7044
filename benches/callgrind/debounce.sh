#!/usr/bin/env bash
# Counts the instructions Redis executes per debounced enqueue that replaces a pending burst's job,
# with callgrind: lua/debounce.lua of internal/rdb (or the scripts given) called through
# redis-benchmark, five enqueues a call (five bursts, each replaced on every call), the shape of the
# pushes that concurrent Enqueue calls share. The count holds the call's parsing and reply, so
# debounce_floor.lua (a script that answers as a replace does, without a command) is what any script
# call of these arguments costs.
#
#   benches/callgrind/debounce.sh [script.lua ...]    # default: the library's debounce.lua
#
# Needs valgrind, redis-server, redis-cli, redis-benchmark and python3; starts its own server on a
# free port. CALLS (default 2000) calls a script.
set -euo pipefail
scripts=()
for s in "$@"; do scripts+=("$(realpath "$s")"); done
cd "$(dirname "$0")"
calls=${CALLS:-2000}
[ ${#scripts[@]} -gt 0 ] || scripts=("$(realpath ../../internal/rdb/lua/debounce.lua)")
. ./server.sh
payload='{"name":"x","id":"0123456789abcdef01234567","t":1795934094,"args":{"addr":"test@example.com","n":1},"debounce":"dX"}'
# The keys: scheduled set, known_jobs, the index, five burst hashes; the due channel; then per
# enqueue its payload, window 60 s, no maximum wait, latest wins, its member in the index.
args=(8 cg:scheduled cg:known_jobs cg:debounces)
for i in 1 2 3 4 5; do args+=("cg:debounce:x:{d$i}"); done
args+=(cg:due)
for i in 1 2 3 4 5; do args+=("${payload/dX/d$i}" 60000 0 "" "x
d$i"); done
for script in "${scripts[@]}"; do
  sha=$(redis-cli -p "$port" -x script load <"$script")
  redis-cli -p "$port" evalsha "$sha" "${args[@]}" >/dev/null # the bursts begin
  counting
  redis-benchmark -p "$port" -n "$calls" -c 1 -P 1 -q EVALSHA "$sha" "${args[@]}" >/dev/null
  counted
  printf '%-50s %9d instructions an enqueue\n' "$(basename "$script")" $((ir / calls / 5))
  redis-cli -p "$port" flushall >/dev/null
done
