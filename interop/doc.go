// Package interop holds tests, and nothing else, that run github.com/workqueue/work against the real
// github.com/gocraft/work v0.5.1 on one Redis: jobs enqueued by either library are run by pools of the
// other, failed and crashed jobs are taken over, pools of both libraries share queues, and each
// library's Client reads a namespace the other runs.
//
// It is a module of its own so that the work module does not depend on gocraft/work. Run it with
//
//	cd interop && go test -race ./...
//
// against the redis-server whose address is in WORK_TEST_REDIS (default 127.0.0.1:6379).
package interop
