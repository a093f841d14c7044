package work

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// Long jobs across several pools: no job waits for a worker of a busy pool while a worker of another
// pool that serves its name is idle, and no key's slot is held by a job that has not started. The
// handlers block until the test opens their gate, so "every job started while none had ended" is a
// count, not a clock.

// lrRunning counts the jobs running now, per pool and per key, and the most seen at once.
type lrRunning struct {
	mu      sync.Mutex
	now     int
	perPool map[string]int
	perKey  map[string]int
	keyMost map[string]int
	started int
}

func newLrRunning() *lrRunning {
	return &lrRunning{perPool: map[string]int{}, perKey: map[string]int{}, keyMost: map[string]int{}}
}

// handler returns a handler for a pool that blocks on gate while counted as running.
func (l *lrRunning) handler(poolName string, gate *bhvGate) func(*Job) error {
	return func(j *Job) error {
		l.mu.Lock()
		l.now++
		l.started++
		l.perPool[poolName]++
		l.perKey[j.Key]++
		l.keyMost[j.Key] = max(l.keyMost[j.Key], l.perKey[j.Key])
		l.mu.Unlock()
		gate.Wait()
		l.mu.Lock()
		l.now--
		l.perPool[poolName]--
		l.perKey[j.Key]--
		l.mu.Unlock()
		return nil
	}
}

func (l *lrRunning) running() (int, map[string]int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	per := map[string]int{}
	for k, v := range l.perPool {
		per[k] = v
	}
	return l.now, per
}

// lrPools starts n pools of the given concurrency serving name, all subscribed before it returns.
func lrPools(t *testing.T, ns string, n int, concurrency uint, name string, opts JobOptions, l *lrRunning, gate *bhvGate) []*WorkerPool {
	t.Helper()
	pool := newTestPool(t)
	var pools []*WorkerPool
	for i := 0; i < n; i++ {
		wp := NewWorkerPool(bhvCtx{}, concurrency, ns, pool)
		wp.JobWithOptions(name, opts, l.handler(fmt.Sprint("pool", i), gate))
		wp.Start()
		t.Cleanup(wp.Stop)
		pools = append(pools, wp)
	}
	t.Cleanup(gate.Open) // runs before the pools' Stop
	for _, wp := range pools {
		eventually(t, 10*time.Second, "the pool's wake-up subscription", func() bool {
			wp.reg.mu.Lock()
			defer wp.reg.mu.Unlock()
			return wp.reg.run.fetcher.ready.subscribed.Load()
		})
	}
	return pools
}

// TestLongJobsSpreadOverIdlePools: 2 idle pools of 4 workers and 6 long jobs, then 4 pools of 2 and
// 8 jobs: every job starts before any ends. A pool that fetched ahead would keep some waiting
// behind its own busy workers while the other pools idle.
func TestLongJobsSpreadOverIdlePools(t *testing.T) {
	t.Parallel()
	for _, shape := range []struct{ pools, workers, jobs int }{{2, 4, 6}, {4, 2, 8}} {
		t.Run(fmt.Sprintf("%d pools of %d, %d jobs", shape.pools, shape.workers, shape.jobs), func(t *testing.T) {
			pool := newTestPool(t)
			ns := newTestNamespace(t, pool)
			l, gate := newLrRunning(), newBhvGate()
			lrPools(t, ns, shape.pools, uint(shape.workers), "long", JobOptions{}, l, gate)
			jobs := make([]BatchJob, shape.jobs)
			for i := range jobs {
				jobs[i] = BatchJob{Name: "long"}
			}
			if _, err := NewEnqueuer(ns, pool).EnqueueBatch(jobs); err != nil {
				t.Fatal(err)
			}
			eventually(t, 20*time.Second, fmt.Sprintf("all %d jobs running at once", shape.jobs), func() bool {
				n, _ := l.running()
				return n == shape.jobs
			})
			_, per := l.running()
			for p, n := range per {
				if n > shape.workers {
					t.Errorf("%s ran %d jobs at once with %d workers", p, n, shape.workers)
				}
			}
			gate.Open()
		})
	}
}

// TestKeyedLongJobsHoldNoSlotBeforeTheyStart: with KeyConcurrency 1, 4 keys of 2 long jobs each on 2
// pools of 2 workers: a job of every key runs at once, and the pools' keyed in-progress lists hold
// only jobs that run (a job fetched ahead would hold its key's only slot while waiting for a worker,
// so that no pool could run that key).
func TestKeyedLongJobsHoldNoSlotBeforeTheyStart(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	l, gate := newLrRunning(), newBhvGate()
	pools := lrPools(t, ns, 2, 2, "keyed", JobOptions{KeyConcurrency: 1}, l, gate)
	var jobs []BatchJob
	for round := 0; round < 2; round++ {
		for _, key := range []string{"a", "b", "c", "d"} {
			jobs = append(jobs, BatchJob{Name: "keyed", Key: key})
		}
	}
	if _, err := NewEnqueuer(ns, pool).EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "a job of each of the 4 keys running", func() bool {
		n, _ := l.running()
		return n == 4
	})
	held := int64(0)
	for _, wp := range pools {
		held += rInt(t, pool, "LLEN", ks.KeyedInProgress("keyed", wp.workerPoolID))
	}
	if held != 4 {
		t.Errorf("the pools hold %d keyed jobs while 4 run", held)
	}
	gate.Open()
	eventually(t, 20*time.Second, "all 8 jobs run", func() bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		return l.started == 8
	})
	for key, most := range l.keyMost {
		if most > 1 {
			t.Errorf("key %s ran %d jobs at once with KeyConcurrency 1", key, most)
		}
	}
}

// TestFetchedAheadJobsAreHandedBack: a pool whose jobs were quick fetches ahead; when its workers
// then all turn to long jobs, the jobs it fetched ahead go back to their queue (within a few
// milliseconds), where another pool takes them, and the pool fetches ahead no more until a job ends.
func TestFetchedAheadJobsAreHandedBack(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	enq := NewEnqueuer(ns, pool)
	l, gate := newLrRunning(), newBhvGate()
	t.Cleanup(gate.Open)
	var quick sync.WaitGroup
	// Looks an hour apart: the jobs are fetched where their wake-up arrives, and nothing but the
	// hand-back wakes the pool's loop.
	first := NewWorkerPoolWithOptions(bhvCtx{}, 4, ns, pool, WorkerPoolOptions{
		SleepBackoffs: []int64{3600 * 1000}, HeartbeatInterval: time.Hour}).
		Job("quick", func(*Job) error { quick.Done(); return nil }).
		Job("long", l.handler("first", gate))
	bhvStart(t, first)
	// Quick jobs make the pool's mean run time tiny: it fetches far ahead from now on.
	quick.Add(400)
	batch := make([]BatchJob, 400)
	for i := range batch {
		batch[i] = BatchJob{Name: "quick"}
	}
	if _, err := enq.EnqueueBatch(batch); err != nil {
		t.Fatal(err)
	}
	quick.Wait()
	first.reg.mu.Lock()
	f := first.reg.run.fetcher
	first.reg.mu.Unlock()
	// A handler returns before its worker hands the outcome over, which ends the job's hold (and,
	// later than the hand-back below, would let the pool fetch ahead again): wait for all of them.
	eventually(t, 20*time.Second, "the quick jobs' holds ended", func() bool { return f.room.held.Load() == 0 })
	if f.room.free() <= 4 {
		t.Fatalf("after 400 quick jobs the pool fetches no further ahead than its 4 workers (room %d)", f.room.free())
	}
	// 6 long jobs in one push: the pool takes them all, runs 4 and hands back the other 2.
	long := make([]BatchJob, 6)
	for i := range long {
		long[i] = BatchJob{Name: "long"}
	}
	if _, err := enq.EnqueueBatch(long); err != nil {
		t.Fatal(err)
	}
	// The requeues are in Redis a moment before the fetcher, which waits for them, stops fetching
	// ahead: wait for both.
	eventually(t, 20*time.Second, "4 long jobs running in the first pool, 2 back in their queue, "+
		"and the pool fetching ahead no more until a job ends", func() bool {
		n, _ := l.running()
		return n == 4 && rInt(t, pool, "LLEN", ks.Jobs("long")) == 2 && f.room.noAhead.Load()
	})
	if held := rInt(t, pool, "LLEN", ks.InProgress("long", first.workerPoolID)); held != 4 {
		t.Errorf("the first pool holds %d long jobs while it runs 4", held)
	}
	// Another pool takes the 2 handed back.
	second := NewWorkerPool(bhvCtx{}, 4, ns, pool).Job("quick", func(*Job) error { return nil }).
		Job("long", l.handler("second", gate))
	bhvStart(t, second)
	eventually(t, 20*time.Second, "all 6 long jobs running", func() bool {
		n, _ := l.running()
		return n == 6
	})
	gate.Open()
}
