#!/usr/bin/env bash
# Counts the instructions Redis executes per debounced enqueue that replaces a pending burst's job,
# with callgrind: lua/debounce.lua of internal/rdb (or the scripts given) called through
# redis-benchmark, five enqueues a call (five bursts, each replaced on every call), the shape of the
# pushes that concurrent Enqueue calls share. The count holds the call's parsing and reply, so
# "empty.lua" below (a script that answers without a command) is what any script call of these
# arguments costs.
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
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
tmp=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
  redis-server --port "$port" --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
vg=$!
trap 'kill $vg 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-cli -p "$port" ping >/dev/null || { echo "redis-server under valgrind did not start:" >&2; cat "$tmp/redis.log" >&2; exit 1; }
payload='{"name":"x","id":"0123456789abcdef01234567","t":1795934094,"args":{"addr":"test@example.com","n":1},"debounce":"dX"}'
# The keys: scheduled set, known_jobs, the index, five burst hashes; the due channel; then per
# enqueue its payload, window 60 s, no maximum wait, latest wins, its member in the index.
args=(8 cg:scheduled cg:known_jobs cg:debounces)
for i in 1 2 3 4 5; do args+=("cg:debounce:x:{d$i}"); done
args+=(cg:due)
for i in 1 2 3 4 5; do args+=("${payload/dX/d$i}" 60000 0 "" "x
d$i"); done
dumps=0
for script in "${scripts[@]}"; do
  sha=$(redis-cli -p "$port" -x script load <"$script")
  redis-cli -p "$port" evalsha "$sha" "${args[@]}" >/dev/null # the bursts begin
  callgrind_control -z "$vg" >/dev/null 2>&1
  redis-benchmark -p "$port" -n "$calls" -c 1 -P 1 -q EVALSHA "$sha" "${args[@]}" >/dev/null
  callgrind_control -d "$vg" >/dev/null 2>&1
  dumps=$((dumps + 1))
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$tmp/cg.out.$dumps")
  printf '%-50s %9d instructions an enqueue\n' "$(basename "$script")" $((ir / calls / 5))
  redis-cli -p "$port" flushall >/dev/null
done
