#!/usr/bin/env bash
# Counts the instructions Redis executes per job for the library's own lane (internal/rdb/lua/lib/
# keyed.lua, "The lane"), with callgrind: the take and acknowledgement of jobs of 100,000 one-job
# keys queued beforehand by the library's enqueue (keyedCheckMany, keyedPushMany), and the enqueue,
# take and acknowledgement of jobs of keys of their own. As in run.sh, the Lua runs directly, each
# script loaded before its count starts; the enqueue case also counts the cycle script building its
# payloads.
#
#   benches/callgrind/lane_library.sh [jobs per take] [takes]    # defaults 50 and 36
#
# Needs valgrind (apt-get install valgrind), redis-server, redis-cli and python3 (for a free port);
# starts its own server on a free port.
set -euo pipefail
cd "$(dirname "$0")"
n=${1:-50}
takes=${2:-36}
. ./server.sh

keyed_cycle cycle_keyed
keyed_cycle cycle_keyed_enqueue
cli flushall
cli --eval "$tmp/cycle_keyed_enqueue.lua" , fresh 1000 100 fill
measure "take and acknowledgement, 100,000 one-job keys" "$tmp/cycle_keyed.lua" 0 "$n" "$takes"
cli flushall
measure "enqueue, take and acknowledgement, a key per job" "$tmp/cycle_keyed_enqueue.lua" fresh "$n" "$takes"
