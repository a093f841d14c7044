.PHONY: test demo lint bench

# Runs the whole test suite on throwaway redis-servers (installed when missing).
test:
	./scripts/test.sh

# Runs the demo (the examples module, through go.work) on an embedded Redis (REDIS=host:port for a
# real one).
demo:
	go run ./examples/demo $(if $(REDIS),-redis $(REDIS))

# gofmt over the repository; go vet and staticcheck in every module of the workspace (go.work).
lint:
	@out=$$(gofmt -l .); if [ -n "$$out" ]; then echo "gofmt would change:" >&2; echo "$$out" >&2; exit 1; fi
	set -e; for d in $$(go list -m -f '{{.Dir}}'); do \
		echo "== $$d" >&2; \
		(cd "$$d" && go vet ./... && go run honnef.co/go/tools/cmd/staticcheck@latest ./...); \
	done

# Benchmarks work against asynq on a throwaway redis-server (see benches/README.md), e.g.
# make bench ARGS="-rounds 3 -workloads burn,latency -markdown".
bench:
	cd benches && go run . $(ARGS)
