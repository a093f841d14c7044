// Package work runs background jobs from a Redis queue with at-least-once delivery.
//
// It is a drop-in successor of github.com/gocraft/work: the same API, the same Redis keys and the same
// job JSON, so code written for gocraft/work compiles after changing its import path, and jobs already
// in Redis keep flowing.
//
// # Enqueueing jobs
//
// An Enqueuer puts jobs on a queue named after the job. Arguments are a map that is stored as JSON:
//
//	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", ":6379") }}
//	enqueuer := work.NewEnqueuer("my_app", pool)
//	job, err := enqueuer.Enqueue("send_email", work.Q{"address": "test@example.com", "subject": "hi"})
//
// Any process, in any language, can enqueue a job by pushing its JSON onto the job's list: see the
// Redis layout in README.md.
//
// # Processing jobs
//
// A WorkerPool runs jobs on a fixed number of workers. Its first argument is a struct of your own, the
// context: a new, zero one is allocated for every job and passed through the middleware to the
// handler, so handlers are usually its methods, registered as method expressions:
//
//	type Context struct{ customerID int64 }
//
//	func (c *Context) SendEmail(job *work.Job) error {
//		addr := job.ArgString("address")
//		if err := job.ArgError(); err != nil {
//			return err // the job is retried later
//		}
//		return sendEmailTo(addr)
//	}
//
//	wp := work.NewWorkerPool(Context{}, 10, "my_app", pool)
//	wp.Job("send_email", (*Context).SendEmail)
//	wp.Start()
//
// A handler has one of the forms
//
//	func(*work.Job) error
//	func(*Context, *work.Job) error
//	func(context.Context, *work.Job) error
//	func(*Context, context.Context, *work.Job) error
//
// A handler that returns an error or panics is retried with backoff; see JobOptions.
//
// # Middleware
//
// Middleware runs around every job of the pool, in the order it was added, and calls next to go on:
//
//	func (c *Context) FindCustomer(job *work.Job, next work.NextMiddlewareFunc) error {
//		c.customerID = job.ArgInt64("customer_id")
//		return next()
//	}
//
//	wp.Middleware((*Context).FindCustomer)
//
// Its forms are
//
//	func(*work.Job, work.NextMiddlewareFunc) error
//	func(*Context, *work.Job, work.NextMiddlewareFunc) error
//	func(context.Context, *work.Job, work.NextMiddlewareContextFunc) error
//	func(*Context, context.Context, *work.Job, work.NextMiddlewareContextFunc) error
//
// where the last two can hand a derived context.Context (a deadline, a tracing span) down the chain.
// A handler or middleware of any other form panics when it is registered.
//
// # Job options
//
// JobWithOptions sets, per job name, the priority among the pool's queues, how many attempts a job
// gets before it goes to the dead set, the backoff between attempts, a limit on how many run at once
// across all pools of the namespace, and a timeout:
//
//	wp.JobWithOptions("export", work.JobOptions{
//		Priority:       10,
//		MaxFails:       3,
//		MaxConcurrency: 2,
//		Timeout:        5 * time.Minute,
//		Backoff:        func(job *work.Job) int64 { return 60 * job.Fails }, // seconds
//	}, (*Context).Export)
//
// # Unique and scheduled jobs
//
// EnqueueIn schedules a job to run later. EnqueueUnique enqueues a job only when no job of the same
// name and arguments is waiting; it returns a nil job for a duplicate. EnqueueUniqueByKey compares a
// key map instead of the arguments, and a duplicate replaces the arguments of the waiting job:
//
//	enqueuer.EnqueueIn("send_reminder", 3600, work.Q{"user_id": 7}) // in an hour
//	job, err := enqueuer.EnqueueUnique("rebuild_index", work.Q{"index": "users"})
//	// job == nil && err == nil: an identical job is already waiting
//
// # Periodic jobs
//
// PeriodicallyEnqueue enqueues a job on a cron schedule, seconds first as in gocraft/work. Every pool of the
// namespace may declare it; each run is enqueued once:
//
//	wp.PeriodicallyEnqueue("0 0 * * * *", "hourly_report") // at minute 0 of every hour
//	wp.Job("hourly_report", (*Context).HourlyReport)
//
// # context.Context and timeouts
//
// A handler that takes a context.Context gets one that is cancelled when the job's JobOptions.Timeout
// passes or when the pool is stopped with StopContext and its deadline passes:
//
//	wp.JobWithOptions("export", work.JobOptions{Timeout: time.Minute},
//		func(ctx context.Context, job *work.Job) error {
//			return exportReport(ctx, job.ArgInt64("report_id"))
//		})
//
// # Stopping
//
// Stop waits for the running jobs to finish; jobs still queued stay queued for the next pool.
// StopContext stops with a deadline: jobs still running when it passes are put back on their queue
// and run again later. Drain waits until the pool's queues are empty.
//
//	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
//	defer cancel()
//	err := wp.StopContext(ctx)
//
// When a process dies without stopping its pool, other pools of the namespace put its unfinished jobs
// back on their queues within seconds.
//
// # Client
//
// A Client inspects and manages a namespace: queue lengths and latencies, worker pools and what their
// workers run, the scheduled, retry and dead sets, and pausing queues:
//
//	client := work.NewClient("my_app", pool)
//	queues, err := client.Queues()
//	dead, count, err := client.DeadJobs(1)
//	err = client.RetryAllDeadJobs()
//
// # Redis layout
//
// The keys, their types and the job JSON are listed in the "Redis layout" section of README.md, for
// producers and tools written in other languages.
package work
