package work

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"reflect"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// WorkerPool runs jobs: its workers fetch jobs from Redis, run them through the middleware and the
// job's handler, and record the outcome (done, retry or dead).
type WorkerPool struct {
	workerPoolID string
	concurrency  uint
	namespace    string
	pool         *redis.Pool
	store        *rdb.Store
	contextType  reflect.Type
	opts         WorkerPoolOptions
	logger       *slog.Logger

	// reg sits behind a pointer so that the WorkerPool value holds no lock: gocraft/work's pool held
	// none, and its users copy it (reflect.ValueOf(*wp) to read workerPoolID), which go vet's
	// copylocks check would flag.
	reg *poolRegistry
}

// JobOptions can be passed to JobWithOptions.
type JobOptions struct {
	Priority       uint              // Priority from 1 to 100000; 0 means 1
	MaxFails       uint              // 1: the first failure is final. 0: 4
	SkipDead       bool              // If true, don't send failed jobs to the dead queue when retries are exhausted.
	MaxConcurrency uint              // Max number of jobs of this name in flight across all pools of the namespace. 0: no limit.
	Backoff        BackoffCalculator // If not set, uses the default backoff algorithm.

	// RateLimit, when its Jobs is positive, limits how many jobs of this name start per Period across
	// all pools of the namespace (give every pool the same limit): a burst of Jobs, then one every
	// Period/Jobs. Jobs over the limit wait in their queue, and no retry is counted.
	RateLimit RateLimit

	// Timeout, when positive, cancels the context.Context of a handler that runs longer than it; the
	// handler should then return (a handler that ignores its context is not interrupted). A job whose
	// handler returns after its timeout fails with context.DeadlineExceeded.
	Timeout time.Duration

	// KeepFinished, when positive, makes every job of this name leave a record when it ends (done,
	// dead or dropped; also while it waits for a retry): its outcome, attempts, times, the pool that
	// ran it and the result its handler set (Job.SetResult), kept this long and read in one round
	// trip with Client.JobRecord. Zero keeps no record (tracked jobs have one anyway).
	KeepFinished time.Duration

	// UniqueUntilDone holds the lock of a unique job until the job ends for good (done, dead or
	// dropped) instead of releasing it when a worker starts the job, so that no identical job can be
	// enqueued while the first one runs or waits for a retry. The lock still expires after the
	// Enqueuer's UniqueTTL. With EnqueueUniqueByKey, args stored by duplicates after the job started
	// are not run.
	UniqueUntilDone bool

	// KeyConcurrency, when positive, is the most jobs of one key (EnqueueOptions.Key) of this name
	// that run at once across all pools of the namespace; 1 runs a key's jobs one after another, in
	// the order they were enqueued. Client.SetKeyLimits overrides it for one key. Give every pool the
	// same value. It does not apply to jobs without a key.
	KeyConcurrency uint

	// KeyRateLimit, when its Jobs is positive, limits how many jobs of one key of this name start per
	// Period across all pools, as RateLimit does for the whole name; a key past it waits while other
	// keys go on. Client.SetKeyLimits overrides it for one key.
	KeyRateLimit RateLimit

	// KeyMaxWaiting, when positive, caps the jobs of one key of this name waiting in its queue: an
	// enqueue past it fails with ErrKeyFull and writes nothing. The pool writes it to Redis when it
	// starts, so every enqueuer of the namespace applies it; Client.SetKeyLimits overrides it for one
	// key. Jobs moved to the queue by the pools (due scheduled jobs and retries) are never refused.
	KeyMaxWaiting uint

	// KeyRetryInOrder keeps a key's jobs in order across retries: a keyed job that fails holds its
	// key's concurrency slot while it waits for its retry, and goes back to the front of its key's
	// queue when the retry is due. With KeyConcurrency 1, each job of a key then starts only once the
	// one before it succeeded or died. Without it, a failed job goes to the back of its key's queue
	// when due, and the key's next jobs run meanwhile.
	KeyRetryInOrder bool
}

// RateLimit is a number of jobs per period; see JobOptions.RateLimit.
type RateLimit struct {
	Jobs   uint
	Period time.Duration
}

// WorkerPoolOptions can be passed to NewWorkerPoolWithOptions.
type WorkerPoolOptions struct {
	// SleepBackoffs are the waits, in milliseconds, between looks at Redis while the pool finds no
	// job; the last one repeats. Jobs enqueued through an Enqueuer wake an idle pool at once, and due
	// scheduled and retry jobs move to their queues when due, whatever these say: the backoffs only
	// bound how long a job pushed onto a queue by another program waits. Waits shorter than the last
	// one, or than a second, do not apply (wake-ups make them pointless); while looks find work the
	// pool looks once a second. Each heartbeat is a look too, so with the default an idle pool sends
	// one command every 5s, its heartbeat (see HeartbeatInterval). Default: gocraft/work's 0, 10, 100,
	// 1000, 5000.
	SleepBackoffs []int64

	// Logger receives the pool's log records. Default: slog.Default().
	Logger *slog.Logger

	// HeartbeatInterval is how often the pool tells Redis it is alive. Default: 2s (5s before
	// DeadPoolTimeout's default became 6s). Each heartbeat is one command, which also looks for
	// waiting jobs and reads the heartbeats of two other pools.
	//
	// An idle pool, one that holds no job, beats 2.5 times less often, at most every 5s (every 5s at
	// the default), while the pools whose heartbeats it reads are idle too, and tells its peers to
	// wait that much longer before they take it for dead: it has no job to give back. Taking a job
	// makes it send a heartbeat at once and beat every HeartbeatInterval again; a pool that reads a
	// busy peer's heartbeat beats that often too. A crashed pool's jobs come back as soon as if every
	// pool beat every HeartbeatInterval (3s later if it crashes between taking a job while idle and
	// the heartbeat that taking it sends).
	HeartbeatInterval time.Duration

	// OnOutcome, when set, is called after every run of a job with what became of it: done, retry,
	// dead, dropped or snoozed. It runs on the worker's goroutine before the next job, so keep it
	// quick; metrics exporters use it. A panic in it is recovered and logged.
	OnOutcome func(JobOutcome)

	// PanicPolicy says what happens to a job whose handler or middleware panics. Default: PanicFails,
	// a failure like a returned error.
	PanicPolicy PanicPolicy

	// StrictPriority makes the pool always take jobs from its highest-Priority non-empty queue first,
	// instead of sampling queues at random weighted by Priority (the default). Lower priorities then
	// wait while a higher one has jobs.
	StrictPriority bool

	// DeadMaxJobs, when positive, caps the dead set: the pool trims the oldest dead jobs beyond it,
	// every minute. Zero keeps every dead job (gocraft/work's behaviour): nothing is deleted unless
	// asked. Client.DeadJobsTrimmed counts what was trimmed.
	DeadMaxJobs int

	// DeadMaxAge, when positive, trims dead jobs that died longer ago than it, every minute.
	DeadMaxAge time.Duration

	// DeadPoolTimeout is how long a pool's heartbeat may be missing before other pools put its
	// in-progress jobs back in their queues (without counting a failure). A pool whose heartbeats
	// still arrive is never reaped, however slow. Default: 6s (10s before), so a crashed pool's jobs
	// are back within about 8s at the default HeartbeatInterval. The pool writes it in its heartbeat,
	// and other pools wait at least that long for it whatever their own; they wait at least 10s for a
	// pool that declares none (one of gocraft/work, which heartbeats every 5s, or of an earlier
	// version). A pool of the same machine and PID namespace whose process is proven gone is reaped
	// at once, by a pool that starts or by the next heartbeat of any other.
	//
	// A pool whose heartbeats have not reached Redis for DeadPoolTimeout (a frozen process, a
	// machine that slept, Redis out of reach) starts no job until a heartbeat gets through; if that
	// heartbeat finds the pool was reaped meanwhile, the pool starts none of the jobs it fetched
	// before, cancels the context of those still running and drops their outcomes (another pool may
	// run them now), and goes on with a new heartbeat.
	DeadPoolTimeout time.Duration
}

// BackoffCalculator is a function that returns how many seconds to wait before the next attempt of
// a failed job. job.Fails, job.LastErr and job.FailedAt are already set.
type BackoffCalculator func(job *Job) int64

var defaultSleepBackoffs = []int64{0, 10, 100, 1000, 5000}

const (
	defaultHeartbeatInterval = 2 * time.Second
	defaultDeadPoolTimeout   = 6 * time.Second
	defaultMaxFails          = 4
	maxPriority              = 100000
)

type jobType struct {
	Name string
	JobOptions
	handler     boundHandler
	receivesCtx bool   // the handler has a context.Context parameter
	groupConf   string // the group settings of a GroupJob name (rdb.GroupConf); "" for others
}

// NewWorkerPool creates a new worker pool. ctx should be a struct literal whose type will be used for
// middleware and handlers. concurrency specifies how many workers to spin up: each runs one job at a
// time. A pool of concurrency 0 runs no jobs but still heartbeats, moves due scheduled and retry jobs,
// takes back dead pools' jobs and enqueues its periodic jobs, as gocraft/work's did. It panics when
// pool is nil or when ctx is not a struct.
func NewWorkerPool(ctx interface{}, concurrency uint, namespace string, pool *redis.Pool) *WorkerPool {
	return NewWorkerPoolWithOptions(ctx, concurrency, namespace, pool, WorkerPoolOptions{})
}

// NewWorkerPoolWithOptions creates a new worker pool as per the NewWorkerPool function, but permits
// you to specify additional options such as sleep backoffs.
func NewWorkerPoolWithOptions(ctx interface{}, concurrency uint, namespace string, pool *redis.Pool, opts WorkerPoolOptions) *WorkerPool {
	if pool == nil {
		panic("work: NewWorkerPool needs a non-nil *redis.Pool")
	}
	wp := NewWorkerPoolWithBackend(ctx, concurrency, namespace, PoolBackend(pool), opts)
	wp.pool = pool
	return wp
}

// NewWorkerPoolWithBackend creates a worker pool as per NewWorkerPoolWithOptions that reaches Redis
// through b (see Backend). It panics when b is nil.
func NewWorkerPoolWithBackend(ctx interface{}, concurrency uint, namespace string, b Backend, opts WorkerPoolOptions) *WorkerPool {
	if b == nil {
		panic("work: NewWorkerPoolWithBackend needs a non-nil Backend")
	}
	ctxType := reflect.TypeOf(ctx)
	if ctxType == nil || ctxType.Kind() != reflect.Struct {
		panic(fmt.Sprintf("work: NewWorkerPool needs a struct value as its context (eg, Context{}), got %T", ctx))
	}
	if len(opts.SleepBackoffs) == 0 {
		opts.SleepBackoffs = defaultSleepBackoffs
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.HeartbeatInterval <= 0 {
		opts.HeartbeatInterval = defaultHeartbeatInterval
	}
	if opts.DeadPoolTimeout <= 0 {
		opts.DeadPoolTimeout = defaultDeadPoolTimeout
	}
	if opts.DeadPoolTimeout < opts.HeartbeatInterval+time.Second {
		opts.DeadPoolTimeout = opts.HeartbeatInterval + time.Second
	}
	id := makeIdentifier()
	return &WorkerPool{
		workerPoolID: id,
		concurrency:  concurrency,
		namespace:    namespace,
		store:        rdb.NewStore(namespace, b),
		contextType:  ctxType,
		opts:         opts,
		logger:       opts.Logger.With("pool_id", id),
		reg:          &poolRegistry{jobTypes: make(map[string]*jobType)},
	}
}

// Middleware appends the specified function to the middleware chain. The fn can take one of these
// forms: func(*Job, NextMiddlewareFunc) error, func(*Ctx, *Job, NextMiddlewareFunc) error,
// func(context.Context, *Job, NextMiddlewareContextFunc) error, or
// func(*Ctx, context.Context, *Job, NextMiddlewareContextFunc) error, where Ctx is the type of the
// pool's context. It panics on any other form. Middleware added to a started pool applies to the jobs
// that start after it.
func (wp *WorkerPool) Middleware(fn interface{}) *WorkerPool {
	m, usesCtx := bindMiddleware(wp.contextType, fn)
	wp.reg.mu.Lock()
	defer wp.reg.mu.Unlock()
	wp.reg.middleware = append(wp.reg.middleware, m)
	wp.reg.needsCtx = wp.reg.needsCtx || usesCtx
	wp.reg.mwContext = wp.reg.mwContext || receivesContext(fn)
	wp.reg.changed()
	return wp
}

// Job registers the job name to the specified handler fn. For instance, when workers pull jobs from
// the name "send_email" queue, they'll call the specified handler. fn can take one of these forms:
// func(*Job) error, func(*Ctx, *Job) error, func(context.Context, *Job) error, or
// func(*Ctx, context.Context, *Job) error. It panics on any other form and on an empty name. A job
// name registered on a started pool is served from the pool's next heartbeat, which it sends at once
// (other pools must know of the name before this one holds its jobs, to put them back should it die);
// registering a name again replaces its handler and options for the jobs fetched after it.
func (wp *WorkerPool) Job(name string, fn interface{}) *WorkerPool {
	return wp.JobWithOptions(name, JobOptions{}, fn)
}

// JobWithOptions adds a handler for 'name' jobs as per the Job function, but permits you to specify
// additional options such as a job's priority, retry count, and whether to send dead jobs to the dead
// job queue or trash them. It panics on a Priority above 100000.
func (wp *WorkerPool) JobWithOptions(name string, jobOpts JobOptions, fn interface{}) *WorkerPool {
	return wp.register(name, jobOpts, fn, "")
}

// register is JobWithOptions for a name with the given group settings ("" for none: see GroupJob).
func (wp *WorkerPool) register(name string, jobOpts JobOptions, fn interface{}, groupConf string) *WorkerPool {
	if err := checkJobName(name); err != nil {
		panic(err.Error())
	}
	if jobOpts.Priority > maxPriority {
		panic(fmt.Sprintf("work: job %q has priority %d; the most is %d", name, jobOpts.Priority, maxPriority))
	}
	if jobOpts.Priority == 0 {
		jobOpts.Priority = 1
	}
	if jobOpts.MaxFails == 0 {
		jobOpts.MaxFails = defaultMaxFails
	}
	h, usesCtx := bindHandler(wp.contextType, fn)
	wp.reg.mu.Lock()
	defer wp.reg.mu.Unlock()
	wp.reg.checkKeyedSuffix(name)
	wp.reg.jobTypes[name] = &jobType{Name: name, JobOptions: jobOpts, handler: h, receivesCtx: receivesContext(fn),
		groupConf: groupConf}
	wp.reg.needsCtx = wp.reg.needsCtx || usesCtx
	wp.reg.changed()
	return wp
}

// PeriodicallyEnqueue will periodically enqueue jobName according to the cron-based spec, read as
// gocraft/work reads it: "second minute hour day-of-month month [day-of-week]" (so "0 */5 * * *" is
// every five minutes, at second 0), or a descriptor such as "@every 1m" or "@hourly". Every pool of
// the namespace may register the same spec: each tick is enqueued once. It panics on a bad spec. On
// a started pool the job's ticks are scheduled at once.
func (wp *WorkerPool) PeriodicallyEnqueue(spec string, jobName string) *WorkerPool {
	sched, err := parseCronSpec(spec)
	if err != nil {
		panic(fmt.Sprintf("work: PeriodicallyEnqueue(%q, %q): %v", spec, jobName, err))
	}
	if jobName == "" {
		panic("work: job name is empty")
	}
	wp.reg.mu.Lock()
	defer wp.reg.mu.Unlock()
	wp.reg.periodicJobs = append(wp.reg.periodicJobs, &periodicJob{jobName: jobName, spec: spec, schedule: sched})
	wp.reg.changed()
	return wp
}

// Start starts the workers and associated processes. Calling Start on a started pool does nothing.
func (wp *WorkerPool) Start() {
	wp.reg.mu.Lock()
	defer wp.reg.mu.Unlock()
	if wp.reg.run != nil {
		return
	}
	wp.reg.run = newPoolRun(wp)
	wp.reg.run.start()
}

// Stop stops the workers and associated processes. It waits for running jobs to finish; jobs fetched
// but not yet started go back to the front of their queues, and queued jobs stay queued. Calling
// Stop on a pool that is not started does nothing.
func (wp *WorkerPool) Stop() {
	_ = wp.StopContext(context.Background())
}

// StopContext stops the pool like Stop, but waits for running jobs only until ctx is done. Then it
// cancels the running jobs' contexts, puts those jobs back at the front of their queues (they will
// run again, in this or another pool) and returns ctx.Err(). A handler that ignores its context may
// still be running when StopContext returns; its outcome is then discarded.
func (wp *WorkerPool) StopContext(ctx context.Context) error {
	if wp.reg == nil {
		return nil // a zero WorkerPool was never started, as gocraft/work's Stop assumed
	}
	wp.reg.mu.Lock()
	r := wp.reg.run
	wp.reg.run = nil
	wp.reg.mu.Unlock()
	if r == nil {
		return nil
	}
	return r.stop(ctx)
}

// Drain drains all jobs in the queues of this pool's job names: it returns once the pool finds them
// empty and has finished every job it fetched. It does not wait for scheduled or retry jobs.
// Calling Drain on a pool that is not started, or that has no workers, returns at once.
func (wp *WorkerPool) Drain() {
	if wp.reg == nil || wp.concurrency == 0 {
		return // no workers to wait for, as in gocraft/work
	}
	wp.reg.mu.Lock()
	r := wp.reg.run
	wp.reg.mu.Unlock()
	if r != nil {
		r.drain()
	}
}

// poolRun is a started pool: its goroutines and the channels between them. The data flows
// fetcher -> jobs -> workers -> acker -> outcome queue -> (the acker's write, or the fetcher's next round
// trip).
type poolRun struct {
	wp     *WorkerPool
	poolID string
	// served is the job set the pool serves (see registry.go), full the whole registry, which may
	// hold job names the heartbeat has yet to announce. Both are replaced under the registry's lock.
	served atomic.Pointer[jobSet]
	full   atomic.Pointer[jobSet]

	ctx    context.Context // cancelled when the pool stops: background loops end
	cancel context.CancelFunc
	// jobCtx is the parent of every job's context; cancelled only when a stop deadline passes.
	jobCtx    context.Context
	jobCancel context.CancelFunc

	fetcher     *fetcher
	acker       *acker
	workers     []*worker
	observer    *observer
	heartbeater *heartbeater
	requeuer    *requeuer
	periodic    *periodicEnqueuer
	upkeep      *upkeep
	scheduler   *scheduler

	// alarm is when the pool next looks for due work (the requeuer waits on it), schedulesDue tells
	// the scheduler that schedules are due, and keepHeartbeat leaves the heartbeat at stop for a
	// reaper (outcomes could not be written: jobs may still be held).
	alarm         *dueAlarm
	schedulesDue  chan struct{}
	keepHeartbeat atomic.Bool
	lease         *lease // the heartbeats' right to start jobs (see lease.go)

	abandoned   atomic.Bool // the stop deadline passed: outcomes of running jobs are dropped
	workersDone sync.WaitGroup
	bgDone      sync.WaitGroup
	startedAt   int64
}

// newRateLimit returns l in milliseconds, or the zero rateLimit for none.
func newRateLimit(l RateLimit) rdb.RateLimit {
	if l.Jobs > 0 && l.Period > 0 {
		return rdb.RateLimit{Jobs: l.Jobs, PeriodMs: max(l.Period.Milliseconds(), 1)}
	}
	return rdb.RateLimit{}
}

func newPoolRun(wp *WorkerPool) *poolRun {
	r := &poolRun{wp: wp, poolID: wp.workerPoolID}
	set := wp.reg.newJobSet(r, nil, nil)
	r.served.Store(set)
	r.full.Store(set)
	r.ctx, r.cancel = context.WithCancel(context.Background())
	r.jobCtx, r.jobCancel = context.WithCancel(context.Background())
	r.startedAt = nowEpochSeconds()
	r.alarm, r.schedulesDue = newDueAlarm(), make(chan struct{}, 1)
	store, logger, opts := wp.store, wp.logger, wp.opts
	r.lease = newLease(opts.DeadPoolTimeout)
	// The acker and the fetcher share the pool's room and outcome queue, built here: the fetcher reserves
	// room and carries outcomes along on its fetches, the acker writes the outcomes and frees the
	// room, and neither calls the other.
	room, out := newRoom(int(wp.concurrency)), newOutcomeQueue(logger, r.alarm)
	out.quiet = newQuietWriter(store, logger, r.poolID, out)
	r.acker = newAcker(ackerParams{store: store, logger: logger, poolID: r.poolID, room: room, out: out,
		keepHeartbeat: &r.keepHeartbeat})
	r.fetcher = newFetcher(fetcherParams{ctx: r.ctx, store: store, logger: logger, poolID: r.poolID,
		sleepBackoffs: opts.SleepBackoffs, heartbeatInterval: opts.HeartbeatInterval,
		strictPriority: opts.StrictPriority, served: r.jobs, room: room, out: out, alarm: r.alarm,
		cancelJob: func(id string) { r.cancelJob(id) }, lease: r.lease})
	for i := uint(0); i < wp.concurrency; i++ {
		r.workers = append(r.workers, newWorker(workerParams{ctx: r.ctx, store: wp.store, logger: wp.logger,
			panicPolicy: wp.opts.PanicPolicy, onOutcome: wp.opts.OnOutcome, contextType: wp.contextType,
			served: r.jobs, jobCtx: r.jobCtx, source: r.fetcher, submit: r.acker.submit, abandoned: &r.abandoned}))
	}
	states := make([]*workerState, len(r.workers))
	for i, w := range r.workers {
		states[i] = w.state
	}
	r.observer = newObserver(observerParams{ctx: r.ctx, store: store, logger: logger, poolID: r.poolID, workers: states})
	r.heartbeater = newHeartbeater(heartbeaterParams{ctx: r.ctx, store: store, logger: logger,
		interval: opts.HeartbeatInterval, deadPoolTimeout: opts.DeadPoolTimeout,
		heartbeat: rdb.PoolHeartbeat{PoolID: r.poolID, StartedAt: r.startedAt, Concurrency: wp.concurrency,
			WorkerIDs: r.workerIDs()},
		registry: r.full.Load, register: r.registerNames, served: r.jobs, announced: r.announced,
		looked: r.fetcher.ready.looked, keep: &r.keepHeartbeat, lease: r.lease, reaped: r.reaped,
		holding: func() bool { return out.heldCount() > 0 || out.heldSinceSweep() }})
	r.requeuer = newRequeuer(requeuerParams{ctx: r.ctx, store: store, logger: logger, alarm: r.alarm,
		schedulesDue: r.schedulesDue})
	r.periodic = newPeriodicEnqueuer(periodicEnqueuerParams{ctx: r.ctx, store: store, logger: logger, alarm: r.alarm,
		jobs: func() []*periodicJob { return r.full.Load().periodic }})
	r.upkeep = newUpkeep(upkeepParams{ctx: r.ctx, store: store, logger: logger, deadMaxJobs: opts.DeadMaxJobs,
		deadMaxAge: opts.DeadMaxAge})
	r.scheduler = newScheduler(schedulerParams{ctx: r.ctx, store: store, logger: logger, due: r.schedulesDue,
		alarm: r.alarm})
	return r
}

func (r *poolRun) start() {
	r.heartbeater.beat() // register the job names and the pool before it holds any job
	r.acker.start()
	r.observer.start(&r.bgDone)
	r.heartbeater.start(&r.bgDone)
	r.requeuer.start(&r.bgDone)
	r.periodic.start(&r.bgDone)
	r.upkeep.start(&r.bgDone)
	r.scheduler.start(&r.bgDone)
	for _, w := range r.workers {
		r.workersDone.Add(1)
		go w.loop(&r.workersDone)
	}
	r.fetcher.start()
}

func (r *poolRun) stop(ctx context.Context) error {
	r.fetcher.stop() // no more fetches; jobs not started go back to their queues
	close(r.fetcher.jobs)
	workersDone := make(chan struct{})
	go func() { r.workersDone.Wait(); close(workersDone) }()
	var err error
	select {
	case <-workersDone:
	case <-ctx.Done():
		err = ctx.Err()
		// From now on the outcomes of running jobs are dropped: those jobs are put back in their
		// queues below (a job that ended just before is put back by the pool's final reap), so a
		// handler that returns because its context was cancelled counts no failure.
		r.abandoned.Store(true)
		r.jobCancel()
		for _, w := range r.workers {
			if j := w.current(); j != nil {
				r.acker.submit(abandonOp(j))
			}
		}
	}
	r.acker.close() // returns once everything submitted so far is written
	r.cancel()
	r.bgDone.Wait()
	r.jobCancel()
	r.heartbeater.unregister()
	return err
}

// cancelJob cancels the context of the job with the given ID if one of the pool's workers runs it.
func (r *poolRun) cancelJob(jobID string) bool {
	found := false
	for _, w := range r.workers {
		if w.state.cancelIfRunning(jobID) {
			found = true
		}
	}
	return found
}

// reaped cancels the jobs running since before the pool found itself reaped (see lease): they are
// back in their queues, for another run.
func (r *poolRun) reaped() {
	for _, w := range r.workers {
		if j := w.current(); j != nil && !r.lease.current(j) {
			w.state.cancelRun(j, ErrPoolReaped)
		}
	}
}

func (r *poolRun) drain() { r.fetcher.ready.drain(r.ctx) }

// workerIDs returns the pool's worker IDs, sorted.
func (r *poolRun) workerIDs() []string {
	ids := make([]string, len(r.workers))
	for i, w := range r.workers {
		ids[i] = w.id
	}
	sort.Strings(ids)
	return ids
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "hostname_errored" // what gocraft/work writes, so its web UI and ours read the same
	}
	return h
}
