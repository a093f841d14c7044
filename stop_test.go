package work

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

type stopCtx struct{}

func TestStopContextPutsUnfinishedJobsBackAndCancelsThem(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	started := make(chan struct{}, 1)
	var sawCancel atomic.Bool
	wp := NewWorkerPool(stopCtx{}, 1, ns, pool)
	wp.Job("stuck", func(ctx context.Context, j *Job) error {
		started <- struct{}{}
		<-ctx.Done()
		sawCancel.Store(true)
		return ctx.Err()
	})
	wp.Start()
	if _, err := NewEnqueuer(ns, pool).Enqueue("stuck", Q{"k": "v"}); err != nil {
		t.Fatal(err)
	}
	<-started
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := wp.StopContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StopContext: %v, want deadline exceeded", err)
	}
	eventually(t, 5*time.Second, "the handler's context to be cancelled", sawCancel.Load)
	if n := rInt(t, pool, "LLEN", ns+":jobs:stuck"); n != 1 {
		t.Fatalf("queue holds %d jobs, want the unfinished one back", n)
	}
	if n := rInt(t, pool, "ZCARD", ns+":retry"); n != 0 {
		t.Errorf("retry set holds %d jobs: the late failure was recorded", n)
	}
	if n := rInt(t, pool, "GET", ns+":jobs:stuck:lock"); n != 0 {
		t.Errorf("lock = %d, want 0", n)
	}
	if n := rInt(t, pool, "EXISTS", ns+":jobs:stuck:"+wp.workerPoolID+":inprogress"); n != 0 {
		t.Errorf("in-progress list still exists")
	}
	if n := rInt(t, pool, "SISMEMBER", ns+":worker_pools", wp.workerPoolID); n != 0 {
		t.Errorf("stopped pool still registered")
	}

	// The job runs again, in full, in another pool.
	var ran atomic.Int64
	wp2 := NewWorkerPool(stopCtx{}, 1, ns, pool)
	wp2.Job("stuck", func(j *Job) error {
		if j.ArgString("k") == "v" && j.Fails == 0 {
			ran.Add(1)
		}
		return nil
	})
	wp2.Start()
	defer wp2.Stop()
	eventually(t, 5*time.Second, "the requeued job to run again", func() bool { return ran.Load() == 1 })
}

func TestStopWaitsForRunningJobsAndReturnsFetchedOnesToTheFrontOfTheQueue(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	release := make(chan struct{})
	var finished atomic.Int64
	wp, _ := startOneFetchedAhead(t, pool, ns, release, func() { finished.Add(1) }, "1", "2", "3", "4")
	stopped := make(chan struct{})
	go func() { wp.Stop(); close(stopped) }()
	select {
	case <-stopped:
		t.Fatal("Stop returned while a job was running")
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	if finished.Load() != 1 {
		t.Fatalf("%d jobs finished, want only the running one", finished.Load())
	}
	// Jobs 2, 3 and 4 are queued, and 2 (fetched ahead, never started) is first out again.
	queued := rStrings(t, pool, "LRANGE", ns+":jobs:slow", 0, -1)
	if len(queued) != 3 {
		t.Fatalf("queue: %d jobs, want 3", len(queued))
	}
	oldest, err := decodeJob([]byte(queued[len(queued)-1]))
	if err != nil || oldest.ArgString("n") != "2" {
		t.Fatalf("fetch end of the queue: %s", queued[len(queued)-1])
	}
	if n := rInt(t, pool, "GET", ns+":jobs:slow:lock"); n != 0 {
		t.Errorf("lock = %d, want 0", n)
	}
}

func TestStopAndDrainBeforeStartReturnAtOnce(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPool(stopCtx{}, 2, ns, pool)
	wp.Job("x", func(*Job) error { return nil })
	wp.Drain()
	wp.Stop()
	if err := wp.StopContext(context.Background()); err != nil {
		t.Fatal(err)
	}
	wp.Start()
	wp.Start()
	wp.Stop()
	wp.Stop()
	wp.Drain()
}

func TestStopPutsBackInProgressEntriesThePoolNoLongerHolds(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := NewWorkerPool(stopCtx{}, 1, ns, pool)
	wp.Job("x", func(*Job) error { ran.Add(1); return nil })
	wp.Start()
	// An entry whose acknowledgement was lost (say, in a failover): in the pool's list and counters,
	// but not held by any of its workers.
	orphan := `{"name":"x","id":"000000000000000000000001","t":1,"args":null}`
	rdo(t, pool, "EVAL", `redis.call('lpush', KEYS[1], ARGV[1]) redis.call('hincrby', KEYS[2], ARGV[2], 1) redis.call('incr', KEYS[3])`,
		3, ns+":jobs:x:"+wp.workerPoolID+":inprogress", ns+":jobs:x:lock_info", ns+":jobs:x:lock", orphan, wp.workerPoolID)
	wp.Stop()
	// Put back by the stop, or earlier by the live pool's sweep and run.
	got := rStrings(t, pool, "LRANGE", ns+":jobs:x", 0, -1)
	if !(len(got) == 1 && got[0] == orphan) && ran.Load() != 1 {
		t.Fatalf("queue after stop: %v and %d runs, want the orphaned entry back or run once", got, ran.Load())
	}
	if n := rInt(t, pool, "HEXISTS", ns+":jobs:x:lock_info", wp.workerPoolID); n != 0 {
		t.Fatal("the stopped pool still holds lock_info")
	}
	if n := rInt(t, pool, "GET", ns+":jobs:x:lock"); n != 0 {
		t.Fatalf("lock = %d, want 0", n)
	}
	if n := rInt(t, pool, "SISMEMBER", ns+":worker_pools", wp.workerPoolID); n != 0 {
		t.Fatal("the stopped pool is still registered")
	}
}

func TestLivePoolPutsBackInProgressEntriesItDoesNotHold(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := NewWorkerPoolWithOptions(stopCtx{}, 2, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Second})
	wp.Job("x", func(j *Job) error {
		if j.ID == "000000000000000000000002" {
			ran.Add(1)
		}
		return nil
	})
	wp.Start()
	defer wp.Stop()
	// What a fetch whose reply was lost leaves: an entry in the live pool's list and counters that no
	// worker of the pool knows about.
	orphan := `{"name":"x","id":"000000000000000000000002","t":1,"args":null}`
	rdo(t, pool, "EVAL", `redis.call('lpush', KEYS[1], ARGV[1]) redis.call('hincrby', KEYS[2], ARGV[2], 1) redis.call('incr', KEYS[3])`,
		3, ns+":jobs:x:"+wp.workerPoolID+":inprogress", ns+":jobs:x:lock_info", ns+":jobs:x:lock", orphan, wp.workerPoolID)
	wp.store.Errs.Add(1) // the pool saw that call fail
	eventually(t, 15*time.Second, "the orphaned entry to be put back and run", func() bool { return ran.Load() == 1 })
	wp.Drain()
	if n := rInt(t, pool, "LLEN", ns+":jobs:x:"+wp.workerPoolID+":inprogress"); n != 0 {
		t.Fatalf("in-progress list holds %d entries", n)
	}
	if n := rInt(t, pool, "GET", ns+":jobs:x:lock"); n != 0 {
		t.Fatalf("lock = %d, want 0", n)
	}
}

// A sweep that Redis runs late, past its fence (its call timed out while Redis was frozen, and the
// pool has fetched since), leaves the in-progress list alone: the pool's held set it carries may be
// stale, and putting back a job the pool runs would run it twice.
func TestLateSweepPutsNothingBack(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	st := rdb.NewStore(ns, PoolBackend(pool))
	inprogress := st.Ks.InProgress("x", "p1")
	entry := `{"name":"x","id":"000000000000000000000003","t":1,"args":null}`
	rdo(t, pool, "LPUSH", inprogress, entry)
	// A fence already passed stands for a script that runs later than the fence allows.
	st.SweepFence = -time.Minute
	if n, handed, err := st.Sweep(context.Background(), "p1", []string{"x"}, nil); err != nil || n != 0 || handed != -1 {
		t.Fatalf("a sweep past its fence put back %d (hand-offs counted: %d, want -1: it did not run): %v", n, handed, err)
	}
	if n := rInt(t, pool, "LLEN", inprogress); n != 1 {
		t.Fatalf("a sweep past its fence changed the in-progress list: %d entries", n)
	}
	st.SweepFence = time.Minute
	rdo(t, pool, "SET", st.Ks.HandOffs("p1"), 7)
	if n, handed, err := st.Sweep(context.Background(), "p1", []string{"x"}, nil); err != nil || n != 1 || handed != 7 {
		t.Fatalf("a sweep in time put back %d, want 1, and counted %d hand-offs, want 7: %v", n, handed, err)
	}
	if n := rInt(t, pool, "LLEN", st.Ks.Jobs("x")); n != 1 {
		t.Fatalf("the queue holds %d jobs, want the one put back", n)
	}
}

// A hand-back returns once the jobs are back at the front of their queue: the pool's next fetch
// (which the hand-back's caller lets start) must take them before the jobs behind them, or a
// queue's jobs would run out of order.
func TestHandBackIsInRedisBeforeTheNextFetch(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	release := make(chan struct{})
	wp, f := startOneFetchedAhead(t, pool, ns, release, func() {}, "1", "2", "3")
	t.Cleanup(wp.Stop)
	t.Cleanup(func() { close(release) })
	f.mu.Lock()
	now := time.Now()
	f.handBack(now)                    // notes the last job taken
	f.handBack(now.Add(3 * time.Hour)) // long after it: job 2 goes back
	queued := rStrings(t, pool, "LRANGE", ns+":jobs:slow", 0, -1)
	f.mu.Unlock()
	if len(queued) != 2 {
		t.Fatalf("queue: %d jobs when the hand-back returned, want 2 and 3", len(queued))
	}
	if oldest, err := decodeJob([]byte(queued[1])); err != nil || oldest.ArgString("n") != "2" {
		t.Fatalf("fetch end of the queue: %s, want job 2", queued[1])
	}
}

// startOneFetchedAhead starts a pool of one worker whose "slow" jobs (args n, enqueued in the
// order given) wait for release and then call ended, and returns it once the first job runs and
// the second is fetched ahead. Jobs are judged quick, so one is fetched ahead, and the pool never
// hands it back by itself; the caller stops the pool.
func startOneFetchedAhead(t *testing.T, pool *redis.Pool, ns string, release chan struct{}, ended func(), n ...string) (*WorkerPool, *fetcher) {
	t.Helper()
	started := make(chan string, len(n))
	wp := NewWorkerPool(stopCtx{}, 1, ns, pool)
	wp.Job("slow", func(j *Job) error {
		started <- j.ArgString("n")
		<-release
		ended()
		return nil
	})
	e := NewEnqueuer(ns, pool)
	wp.Start()
	f := wp.reg.run.fetcher
	f.mu.Lock()
	f.room.meanRun.Store(int64(aheadWait)) // a job fetched ahead per worker
	f.handBackAfter = time.Hour
	f.mu.Unlock()
	for _, v := range n {
		if _, err := e.Enqueue("slow", Q{"n": v}); err != nil {
			t.Fatal(err)
		}
	}
	if got := <-started; got != n[0] {
		t.Fatalf("first job run: %s, want %s", got, n[0])
	}
	// Concurrency 1 with jobs of a millisecond holds one job running and one fetched ahead.
	eventually(t, 5*time.Second, "one job fetched ahead", func() bool {
		return rInt(t, pool, "LLEN", ns+":jobs:slow:"+wp.workerPoolID+":inprogress") == 2
	})
	return wp, f
}
