#!/usr/bin/env bash
# Counts the instructions Redis executes per job for four ways of fetching and acknowledging jobs,
# with callgrind: unkeyed (the exchange script's RPOP with a count), the least dispatch that keeps a
# queue per key (cycle_floor.lua), the library's keyed fetch and acknowledgement
# (cycle_keyed.lua on internal/rdb/lua/lib/keyed.lua), and the least dispatch that keeps the jobs of
# every key in one sorted set (cycle_shared.lua), with and without running counts. Instruction
# counts hardly depend on the machine's load (the count also holds the command's parsing and a share
# of Redis's timer tasks), so the four compare where a timed run on a shared machine cannot. It runs
# the Lua directly, not the whole exchange script, so it leaves out what all four share (the call
# itself, statistics, locks). In the KeyConcurrency cases every take of 32 keys or more makes the
# running hash anew (as a hashtable at once, since f844297), since each acknowledges a take's jobs
# before the next and so empties it, where a busy pool's stays (without a limit there is none).
#
#   benches/callgrind/run.sh [jobs per take] [takes]    # defaults 50 and 36: up to 1,800 jobs a case
#
# A case may take fewer jobs than jobs per take times takes (KeyConcurrency 1 gives one job a key a
# take); the count is divided by the jobs taken.
# Needs valgrind (apt-get install valgrind), redis-server, redis-cli and python3 (for a free port);
# starts its own server on a free port.
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-50}
takes=${2:-36}
. ./server.sh

keyed_cycle cycle_keyed
jobs=$((n * takes))
redis-cli -p "$port" --eval setup_unkeyed.lua , "$jobs" >/dev/null
measure "unkeyed" cycle_unkeyed.lua 0 "$n" "$takes"
for keys in 100000 10; do
  per=$(( (jobs + keys - 1) / keys ))
  redis-cli -p "$port" --eval setup_keyed.lua , "$keys" "$per" >/dev/null
  measure "least per-key dispatch, $keys keys" cycle_floor.lua 0 "$n" "$takes"
  redis-cli -p "$port" --eval setup_keyed.lua , "$keys" "$per" >/dev/null
  measure "keyed, $keys keys" "$tmp/cycle_keyed.lua" 0 "$n" "$takes"
  redis-cli -p "$port" --eval setup_keyed.lua , "$keys" "$per" >/dev/null
  measure "keyed, $keys keys, KeyConcurrency 1" "$tmp/cycle_keyed.lua" 1 "$n" "$takes"
  redis-cli -p "$port" --eval setup_shared.lua , "$keys" "$per" >/dev/null
  measure "one shared set, $keys keys" cycle_shared.lua 0 "$n" "$takes"
  redis-cli -p "$port" --eval setup_shared.lua , "$keys" "$per" >/dev/null
  measure "one shared set, $keys keys, running counts" cycle_shared.lua 1 "$n" "$takes"
  redis-cli -p "$port" --eval setup_shared.lua , "$keys" "$per" >/dev/null
  measure "one shared set, $keys keys, counts per take" cycle_shared.lua 2 "$n" "$takes"
  redis-cli -p "$port" --eval setup_shared.lua , "$keys" "$per" head >/dev/null
  measure "one shared set, $keys keys, next job only" cycle_shared.lua 3 "$n" "$takes"
done
