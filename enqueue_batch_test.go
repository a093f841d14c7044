package work

import (
	"sync/atomic"
	"testing"
	"time"
)

func TestEnqueueBatchQueuesEveryJobInOrderAndWakesPools(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var batch []BatchJob
	for i := 0; i < 250; i++ {
		name := "a"
		if i%5 == 0 {
			name = "b"
		}
		batch = append(batch, BatchJob{Name: name, Args: Q{"i": i}})
	}
	jobs, err := e.EnqueueBatch(batch)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != len(batch) || jobs[7].Name != "a" || jobs[7].ArgInt64("i") != 7 {
		t.Fatalf("returned jobs do not match the batch")
	}
	if n := rInt(t, pool, "LLEN", ns+":jobs:a"); n != 200 {
		t.Fatalf("queue a holds %d, want 200", n)
	}
	if n := rInt(t, pool, "LLEN", ns+":jobs:b"); n != 50 {
		t.Fatalf("queue b holds %d, want 50", n)
	}
	if known := rStrings(t, pool, "SMEMBERS", ns+":known_jobs"); len(known) != 2 {
		t.Fatalf("known_jobs: %v", known)
	}
	// FIFO per name: the first job of the batch is first out.
	tail := rStrings(t, pool, "LRANGE", ns+":jobs:a", -1, -1)
	first, err := decodeJob([]byte(tail[0]))
	if err != nil || first.ID != jobs[1].ID {
		t.Fatalf("fetch end of queue a: %s, want job %s", tail[0], jobs[1].ID)
	}

	var ran atomic.Int64
	wp := NewWorkerPool(stopCtx{}, 4, ns, pool)
	wp.Job("a", func(*Job) error { ran.Add(1); return nil })
	wp.Job("b", func(*Job) error { ran.Add(1); return nil })
	wp.Start()
	defer wp.Stop()
	eventually(t, 10*time.Second, "the batch to run", func() bool { return ran.Load() == 250 })
}

func TestEnqueueBatchRejectsAnEmptyJobNameAndQueuesNothing(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	if _, err := e.EnqueueBatch([]BatchJob{{Name: "a"}, {Name: ""}}); err == nil {
		t.Fatal("no error for an empty job name")
	}
	if n := rInt(t, pool, "LLEN", ns+":jobs:a"); n != 0 {
		t.Fatalf("queue a holds %d jobs after a rejected batch", n)
	}
	if jobs, err := e.EnqueueBatch(nil); jobs != nil || err != nil {
		t.Fatalf("empty batch: %v %v", jobs, err)
	}
}
