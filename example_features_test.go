package work_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work"
)

// Runnable examples, one per feature. Each uses its own namespace on the Redis at $WORK_TEST_REDIS.

func ExampleEnqueuer_EnqueueIn() {
	pool := exampleRedisPool()
	ns := exampleNamespace("enqueue-in")
	defer deleteExampleNamespace(pool, ns)

	job, err := work.NewEnqueuer(ns, pool).EnqueueIn("send_reminder", 3600, work.Q{"user_id": 7})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("runs in an hour:", job.RunAt-job.EnqueuedAt == 3600)

	scheduled, count, _ := work.NewClient(ns, pool).ScheduledJobs(1)
	fmt.Println(count, scheduled[0].Name, scheduled[0].ArgInt64("user_id"))
	// Output:
	// runs in an hour: true
	// 1 send_reminder 7
}

func ExampleEnqueuer_EnqueueBatch() {
	pool := exampleRedisPool()
	ns := exampleNamespace("batch")
	defer deleteExampleNamespace(pool, ns)

	// One round trip, all or nothing.
	jobs, err := work.NewEnqueuer(ns, pool).EnqueueBatch([]work.BatchJob{
		{Name: "resize", Args: work.Q{"image": "a.png"}},
		{Name: "resize", Args: work.Q{"image": "b.png"}},
		{Name: "notify", Args: work.Q{"user": 1}},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	queues, _ := work.NewClient(ns, pool).Queues()
	for _, q := range queues {
		fmt.Println(q.JobName, q.Count)
	}
	fmt.Println(len(jobs), "jobs")
	// Output:
	// notify 1
	// resize 2
	// 3 jobs
}

func ExampleWorkerPool_PeriodicallyEnqueue() {
	pool := exampleRedisPool()
	ns := exampleNamespace("periodic")
	defer deleteExampleNamespace(pool, ns)

	ran := make(chan string, 10)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	// Seconds first, as in gocraft/work: every second. "0 */5 * * *" would be every five minutes.
	wp.PeriodicallyEnqueue("* * * * * *", "tick")
	wp.Job("tick", func(job *work.Job) error {
		ran <- job.Name
		return nil
	})
	wp.Start()
	defer wp.Stop()
	fmt.Println(waitFor(ran), "ran")
	// Output: tick ran
}

func ExampleJobOptions_retriesAndBackoff() {
	pool := exampleRedisPool()
	ns := exampleNamespace("retries")
	defer deleteExampleNamespace(pool, ns)

	attempts := make(chan string, 3)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.JobWithOptions("flaky", work.JobOptions{
		MaxFails: 3,                                      // three attempts, then the dead set
		Backoff:  func(job *work.Job) int64 { return 0 }, // seconds until the next attempt
	}, func(job *work.Job) error {
		attempts <- fmt.Sprintf("attempt %d", job.Fails+1)
		if job.Fails < 1 {
			return errors.New("upstream timeout")
		}
		return nil
	})
	wp.Start()
	defer wp.Stop()
	work.NewEnqueuer(ns, pool).Enqueue("flaky", nil)
	fmt.Println(waitFor(attempts))
	fmt.Println(waitFor(attempts))
	// Output:
	// attempt 1
	// attempt 2
}

func ExampleFailNow() {
	pool := exampleRedisPool()
	ns := exampleNamespace("fail-now")
	defer deleteExampleNamespace(pool, ns)

	errAccountClosed := errors.New("account closed")
	done := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("charge", func(job *work.Job) error {
		defer func() { done <- "ran" }()
		return work.FailNow(errAccountClosed) // no retry: straight to the dead set
	})
	wp.Start()
	work.NewEnqueuer(ns, pool).Enqueue("charge", nil)
	waitFor(done)
	wp.Drain()
	wp.Stop()
	dead, _, _ := work.NewClient(ns, pool).DeadJobs(1)
	fmt.Println(len(dead), dead[0].LastErr)
	// Output: 1 account closed
}

func ExampleSnooze() {
	pool := exampleRedisPool()
	ns := exampleNamespace("snooze")
	defer deleteExampleNamespace(pool, ns)

	var runs atomic.Int64
	done := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("poll_export", func(job *work.Job) error {
		if runs.Add(1) == 1 {
			return work.Snooze(time.Second) // not ready yet: again in a second, no failure counted
		}
		done <- fmt.Sprintf("run %d, fails %d", runs.Load(), job.Fails)
		return nil
	})
	wp.Start()
	defer wp.Stop()
	work.NewEnqueuer(ns, pool).Enqueue("poll_export", nil)
	fmt.Println(waitFor(done))
	// Output: run 2, fails 0
}

func ExampleClient_CancelJob() {
	pool := exampleRedisPool()
	ns := exampleNamespace("cancel")
	defer deleteExampleNamespace(pool, ns)

	started, stopped := make(chan string, 1), make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("export", func(ctx context.Context, job *work.Job) error {
		started <- job.ID
		<-ctx.Done() // a handler that takes a context stops when it is cancelled
		stopped <- fmt.Sprint("stopped: ", context.Cause(ctx))
		return ctx.Err()
	})
	wp.Start()
	defer wp.Stop()
	work.NewEnqueuer(ns, pool).Enqueue("export", nil)
	id := waitFor(started)

	// From any process: the pool running the job cancels its context.
	client := work.NewClient(ns, pool)
	for {
		if n, err := client.CancelJob(id); err != nil || n > 0 {
			break
		}
		time.Sleep(10 * time.Millisecond) // the pool's subscription is still starting
	}
	fmt.Println(waitFor(stopped))
	// Output: stopped: work: job cancelled
}

func ExampleClient_PauseQueue() {
	pool := exampleRedisPool()
	ns := exampleNamespace("pause")
	defer deleteExampleNamespace(pool, ns)

	client := work.NewClient(ns, pool)
	client.PauseQueue("import") // jobs wait in the queue while it is paused
	ran := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("import", func(job *work.Job) error { ran <- "import ran"; return nil })
	wp.Start()
	defer wp.Stop()
	work.NewEnqueuer(ns, pool).Enqueue("import", nil)

	select {
	case <-ran:
		fmt.Println("ran while paused")
	case <-time.After(200 * time.Millisecond):
		fmt.Println("waiting while paused")
	}
	client.UnpauseQueue("import") // wakes the pools at once
	fmt.Println(waitFor(ran))
	// Output:
	// waiting while paused
	// import ran
}

func ExampleJobOptions_maxConcurrency() {
	pool := exampleRedisPool()
	ns := exampleNamespace("max-concurrency")
	defer deleteExampleNamespace(pool, ns)

	var running, most atomic.Int64
	wp := work.NewWorkerPool(struct{}{}, 8, ns, pool)
	// At most two at once across every pool of the namespace, whatever their concurrency.
	wp.JobWithOptions("report", work.JobOptions{MaxConcurrency: 2}, func(job *work.Job) error {
		n := running.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return nil
	})
	batch := make([]work.BatchJob, 10)
	for i := range batch {
		batch[i] = work.BatchJob{Name: "report"}
	}
	work.NewEnqueuer(ns, pool).EnqueueBatch(batch)
	wp.Start()
	wp.Drain()
	wp.Stop()
	fmt.Println("most at once:", most.Load())
	// Output: most at once: 2
}

func ExampleJobOptions_rateLimit() {
	pool := exampleRedisPool()
	ns := exampleNamespace("rate-limit")
	defer deleteExampleNamespace(pool, ns)

	var ran atomic.Int64
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool)
	// At most 5 starts per hour across all pools (a burst of 5, then one every 12 minutes); the
	// others wait in the queue without counting a failure.
	wp.JobWithOptions("call_api", work.JobOptions{RateLimit: work.RateLimit{Jobs: 5, Period: time.Hour}},
		func(job *work.Job) error { ran.Add(1); return nil })
	batch := make([]work.BatchJob, 20)
	for i := range batch {
		batch[i] = work.BatchJob{Name: "call_api"}
	}
	work.NewEnqueuer(ns, pool).EnqueueBatch(batch)
	wp.Start()
	defer wp.Stop()
	for i := 0; i < 3000 && ran.Load() < 5; i++ {
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // room for a sixth start, which must not come
	fmt.Println("started:", ran.Load())
	// Output: started: 5
}

func ExampleJobOptions_keyConcurrency() {
	pool := exampleRedisPool()
	ns := exampleNamespace("key-concurrency")
	defer deleteExampleNamespace(pool, ns)

	// Each job carries its customer as its key.
	enqueuer := work.NewEnqueuer(ns, pool)
	for n := 1; n <= 4; n++ {
		for _, customer := range []string{"acme", "globex"} {
			_, err := enqueuer.EnqueueWith("sync_mailbox", work.Q{"n": n}, work.EnqueueOptions{Key: customer})
			if err != nil {
				fmt.Println(err)
				return
			}
		}
	}

	var mu sync.Mutex
	started := map[string][]int64{} // key -> the n of its jobs, in the order they started
	running := map[string]int{}
	most := map[string]int{}
	wp := work.NewWorkerPool(struct{}{}, 8, ns, pool)
	// One job of a customer at a time, across all pools: a customer's jobs run one after another,
	// in the order they were enqueued, while other customers' run beside them.
	wp.JobWithOptions("sync_mailbox", work.JobOptions{KeyConcurrency: 1}, func(job *work.Job) error {
		mu.Lock()
		started[job.Key] = append(started[job.Key], job.ArgInt64("n"))
		running[job.Key]++
		most[job.Key] = max(most[job.Key], running[job.Key])
		mu.Unlock()
		time.Sleep(10 * time.Millisecond)
		mu.Lock()
		running[job.Key]--
		mu.Unlock()
		return nil
	})
	wp.Start()
	wp.Drain()
	wp.Stop()
	for _, customer := range []string{"acme", "globex"} {
		fmt.Printf("%s: jobs %v, at most %d at once\n", customer, started[customer], most[customer])
	}
	// Output:
	// acme: jobs [1 2 3 4], at most 1 at once
	// globex: jobs [1 2 3 4], at most 1 at once
}

func ExampleJob_Checkin() {
	pool := exampleRedisPool()
	ns := exampleNamespace("checkin")
	defer deleteExampleNamespace(pool, ns)

	seen := make(chan string, 1)
	release := make(chan struct{})
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("import", func(job *work.Job) error {
		job.Checkin("row 500 of 1000") // shown by Client.WorkerObservations and the web UI
		<-release
		return nil
	})
	wp.Start()
	defer wp.Stop()
	defer close(release)
	work.NewEnqueuer(ns, pool).Enqueue("import", nil)

	client := work.NewClient(ns, pool)
	go func() {
		for i := 0; i < 500; i++ { // observations are written once a second
			obs, _ := client.WorkerObservations()
			for _, o := range obs {
				if o.Checkin != "" {
					seen <- o.JobName + ": " + o.Checkin
					return
				}
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	fmt.Println(waitFor(seen))
	// Output: import: row 500 of 1000
}

func ExampleWorkerPoolOptions_deadSetRetention() {
	pool := exampleRedisPool()
	ns := exampleNamespace("retention")
	defer deleteExampleNamespace(pool, ns)

	c := pool.Get()
	for i := 0; i < 30; i++ {
		c.Do("ZADD", ns+":dead", 1000+i, fmt.Sprintf(`{"name":"old","id":"%024d","t":1,"args":null}`, i))
	}
	c.Close()
	// Keep the 10 most recent dead jobs; the default keeps them all, as gocraft/work does.
	wp := work.NewWorkerPoolWithOptions(struct{}{}, 1, ns, pool, work.WorkerPoolOptions{DeadMaxJobs: 10})
	wp.Job("old", func(*work.Job) error { return nil })
	wp.Start()
	client := work.NewClient(ns, pool)
	for i := 0; i < 500; i++ {
		if _, n, _ := client.DeadJobs(1); n == 10 {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	wp.Stop()
	_, count, _ := client.DeadJobs(1)
	trimmed, _ := client.DeadJobsTrimmed()
	fmt.Println(count, "kept,", trimmed, "trimmed")
	// Output: 10 kept, 20 trimmed
}

func ExampleClient_SetSchedule() {
	pool := exampleRedisPool()
	ns := exampleNamespace("schedules")
	defer deleteExampleNamespace(pool, ns)
	client := work.NewClient(ns, pool)

	// A schedule per customer, set while the service runs: Mondays at 9:00 in the customer's zone
	// would be "0 0 9 * * MON"; every second here, for the example's sake.
	err := client.SetSchedule(work.Schedule{ID: "report:1234", Spec: "* * * * * *", Location: "Europe/Berlin",
		JobName: "send_report", Args: work.Q{"customer": 1234}, Key: "customer-1234"})
	if err != nil {
		fmt.Println(err)
		return
	}

	// Any pool of the namespace enqueues the ticks, each once.
	ran := make(chan string, 1)
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp.Job("send_report", func(job *work.Job) error {
		select {
		case ran <- fmt.Sprintf("%s for customer %d (key %s), tick set: %v", job.ScheduleID, job.ArgInt64("customer"), job.Key, job.Tick > 0):
		default:
		}
		return nil
	})
	wp.Start()
	defer wp.Stop()
	fmt.Println(waitFor(ran))

	_ = client.PauseSchedule("report:1234")
	s, _ := client.Schedule("report:1234")
	fmt.Println(s.ID, s.Spec, s.Location, "paused:", s.Paused, "ticked:", s.LastTick > 0)

	// Bad input is refused before anything is written.
	err = client.SetSchedule(work.Schedule{ID: "report:9", Spec: "0 0 9 * * MON", Location: "Europe/Berln", JobName: "send_report"})
	fmt.Println(errors.Is(err, work.ErrUnknownLocation))

	_ = client.DeleteSchedule("report:1234")
	_, err = client.Schedule("report:1234")
	fmt.Println(errors.Is(err, work.ErrScheduleNotFound))
	// Output:
	// report:1234 for customer 1234 (key customer-1234), tick set: true
	// report:1234 * * * * * * Europe/Berlin paused: true ticked: true
	// true
	// true
}

func ExampleDebounce() {
	pool := exampleRedisPool()
	ns := exampleNamespace("debounce")
	defer deleteExampleNamespace(pool, ns)
	enqueuer := work.NewEnqueuer(ns, pool)

	// Forty edits of one document in a burst: one re-index, with the last edit's args, 5 seconds after
	// the last edit and at most a minute after the first.
	d := &work.Debounce{ID: "doc-7", Window: 5 * time.Second, MaxWait: time.Minute}
	for edit := 1; edit <= 40; edit++ {
		if _, err := enqueuer.EnqueueWith("reindex", work.Q{"doc": 7, "edit": edit}, work.EnqueueOptions{Debounce: d}); err != nil {
			fmt.Println(err)
			return
		}
	}
	bursts, _ := work.NewClient(ns, pool).PendingBursts()
	for _, b := range bursts {
		fmt.Println(b.Name, b.ID, b.Enqueues, "enqueues; pending edit", b.Job.ArgInt64("edit"))
	}
	// Output:
	// reindex doc-7 40 enqueues; pending edit 40
}

func ExampleEnqueueOptions_id() {
	pool := exampleRedisPool()
	ns := exampleNamespace("enqueue-id")
	defer deleteExampleNamespace(pool, ns)
	enqueuer := work.NewEnqueuer(ns, pool)

	// The caller makes the ID once; sending the job again (after a lost reply, say) makes no second job.
	id := work.NewJobID()
	for attempt := 1; attempt <= 2; attempt++ {
		_, err := enqueuer.EnqueueWith("charge", work.Q{"order": 42}, work.EnqueueOptions{ID: id})
		fmt.Println("attempt", attempt, "duplicate:", errors.Is(err, work.ErrDuplicateJobID))
	}
	queues, _ := work.NewClient(ns, pool).Queues()
	fmt.Println(queues[0].JobName, queues[0].Count)
	// Output:
	// attempt 1 duplicate: false
	// attempt 2 duplicate: true
	// charge 1
}

func ExampleWorkerPool_GroupJob() {
	pool := exampleRedisPool()
	ns := exampleNamespace("group")
	defer deleteExampleNamespace(pool, ns)

	// One digest per user: up to three notifications a call, or whatever came within five minutes.
	calls := make(chan []*work.Job, 1)
	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.GroupJob("digest", work.GroupOptions{MaxSize: 3, MaxDelay: 5 * time.Minute},
		func(jobs []*work.Job) error {
			calls <- jobs
			return nil
		})
	wp.Start()
	defer wp.Stop()

	enqueuer := work.NewEnqueuer(ns, pool)
	for note := 1; note <= 3; note++ {
		if _, err := enqueuer.EnqueueWith("digest", work.Q{"note": note}, work.EnqueueOptions{Group: "user-7"}); err != nil {
			fmt.Println(err)
			return
		}
	}
	select {
	case jobs := <-calls:
		for _, j := range jobs {
			fmt.Println(j.Group, "note", j.ArgInt64("note"))
		}
	case <-time.After(10 * time.Second):
		fmt.Println("no call")
	}
	// Output:
	// user-7 note 1
	// user-7 note 2
	// user-7 note 3
}
