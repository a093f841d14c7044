package work

import (
	"context"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// childProcess starts a process of this machine and returns the identity a pool of it would write,
// with the process (the test kills it at its end).
func childProcess(t *testing.T) (string, *exec.Cmd) {
	t.Helper()
	self := ownIdentity()
	if self.machine == "" {
		t.Skip("no process identity here (no /proc of this PID namespace)")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start a child process:", err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	_, _, start, err := readStat(procRoot + "/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	if err != nil {
		t.Fatal(err)
	}
	return self.machine + strconv.Itoa(cmd.Process.Pid) + "/" + start, cmd
}

// deadProcess returns the identity a pool of a process of this machine would have written, after
// that process has ended.
func deadProcess(t *testing.T) string {
	t.Helper()
	id, cmd := childProcess(t)
	cmd.Process.Kill()
	cmd.Wait()
	return id
}

// fakePool registers a pool that heartbeat just now, declares a dead-pool timeout of an hour, has
// the given process identity and holds one job of name "a" in its in-progress list.
func fakePool(t *testing.T, pool *redis.Pool, ns, id, process string) {
	t.Helper()
	ks := rdb.NewKeyspace(ns)
	held, err := newJob("a", Q{"from": id}).serialize()
	if err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "LPUSH", ks.InProgress("a", id), held)
	rdo(t, pool, "HSET", ks.Heartbeat(id), "heartbeat_at", time.Now().Unix(), "job_names", "a",
		"dead_after", 3600, "process", process, "pid", 1)
	rdo(t, pool, "SADD", ks.WorkerPools(), id)
}

// A pool that starts takes back at once the jobs of a pool of this machine whose process is gone,
// though its heartbeat is fresh; so does the heartbeat of a pool already running. Only the proof
// can have done it: the dead pools declare a dead-pool timeout of an hour.
func TestPoolsReapAPoolWhoseProcessIsGone(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	gone := deadProcess(t)
	var mu sync.Mutex
	ran := map[string]bool{}
	record := func(j *Job) error {
		mu.Lock()
		ran[j.ArgString("from")] = true
		mu.Unlock()
		return nil
	}
	didRun := func(id string) func() bool {
		return func() bool { mu.Lock(); defer mu.Unlock(); return ran[id] }
	}

	fakePool(t, pool, ns, "crashed", gone)
	wp := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: time.Hour}).Job("a", record))
	// The first heartbeat, in Start, has reaped it.
	if n := rInt(t, pool, "SISMEMBER", ks.WorkerPools(), "crashed"); n != 0 {
		t.Error("the crashed pool is still registered after Start")
	}
	eventually(t, 20*time.Second, "the crashed pool's job to run", didRun("crashed"))

	// One that dies while the pool runs: its next heartbeat takes the job back.
	fakePool(t, pool, ns, "crashed2", gone)
	eventually(t, 20*time.Second, "the second crashed pool's job to run", didRun("crashed2"))
	hb, err := redis.StringMap(rdo(t, pool, "HGETALL", ks.Heartbeat(wp.workerPoolID)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hb["process"] != ownIdentity().id || hb["dead_after"] != "3600" {
		t.Errorf("heartbeat %v: want process %q and dead_after 3600", hb, ownIdentity().id)
	}
}

// A pool of this machine that a heartbeat no longer looks at (while the pools stay the same, each
// looks at the two live-looking ones after it in the order of IDs) is still reaped at once when its
// process ends: the pool learnt of it when it looked at every pool, and checks its process at each
// heartbeat.
func TestAPoolOfThisMachineNotLookedAtIsReapedWhenItsProcessEnds(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	process, cmd := childProcess(t)
	var ran atomic.Int64
	var target string
	wp := NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: time.Hour}).
		Job("a", func(j *Job) error {
			if j.ArgString("from") == target {
				ran.Add(1)
			}
			return nil
		})
	target = wp.workerPoolID + "~3"
	// "~" sorts after the characters of pool IDs: the two pools of no known process come right after
	// the pool, the one of the child process after them.
	ks := rdb.NewKeyspace(ns)
	for _, id := range []string{wp.workerPoolID + "~1", wp.workerPoolID + "~2"} {
		fakePool(t, pool, ns, id, "")
		// A heartbeat an hour ahead: never late, so the pool looks no further.
		rdo(t, pool, "HSET", ks.Heartbeat(id), "heartbeat_at", time.Now().Unix()+3600)
	}
	fakePool(t, pool, ns, target, process)
	bhvStart(t, wp)
	first := rInt(t, pool, "HGET", ks.Heartbeat(wp.workerPoolID), "heartbeat_at")
	eventually(t, 30*time.Second, "two more heartbeats", func() bool {
		return rInt(t, pool, "HGET", ks.Heartbeat(wp.workerPoolID), "heartbeat_at") >= first+2
	})
	if n := ran.Load(); n != 0 {
		t.Fatalf("the job of the pool whose process runs ran %d times", n)
	}
	cmd.Process.Kill()
	cmd.Wait()
	eventually(t, 20*time.Second, "the job of the pool whose process ended to run", func() bool { return ran.Load() == 1 })
}

// No pool is reaped on a proof it cannot make: a pool whose process still runs, one of another
// machine (or boot) and one of another PID namespace keep their jobs while their heartbeats are
// fresh.
func TestPoolsKeepPeersTheyCannotProveGone(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	gone := deadProcess(t)
	self := ownIdentity()
	rest := gone[len(self.machine):]
	peers := map[string]string{
		"alive":     self.id,
		"elsewhere": "00000000-0000-0000-0000-000000000000" + self.machine[strings.IndexByte(self.machine, '/'):] + rest,
		"otherns":   self.machine[:strings.IndexByte(self.machine, '/')+1] + "1/" + rest,
	}
	for id, process := range peers {
		fakePool(t, pool, ns, id, process)
	}
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: time.Hour}).
		Job("a", func(*Job) error { ran.Add(1); return nil }))
	// Three heartbeats after the first one.
	first := rInt(t, pool, "HGET", ks.Heartbeat(wp.workerPoolID), "heartbeat_at")
	eventually(t, 30*time.Second, "three more heartbeats", func() bool {
		return rInt(t, pool, "HGET", ks.Heartbeat(wp.workerPoolID), "heartbeat_at") >= first+3
	})
	for id := range peers {
		if n := rInt(t, pool, "LLEN", ks.InProgress("a", id)); n != 1 {
			t.Errorf("pool %s: %d jobs in its in-progress list, want its 1", id, n)
		}
	}
	if n := ran.Load(); n != 0 {
		t.Errorf("%d jobs ran, want none", n)
	}
}

// A pool whose heartbeat finds it was reaped while a job ran (its heartbeat hash gone) cancels the
// job's context and drops its outcome: the job is back in its queue and runs again, once, to the end.
func TestReapedPoolCancelsTheJobsItRan(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	started, stop := make(chan struct{}, 1), make(chan struct{})
	causes := make(chan error, 1)
	wp := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 1, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}).
		Job("a", func(ctx context.Context, j *Job) error {
			if runs.Add(1) > 1 {
				return nil
			}
			started <- struct{}{}
			select {
			case <-ctx.Done():
				causes <- context.Cause(ctx)
			case <-stop: // the test failed: let the pool stop
			}
			return ctx.Err()
		}))
	t.Cleanup(func() { close(stop) })
	if _, err := NewEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	<-started
	// What another pool does to this one once its heartbeat is older than DeadPoolTimeout.
	if n, err := wp.store.Reap(context.Background(), wp.workerPoolID, []string{"a"}, -1); err != nil || n != 1 {
		t.Fatalf("reap: %d jobs, %v; want 1", n, err)
	}
	select {
	case err := <-causes:
		if !errors.Is(err, ErrPoolReaped) {
			t.Errorf("the running job's context ended with %v, want ErrPoolReaped", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the running job's context was not cancelled after the pool was reaped")
	}
	eventually(t, 20*time.Second, "the job to run again", func() bool { return runs.Load() == 2 })
	wp.Drain()
	ks := rdb.NewKeyspace(ns)
	if n := rInt(t, pool, "ZCARD", ks.Retry()); n != 0 {
		t.Errorf("%d jobs in the retry set: the cancelled run's outcome was written", n)
	}
	if n := rInt(t, pool, "SISMEMBER", ks.WorkerPools(), wp.workerPoolID); n != 1 {
		t.Error("the pool is not registered again")
	}
}

// A pool whose heartbeats do not get through fetches no job once DeadPoolTimeout may have passed
// since the last that did, and fetches again when one does.
func TestPoolFetchesNothingWhileItsHeartbeatIsStale(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 1, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 2 * time.Second}).
		Job("a", func(*Job) error { ran.Add(1); return nil }))
	r := wp.reg.run
	// Heartbeats wait for the heartbeater's lock: holding it stands for a frozen heartbeat.
	r.heartbeater.mu.Lock()
	eventually(t, 20*time.Second, "the lease to go stale", func() bool { return !r.lease.fresh(time.Now()) })
	if _, err := NewEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(1500 * time.Millisecond) // a wake-up and a look would have fetched it by now
	if n := ran.Load(); n != 0 {
		t.Errorf("%d jobs ran while the pool's heartbeat was stale", n)
	}
	r.heartbeater.mu.Unlock()
	eventually(t, 20*time.Second, "the job to run once heartbeats get through", func() bool { return ran.Load() == 1 })
}

// A job fetched before the pool found itself reaped is not handed to a worker: its reaper put it
// back, and another pool may run it.
func TestFetcherDropsJobsOfAnEarlierEpoch(t *testing.T) {
	wp := NewWorkerPoolWithOptions(bhvCtx{}, 1, "ns", newTestPool(t), WorkerPoolOptions{})
	wp.Job("a", func(*Job) error { return nil })
	r := newPoolRun(wp)
	f := r.fetcher
	r.lease.renew(time.Now())
	old := &Job{q: r.jobs().queues["a"]}
	f.room.reserve()
	f.p.out.hold(old)
	f.jobs <- old
	r.lease.lost()
	current := &Job{q: r.jobs().queues["a"], epoch: r.lease.epoch.Load()}
	f.room.reserve()
	f.p.out.hold(current)
	f.jobs <- current
	if j, ok := f.take(); !ok || j != current {
		t.Fatalf("take returned %p, want the job of the current epoch %p", j, current)
	}
	if held := f.room.held.Load(); held != 1 {
		t.Errorf("room holds %d jobs, want 1 (the dropped one released)", held)
	}
	if n := len(f.p.out.heldEntries()["a"]); n != 1 {
		t.Errorf("%d jobs held in flight, want 1 (the dropped one forgotten)", n)
	}
	// A job dropped after a sweep makes the next sweep due, fetch or not: its entry may be in the
	// pool's in-progress list (fetched after the reap), and nothing else would put it back.
	if f.p.out.heldSinceSweep() {
		t.Fatal("a sweep just took the held entries, and another is due already")
	}
	late := &Job{q: r.jobs().queues["a"]}
	f.room.reserve()
	f.p.out.hold(late)
	f.p.out.heldEntries() // a sweep while it is held
	f.jobs <- late
	f.jobs <- &Job{q: r.jobs().queues["a"], epoch: r.lease.epoch.Load()}
	if _, ok := f.take(); !ok {
		t.Fatal("take returned no job")
	}
	if !f.p.out.heldSinceSweep() {
		t.Error("a job dropped after the last sweep does not make the next one due")
	}
}

// A pool waits for another's heartbeat as long as that pool declares (dead_after), and at least 10s
// for one that declares none (a pool of gocraft/work, which heartbeats every 5s, or of an earlier
// version), whatever its own DeadPoolTimeout.
func TestPoolsWaitTheDeadPoolTimeoutAPoolDeclares(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	old := time.Now().Unix() - 4
	for id, declared := range map[string]interface{}{"declared": 1, "patient": 60, "legacy": nil} {
		held, err := newJob("a", Q{"from": id}).serialize()
		if err != nil {
			t.Fatal(err)
		}
		rdo(t, pool, "LPUSH", ks.InProgress("a", id), held)
		rdo(t, pool, "HSET", ks.Heartbeat(id), "heartbeat_at", old, "job_names", "a")
		if declared != nil {
			rdo(t, pool, "HSET", ks.Heartbeat(id), "dead_after", declared)
		}
		rdo(t, pool, "SADD", ks.WorkerPools(), id)
	}
	bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}).
		Job("a", func(*Job) error { return nil }))
	// 4s old, past this pool's 3s and the 1s the pool declares.
	eventually(t, 20*time.Second, "the pool that declares 1s to be reaped", func() bool {
		return rInt(t, pool, "SISMEMBER", ks.WorkerPools(), "declared") == 0
	})
	for _, id := range []string{"patient", "legacy"} {
		if n := rInt(t, pool, "LLEN", ks.InProgress("a", id)); n != 1 {
			t.Errorf("pool %s, heartbeat %ds old: %d jobs left in its in-progress list, want its 1",
				id, time.Now().Unix()-old, n)
		}
	}
}
