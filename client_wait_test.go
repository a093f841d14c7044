package work

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// numSub is how many subscriptions listen on the namespace's end channel.
func numSub(t *testing.T, pool *redis.Pool, ns string) int64 {
	t.Helper()
	r, err := redis.Values(rdo(t, pool, "PUBSUB", "NUMSUB", bhvKey(ns, "ended")), nil)
	if err != nil || len(r) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v %v", r, err)
	}
	n, _ := redis.Int64(r[1], nil)
	return n
}

// gatedJobs starts a pool whose "gated" jobs end when their gate is opened, with the result their
// "n" arg.
func gatedJobs(t *testing.T, pool *redis.Pool, ns string, opts JobOptions) *bhvGate {
	gate := newBhvGate()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 8, ns, pool).JobWithOptions("gated", opts, func(j *Job) error {
		gate.Wait()
		return j.SetResult(j.ArgInt64("n"))
	}))
	t.Cleanup(gate.Open)
	return gate
}

type waitResult struct {
	rec *JobRecord
	err error
}

func waitAsync(c *Client, ctx context.Context, id string) <-chan waitResult {
	ch := make(chan waitResult, 1)
	go func() {
		rec, err := c.WaitJob(ctx, id)
		ch <- waitResult{rec, err}
	}()
	return ch
}

func recv(t *testing.T, ch <-chan waitResult) waitResult {
	t.Helper()
	select {
	case r := <-ch:
		return r
	case <-time.After(20 * time.Second):
		t.Fatal("WaitJob did not return")
	}
	return waitResult{}
}

func TestWaitJobReturnsTheRecordOnceTheJobEnds(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := gatedJobs(t, pool, ns, JobOptions{})
	job, err := NewEnqueuer(ns, pool).EnqueueWith("gated", Q{"n": 7}, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	ch := waitAsync(c, context.Background(), job.ID)
	eventually(t, 10*time.Second, "the waiter to subscribe", func() bool { return numSub(t, pool, ns) == 1 })
	select {
	case r := <-ch:
		t.Fatalf("WaitJob returned before the job ended: %+v %v", r.rec, r.err)
	default:
	}
	gate.Open()
	r := recv(t, ch)
	if r.err != nil || r.rec.State != "done" || string(r.rec.Result) != "7" || !r.rec.Ended() {
		t.Fatalf("WaitJob: %+v, %v", r.rec, r.err)
	}
	// The last waiter gone, the subscription is closed (by the subscription's goroutine, soon after).
	eventually(t, 20*time.Second, "the subscription to close", func() bool { return numSub(t, pool, ns) == 0 })
}

func TestWaitJobForAJobThatEndedReturnsAtOnceWithoutSubscribing(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := gatedJobs(t, pool, ns, JobOptions{})
	gate.Open()
	job, err := NewEnqueuer(ns, pool).EnqueueWith("gated", Q{"n": 3}, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	var subs atomic.Int64
	counted := wrappedPool(t, 4, func(c net.Conn) net.Conn { return &countingConn{Conn: c, n: &subs, needle: "SUBSCRIBE"} })
	c := NewClient(ns, counted)
	eventually(t, 10*time.Second, "the job to end", func() bool {
		rec, err := c.JobRecord(job.ID)
		return err == nil && rec.State == "done"
	})
	rec, err := c.WaitJob(context.Background(), job.ID)
	if err != nil || rec.State != "done" || string(rec.Result) != "3" {
		t.Fatalf("WaitJob: %+v, %v", rec, err)
	}
	if subs.Load() != 0 {
		t.Fatalf("subscribed %d times", subs.Load())
	}
}

func TestWaitJobWithoutARecordIsAnError(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	c := NewClient(ns, pool)
	if _, err := c.WaitJob(context.Background(), "no-such-job"); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("unknown ID: %v", err)
	}
	// An untracked job has no record: nothing would tell its end.
	job, err := NewEnqueuer(ns, pool).Enqueue("plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.WaitJob(context.Background(), job.ID); !errors.Is(err, ErrNoRecord) {
		t.Fatalf("untracked job: %v", err)
	}
	if _, err := c.WaitJob(context.Background(), "bad id!"); !errors.Is(err, ErrMalformedID) {
		t.Fatalf("malformed ID: %v", err)
	}
	if n := numSub(t, pool, ns); n != 0 {
		t.Fatalf("%d subscriptions left", n)
	}
}

func TestWaitJobReturnsTheContextsError(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	job, err := NewEnqueuer(ns, pool).EnqueueWith("nobody_runs_it", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	ctx, cancel := context.WithCancel(context.Background())
	ch := waitAsync(c, ctx, job.ID)
	eventually(t, 10*time.Second, "the waiter to subscribe", func() bool { return numSub(t, pool, ns) == 1 })
	cancel()
	if r := recv(t, ch); !errors.Is(r.err, context.Canceled) || r.rec != nil {
		t.Fatalf("WaitJob: %+v, %v", r.rec, r.err)
	}
	eventually(t, 10*time.Second, "the subscription to close", func() bool { return numSub(t, pool, ns) == 0 })
}

// Any number of waiters of a Client share one subscription, and cost no command while they wait:
// a read of the record when called, one once subscribed, one when the job ends.
func TestManyWaitersShareOneSubscriptionAndDoNotPoll(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := gatedJobs(t, pool, ns, JobOptions{})
	e := NewEnqueuer(ns, pool)
	const jobs, perJob = 20, 5
	ids := make([]string, jobs)
	for i := range ids {
		job, err := e.EnqueueWith("gated", Q{"n": i}, EnqueueOptions{Track: true})
		if err != nil {
			t.Fatal(err)
		}
		ids[i] = job.ID
	}
	var reads atomic.Int64
	counted := wrappedPool(t, 200, func(c net.Conn) net.Conn { return &countingConn{Conn: c, n: &reads, needle: "HGETALL"} })
	c := NewClient(ns, counted)
	var chans []<-chan waitResult
	for _, id := range ids {
		for k := 0; k < perJob; k++ {
			chans = append(chans, waitAsync(c, context.Background(), id))
		}
	}
	eventually(t, 20*time.Second, "every waiter to read its record after subscribing", func() bool {
		return reads.Load() == 2*jobs*perJob
	})
	if n := numSub(t, pool, ns); n != 1 {
		t.Fatalf("%d subscriptions for %d waiters", n, jobs*perJob)
	}
	// Waiting sends nothing.
	before := reads.Load()
	time.Sleep(300 * time.Millisecond)
	if n := reads.Load(); n != before {
		t.Fatalf("%d reads while the waiters waited", n-before)
	}
	gate.Open()
	for i, ch := range chans {
		r := recv(t, ch)
		if r.err != nil || r.rec.State != "done" || string(r.rec.Result) != fmt.Sprint(i/perJob) {
			t.Fatalf("waiter %d: %+v, %v", i, r.rec, r.err)
		}
	}
	if n := reads.Load(); n != 3*jobs*perJob {
		t.Errorf("%d reads for %d waiters, want 3 each", n, jobs*perJob)
	}
	eventually(t, 20*time.Second, "the subscription to close", func() bool { return numSub(t, pool, ns) == 0 })
}

// hookedBackend runs a hook before each subscription, and lets a test end the current one.
type hookedBackend struct {
	Backend
	calls  atomic.Int64
	before func(call int64)

	mu   sync.Mutex
	drop context.CancelFunc
}

func (b *hookedBackend) Subscribe(ctx context.Context, channels []string, subscribed func(), message func(string, []byte)) error {
	n := b.calls.Add(1)
	if b.before != nil {
		b.before(n)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	b.mu.Lock()
	b.drop = cancel
	b.mu.Unlock()
	err := b.Backend.Subscribe(ctx, channels, subscribed, message)
	if err == nil || errors.Is(err, context.Canceled) {
		err = errors.New("subscription lost")
	}
	return err
}

// dropSubscription ends the current subscription as a lost connection would.
func (b *hookedBackend) dropSubscription() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.drop != nil {
		b.drop()
	}
}

// A job that ends after WaitJob's first read but before its subscription listens is not missed: the
// waiter reads the record again once subscribed.
func TestWaitJobSeesAnEndBeforeItsSubscriptionListens(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := gatedJobs(t, pool, ns, JobOptions{})
	job, err := NewEnqueuer(ns, pool).EnqueueWith("gated", Q{"n": 1}, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	probe := NewClient(ns, pool)
	b := &hookedBackend{Backend: PoolBackend(pool)}
	b.before = func(int64) {
		// The job ends now, its end announced to nobody.
		gate.Open()
		eventually(t, 10*time.Second, "the job to end", func() bool {
			rec, err := probe.JobRecord(job.ID)
			return err == nil && rec.State == "done"
		})
	}
	c := NewClientWithBackend(ns, b)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	rec, err := c.WaitJob(ctx, job.ID)
	if err != nil || rec.State != "done" {
		t.Fatalf("WaitJob: %+v, %v", rec, err)
	}
	if b.calls.Load() != 1 {
		t.Fatalf("%d subscriptions", b.calls.Load())
	}
}

// A lost subscription is made again, and the waiters read their records again: an end announced
// while it was down is not missed.
func TestWaitJobResubscribesAndReadsAgainAfterALostSubscription(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := gatedJobs(t, pool, ns, JobOptions{})
	job, err := NewEnqueuer(ns, pool).EnqueueWith("gated", Q{"n": 2}, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	probe := NewClient(ns, pool)
	b := &hookedBackend{Backend: PoolBackend(pool)}
	b.before = func(call int64) {
		if call == 2 {
			// Down: the job ends meanwhile.
			gate.Open()
			eventually(t, 10*time.Second, "the job to end", func() bool {
				rec, err := probe.JobRecord(job.ID)
				return err == nil && rec.State == "done"
			})
		}
	}
	c := NewClientWithBackend(ns, b)
	ch := waitAsync(c, context.Background(), job.ID)
	eventually(t, 10*time.Second, "the waiter to subscribe", func() bool { return numSub(t, pool, ns) == 1 })
	b.dropSubscription()
	r := recv(t, ch)
	if r.err != nil || r.rec.State != "done" || string(r.rec.Result) != "2" {
		t.Fatalf("WaitJob: %+v, %v", r.rec, r.err)
	}
	if n := b.calls.Load(); n != 2 {
		t.Fatalf("%d subscriptions, want 2", n)
	}
}

// A job of a name whose pools keep records can be waited for once it runs.
func TestWaitJobForAKeepFinishedJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := gatedJobs(t, pool, ns, JobOptions{KeepFinished: time.Minute})
	job, err := NewEnqueuer(ns, pool).Enqueue("gated", Q{"n": 5})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the record to say running", func() bool {
		rec, err := c.JobRecord(job.ID)
		return err == nil && rec.State == "running"
	})
	ch := waitAsync(c, context.Background(), job.ID)
	eventually(t, 10*time.Second, "the waiter to subscribe", func() bool { return numSub(t, pool, ns) == 1 })
	gate.Open()
	if r := recv(t, ch); r.err != nil || r.rec.State != "done" || string(r.rec.Result) != "5" {
		t.Fatalf("WaitJob: %+v, %v", r.rec, r.err)
	}
}

// Every way a record takes a final state announces it: a dependency that died, a job deleted by hand.
func TestWaitJobHearsEveryKindOfEnd(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	first, err := e.EnqueueWith("first", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.EnqueueWith("second", nil, EnqueueOptions{After: []string{first.ID}})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	chFirst := waitAsync(c, context.Background(), first.ID)
	chSecond := waitAsync(c, context.Background(), second.ID)
	eventually(t, 10*time.Second, "the waiters to subscribe", func() bool { return numSub(t, pool, ns) == 1 })
	if err := c.DeleteQueuedJob("first", first.ID); err != nil {
		t.Fatal(err)
	}
	if r := recv(t, chFirst); r.err != nil || r.rec.State != "deleted" {
		t.Fatalf("WaitJob of the deleted job: %+v, %v", r.rec, r.err)
	}
	if r := recv(t, chSecond); r.err != nil || r.rec.State != "dead" {
		t.Fatalf("WaitJob of its dependant: %+v, %v", r.rec, r.err)
	}
}
