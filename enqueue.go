package work

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
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

	store *store

	mu        sync.RWMutex
	knownJobs map[string]int64 // job name -> when to SADD it to known_jobs again (epoch s)

	// drained remembers, per job name, whether the last push found at most keptUp jobs in the queue
	// (its own included): then workers keep up, and the next push sends its wake-up in the same round
	// trip.
	drained sync.Map // job name -> *atomic.Bool

	// Concurrent Enqueue calls share round trips (group commit): the first caller with nothing under
	// way writes its job; calls arriving meanwhile wait in queued, and the first of them writes them
	// all in one pipeline when the write under way is done, or at once when enough wait (see
	// secondWriteAt).
	pushMu  sync.Mutex
	writers int            // writes under way
	shared  bool           // the last write carried the jobs of more than one call
	queued  []*pendingPush // calls waiting for a turn to write or for their job to be written
	spare   []*pendingPush // a written batch, for reuse as queued
	pushBuf []*push        // lent to one writer at a time
}

// pendingPush is an Enqueue call waiting for its job to be written.
type pendingPush struct {
	push
	done chan bool // receives true when the call is to write the queued jobs itself, false when written
}

var pendingPushes = sync.Pool{New: func() interface{} { return &pendingPush{done: make(chan bool, 1)} }}

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
	return &Enqueuer{Namespace: namespace, store: newStore(namespace, b), knownJobs: make(map[string]int64)}
}

// errEmptyJobName is returned for an empty job name: such a job could never be processed.
var errEmptyJobName = errors.New("work: job name is empty")

// reservedSuffixes end the names of a queue's other keys (<ns>:jobs:<name>:lock and so on), so a job
// name ending in one would share its queue key with another job's counter.
var reservedSuffixes = []string{":lock", ":lock_info", ":max_concurrency", ":paused", ":rate"}

// checkJobName returns an error for a job name that cannot be used.
func checkJobName(name string) error {
	if name == "" {
		return errEmptyJobName
	}
	for _, suf := range reservedSuffixes {
		if strings.HasSuffix(name, suf) {
			return fmt.Errorf("work: job name %q ends in %q, which names another job's key in the Redis layout", name, suf)
		}
	}
	return nil
}

func newJob(jobName string, args map[string]interface{}) *Job {
	return &Job{Name: jobName, ID: makeIdentifier(), EnqueuedAt: nowEpochSeconds(), Args: args}
}

// Enqueue will enqueue the specified job name and arguments. The args param can be nil if no args
// are needed. An idle worker pool picks the job up within milliseconds.
// Example: e.Enqueue("send_email", work.Q{"addr": "test@example.com"})
func (e *Enqueuer) Enqueue(jobName string, args map[string]interface{}) (*Job, error) {
	return e.enqueueKeyed(jobName, args, "")
}

// enqueueKeyed enqueues a job, to its key's queue when key (checked by the caller) is not "",
// sharing round trips with concurrent Enqueue calls.
func (e *Enqueuer) enqueueKeyed(jobName string, args map[string]interface{}, key string) (*Job, error) {
	job, raw, err := makeJob(jobName, args, key)
	if err != nil {
		return nil, err
	}
	return e.push(job, raw)
}

// makeJob makes a new job of a checked name, with a key unless key is "", and encodes it.
func makeJob(jobName string, args map[string]interface{}, key string) (*Job, []byte, error) {
	if err := checkJobName(jobName); err != nil {
		return nil, nil, err
	}
	job := newJob(jobName, args)
	job.Key = key
	raw, err := job.serialize()
	if err != nil {
		return nil, nil, err
	}
	return job, raw, nil
}

// push writes an encoded job to its queue (its key's, for a keyed job).
func (e *Enqueuer) push(job *Job, raw []byte) (*Job, error) {
	jobName := job.Name
	if job.Key != "" {
		p := pendingPushes.Get().(*pendingPush)
		p.push = push{name: jobName, key: job.Key, payload: raw}
		e.write(p)
		err := p.err
		p.push = push{}
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
	p.push = push{name: jobName, payload: raw, addKnown: e.needsKnown(jobName), publish: drained.Load()}
	e.write(p)
	n, err := p.n, p.err
	p.push = push{}
	pendingPushes.Put(p)
	if err != nil {
		e.forgetKnown(jobName)
		return nil, err
	}
	drained.Store(n <= keptUp)
	return job, nil
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
	e.pushMu.Lock()
	if e.writers >= maxPushWriters || (e.writers > 0 && len(e.queued)+1 < secondWriteAt) {
		e.queued = append(e.queued, p)
		e.pushMu.Unlock()
		if lead := <-p.done; !lead {
			return
		}
		// A writer that finished handed its turn over (taking this call off queued).
		e.pushMu.Lock()
	} else {
		e.writers++
	}
	if e.shared {
		// Calls come concurrently, and the callers of the last write are likely on their way
		// back with their next jobs: a yield lets them queue those for this round trip rather
		// than the next (from 10 goroutines it halves the round trips per job). A lone caller
		// never yields.
		e.pushMu.Unlock()
		runtime.Gosched()
		e.pushMu.Lock()
	}
	batch := append(e.queued, p)
	e.shared = len(batch) > 1
	e.queued, e.spare = e.spare[:0], nil
	pushes := e.pushBuf[:0]
	e.pushBuf = nil
	e.pushMu.Unlock()

	for _, q := range batch {
		pushes = append(pushes, &q.push)
	}
	e.store.enqueueMany(context.Background(), e.replicaWait(), pushes)
	clear(pushes)
	for _, q := range batch {
		if q != p {
			q.done <- false
		}
	}
	clear(batch)

	e.pushMu.Lock()
	e.spare, e.pushBuf = batch[:0], pushes[:0]
	if n := len(e.queued); n > 0 {
		// Hand the turn over to the first waiting call rather than keep this caller.
		next := e.queued[0]
		copy(e.queued, e.queued[1:])
		e.queued[n-1] = nil
		e.queued = e.queued[:n-1]
		e.pushMu.Unlock()
		next.done <- true
		return
	}
	e.writers--
	e.pushMu.Unlock()
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
			keyed = append(keyed, keyedGroup{name: n, payloads: payloads[n]})
		}
		if err := e.store.enqueueKeyed(context.Background(), e.replicaWait(), keyed); err != nil {
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
	if err := e.store.enqueueBatch(context.Background(), e.replicaWait(), names, payloads, addKnown); err != nil {
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
func makeJobs(jobs []BatchJob, batchID string) (out []*Job, names []string, payloads map[string][]interface{}, keyed []keyedGroup, err error) {
	out = make([]*Job, len(jobs))
	payloads = make(map[string][]interface{})
	var group map[[2]string]int // (name, key) -> index in keyed
	for i, bj := range jobs {
		if err := checkJobName(bj.Name); err != nil {
			return nil, nil, nil, nil, err
		}
		if bj.Key != "" {
			if err := checkKey(bj.Key); err != nil {
				return nil, nil, nil, nil, err
			}
		}
		job := newJob(bj.Name, bj.Args)
		job.Batch = batchID
		job.Key = bj.Key
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
				keyed = append(keyed, keyedGroup{name: bj.Name, key: bj.Key})
			}
			keyed[g].payloads = append(keyed[g].payloads, raw)
			continue
		}
		if _, seen := payloads[bj.Name]; !seen {
			names = append(names, bj.Name)
		}
		payloads[bj.Name] = append(payloads[bj.Name], raw)
	}
	return out, names, payloads, keyed, nil
}

// EnqueueIn enqueues a job in the scheduled job queue for execution in secondsFromNow seconds.
func (e *Enqueuer) EnqueueIn(jobName string, secondsFromNow int64, args map[string]interface{}) (*ScheduledJob, error) {
	return e.enqueueIn(jobName, secondsFromNow, args, "")
}

// enqueueIn schedules a job, keyed when key is not "".
func (e *Enqueuer) enqueueIn(jobName string, secondsFromNow int64, args map[string]interface{}, key string) (*ScheduledJob, error) {
	job, raw, err := makeJob(jobName, args, key)
	if err != nil {
		return nil, err
	}
	sj := &ScheduledJob{RunAt: nowEpochSeconds() + secondsFromNow, Job: job}
	if err := e.store.schedule(context.Background(), e.replicaWait(), jobName, sj.RunAt, raw, e.needsKnown(jobName)); err != nil {
		e.forgetKnown(jobName)
		return nil, err
	}
	return sj, nil
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
	job, _, err := e.enqueueUnique(jobName, false, 0, args, nil, "")
	return job, err
}

// EnqueueUniqueIn enqueues a unique job in the scheduled job queue for execution in secondsFromNow
// seconds. See EnqueueUnique for the semantics of unique jobs.
func (e *Enqueuer) EnqueueUniqueIn(jobName string, secondsFromNow int64, args map[string]interface{}) (*ScheduledJob, error) {
	job, runAt, err := e.enqueueUnique(jobName, true, secondsFromNow, args, nil, "")
	if job == nil {
		return nil, err
	}
	return &ScheduledJob{RunAt: runAt, Job: job}, err
}

// EnqueueUniqueByKey enqueues a job unless a job is already enqueued with the same name and keyMap.
// A duplicate replaces the args of the job already enqueued, so the single run uses the latest args.
// See EnqueueUnique for the other semantics of unique jobs.
func (e *Enqueuer) EnqueueUniqueByKey(jobName string, args map[string]interface{}, keyMap map[string]interface{}) (*Job, error) {
	job, _, err := e.enqueueUnique(jobName, false, 0, args, keyMap, "")
	return job, err
}

// EnqueueUniqueInByKey enqueues a job in the scheduled job queue, unique by keyMap, for execution in
// secondsFromNow seconds. See EnqueueUniqueByKey.
func (e *Enqueuer) EnqueueUniqueInByKey(jobName string, secondsFromNow int64, args map[string]interface{}, keyMap map[string]interface{}) (*ScheduledJob, error) {
	job, runAt, err := e.enqueueUnique(jobName, true, secondsFromNow, args, keyMap, "")
	if job == nil {
		return nil, err
	}
	return &ScheduledJob{RunAt: runAt, Job: job}, err
}

// enqueueUnique enqueues a unique job (into the scheduled set when scheduled), unique by keyMap when
// it is non-nil, and a keyed job of key when key is not "".
func (e *Enqueuer) enqueueUnique(jobName string, scheduled bool, secondsFromNow int64, args, keyMap map[string]interface{}, key string) (*Job, int64, error) {
	if err := checkJobName(jobName); err != nil {
		return nil, 0, err
	}
	byKey := keyMap != nil
	if !byKey {
		keyMap = args
	}
	uniqueKey, err := e.store.ks.unique(jobName, keyMap)
	if err != nil {
		return nil, 0, err
	}
	uniqueKey = keyedUniqueLock(uniqueKey, key)
	job := newJob(jobName, args)
	job.Unique = true
	job.UniqueKey = uniqueKey
	job.Key = key
	raw, err := job.serialize()
	if err != nil {
		return nil, 0, err
	}
	lockValue := []byte("1")
	if byKey {
		lockValue = raw
	}
	var runAt int64
	if scheduled {
		runAt = nowEpochSeconds() + secondsFromNow
	}
	ttl := int64(uniqueTTLSeconds)
	if e.UniqueTTL > 0 {
		ttl = max(int64((e.UniqueTTL+time.Second-1)/time.Second), 1)
	}
	ok, err := e.store.enqueueUnique(context.Background(), e.replicaWait(), jobName, key, uniqueKey, raw, lockValue, runAt, ttl)
	if err != nil || !ok {
		return nil, 0, err
	}
	return job, runAt, nil
}

func (e *Enqueuer) replicaWait() replicaWait {
	if e.WaitReplicas <= 0 {
		return replicaWait{}
	}
	t := e.WaitTimeout
	if t <= 0 {
		t = time.Second
	}
	return replicaWait{replicas: e.WaitReplicas, timeoutMs: max(t.Milliseconds(), 1)}
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
