#!/usr/bin/env bash
# Vets and tests, with the race detector, every module of the workspace (go.work) but the root one:
# the integrations (goredis, otelwork, metrics/prometheus, pgwork), the programs (cmd), the demo
# (examples), the gocraft/work interoperability tests (interop), the web UI's browser test
# (webui/browsertest), the release checks (internal/release: the layout of the modules, and a user's
# project fetching them from a module proxy built from this checkout) and the benchmark harness
# (benches: its tests, and a build of the harness, which make bench runs). The tests need the Redis at WORK_TEST_REDIS
# (default 127.0.0.1:6379), as the root module's do, and pgwork's the PostgreSQL at WORK_TEST_POSTGRES
# (skipped without it, but under CI=true); scripts/test.sh starts both and exports them.
# Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."
# Every module of the workspace is tested, whatever GOWORK the environment sets.
export GOWORK="$PWD/go.work"

# Every module of the workspace, relative to the root (internal/release checks that every go.mod
# of the repository is in go.work). A pattern such as ./... never crosses into another module, so
# each is run from its own directory.
for dir in $(go list -m -f '{{.Dir}}'); do
  mod=${dir#"$PWD"}; mod=${mod#/}
  [ -n "$mod" ] || continue # the root module: scripts/test.sh runs it
  echo "== $mod" >&2
  (
    cd "$mod"
    go vet ./...
    go test -race -count=1 -timeout 10m "$@" ./...
    if [ "$mod" = benches ]; then
      go build -o /dev/null . # the harness itself has no tests
    fi
  )
done
