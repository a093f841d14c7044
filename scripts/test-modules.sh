#!/usr/bin/env bash
# Vets and tests the Go modules that live in subdirectories with a go.mod of their own (the
# gocraft/work interoperability tests, the Prometheus metrics, the OpenTelemetry integration, the
# go-redis adapter), with the race detector; the benchmark harness is only built. Their tests need
# the Redis at WORK_TEST_REDIS (default 127.0.0.1:6379), as the main module's do; scripts/test.sh
# starts one and exports it. Extra arguments go to `go test`.
set -euo pipefail
cd "$(dirname "$0")/.."

# The modules build against this checkout's work module (a replace directive), so a dependency added
# to it must reach their go.sum too: -mod=mod records it instead of failing the build on it.
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-mod=mod"

for mod in interop metrics/prometheus otelwork goredis; do
  [ -f "$mod/go.mod" ] || continue
  echo "== $mod" >&2
  (
    cd "$mod"
    go vet ./...
    go test -race -count=1 -timeout 10m "$@" ./...
  )
done
if [ -f benches/go.mod ]; then
  echo "== benches (build only; run it with make bench)" >&2
  (cd benches && go vet ./... && go build -o /dev/null .)
fi
