package work

import (
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

// deadProcess returns the identity a pool of a process of this machine would have written, after
// that process has ended.
func deadProcess(t *testing.T) string {
	t.Helper()
	self := ownIdentity()
	if self.machine == "" {
		t.Skip("no process identity here (no /proc of this PID namespace)")
	}
	cmd := exec.Command("sleep", "60")
	if err := cmd.Start(); err != nil {
		t.Skip("cannot start a child process:", err)
	}
	_, _, start, err := readStat(procRoot + "/" + strconv.Itoa(cmd.Process.Pid) + "/stat")
	cmd.Process.Kill()
	cmd.Wait()
	if err != nil {
		t.Fatal(err)
	}
	return self.machine + strconv.Itoa(cmd.Process.Pid) + "/" + start
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
