package work

import (
	"errors"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Running counts per key are kept only where a limit needs them (lib/keyed.lua, keyedCounting):
// these tests hold the counts off for a name without limits, the Client's counts without them, and
// the recount that turns them on when a limit appears while uncounted jobs run.

// heldJobs is a handler whose jobs run until released, one per token sent on release, or until the
// test ends; started receives the key of each job as it starts.
type heldJobs struct {
	started chan string
	release chan struct{}
	end     *bhvGate
}

func newHeldJobs() *heldJobs {
	return &heldJobs{started: make(chan string, 100), release: make(chan struct{}, 100), end: newBhvGate()}
}

func (h *heldJobs) handler(j *Job) error {
	h.started <- j.Key
	select {
	case <-h.release:
	case <-h.end.ch:
	}
	return nil
}

// start starts wp until the test ends, the held jobs released first so that its Stop returns.
func (h *heldJobs) start(t *testing.T, wp *WorkerPool) {
	bhvStart(t, wp)
	t.Cleanup(h.end.Open)
}

// wait returns the keys of the next n jobs to start.
func (h *heldJobs) wait(t *testing.T, n int) []string {
	t.Helper()
	var keys []string
	for len(keys) < n {
		select {
		case k := <-h.started:
			keys = append(keys, k)
		case <-time.After(10 * time.Second):
			t.Fatalf("%d jobs started, want %d", len(keys), n)
		}
	}
	return keys
}

// none fails if a job started.
func (h *heldJobs) none(t *testing.T) {
	t.Helper()
	select {
	case k := <-h.started:
		t.Fatalf("a job of key %s started", k)
	default:
	}
}

func enqueueKeyed(t *testing.T, e *Enqueuer, name string, keys ...string) {
	t.Helper()
	for _, k := range keys {
		if _, err := e.EnqueueWith(name, nil, EnqueueOptions{Key: k}); err != nil {
			t.Fatal(err)
		}
	}
}

// A name without limits keeps no running hash; the Client counts its running jobs from the pools'
// in-progress lists.
func TestKeyedRunningWithoutALimitIsNotCounted(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	h := newHeldJobs()
	e := NewEnqueuer(ns, pool)
	enqueueKeyed(t, e, "sync", "a", "a", "b")
	h.start(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).Job("sync", h.handler))
	h.wait(t, 3)
	enqueueKeyed(t, e, "sync", "d") // waits: every worker is busy

	if n := rInt(t, pool, "EXISTS", ns+":keyed:sync:running"); n != 0 {
		t.Errorf("a name without limits has a running hash: %v", rdo(t, pool, "HGETALL", ns+":keyed:sync:running"))
	}
	if v, _ := redis.String(rdo(t, pool, "HGET", ns+":keyed:sync:meta", "counts"), nil); v != "0" {
		t.Errorf("meta counts = %q, want \"0\"", v)
	}
	c := NewClient(ns, pool)
	for key, want := range map[string][2]int64{"a": {2, 0}, "b": {1, 0}, "d": {0, 1}} {
		k, err := c.Key("sync", key)
		if err != nil {
			t.Fatal(err)
		}
		if k.Running != want[0] || k.Waiting != want[1] {
			t.Errorf("key %s: %d running, %d waiting, want %d and %d", key, k.Running, k.Waiting, want[0], want[1])
		}
	}
	keys, _, err := c.Keys("sync", 1)
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, k := range keys {
		listed[k.Key] = true
	}
	if !listed["a"] || !listed["b"] || !listed["d"] || len(keys) != 3 {
		t.Errorf("Keys listed %v, want a, b (running) and d (waiting)", listed)
	}
	stats, err := c.KeyStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(stats) != 1 || stats[0].Running != 3 || stats[0].RunningKeys != 2 {
		t.Errorf("KeyStats = %+v, want 3 jobs running over 2 keys", stats)
	}
}

// A key's concurrency override set while its jobs run uncounted counts them: the limit holds at once.
func TestKeyedLimitSetWhileUncountedJobsRunCountsThem(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	h := newHeldJobs()
	e := NewEnqueuer(ns, pool)
	enqueueKeyed(t, e, "sync", "a", "a", "a")
	h.start(t, NewWorkerPool(bhvCtx{}, 6, ns, pool).Job("sync", h.handler))
	h.wait(t, 3)
	if err := NewClient(ns, pool).SetKeyLimits("sync", "a", KeyLimits{Concurrency: 2}); err != nil {
		t.Fatal(err)
	}
	enqueueKeyed(t, e, "sync", "a", "a")
	waitRecounted(t, pool, ns, "sync", "a", 3)
	h.none(t)
	h.release <- struct{}{} // 2 running: still at the limit
	eventually(t, 10*time.Second, "the running count of a to drop to 2", func() bool {
		n, _ := redis.Int(rdo(t, pool, "HGET", ns+":keyed:sync:running", "a"), nil)
		return n == 2
	})
	h.none(t)
	h.release <- struct{}{} // 1 running: one more may start
	h.wait(t, 1)
	h.none(t)
}

// A pool whose name has a KeyConcurrency counts the jobs other pools run uncounted before it takes one.
func TestKeyedPoolWithAKeyLimitCountsUncountedJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	h := newHeldJobs()
	e := NewEnqueuer(ns, pool)
	enqueueKeyed(t, e, "sync", "a", "a")
	// Two workers: busy with the first two jobs, this pool takes no third.
	h.start(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("sync", h.handler))
	h.wait(t, 2)
	h.start(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).JobWithOptions("sync", JobOptions{KeyConcurrency: 2}, h.handler))
	enqueueKeyed(t, e, "sync", "a")
	waitRecounted(t, pool, ns, "sync", "a", 2)
	h.none(t)
	h.release <- struct{}{}
	h.wait(t, 1)
	h.none(t)
}

// waitRecounted waits until the running hash of name counts n jobs of key, with its counts kept.
func waitRecounted(t *testing.T, pool *redis.Pool, ns, name, key string, n int) {
	t.Helper()
	eventually(t, 10*time.Second, "the running jobs to be counted", func() bool {
		v, _ := redis.String(rdo(t, pool, "HGET", ns+":keyed:"+name+":meta", "counts"), nil)
		c, _ := redis.Int(rdo(t, pool, "HGET", ns+":keyed:"+name+":running", key), nil)
		return v == "1" && c == n && rInt(t, pool, "ZCARD", ns+":keyed:"+name+":ready") == 0
	})
}

// Counts an earlier release kept (no counts field in meta) stay kept while they count a job, and go
// once none is counted.
func TestKeyedCountsOfAnEarlierReleaseGoWhenEmpty(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	done := make(chan struct{}, 10)
	e := NewEnqueuer(ns, pool)
	rdo(t, pool, "HSET", ns+":keyed:sync:running", "x", 1) // a job of x, counted by an earlier release
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("sync", func(*Job) error { done <- struct{}{}; return nil }))
	enqueueKeyed(t, e, "sync", "a")
	bhvWait(t, done, "a's job")
	eventually(t, 10*time.Second, "a's count to go", func() bool {
		return rInt(t, pool, "HLEN", ns+":keyed:sync:running") == 1
	})
	if v := rdo(t, pool, "HGET", ns+":keyed:sync:meta", "counts"); v != nil {
		t.Errorf("counts turned %q while x's job is counted", v)
	}
	rdo(t, pool, "HDEL", ns+":keyed:sync:running", "x") // x's job ended
	enqueueKeyed(t, e, "sync", "b")
	bhvWait(t, done, "b's job")
	if v, _ := redis.String(rdo(t, pool, "HGET", ns+":keyed:sync:meta", "counts"), nil); v != "0" {
		t.Errorf("meta counts = %q once no job is counted, want \"0\"", v)
	}
}

// A name whose retries keep their key's slot (KeyRetryInOrder) keeps its counts without a
// KeyConcurrency: a held retry is in no in-progress list, so only the count says that it runs.
func TestKeyedRetryInOrderKeepsCounts(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).JobWithOptions("sync", JobOptions{
		KeyRetryInOrder: true, Backoff: func(*Job) int64 { return 3600 },
	}, func(*Job) error { return errors.New("fails") }))
	enqueueKeyed(t, NewEnqueuer(ns, pool), "sync", "a")
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the failed job in the retry set", func() bool {
		retries, _, _ := c.RetryJobs(1)
		return len(retries) == 1 && retries[0].KeyHold
	})
	if v, _ := redis.String(rdo(t, pool, "HGET", ns+":keyed:sync:meta", "counts"), nil); v != "1" {
		t.Errorf("meta counts = %q, want \"1\"", v)
	}
	k, err := c.Key("sync", "a")
	if err != nil {
		t.Fatal(err)
	}
	if k.Running != 1 {
		t.Errorf("key a: %d running, want 1 (its retry holds the slot)", k.Running)
	}
}
