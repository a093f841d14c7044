// Command redigo runs a small gocraft/work-style program against the Redis at its first argument:
// a pool with a context struct, middleware and handlers, jobs enqueued plainly, uniquely and
// scheduled, a job name registered after Start, the Client and the web UI's JSON API. The release
// tests build it against every redigo release a gocraft/work user may hold, so that a use of a
// newer redigo API in the library cannot slip in unnoticed. It prints "ok" and exits 0 when every
// job ran.
package main

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/webui"
)

type appContext struct{ through []string }

func main() {
	if err := run(os.Args[1]); err != nil {
		fmt.Fprintln(os.Stderr, "redigo program:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

func run(addr string) error {
	pool := &redis.Pool{MaxActive: 20, MaxIdle: 20, Wait: true, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", addr)
	}}
	defer pool.Close()
	ns := "redigo-compat-" + strconv.FormatInt(time.Now().UnixNano(), 36)
	defer clean(pool, ns)

	var mu sync.Mutex
	ran := map[string]int{}
	done := make(chan string, 16)
	record := func(c *appContext, job *work.Job) error {
		if len(c.through) != 1 || c.through[0] != "mw" {
			return fmt.Errorf("job %s ran without its middleware: %v", job.Name, c.through)
		}
		mu.Lock()
		ran[job.Name]++
		mu.Unlock()
		done <- job.Name
		return nil
	}

	wp := work.NewWorkerPool(appContext{}, 4, ns, pool)
	wp.Middleware(func(c *appContext, job *work.Job, next work.NextMiddlewareFunc) error {
		c.through = append(c.through, "mw")
		return next()
	})
	wp.Job("plain", record)
	wp.JobWithOptions("unique", work.JobOptions{Priority: 5, MaxFails: 2}, record)
	wp.Job("later", record)
	wp.Start()
	defer wp.Stop()
	// Registered on a started pool, as gocraft/work allows.
	wp.Job("added", record)

	enq := work.NewEnqueuer(ns, pool)
	if _, err := enq.Enqueue("plain", work.Q{"n": 1}); err != nil {
		return err
	}
	if _, err := enq.EnqueueUnique("unique", work.Q{"n": 2}); err != nil {
		return err
	}
	if _, err := enq.EnqueueIn("later", 1, work.Q{"n": 3}); err != nil {
		return err
	}
	if _, err := enq.Enqueue("added", nil); err != nil {
		return err
	}
	timeout := time.After(30 * time.Second)
	for seen := 0; seen < 4; seen++ {
		select {
		case <-done:
		case <-timeout:
			mu.Lock()
			defer mu.Unlock()
			return fmt.Errorf("not every job ran within 30s: %v", ran)
		}
	}

	client := work.NewClient(ns, pool)
	hbs, err := client.WorkerPoolHeartbeats()
	if err != nil {
		return err
	}
	if len(hbs) != 1 {
		return fmt.Errorf("%d pool heartbeats, want 1", len(hbs))
	}
	if _, err := client.Queues(); err != nil {
		return err
	}
	rec := httptest.NewRecorder()
	webui.NewServer(ns, pool, "").Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/queues", nil))
	if rec.Code != http.StatusOK {
		return fmt.Errorf("web UI /queues: %d %s", rec.Code, rec.Body.String())
	}
	return nil
}

// clean deletes the keys of the namespace.
func clean(pool *redis.Pool, ns string) {
	c := pool.Get()
	defer c.Close()
	keys, _ := redis.Strings(c.Do("KEYS", ns+":*"))
	for _, k := range keys {
		c.Do("DEL", k)
	}
}
