package work

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/workqueue/work/internal/rdb"
)

func TestJobStateFindable(t *testing.T) {
	for s, want := range map[JobState]bool{
		JobStateWaiting: false, JobStateQueued: true, JobStateRunning: true, JobStateRetrying: true,
		JobStateDone: false, JobStateDead: true, JobStateDropped: false, JobStateDeleted: false,
	} {
		if s.Findable() != want {
			t.Errorf("%s: Findable %v, want %v", s, !want, want)
		}
	}
}

// The typed state keeps the stored strings and the JSON as they were.
func TestJobStateJSON(t *testing.T) {
	b, err := json.Marshal(JobLocation{State: JobStateInProgress, Job: &Job{}})
	if err != nil || !strings.HasPrefix(string(b), `{"state":"in_progress",`) {
		t.Errorf("location JSON: %s, %v", b, err)
	}
	r := parseJobRecord("a", map[string]string{"state": "running", "attempt": "2"})
	if r.State != JobStateRunning || r.Attempt != 2 {
		t.Errorf("record: %+v", r)
	}
}

func TestLookupJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	c := NewClient(ns, pool)
	e := NewEnqueuer(ns, pool)
	ks := rdb.NewKeyspace(ns)

	first, err := e.EnqueueWith("a", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.EnqueueWith("b", nil, EnqueueOptions{After: []string{first.ID}})
	if err != nil {
		t.Fatal(err)
	}
	plain, err := e.Enqueue("c", nil)
	if err != nil {
		t.Fatal(err)
	}

	// A tracked job in its queue: its record and its place.
	l, err := c.LookupJob(first.ID)
	if err != nil || l.Record == nil || l.Record.State != JobStateQueued || l.Location == nil ||
		l.Location.State != JobStateQueued || l.RecordErr != nil {
		t.Errorf("queued: %+v, %v", l, err)
	}
	// A job waiting for its dependencies is kept in its record only: not looked for.
	if l, err := c.LookupJob(second.ID); err != nil || l.Record == nil || l.Record.State != JobStateWaiting || l.Location != nil {
		t.Errorf("waiting: %+v, %v", l, err)
	}
	// A job without a record: its place only.
	if l, err := c.LookupJob(plain.ID); err != nil || l.Record != nil || l.Location == nil || l.Location.Job.ID != plain.ID {
		t.Errorf("untracked: %+v, %v", l, err)
	}
	// A record that says the job ended: it is not looked for, though a copy is still queued.
	rdo(t, pool, "HSET", ks.JobRecord(first.ID), "state", "done")
	if l, err := c.LookupJob(first.ID); err != nil || l.Record == nil || l.Record.State != JobStateDone || l.Location != nil {
		t.Errorf("done: %+v, %v", l, err)
	}
	// A record another program overwrote: the error says so, and the job is looked for.
	rdo(t, pool, "DEL", ks.JobRecord(first.ID))
	rdo(t, pool, "SET", ks.JobRecord(first.ID), "x")
	l, err = c.LookupJob(first.ID)
	if err != nil || l.Record != nil || !errors.Is(l.RecordErr, ErrWrongType) || l.Location == nil {
		t.Errorf("overwritten record: %+v, %v", l, err)
	}
	// Neither record nor place.
	if _, err := c.LookupJob("nope"); !errors.Is(err, ErrJobNotFound) {
		t.Errorf("unknown: %v, want ErrJobNotFound", err)
	}
}
