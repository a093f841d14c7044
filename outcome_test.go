package work

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

type outcomeCtx struct{}

func deadJobs(t *testing.T, c *Client) []*DeadJob {
	t.Helper()
	jobs, _, err := c.DeadJobs(1)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

func TestFailNowSendsTheJobToDeadWithoutRetries(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := NewWorkerPool(outcomeCtx{}, 2, ns, pool)
	wp.JobWithOptions("x", JobOptions{MaxFails: 10}, func(*Job) error {
		runs.Add(1)
		return FailNow(errors.New("account closed"))
	})
	wp.Start()
	defer wp.Stop()
	if _, err := NewEnqueuer(ns, pool).Enqueue("x", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the job in the dead set", func() bool { return rInt(t, pool, "ZCARD", ns+":dead") == 1 })
	wp.Drain()
	dead := deadJobs(t, NewClient(ns, pool))
	if dead[0].LastErr != "account closed" || dead[0].Fails != 1 {
		t.Fatalf("dead job: err %q fails %d", dead[0].LastErr, dead[0].Fails)
	}
	if rInt(t, pool, "ZCARD", ns+":retry") != 0 || runs.Load() != 1 {
		t.Fatalf("retried: runs %d", runs.Load())
	}
	var fn *FailNowError
	if !errors.As(FailNow(errors.New("e")), &fn) || fn.Error() != "e" {
		t.Fatal("FailNow is not errors.As-friendly")
	}
}

func TestFailNowWithSkipDeadDropsTheJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := NewWorkerPool(outcomeCtx{}, 1, ns, pool)
	wp.JobWithOptions("x", JobOptions{SkipDead: true}, func(*Job) error { runs.Add(1); return FailNow(nil) })
	wp.Start()
	defer wp.Stop()
	NewEnqueuer(ns, pool).Enqueue("x", nil)
	eventually(t, 5*time.Second, "the job to run", func() bool { return runs.Load() == 1 })
	wp.Drain()
	if rInt(t, pool, "ZCARD", ns+":dead")+rInt(t, pool, "ZCARD", ns+":retry")+rInt(t, pool, "LLEN", ns+":jobs:x") != 0 {
		t.Fatal("a dropped job was kept somewhere")
	}
}

func TestSnoozeReschedulesWithoutCountingAFailure(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	var fails atomic.Int64
	wp := NewWorkerPool(outcomeCtx{}, 1, ns, pool)
	wp.Job("x", func(j *Job) error {
		fails.Store(j.Fails)
		if runs.Add(1) == 1 {
			return Snooze(time.Second)
		}
		return nil
	})
	wp.Start()
	defer wp.Stop()
	before := time.Now().Unix()
	NewEnqueuer(ns, pool).Enqueue("x", Q{"k": 1})
	eventually(t, 5*time.Second, "the snoozed job in the scheduled set", func() bool {
		return rInt(t, pool, "ZCARD", ns+":scheduled") == 1
	})
	sched, _, err := NewClient(ns, pool).ScheduledJobs(1)
	if err != nil || len(sched) != 1 {
		t.Fatalf("scheduled: %v %v", sched, err)
	}
	if sched[0].RunAt < before+1 || sched[0].Fails != 0 || sched[0].LastErr != "" {
		t.Fatalf("snoozed job: run at %d (enqueued at %d), fails %d, err %q", sched[0].RunAt, before, sched[0].Fails, sched[0].LastErr)
	}
	eventually(t, 10*time.Second, "the second run", func() bool { return runs.Load() == 2 })
	if fails.Load() != 0 {
		t.Fatalf("second run saw fails %d, want 0", fails.Load())
	}
}

func TestPanicPolicies(t *testing.T) {
	for _, tc := range []struct {
		policy          PanicPolicy
		set             string
		wantFails       int64
		wantRetryOrDead string
	}{
		{PanicFails, "retry", 1, "retry"},
		{PanicRetries, "retry", 0, "retry"},
		{PanicKills, "dead", 1, "dead"},
	} {
		tc := tc
		t.Run(fmt.Sprint(tc.policy), func(t *testing.T) {
			t.Parallel()
			pool := newTestPool(t)
			ns := newTestNamespace(t, pool)
			wp := NewWorkerPoolWithOptions(outcomeCtx{}, 1, ns, pool, WorkerPoolOptions{PanicPolicy: tc.policy})
			wp.JobWithOptions("x", JobOptions{MaxFails: 5}, func(*Job) error { panic("boom") })
			wp.Start()
			defer wp.Stop()
			NewEnqueuer(ns, pool).Enqueue("x", nil)
			eventually(t, 5*time.Second, "the job in the "+tc.set+" set", func() bool {
				return rInt(t, pool, "ZCARD", ns+":"+tc.set) == 1
			})
			m := rStrings(t, pool, "ZRANGE", ns+":"+tc.set, 0, -1)
			j, err := decodeJob([]byte(m[0]))
			if err != nil || j.Fails != tc.wantFails || j.LastErr != "boom" {
				t.Fatalf("job %s: fails %d err %q, want fails %d err boom", m[0], j.Fails, j.LastErr, tc.wantFails)
			}
		})
	}
}

func TestCancelJobCancelsTheRunningJobInAnotherPoolAndSendsItToDead(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	started := make(chan string, 1)
	var cause atomic.Value
	wp := NewWorkerPool(outcomeCtx{}, 2, ns, pool)
	wp.JobWithOptions("long", JobOptions{MaxFails: 5}, func(ctx context.Context, j *Job) error {
		started <- j.ID
		<-ctx.Done()
		cause.Store(context.Cause(ctx))
		return ctx.Err()
	})
	wp.Start()
	defer wp.Stop()
	job, err := NewEnqueuer(ns, pool).Enqueue("long", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	client := NewClient(ns, pool)
	// The pool subscribes when it starts; its subscription may need a moment.
	eventually(t, 5*time.Second, "a pool to hear the cancel request", func() bool {
		n, err := client.CancelJob(job.ID)
		return err == nil && n >= 1 && cause.Load() != nil
	})
	if c, _ := cause.Load().(error); !errors.Is(c, ErrJobCancelled) {
		t.Fatalf("context cause %v, want ErrJobCancelled", c)
	}
	eventually(t, 5*time.Second, "the cancelled job in the dead set", func() bool {
		return rInt(t, pool, "ZCARD", ns+":dead") == 1
	})
	dead := deadJobs(t, client)
	if dead[0].ID != job.ID || dead[0].LastErr != "cancelled" || rInt(t, pool, "ZCARD", ns+":retry") != 0 {
		t.Fatalf("dead job %+v", dead[0].Job)
	}
	if _, err := client.CancelJob(""); err == nil {
		t.Fatal("no error for an empty job ID")
	}
}

func TestStrictPriorityDrainsTheHighestPriorityQueueFirst(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var batch []BatchJob
	for i := 0; i < 50; i++ {
		batch = append(batch, BatchJob{Name: "low"}, BatchJob{Name: "high"})
	}
	if _, err := e.EnqueueBatch(batch); err != nil {
		t.Fatal(err)
	}
	order := make(chan string, 100)
	wp := NewWorkerPoolWithOptions(outcomeCtx{}, 1, ns, pool, WorkerPoolOptions{StrictPriority: true})
	wp.JobWithOptions("low", JobOptions{Priority: 1}, func(j *Job) error { order <- j.Name; return nil })
	wp.JobWithOptions("high", JobOptions{Priority: 10}, func(j *Job) error { order <- j.Name; return nil })
	wp.Start()
	defer wp.Stop()
	for i := 0; i < 100; i++ {
		name := <-order
		if i < 50 && name != "high" {
			t.Fatalf("job %d came from %q while high-priority jobs waited", i, name)
		}
	}
}

func TestStrictSamplerOrdersByPriorityAndShufflesTies(t *testing.T) {
	s := newPrioritySampler(map[string]uint{"a": 1, "b": 5, "c": 5, "d": 9}, true)
	ready := map[string]bool{"a": true, "b": true, "c": true, "d": true}
	firstB := 0
	for i := 0; i < 200; i++ {
		o := s.order(ready, nil)
		if o[0] != "d" || o[3] != "a" {
			t.Fatalf("strict order %v", o)
		}
		if o[1] == "b" {
			firstB++
		}
	}
	if firstB == 0 || firstB == 200 {
		t.Fatalf("ties were not shuffled: b first %d of 200", firstB)
	}
}

func TestOnOutcomeReportsWhereEachJobWent(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan JobOutcome, 10)
	wp := NewWorkerPoolWithOptions(outcomeCtx{}, 1, ns, pool, WorkerPoolOptions{OnOutcome: func(o JobOutcome) {
		got <- o
		if o.Job.Name == "hook-panics" {
			panic("a broken hook")
		}
	}})
	wp.Job("ok", func(*Job) error { return nil })
	wp.JobWithOptions("retry", JobOptions{MaxFails: 2}, func(*Job) error { return errors.New("e") })
	wp.JobWithOptions("dead", JobOptions{MaxFails: 1}, func(*Job) error { panic("p") })
	wp.JobWithOptions("dropped", JobOptions{SkipDead: true}, func(*Job) error { return FailNow(nil) })
	wp.Job("snoozed", func(*Job) error { return Snooze(time.Hour) })
	wp.Job("hook-panics", func(*Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	e := NewEnqueuer(ns, pool)
	want := map[string]Result{"ok": ResultDone, "retry": ResultRetry, "dead": ResultDead,
		"dropped": ResultDropped, "snoozed": ResultSnoozed, "hook-panics": ResultDone}
	for name := range want {
		e.Enqueue(name, nil)
	}
	seen := map[string]JobOutcome{}
	for len(seen) < len(want) {
		select {
		case o := <-got:
			seen[o.Job.Name] = o
		case <-time.After(10 * time.Second):
			t.Fatalf("outcomes seen: %v", seen)
		}
	}
	for name, r := range want {
		if seen[name].Result != r {
			t.Errorf("%s: result %v, want %v", name, seen[name].Result, r)
		}
	}
	if !seen["dead"].Panicked || seen["retry"].Job.Fails != 1 || seen["ok"].Err != nil {
		t.Errorf("outcome details: %+v %+v %+v", seen["dead"], seen["retry"], seen["ok"])
	}
	// The pool survives a panicking hook.
	e.Enqueue("ok", nil)
	select {
	case <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("no outcome after the hook panicked")
	}
}
