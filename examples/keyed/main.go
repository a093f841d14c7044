// Command keyed runs the jobs of one name for several customers, each job keyed by its customer: a
// customer with a big backlog does not hold up the others, and none runs more than two jobs at once.
//
//	go run ./examples/keyed                       # on an embedded, in-process Redis
//	go run ./examples/keyed -redis 127.0.0.1:6379 # on a real Redis
package main

import (
	"flag"
	"fmt"
	"log"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

func main() {
	addr := flag.String("redis", "", "Redis host:port (default: an embedded, in-process Redis)")
	flag.Parse()
	if *addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer mr.Close()
		*addr = mr.Addr()
	}
	rp := &redis.Pool{MaxIdle: 10, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }}
	defer rp.Close()

	// Producer: one customer asks for 100 reports at once, then three others for 2 each. Without
	// keys, their 6 jobs would wait behind the 100 in the queue of render_report.
	enq := work.NewEnqueuer("reports", rp)
	backlog := make([]work.BatchJob, 100)
	for i := range backlog {
		backlog[i] = work.BatchJob{Name: "render_report", Key: "bigcorp", Args: work.Q{"report": i + 1}}
	}
	if _, err := enq.EnqueueBatch(backlog); err != nil {
		log.Fatal(err)
	}
	for _, customer := range []string{"ada", "bob", "cleo"} {
		for i := 1; i <= 2; i++ {
			_, err := enq.EnqueueWith("render_report", work.Q{"report": i}, work.EnqueueOptions{Key: customer})
			if err != nil {
				log.Fatal(err)
			}
		}
	}

	// Consumer: 4 workers. Customers with jobs waiting are served in turn, and KeyConcurrency keeps
	// any one customer to 2 of the 4 workers.
	var mu sync.Mutex
	done := map[string]int{}
	pool := work.NewWorkerPool(struct{}{}, 4, "reports", rp)
	pool.JobWithOptions("render_report", work.JobOptions{KeyConcurrency: 2}, func(job *work.Job) error {
		time.Sleep(10 * time.Millisecond) // stands in for the real rendering
		mu.Lock()
		defer mu.Unlock()
		done[job.Key]++
		if job.Key != "bigcorp" && done[job.Key] == 2 {
			fmt.Printf("%-7s 2 reports done (bigcorp: %d of 100 so far)\n", job.Key+":", done["bigcorp"])
		}
		return nil
	})
	pool.Start()
	pool.Drain()
	pool.Stop()
	fmt.Printf("bigcorp: %d reports done\n", done["bigcorp"])
}
