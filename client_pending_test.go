package work

import (
	"errors"
	"testing"
	"time"
)

// A scheduled job can be given other args and another time by its ID; it keeps its ID.
func TestRescheduleAndReplaceAScheduledJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	sj, err := e.EnqueueIn("report", 3600, Q{"v": 1})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.ReplaceJobArgs(sj.ID, Q{"v": 2}); err != nil {
		t.Fatal(err)
	}
	at := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	if err := c.RescheduleJob(sj.ID, at); err != nil {
		t.Fatal(err)
	}
	jobs, n, err := c.ScheduledJobs(1)
	if err != nil || n != 1 {
		t.Fatalf("ScheduledJobs: %d, %v", n, err)
	}
	if j := jobs[0]; j.ID != sj.ID || j.ArgInt64("v") != 2 || j.RunAt != at.Unix() {
		t.Errorf("the job reads %+v (run at %d), want ID %s, v 2, run at %d", j.Job, j.RunAt, sj.ID, at.Unix())
	}
	// A queued job, or none, cannot be edited.
	q, err := e.Enqueue("now", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{q.ID, "nosuchjob"} {
		if err := c.ReplaceJobArgs(id, Q{"v": 3}); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("ReplaceJobArgs(%s) = %v, want ErrJobNotFound", id, err)
		}
		if err := c.RescheduleJob(id, at); !errors.Is(err, ErrJobNotFound) {
			t.Errorf("RescheduleJob(%s) = %v, want ErrJobNotFound", id, err)
		}
	}
	if err := c.ReplaceJobArgs(sj.ID, Q{"f": func() {}}); !errors.Is(err, ErrMalformedArgs) {
		t.Errorf("args that cannot be encoded: %v", err)
	}
}

// A retrying job can be run sooner by moving it.
func TestRescheduleARetryJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	fails := make(chan struct{}, 4)
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("flaky", JobOptions{MaxFails: 3, Backoff: func(*Job) int64 { return 3600 }},
		func(*Job) error { fails <- struct{}{}; return errors.New("not yet") })
	bhvStart(t, wp)
	j, err := e.Enqueue("flaky", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-fails
	eventually(t, 10*time.Second, "the job waits for its retry", func() bool { return rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) == 1 })
	if err := c.RescheduleJob(j.ID, time.Now()); err != nil {
		t.Fatal(err)
	}
	select {
	case <-fails:
	case <-time.After(30 * time.Second):
		t.Fatal("the rescheduled retry did not run")
	}
}

// Edited by hand, a burst's pending job stays the burst's: the next enqueue still replaces it.
func TestReplaceKeepsADebouncedJobInItsBurst(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	d := &Debounce{ID: "doc", Window: time.Hour}
	j, err := e.EnqueueWith("reindex", Q{"v": 1}, EnqueueOptions{Debounce: d})
	if err != nil || j.Debounce != "doc" {
		t.Fatalf("enqueue: %+v, %v", j, err)
	}
	if err := c.ReplaceJobArgs(j.ID, Q{"v": 2}); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(2 * time.Hour).Truncate(time.Second)
	if err := c.RescheduleJob(j.ID, later); err != nil {
		t.Fatal(err)
	}
	if bursts, err := c.PendingBursts(); err != nil || len(bursts) != 1 || !bursts[0].RunAt.Equal(later) || bursts[0].Job.ArgInt64("v") != 2 {
		t.Fatalf("after the edits, PendingBursts = %v, %v; want the burst with v 2, run at %v", bursts, err, later)
	}
	if n := rInt(t, pool, "ZSCORE", bhvKey(ns, "debounces"), "reindex\ndoc"); n != later.Unix() {
		t.Errorf("the index scores the burst %d, want its new run time %d", n, later.Unix())
	}
	if _, err := e.EnqueueWith("reindex", Q{"v": 3}, EnqueueOptions{Debounce: d}); err != nil {
		t.Fatal(err)
	}
	bursts, err := c.PendingBursts()
	if err != nil || len(bursts) != 1 {
		t.Fatalf("PendingBursts = %v, %v", bursts, err)
	}
	if b := bursts[0]; b.Enqueues != 2 || b.Job.ArgInt64("v") != 3 || b.Job.Debounce != "doc" {
		t.Errorf("burst %+v, job %+v: want 2 enqueues and v 3", b, b.Job)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "debounces")); n != 1 {
		t.Errorf("%d bursts pending, want the one", n)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 0 {
		t.Errorf("%d jobs scheduled, want none: the pending job waits in its burst", n)
	}
}

// The pending job of a burst waits in its burst, not in the scheduled set, yet the Client reaches it
// by the run time and ID that PendingBursts lists: FindJob reports it scheduled at that time,
// DeleteScheduledJob and RunScheduledJobNow act on it (and end the burst), a wrong time finds none.
func TestClientReachesABurstsPendingJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	d := &Debounce{Window: time.Hour}
	pending := func(key string) *PendingBurst {
		t.Helper()
		bursts, err := c.PendingBursts()
		if err != nil {
			t.Fatal(err)
		}
		for _, b := range bursts {
			if b.ID == key {
				return b
			}
		}
		return nil
	}
	enqueue := func(key string, v int) *Job {
		t.Helper()
		j, err := e.EnqueueWith("reindex", Q{"v": v}, EnqueueOptions{Key: key, Debounce: d})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	enqueue("doc-1", 1)
	j := enqueue("doc-1", 2)
	enqueue("doc-2", 1)
	b := pending("doc-1")
	if b == nil || b.Job.ID != j.ID {
		t.Fatalf("pending burst %+v, want the job %s", b, j.ID)
	}
	runAt := b.RunAt.Unix()

	loc, err := c.FindJob(j.ID)
	if err != nil || loc.State != JobStateScheduled || loc.Score != runAt || loc.Job.ArgInt64("v") != 2 {
		t.Fatalf("FindJob = %+v, %v; want it scheduled at %d with v 2", loc, err, runAt)
	}
	if err := c.DeleteScheduledJob(runAt+1, j.ID); !errors.Is(err, ErrNotDeleted) {
		t.Errorf("DeleteScheduledJob at another time = %v, want ErrNotDeleted", err)
	}
	if err := c.RunScheduledJobNow(runAt+1, j.ID); !errors.Is(err, ErrNotRetried) {
		t.Errorf("RunScheduledJobNow at another time = %v, want ErrNotRetried", err)
	}
	if err := c.DeleteScheduledJob(runAt, j.ID); err != nil {
		t.Fatalf("DeleteScheduledJob: %v", err)
	}
	if b := pending("doc-1"); b != nil {
		t.Errorf("after the delete, the burst is still pending: %+v", b)
	}
	hash := bhvKey(ns, "debounce", "reindex", "{doc-1}")
	if n := rInt(t, pool, "EXISTS", hash); n != 0 {
		t.Errorf("the ended burst's hash is still there")
	}
	if _, err := c.FindJob(j.ID); !errors.Is(err, ErrJobNotFound) {
		t.Errorf("FindJob after the delete: %v, want ErrJobNotFound", err)
	}
	// The next enqueue of the key starts a new burst, whose hash lives as long as its job waits.
	if n := enqueue("doc-1", 3); n.ID == j.ID || pending("doc-1").Enqueues != 1 {
		t.Errorf("after the delete, an enqueue did not start a new burst: %+v", pending("doc-1"))
	}
	if ttl := rInt(t, pool, "TTL", hash); ttl != -1 {
		t.Errorf("a pending burst's hash has a lifetime: %d", ttl)
	}

	// Run now: the job is queued at once and its burst is over.
	k := pending("doc-2")
	if err := c.RunScheduledJobNow(k.RunAt.Unix(), k.Job.ID); err != nil {
		t.Fatalf("RunScheduledJobNow: %v", err)
	}
	if loc, err := c.FindJob(k.Job.ID); err != nil || loc.State != JobStateQueued {
		t.Errorf("after RunScheduledJobNow, FindJob = %+v, %v; want it queued", loc, err)
	}
	if b := pending("doc-2"); b != nil {
		t.Errorf("after run now, the burst is still pending: %+v", b)
	}
	if err := c.RunScheduledJobNow(k.RunAt.Unix(), k.Job.ID); !errors.Is(err, ErrNotRetried) {
		t.Errorf("RunScheduledJobNow again = %v, want ErrNotRetried", err)
	}
}
