package work

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
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
	// One per job, but for a write that met a script cache flushed by a test of another package
	// running meanwhile (it was made again with a reply).
	if n := quietCount(t, pool, ns, wp); n < 1 || n > 5 {
		t.Fatalf("%d quiet writes ran, want one per job (5)", n)
	}
	id := wp.reg.run.poolID
	wp.Stop()
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "quiet", id)); n != 0 {
		t.Errorf("a stopped pool left its count of quiet writes")
	}
}

// A pool whose backend gives no connection of its own (any Backend but a redigo pool's) writes
// every outcome with a reply.
func TestAPoolWithoutAQuietConnectionWritesWithReplies(t *testing.T) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := NewWorkerPoolWithBackend(bhvCtx{}, 2, ns, struct{ Backend }{PoolBackend(pool)}, WorkerPoolOptions{})
	startWaitingForA(t, wp, pool, ns, &runs)
	for i := int64(1); i <= 3; i++ {
		handOneAndDrain(t, wp, pool, ns, &runs, i)
	}
	if n := quietCount(t, pool, ns, wp); n != 0 {
		t.Fatalf("%d quiet writes ran, want none", n)
	}
}

// A quiet write that ran nothing (the script cache was flushed: NOSCRIPT, with no reply to say so) is
// found by its confirm and made again with a reply: the job is not left in progress, nor run again.
func TestAQuietWriteThatDidNotRunIsMadeAgain(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	handOneAndDrain(t, wp, pool, ns, runs, 1)
	before := quietCount(t, pool, ns, wp)
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
	want := int64(2)
	eventually(t, 20*time.Second, "a handed job's outcome written quietly again", func() bool {
		want++
		handOneAndDrain(t, wp, pool, ns, runs, want)
		return quietCount(t, pool, ns, wp) > after
	})
}

// quietTrap passes a connection through until drop is called; from then on, a connection that
// turned its replies off (a quiet one) takes writes without sending them and fails its reads, as a
// connection Redis dropped while the pool wrote to it.
type quietTrap struct {
	mu    sync.Mutex
	quiet map[*trappedConn]bool
}

type trappedConn struct {
	net.Conn
	trap    *quietTrap
	dropped atomic.Bool
}

func (c *trappedConn) Write(p []byte) (int, error) {
	if bytes.Contains(p, []byte("REPLY")) {
		c.trap.mu.Lock()
		c.trap.quiet[c] = true
		c.trap.mu.Unlock()
	}
	if c.dropped.Load() {
		return len(p), nil
	}
	return c.Conn.Write(p)
}

func (tr *quietTrap) wrap(c net.Conn) net.Conn { return &trappedConn{Conn: c, trap: tr} }

// drop drops the quiet connections open now.
func (tr *quietTrap) drop() {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	for c := range tr.quiet {
		c.dropped.Store(true)
		c.Conn.Close()
	}
}

// A quiet connection that drops what the pool writes loses no outcome: the writes it did not
// confirm are made again with replies, and the pool dials a new one.
func TestAQuietConnectionDroppedLosesNoOutcome(t *testing.T) {
	trap := &quietTrap{quiet: make(map[*trappedConn]bool)}
	pool := wrappedPool(t, 20, trap.wrap)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	startWaitingForA(t, wp, pool, ns, &runs)
	handOneAndDrain(t, wp, pool, ns, &runs, 1)
	before := quietCount(t, pool, ns, wp)
	trap.drop()
	handOneAndDrain(t, wp, pool, ns, &runs, 2) // written quietly into the void, then again with a reply
	if n := quietCount(t, pool, ns, wp); n != before {
		t.Fatalf("%d quiet writes ran, want %d: the connection dropped the second", n, before)
	}
	// Outcomes go with replies until the pool has dialled again.
	want := int64(2)
	eventually(t, 20*time.Second, "a handed job's outcome written quietly again", func() bool {
		want++
		handOneAndDrain(t, wp, pool, ns, &runs, want)
		return quietCount(t, pool, ns, wp) > before
	})
}
