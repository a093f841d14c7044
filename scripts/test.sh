#!/usr/bin/env bash
# Runs the whole test suite against real, throwaway redis-server and PostgreSQL processes.
# Installs redis-server and PostgreSQL from Debian's packages when they are missing, starts servers
# on free loopback ports, vets and tests every module of the workspace (go.work) with the race
# detector, runs each fuzz target on fresh inputs, and stops the servers whatever happens.
# Extra arguments go to `go test` of the root module alone, and then only that runs (for example:
# scripts/test.sh -run TestEnqueue -count=1).
set -euo pipefail
cd "$(dirname "$0")/.."
# Every module of the workspace is tested, whatever GOWORK the environment sets.
export GOWORK="$PWD/go.work"

if ! command -v redis-server >/dev/null 2>&1; then
  echo "redis-server not found: installing it from Debian's packages" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
fi
# PostgreSQL, for pgwork's transactional enqueue. Debian keeps the server's programs out of PATH,
# under /usr/lib/postgresql/<version>/bin.
pg_bin() {
  if command -v initdb >/dev/null 2>&1 && command -v postgres >/dev/null 2>&1; then
    dirname "$(command -v postgres)"; return 0
  fi
  local d
  d=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n 1)
  [ -n "$d" ] && [ -x "$d/initdb" ] && [ -x "$d/postgres" ] && { echo "$d"; return 0; }
  return 1
}
if ! PG_BIN=$(pg_bin); then
  echo "PostgreSQL not found: installing it from Debian's packages" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq postgresql >/dev/null
  PG_BIN=$(pg_bin) || { echo "PostgreSQL installed, but no initdb/postgres found" >&2; exit 1; }
fi
scripts/ensure-chromium.sh # for the web UI's browser test
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node/npm not found: installing them from Debian's packages (the docs' producer example uses them)" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi

tmp=$(mktemp -d)
pids=()
pg_pids=()
cleanup() {
  # SIGINT is PostgreSQL's fast shutdown: it ends the sessions a killed test may have left open.
  for p in "${pg_pids[@]:-}"; do [ -n "$p" ] && kill -INT "$p" 2>/dev/null || true; done
  for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$tmp"
}
trap cleanup EXIT INT TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()' 2>/dev/null \
  || shuf -i 20000-60000 -n 1; }

# start_redis VAR [extra redis-server args...]: starts a server, exports VAR=127.0.0.1:port.
start_redis() {
  local var=$1; shift
  local port dir
  port=$(free_port)
  dir="$tmp/$var"; mkdir -p "$dir"
  redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$dir" \
    --daemonize no --loglevel warning "$@" >"$dir/log" 2>&1 &
  pids+=($!)
  for _ in $(seq 1 100); do
    redis-cli -p "$port" ping >/dev/null 2>&1 && { export "$var=127.0.0.1:$port"; return 0; }
    sleep 0.05
  done
  echo "redis-server on port $port did not start:" >&2; cat "$dir/log" >&2; exit 1
}

# as_pg_user CMD...: execs CMD as the user the test PostgreSQL runs as. PostgreSQL refuses to run as
# root, so root runs it as an unprivileged system user (nobody, else a worktest user made for it);
# anyone else runs it as themselves.
pg_user=""
if [ "$(id -u)" = 0 ]; then
  if id nobody >/dev/null 2>&1; then
    pg_user=nobody
  else
    id worktest >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin worktest
    pg_user=worktest
  fi
fi
# It execs, so that run as `(as_pg_user ...) &` the PID in $! is the command's own (setpriv execs in
# turn; runuser and su pass signals on), which the cleanup can stop.
as_pg_user() {
  if [ -z "$pg_user" ]; then
    exec "$@"
  elif command -v setpriv >/dev/null 2>&1; then
    exec setpriv --reuid="$(id -u "$pg_user")" --regid="$(id -g "$pg_user")" --clear-groups "$@"
  elif command -v runuser >/dev/null 2>&1; then
    exec runuser -u "$pg_user" -- "$@"
  else
    exec su -s /bin/sh "$pg_user" -c "$(printf '%q ' "$@")"
  fi
}

# start_postgres VAR: starts a throwaway server (trust authentication, superuser postgres),
# exports VAR=postgres://postgres@127.0.0.1:port/postgres?sslmode=disable.
start_postgres() {
  local var=$1
  local port dir
  port=$(free_port)
  dir="$tmp/$var"; mkdir -p "$dir/data" "$dir/sock"
  if [ -n "$pg_user" ]; then
    chmod 711 "$tmp" # mktemp's 0700 would keep the server's user out of its own directory
    chown -R "$pg_user" "$dir"
  fi
  (as_pg_user "$PG_BIN/initdb" --pgdata="$dir/data" --username=postgres --auth=trust \
    --encoding=UTF8 --locale=C.UTF-8) >"$dir/initdb.log" 2>&1 \
    || { echo "initdb failed:" >&2; cat "$dir/initdb.log" >&2; exit 1; }
  # fsync off: the data is thrown away with the server, and the tests run faster without it.
  (as_pg_user "$PG_BIN/postgres" -D "$dir/data" -p "$port" -c listen_addresses=127.0.0.1 \
    -c unix_socket_directories="$dir/sock" -c fsync=off -c max_connections=200) >"$dir/log" 2>&1 &
  pg_pids+=($!)
  for _ in $(seq 1 200); do
    if grep -q "ready to accept connections" "$dir/log" 2>/dev/null; then
      export "$var=postgres://postgres@127.0.0.1:$port/postgres?sslmode=disable"; return 0
    fi
    kill -0 "${pg_pids[-1]}" 2>/dev/null || break
    sleep 0.05
  done
  echo "postgres on port $port did not start:" >&2; cat "$dir/log" >&2; exit 1
}

start_redis WORK_TEST_REDIS
echo "test redis: $WORK_TEST_REDIS" >&2
start_postgres WORK_TEST_POSTGRES
echo "test postgres: $WORK_TEST_POSTGRES" >&2

go vet ./...
phase_start=$SECONDS
phase() { echo "test.sh: $1 took $((SECONDS - phase_start))s" >&2; phase_start=$SECONDS; }
go test -race -count=1 -timeout 12m "$@" ./...
phase "the root module's tests"
if [ $# -eq 0 ]; then
  # The other modules of the workspace (go.work): ./... stops at a directory with a go.mod of its own.
  scripts/test-modules.sh
  phase "the other modules' tests"
  # Each fuzz target of each package of each module also runs on 30,000 fresh inputs (FUZZTIME
  # for more; a count, not a duration: a time-bounded run can end in a spurious "context deadline
  # exceeded" on a loaded machine; the checked-in corpus already ran above as plain tests), which
  # keeps the whole suite within 15 minutes on 2 cores (at 50,000 the suite took up to 14.5 minutes
  # as it grew, the fuzz phase 124 to 187 s of it). go test -fuzz takes one target at a time.
  # A package's test binary is built once, instrumented for fuzzing (go test -c -fuzz), and runs
  # each of its targets in turn from the package's directory, as go test would: building it anew
  # for every target took most of this phase's time.
  for moddir in $(go list -m -f '{{.Dir}}'); do
    for dir in $(cd "$moddir" && go list -f '{{.Dir}}' ./...); do
      targets=$(cat "$dir"/*_test.go 2>/dev/null | grep -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/^func //' || true)
      [ -n "$targets" ] || continue
      pkg=".${dir#"$moddir"}"
      importpath=$(cd "$moddir" && go list -f '{{.ImportPath}}' "$pkg")
      bin="$tmp/fuzz.test"
      out=$(cd "$moddir" && go test -c -fuzz . -o "$bin" "$pkg" 2>&1) || { echo "$out"; exit 1; }
      for target in $targets; do
        out=$(cd "$dir" && "$bin" -test.run '^$' -test.fuzz "^${target}\$" -test.fuzztime "${FUZZTIME:-30000x}" \
          -test.fuzzcachedir "$(go env GOCACHE)/fuzz/$importpath" -test.timeout 10m 2>&1) || { echo "$out"; exit 1; }
        rel=${dir#"$PWD"}; rel=${rel#/}
        echo "fuzz ${rel:-.} $target: ok (${FUZZTIME:-30000x})" >&2
      done
      rm -f "$bin"
    done
  done
  phase "the fuzz targets"
fi
