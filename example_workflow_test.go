package work_test

import (
	"fmt"
	"sync"
	"time"

	"github.com/workqueue/work"
)

// A batch runs its callback once every member has ended; the callback gets the batch's counts.
func ExampleEnqueuer_EnqueueInBatch() {
	pool := exampleRedisPool()
	ns := exampleNamespace("batch-callbacks")
	defer deleteExampleNamespace(pool, ns)

	enq := work.NewEnqueuer(ns, pool)
	done := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool).
		Job("render_page", func(*work.Job) error { return nil }).
		Job("publish_book", func(j *work.Job) error {
			done <- fmt.Sprintf("book %s: %d of %d pages rendered", j.ArgString("book"),
				j.ArgInt64("batch_done"), j.ArgInt64("batch_total"))
			return nil
		})
	wp.Start()
	defer wp.Stop()

	pages := make([]work.BatchJob, 12)
	for i := range pages {
		pages[i] = work.BatchJob{Name: "render_page", Args: work.Q{"page": i + 1}}
	}
	_, _, err := enq.EnqueueInBatch(work.BatchOptions{
		Description: "render the manual",
		OnSuccess:   &work.BatchCallback{Name: "publish_book", Args: work.Q{"book": "manual"}},
	}, pages)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(<-done)
	// Output:
	// book manual: 12 of 12 pages rendered
}

// A member adds jobs to its own batch; the batch completes once they have ended too.
func ExampleBatch_Add() {
	pool := exampleRedisPool()
	ns := exampleNamespace("batch-fan-out")
	defer deleteExampleNamespace(pool, ns)

	enq := work.NewEnqueuer(ns, pool)
	done := make(chan int64, 1)
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool).
		Job("crawl_site", func(j *work.Job) error {
			// Each site found to have three pages fans out one job per page into the same batch.
			var pages []work.BatchJob
			for i := 0; i < 3; i++ {
				pages = append(pages, work.BatchJob{Name: "crawl_page", Args: work.Q{"site": j.ArgString("site"), "page": i}})
			}
			_, err := enq.OpenBatch(j.Batch).Add(pages...)
			return err
		}).
		Job("crawl_page", func(*work.Job) error { return nil }).
		Job("crawl_report", func(j *work.Job) error { done <- j.ArgInt64("batch_total"); return nil })
	wp.Start()
	defer wp.Stop()

	b, err := enq.NewBatch(work.BatchOptions{OnComplete: &work.BatchCallback{Name: "crawl_report"}})
	if err != nil {
		fmt.Println(err)
		return
	}
	if _, err := b.Add(work.BatchJob{Name: "crawl_site", Args: work.Q{"site": "a.example"}},
		work.BatchJob{Name: "crawl_site", Args: work.Q{"site": "b.example"}}); err != nil {
		fmt.Println(err)
		return
	}
	if err := b.Close(); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("jobs in the batch:", <-done)
	// Output:
	// jobs in the batch: 8
}

// A chain runs its steps one after the other; a step that dies stops the rest.
func ExampleEnqueuer_EnqueueChain() {
	pool := exampleRedisPool()
	ns := exampleNamespace("chain")
	defer deleteExampleNamespace(pool, ns)

	var mu sync.Mutex
	var steps []string
	all := make(chan struct{})
	step := func(j *work.Job) error {
		mu.Lock()
		defer mu.Unlock()
		steps = append(steps, j.Name)
		if len(steps) == 3 {
			close(all)
		}
		return nil
	}
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool).
		Job("download", step).Job("transcode", step).Job("notify", step)
	wp.Start()
	defer wp.Stop()

	_, err := work.NewEnqueuer(ns, pool).EnqueueChain(
		work.ChainStep{Name: "download", Args: work.Q{"url": "https://example.com/v.mp4"}},
		work.ChainStep{Name: "transcode"},
		work.ChainStep{Name: "notify"},
	)
	if err != nil {
		fmt.Println(err)
		return
	}
	<-all
	fmt.Println(steps)
	// Output:
	// [download transcode notify]
}

// A job waits for another job and for a batch.
func ExampleEnqueuer_EnqueueWith() {
	pool := exampleRedisPool()
	ns := exampleNamespace("after")
	defer deleteExampleNamespace(pool, ns)

	enq := work.NewEnqueuer(ns, pool)
	ran := make(chan string, 4)
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool).
		Job("import_users", func(*work.Job) error { ran <- "import_users"; return nil }).
		Job("import_orders", func(*work.Job) error { ran <- "import_orders"; return nil }).
		Job("rebuild_index", func(*work.Job) error { ran <- "rebuild_index"; return nil })

	users, _ := enq.EnqueueWith("import_users", nil, work.EnqueueOptions{Track: true})
	orders, _, _ := enq.EnqueueInBatch(work.BatchOptions{}, []work.BatchJob{{Name: "import_orders"}})
	_, err := enq.EnqueueWith("rebuild_index", nil, work.EnqueueOptions{
		After:        []string{users.ID},
		AfterBatches: []string{orders.ID},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	wp.Start()
	defer wp.Stop()
	<-ran
	<-ran
	fmt.Println("last:", <-ran)
	// Output:
	// last: rebuild_index
}

// A pool that keeps records of a job name answers "how did job X end?" in one round trip, with the
// result its handler set.
func ExampleClient_JobRecord() {
	pool := exampleRedisPool()
	ns := exampleNamespace("records")
	defer deleteExampleNamespace(pool, ns)

	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool).
		JobWithOptions("invoice", work.JobOptions{KeepFinished: 24 * time.Hour}, func(j *work.Job) error {
			return j.SetResult(map[string]interface{}{"number": "INV-0042", "cents": 1999})
		})
	wp.Start()
	job, _ := work.NewEnqueuer(ns, pool).Enqueue("invoice", work.Q{"order": 42})
	wp.Drain()
	wp.Stop()

	client := work.NewClient(ns, pool)
	var rec *work.JobRecord
	for i := 0; i < 100; i++ { // the record is written with the job's acknowledgement
		if r, err := client.JobRecord(job.ID); err == nil {
			rec = r
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if rec == nil {
		fmt.Println("no record")
		return
	}
	fmt.Println(rec.State, rec.Attempts, string(rec.Result))
	// Output:
	// done 1 {"cents":1999,"number":"INV-0042"}
}
