// Command demo enqueues a few jobs and processes them with a worker pool.
//
//	go run ./examples/demo                       # on an embedded, in-process Redis
//	go run ./examples/demo -redis 127.0.0.1:6379 # on a real Redis
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

const concurrency = 4

// Context is allocated afresh for every job and passed through the middleware to the handler.
type Context struct {
	worker int
}

var (
	processed atomic.Int64 // jobs that succeeded
	retried   atomic.Int64 // attempts that failed and were retried
	failedYet sync.Map     // job ID -> true once the flaky job has failed

	// slots numbers the jobs running at the same time 1..concurrency, to show which worker runs
	// which job (handlers are not told the worker's ID).
	slots = make(chan int, concurrency)
)

// Log is a middleware: it runs around every job.
func (c *Context) Log(job *work.Job, next work.NextMiddlewareFunc) error {
	c.worker = <-slots
	defer func() { slots <- c.worker }()
	attempt, start := job.Fails+1, time.Now()
	err := next()
	outcome := "ok"
	if err != nil {
		outcome = "failed: " + err.Error()
	}
	if attempt > 1 {
		outcome += fmt.Sprintf(" (attempt %d)", attempt)
	}
	fmt.Printf("worker %d  %-13s id=%s args=%v  %s in %s\n",
		c.worker, job.Name, job.ID, job.Args, outcome, time.Since(start).Round(time.Millisecond))
	return err
}

// SendEmail pretends to send an email.
func (c *Context) SendEmail(job *work.Job) error {
	addr := job.ArgString("address")
	subject := job.ArgString("subject")
	if err := job.ArgError(); err != nil {
		return err
	}
	_, _ = addr, subject
	time.Sleep(time.Duration(10+rand.IntN(40)) * time.Millisecond) // sending the email
	processed.Add(1)
	return nil
}

// SyncAccount fails on its first attempt and succeeds when it is retried.
func (c *Context) SyncAccount(job *work.Job) error {
	if _, failed := failedYet.LoadOrStore(job.ID, true); !failed {
		retried.Add(1)
		return errors.New("upstream timeout")
	}
	processed.Add(1)
	return nil
}

// RebuildIndex is enqueued as a unique job.
func (c *Context) RebuildIndex(job *work.Job) error {
	processed.Add(1)
	return nil
}

func main() {
	addr := flag.String("redis", "", "Redis host:port (default: an embedded, in-process Redis)")
	ns := flag.String("ns", "work-demo", "Redis namespace")
	jobs := flag.Int("jobs", 20, "number of jobs to enqueue (at least 3)")
	flag.Parse()
	*jobs = max(*jobs, 3)
	for i := 1; i <= concurrency; i++ {
		slots <- i
	}

	if *addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer mr.Close()
		*addr = mr.Addr()
		fmt.Println("embedded Redis at", *addr)
	}
	redisPool := &redis.Pool{
		MaxActive: 20,
		MaxIdle:   20,
		Wait:      true,
		Dial:      func() (redis.Conn, error) { return redis.Dial("tcp", *addr) },
	}
	defer redisPool.Close()

	// The worker side.
	pool := work.NewWorkerPool(Context{}, concurrency, *ns, redisPool)
	pool.Middleware((*Context).Log)
	pool.Job("send_email", (*Context).SendEmail)
	pool.JobWithOptions("sync_account", work.JobOptions{
		MaxFails: 3,
		Backoff:  func(job *work.Job) int64 { return 1 }, // retry after 1 s
	}, (*Context).SyncAccount)
	pool.Job("rebuild_index", (*Context).RebuildIndex)

	// The enqueue side, usually in another process.
	enqueuer := work.NewEnqueuer(*ns, redisPool)
	enqueued := 0
	for i := 1; i <= *jobs-2; i++ {
		args := work.Q{"address": fmt.Sprintf("user%d@example.com", i), "subject": "welcome"}
		if _, err := enqueuer.Enqueue("send_email", args); err != nil {
			log.Fatal(err)
		}
		enqueued++
	}
	if _, err := enqueuer.Enqueue("sync_account", work.Q{"account_id": 42}); err != nil {
		log.Fatal(err)
	}
	enqueued++
	for i := 0; i < 2; i++ {
		job, err := enqueuer.EnqueueUnique("rebuild_index", work.Q{"index": "users"})
		if err != nil {
			log.Fatal(err)
		}
		if job == nil {
			fmt.Println("EnqueueUnique(rebuild_index) returned nil: an identical job is already waiting")
			continue
		}
		enqueued++
	}
	fmt.Printf("enqueued %d jobs in namespace %q\n", enqueued, *ns)

	// Start the workers and wait until every job has succeeded.
	pool.Start()
	deadline := time.Now().Add(30 * time.Second)
	for processed.Load() < int64(enqueued) {
		if time.Now().After(deadline) {
			log.Fatalf("timed out: %d of %d jobs processed", processed.Load(), enqueued)
		}
		time.Sleep(10 * time.Millisecond)
	}

	// Stop the pool, giving running jobs at most 5 s to finish.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := pool.StopContext(ctx); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("done: %d jobs processed, %d retried\n", processed.Load(), retried.Load())
}
