package work

import (
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// debounceRuns records the runs of a job name: the args' "v" of each run.
type debounceRuns struct {
	mu   sync.Mutex
	vals []int64
}

func (r *debounceRuns) handler(j *Job) error {
	r.mu.Lock()
	r.vals = append(r.vals, j.ArgInt64("v"))
	r.mu.Unlock()
	return nil
}

func (r *debounceRuns) get() []int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]int64(nil), r.vals...)
}

// A burst of enqueues becomes one pending job holding the last args, due a window after the last
// enqueue; it runs once, with them.
func TestDebounceBurstRunsOnceWithTheLastArgs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	d := &Debounce{ID: "doc-7", Window: 2 * time.Second, MaxWait: time.Minute}
	var first *Job
	for i := 1; i <= 40; i++ {
		j, err := e.EnqueueWith("reindex", Q{"v": i}, EnqueueOptions{Debounce: d})
		if err != nil || j == nil || j.ArgInt64("v") != int64(i) {
			t.Fatalf("enqueue %d: %+v, %v", i, j, err)
		}
		if first == nil {
			first = j
		}
	}
	// The pending job waits in its burst, not in the scheduled set, until it is due.
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "debounces")); n != 1 {
		t.Fatalf("%d bursts pending, want one", n)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 0 {
		t.Fatalf("%d jobs scheduled, want none before the burst is due", n)
	}
	bursts, err := c.PendingBursts()
	if err != nil || len(bursts) != 1 {
		t.Fatalf("PendingBursts = %v, %v", bursts, err)
	}
	b := bursts[0]
	if b.Name != "reindex" || b.ID != "doc-7" || b.Enqueues != 40 || b.Job.ArgInt64("v") != 40 || b.Window != 2*time.Second || b.MaxWait != time.Minute {
		t.Errorf("pending burst %+v (job %+v)", b, b.Job)
	}
	if b.RunAt.Before(b.First) || b.RunAt.After(b.First.Add(time.Minute)) {
		t.Errorf("runs at %v, first enqueue %v: want within the maximum wait", b.RunAt, b.First)
	}
	runs := &debounceRuns{}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("reindex", runs.handler))
	eventually(t, 15*time.Second, "the burst's job ran", func() bool { return len(runs.get()) > 0 })
	time.Sleep(200 * time.Millisecond)
	if got := runs.get(); len(got) != 1 || got[0] != 40 {
		t.Errorf("runs %v, want one with the last args (40)", got)
	}
	if bursts, err := c.PendingBursts(); err != nil || len(bursts) != 0 {
		t.Errorf("after the run, PendingBursts = %v, %v", bursts, err)
	}
}

// KeepFirst keeps the first enqueue's args and returns that pending job; the run time still moves.
func TestDebounceKeepFirst(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	d := &Debounce{Window: 5 * time.Second, KeepFirst: true}
	j1, err := e.EnqueueWith("digest", Q{"v": 1}, EnqueueOptions{Key: "user-1", Debounce: d})
	if err != nil {
		t.Fatal(err)
	}
	j2, err := e.EnqueueWith("digest", Q{"v": 2}, EnqueueOptions{Key: "user-1", Debounce: d})
	if err != nil || j2.ID != j1.ID || j2.ArgInt64("v") != 1 {
		t.Fatalf("second enqueue returned %+v, %v; want the first job", j2, err)
	}
	// The burst is the name and key by default: another key is another burst.
	if _, err := e.EnqueueWith("digest", Q{"v": 3}, EnqueueOptions{Key: "user-2", Debounce: d}); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "debounces")); n != 2 {
		t.Errorf("%d bursts pending, want one per key", n)
	}
}

// The maximum wait bounds a burst that never pauses: its job is due by first + MaxWait, however late
// the last enqueue.
func TestDebounceMaxWaitBoundsTheRunTime(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	d := &Debounce{ID: "x", Window: 10 * time.Second, MaxWait: 11 * time.Second}
	for i := 0; i < 3; i++ {
		if _, err := e.EnqueueWith("j", Q{"v": i}, EnqueueOptions{Debounce: d}); err != nil {
			t.Fatal(err)
		}
		bursts, err := c.PendingBursts()
		if err != nil || len(bursts) != 1 {
			t.Fatalf("PendingBursts = %v, %v", bursts, err)
		}
		b := bursts[0]
		if limit := b.First.Add(11 * time.Second); b.RunAt.After(limit) {
			t.Errorf("enqueue %d: runs at %v, past first + MaxWait %v", i, b.RunAt, limit)
		}
		if i < 2 {
			time.Sleep(1100 * time.Millisecond)
		}
	}
	// The last enqueue came more than 2 s after the first: its window alone would end 12 s or more
	// after the first.
	bursts, _ := c.PendingBursts()
	if b := bursts[0]; !b.RunAt.Equal(b.First.Add(11 * time.Second).Truncate(time.Second)) {
		t.Errorf("after 2 s of enqueues with a 10 s window, runs %v after the first; want the second of the maximum wait (11 s)", b.RunAt.Sub(b.First))
	}
}

// Concurrent enqueues of one burst make one job.
func TestDebounceConcurrentEnqueuesMakeOneJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	d := &Debounce{ID: "same", Window: time.Minute}
	var wg sync.WaitGroup
	var failed atomic.Int64
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				if _, err := e.EnqueueWith("j", Q{"v": i}, EnqueueOptions{Debounce: d}); err != nil {
					failed.Add(1)
				}
			}
		}()
	}
	wg.Wait()
	if failed.Load() != 0 {
		t.Fatalf("%d enqueues failed", failed.Load())
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "debounces")); n != 1 {
		t.Errorf("%d bursts pending, want 1", n)
	}
	if n, _ := strconv.Atoi(fmt.Sprint(rInt(t, pool, "HGET", bhvKey(ns, "debounce", "j", "{same}"), "count"))); n != 400 {
		t.Errorf("the burst counts %d enqueues, want 400", n)
	}
}

// A job that has started is never replaced: the next enqueue begins a new burst, which runs too.
func TestDebounceNeverReplacesAStartedJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	started, release := make(chan int64, 4), make(chan struct{})
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("j", func(j *Job) error {
		started <- j.ArgInt64("v")
		<-release
		return nil
	}))
	d := &Debounce{ID: "b", Window: time.Second}
	if _, err := e.EnqueueWith("j", Q{"v": 1}, EnqueueOptions{Debounce: d}); err != nil {
		t.Fatal(err)
	}
	var v int64
	select {
	case v = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the first burst's job did not start")
	}
	if _, err := e.EnqueueWith("j", Q{"v": 2}, EnqueueOptions{Debounce: d}); err != nil {
		t.Fatal(err)
	}
	var v2 int64
	select {
	case v2 = <-started:
	case <-time.After(30 * time.Second):
		t.Fatal("the second burst's job did not start")
	}
	close(release)
	if v != 1 || v2 != 2 {
		t.Errorf("runs %d then %d, want 1 then 2", v, v2)
	}
}

// Out-of-range windows and options that cannot go with a debounce are refused before any round
// trip, with ErrMalformedDebounce.
func TestDebounceRefusesBadInput(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	ok := Debounce{Window: time.Second}
	bad := map[string]EnqueueOptions{
		"no window":        {Debounce: &Debounce{}},
		"half a second":    {Debounce: &Debounce{Window: 500 * time.Millisecond}},
		"window too long":  {Debounce: &Debounce{Window: 25 * time.Hour}},
		"max < window":     {Debounce: &Debounce{Window: 5 * time.Second, MaxWait: time.Second}},
		"max too long":     {Debounce: &Debounce{Window: time.Second, MaxWait: 8 * 24 * time.Hour}},
		"brace in the ID":  {Debounce: &Debounce{ID: "a{b", Window: time.Second}},
		"with At":          {Debounce: &ok, At: time.Now().Add(time.Hour)},
		"with Unique":      {Debounce: &ok, Unique: true},
		"with After":       {Debounce: &ok, After: []string{"abc"}},
		"with Track":       {Debounce: &ok, Track: true},
		"with UniqueBy":    {Debounce: &ok, UniqueBy: Q{"a": 1}},
		"with AfterBatch":  {Debounce: &ok, AfterBatches: []string{"b"}},
		"a malformed name": {Debounce: &ok},
	}
	for what, opts := range bad {
		name := "j"
		if what == "a malformed name" {
			name = "j:lock"
		}
		_, err := e.EnqueueWith(name, nil, opts)
		if err == nil || (what != "a malformed name" && !errors.Is(err, ErrMalformedDebounce)) {
			t.Errorf("%s: %v, want ErrMalformedDebounce", what, err)
		}
		if CheckEnqueue(name, nil, opts) == nil {
			t.Errorf("%s: CheckEnqueue accepts it", what)
		}
	}
	if keys := rStrings(t, pool, "KEYS", ns+":*"); len(keys) != 0 {
		t.Errorf("refused enqueues wrote %v", keys)
	}
}

// A burst written by the layout before this one (its job in the scheduled set, named by the hash's
// "member") goes on when an enqueue of it comes: its job moves into the burst and is replaced, so
// the burst still runs once. One whose job has left the scheduled set is over: a new burst begins.
func TestDebounceTakesOverABurstOfTheEarlierLayout(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	now := time.Now()
	runAt := now.Add(time.Hour).Unix()
	old := `{"name":"reindex","id":"old-1","t":1,"args":{"v":1},"debounce":"doc-1"}`
	gone := `{"name":"reindex","id":"old-2","t":1,"args":{"v":1},"debounce":"doc-2"}`
	for _, b := range []struct{ id, member string }{{"doc-1", old}, {"doc-2", gone}} {
		rdo(t, pool, "HSET", bhvKey(ns, "debounce", "reindex", "{"+b.id+"}"), "member", b.member,
			"first_ms", now.UnixMilli(), "count", 5, "run_at", runAt, "window_ms", 3600000, "max_wait_ms", 0)
		rdo(t, pool, "ZADD", bhvKey(ns, "debounces"), runAt, "reindex\n"+b.id)
	}
	rdo(t, pool, "ZADD", bhvKey(ns, "scheduled"), runAt, old)
	d := &Debounce{Window: time.Hour}
	for _, id := range []string{"doc-1", "doc-2"} {
		if _, err := e.EnqueueWith("reindex", Q{"v": 2}, EnqueueOptions{Key: id, Debounce: d}); err != nil {
			t.Fatal(err)
		}
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 0 {
		t.Errorf("%d jobs left in the scheduled set, want the old burst's job taken into its burst", n)
	}
	bursts, err := c.PendingBursts()
	if err != nil || len(bursts) != 2 {
		t.Fatalf("PendingBursts = %v, %v", bursts, err)
	}
	for _, b := range bursts {
		want := map[string]int64{"doc-1": 6, "doc-2": 1}[b.ID]
		if b.Enqueues != want || b.Job.ArgInt64("v") != 2 {
			t.Errorf("burst %s: %d enqueues, v %d; want %d and v 2", b.ID, b.Enqueues, b.Job.ArgInt64("v"), want)
		}
	}
}
