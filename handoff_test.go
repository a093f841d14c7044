package work

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/rdb"
)

// handOffPool starts a pool of one job name "a", counting its runs, and returns once the pool has
// registered for hand-offs of "a" (its first look found the queue empty).
func handOffPool(t *testing.T) (*WorkerPool, *redis.Pool, string, *atomic.Int64) {
	t.Helper()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	startWaitingForA(t, wp, pool, ns, &runs)
	return wp, pool, ns, &runs
}

// startWaitingForA registers a job "a" on wp that counts its runs, starts wp and returns once it
// has registered for hand-offs of "a".
func startWaitingForA(t *testing.T, wp *WorkerPool, pool *redis.Pool, ns string, runs *atomic.Int64) {
	t.Helper()
	wp.Job("a", func(*Job) error { runs.Add(1); return nil })
	bhvStart(t, wp)
	wp.Drain()
	eventually(t, 10*time.Second, "the pool to subscribe", wp.reg.run.fetcher.ready.subscribed.Load)
	eventually(t, 10*time.Second, "the pool to wait for hand-offs of a", func() bool {
		return sismember(t, pool, bhvKey(ns, "idle_pools", "a"), wp.reg.run.poolID)
	})
}

func sismember(t *testing.T, pool *redis.Pool, key, member string) bool {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	ok, err := redis.Bool(c.Do("SISMEMBER", key, member))
	if err != nil {
		t.Fatal(err)
	}
	return ok
}

func llen(t *testing.T, pool *redis.Pool, key string) int {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	n, err := redis.Int(c.Do("LLEN", key))
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// handingEnqueuer returns an Enqueuer whose next push of "a" expects the queue empty, so that it
// runs the hand-off (a fresh Enqueuer expects a backlog until a push finds the queue empty).
func handingEnqueuer(ns string, pool *redis.Pool) *Enqueuer {
	e := NewEnqueuer(ns, pool)
	f := new(atomic.Bool)
	f.Store(true)
	e.drained.Store("a", f)
	return e
}

// holdHandOffs makes the pool's subscription stop at the next hand-off until release is called.
func holdHandOffs(wp *WorkerPool) (release func()) {
	gate := make(chan struct{})
	hook := func() { <-gate }
	wp.reg.run.fetcher.handOffHook.Store(&hook)
	return func() { close(gate) }
}

// handOneHeld starts handOffPool's pool and hands it a job of "a" whose message the subscription
// holds up until release is called: the job is in the pool's in-progress list, not yet the pool's.
func handOneHeld(t *testing.T) (wp *WorkerPool, pool *redis.Pool, ns string, runs *atomic.Int64, release func()) {
	t.Helper()
	wp, pool, ns, runs = handOffPool(t)
	release = holdHandOffs(wp)
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	if n := llen(t, pool, bhvKey(ns, "jobs", "a", wp.reg.run.poolID, "inprogress")); n != 1 {
		t.Fatalf("in-progress entries after the hand-off: %d, want 1", n)
	}
	return wp, pool, ns, runs, release
}

// releaseAndRunOnce lets the held hand-off go on and checks that the job runs once; why says what a
// second run would mean.
func releaseAndRunOnce(t *testing.T, wp *WorkerPool, runs *atomic.Int64, release func(), why string) {
	t.Helper()
	release()
	eventually(t, 10*time.Second, "the job to run", func() bool { return runs.Load() >= 1 })
	wp.Drain()
	time.Sleep(200 * time.Millisecond) // a second run would have started by now
	if n := runs.Load(); n != 1 {
		t.Errorf("the job ran %d times, want once: %s", n, why)
	}
}

func TestAJobEnqueuedToAnIdlePoolIsHandedToIt(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	var handed atomic.Int64
	hook := func() { handed.Add(1) }
	wp.reg.run.fetcher.handOffHook.Store(&hook)
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job to run", func() bool { return runs.Load() == 1 })
	if handed.Load() != 1 {
		t.Errorf("the job reached the idle pool by a fetch, not handed to it")
	}
	// Its acknowledgement registers the pool again.
	eventually(t, 10*time.Second, "the pool to wait for hand-offs again", func() bool {
		return sismember(t, pool, bhvKey(ns, "idle_pools", "a"), wp.reg.run.poolID)
	})
}

// A pool with room for more stays waiting through a hand-off, so that the next job of the name is
// handed too, not pushed for a fetch; it stops waiting once the hand-offs it has not read fill its
// room (a fresh pool of two workers fetches nothing ahead: room for two), and every job runs once.
func TestAPoolWithRoomIsHandedJobsUntilItsRoomIsFull(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	release := holdHandOffs(wp)
	inProgress := bhvKey(ns, "jobs", "a", wp.reg.run.poolID, "inprogress")
	e := handingEnqueuer(ns, pool)
	for i := 1; i <= 3; i++ {
		if _, err := e.Enqueue("a", nil); err != nil {
			t.Fatal(err)
		}
		handed, queued := llen(t, pool, inProgress), llen(t, pool, bhvKey(ns, "jobs", "a"))
		waiting := sismember(t, pool, bhvKey(ns, "idle_pools", "a"), wp.reg.run.poolID)
		wantHanded, wantQueued := min(i, 2), max(0, i-2)
		if handed != wantHanded || queued != wantQueued || waiting != (i < 2) {
			t.Fatalf("after %d enqueues: %d handed, %d queued, pool waiting %v; want %d, %d, %v",
				i, handed, queued, waiting, wantHanded, wantQueued, i < 2)
		}
	}
	release()
	eventually(t, 10*time.Second, "the jobs to run", func() bool { return runs.Load() >= 3 })
	wp.Drain()
	time.Sleep(200 * time.Millisecond) // a second run would have started by now
	if n := runs.Load(); n != 3 {
		t.Errorf("%d runs of 3 jobs, want 3", n)
	}
}

func TestASweepLeavesAHandOffOnItsWay(t *testing.T) {
	wp, _, _, runs, release := handOneHeld(t)
	f := wp.reg.run.fetcher
	f.mu.Lock()
	f.sweeper.sweep()
	f.mu.Unlock()
	releaseAndRunOnce(t, wp, runs, release, "the sweep put it back on its way")
}

// A sweep made while the pool's subscription is down (it cannot wait for the hand-offs on their way)
// puts back a handed job whose message the pool has not read; when the message comes after all (on a
// subscription Redis took before the pool heard of it), the pool leaves it: the job runs once.
func TestAHandOffASweepPutBackIsLeft(t *testing.T) {
	wp, pool, ns, runs, release := handOneHeld(t)
	f := wp.reg.run.fetcher
	f.mu.Lock()
	f.ready.subscribed.Store(false)
	f.sweeper.sweep()
	f.ready.subscribed.Store(true)
	f.mu.Unlock()
	if n := llen(t, pool, bhvKey(ns, "jobs", "a", wp.reg.run.poolID, "inprogress")); n != 0 {
		t.Fatalf("in-progress entries after the sweep: %d, want 0 (the handed job put back)", n)
	}
	releaseAndRunOnce(t, wp, runs, release, "the pool ran a hand-off the sweep had put back")
}

func TestDrainWaitsForAHandOffOnItsWay(t *testing.T) {
	wp, _, _, runs, release := handOneHeld(t)
	drained := make(chan struct{})
	go func() { wp.Drain(); close(drained) }()
	select {
	case <-drained:
		t.Errorf("Drain returned with a job handed to the pool on its way")
	case <-time.After(300 * time.Millisecond):
	}
	release()
	<-drained
	if n := runs.Load(); n != 1 {
		t.Errorf("the handed job ran %d times by the end of Drain, want once", n)
	}
}

func TestAPausedQueueIsNotHandedOn(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	if err := NewClient(ns, pool).PauseQueue("a"); err != nil {
		t.Fatal(err)
	}
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	if n := llen(t, pool, bhvKey(ns, "jobs", "a")); n != 1 {
		t.Errorf("the paused queue holds %d jobs, want 1", n)
	}
	if !sismember(t, pool, bhvKey(ns, "idle_pools", "a"), wp.reg.run.poolID) {
		t.Errorf("the enqueue to a paused queue took the pool's registration")
	}
	time.Sleep(100 * time.Millisecond)
	if n := runs.Load(); n != 0 {
		t.Errorf("a job of a paused queue ran %d times", n)
	}
}

func TestAStaleRegistrationIsSkipped(t *testing.T) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("SADD", bhvKey(ns, "idle_pools", "a"), "gone"); err != nil {
		t.Fatal(err)
	}
	e := handingEnqueuer(ns, pool)
	if _, err := e.Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	if n := llen(t, pool, bhvKey(ns, "jobs", "a")); n != 1 {
		t.Errorf("the queue holds %d jobs, want 1: the job went to a pool with no heartbeat", n)
	}
	if sismember(t, pool, bhvKey(ns, "idle_pools", "a"), "gone") {
		t.Errorf("the registration of a pool with no heartbeat stayed")
	}
}

func TestAStoppedPoolLeavesTheIdleSets(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	id := wp.reg.run.poolID
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job to run", func() bool { return runs.Load() == 1 })
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "handoffs", id)); n != 1 {
		t.Fatalf("no count of the hand-offs made to the pool")
	}
	eventually(t, 10*time.Second, "the pool to wait for hand-offs again", func() bool {
		return sismember(t, pool, bhvKey(ns, "idle_pools", "a"), id)
	})
	wp.Stop()
	if sismember(t, pool, bhvKey(ns, "idle_pools", "a"), id) {
		t.Errorf("a stopped pool still waits for hand-offs")
	}
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "handoffs", id)); n != 0 {
		t.Errorf("a stopped pool left its count of hand-offs")
	}
}

// TestAFetchWaitsBehindAHandOffOnItsWay: a job handed to the pool, its message not read yet, comes
// before the jobs of a fetch that ran after the hand-off was made, and that fetch leaves its room.
func TestAFetchWaitsBehindAHandOffOnItsWay(t *testing.T) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var mu sync.Mutex
	var order []int
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	wp.Job("a", func(j *Job) error {
		mu.Lock()
		order = append(order, int(j.ArgInt64("n")))
		mu.Unlock()
		return nil
	})
	bhvStart(t, wp)
	wp.Drain()
	f := wp.reg.run.fetcher
	eventually(t, 10*time.Second, "the pool to subscribe", f.ready.subscribed.Load)
	eventually(t, 10*time.Second, "the pool to wait for hand-offs of a", func() bool {
		return sismember(t, pool, bhvKey(ns, "idle_pools", "a"), wp.reg.run.poolID)
	})
	release := holdHandOffs(wp)
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", Q{"n": 1}); err != nil {
		t.Fatal(err)
	}
	// The pool no longer waits for hand-offs: these go to the queue.
	for n := 2; n <= 4; n++ {
		if _, err := NewEnqueuer(ns, pool).Enqueue("a", Q{"n": n}); err != nil {
			t.Fatal(err)
		}
	}
	// A fetch with room for 2 jobs, one of them the hand-off's: it takes one job, which waits.
	f.ready.notify("a", false)
	if n := llen(t, pool, bhvKey(ns, "jobs", "a")); n != 2 {
		t.Errorf("the queue holds %d jobs after the fetch, want 2: the fetch took the hand-off's room", n)
	}
	time.Sleep(50 * time.Millisecond)
	mu.Lock()
	ran := len(order)
	mu.Unlock()
	if ran != 0 {
		t.Errorf("%d jobs ran before the job handed to the pool was read", ran)
	}
	release()
	wp.Drain()
	mu.Lock()
	defer mu.Unlock()
	// Two workers start the first two together.
	if len(order) != 4 || order[0]+order[1] != 3 {
		t.Errorf("jobs ran in the order %v, want the handed one and the one fetched behind it first", order)
	}
}

// TestAPoolUnderABacklogDoesNotRegister: outcomes recorded while the pool's fetches leave jobs in
// the queue do not register the pool for hand-offs (a push to a queue that holds jobs hands none
// off); the fetch that finds the queue empty does.
func TestAPoolUnderABacklogDoesNotRegister(t *testing.T) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gates := []*bhvGate{newBhvGate(), newBhvGate()}
	for _, g := range gates {
		t.Cleanup(g.Open)
	}
	var started atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool)
	wp.Job("a", func(j *Job) error {
		started.Add(1)
		if n := j.ArgInt64("n"); n <= 2 {
			gates[n-1].Wait()
		}
		return nil
	})
	bhvStart(t, wp)
	id := wp.reg.run.poolID
	enq := NewEnqueuer(ns, pool)
	for n := 1; n <= 3; n++ {
		if _, err := enq.Enqueue("a", Q{"n": n}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the first job to start", func() bool { return started.Load() == 1 })
	// Registered while the pool was idle: taken off by hand, as a hand-off would.
	rdo(t, pool, "SREM", bhvKey(ns, "idle_pools", "a"), id)
	gates[0].Open()
	inprogress := bhvKey(ns, "jobs", "a", id, "inprogress")
	eventually(t, 10*time.Second, "the first job's outcome written, the second job running", func() bool {
		return started.Load() == 2 && llen(t, pool, inprogress) == 1
	})
	if sismember(t, pool, bhvKey(ns, "idle_pools", "a"), id) {
		t.Errorf("an outcome recorded while the queue held a job registered the pool for hand-offs")
	}
	gates[1].Open()
	wp.Drain()
	if started.Load() != 3 {
		t.Fatalf("%d jobs ran, want 3", started.Load())
	}
	eventually(t, 10*time.Second, "the pool to wait for hand-offs once the queue is empty", func() bool {
		return sismember(t, pool, bhvKey(ns, "idle_pools", "a"), id)
	})
}

// TestLostHandOffMessagesDoNotStallFetches: hand-offs counted in Redis whose messages never come
// (lost with a subscription or a restarted Redis) stop holding room within markerWait: the pool's
// fetches take jobs again.
func TestLostHandOffMessagesDoNotStallFetches(t *testing.T) {
	wp, pool, ns, runs := lostHandOffPool(t)
	rdo(t, pool, "INCRBY", bhvKey(ns, "handoffs", wp.reg.run.poolID), 5) // never read
	enqueueAAndRun(t, pool, ns, runs, 3)
}

// lostHandOffPool starts a pool of one worker waiting for hand-offs of "a" (startWaitingForA), for
// the tests of hand-offs counted in Redis whose messages never come.
func lostHandOffPool(t *testing.T) (*WorkerPool, *redis.Pool, string, *atomic.Int64) {
	t.Helper()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool)
	startWaitingForA(t, wp, pool, ns, &runs)
	return wp, pool, ns, &runs
}

// enqueueAAndRun enqueues n jobs of "a" and waits for runs to count them all.
func enqueueAAndRun(t *testing.T, pool *redis.Pool, ns string, runs *atomic.Int64, n int) {
	t.Helper()
	for i := 1; i <= n; i++ {
		if _, err := NewEnqueuer(ns, pool).Enqueue("a", Q{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the jobs to run", func() bool { return runs.Load() == int64(n) })
}

// TestAFetchOfNothingBehindLostHandOffsLeavesNoStall: a fetch that finds no job while hand-offs are
// unread puts nothing behind them and leaves no bound armed, so the jobs of a later fetch behind
// hand-offs that never come (lost again, as after a restarted Redis that lost its last writes) get
// one of their own and go to the workers. Before, the first fetch armed the bound, which fired on
// nothing and stayed armed: the later jobs waited for the lost hand-offs, and a pool whose room they
// filled never fetched again (the faults scenario b', where Redis restarts from an append-only file
// that lost its last second, failed so in 6 of 9 runs with -race).
func TestAFetchOfNothingBehindLostHandOffsLeavesNoStall(t *testing.T) {
	wp, pool, ns, runs := lostHandOffPool(t)
	f := wp.reg.run.fetcher
	handed := bhvKey(ns, "handoffs", wp.reg.run.poolID)
	rdo(t, pool, "INCRBY", handed, 5)
	f.ready.notify("a", false) // a fetch of an empty queue, behind five hand-offs never read
	time.Sleep(markerWait + 500*time.Millisecond)
	f.batchMu.Lock()
	armed, behind := f.behindTimer, len(f.behind)
	f.batchMu.Unlock()
	if armed && behind == 0 {
		t.Errorf("a bound is armed with no job behind it: the next jobs behind would get none")
	}
	rdo(t, pool, "INCRBY", handed, 5)
	// More jobs than the pool has room for: those fetched fill it, so it fetches no more until they
	// go to the workers.
	enqueueAAndRun(t, pool, ns, runs, 50)
}

// A job handed to a pool before another pool reaped it (its reaper put the job back) is not run by
// the pool when it reads the hand-off after its heartbeat found it reaped: the job runs once, from
// its queue.
func TestAHandOffFromBeforeTheReapIsLeft(t *testing.T) {
	wp, _, _, runs, release := handOneHeld(t)
	r := wp.reg.run
	// What another pool does once this one's heartbeat is older than DeadPoolTimeout.
	if n, err := wp.store.Reap(context.Background(), r.poolID, []string{"a"}, -1); err != nil || n != 1 {
		t.Fatalf("reap: %d jobs, %v; want 1", n, err)
	}
	epoch := r.lease.epoch.Load()
	r.heartbeater.beat()
	if r.lease.epoch.Load() != epoch+1 {
		t.Fatal("the pool's heartbeat did not find it reaped")
	}
	releaseAndRunOnce(t, wp, runs, release, "the pool ran the hand-off made before it was reaped")
}

// A heartbeat that finds the pool reaped writes the pool's next epoch; when its reply is lost, the
// next heartbeat still reports the reap (the hash holds a later epoch than the pool's).
func TestAHeartbeatWhoseReplyWasLostStillReportsTheReap(t *testing.T) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	st := rdb.NewStore(ns, PoolBackend(pool))
	hb := &rdb.PoolHeartbeat{PoolID: "p1", StartedAt: 1, JobNames: []string{"a"}, MaxConcurrency: []uint{0},
		Concurrency: 1, Host: "h", Pid: 1}
	beat := func() bool {
		t.Helper()
		res, err := st.Heartbeat(context.Background(), hb, nil, 10, 2, false)
		if err != nil {
			t.Fatal(err)
		}
		hb.Registered = true
		return res.Reaped
	}
	if beat() {
		t.Fatal("the first heartbeat reported a reap")
	}
	for i := 0; i < 3; i++ {
		if beat() {
			t.Fatalf("heartbeat %d of a pool never reaped reported a reap", i+2)
		}
	}
	rdo(t, pool, "DEL", st.Ks.Heartbeat("p1"))
	if !beat() {
		t.Fatal("the heartbeat after the hash was deleted did not report the reap")
	}
	// Its reply lost: the pool still counts epoch 0.
	if !beat() {
		t.Error("the next heartbeat of epoch 0 did not report the reap")
	}
	hb.Epoch = 1
	if beat() {
		t.Error("a heartbeat of the pool's new epoch reported a reap")
	}
	if e := rInt(t, pool, "HGET", st.Ks.Heartbeat("p1"), "epoch"); e != 1 {
		t.Errorf("the heartbeat holds epoch %d, want 1", e)
	}
}

// A hand-off the pool leaves (its number is one a sweep counted: the count went back, as when Redis
// lost writes in a restart) makes the next sweep due, which puts the job back; the pool then runs
// it from its queue. Before, an idle pool left it in its in-progress list until its slow sweep.
func TestAHandOffThePoolLeavesIsSweptSoon(t *testing.T) {
	wp, pool, ns, runs := handOffPool(t)
	f := wp.reg.run.fetcher
	f.batchMu.Lock()
	f.sweptHandOffs = 1 << 40
	f.batchMu.Unlock()
	if _, err := handingEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the job run from its queue after the sweep", func() bool { return runs.Load() == 1 })
	wp.Drain()
	if n := llen(t, pool, bhvKey(ns, "jobs", "a", wp.reg.run.poolID, "inprogress")); n != 0 {
		t.Fatalf("%d jobs left in progress", n)
	}
}
