// Command quickstart enqueues a job and runs it with a handler that takes a context.Context.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	flag.Parse()
	rp := &redis.Pool{MaxIdle: 10, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }}
	defer rp.Close()

	// Producer: any process (or language) can push a job; it waits in Redis until a pool runs it.
	enq := work.NewEnqueuer("photos", rp)
	if _, err := enq.Enqueue("make_thumbnail", work.Q{"photo_id": 1042, "size": 256}); err != nil {
		log.Fatal(err)
	}

	// Consumer: 4 workers. The handler's ctx is cancelled once the job has run for 30 s.
	pool := work.NewWorkerPool(struct{}{}, 4, "photos", rp)
	pool.JobWithOptions("make_thumbnail", work.JobOptions{Timeout: 30 * time.Second},
		func(ctx context.Context, job *work.Job) error {
			id, size := job.ArgInt64("photo_id"), job.ArgInt64("size")
			if err := job.ArgError(); err != nil {
				return work.FailNow(err) // bad arguments will not get better: skip the retries
			}
			select {
			case <-time.After(50 * time.Millisecond): // stands in for the real resizing
			case <-ctx.Done():
				return ctx.Err() // any error: retried later, with backoff
			}
			fmt.Printf("photo %d: %dpx thumbnail ready\n", id, size)
			return nil
		})
	pool.Start()
	pool.Drain() // a service would instead run until it is told to shut down
	pool.Stop()
}
