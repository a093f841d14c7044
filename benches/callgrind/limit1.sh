#!/usr/bin/env bash
# Counts the instructions Redis executes per job for KeyConcurrency 1 in the keyed workload's shape
# (10,000 keys of 10 jobs each, benches' "10,000 keys, KC 1"), with callgrind: the library's take
# and release (cycle_keyed.lua), the least dispatch that keeps the same state
# (cycle_limit1_floor.lua, with and without the keys' scores), and a limit of one kept without
# running counts, only each key's next job in one sorted set (cycle_shared.lua mode 3), alone and
# with the bookkeeping the library would keep beside it (mode 4); and every job of every key kept in
# that set (issue #38's proposal for keys without limits) with the limit kept by running counts
# written once a take and once a release (mode 5), and with the waiting index too (mode 6). As in
# run.sh, the Lua runs directly, each script loaded before its count starts.
#
#   benches/callgrind/limit1.sh [jobs per take] [takes]    # defaults 50 and 36
#
# Needs valgrind (apt-get install valgrind), redis-server, redis-cli and python3 (for a free port);
# starts its own server on a free port.
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-50}
takes=${2:-36}
. ./server.sh

keyed_cycle cycle_keyed
keyed() { redis-cli -p "$port" --eval setup_keyed.lua , 10000 10 >/dev/null; }
keyed
measure "library, KeyConcurrency 1" "$tmp/cycle_keyed.lua" 1 "$n" "$takes"
keyed
measure "least dispatch of the same state" cycle_limit1_floor.lua "" "$n" "$takes"
keyed
measure "the same, keys read without scores" cycle_limit1_floor.lua quick "$n" "$takes"
redis-cli -p "$port" --eval setup_shared.lua , 10000 10 head >/dev/null
measure "shared set, next job only" cycle_shared.lua 3 "$n" "$takes"
redis-cli -p "$port" --eval setup_shared.lua , 10000 10 headbook >/dev/null
measure "shared set, next job only, with bookkeeping" cycle_shared.lua 4 "$n" "$takes"
redis-cli -p "$port" --eval setup_shared.lua , 10000 10 "" >/dev/null
measure "every job in the set, counts a take" cycle_shared.lua 5 "$n" "$takes"
redis-cli -p "$port" --eval setup_shared.lua , 10000 10 waiting >/dev/null
measure "every job in the set, counts a take, waiting index" cycle_shared.lua 6 "$n" "$takes"
