.PHONY: test demo lint bench

# Runs the whole test suite on throwaway redis-servers (installed when missing).
test:
	./scripts/test.sh

# Runs the demo on an embedded Redis (REDIS=host:port for a real one).
demo:
	go run ./examples/demo $(if $(REDIS),-redis $(REDIS))

lint:
	gofmt -l . | tee /dev/stderr | (! read)
	go vet ./...
	go run honnef.co/go/tools/cmd/staticcheck@latest ./...

# Benchmarks work against asynq on a throwaway redis-server (see benches/README.md), e.g.
# make bench ARGS="-rounds 3 -workloads burn,latency -markdown".
bench:
	cd benches && go run . $(ARGS)
