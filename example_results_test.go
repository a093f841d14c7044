package work_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/workqueue/work"
)

// A fan-in step reads what the jobs it waited for produced, in one round trip.
func ExampleJob_DependencyResults() {
	pool := exampleRedisPool()
	ns := exampleNamespace("fan-in")
	defer deleteExampleNamespace(pool, ns)

	enq := work.NewEnqueuer(ns, pool)
	total := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool).
		Job("count_words", func(j *work.Job) error {
			return j.SetResult(map[string]int{"words": len(strings.Fields(j.ArgString("text")))})
		}).
		Job("sum_words", func(j *work.Job) error {
			deps, err := j.DependencyResults(context.Background())
			if err != nil {
				return err
			}
			sum := 0
			for _, d := range deps {
				var r struct{ Words int }
				if err := json.Unmarshal(d.Result, &r); err != nil {
					return err
				}
				sum += r.Words
			}
			total <- fmt.Sprintf("%d dependencies, %d words", len(deps), sum)
			return nil
		})
	wp.Start()
	defer wp.Stop()

	var after []string
	for _, text := range []string{"the quick brown fox", "jumps over the lazy dog"} {
		job, err := enq.EnqueueWith("count_words", work.Q{"text": text}, work.EnqueueOptions{Track: true})
		if err != nil {
			fmt.Println(err)
			return
		}
		after = append(after, job.ID)
	}
	if _, err := enq.EnqueueWith("sum_words", nil, work.EnqueueOptions{After: after}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(waitFor(total))
	// Output:
	// 2 dependencies, 9 words
}

// A caller waits for a tracked job's result: request/response over the queue.
func ExampleClient_WaitJob() {
	pool := exampleRedisPool()
	ns := exampleNamespace("wait")
	defer deleteExampleNamespace(pool, ns)

	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool).
		Job("quote", func(j *work.Job) error {
			return j.SetResult(map[string]interface{}{"sku": j.ArgString("sku"), "cents": 1250})
		})
	wp.Start()
	defer wp.Stop()

	job, err := work.NewEnqueuer(ns, pool).EnqueueWith("quote", work.Q{"sku": "A-1"}, work.EnqueueOptions{Track: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rec, err := work.NewClient(ns, pool).WaitJob(ctx, job.ID)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(rec.State, string(rec.Result))
	// Output:
	// done {"cents":1250,"sku":"A-1"}
}

// A long job reports how far it got; the web UI, `work job` and Client.JobRecord show it.
func ExampleJob_SetProgress() {
	pool := exampleRedisPool()
	ns := exampleNamespace("progress")
	defer deleteExampleNamespace(pool, ns)

	seen := make(chan string, 1)
	client := work.NewClient(ns, pool)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool).
		Job("export", func(j *work.Job) error {
			rows := 1000
			for i := 1; i <= rows; i++ {
				// Cheap: the pool writes the latest progress at most once a second.
				_ = j.SetProgress(float64(i)/float64(rows), fmt.Sprintf("row %d of %d", i, rows))
			}
			// Wait for the pool to write it, as a long job would have.
			for k := 0; k < 300; k++ {
				if rec, err := client.JobRecord(j.ID); err == nil && rec.Progress != nil {
					seen <- fmt.Sprintf("%s %d%% %s", rec.State, rec.Progress.Percent(), rec.Progress.Message)
					return nil
				}
				time.Sleep(10 * time.Millisecond)
			}
			seen <- "not written"
			return nil
		})
	wp.Start()
	defer wp.Stop()
	if _, err := work.NewEnqueuer(ns, pool).EnqueueWith("export", nil, work.EnqueueOptions{Track: true}); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(waitFor(seen))
	// Output:
	// running 100% row 1000 of 1000
}
