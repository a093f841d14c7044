#!/bin/sh
# Enqueues work jobs with nothing but redis-cli: one job to run now, one to run in a second, and a
# keyed job (one of the customer "acme").
#
#   WORK_REDIS=127.0.0.1:6379 WORK_NS=my_app_namespace sh enqueue.sh
#
# A Go worker pool of the namespace that handles "send_email" and "export_report" runs them.
set -eu

redis_addr=${WORK_REDIS:-127.0.0.1:6379}
ns=${WORK_NS:-my_app_namespace}
host=${redis_addr%:*}
port=${redis_addr##*:}

cli() { redis-cli -h "$host" -p "$port" "$@"; }

# A job ID: 24 lowercase hex characters.
new_id() { od -An -N12 -tx1 /dev/urandom | tr -d ' \n'; }

now=$(date +%s)

# 1. A job to run now: LPUSH its JSON onto <ns>:jobs:<name>. SADD makes the name known to
#    Client.Queues before any pool serving it starts; PUBLISH, after the push, wakes idle pools at
#    once (without it, they find the job at their next look, within 5 s by default).
id=$(new_id)
job='{"name":"send_email","id":"'"$id"'","t":'"$now"',"args":{"address":"cli@example.com","subject":"hello from redis-cli"}}'
cli SADD "$ns:known_jobs" send_email >/dev/null
cli LPUSH "$ns:jobs:send_email" "$job" >/dev/null
cli PUBLISH "$ns:wake" send_email >/dev/null
echo "enqueued send_email $id"

# 2. A job to run later: ZADD its JSON to <ns>:scheduled, scored by the epoch second to run it at.
#    PUBLISH that second on <ns>:due so that idle pools move the job when it is due (without it, they
#    learn of it at their next look).
id=$(new_id)
job='{"name":"send_email","id":"'"$id"'","t":'"$now"',"args":{"address":"cli-later@example.com","subject":"scheduled from redis-cli"}}'
cli ZADD "$ns:scheduled" $((now + 1)) "$job" >/dev/null
cli PUBLISH "$ns:due" $((now + 1)) >/dev/null
echo "scheduled send_email $id at $((now + 1))"

# 3. A keyed job: its JSON carries "key". The Go enqueuer's own script, internal/rdb/lua/enqueue_keyed.lua after
#    the helpers it uses, pushes it onto the key's queue, <ns>:keyed:<name>:{<key>}, and gives the
#    key its turn, in one step; it refuses the job if the key has as many jobs waiting as its cap.
#    Its arguments: known_jobs, then the wake-up channel, the namespace's prefix, the number of
#    groups of jobs, per group the job name, the key and the job count, then the jobs.
lua=$(dirname "$0")/../../internal/rdb/lua
script=$(cat "$lua/lib/keychecks.lua" "$lua/lib/keyed.lua" "$lua/enqueue_keyed.lua")
id=$(new_id)
job='{"name":"export_report","id":"'"$id"'","t":'"$now"',"args":{"month":"2024-04"},"key":"acme"}'
n=$(cli EVAL "$script" 1 "$ns:known_jobs" "$ns:wake" "$ns:" 1 export_report acme 1 "$job" 2>&1)
case $n in
''|*[!0-9]*) echo "export_report for acme not enqueued: $n" >&2; exit 1 ;; # WORKKEY full: at its cap
esac
echo "enqueued export_report $id for acme ($n waiting)"
