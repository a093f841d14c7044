package work

import (
	"context"
	"errors"
	"math"
	"net"
	"strings"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// progressStep is a handler that reports progress when told to, and ends when told to.
type progressStep struct {
	set  chan [2]interface{} // fraction, message
	set2 chan struct{}       // a progress was set
	end  *bhvGate
}

func newProgressStep(t *testing.T) *progressStep {
	s := &progressStep{set: make(chan [2]interface{}), set2: make(chan struct{}), end: newBhvGate()}
	t.Cleanup(s.end.Open)
	return s
}

func (s *progressStep) handler(j *Job) error {
	giveUp := time.After(30 * time.Second) // a failed test's pool stops before its cleanup opens end
	for {
		select {
		case <-giveUp:
			return errors.New("never told to end")
		case p := <-s.set:
			if err := j.SetProgress(p[0].(float64), p[1].(string)); err != nil {
				return err
			}
			s.set2 <- struct{}{}
		case <-s.end.ch:
			return j.SetResult("finished")
		}
	}
}

func (s *progressStep) progress(t *testing.T, f float64, msg string) {
	t.Helper()
	select {
	case s.set <- [2]interface{}{f, msg}:
	case <-time.After(15 * time.Second):
		t.Fatal("the handler did not take the progress")
	}
	bhvWait(t, s.set2, "the progress to be set")
}

func TestTrackedJobRecordSaysRunningWithProgressThenDone(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	step := newProgressStep(t)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("report", step.handler))
	job, err := NewEnqueuer(ns, pool).EnqueueWith("report", Q{"n": 1}, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	var rec *JobRecord
	eventually(t, 10*time.Second, "the record to say running", func() bool {
		rec, err = c.JobRecord(job.ID)
		return err == nil && rec.State == "running"
	})
	if rec.Attempt != 1 || rec.StartedAt == 0 || rec.Pool != wp.workerPoolID || rec.Progress != nil {
		t.Fatalf("running record: %+v", rec)
	}

	step.progress(t, 0.25, "step 1 of 4")
	eventually(t, 10*time.Second, "the progress in the record", func() bool {
		rec, err = c.JobRecord(job.ID)
		return err == nil && rec.Progress != nil && rec.Progress.Fraction == 0.25
	})
	if rec.State != "running" || rec.Progress.Message != "step 1 of 4" || rec.Progress.At == 0 || rec.Progress.Percent() != 25 {
		t.Fatalf("record with progress: %+v %+v", rec, rec.Progress)
	}
	var ob *WorkerObservation
	eventually(t, 10*time.Second, "the progress in the worker observation", func() bool {
		obs, err := c.WorkerObservations()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range obs {
			if o.JobID == job.ID && o.Progress != nil {
				ob = o
				return true
			}
		}
		return false
	})
	if ob.Progress.Fraction != 0.25 || ob.Progress.Message != "step 1 of 4" || !ob.IsBusy {
		t.Fatalf("observation: %+v %+v", ob, ob.Progress)
	}

	step.progress(t, 0.75, "step 3 of 4")
	eventually(t, 10*time.Second, "the new progress in the record", func() bool {
		rec, err = c.JobRecord(job.ID)
		return err == nil && rec.Progress != nil && rec.Progress.Fraction == 0.75 && rec.Progress.Message == "step 3 of 4"
	})

	step.end.Open()
	eventually(t, 10*time.Second, "the record to say done", func() bool {
		rec, err = c.JobRecord(job.ID)
		return err == nil && rec.State == "done"
	})
	// The last progress and when the attempt started stay; the running attempt does not.
	if rec.Attempt != 0 || rec.Attempts != 1 || rec.StartedAt == 0 || rec.Progress == nil || rec.Progress.Fraction != 0.75 || string(rec.Result) != `"finished"` {
		t.Fatalf("done record: %+v", rec)
	}
}

func TestJobWithoutRecordGetsProgressInItsObservationOnly(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	step := newProgressStep(t)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("plain", step.handler))
	job, err := NewEnqueuer(ns, pool).Enqueue("plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	step.progress(t, 0.5, "half")
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the progress in the worker observation", func() bool {
		obs, err := c.WorkerObservations()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range obs {
			if o.JobID == job.ID && o.Progress != nil && o.Progress.Fraction == 0.5 {
				return true
			}
		}
		return false
	})
	// Nobody can read a record of the job: none is written.
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "job", job.ID)); n != 0 {
		t.Fatalf("a record of an untracked job was written")
	}
	step.end.Open()
	eventually(t, 10*time.Second, "the job to end", func() bool {
		obs, _ := c.WorkerObservations()
		return len(obs) == 1 && !obs[0].IsBusy
	})
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "job", job.ID)); n != 0 {
		t.Fatalf("a record of an untracked job was written")
	}
}

func TestKeepFinishedJobGetsARecordWhileItRuns(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	step := newProgressStep(t)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("kept", JobOptions{KeepFinished: time.Minute}, step.handler))
	job, err := NewEnqueuer(ns, pool).Enqueue("kept", nil)
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the record to say running", func() bool {
		rec, err := c.JobRecord(job.ID)
		return err == nil && rec.State == "running" && rec.Name == "kept" && rec.Attempt == 1
	})
	// A record the running state creates outlives a pool that would die with the job, for a while.
	if ttl := rInt(t, pool, "TTL", bhvKey(ns, "job", job.ID)); ttl <= 0 || ttl > 86400 {
		t.Fatalf("TTL of the running record %d", ttl)
	}
	step.end.Open()
	eventually(t, 10*time.Second, "the record to say done", func() bool {
		rec, err := c.JobRecord(job.ID)
		return err == nil && rec.State == "done"
	})
	if ttl := rInt(t, pool, "TTL", bhvKey(ns, "job", job.ID)); ttl <= 0 || ttl > 60 {
		t.Fatalf("TTL of the done record %d, want its keep", ttl)
	}
}

// A running state written after the attempt's outcome (the observer and the acker write on different
// connections) does not make an ended job look running again, nor a queued one that no pool holds.
func TestLateRunningWriteDoesNotUndoTheEnd(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	s := rdb.NewStore(ns, PoolBackend(pool))
	ctx := context.Background()
	inprogress := s.Ks.InProgress("late", "p1")
	rdo(t, pool, "HSET", s.Ks.JobRecord("j1"), "name", "late", "state", "done", "attempts", 1)
	rdo(t, pool, "HSET", s.Ks.JobRecord("j2"), "name", "late", "state", "queued")
	rdo(t, pool, "LPUSH", inprogress, "other")
	obs := []rdb.Observation{
		{WorkerID: "w1", Busy: true, JobName: "late", JobID: "j1", StartedAt: 100, Args: []byte("null"),
			Record: &rdb.RunningRecord{InProgress: inprogress, Entry: []byte("payload of j1"), Attempt: 1}},
		{WorkerID: "w2", Busy: true, JobName: "late", JobID: "j2", StartedAt: 100, Args: []byte("null"),
			Progress: &rdb.ProgressNote{Fraction: 0.5, At: 100},
			Record:   &rdb.RunningRecord{InProgress: inprogress, Entry: []byte("payload of j2"), Attempt: 1}},
	}
	if err := s.WriteObservations(ctx, "p1", obs); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"j1", "j2"} {
		if st := rStrings(t, pool, "HMGET", s.Ks.JobRecord(id), "state", "progress"); st[0] == "running" || st[1] != "" {
			t.Errorf("record of %s after a write for an attempt not held: %q", id, st)
		}
	}
	// Held: written.
	rdo(t, pool, "LPUSH", inprogress, "payload of j2")
	if err := s.WriteObservations(ctx, "p1", obs); err != nil {
		t.Fatal(err)
	}
	if st := rStrings(t, pool, "HMGET", s.Ks.JobRecord("j2"), "state", "progress", "pool", "attempt"); strings.Join(st, ",") != "running,0.5,p1,1" {
		t.Errorf("record of a held job: %q", st)
	}
	// The worker's observation carries the progress too.
	if st := rStrings(t, pool, "HMGET", s.Ks.Worker("w2"), "job_id", "progress", "progress_at"); strings.Join(st, ",") != "j2,0.5,100" {
		t.Errorf("observation: %q", st)
	}
}

// A dead pool's job goes back to its queue, and its record from running to queued.
func TestReapedJobRecordIsQueuedAgain(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	s := rdb.NewStore(ns, PoolBackend(pool))
	payload := `{"name":"reaped","id":"j1","t":1,"args":{"id":"not this one"},"tracked":true}`
	rdo(t, pool, "LPUSH", s.Ks.InProgress("reaped", "dead1"), payload)
	rdo(t, pool, "HSET", s.Ks.JobRecord("j1"), "name", "reaped", "state", "running", "pool", "dead1", "attempt", 1)
	rdo(t, pool, "HSET", s.Ks.JobRecord("j2"), "name", "reaped", "state", "running", "pool", "alive", "attempt", 1)
	n, err := s.Reap(context.Background(), "dead1", []string{"reaped"}, -1)
	if err != nil || n != 1 {
		t.Fatalf("reap: %d, %v", n, err)
	}
	if st := rStrings(t, pool, "HMGET", s.Ks.JobRecord("j1"), "state", "attempt"); st[0] != "queued" || st[1] != "" {
		t.Errorf("record of the reaped job: %q", st)
	}
	if st := rStrings(t, pool, "HMGET", s.Ks.JobRecord("j2"), "state"); st[0] != "running" {
		t.Errorf("record of a job of another pool: %q", st)
	}
}

// A job whose run a stop abandons goes back to its queue, and its record says queued, not running.
func TestAbandonedJobRecordIsQueuedAgain(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := newBhvGate()
	started := make(chan struct{}, 1)
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("stubborn", func(j *Job) error {
		started <- struct{}{}
		gate.Wait() // ignores its context
		return nil
	})
	wp.Start()
	t.Cleanup(gate.Open)
	job, err := NewEnqueuer(ns, pool).EnqueueWith("stubborn", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	bhvWait(t, started, "the job to start")
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the record to say running", func() bool {
		rec, err := c.JobRecord(job.ID)
		return err == nil && rec.State == "running"
	})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := wp.StopContext(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StopContext: %v", err)
	}
	gate.Open()
	rec, err := c.JobRecord(job.ID)
	if err != nil || rec.State != "queued" || rec.Attempt != 0 {
		t.Fatalf("record after the stop: %+v, %v", rec, err)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "stubborn")); n != 1 {
		t.Fatalf("queue holds %d jobs", n)
	}
}

func TestSetProgressInput(t *testing.T) {
	cases := []struct {
		f       float64
		want    float64 // -1: nothing recorded
		wantErr bool
	}{
		{0, 0, false}, {1, 1, false}, {0.5, 0.5, false}, {0.123456, 0.1235, false},
		{-0.1, 0, true}, {42, 1, true}, {math.Inf(1), 1, true}, {math.Inf(-1), 0, true},
		{math.NaN(), -1, true}, {math.SmallestNonzeroFloat64, 0, false},
	}
	for _, c := range cases {
		s := &workerState{job: &Job{}}
		j := &Job{observer: s}
		err := j.SetProgress(c.f, "m")
		if (err != nil) != c.wantErr || (err != nil && !errors.Is(err, ErrBadProgress)) {
			t.Errorf("SetProgress(%v): error %v", c.f, err)
		}
		switch {
		case c.want < 0 && s.progress.At != 0:
			t.Errorf("SetProgress(%v) recorded %+v", c.f, s.progress)
		case c.want >= 0 && (s.progress.At == 0 || s.progress.Fraction != c.want):
			t.Errorf("SetProgress(%v) recorded %+v, want %v", c.f, s.progress, c.want)
		}
	}
	long := strings.Repeat("é", MaxProgressMessage) // two bytes each
	_, m, _ := normalizeProgress(0.5, long)
	if len(m) > MaxProgressMessage || !utf8.ValidString(m) || len(m) < MaxProgressMessage-1 {
		t.Errorf("long message cut to %d bytes, valid %v", len(m), utf8.ValidString(m))
	}
	if _, m, _ = normalizeProgress(0.5, "a\x1b[2Jb\nc\xffd"); m != "a [2Jb c\uFFFDd" {
		t.Errorf("message %q", m)
	}
	// Outside a pool it checks and records nothing.
	if err := (&Job{}).SetProgress(0.5, "x"); err != nil {
		t.Errorf("outside a pool: %v", err)
	}
}

// Bad progress never fails the job: the handler may ignore the error.
func TestBadProgressDoesNotFailTheJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var errs atomic.Int64
	done := make(chan struct{}, 1)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("sloppy", JobOptions{MaxFails: 1}, func(j *Job) error {
		for _, f := range []float64{math.NaN(), math.Inf(1), -3, 250} {
			if j.SetProgress(f, strings.Repeat("\x00x", 10000)) != nil {
				errs.Add(1)
			}
		}
		done <- struct{}{}
		return nil
	}))
	job, err := NewEnqueuer(ns, pool).EnqueueWith("sloppy", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	bhvWait(t, done, "the job")
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the record to say done", func() bool {
		rec, err := c.JobRecord(job.ID)
		return err == nil && rec.State == "done"
	})
	if errs.Load() != 4 {
		t.Errorf("%d errors, want 4", errs.Load())
	}
}

// However often a handler reports progress, its worker's state is written once per flush of the
// observer (once a second).
func TestProgressWritesAreCoalesced(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var writes atomic.Int64
	counted := wrappedPool(t, 4, func(c net.Conn) net.Conn { return &countingConn{Conn: c, n: &writes, needle: "progress_msg"} })
	wp := NewWorkerPool(bhvCtx{}, 1, ns, counted)
	r := newPoolRun(wp)
	w := r.workers[0]
	job := &Job{Name: "tight", ID: "j1", raw: []byte(`{"args":{}}`)}
	w.state.start(job, nil)
	j := &Job{observer: w.state}
	for i := 0; i < 100000; i++ {
		if err := j.SetProgress(float64(i)/100000, "working"); err != nil {
			t.Fatal(err)
		}
	}
	r.observer.flush()
	r.observer.flush() // nothing changed since: nothing written
	if n := writes.Load(); n != 1 {
		t.Fatalf("%d writes of the progress for 100000 calls and two flushes, want 1", n)
	}
	if got := rStrings(t, pool, "HMGET", bhvKey(ns, "worker", w.id), "progress", "progress_msg"); got[0] != "1" || got[1] != "working" {
		t.Fatalf("written %q", got)
	}
}

// countingConn counts the writes to a connection that contain needle.
type countingConn struct {
	net.Conn
	n      *atomic.Int64
	needle string
}

func (c *countingConn) Write(b []byte) (int, error) {
	if strings.Contains(string(b), c.needle) {
		c.n.Add(1)
	}
	return c.Conn.Write(b)
}
