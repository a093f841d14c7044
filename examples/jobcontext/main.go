// Command jobcontext runs jobs through a context struct of its own, filled in by middleware and read
// by handlers written as its methods: the gocraft/work style, which work keeps as it was.
package main

import (
	"context"
	"flag"
	"log"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Billing is the per-job state: every job gets a fresh, zero Billing, which the middleware fills in
// before the handler reads it.
type Billing struct {
	tenant string
	start  time.Time
}

// Timer is the outer middleware: it times whatever runs inside it.
func (b *Billing) Timer(job *work.Job, next work.NextMiddlewareFunc) error {
	b.start = time.Now()
	err := next()
	log.Printf("%s %s took %v (err: %v)", job.Name, job.ID, time.Since(b.start).Round(time.Millisecond), err)
	return err
}

// Tenant refuses jobs that do not say whose they are, and remembers the tenant for the handler.
func (b *Billing) Tenant(job *work.Job, next work.NextMiddlewareFunc) error {
	b.tenant = job.ArgString("tenant")
	if err := job.ArgError(); err != nil {
		return err
	}
	return next()
}

// Invoice bills the tenant for one month.
func (b *Billing) Invoice(job *work.Job) error {
	month := job.ArgString("month")
	if err := job.ArgError(); err != nil {
		return err
	}
	log.Printf("invoicing %s for %s", b.tenant, month)
	return nil
}

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "Redis address")
	flag.Parse()
	rp := &redis.Pool{MaxIdle: 10, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }}
	defer rp.Close()

	pool := work.NewWorkerPool(Billing{}, 8, "billing", rp)
	pool.Middleware((*Billing).Timer)  // outermost
	pool.Middleware((*Billing).Tenant) // then this, then the handler
	pool.JobWithOptions("invoice", work.JobOptions{Priority: 10, MaxFails: 3}, (*Billing).Invoice)
	pool.Start()

	_, err := work.NewEnqueuer("billing", rp).Enqueue("invoice", work.Q{"tenant": "acme", "month": "2024-05"})
	if err != nil {
		log.Fatal(err)
	}

	// Serve until SIGINT or SIGTERM; Stop lets the running jobs finish.
	ctx, cancel := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer cancel()
	<-ctx.Done()
	pool.Stop()
}
