package work

import (
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// quietCount returns the pool's count of quiet writes that ran (0 before the first).
func quietCount(t *testing.T, pool *redis.Pool, ns string, wp *WorkerPool) int64 {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	n, err := redis.Int64(c.Do("GET", bhvKey(ns, "quiet", wp.reg.run.poolID)))
	if err != nil && err != redis.ErrNil {
		t.Fatal(err)
	}
	return n
}

// handOneAndDrain enqueues a job of "a" to the waiting pool, waits for it to run (want runs in
// all), then drains the pool and checks that nothing is left in progress.
func handOneAndDrain(t *testing.T, wp *WorkerPool, pool *redis.Pool, ns string, runs interface{ Load() int64 }, want int64) {
	t.Helper()
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job run", func() bool { return runs.Load() >= want })
	wp.Drain()
	if n := llen(t, pool, bhvKey(ns, "jobs", "a", wp.reg.run.poolID, "inprogress")); n != 0 {
		t.Fatalf("%d jobs left in progress after Drain", n)
	}
	if n := runs.Load(); n != want {
		t.Fatalf("%d runs, want %d", n, want)
	}
}

// The outcomes of jobs handed to a waiting pool go without a reply, and a Drain returns once they
// are confirmed: Redis holds them.
func TestHandedJobsOutcomesAreWrittenQuietly(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	for i := int64(1); i <= 5; i++ {
		handOneAndDrain(t, wp, pool, ns, runs, i)
	}
	if n := quietCount(t, pool, ns, wp); n != 5 {
		t.Fatalf("%d quiet writes ran, want one per job (5)", n)
	}
}

// A quiet write that ran nothing (the script cache was flushed: NOSCRIPT, with no reply to say so) is
// found by its confirm and made again with a reply: the job is not left in progress, nor run again.
func TestAQuietWriteThatDidNotRunIsMadeAgain(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	handOneAndDrain(t, wp, pool, ns, runs, 1)
	before := quietCount(t, pool, ns, wp)
	if before != 1 {
		t.Fatalf("%d quiet writes ran, want 1", before)
	}
	c := pool.Get()
	_, err := c.Do("SCRIPT", "FLUSH")
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	handOneAndDrain(t, wp, pool, ns, runs, 2)
	// The pool was idle: nothing else loaded the script before the job's quiet write, which ran
	// nothing (a write with a reply loads it again, and may come first when the pool is slow).
	after := quietCount(t, pool, ns, wp)
	if after > before+1 {
		t.Fatalf("%d quiet writes ran, want at most %d", after, before+1)
	}
	handOneAndDrain(t, wp, pool, ns, runs, 3)
	if n := quietCount(t, pool, ns, wp); n != after+1 {
		t.Fatalf("%d quiet writes ran, want %d: the next job's outcome goes quietly again", n, after+1)
	}
}

// A quiet connection that Redis drops loses no outcome: the writes it did not confirm are made
// again with replies, and the pool dials a new one.
func TestAQuietConnectionDroppedLosesNoOutcome(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	handOneAndDrain(t, wp, pool, ns, runs, 1)
	c := pool.Get()
	_, err := c.Do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes")
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 20; i++ {
		if _, err := e.Enqueue("a", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "every job run", func() bool { return runs.Load() >= 21 })
	wp.Drain()
	if n := llen(t, pool, bhvKey(ns, "jobs", "a", wp.reg.run.poolID, "inprogress")); n != 0 {
		t.Fatalf("%d jobs left in progress after Drain", n)
	}
	if n := runs.Load(); n != 21 {
		t.Fatalf("%d runs, want 21", n)
	}
	eventually(t, 20*time.Second, "the pool to wait for hand-offs again", func() bool {
		return sismember(t, pool, bhvKey(ns, "idle_pools", "a"), wp.reg.run.poolID)
	})
	// Outcomes go with replies until the pool has dialled again.
	n := quietCount(t, pool, ns, wp)
	want := int64(21)
	eventually(t, 20*time.Second, "a handed job's outcome written quietly again", func() bool {
		want++
		handOneAndDrain(t, wp, pool, ns, runs, want)
		return quietCount(t, pool, ns, wp) > n
	})
}
