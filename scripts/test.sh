#!/usr/bin/env bash
# Runs the whole test suite against real, throwaway redis-server processes.
# Installs redis-server from Debian's packages when it is missing, starts servers on free loopback
# ports, vets and tests every module of the workspace (go.work) with the race detector, runs each
# fuzz target on fresh inputs, and stops the servers whatever happens.
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
scripts/ensure-chromium.sh # for the web UI's browser test
if ! command -v node >/dev/null 2>&1 || ! command -v npm >/dev/null 2>&1; then
  echo "node/npm not found: installing them from Debian's packages (the docs' producer example uses them)" >&2
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq nodejs npm >/dev/null
fi

tmp=$(mktemp -d)
pids=()
cleanup() {
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

start_redis WORK_TEST_REDIS
echo "test redis: $WORK_TEST_REDIS" >&2

go vet ./...
go test -race -count=1 -timeout 12m "$@" ./...
if [ $# -eq 0 ]; then
  # The other modules of the workspace (go.work): ./... stops at a directory with a go.mod of its own.
  scripts/test-modules.sh
  # Each fuzz target of each package of each module also runs on 50,000 fresh inputs (FUZZTIME
  # for more; a count, not a duration: a time-bounded run can end in a spurious "context deadline
  # exceeded" on a loaded machine; the checked-in corpus already ran above as plain tests), which
  # keeps the whole suite within 15 minutes on 2 cores. go test -fuzz takes one target at a time.
  for moddir in $(go list -m -f '{{.Dir}}'); do
    for dir in $(cd "$moddir" && go list -f '{{.Dir}}' ./...); do
      pkg=".${dir#"$moddir"}"
      for target in $(cat "$dir"/*_test.go 2>/dev/null | grep -o '^func Fuzz[A-Za-z0-9_]*' | sed 's/^func //'); do
        out=$(cd "$moddir" && go test -run '^$' -fuzz "^${target}\$" -fuzztime "${FUZZTIME:-50000x}" "$pkg" 2>&1) || { echo "$out"; exit 1; }
        rel=${dir#"$PWD"}; rel=${rel#/}
        echo "fuzz ${rel:-.} $target: ok (${FUZZTIME:-50000x})" >&2
      done
    done
  done
fi
