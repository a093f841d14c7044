package work

import (
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// callbackRecorder counts the runs of batch callbacks and keeps their args.
type callbackRecorder struct {
	mu   sync.Mutex
	runs map[string][]map[string]interface{}
}

func newCallbackRecorder() *callbackRecorder {
	return &callbackRecorder{runs: map[string][]map[string]interface{}{}}
}

func (c *callbackRecorder) handler(j *Job) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.runs[j.Name] = append(c.runs[j.Name], j.Args)
	return nil
}

func (c *callbackRecorder) count(name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.runs[name])
}

func (c *callbackRecorder) args(name string) map[string]interface{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	if len(c.runs[name]) == 0 {
		return nil
	}
	return c.runs[name][0]
}

func TestBatchFiresOnCompleteAndOnSuccessOnceWithTheCounts(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	cb := newCallbackRecorder()
	var ran atomic.Int64
	members := make([]BatchJob, 40)
	for i := range members {
		members[i] = BatchJob{Name: "member", Args: Q{"i": i}}
	}
	b, jobs, err := e.EnqueueInBatch(BatchOptions{
		Description: "forty",
		OnComplete:  &BatchCallback{Name: "complete", Args: Q{"who": "report"}},
		OnSuccess:   &BatchCallback{Name: "success"},
	}, members)
	if err != nil {
		t.Fatal(err)
	}
	if len(jobs) != 40 || jobs[0].Batch != b.ID {
		t.Fatalf("jobs %d, batch of the first %q, want 40 and %q", len(jobs), jobs[0].Batch, b.ID)
	}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 5, ns, pool).
		Job("member", func(*Job) error { ran.Add(1); return nil }).
		Job("complete", cb.handler).Job("success", cb.handler))
	eventually(t, 20*time.Second, "both callbacks", func() bool { return cb.count("complete") == 1 && cb.count("success") == 1 })
	time.Sleep(200 * time.Millisecond) // room for a second run, which must not come
	if cb.count("complete") != 1 || cb.count("success") != 1 || ran.Load() != 40 {
		t.Fatalf("complete ran %d, success %d, members %d; want 1, 1, 40", cb.count("complete"), cb.count("success"), ran.Load())
	}
	args := cb.args("complete")
	want := map[string]interface{}{"who": "report", "batch_id": b.ID, "batch_total": 40.0, "batch_done": 40.0, "batch_dead": 0.0, "batch_failed": 0.0}
	for k, v := range want {
		if args[k] != v {
			t.Errorf("callback arg %s = %v, want %v (args %v)", k, args[k], v, args)
		}
	}
	st, err := NewClient(ns, pool).BatchStatus(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != "complete" || st.Total != 40 || st.Done != 40 || st.Pending != 0 || st.Dead != 0 ||
		st.Description != "forty" || st.OnCompleteFired == 0 || st.OnSuccessFired == 0 || st.Damaged {
		t.Errorf("status %+v", st)
	}
	if ttl := rInt(t, pool, "TTL", bhvKey(ns, "batch", b.ID)); ttl <= 0 || ttl > 86400 {
		t.Errorf("a complete batch's hash has TTL %d, want its Keep (24h)", ttl)
	}
}

func TestBatchWithADeadMemberFiresOnCompleteButNotOnSuccess(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	cb := newCallbackRecorder()
	b, _, err := e.EnqueueInBatch(BatchOptions{
		OnComplete: &BatchCallback{Name: "complete"},
		OnSuccess:  &BatchCallback{Name: "success"},
	}, []BatchJob{{Name: "ok"}, {Name: "ok"}, {Name: "flaky"}, {Name: "doomed"}})
	if err != nil {
		t.Fatal(err)
	}
	var flaky atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).
		Job("ok", func(*Job) error { return nil }).
		JobWithOptions("flaky", JobOptions{Backoff: func(*Job) int64 { return 0 }}, func(*Job) error {
			if flaky.Add(1) < 3 {
				return errors.New("not yet")
			}
			return nil
		}).
		JobWithOptions("doomed", JobOptions{MaxFails: 2, Backoff: func(*Job) int64 { return 0 }},
			func(*Job) error { return errors.New("never") }).
		Job("complete", cb.handler).Job("success", cb.handler))
	eventually(t, 30*time.Second, "on complete", func() bool { return cb.count("complete") == 1 })
	time.Sleep(300 * time.Millisecond)
	if cb.count("success") != 0 {
		t.Errorf("on success ran %d times for a batch with a dead member", cb.count("success"))
	}
	args := cb.args("complete")
	if args["batch_done"] != 3.0 || args["batch_dead"] != 1.0 || args["batch_failed"] != 4.0 {
		t.Errorf("counts %v, want done 3, dead 1, failed 4 (2 retries of flaky, 1 retry and 1 death of doomed)", args)
	}
	st, err := NewClient(ns, pool).BatchStatus(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if st.Done != 3 || st.Dead != 1 || st.Failed != 4 || st.OnSuccessFired != 0 || st.State != "complete" {
		t.Errorf("status %+v", st)
	}
}

// A member that adds jobs to its batch keeps the batch going until they end, however long they take.
func TestBatchMemberFanOutKeepsTheBatchOpenUntilItsChildrenEnd(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	cb := newCallbackRecorder()
	var children atomic.Int64
	gate := newBhvGate()
	b, _, err := e.EnqueueInBatch(BatchOptions{OnComplete: &BatchCallback{Name: "complete"}},
		[]BatchJob{{Name: "parent"}, {Name: "parent"}})
	if err != nil {
		t.Fatal(err)
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).
		Job("parent", func(j *Job) error {
			_, err := e.OpenBatch(j.Batch).Add(BatchJob{Name: "child"}, BatchJob{Name: "child"}, BatchJob{Name: "child"})
			return err
		}).
		Job("child", func(*Job) error { gate.Wait(); children.Add(1); return nil }).
		Job("complete", cb.handler))
	t.Cleanup(gate.Open)
	eventually(t, 20*time.Second, "the children to be added", func() bool {
		st, err := NewClient(ns, pool).BatchStatus(b.ID)
		return err == nil && st.Total == 8
	})
	time.Sleep(200 * time.Millisecond)
	if cb.count("complete") != 0 {
		t.Fatal("the batch completed while children were pending")
	}
	gate.Open()
	eventually(t, 20*time.Second, "on complete", func() bool { return cb.count("complete") == 1 })
	if children.Load() != 6 || cb.args("complete")["batch_total"] != 8.0 {
		t.Errorf("children %d, callback args %v; want 6 children, total 8", children.Load(), cb.args("complete"))
	}
	wp.Drain()
	// Complete: no more members.
	if _, err := e.OpenBatch(b.ID).Add(BatchJob{Name: "child"}); !errors.Is(err, ErrBatchComplete) {
		t.Errorf("Add to a complete batch: %v, want ErrBatchComplete", err)
	}
}

func TestOpenBatchCompletesOnlyOnceClosed(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	cb := newCallbackRecorder()
	b, err := e.NewBatch(BatchOptions{OnSuccess: &BatchCallback{Name: "success"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Close(); !errors.Is(err, ErrBatchEmpty) {
		t.Fatalf("closing an empty batch: %v, want ErrBatchEmpty", err)
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		Job("m", func(*Job) error { return nil }).Job("success", cb.handler))
	if _, err := b.Add(BatchJob{Name: "m"}, BatchJob{Name: "m"}); err != nil {
		t.Fatal(err)
	}
	wp.Drain()
	time.Sleep(200 * time.Millisecond)
	if cb.count("success") != 0 {
		t.Fatal("an open batch completed")
	}
	if _, err := b.Add(BatchJob{Name: "m"}); err != nil {
		t.Fatal(err)
	}
	wp.Drain()
	if err := b.Close(); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "on success after close", func() bool { return cb.count("success") == 1 })
	if got := cb.args("success")["batch_done"]; got != 3.0 {
		t.Errorf("batch_done %v, want 3", got)
	}
	if err := b.Close(); !errors.Is(err, ErrBatchComplete) {
		t.Errorf("closing a complete batch: %v, want ErrBatchComplete", err)
	}
}

func TestBatchRefusesBadInputWithClearErrors(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	c := NewClient(ns, pool)
	if _, _, err := e.EnqueueInBatch(BatchOptions{}, nil); !errors.Is(err, ErrBatchEmpty) {
		t.Errorf("empty one-shot batch: %v", err)
	}
	if _, err := e.OpenBatch("nope").Add(BatchJob{Name: "m"}); !errors.Is(err, ErrBatchNotFound) {
		t.Errorf("Add to an unknown batch: %v", err)
	}
	if rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "m")) != 0 {
		t.Error("a refused Add queued its job")
	}
	for _, id := range []string{"", "a b", "x:y", strings.Repeat("z", 65), "{tag}"} {
		if _, err := e.OpenBatch(id).Add(BatchJob{Name: "m"}); !errors.Is(err, ErrMalformedID) {
			t.Errorf("Add to batch %q: %v, want a malformed ID error", id, err)
		}
		if _, err := c.BatchStatus(id); err == nil {
			t.Errorf("BatchStatus(%q) accepted a malformed ID", id)
		}
	}
	if _, err := c.BatchStatus("unknown"); !errors.Is(err, ErrBatchNotFound) {
		t.Errorf("status of an unknown batch: %v", err)
	}
	if _, _, err := e.EnqueueInBatch(BatchOptions{OnComplete: &BatchCallback{Name: "cb", Args: Q{"batch_done": 1}}},
		[]BatchJob{{Name: "m"}}); err == nil {
		t.Error("a callback arg the batch sets was accepted")
	}
	if _, _, err := e.EnqueueInBatch(BatchOptions{OnComplete: &BatchCallback{Name: ""}}, []BatchJob{{Name: "m"}}); err == nil {
		t.Error("a callback without a job name was accepted")
	}
	// A queue key of the wrong type: nothing is queued, no batch is left behind.
	rdo(t, pool, "SET", bhvKey(ns, "jobs", "broken"), "x")
	if _, _, err := e.EnqueueInBatch(BatchOptions{}, []BatchJob{{Name: "m"}, {Name: "broken"}}); err == nil ||
		!strings.Contains(err.Error(), "WRONGTYPE") {
		t.Errorf("a batch onto a broken queue: %v", err)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "m")); n != 0 {
		t.Errorf("%d jobs queued by a refused batch", n)
	}
	if bs, total, err := c.Batches(1); err != nil || total != 0 || len(bs) != 0 {
		t.Errorf("Batches after refused ones: %v %d %v", bs, total, err)
	}
}

// Members of a batch whose hash another program overwrote still run and are acknowledged: the batch
// is damaged, never the jobs.
func TestBatchKeyOverwrittenWithTheWrongTypeNeverStrandsAMember(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	b, _, err := e.EnqueueInBatch(BatchOptions{OnComplete: &BatchCallback{Name: "complete"}},
		[]BatchJob{{Name: "m"}, {Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "DEL", bhvKey(ns, "batch", b.ID))
	rdo(t, pool, "SET", bhvKey(ns, "batch", b.ID), "garbage")
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("m", func(*Job) error { ran.Add(1); return nil }))
	wp.Drain()
	eventually(t, 10*time.Second, "the members acknowledged", func() bool {
		return ran.Load() == 2 && bhvInProgress(t, pool, ns, "m") == 0
	})
	if _, err := NewClient(ns, pool).BatchStatus(b.ID); err == nil {
		t.Error("the status of an overwritten batch read without an error")
	}
}

// bhvInProgress counts the jobs of a name in every in-progress list of the namespace.
func bhvInProgress(t testing.TB, pool *redis.Pool, ns, name string) int64 {
	t.Helper()
	var n int64
	for _, k := range rStrings(t, pool, "KEYS", bhvKey(ns, "jobs", name, "*", "inprogress")) {
		n += rInt(t, pool, "LLEN", k)
	}
	return n
}

func TestBatchStatusExpiresAfterKeep(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	b, _, err := e.EnqueueInBatch(BatchOptions{Keep: time.Second}, []BatchJob{{Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("m", func(*Job) error { return nil }))
	c := NewClient(ns, pool)
	eventually(t, 10*time.Second, "the batch to complete", func() bool {
		st, err := c.BatchStatus(b.ID)
		return err == nil && st.State == "complete"
	})
	eventually(t, 10*time.Second, "its status to expire", func() bool {
		_, err := c.BatchStatus(b.ID)
		return errors.Is(err, ErrBatchNotFound)
	})
	bs, total, err := c.Batches(1)
	if err != nil || len(bs) != 0 || total != 0 {
		t.Errorf("Batches after expiry: %d listed, total %d, %v; want none", len(bs), total, err)
	}
}

// A member deleted by hand before it ended counts as dead, so its batch still completes; the jobs
// waiting for a tracked job deleted by hand go to the dead set.
func TestJobsDeletedByHandNeverWedgeABatchOrADependant(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	c := NewClient(ns, pool)
	b, members, err := e.EnqueueInBatch(BatchOptions{OnComplete: &BatchCallback{Name: "complete"}},
		[]BatchJob{{Name: "m"}, {Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	dep, err := e.EnqueueWith("dep", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	after, err := e.EnqueueWith("after", nil, EnqueueOptions{After: []string{dep.ID}})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteQueuedJob("m", members[0].ID); err != nil {
		t.Fatal(err)
	}
	if err := c.DeleteQueuedJob("dep", dep.ID); err != nil {
		t.Fatal(err)
	}
	cb := newCallbackRecorder()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("m", func(*Job) error { return nil }).
		Job("after", func(*Job) error { return nil }).Job("complete", cb.handler))
	eventually(t, 10*time.Second, "the batch to complete", func() bool { return cb.count("complete") == 1 })
	if args := cb.args("complete"); args["batch_done"] != 1.0 || args["batch_dead"] != 1.0 {
		t.Errorf("counts %v, want 1 done and the deleted one dead", args)
	}
	if st, err := c.BatchStatus(b.ID); err != nil || st.Pending != 0 {
		t.Errorf("status %+v %v", st, err)
	}
	r, err := c.JobRecord(after.ID)
	if err != nil || r.State != "dead" || !strings.Contains(r.Err, "deleted") {
		t.Errorf("the dependant of a deleted job: %+v %v", r, err)
	}
}
