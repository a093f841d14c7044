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
//	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", "127.0.0.1:6379") }}
//	enqueuer := work.NewEnqueuer("shop", pool)
//	job, err := enqueuer.Enqueue("ship_order", work.Q{"order_id": 5521, "carrier": "dhl"})
//
// EnqueueBatch pushes many jobs in one atomic round trip. Any process, in any language, can enqueue a
// job by pushing its JSON onto the job's list: see docs/redis-layout.md in the repository.
//
// # Processing jobs
//
// A WorkerPool runs jobs on a fixed number of workers. Its first argument is a struct of your own, the
// context: a new, zero one is allocated for every job and passed through the middleware to the
// handler, so handlers are usually its methods, registered as method expressions:
//
//	type Shop struct{ order *Order }
//
//	func (s *Shop) ShipOrder(job *work.Job) error {
//		carrier := job.ArgString("carrier")
//		if err := job.ArgError(); err != nil {
//			return err // the job is retried later
//		}
//		return book(s.order, carrier)
//	}
//
//	wp := work.NewWorkerPool(Shop{}, 10, "shop", pool)
//	wp.Job("ship_order", (*Shop).ShipOrder)
//	wp.Start()
//
// A handler has one of the forms
//
//	func(*work.Job) error
//	func(*Shop, *work.Job) error
//	func(context.Context, *work.Job) error
//	func(*Shop, context.Context, *work.Job) error
//
// A handler that returns an error or panics is retried with backoff; see JobOptions. Returning
// FailNow(err) sends the job to the dead set at once, and Snooze(d) runs it again after d without
// counting a failure; WorkerPoolOptions.PanicPolicy says what a panic counts as.
//
// # Middleware
//
// Middleware runs around every job of the pool, in the order it was added, and calls next to go on:
//
//	func (s *Shop) LoadOrder(job *work.Job, next work.NextMiddlewareFunc) error {
//		order, err := orders.Get(job.ArgInt64("order_id"))
//		if err != nil {
//			return err
//		}
//		s.order = order
//		return next()
//	}
//
//	wp.Middleware((*Shop).LoadOrder)
//
// Its forms are
//
//	func(*work.Job, work.NextMiddlewareFunc) error
//	func(*Shop, *work.Job, work.NextMiddlewareFunc) error
//	func(context.Context, *work.Job, work.NextMiddlewareContextFunc) error
//	func(*Shop, context.Context, *work.Job, work.NextMiddlewareContextFunc) error
//
// where the last two can hand a derived context.Context (a deadline, a tracing span) down the chain.
// A handler or middleware of any other form panics when it is registered.
//
// # Job options
//
// JobWithOptions sets, per job name, the priority among the pool's queues, how many attempts a job
// gets before it goes to the dead set, the backoff between attempts, limits on how many run at once
// and how many start per period across all pools of the namespace, and a timeout:
//
//	wp.JobWithOptions("export", work.JobOptions{
//		Priority:       10,
//		MaxFails:       3,
//		MaxConcurrency: 2,
//		RateLimit:      work.RateLimit{Jobs: 100, Period: time.Minute},
//		Timeout:        5 * time.Minute,
//		Backoff:        func(job *work.Job) int64 { return 60 * job.Fails }, // seconds
//	}, (*Shop).Export)
//
// # Keyed jobs
//
// When one job name does work for many parties (customers, accounts, domains), each job can carry
// one as its key. A keyed job waits in a queue of its key, and the pools serve the keys that have
// jobs waiting in turn, so a key with a long backlog delays another key's next job by one turn at
// most. A key's jobs start in the order they were enqueued; a job that fails goes to the back of its
// key's queue when its retry is due, or keeps its place with JobOptions.KeyRetryInOrder. Per job
// name, JobOptions.KeyConcurrency caps the jobs of one key
// running at once across all pools, KeyRateLimit their starts per period, and KeyMaxWaiting the jobs
// of one key waiting (an enqueue past it fails with ErrKeyFull):
//
//	enqueuer.EnqueueWith("sync_mailbox", work.Q{"mailbox_id": 7}, work.EnqueueOptions{Key: "customer-42"})
//
//	wp.JobWithOptions("sync_mailbox", work.JobOptions{KeyConcurrency: 2}, (*Shop).SyncMailbox)
//
// The handler finds the key in Job.Key. A key is 1 to MaxKeyLen (200) bytes of UTF-8 without control
// characters or braces; another fails with ErrMalformedKey. BatchJob.Key keys the jobs of
// EnqueueBatch and of batches, ChainStep.Key the steps of a chain, and EnqueueOptions.At and Unique
// schedule a keyed job or make it unique among its key's jobs. Client.SetKeyLimits gives one key
// limits of its own and a weight (more turns), Client.PauseKey stops one key, and Client.Keys and
// KeyStats report the keys with jobs waiting or running. A key with no job waiting or running keeps
// no state in Redis but its overrides, so a job name may have millions of keys.
//
// # Unique and scheduled jobs
//
// EnqueueIn and EnqueueAt schedule a job to run later. EnqueueUnique enqueues a job only when no job of
// the same name and arguments is waiting; it returns a nil job for a duplicate. EnqueueUniqueByKey
// compares a key map instead of the arguments, and a duplicate replaces the arguments of the waiting
// job:
//
//	enqueuer.EnqueueIn("remind_cart", 3600, work.Q{"cart_id": 88}) // in an hour
//	job, err := enqueuer.EnqueueUnique("reindex_catalog", work.Q{"shard": 3})
//	// job == nil && err == nil: an identical job is already waiting
//
// # Debounced jobs and jobs enqueued by ID
//
// EnqueueOptions.Debounce turns many enqueues of one thing into one run: the enqueues of a job name
// and debounce ID (by default the job's key) are a burst whose one pending job runs a window after
// the last enqueue, never later than MaxWait after the first, with the last enqueue's args (or the
// first's, KeepFirst). A job that has started is never replaced; the next enqueue begins a new
// burst. Client.PendingBursts lists the bursts, and Client.RescheduleJob and ReplaceJobArgs edit a
// burst's pending job, or any job waiting in the scheduled or retry set:
//
//	enqueuer.EnqueueWith("reindex", work.Q{"doc": 7}, work.EnqueueOptions{
//		Debounce: &work.Debounce{ID: "doc-7", Window: 5 * time.Second, MaxWait: time.Minute},
//	})
//
// EnqueueOptions.ID gives a job its ID and makes its enqueue idempotent: a second enqueue of the
// same ID, within IDKeep, writes nothing and returns ErrDuplicateJobID. A program that may send a
// job twice (a client retrying after a lost reply, or a relay from another store such as the pgwork
// module's transactional outbox) makes one job of it.
//
// # Grouped jobs
//
// EnqueueOptions.Group puts a job into a group (its job name and a group key) where it waits with the
// group's other jobs; a handler registered with WorkerPool.GroupJob receives up to MaxSize of them,
// oldest first, in one call: when the group reaches MaxSize, MaxDelay after its oldest job arrived,
// or Grace after its newest. A call is a keyed job of its group, so KeyConcurrency bounds a group's
// calls at once and groups take turns. A failed call is retried whole; the handler may instead fail
// single jobs with a GroupError. Client.Groups lists the groups waiting:
//
//	wp.GroupJob("digest", work.GroupOptions{MaxSize: 100, MaxDelay: 5 * time.Minute},
//		func(jobs []*work.Job) error { return sendDigest(jobs) })
//	enqueuer.EnqueueWith("digest", work.Q{"note": 42}, work.EnqueueOptions{Group: "user-7"})
//
// # Periodic jobs
//
// PeriodicallyEnqueue enqueues a job on a cron schedule, seconds first as in gocraft/work. Every pool of the
// namespace may declare it; each run is enqueued once:
//
//	wp.PeriodicallyEnqueue("0 */15 * * * *", "sync_stock") // second 0 of every 15th minute
//	wp.Job("sync_stock", (*Shop).SyncStock)
//
// # Schedules
//
// A schedule is a periodic job set at run time rather than declared in code: a job name, args and
// key to enqueue on a cron spec (the syntax of PeriodicallyEnqueue) in an IANA time zone, stored in
// Redis under an ID of the caller's choosing, so a service can keep one per customer, millions of
// them. Client.SetSchedule creates or replaces one atomically, and setting it again unchanged (at
// every deploy) changes nothing; any live pool of the namespace enqueues its ticks, each tick once,
// whatever the number of pools and crashes, never before its time. The jobs carry Job.ScheduleID
// and Job.Tick, a natural idempotency key:
//
//	err := client.SetSchedule(work.Schedule{ID: "report:1234", Spec: "0 0 9 * * MON",
//		Location: "Europe/Berlin", JobName: "send_report", Args: work.Q{"customer": 1234},
//		Key: "customer-1234", Jitter: time.Minute})
//
// Client.Schedules lists them, each with its next and last tick (and the periodic jobs declared in
// code beside them); PauseSchedule, ResumeSchedule, RunScheduleNow and DeleteSchedule act on one.
// While none is due, the pools only read when the earliest is, in the looks they make anyway,
// however many schedules there are. Bad input is refused with sentinel errors (ErrMalformedSpec,
// ErrUnknownLocation...); ParseCron, ParseLocation and the other parsers of parse.go let other
// programs check input as the library does. Cron describes how daylight saving time changes are
// handled, MissedPolicy what becomes of ticks no pool could enqueue in time.
//
// Use PeriodicallyEnqueue for the few jobs a service runs on a clock whatever the data (nightly
// cleanups), declared with the code that handles them; use schedules for periodic work that data
// or users define, that changes while the service runs, or that comes in numbers.
//
// # context.Context and timeouts
//
// A handler that takes a context.Context gets one that is cancelled when the job's JobOptions.Timeout
// passes, when Client.CancelJob names the job (from any process), or when the pool is stopped with
// StopContext and its deadline passes:
//
//	wp.JobWithOptions("export", work.JobOptions{Timeout: time.Minute},
//		func(ctx context.Context, job *work.Job) error {
//			return exportReport(ctx, job.ArgInt64("report_id"))
//		})
//
// # Stopping
//
// Stop waits for the running jobs to finish; jobs fetched but not started go back to the front of
// their queues, and queued jobs stay queued for the next pool.
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
// # Delivery and durability
//
// A job runs at least once. It stays in its pool's in-progress list until its outcome is written, a
// round trip or two after its handler returns, so a process that dies in between makes the job run
// again elsewhere: write handlers that can be repeated.
//
// A job is as safe as Redis keeps it. With appendfsync always in redis.conf, an enqueue Redis has
// acknowledged survives a crash of redis-server. With everysec (the default once the AOF is on) such
// a crash can lose the last second or two of writes, enqueues among them: while a background fsync
// is slow, Redis replies before it writes. Enqueuer.WaitReplicas makes each enqueue wait for
// replicas instead.
//
// # Batches, chains and job records
//
// A batch groups jobs and runs a callback job once they have all ended; members may add more members
// while they run:
//
//	b, jobs, err := enqueuer.EnqueueInBatch(work.BatchOptions{
//		Description: "monthly invoices",
//		OnSuccess:   &work.BatchCallback{Name: "mail_summary"},
//	}, invoices) // []work.BatchJob
//
// A chain runs jobs one after the other, and EnqueueWith makes a job wait for others (tracked jobs) or
// for batches:
//
//	enqueuer.EnqueueChain(work.ChainStep{Name: "fetch_feed"}, work.ChainStep{Name: "render_feed"})
//	enqueuer.EnqueueWith("rebuild_search", nil, work.EnqueueOptions{AfterBatches: []string{b.ID}})
//
// JobOptions.KeepFinished keeps a record of how each job of a name ended, with what its handler
// stored with Job.SetResult; Client.JobRecord reads it in one round trip.
//
// Results flow forward: a job that waited for others (EnqueueOptions.After, or the step before it in
// a chain) reads their records, with their results, in one call and one round trip:
//
//	func (s *Shop) MailSummary(ctx context.Context, job *work.Job) error {
//		deps, err := job.DependencyResults(ctx)
//		if err != nil {
//			return err
//		}
//		for _, d := range deps {
//			// d.State is "done" (or "dead", with RunIfDependencyFails); d.Result is the JSON of its
//			// SetResult.
//		}
//		...
//	}
//
// And a caller can wait for a job's result (request and response over the queue): Client.WaitJob
// blocks until a tracked job has ended and returns its record. The waiters of a Client share one
// pub/sub subscription, so waiting costs Redis no polling:
//
//	job, _ := enqueuer.EnqueueWith("quote", work.Q{"sku": "A-1"}, work.EnqueueOptions{Track: true})
//	rec, err := client.WaitJob(ctx, job.ID) // rec.State "done", rec.Result the quote
//
// # Long jobs
//
// A job may run for hours: its pool's heartbeats go on while it runs, and only a pool whose heartbeats
// stop is reaped. Should a live pool's heartbeats not reach Redis for DeadPoolTimeout (the process
// frozen, say) and other pools reap it, the pool cancels the contexts of the jobs it was running when
// it comes back (their cause is ErrPoolReaped), and writes none of their outcomes: those jobs are
// back in their queues. A handler reports how far it got with Job.SetProgress, as often as it likes
// (the pool writes the latest progress at most once a second); the web UI's job and workers pages, the work
// command and Client.WorkerObservations show it. A job with a record (tracked, or of a name with
// KeepFinished) shows in Client.JobRecord as running, with the attempt, its pool, when it started and
// its progress:
//
//	for i, row := range rows {
//		if err := export(row); err != nil {
//			return err
//		}
//		job.SetProgress(float64(i+1)/float64(len(rows)), "exporting")
//	}
//
// # Client
//
// A Client inspects and manages a namespace: queue lengths and latencies, worker pools and what their
// workers run, the scheduled, retry and dead sets, finding a job by ID, pausing queues and cancelling
// running jobs. The web UI (package webui) and the work command are built on it:
//
//	client := work.NewClient("shop", pool)
//	queues, err := client.Queues()
//	dead, count, err := client.DeadJobs(1)
//	err = client.RetryAllDeadJobs()
//
// # Redis layout
//
// The keys, their types and the job JSON are listed in docs/redis-layout.md in the repository, for
// producers and tools written in other languages.
package work
