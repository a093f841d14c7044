package work

import (
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// orderRecorder keeps the order in which jobs ran.
type orderRecorder struct {
	mu    sync.Mutex
	order []string
}

func (o *orderRecorder) add(s string) {
	o.mu.Lock()
	o.order = append(o.order, s)
	o.mu.Unlock()
}

func (o *orderRecorder) get() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return append([]string(nil), o.order...)
}

func TestChainRunsItsStepsInOrder(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var rec orderRecorder
	jobs, err := e.EnqueueChain(ChainStep{Name: "fetch", Args: Q{"n": 1}}, ChainStep{Name: "resize"}, ChainStep{Name: "publish"})
	if err != nil {
		t.Fatal(err)
	}
	// Only the first step is queued; the others wait in their records.
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "resize")); n != 0 {
		t.Fatalf("the second step is queued before the first ran")
	}
	step := func(j *Job) error { time.Sleep(10 * time.Millisecond); rec.add(j.Name); return nil }
	bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).Job("fetch", step).Job("resize", step).Job("publish", step))
	eventually(t, 20*time.Second, "every step", func() bool { return len(rec.get()) == 3 })
	if got := strings.Join(rec.get(), ","); got != "fetch,resize,publish" {
		t.Errorf("order %s", got)
	}
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the last record to say done", func() bool {
		r, err := c.JobRecord(jobs[2].ID)
		return err == nil && r.State == "done"
	})
	for _, j := range jobs {
		r, err := c.JobRecord(j.ID)
		if err != nil || r.State != "done" || r.Attempts != 1 || r.Name != j.Name || r.FinishedAt == 0 || r.Pool == "" {
			t.Errorf("record of %s: %+v, %v", j.Name, r, err)
		}
	}
}

func TestChainStepThatDiesSendsTheRestToTheDeadSetWithTheReason(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	jobs, err := e.EnqueueChain(ChainStep{Name: "a"}, ChainStep{Name: "b"}, ChainStep{Name: "c"})
	if err != nil {
		t.Fatal(err)
	}
	var ranB atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		Job("a", func(*Job) error { return FailNow(errors.New("broken input")) }).
		Job("b", func(*Job) error { ranB.Add(1); return nil }).
		Job("c", func(*Job) error { ranB.Add(1); return nil }))
	c := NewClient(ns, pool)
	eventually(t, 20*time.Second, "three dead jobs", func() bool { return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 3 })
	if ranB.Load() != 0 {
		t.Error("a step after a dead one ran")
	}
	dead, _, err := c.DeadJobs(1)
	if err != nil {
		t.Fatal(err)
	}
	reasons := map[string]string{}
	for _, d := range dead {
		reasons[d.Name] = d.LastErr
	}
	if !strings.Contains(reasons["b"], "dependency failed: job "+jobs[0].ID) || !strings.Contains(reasons["c"], jobs[1].ID) {
		t.Errorf("dead reasons %v", reasons)
	}
	for i, want := range []JobState{JobStateDead, JobStateDead, JobStateDead} {
		if r, err := c.JobRecord(jobs[i].ID); err != nil || r.State != want {
			t.Errorf("record %d: %+v %v", i, r, err)
		}
	}
}

func TestEnqueueWithAfterWaitsForJobsAndBatches(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	c := NewClient(ns, pool)
	first, err := e.EnqueueWith("first", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	b, _, err := e.EnqueueInBatch(BatchOptions{}, []BatchJob{{Name: "member"}, {Name: "member"}})
	if err != nil {
		t.Fatal(err)
	}
	last, err := e.EnqueueWith("last", Q{"x": 1}, EnqueueOptions{After: []string{first.ID}, AfterBatches: []string{b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if r, err := c.JobRecord(last.ID); err != nil || r.State != "waiting" || r.WaitingFor != 2 {
		t.Fatalf("record of the waiting job: %+v %v", r, err)
	}
	var rec orderRecorder
	gate := newBhvGate()
	h := func(j *Job) error { rec.add(j.Name); return nil }
	bhvStart(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).Job("first", h).
		Job("member", func(j *Job) error { gate.Wait(); rec.add(j.Name); return nil }).Job("last", h))
	t.Cleanup(gate.Open)
	eventually(t, 10*time.Second, "first to run", func() bool { return len(rec.get()) == 1 })
	// first's outcome, written after its handler returned, releases one of the two dependencies.
	eventually(t, 10*time.Second, "first's outcome to be written", func() bool {
		r, err := c.JobRecord(last.ID)
		return err == nil && r.WaitingFor < 2
	})
	if r, err := c.JobRecord(last.ID); err != nil || r.State != "waiting" || r.WaitingFor != 1 {
		t.Fatalf("record once first is done: %+v %v", r, err)
	}
	gate.Open()
	eventually(t, 10*time.Second, "last to run", func() bool { return len(rec.get()) == 4 })
	if got := rec.get(); got[3] != "last" {
		t.Errorf("order %v", got)
	}
	// A dependency that succeeded already: the job is queued at once.
	again, err := e.EnqueueWith("last", nil, EnqueueOptions{After: []string{first.ID}})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job after a done dependency", func() bool {
		r, err := c.JobRecord(again.ID)
		return err == nil && r.State == "done"
	})
}

func TestEnqueueWithUnknownDependencyIsRefusedAndWritesNothing(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	plain, err := e.Enqueue("plain", nil) // not tracked: nothing can wait for it
	if err != nil {
		t.Fatal(err)
	}
	tracked, err := e.EnqueueWith("t", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, opts := range []EnqueueOptions{
		{After: []string{"000000000000000000000000"}},
		{After: []string{plain.ID}},
		{After: []string{tracked.ID, "missing"}},
		{AfterBatches: []string{"nobatch"}},
	} {
		if _, err := e.EnqueueWith("x", nil, opts); !errors.Is(err, ErrUnknownDependency) {
			t.Errorf("%+v: %v, want ErrUnknownDependency", opts, err)
		}
	}
	if _, err := e.EnqueueWith("x", nil, EnqueueOptions{After: []string{"bad id"}}); err == nil {
		t.Error("a malformed dependency ID was accepted")
	}
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "job", tracked.ID, "next")); n != 0 {
		t.Error("a refused enqueue registered itself as waiting for a dependency")
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "x")); n != 0 {
		t.Errorf("%d refused jobs queued", n)
	}
}

func TestRunIfDependencyFailsRunsTheJobAfterADeadDependency(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	dep, err := e.EnqueueWith("dep", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	cleanup, err := e.EnqueueWith("cleanup", nil, EnqueueOptions{After: []string{dep.ID}, RunIfDependencyFails: true})
	if err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		Job("dep", func(*Job) error { return FailNow(errors.New("no")) }).
		Job("cleanup", func(*Job) error { ran.Add(1); return nil }))
	eventually(t, 10*time.Second, "cleanup to run", func() bool { return ran.Load() == 1 })
	if r, err := NewClient(ns, pool).JobRecord(cleanup.ID); err != nil || r.State == "dead" {
		t.Errorf("record %+v %v", r, err)
	}
}

func TestKeepFinishedLeavesARecordWithTheResult(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	ok, _ := e.Enqueue("sum", Q{"a": 2, "b": 3})
	bad, _ := e.Enqueue("sum", Q{"a": "x"})
	plain, _ := e.Enqueue("other", nil)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		JobWithOptions("sum", JobOptions{KeepFinished: time.Hour, MaxFails: 1}, func(j *Job) error {
			a, b := j.ArgInt64("a"), j.ArgInt64("b")
			if err := j.ArgError(); err != nil {
				return err
			}
			return j.SetResult(map[string]int64{"sum": a + b})
		}).
		Job("other", func(*Job) error { return nil }))
	wp.Drain()
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the records", func() bool {
		_, e1 := c.JobRecord(ok.ID)
		_, e2 := c.JobRecord(bad.ID)
		return e1 == nil && e2 == nil
	})
	r, _ := c.JobRecord(ok.ID)
	var res struct{ Sum int64 }
	if err := json.Unmarshal(r.Result, &res); err != nil || res.Sum != 5 || r.State != "done" || r.Attempts != 1 {
		t.Errorf("record %+v (result %s)", r, r.Result)
	}
	r, _ = c.JobRecord(bad.ID)
	if r.State != "dead" || r.Err == "" || r.Result != nil {
		t.Errorf("record of the failed job %+v", r)
	}
	if ttl := rInt(t, pool, "TTL", bhvKey(ns, "job", ok.ID)); ttl <= 0 || ttl > 3600 {
		t.Errorf("record TTL %d, want at most KeepFinished", ttl)
	}
	if _, err := c.JobRecord(plain.ID); !errors.Is(err, ErrNoRecord) {
		t.Errorf("a job of a name without KeepFinished has a record: %v", err)
	}
	big := make([]byte, MaxResultSize)
	if err := (&Job{}).SetResult(string(big)); !errors.Is(err, ErrResultTooLarge) {
		t.Errorf("oversized result: %v", err)
	}
}

func TestUniqueUntilDoneHoldsTheLockWhileTheJobRuns(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	gate := newBhvGate()
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		JobWithOptions("sync", JobOptions{UniqueUntilDone: true}, func(*Job) error { ran.Add(1); gate.Wait(); return nil }))
	t.Cleanup(gate.Open)
	if j, err := e.EnqueueUnique("sync", Q{"account": 7}); err != nil || j == nil {
		t.Fatalf("first: %v %v", j, err)
	}
	eventually(t, 10*time.Second, "the job to start", func() bool { return ran.Load() == 1 })
	if j, err := e.EnqueueUnique("sync", Q{"account": 7}); err != nil || j != nil {
		t.Fatalf("a duplicate while the first runs: %v %v, want nil, nil", j, err)
	}
	gate.Open()
	wp.Drain()
	eventually(t, 10*time.Second, "the lock to go", func() bool {
		return len(rStrings(t, pool, "KEYS", bhvKey(ns, "unique", "*"))) == 0
	})
	if j, err := e.EnqueueUnique("sync", Q{"account": 7}); err != nil || j == nil {
		t.Fatalf("after the first ended: %v %v", j, err)
	}
}

// A unique job pushed by another program names no lock in its payload: the pool finds the lock from
// the job's name and args, holds it while the job runs and releases it when the job ends.
func TestUniqueUntilDoneReleasesTheLockOfAPayloadThatNamesNone(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	lock, err := rdb.NewKeyspace(ns).Unique("sync", Q{"account": 7})
	if err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "SET", lock, "1")
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "sync"), `{"name":"sync","id":"ext1","t":1,"args":{"account":7},"unique":true}`)
	gate := newBhvGate()
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).
		JobWithOptions("sync", JobOptions{UniqueUntilDone: true}, func(*Job) error { ran.Add(1); gate.Wait(); return nil }))
	t.Cleanup(gate.Open)
	eventually(t, 10*time.Second, "the job to start", func() bool { return ran.Load() == 1 })
	if n := rInt(t, pool, "EXISTS", lock); n != 1 {
		t.Fatal("the lock went when the job started")
	}
	gate.Open()
	wp.Drain()
	eventually(t, 10*time.Second, "the lock to go", func() bool { return rInt(t, pool, "EXISTS", lock) == 0 })
}
