package work

// Calls gocraft/work's WorkerPool accepts, checked against this package: each test states what
// gocraft/work v0.5.1 does and checks that a pool of this package does the same.

import (
	"context"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// gocraft/work runs a pool of concurrency 0: it runs no jobs but heartbeats (concurrency 0, no
// worker IDs), moves due scheduled jobs to their queues, puts back the jobs of dead pools, enqueues
// its periodic jobs, and its Drain returns at once.
func TestCompatConcurrencyZeroPoolRunsEverythingButJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	var ran atomic.Int64
	count := func(*Job) error { ran.Add(1); return nil }

	// A dead pool's job, for the reaper to put back.
	held, err := newJob("z", Q{"held": true}).serialize()
	if err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "SADD", ks.WorkerPools(), "deadpool")
	rdo(t, pool, "HSET", ks.Heartbeat("deadpool"), "heartbeat_at", time.Now().Unix()-3600, "job_names", "z")
	rdo(t, pool, "LPUSH", ks.InProgress("z", "deadpool"), held)

	wp := NewWorkerPoolWithOptions(bhvCtx{}, 0, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second})
	wp.Job("z", count).PeriodicallyEnqueue("0 * * * * *", "per")
	wp.Start()
	t.Cleanup(wp.Stop)

	hb, err := redis.StringMap(rdo(t, pool, "HGETALL", ks.Heartbeat(wp.workerPoolID)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if hb["concurrency"] != "0" || hb["worker_ids"] != "" || hb["job_names"] != "z" {
		t.Errorf("heartbeat %v: want concurrency 0, no worker IDs, job_names z", hb)
	}
	if _, err := NewEnqueuer(ns, pool).EnqueueIn("z", -5, Q{"due": true}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "the due job and the dead pool's job queued", func() bool {
		return rInt(t, pool, "LLEN", ks.Jobs("z")) == 2
	})
	if n := rInt(t, pool, "EXISTS", ks.InProgress("z", "deadpool")); n != 0 {
		t.Error("the dead pool's in-progress list is still there")
	}
	eventually(t, 10*time.Second, "the periodic job scheduled", func() bool {
		for _, m := range rStrings(t, pool, "ZRANGE", ks.Scheduled(), 0, -1) {
			if strings.HasPrefix(m, `{"name":"per",`) {
				return true
			}
		}
		return false
	})
	obs, err := NewClient(ns, pool).WorkerObservations()
	if err != nil || len(obs) != 0 {
		t.Errorf("observations %v, %v: want none for a pool without workers", obs, err)
	}

	done := make(chan struct{})
	go func() { wp.Drain(); close(done) }()
	bhvWait(t, done, "Drain of a pool without workers to return")
	// Nothing fetched: a job it held would wait for its Stop.
	if n, held := rInt(t, pool, "LLEN", ks.Jobs("z")), rInt(t, pool, "LLEN", ks.InProgress("z", wp.workerPoolID)); n != 2 || held != 0 {
		t.Errorf("queue z holds %d jobs and the pool %d: a pool of concurrency 0 fetched jobs", n, held)
	}
	wp.Stop()
	if n := ran.Load(); n != 0 {
		t.Errorf("a pool of concurrency 0 ran %d jobs", n)
	}
	if n := rInt(t, pool, "EXISTS", ks.Heartbeat(wp.workerPoolID)); n != 0 {
		t.Error("heartbeat left after Stop")
	}

	// It held none of them: a pool with a worker runs both.
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("z", count)).Drain()
	if n := ran.Load(); n != 2 {
		t.Errorf("the pool with a worker ran %d jobs, want 2", n)
	}
}

// On gocraft/work's zero WorkerPool, Stop and Drain do nothing.
func TestCompatZeroWorkerPoolStopAndDrainDoNothing(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	go func() {
		defer close(done)
		var wp WorkerPool
		wp.Stop()
		wp.Drain()
		if err := wp.StopContext(context.Background()); err != nil {
			t.Errorf("StopContext: %v", err)
		}
	}()
	bhvWait(t, done, "Stop and Drain of a zero WorkerPool to return")
}

// Programs read unexported fields of gocraft/work's WorkerPool by reflection (Harbor's job service
// takes the pool's ID from workerPoolID, copying the value): the fields keep their names and types.
func TestCompatPoolFieldsReadByReflection(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).Job("r", bhvNoop))
	v := reflect.ValueOf(*wp)
	id := v.FieldByName("workerPoolID").String()
	hbs, err := NewClient(ns, pool).WorkerPoolHeartbeats()
	if err != nil {
		t.Fatal(err)
	}
	if len(hbs) != 1 || hbs[0].WorkerPoolID != id || !bhvHexID.MatchString(id) {
		t.Errorf("workerPoolID %q, heartbeats %v: want the pool's ID", id, hbs)
	}
	if c := v.FieldByName("concurrency").Uint(); c != 3 {
		t.Errorf("concurrency = %d", c)
	}
	if n := v.FieldByName("namespace").String(); n != ns {
		t.Errorf("namespace = %q", n)
	}
	if p := v.FieldByName("pool"); p.Type() != reflect.TypeOf(pool) || p.Pointer() != reflect.ValueOf(pool).Pointer() {
		t.Errorf("pool field: %v", p)
	}
}

// gocraft/work's observation of a busy worker holds args "" for a job without args (nil or empty),
// and no checkin fields after Checkin("").
func TestCompatObservationsOfJobsWithoutArgsOrCheckin(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := newBhvGate()
	started := make(chan struct{}, 3)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).Job("o", func(j *Job) error {
		j.Checkin("")
		started <- struct{}{}
		gate.Wait()
		return nil
	}))
	t.Cleanup(gate.Open)
	e := NewEnqueuer(ns, pool)
	want := map[string]string{} // job ID -> args of its observation
	for _, args := range []map[string]interface{}{nil, {}, {"a": 1}} {
		j, err := e.Enqueue("o", args)
		if err != nil {
			t.Fatal(err)
		}
		want[j.ID] = ""
		if len(args) > 0 {
			want[j.ID] = `{"a":1}`
		}
	}
	for i := 0; i < 3; i++ {
		bhvWait(t, started, "the jobs to start")
	}
	c := NewClient(ns, pool)
	var obs []*WorkerObservation
	eventually(t, 10*time.Second, "three busy workers observed", func() bool {
		obs, _ = c.WorkerObservations()
		n := 0
		for _, o := range obs {
			if _, ok := want[o.JobID]; ok {
				n++
			}
		}
		return n == 3
	})
	for _, o := range obs {
		if o.ArgsJSON != want[o.JobID] || o.Checkin != "" || o.CheckinAt != 0 {
			t.Errorf("observation of job %s: args %q, checkin %q at %d; want args %q and no check-in",
				o.JobID, o.ArgsJSON, o.Checkin, o.CheckinAt, want[o.JobID])
		}
	}
}

// gocraft/work's pool can be drained twice in a row, and started again after Stop with the same ID,
// running what was enqueued meanwhile.
func TestCompatDrainTwiceAndStartAfterStop(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("d", func(*Job) error { ran.Add(1); return nil })
	e := NewEnqueuer(ns, pool)
	enqueue := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := e.Enqueue("d", Q{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
	}
	wp.Start()
	t.Cleanup(wp.Stop)
	enqueue(3)
	done := make(chan struct{})
	go func() { wp.Drain(); wp.Drain(); close(done) }()
	bhvWait(t, done, "two Drains to return")
	if n := ran.Load(); n != 3 {
		t.Fatalf("ran %d jobs after Drain, want 3", n)
	}
	id := wp.workerPoolID
	wp.Stop()
	enqueue(2)
	wp.Start()
	done = make(chan struct{})
	go func() { wp.Drain(); close(done) }()
	bhvWait(t, done, "Drain after a restart to return")
	if n := ran.Load(); n != 5 {
		t.Errorf("ran %d jobs, want 5", n)
	}
	if ids := rStrings(t, pool, "SMEMBERS", bhvKey(ns, "worker_pools")); len(ids) != 1 || ids[0] != id {
		t.Errorf("worker_pools %v after a restart, want the same pool ID %s", ids, id)
	}
}
