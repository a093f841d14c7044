#!/usr/bin/env bash
# Counts the instructions Redis executes per job, with callgrind, for keyed jobs kept as the library
# keeps them (a queue per key, lua/lib/keyed.lua) and as issue #38's shared lane would keep them
# (cycle_lane.lua: one sorted set of the jobs of every key scored by virtual start, with the hash of
# each key's last start that fairness needs and a sweep of it), and for unkeyed jobs. Two cycles:
# the fetch and acknowledgement of jobs queued beforehand (what the keyed workload times), and the
# enqueue, fetch and acknowledgement of the same jobs (what a burst of schedules costs Redis), for
# a key of its own per job (each set already holding 100,000 one-job keys) and for 10 keys. As in
# run.sh, the Lua runs directly, each script loaded before its count starts.
#
#   benches/callgrind/lane.sh [jobs per take] [takes]    # defaults 50 and 36: 1,800 jobs a case
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
# fill_keyed KEYS PER: the library's state with KEYS keys of PER jobs, no running counts kept.
fill_keyed() {
  cli flushall
  cli --eval setup_keyed.lua , "$1" "$2"
  cli hset cg:keyed:a:meta counts 0 waiting $(($1 * $2))
}
# fill_lane SHAPE JOBS: the lane with JOBS jobs queued by the model's own enqueue.
fill_lane() {
  cli flushall
  cli --eval cycle_lane.lua , "$1" 1000 $(($2 / 1000)) fill
}
jobs=$((n * takes))

echo "fetch and acknowledgement of jobs queued before"
cli flushall
cli --eval setup_unkeyed.lua , "$jobs"
measure "unkeyed" cycle_unkeyed.lua 0 "$n" "$takes"
fill_keyed 100000 1
measure "library, 100,000 keys of one job" "$tmp/cycle_keyed.lua" 0 "$n" "$takes"
fill_lane fresh 100000
measure "lane, 100,000 keys of one job" cycle_lane.lua fresh "$n" "$takes" take
fill_lane fresh 100000
measure "lane, 100,000 keys of one job, no sweep" cycle_lane.lua fresh "$n" "$takes" take-nosweep
fill_lane fresh 100000
measure "lane, 100,000 keys of one job, exact drop" cycle_lane.lua fresh "$n" "$takes" take-exact
fill_keyed 10 $(( (jobs + 9) / 10 ))
measure "library, 10 keys" "$tmp/cycle_keyed.lua" 0 "$n" "$takes"
fill_lane 10 $(( (jobs + 999) / 1000 * 1000 ))
measure "lane, 10 keys" cycle_lane.lua 10 "$n" "$takes" take

echo "enqueue, fetch and acknowledgement"
cli flushall
measure "unkeyed" cycle_unkeyed_enqueue.lua 0 "$n" "$takes"
fill_keyed 100000 1
measure "library, a key of its own per job" "$tmp/cycle_keyed_enqueue.lua" fresh "$n" "$takes"
fill_lane fresh 100000
measure "lane, a key of its own per job" cycle_lane.lua fresh "$n" "$takes" full
fill_lane fresh 100000
measure "lane, a key of its own per job, exact drop" cycle_lane.lua fresh "$n" "$takes" full-exact
fill_keyed 10 1
measure "library, 10 keys" "$tmp/cycle_keyed_enqueue.lua" 10 "$n" "$takes"
cli flushall
measure "lane, 10 keys" cycle_lane.lua 10 "$n" "$takes" full
