package work

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// An enqueue given its ID makes one job of it, whatever its kind: the second enqueue of the ID
// writes nothing and says so; once forgotten, the ID enqueues again.
func TestEnqueueWithIDIsIdempotentForEveryKind(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	dep, err := e.EnqueueWith("dep", nil, EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]EnqueueOptions{
		"plain":     {},
		"keyed":     {Key: "acme"},
		"scheduled": {At: time.Now().Add(time.Hour)},
		"unique":    {Unique: true},
		"uniqueIn":  {Unique: true, At: time.Now().Add(time.Hour)},
		"after":     {After: []string{dep.ID}},
		"tracked":   {Track: true},
		"debounced": {Debounce: &Debounce{ID: "burst", Window: time.Hour}},
		"grouped":   {Group: "g"},
	}
	for kind, opts := range kinds {
		id := NewJobID()
		opts.ID = id
		job, err := e.EnqueueWith(kind, Q{"n": 1}, opts)
		if err != nil || job == nil || job.ID != id {
			t.Fatalf("%s: first enqueue = (%+v, %v), want a job with ID %s", kind, job, err, id)
		}
		again, err := e.EnqueueWith(kind, Q{"n": 2}, opts)
		if !errors.Is(err, ErrDuplicateJobID) || again != nil {
			t.Errorf("%s: second enqueue of the ID = (%+v, %v), want ErrDuplicateJobID", kind, again, err)
		}
		if ttl := rInt(t, pool, "TTL", bhvKey(ns, "jobid", id)); ttl < 86300 || ttl > 86400 {
			t.Errorf("%s: the ID's mark lives %d s, want about a day", kind, ttl)
		}
		if err := e.ForgetJobIDs(id); err != nil {
			t.Fatal(err)
		}
		if rInt(t, pool, "EXISTS", bhvKey(ns, "jobid", id)) != 0 {
			t.Errorf("%s: the mark outlived ForgetJobIDs", kind)
		}
	}
	// One job of each kind is stored, under its ID.
	found := 0
	for _, q := range []string{"plain"} {
		for _, raw := range rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", q), 0, -1) {
			if strings.Contains(raw, `"n":1`) {
				found++
			}
		}
	}
	if found != 1 {
		t.Errorf("%d plain jobs stored, want 1", found)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 2 {
		t.Errorf("%d scheduled jobs, want 2 (scheduled, uniqueIn)", n)
	}
	if n := rInt(t, pool, "HGET", bhvKey(ns, "debounce", "debounced", "{burst}"), "count"); n != 1 {
		t.Errorf("the debounced burst counts %d enqueues, want 1", n)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "unique")); n != 1 {
		t.Errorf("%d unique jobs queued, want 1", n)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "tracked")); n != 1 {
		t.Errorf("%d tracked jobs queued, want 1", n)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "group", "grouped", "{g}")); n != 1 {
		t.Errorf("%d grouped jobs waiting, want 1", n)
	}
}

// The mark lives IDKeep, rounded up to a second; a negative IDKeep or a malformed ID is refused
// before any round trip.
func TestEnqueueWithIDChecksAndKeeps(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	if _, err := e.EnqueueWith("x", nil, EnqueueOptions{ID: "a1", IDKeep: 1500 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	if ttl := rInt(t, pool, "TTL", bhvKey(ns, "jobid", "a1")); ttl != 2 {
		t.Errorf("mark TTL %d, want 2", ttl)
	}
	for _, opts := range []EnqueueOptions{{ID: "a b"}, {ID: strings.Repeat("x", 65)}, {ID: "a1", IDKeep: -time.Second}} {
		if _, err := e.EnqueueWith("x", nil, opts); err == nil {
			t.Errorf("%+v: enqueued", opts)
		} else if err := CheckEnqueue("x", nil, opts); err == nil {
			t.Errorf("%+v: CheckEnqueue accepts what EnqueueWith refuses", opts)
		}
	}
	if _, err := e.EnqueueWith("x", nil, EnqueueOptions{ID: "a b"}); !errors.Is(err, ErrMalformedID) {
		t.Errorf("an ID with a space: %v, want ErrMalformedID", err)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "x")); n != 1 {
		t.Errorf("%d jobs, want 1", n)
	}
}

// A refused enqueue leaves no mark: the same ID goes in once the refusal's cause is gone.
func TestEnqueueWithIDRefusedLeavesNoMark(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	_, err := e.EnqueueWith("x", nil, EnqueueOptions{ID: "dep1", After: []string{"nosuchjob"}})
	if !errors.Is(err, ErrUnknownDependency) {
		t.Fatalf("unknown dependency: %v", err)
	}
	if rInt(t, pool, "EXISTS", bhvKey(ns, "jobid", "dep1")) != 0 {
		t.Error("a refused enqueue left its ID's mark")
	}
	if _, err := e.EnqueueWith("x", nil, EnqueueOptions{ID: "dep1"}); err != nil {
		t.Errorf("the ID after a refusal: %v", err)
	}
}

// Many goroutines sending the same IDs at once make one job of each, which runs once.
func TestEnqueueWithIDConcurrentSendersRunOnce(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var runs sync.Map
	var total atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).Job("once", func(j *Job) error {
		n, _ := runs.LoadOrStore(j.ID, new(atomic.Int64))
		n.(*atomic.Int64).Add(1)
		total.Add(1)
		return nil
	}))
	const ids, senders = 50, 4
	var wg sync.WaitGroup
	var dups atomic.Int64
	for s := 0; s < senders; s++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < ids; i++ {
				_, err := e.EnqueueWith("once", Q{"i": i}, EnqueueOptions{ID: fmt.Sprintf("id-%d", i)})
				switch {
				case errors.Is(err, ErrDuplicateJobID):
					dups.Add(1)
				case err != nil:
					t.Error(err)
				}
			}
		}()
	}
	wg.Wait()
	if dups.Load() != ids*(senders-1) {
		t.Errorf("%d duplicates refused, want %d", dups.Load(), ids*(senders-1))
	}
	eventually(t, 10*time.Second, "every job ran", func() bool { return total.Load() >= ids })
	time.Sleep(100 * time.Millisecond)
	runs.Range(func(k, v any) bool {
		if n := v.(*atomic.Int64).Load(); n != 1 {
			t.Errorf("job %v ran %d times", k, n)
		}
		return true
	})
	if total.Load() != ids {
		t.Errorf("%d runs, want %d", total.Load(), ids)
	}
}

// CheckEnqueue refuses what EnqueueWith refuses before a round trip, and accepts the rest.
func TestCheckEnqueue(t *testing.T) {
	bad := []struct {
		name string
		args map[string]interface{}
		opts EnqueueOptions
		want error
	}{
		{"", nil, EnqueueOptions{}, ErrMalformedJobName},
		{"x:lock", nil, EnqueueOptions{}, ErrMalformedJobName},
		{"x", nil, EnqueueOptions{Key: "a{b"}, ErrMalformedKey},
		{"x", nil, EnqueueOptions{After: []string{"bad id"}}, ErrMalformedID},
		{"x", nil, EnqueueOptions{ID: "bad id"}, ErrMalformedID},
		{"x", Q{"f": func() {}}, EnqueueOptions{}, ErrMalformedArgs},
		{"x", nil, EnqueueOptions{Unique: true, Track: true}, nil},
		{"x", nil, EnqueueOptions{At: time.Now(), Track: true}, nil},
	}
	for _, c := range bad {
		err := CheckEnqueue(c.name, c.args, c.opts)
		if err == nil || (c.want != nil && !errors.Is(err, c.want)) {
			t.Errorf("CheckEnqueue(%q, %v, %+v) = %v, want %v", c.name, c.args, c.opts, err, c.want)
		}
	}
	for _, opts := range []EnqueueOptions{{}, {Key: "k", ID: NewJobID()}, {Unique: true, At: time.Now()}, {After: []string{"a"}, Track: true}} {
		if err := CheckEnqueue("x", Q{"a": 1}, opts); err != nil {
			t.Errorf("CheckEnqueue(%+v) = %v", opts, err)
		}
	}
}
