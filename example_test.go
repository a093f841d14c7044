package work_test

import (
	"fmt"
	"os"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

// The examples run against the Redis at $WORK_TEST_REDIS (default 127.0.0.1:6379), each in a namespace
// of its own that it deletes when it ends.

func exampleRedisPool() *redis.Pool {
	addr := redistest.Addr()
	return &redis.Pool{
		MaxActive: 10,
		MaxIdle:   10,
		Wait:      true,
		Dial:      func() (redis.Conn, error) { return redis.Dial("tcp", addr) },
	}
}

func exampleNamespace(name string) string {
	return fmt.Sprintf("work-example-%s-%d-%d", name, os.Getpid(), time.Now().UnixNano())
}

// deleteExampleNamespace deletes every key of the namespace and closes the pool.
func deleteExampleNamespace(pool *redis.Pool, ns string) {
	redistest.DeleteNamespace(pool, ns)
	pool.Close()
}

// waitFor returns what ch delivers, or "timed out" after 10 s.
func waitFor(ch <-chan string) string {
	select {
	case s := <-ch:
		return s
	case <-time.After(10 * time.Second):
		return "timed out"
	}
}

func ExampleEnqueuer_Enqueue() {
	pool := exampleRedisPool()
	ns := exampleNamespace("enqueue")
	defer deleteExampleNamespace(pool, ns)

	// The enqueue side.
	enqueuer := work.NewEnqueuer(ns, pool)
	if _, err := enqueuer.Enqueue("send_email", work.Q{"address": "test@example.com", "subject": "hello"}); err != nil {
		fmt.Println(err)
		return
	}

	// The worker side, usually another process.
	done := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.Job("send_email", func(job *work.Job) error {
		addr, subject := job.ArgString("address"), job.ArgString("subject")
		if err := job.ArgError(); err != nil {
			return err
		}
		done <- fmt.Sprintf("sent %q to %s", subject, addr)
		return nil
	})
	wp.Start()
	fmt.Println(waitFor(done))
	wp.Stop()
	// Output: sent "hello" to test@example.com
}

// exampleContext is a context struct: a fresh one goes through the middleware to the handler of
// every job.
type exampleContext struct {
	customerID int64
}

// exportDone is where the export handler reports, for the example to print.
var exportDone = make(chan string, 1)

func (c *exampleContext) FindCustomer(job *work.Job, next work.NextMiddlewareFunc) error {
	c.customerID = job.ArgInt64("customer_id")
	if err := job.ArgError(); err != nil {
		return err
	}
	return next()
}

func (c *exampleContext) Export(job *work.Job) error {
	exportDone <- fmt.Sprintf("exported %s for customer %d", job.ArgString("format"), c.customerID)
	return nil
}

func ExampleWorkerPool_Middleware() {
	pool := exampleRedisPool()
	ns := exampleNamespace("middleware")
	defer deleteExampleNamespace(pool, ns)

	wp := work.NewWorkerPool(exampleContext{}, 4, ns, pool)
	wp.Middleware((*exampleContext).FindCustomer)
	wp.JobWithOptions("export", work.JobOptions{Priority: 10, MaxFails: 1}, (*exampleContext).Export)
	wp.Start()

	enqueuer := work.NewEnqueuer(ns, pool)
	if _, err := enqueuer.Enqueue("export", work.Q{"customer_id": 42, "format": "csv"}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(waitFor(exportDone))
	wp.Stop()
	// Output: exported csv for customer 42
}

func ExampleEnqueuer_EnqueueUnique() {
	pool := exampleRedisPool()
	ns := exampleNamespace("unique")
	defer deleteExampleNamespace(pool, ns)

	enqueuer := work.NewEnqueuer(ns, pool)
	first, err := enqueuer.EnqueueUnique("rebuild_index", work.Q{"index": "users"})
	fmt.Println(first != nil, err)
	// The same name and args while the first job waits: not enqueued, and no error.
	second, err := enqueuer.EnqueueUnique("rebuild_index", work.Q{"index": "users"})
	fmt.Println(second == nil, err)
	// Other args make another job.
	third, err := enqueuer.EnqueueUnique("rebuild_index", work.Q{"index": "orders"})
	fmt.Println(third != nil, err)
	// Output:
	// true <nil>
	// true <nil>
	// true <nil>
}

func ExampleClient_Queues() {
	pool := exampleRedisPool()
	ns := exampleNamespace("queues")
	defer deleteExampleNamespace(pool, ns)

	enqueuer := work.NewEnqueuer(ns, pool)
	for i := 0; i < 3; i++ {
		enqueuer.Enqueue("send_email", work.Q{"n": i})
	}
	enqueuer.Enqueue("export", nil)

	client := work.NewClient(ns, pool)
	queues, err := client.Queues()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, q := range queues {
		fmt.Printf("%s: %d waiting\n", q.JobName, q.Count)
	}
	// Output:
	// export: 1 waiting
	// send_email: 3 waiting
}
