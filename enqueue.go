package work

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// Enqueuer can enqueue jobs. It is safe for concurrent use: concurrent Enqueue calls share round
// trips and hold at most two of the pool's connections at once.
type Enqueuer struct {
	Namespace string // eg, "myapp-work"
	Pool      *redis.Pool

	// WaitReplicas, when positive, makes every enqueue wait until that many replicas have the job
	// (Redis WAIT), for up to WaitTimeout (zero: 1s); with fewer, the call returns ErrNotReplicated.
	// Use it where an enqueue acknowledged before a primary fails over must not be lost. Keep
	// WaitTimeout below the Redis client's read timeout.
	WaitReplicas int
	WaitTimeout  time.Duration

	// UniqueTTL is how long the lock of a unique job lives when no worker starts the job: past it,
	// an identical job can be enqueued again. Zero means 24 hours.
	UniqueTTL time.Duration

	store *rdb.Store

	mu        sync.RWMutex
	knownJobs map[string]int64 // job name -> when to SADD it to known_jobs again (epoch s)

	// drained remembers, per job name, whether the last push found at most keptUp jobs in the queue
	// (its own included): then workers keep up, and the next push sends its wake-up in the same round
	// trip.
	drained sync.Map // job name -> *atomic.Bool

	// Concurrent Enqueue calls share round trips (see write): calls waiting for their job to be
	// written are pending in pushes, whose mu also guards shared and pushBuf.
	pushes  groupCommit[*pendingPush]
	shared  bool        // the last write carried the jobs of more than one call
	pushBuf []*rdb.Push // lent to one writer at a time
}

// pendingPush is an Enqueue call waiting for its job to be written.
type pendingPush struct {
	rdb.Push
	// done receives nil when the job is written, or handedTurn when the call is to write the
	// pending jobs itself.
	done chan []*pendingPush
}

// handedTurn tells a waiting call that the turn to write is its own: a non-nil empty batch.
var handedTurn = make([]*pendingPush, 0)

var pendingPushes = sync.Pool{New: func() interface{} { return &pendingPush{done: make(chan []*pendingPush, 1)} }}

// knownJobsRefresh is how long an Enqueuer trusts that a job name is in known_jobs.
const knownJobsRefresh = 300

// NewEnqueuer creates a new enqueuer with the specified Redis namespace and Redis pool.
// It panics when pool is nil.
func NewEnqueuer(namespace string, pool *redis.Pool) *Enqueuer {
	if pool == nil {
		panic("work: NewEnqueuer needs a non-nil *redis.Pool")
	}
	e := NewEnqueuerWithBackend(namespace, PoolBackend(pool))
	e.Pool = pool
	return e
}

// NewEnqueuerWithBackend creates an enqueuer that reaches Redis through b (see Backend); its Pool
// field is nil. It panics when b is nil.
func NewEnqueuerWithBackend(namespace string, b Backend) *Enqueuer {
	if b == nil {
		panic("work: NewEnqueuerWithBackend needs a non-nil Backend")
	}
	return &Enqueuer{Namespace: namespace, store: rdb.NewStore(namespace, b), knownJobs: make(map[string]int64)}
}

// EnqueueOptions are the options of Enqueuer.EnqueueWith. The zero value enqueues as Enqueue does.
type EnqueueOptions struct {
	// Key makes the job a keyed job (see keyed.go's overview in the package documentation): it waits
	// in its key's queue and is served in its key's turn, within the per-key limits of its name
	// (JobOptions.KeyConcurrency, KeyRateLimit, KeyMaxWaiting). It keeps its key through retries,
	// scheduling and a retry from the dead set. A key is 1 to MaxKeyLen bytes of UTF-8 without
	// control characters or braces; an enqueue past the key's KeyMaxWaiting fails with ErrKeyFull.
	Key string
	// At schedules the job to run at that time (to the second), as EnqueueAt does.
	At time.Time
	// Unique enqueues the job only when no job of the same name, key and args waits, as
	// EnqueueUnique does; UniqueBy compares that map instead of the args, as EnqueueUniqueByKey
	// does (and implies Unique). EnqueueWith returns a nil job for a duplicate. A unique job cannot
	// have dependencies or a record.
	Unique   bool
	UniqueBy map[string]interface{}

	// After makes the job wait until every job listed (by ID; tracked jobs only) has succeeded; see
	// chain.go's overview of dependencies in the package documentation.
	After []string
	// AfterBatches makes the job wait until every batch listed has completed with no dead member.
	AfterBatches []string
	// RunIfDependencyFails runs the job all the same once its dependencies have ended, even if one
	// of them died. By default a job whose dependency dies goes to the dead set, with the reason,
	// and so do the jobs waiting for it.
	RunIfDependencyFails bool
	// Track gives the job a record from now on, so that other jobs can wait for it and
	// Client.JobRecord tells its state in one round trip. Jobs with dependencies are tracked anyway.
	Track bool
	// Keep is how long the record of a tracked job stays after the job ended. Zero: 24 hours.
	Keep time.Duration

	// ID gives the job this ID (1 to 64 letters, digits, '_', '.' or '-') instead of a new one, and
	// makes the enqueue idempotent by it: while a job enqueued with the same ID is remembered
	// (IDKeep), EnqueueWith writes nothing and returns ErrDuplicateJobID. A program that may send
	// the same job twice, such as a relay from another store or a client retrying after a lost
	// reply, gives each job its ID once (NewJobID) and so makes one job of it. Such an enqueue is a
	// round trip of its own, not shared with concurrent calls.
	ID string
	// IDKeep is how long an ID given in ID is remembered after its enqueue. Zero: 24 hours.
	// Enqueuer.ForgetJobIDs ends it sooner.
	IDKeep time.Duration

	// Debounce makes the enqueue part of a burst that runs once (see Debounce). EnqueueWith then
	// returns the burst's pending job: this one, or with KeepFirst the first one.
	Debounce *Debounce

	// Group enqueues the job into a group of its name: it waits there with the group's other jobs
	// until a handler registered with WorkerPool.GroupJob receives them together, in one call (see
	// GroupOptions). The group key follows a key's rules (1 to MaxKeyLen bytes of UTF-8, no control
	// character or brace); it is the key of the group's calls, so it cannot go with Key, nor with
	// At, Unique, dependencies, Track, ID or Debounce (ErrMalformedGroup).
	Group string
}

// defaultIDKeep is how long an enqueue's ID is remembered when EnqueueOptions.IDKeep is zero.
const defaultIDKeep = 24 * time.Hour

// NewJobID returns a new job ID, of the form every enqueue gives its job, for EnqueueOptions.ID.
func NewJobID() string { return makeIdentifier() }

// CheckEnqueue makes every check of a job that EnqueueWith makes before it writes anything (the
// name, the key, the args, the dependencies' IDs, the ID, and options that cannot go together),
// without a round trip. It returns the error EnqueueWith would return for them, or nil. A program
// that stores jobs to enqueue them later (in its database's transaction, say) refuses a bad job at
// once with it.
func CheckEnqueue(jobName string, args map[string]interface{}, opts EnqueueOptions) error {
	job, _, err := checkEnqueue(jobName, args, opts, !opts.At.IsZero())
	if err != nil {
		return err
	}
	if _, err := job.serialize(); err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedArgs, err)
	}
	return nil
}

// EnqueueDead puts what cannot become a job into the dead set, where it can be seen, deleted, or
// retried once mended: a record under jobName and id (the ID a job would have had; a new one when
// ""), holding raw (the bytes it came as) and reason as its error. A relay from another store calls
// it for an entry it cannot enqueue (a malformed name or args), so that the entry neither blocks
// the ones behind it nor vanishes. Idempotent by id as EnqueueOptions.ID is (ErrDuplicateJobID).
func (e *Enqueuer) EnqueueDead(id, jobName string, raw []byte, reason string) error {
	if id == "" {
		id = NewJobID()
	}
	if err := checkBatchID(id); err != nil {
		return fmt.Errorf("in ID: %w", err)
	}
	now := nowEpochSeconds()
	rec := &Job{Name: jobName, ID: id, EnqueuedAt: now, Fails: 1, LastErr: reason, FailedAt: now, Raw: raw}
	payload, err := rec.serialize()
	if err != nil {
		return err
	}
	mark := rdb.JobIDMark{ID: id, KeepSeconds: int64(defaultIDKeep / time.Second)}
	return e.store.DeadLetterWithID(context.Background(), payload, now, mark)
}

// ForgetJobIDs ends the memory of IDs given to enqueues (EnqueueOptions.ID) before their IDKeep
// runs out: those IDs may be enqueued again. A relay calls it once its source has forgotten the
// jobs it moved, so that the marks do not stay for IDKeep.
func (e *Enqueuer) ForgetJobIDs(ids ...string) error {
	return e.store.ForgetJobIDs(context.Background(), ids)
}

// Enqueue will enqueue the specified job name and arguments. The args param can be nil if no args
// are needed. An idle worker pool picks the job up within milliseconds.
// Example: e.Enqueue("send_email", work.Q{"addr": "test@example.com"})
func (e *Enqueuer) Enqueue(jobName string, args map[string]interface{}) (*Job, error) {
	job, _, err := e.enqueue(jobName, args, EnqueueOptions{}, false, 0)
	return job, err
}

// EnqueueIn enqueues a job in the scheduled job queue for execution in secondsFromNow seconds.
func (e *Enqueuer) EnqueueIn(jobName string, secondsFromNow int64, args map[string]interface{}) (*ScheduledJob, error) {
	return scheduledJob(e.enqueue(jobName, args, EnqueueOptions{}, true, nowEpochSeconds()+secondsFromNow))
}

// EnqueueAt enqueues a job in the scheduled job queue for execution at t (to the second).
func (e *Enqueuer) EnqueueAt(jobName string, t time.Time, args map[string]interface{}) (*ScheduledJob, error) {
	return e.EnqueueIn(jobName, t.Unix()-nowEpochSeconds(), args)
}

// EnqueueUnique enqueues a job unless a job is already enqueued with the same name and arguments.
// The already-enqueued job can be in the normal work queue or in the scheduled job queue. Once a
// worker begins processing a job, another job with the same name and arguments can be enqueued
// again. Jobs in the retry and dead sets don't count against uniqueness. A unique lock lives 24 hours.
// EnqueueUnique returns the job if it was enqueued and (nil, nil) if it was a duplicate.
func (e *Enqueuer) EnqueueUnique(jobName string, args map[string]interface{}) (*Job, error) {
	job, _, err := e.enqueue(jobName, args, EnqueueOptions{Unique: true}, false, 0)
	return job, err
}

// EnqueueUniqueIn enqueues a unique job in the scheduled job queue for execution in secondsFromNow
// seconds. See EnqueueUnique for the semantics of unique jobs.
func (e *Enqueuer) EnqueueUniqueIn(jobName string, secondsFromNow int64, args map[string]interface{}) (*ScheduledJob, error) {
	return scheduledJob(e.enqueue(jobName, args, EnqueueOptions{Unique: true}, true, nowEpochSeconds()+secondsFromNow))
}

// EnqueueUniqueByKey enqueues a job unless a job is already enqueued with the same name and keyMap.
// A duplicate replaces the args of the job already enqueued, so the single run uses the latest args.
// See EnqueueUnique for the other semantics of unique jobs.
func (e *Enqueuer) EnqueueUniqueByKey(jobName string, args map[string]interface{}, keyMap map[string]interface{}) (*Job, error) {
	job, _, err := e.enqueue(jobName, args, EnqueueOptions{Unique: true, UniqueBy: keyMap}, false, 0)
	return job, err
}

// EnqueueUniqueInByKey enqueues a job in the scheduled job queue, unique by keyMap, for execution in
// secondsFromNow seconds. See EnqueueUniqueByKey.
func (e *Enqueuer) EnqueueUniqueInByKey(jobName string, secondsFromNow int64, args map[string]interface{}, keyMap map[string]interface{}) (*ScheduledJob, error) {
	opts := EnqueueOptions{Unique: true, UniqueBy: keyMap}
	return scheduledJob(e.enqueue(jobName, args, opts, true, nowEpochSeconds()+secondsFromNow))
}

// EnqueueWith enqueues a job with options: a key, a time to run at, uniqueness, dependencies on
// other jobs or batches, or a record. A job whose dependencies have all succeeded already is queued
// at once. The returned job's ID is what later jobs name in After.
func (e *Enqueuer) EnqueueWith(jobName string, args map[string]interface{}, opts EnqueueOptions) (*Job, error) {
	var runAt int64
	if !opts.At.IsZero() {
		runAt = opts.At.Unix()
	}
	job, _, err := e.enqueue(jobName, args, opts, !opts.At.IsZero(), runAt)
	return job, err
}

// scheduledJob turns enqueue's answer into what EnqueueIn and its kin return.
func scheduledJob(job *Job, runAt int64, err error) (*ScheduledJob, error) {
	if job == nil {
		return nil, err
	}
	return &ScheduledJob{RunAt: runAt, Job: job}, err
}

// enqueue is the one path of every single-job enqueue, top to bottom: it checks the job (its name
// here, its key in keyed.go, its dependencies in chain.go), makes it, then hands it to the one step
// its options call for, which encodes and writes it: a unique job's (below), a job that waits for
// others (chain.go), a scheduled job's (into the scheduled set at runAt), or a plain push. It returns
// the job (nil for a unique duplicate) and when a scheduled job runs.
func (e *Enqueuer) enqueue(jobName string, args map[string]interface{}, opts EnqueueOptions, scheduled bool, runAt int64) (*Job, int64, error) {
	job, deps, err := checkEnqueue(jobName, args, opts, scheduled)
	if err != nil {
		return nil, 0, err
	}
	var mark *rdb.JobIDMark
	if opts.ID != "" {
		keep := defaultIDKeep
		if opts.IDKeep > 0 {
			keep = opts.IDKeep
		}
		mark = &rdb.JobIDMark{ID: opts.ID, KeepSeconds: max(int64((keep+time.Second-1)/time.Second), 1)}
	}
	switch {
	case opts.Group != "":
		return e.enqueueGrouped(job, mark)
	case opts.Debounce != nil:
		return e.enqueueDebounced(job, opts.Debounce, mark)
	case opts.Unique || opts.UniqueBy != nil:
		return e.enqueueUnique(job, opts.UniqueBy, scheduled, runAt, mark)
	case len(deps) > 0 || opts.Track:
		jobs, err := e.enqueueAfter([]*Job{job}, deps, opts, mark)
		if err != nil {
			return nil, 0, err
		}
		return jobs[0], 0, nil
	case scheduled:
		return e.schedule(job, runAt, mark)
	}
	raw, err := job.serialize()
	if err != nil {
		return nil, 0, err
	}
	if mark != nil {
		job, err = e.pushWithID(job, raw, *mark)
		return job, 0, err
	}
	job, err = e.push(job, raw)
	return job, 0, err
}

// checkEnqueue makes every check of an enqueue that needs no round trip, and the job (with its ID:
// opts.ID, or a new one) and its dependencies.
func checkEnqueue(jobName string, args map[string]interface{}, opts EnqueueOptions, scheduled bool) (*Job, []rdb.Dep, error) {
	if opts.Group != "" {
		if err := checkGroupEnqueue(opts, scheduled); err != nil {
			return nil, nil, err
		}
	}
	job, err := newCheckedJob(jobName, args, opts.Key)
	if err != nil {
		return nil, nil, err
	}
	job.Group = opts.Group
	if opts.ID != "" {
		if err := checkBatchID(opts.ID); err != nil {
			return nil, nil, fmt.Errorf("in ID: %w", err)
		}
		job.ID = opts.ID
	}
	if opts.IDKeep < 0 {
		return nil, nil, fmt.Errorf("work: IDKeep %v is negative", opts.IDKeep)
	}
	if opts.Debounce != nil {
		if err := opts.Debounce.check(opts); err != nil {
			return nil, nil, err
		}
	}
	deps, err := opts.dependencies()
	if err != nil {
		return nil, nil, err
	}
	waits := len(deps) > 0 || opts.Track
	unique := opts.Unique || opts.UniqueBy != nil
	switch {
	case unique && waits:
		return nil, nil, errors.New("work: a unique job cannot have dependencies or a record")
	case scheduled && waits:
		return nil, nil, errors.New("work: a scheduled job cannot have dependencies or a record")
	}
	return job, deps, nil
}

// newCheckedJob makes a new job of a name and args, keyed unless key is "", after checking that a
// job may have that name and key.
func newCheckedJob(jobName string, args map[string]interface{}, key string) (*Job, error) {
	if err := checkJobName(jobName); err != nil {
		return nil, err
	}
	if key != "" {
		if err := checkKey(key); err != nil {
			return nil, err
		}
	}
	job := newJob(jobName, args)
	job.Key = key
	return job, nil
}

func newJob(jobName string, args map[string]interface{}) *Job {
	return &Job{Name: jobName, ID: makeIdentifier(), EnqueuedAt: nowEpochSeconds(), Args: args}
}

// enqueueUnique is the step of a unique job (into the scheduled set at runAt when scheduled), unique
// by keyMap when it is non-nil, else by its args; a keyed job's lock holds its key (keyed.go).
func (e *Enqueuer) enqueueUnique(job *Job, keyMap map[string]interface{}, scheduled bool, runAt int64, mark *rdb.JobIDMark) (*Job, int64, error) {
	byKey := keyMap != nil
	if !byKey {
		keyMap = job.Args
	}
	uniqueKey, err := e.store.UniqueLock(job.Name, keyMap, job.Key)
	if err != nil {
		return nil, 0, err
	}
	job.Unique = true
	job.UniqueKey = uniqueKey
	raw, err := job.serialize()
	if err != nil {
		return nil, 0, err
	}
	lockValue := []byte("1")
	if byKey {
		lockValue = raw
	}
	if !scheduled {
		runAt = 0
	}
	ttl := int64(rdb.UniqueTTLSeconds)
	if e.UniqueTTL > 0 {
		ttl = max(int64((e.UniqueTTL+time.Second-1)/time.Second), 1)
	}
	ok, err := e.store.EnqueueUnique(context.Background(), e.replicaWait(), job.Name, job.Key, job.UniqueKey, raw, lockValue, runAt, ttl, mark)
	if err != nil || !ok {
		return nil, 0, err
	}
	return job, runAt, nil
}

// schedule is the step of a scheduled job: into the scheduled set, due at runAt.
func (e *Enqueuer) schedule(job *Job, runAt int64, mark *rdb.JobIDMark) (*Job, int64, error) {
	raw, err := job.serialize()
	if err != nil {
		return nil, 0, err
	}
	if mark != nil {
		if err := e.store.EnqueueOneWithID(context.Background(), e.replicaWait(), job.Name, runAt, raw, *mark); err != nil {
			return nil, 0, err
		}
		return job, runAt, nil
	}
	if err := e.store.Schedule(context.Background(), e.replicaWait(), job.Name, runAt, raw, e.needsKnown(job.Name)); err != nil {
		e.forgetKnown(job.Name)
		return nil, 0, err
	}
	return job, runAt, nil
}

// push is the step of a plain job: it writes the encoded job to its queue (its key's, for a keyed
// job), sharing round trips with concurrent calls (see write).
func (e *Enqueuer) push(job *Job, raw []byte) (*Job, error) {
	jobName := job.Name
	if job.Key != "" {
		p := pendingPushes.Get().(*pendingPush)
		p.Push = rdb.Push{Name: jobName, Key: job.Key, Payload: raw}
		e.write(p)
		err := p.Err
		p.Push = rdb.Push{}
		pendingPushes.Put(p)
		if err != nil {
			return nil, err
		}
		return job, nil
	}
	flag, ok := e.drained.Load(jobName)
	if !ok {
		flag, _ = e.drained.LoadOrStore(jobName, new(atomic.Bool))
	}
	drained := flag.(*atomic.Bool)
	p := pendingPushes.Get().(*pendingPush)
	p.Push = rdb.Push{Name: jobName, Payload: raw, AddKnown: e.needsKnown(jobName), Publish: drained.Load()}
	e.write(p)
	n, err := p.N, p.Err
	p.Push = rdb.Push{}
	pendingPushes.Put(p)
	if err != nil {
		e.forgetKnown(jobName)
		return nil, err
	}
	drained.Store(n <= keptUp)
	return job, nil
}

// pushWithID is the step of a plain job given its ID (EnqueueOptions.ID): a script of its own, which
// writes nothing when a job was enqueued under the ID already.
func (e *Enqueuer) pushWithID(job *Job, raw []byte, mark rdb.JobIDMark) (*Job, error) {
	var err error
	if job.Key != "" {
		p := &rdb.Push{Name: job.Name, Key: job.Key, Payload: raw}
		e.store.PushWithID(context.Background(), e.replicaWait(), p, mark)
		err = p.Err
	} else {
		err = e.store.EnqueueOneWithID(context.Background(), e.replicaWait(), job.Name, 0, raw, mark)
	}
	if err != nil {
		return nil, err
	}
	return job, nil
}

// writeScripted writes a push that runs a script (debounced, grouped): through the shared write,
// so that concurrent enqueues share round trips, or with an ID's mark in a round trip of its own.
func (e *Enqueuer) writeScripted(p *pendingPush, mark *rdb.JobIDMark) {
	if mark != nil {
		e.store.PushWithID(context.Background(), e.replicaWait(), &p.Push, *mark)
		return
	}
	e.write(p)
}

// keptUp is the most jobs a push may find in its queue, its own included, for the next push of that
// name to send its wake-up along. A queue that was one job behind is almost always empty again at
// the next push, under a steady load whose pickup takes about as long as the gap between pushes;
// guessing otherwise costs that push a second round trip for its wake-up (see enqueueMany), and its
// job the time of it.
const keptUp = 2

// write returns once p is written (or failed), in a round trip of its own or shared with other
// calls: a call that finds no write under way writes at once, so one goroutine's Enqueue costs
// what it did without sharing. A call that writes takes every waiting call's job with its own.
func (e *Enqueuer) write(p *pendingPush) {
	g := &e.pushes
	g.mu.Lock()
	var batch []*pendingPush
	if g.writers >= maxPushWriters || (g.writers > 0 && len(g.pending)+1 < secondWriteAt) {
		g.addLocked(p)
		g.mu.Unlock()
		if batch = <-p.done; batch == nil {
			return
		}
		// A writer that finished handed its turn over.
		g.mu.Lock()
	} else {
		g.beginLocked()
	}
	if e.shared {
		// Calls come concurrently, and the callers of the last write are likely on their way
		// back with their next jobs: a yield lets them queue those for this round trip rather
		// than the next (from 10 goroutines it halves the round trips per job). A lone caller
		// never yields.
		g.mu.Unlock()
		runtime.Gosched()
		g.mu.Lock()
	}
	g.addLocked(p) // only now: a turn handed over goes to a call that waits, never to p
	batch = g.takeLocked()
	e.shared = len(batch) > 1
	pushes := e.pushBuf[:0]
	e.pushBuf = nil
	g.mu.Unlock()

	for _, q := range batch {
		pushes = append(pushes, &q.Push)
	}
	e.store.EnqueueMany(context.Background(), e.replicaWait(), pushes)
	clear(pushes)
	for _, q := range batch {
		if q != p {
			q.done <- nil
		}
	}

	g.putAwayLock(batch)
	e.pushBuf = pushes[:0]
	if g.endLocked() {
		// Hand the turn over to the first waiting call rather than keep this caller. The others
		// stay pending until it writes, so that calls arriving meanwhile count them and start a
		// second write when enough wait (secondWriteAt).
		next := g.takeFirstLocked()
		g.mu.Unlock()
		next.done <- handedTurn
		return
	}
	g.mu.Unlock()
}

// A second write may go out while one is under way, on a connection of its own, once it carries
// secondWriteAt jobs: its callers need not wait for a round trip they have no part in, and a write
// of that many jobs is worth its system calls (from 10 goroutines this raises the rate by about a
// tenth; fewer waiting calls keep waiting, so a few goroutines share as before).
const (
	maxPushWriters = 2
	secondWriteAt  = 4
)

// BatchJob is one job of an EnqueueBatch call.
type BatchJob struct {
	Name string
	Args map[string]interface{}
	// Key makes the job a keyed job; see EnqueueOptions.Key.
	Key string
}

// EnqueueBatch enqueues many jobs in one round trip and atomically: either every job is queued or,
// with an error, none is. Jobs of the same name keep their order. It returns the jobs in the order
// given. Batches of a few hundred to a few thousand jobs are the sweet spot; one call holds Redis for
// the time it takes to push them all.
func (e *Enqueuer) EnqueueBatch(jobs []BatchJob) ([]*Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	out, names, payloads, keyed, err := makeJobs(jobs, "")
	if err != nil {
		return nil, err
	}
	if len(keyed) > 0 {
		// Keyed jobs go to their keys' queues, the others with them in the same script.
		for _, n := range names {
			keyed = append(keyed, rdb.KeyedGroup{Name: n, Payloads: payloads[n]})
		}
		if err := e.store.EnqueueKeyed(context.Background(), e.replicaWait(), keyed); err != nil {
			return nil, err
		}
		return out, nil
	}
	var addKnown []string
	for _, n := range names {
		if e.needsKnown(n) {
			addKnown = append(addKnown, n)
		}
	}
	if err := e.store.EnqueueBatch(context.Background(), e.replicaWait(), names, payloads, addKnown); err != nil {
		for _, n := range addKnown {
			e.forgetKnown(n)
		}
		return nil, err
	}
	return out, nil
}

// makeJobs makes and encodes the jobs of a batch call (members of the batch batchID, unless it is
// ""): it returns them in the order given, the payloads of jobs without a key grouped by job name,
// names in the order they first appear, and those of keyed jobs grouped by job name and key, in the
// order they first appear.
func makeJobs(jobs []BatchJob, batchID string) (out []*Job, names []string, payloads map[string][]interface{}, keyed []rdb.KeyedGroup, err error) {
	out = make([]*Job, len(jobs))
	payloads = make(map[string][]interface{})
	var group map[[2]string]int // (name, key) -> index in keyed
	for i, bj := range jobs {
		job, err := newCheckedJob(bj.Name, bj.Args, bj.Key)
		if err != nil {
			return nil, nil, nil, nil, err
		}
		job.Batch = batchID
		raw, err := job.serialize()
		if err != nil {
			return nil, nil, nil, nil, err
		}
		out[i] = job
		if bj.Key != "" {
			if group == nil {
				group = make(map[[2]string]int)
			}
			g, ok := group[[2]string{bj.Name, bj.Key}]
			if !ok {
				g = len(keyed)
				group[[2]string{bj.Name, bj.Key}] = g
				keyed = append(keyed, rdb.KeyedGroup{Name: bj.Name, Key: bj.Key})
			}
			keyed[g].Payloads = append(keyed[g].Payloads, raw)
			continue
		}
		if _, seen := payloads[bj.Name]; !seen {
			names = append(names, bj.Name)
		}
		payloads[bj.Name] = append(payloads[bj.Name], raw)
	}
	return out, names, payloads, keyed, nil
}

func (e *Enqueuer) replicaWait() rdb.ReplicaWait {
	if e.WaitReplicas <= 0 {
		return rdb.ReplicaWait{}
	}
	t := e.WaitTimeout
	if t <= 0 {
		t = time.Second
	}
	return rdb.ReplicaWait{Replicas: e.WaitReplicas, TimeoutMs: max(t.Milliseconds(), 1)}
}

// needsKnown reports whether jobName should be added to known_jobs with this enqueue.
func (e *Enqueuer) needsKnown(jobName string) bool {
	now := time.Now().Unix()
	e.mu.RLock()
	until, ok := e.knownJobs[jobName]
	e.mu.RUnlock()
	if ok && now < until {
		return false
	}
	e.mu.Lock()
	e.knownJobs[jobName] = now + knownJobsRefresh
	e.mu.Unlock()
	return true
}

// forgetKnown makes the next enqueue of jobName add it to known_jobs again (after a failed write).
func (e *Enqueuer) forgetKnown(jobName string) {
	e.mu.Lock()
	delete(e.knownJobs, jobName)
	e.mu.Unlock()
}
