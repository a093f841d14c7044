package work

import (
	"errors"
	"testing"
	"time"
)

// A relay's reports reach the Client, the last one standing; a forgotten source is gone.
func TestBacklogReports(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	if err := e.ReportBacklog("", 1, time.Now()); err == nil {
		t.Error("a report without a source was taken")
	}
	oldest := time.Now().Add(-3 * time.Second).Truncate(time.Millisecond)
	if err := e.ReportBacklog("postgres:b", 10, oldest); err != nil {
		t.Fatal(err)
	}
	if err := e.ReportBacklog("postgres:a", 0, oldest); err != nil {
		t.Fatal(err)
	}
	if err := e.ReportBacklog("postgres:b", 7, oldest); err != nil {
		t.Fatal(err)
	}
	bs, err := c.Backlogs()
	if err != nil || len(bs) != 2 {
		t.Fatalf("Backlogs = %v, %v; want 2", bs, err)
	}
	a, b := bs[0], bs[1]
	if a.Source != "postgres:a" || a.Waiting != 0 || !a.Oldest.IsZero() || a.Age() != 0 {
		t.Errorf("empty source reads %+v", a)
	}
	if b.Source != "postgres:b" || b.Waiting != 7 || !b.Oldest.Equal(oldest) || b.Age() < 3*time.Second || time.Since(b.ReportedAt) > time.Minute {
		t.Errorf("source b reads %+v (age %v)", b, b.Age())
	}
	rdo(t, pool, "HSET", bhvKey(ns, "backlogs"), "junk", "not json")
	if err := c.ForgetBacklog("postgres:a"); err != nil {
		t.Fatal(err)
	}
	if bs, err := c.Backlogs(); err != nil || len(bs) != 1 || bs[0].Source != "postgres:b" {
		t.Errorf("after ForgetBacklog: %v, %v", bs, err)
	}
}

// What cannot become a job lands in the dead set with its reason and bytes, once per ID.
func TestEnqueueDead(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	raw := []byte(`{"args": [1, 2]}`)
	if err := e.EnqueueDead("row-1", "bad:lock", raw, "malformed job name"); err != nil {
		t.Fatal(err)
	}
	if err := e.EnqueueDead("row-1", "bad:lock", raw, "malformed job name"); !errors.Is(err, ErrDuplicateJobID) {
		t.Errorf("the same record again: %v, want ErrDuplicateJobID", err)
	}
	if err := e.EnqueueDead("bad id", "x", raw, "r"); !errors.Is(err, ErrMalformedID) {
		t.Errorf("a malformed ID: %v", err)
	}
	dead, n, err := c.DeadJobs(1)
	if err != nil || n != 1 || len(dead) != 1 {
		t.Fatalf("DeadJobs = %v, %d, %v; want one", dead, n, err)
	}
	d := dead[0]
	if d.ID != "row-1" || d.Name != "bad:lock" || d.LastErr != "malformed job name" || string(d.Raw) != string(raw) {
		t.Errorf("dead record %+v", d.Job)
	}
}
