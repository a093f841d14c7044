package work

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

func TestDependencyResultsOfAfterAndOfAChain(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	type seen struct {
		recs []*JobRecord
		err  error
	}
	got := make(chan seen, 4)
	report := func(j *Job) error {
		recs, err := j.DependencyResults(context.Background())
		got <- seen{recs, err}
		return nil
	}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).
		JobWithOptions("produce", JobOptions{MaxFails: 1}, func(j *Job) error {
			if j.ArgBool("fail") {
				return errors.New("no luck")
			}
			return j.SetResult(j.ArgString("out"))
		}).
		Job("fan_in", report).
		Job("step_b", report))

	a, _ := e.EnqueueWith("produce", Q{"out": "a"}, EnqueueOptions{Track: true})
	b, _ := e.EnqueueWith("produce", Q{"fail": true}, EnqueueOptions{Track: true})
	c, _ := e.EnqueueWith("produce", Q{"out": "c"}, EnqueueOptions{Track: true})
	if _, err := e.EnqueueWith("fan_in", nil, EnqueueOptions{After: []string{c.ID, a.ID, b.ID}, RunIfDependencyFails: true}); err != nil {
		t.Fatal(err)
	}
	var s seen
	select {
	case s = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the fan-in job did not run")
	}
	if s.err != nil || len(s.recs) != 3 {
		t.Fatalf("DependencyResults: %+v, %v", s.recs, s.err)
	}
	// In the order given, with their states and results.
	for i, want := range []struct {
		id     string
		state  JobState
		result string
	}{{c.ID, JobStateDone, `"c"`}, {a.ID, JobStateDone, `"a"`}, {b.ID, JobStateDead, ""}} {
		r := s.recs[i]
		if r.ID != want.id || r.State != want.state || string(r.Result) != want.result || r.Name != "produce" {
			t.Errorf("dependency %d: %+v, want %+v", i, r, want)
		}
	}
	if s.recs[2].Err != "no luck" {
		t.Errorf("the dead dependency's error: %q", s.recs[2].Err)
	}

	// A chain's step reads the step before it.
	if _, err := e.EnqueueChain(ChainStep{Name: "produce", Args: Q{"out": "first"}}, ChainStep{Name: "step_b"}); err != nil {
		t.Fatal(err)
	}
	select {
	case s = <-got:
	case <-time.After(20 * time.Second):
		t.Fatal("the chain's second step did not run")
	}
	if s.err != nil || len(s.recs) != 1 || s.recs[0].State != "done" || string(s.recs[0].Result) != `"first"` {
		t.Fatalf("DependencyResults of a chain step: %+v, %v", s.recs, s.err)
	}
}

func TestDependencyResultsOfJobsWithoutJobDependencies(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	got := make(chan int, 4)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("alone", func(j *Job) error {
		recs, err := j.DependencyResults(context.Background())
		if err != nil {
			return err
		}
		got <- len(recs)
		return nil
	}).Job("member", bhvNoop))
	if _, err := e.Enqueue("alone", nil); err != nil {
		t.Fatal(err)
	}
	batch, _, err := e.EnqueueInBatch(BatchOptions{}, []BatchJob{{Name: "member"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.EnqueueWith("alone", nil, EnqueueOptions{AfterBatches: []string{batch.ID}}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		select {
		case n := <-got:
			if n != 0 {
				t.Fatalf("%d dependency results, want none", n)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("the jobs did not run")
		}
	}
	if _, err := (&Job{ID: "x"}).DependencyResults(context.Background()); !errors.Is(err, ErrNotInPool) {
		t.Fatalf("outside a pool: %v", err)
	}
}

// A dependency whose record expired before the dependant ran has only its ID.
func TestDependencyResultsOfAnExpiredRecord(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	s := rdb.NewStore(ns, PoolBackend(pool))
	rdo(t, pool, "HSET", s.Ks.JobRecord("late"), "name", "b", "state", "queued", "after", "gone,here")
	rdo(t, pool, "HSET", s.Ks.JobRecord("here"), "name", "a", "state", "done", "result", `{"x":1}`)
	j := &Job{ID: "late", observer: &workerState{store: s}}
	recs, err := j.DependencyResults(context.Background())
	if err != nil || len(recs) != 2 {
		t.Fatalf("%+v, %v", recs, err)
	}
	if recs[0].ID != "gone" || recs[0].State != "" || recs[1].ID != "here" || string(recs[1].Result) != `{"x":1}` {
		t.Fatalf("%+v %+v", recs[0], recs[1])
	}
}
