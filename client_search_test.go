package work

import "testing"

// Keyed jobs waiting count among the queued jobs of the summary, as they wait like any other.
func TestSummaryCountsKeyedJobsAsQueued(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 3; i++ {
		if _, err := e.EnqueueWith("sync", Q{"i": i}, EnqueueOptions{Key: "tenant"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Enqueue("sync", nil); err != nil {
		t.Fatal(err)
	}
	s, err := NewClient(ns, pool).Summary()
	if err != nil || s.Queued != 4 || s.Keyed != 3 {
		t.Fatalf("summary %+v, %v", s, err)
	}
}

// A batch's ID finds its members in the dead set.
func TestSearchJobsFindsABatchsMembers(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	for _, j := range []*Job{{Name: "a", ID: "m1", Batch: "b-one"}, {Name: "a", ID: "m2", Batch: "b-two"}, {Name: "a", ID: "x"}} {
		raw, err := j.serialize()
		if err != nil {
			t.Fatal(err)
		}
		rdo(t, pool, "ZADD", bhvKey(ns, "dead"), 1, raw)
	}
	locs, total, err := NewClient(ns, pool).SearchJobs(JobStateDead, "b-one", 1)
	if err != nil || total != 1 || len(locs) != 1 || locs[0].Job.ID != "m1" {
		t.Fatalf("SearchJobs: %d %v %v", total, locs, err)
	}
}
