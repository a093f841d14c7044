# Sourced by every script here: starts redis-server under callgrind on a free port (port, tmp and
# vg are set; the server and tmp go when the script exits), and defines
#   cli ARGS...         redis-cli on that server, its output dropped
#   keyed_cycle NAME    writes $tmp/NAME.lua: the library's keyed helpers (lib, internal/rdb/lua/lib),
#                       take_ack.lua and NAME.lua, which runs on them
#   counting            zeroes callgrind's counts: what the server runs from now on is counted
#   counted             dumps them and sets ir to the instructions run since counting
#   measure LABEL SCRIPT ARGS...
#                       loads SCRIPT, runs it with ARGS while callgrind counts (it returns the jobs
#                       it took) and prints the instructions per job
# Needs valgrind (apt-get install valgrind), redis-server, redis-cli and python3 (for a free port).
#
# Two variables say more of where the instructions go:
#   REDIS_SERVER=PATH   the server to run (default: redis-server on PATH). Debian's is stripped, so
#                       callgrind_annotate names few of its functions; a build of the same release
#                       from its source (make in the tarball keeps symbols) names them all, Lua's
#                       interpreter included.
#   CG_KEEP=DIR         keeps each measure's counts as DIR/<label>.out, for
#                       callgrind_annotate --inclusive=yes DIR/<label>.out
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()')
tmp=$(mktemp -d)
valgrind --tool=callgrind --callgrind-out-file="$tmp/cg.out" \
  "${REDIS_SERVER:-redis-server}" --port "$port" --save '' --appendonly no >"$tmp/redis.log" 2>&1 &
vg=$!
trap 'kill $vg 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$tmp"' EXIT
for _ in $(seq 1 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.2; done
redis-cli -p "$port" ping >/dev/null || { echo "redis-server under valgrind did not start:" >&2; cat "$tmp/redis.log" >&2; exit 1; }

dumps=0 # callgrind numbers its dumps
counting() { callgrind_control -z "$vg" >/dev/null 2>&1; }
counted() {
  callgrind_control -d "$vg" >/dev/null 2>&1
  dumps=$((dumps + 1))
  ir=$(awk '/^(summary|totals):/ {print $2; exit}' "$tmp/cg.out.$dumps")
}
measure() {
  # Loaded first, so that compiling the script (a keyed one carries the library's Lua) is not
  # counted.
  local label=$1 script=$2 sha jobs
  shift 2
  sha=$(redis-cli -p "$port" -x script load <"$script")
  counting
  jobs=$(redis-cli -p "$port" evalsha "$sha" 0 "$@")
  [ "$jobs" -gt 0 ] || { echo "$label: the script took no job" >&2; exit 1; }
  counted
  if [ -n "${CG_KEEP:-}" ]; then
    mkdir -p "$CG_KEEP"
    cp "$tmp/cg.out.$dumps" "$CG_KEEP/$(printf '%s' "$label" | tr -c 'A-Za-z0-9.-' '_').out"
  fi
  printf '%-58s %6d jobs  %9d instructions a job\n' "$label" "$jobs" $((ir / jobs))
}

lib=../../internal/rdb/lua/lib
cli() { redis-cli -p "$port" "$@" >/dev/null; }
keyed_cycle() { cat "$lib/keychecks.lua" "$lib/keyed.lua" take_ack.lua "$1.lua" >"$tmp/$1.lua"; }
