package work

import (
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// A job that runs longer than DeadPoolTimeout while its pool lives is never reaped nor run twice,
// though another pool's reaper is at work meanwhile: the pool's heartbeats go on while its workers
// are busy, and only a pool whose heartbeat stopped is reaped. A planted dead pool is reaped during
// the run, which shows the reapers were at work.
func TestJobLongerThanTheDeadPoolTimeoutIsNeverReapedNorRunTwice(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	opts := WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 2 * time.Second}
	var runs, ghostRuns atomic.Int64
	var runner atomic.Value // the pool ID that ran the long job
	ghostReaped := make(chan struct{})
	long := func(name string) func(*Job) error {
		return func(j *Job) error {
			if j.ID == "ghost" {
				ghostRuns.Add(1)
				return nil
			}
			runs.Add(1)
			runner.Store(name)
			// Run for three dead-pool timeouts, and at least until a dead pool was reaped,
			// reporting progress (a progress is no heartbeat).
			start := time.Now()
			// One reading of the clock a round: a second one could pass the end, a fraction above 1.
			for el := time.Since(start); el < 3*opts.DeadPoolTimeout; el = time.Since(start) {
				if err := j.SetProgress(float64(el)/float64(3*opts.DeadPoolTimeout), "crunching"); err != nil {
					return err
				}
				time.Sleep(20 * time.Millisecond)
			}
			bhvWait(t, ghostReaped, "the dead pool to be reaped")
			return j.SetResult("crunched")
		}
	}
	a := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 1, ns, pool, opts).Job("crunch", long("a")))
	job, err := NewEnqueuer(ns, pool).EnqueueWith("crunch", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "pool a to start the job", func() bool { return runs.Load() == 1 })
	// Pool b serves the same name; a job it takes then is the long job run twice.
	b := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 1, ns, pool, opts).Job("crunch", long("b")))

	// A pool that died holding a job of the name: its heartbeat is long stale.
	ghostPayload := `{"name":"crunch","id":"ghost","t":1,"args":{}}`
	rdo(t, pool, "SADD", bhvKey(ns, "worker_pools"), "ghostpool")
	rdo(t, pool, "HSET", bhvKey(ns, "worker_pools", "ghostpool"), "heartbeat_at", time.Now().Unix()-3600,
		"started_at", time.Now().Unix()-7200, "job_names", "crunch", "concurrency", 1)
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "crunch", "ghostpool", "inprogress"), ghostPayload)

	inprogress := bhvKey(ns, "jobs", "crunch", a.workerPoolID, "inprogress")
	c := NewClient(ns, pool)
	checks := 0
	holds := func(list string) int {
		n := 0
		for _, p := range rStrings(t, pool, "LRANGE", list, 0, -1) {
			if strings.Contains(p, job.ID) {
				n++
			}
		}
		return n
	}
	for {
		select {
		case <-ghostReaped:
		default:
			if rInt(t, pool, "SISMEMBER", bhvKey(ns, "worker_pools"), "ghostpool") == 0 {
				close(ghostReaped)
			}
		}
		rec, err := c.JobRecord(job.ID)
		if err != nil {
			t.Fatal(err)
		}
		if rec.State == "done" {
			break
		}
		// Until it ends, the job stays in pool a's in-progress list, and nowhere else.
		if inA, inB := holds(inprogress), holds(bhvKey(ns, "jobs", "crunch", b.workerPoolID, "inprogress")); inA != 1 || inB != 0 {
			// Its outcome may have been written since the record was read.
			if rec, err = c.JobRecord(job.ID); err != nil || rec.State != "done" {
				t.Fatalf("pool a holds the job %d times and pool b %d times while it runs (record %+v)", inA, inB, rec)
			}
			break
		}
		// The dead pool's job passes through the queue once reaped: only the long job counts.
		if holds(bhvKey(ns, "jobs", "crunch")) != 0 {
			t.Fatalf("the long job is back in its queue")
		}
		checks++
		time.Sleep(50 * time.Millisecond)
	}
	if n := runs.Load(); n != 1 {
		t.Fatalf("the long job ran %d times", n)
	}
	if who, _ := runner.Load().(string); who != "a" {
		t.Fatalf("the long job ran in pool %q", who)
	}
	eventually(t, 10*time.Second, "the dead pool's job to run", func() bool { return ghostRuns.Load() == 1 })
	rec, err := c.JobRecord(job.ID)
	if err != nil || rec.Attempts != 1 || rec.Pool != a.workerPoolID || string(rec.Result) != `"crunched"` {
		t.Fatalf("record %+v, %v", rec, err)
	}
	if n := rInt(t, pool, "SISMEMBER", bhvKey(ns, "worker_pools"), a.workerPoolID); n != 1 {
		t.Fatalf("pool a was unregistered")
	}
	t.Logf("checked the in-progress lists %d times while the job ran", checks)
}
