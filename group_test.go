package work

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// groupCalls records the calls of a group handler: the args' "v" of each job, call by call.
type groupCalls struct {
	mu    sync.Mutex
	calls [][]int64
	jobs  [][]*Job
	at    []time.Time
}

func (r *groupCalls) record(jobs []*Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	vs := make([]int64, len(jobs))
	seen := make([]*Job, len(jobs))
	for i, j := range jobs {
		vs[i] = j.ArgInt64("v")
		c := *j // as the handler saw it: the pool updates a job that failed alone
		seen[i] = &c
	}
	r.calls = append(r.calls, vs)
	r.jobs = append(r.jobs, seen)
	r.at = append(r.at, time.Now())
}

func (r *groupCalls) handler(jobs []*Job) error {
	r.record(jobs)
	return nil
}

func (r *groupCalls) get() [][]int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([][]int64(nil), r.calls...)
}

// enqueueGroup enqueues jobs with v = from..to into group g of name.
func enqueueGroup(t *testing.T, e *Enqueuer, name, g string, from, to int) {
	t.Helper()
	for v := from; v <= to; v++ {
		if _, err := e.EnqueueWith(name, Q{"v": v}, EnqueueOptions{Group: g}); err != nil {
			t.Fatalf("enqueue %d: %v", v, err)
		}
	}
}

// A group that reaches MaxSize is flushed at once into one call of MaxSize jobs, oldest first (and
// with KeyConcurrency 1 the calls run in order); the remainder of an overflow waits, indexed by its
// own oldest job, and the Client lists it.
func TestGroupFlushBySizeInOrderWithRemainder(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	calls := &groupCalls{}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		GroupJob("digest", GroupOptions{MaxSize: 5, MaxDelay: time.Hour, JobOptions: JobOptions{KeyConcurrency: 1}}, calls.handler))
	start := time.Now()
	enqueueGroup(t, e, "digest", "user-1", 1, 12)
	eventually(t, 10*time.Second, "two calls", func() bool { return len(calls.get()) >= 2 })
	time.Sleep(300 * time.Millisecond)
	got := calls.get()
	if fmt.Sprint(got) != "[[1 2 3 4 5] [6 7 8 9 10]]" {
		t.Errorf("calls %v, want [[1 2 3 4 5] [6 7 8 9 10]]", got)
	}
	call := calls.jobs[0][0]
	if call.Group != "user-1" || call.Name != "digest" || call.Key != "" {
		t.Errorf("a member reads %+v, want its group and no key", call)
	}
	groups, err := c.Groups("digest")
	if err != nil || len(groups) != 1 {
		t.Fatalf("Groups = %v, %v", groups, err)
	}
	g := groups[0]
	if g.Name != "digest" || g.Group != "user-1" || g.Size != 2 {
		t.Errorf("group %+v, want digest/user-1 with 2 jobs", g)
	}
	if g.Oldest.Before(start.Add(-time.Second)) || g.Oldest.After(time.Now().Add(time.Second)) {
		t.Errorf("oldest %v, want about %v", g.Oldest, start)
	}
	// The remainder is due an hour after its own oldest job (job 11).
	if d := g.NextFlush.Sub(g.Oldest); d < time.Hour-time.Second || d > time.Hour+time.Second {
		t.Errorf("next flush %v after the oldest, want an hour", d)
	}
	if all, _ := c.Groups(""); len(all) != 1 {
		t.Errorf("Groups(\"\") = %v, want the one group", all)
	}
	if others, _ := c.Groups("other"); len(others) != 0 {
		t.Errorf("Groups(other) = %v, want none", others)
	}
}

// MaxDelay flushes a group that long after its oldest job, whatever came since.
func TestGroupFlushByMaxDelay(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	calls := &groupCalls{}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		GroupJob("metrics", GroupOptions{MaxDelay: 2 * time.Second}, calls.handler))
	first := time.Now()
	for v := 1; v <= 3; v++ {
		enqueueGroup(t, e, "metrics", "m", v, v)
		time.Sleep(400 * time.Millisecond)
	}
	eventually(t, 10*time.Second, "a call", func() bool { return len(calls.get()) > 0 })
	time.Sleep(300 * time.Millisecond)
	if got := calls.get(); fmt.Sprint(got) != "[[1 2 3]]" {
		t.Errorf("calls %v, want one of the three jobs", got)
	}
	if d := calls.at[0].Sub(first); d < 1900*time.Millisecond || d > 5*time.Second {
		t.Errorf("flushed %v after the first job, want 2s (to the second)", d)
	}
}

// Grace flushes a group that long after its newest job: a group whose jobs keep coming waits.
func TestGroupFlushByGrace(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	calls := &groupCalls{}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		GroupJob("notify", GroupOptions{Grace: 2 * time.Second, MaxDelay: time.Hour}, calls.handler))
	var last time.Time
	for v := 1; v <= 5; v++ {
		enqueueGroup(t, e, "notify", "u", v, v)
		last = time.Now()
		time.Sleep(700 * time.Millisecond)
	}
	if got := calls.get(); len(got) != 0 {
		t.Fatalf("calls %v while the jobs kept coming", got)
	}
	eventually(t, 10*time.Second, "a call", func() bool { return len(calls.get()) > 0 })
	time.Sleep(300 * time.Millisecond)
	if got := calls.get(); fmt.Sprint(got) != "[[1 2 3 4 5]]" {
		t.Errorf("calls %v, want one of the five jobs", got)
	}
	if d := calls.at[0].Sub(last); d < 1900*time.Millisecond {
		t.Errorf("flushed %v after the newest job, want 2s", d)
	}
}

// A call that fails as a whole is retried as a job, with every one of its jobs.
func TestGroupFailedCallRetriedWhole(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	calls := &groupCalls{}
	opts := GroupOptions{MaxSize: 3, JobOptions: JobOptions{Backoff: func(*Job) int64 { return 1 }}}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).GroupJob("g", opts, func(jobs []*Job) error {
		calls.record(jobs)
		if len(calls.get()) == 1 {
			return errors.New("warehouse down")
		}
		return nil
	}))
	enqueueGroup(t, e, "g", "k", 1, 3)
	eventually(t, 15*time.Second, "the retry", func() bool { return len(calls.get()) >= 2 })
	time.Sleep(300 * time.Millisecond)
	if got := calls.get(); fmt.Sprint(got) != "[[1 2 3] [1 2 3]]" {
		t.Errorf("calls %v, want the whole call twice", got)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) + rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 0 {
		t.Errorf("%d jobs left in the retry and dead sets", n)
	}
}

// A GroupError fails the jobs it names, each on its own (retried alone, or dead at its last attempt
// or with FailNow); the call's other jobs are done.
func TestGroupPerJobOutcomes(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	calls := &groupCalls{}
	opts := GroupOptions{MaxSize: 4, JobOptions: JobOptions{MaxFails: 2, Backoff: func(*Job) int64 { return 1 }}}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).GroupJob("g", opts, func(ctx context.Context, jobs []*Job) error {
		calls.record(jobs)
		failed := map[string]error{}
		for _, j := range jobs {
			switch j.ArgInt64("v") {
			case 2:
				if j.Fails == 0 {
					failed[j.ID] = errors.New("busy")
				}
			case 3:
				failed[j.ID] = FailNow(errors.New("no such user"))
			case 4:
				failed[j.ID] = errors.New("always")
			}
		}
		if len(failed) > 0 {
			return &GroupError{Failed: failed}
		}
		return nil
	}))
	enqueueGroup(t, e, "g", "k", 1, 4)
	eventually(t, 20*time.Second, "the jobs retried alone", func() bool { return len(calls.get()) >= 3 })
	eventually(t, 10*time.Second, "two dead jobs", func() bool { return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 2 })
	time.Sleep(300 * time.Millisecond)
	got := calls.get()
	if len(got) != 3 || fmt.Sprint(got[0]) != "[1 2 3 4]" {
		t.Fatalf("calls %v, want the four jobs, then 2 and 4 alone", got)
	}
	if again := fmt.Sprint(got[1:]); again != "[[2] [4]]" && again != "[[4] [2]]" {
		t.Errorf("calls after the first %v, want 2 and 4 alone", again)
	}
	for _, call := range calls.jobs[1:] {
		j := call[0]
		if j.Fails != 1 || j.Key != "k" || j.Group != "" {
			t.Errorf("job retried alone %+v, want 1 failure, its group as key", j)
		}
	}
	dead, _, err := NewClient(ns, pool).DeadJobs(1)
	if err != nil || len(dead) != 2 {
		t.Fatalf("dead jobs %v, %v", dead, err)
	}
	errs := map[int64]string{}
	for _, d := range dead {
		errs[d.ArgInt64("v")] = d.LastErr
	}
	if errs[3] != "no such user" || errs[4] != "always" {
		t.Errorf("dead jobs' errors %v", errs)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")); n != 0 {
		t.Errorf("%d jobs left in the retry set", n)
	}
}

// A job the handler reports failed but that cannot be encoded again (the handler put a value JSON
// cannot hold in its args) is not lost: the whole call fails and runs again with the jobs as they
// were enqueued.
func TestGroupFailedJobThatCannotBeEncodedFailsTheCall(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	calls := &groupCalls{}
	var n atomic.Int32
	opts := GroupOptions{MaxSize: 2, JobOptions: JobOptions{MaxFails: 3, Backoff: func(*Job) int64 { return 0 }}}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).GroupJob("g", opts, func(ctx context.Context, jobs []*Job) error {
		calls.record(jobs)
		if n.Add(1) > 1 {
			return nil
		}
		for _, j := range jobs {
			if j.ArgInt64("v") == 2 {
				j.Args["ratio"] = math.NaN()
				return &GroupError{Failed: map[string]error{j.ID: errors.New("busy")}}
			}
		}
		return nil
	}))
	enqueueGroup(t, e, "g", "k", 1, 2)
	eventually(t, 20*time.Second, "the call run again", func() bool { return len(calls.get()) >= 2 })
	time.Sleep(300 * time.Millisecond)
	if got := fmt.Sprint(calls.get()); got != "[[1 2] [1 2]]" {
		t.Errorf("calls %v, want the call of both jobs twice", got)
	}
	for _, set := range []string{"retry", "dead"} {
		if c := rInt(t, pool, "ZCARD", bhvKey(ns, set)); c != 0 {
			t.Errorf("%d jobs in the %s set", c, set)
		}
	}
}

// Calls are keyed jobs of their group: KeyConcurrency 1 runs one call of a group at a time, while
// calls of other groups run beside it.
func TestGroupKeyConcurrencyOneCallPerGroup(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var mu sync.Mutex
	running, most := map[string]int{}, map[string]int{}
	total, mostTotal, jobs := 0, 0, 0
	opts := GroupOptions{MaxSize: 2, JobOptions: JobOptions{KeyConcurrency: 1}}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 6, ns, pool).GroupJob("g", opts, func(js []*Job) error {
		g := js[0].Group
		mu.Lock()
		running[g]++
		total++
		most[g] = max(most[g], running[g])
		mostTotal = max(mostTotal, total)
		mu.Unlock()
		time.Sleep(150 * time.Millisecond)
		mu.Lock()
		running[g]--
		total--
		jobs += len(js)
		mu.Unlock()
		return nil
	}))
	for v := 1; v <= 8; v++ {
		enqueueGroup(t, e, "g", "a", v, v)
		enqueueGroup(t, e, "g", "b", v, v)
	}
	eventually(t, 15*time.Second, "every job", func() bool { mu.Lock(); defer mu.Unlock(); return jobs == 16 })
	mu.Lock()
	defer mu.Unlock()
	if most["a"] != 1 || most["b"] != 1 {
		t.Errorf("most calls of a group at once %v, want 1", most)
	}
	if mostTotal < 2 {
		t.Errorf("at most %d calls at once, want the two groups' side by side", mostTotal)
	}
}

// A group key no key may have, and options a grouped job cannot have, are refused before any round
// trip with ErrMalformedGroup; so are GroupJob's out-of-range options and handlers of another form.
func TestGroupRefusesBadInput(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	bad := map[string]EnqueueOptions{
		"brace":         {Group: "a{b"},
		"control":       {Group: "a\nb"},
		"too long":      {Group: strings.Repeat("x", MaxKeyLen+1)},
		"with Key":      {Group: "g", Key: "k"},
		"with At":       {Group: "g", At: time.Now().Add(time.Hour)},
		"with Unique":   {Group: "g", Unique: true},
		"with UniqueBy": {Group: "g", UniqueBy: Q{"a": 1}},
		"with After":    {Group: "g", After: []string{"abc"}},
		"with Track":    {Group: "g", Track: true},
		"with Debounce": {Group: "g", Debounce: &Debounce{Window: time.Second}},
	}
	for what, opts := range bad {
		if _, err := e.EnqueueWith("j", nil, opts); !errors.Is(err, ErrMalformedGroup) {
			t.Errorf("%s: %v, want ErrMalformedGroup", what, err)
		}
		if err := CheckEnqueue("j", nil, opts); !errors.Is(err, ErrMalformedGroup) {
			t.Errorf("%s: CheckEnqueue says %v", what, err)
		}
	}
	if keys := rStrings(t, pool, "KEYS", ns+":*"); len(keys) != 0 {
		t.Errorf("refused enqueues wrote %v", keys)
	}
	ok := func([]*Job) error { return nil }
	panics := map[string]func(wp *WorkerPool){
		"nothing set":     func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{}, ok) },
		"size too big":    func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{MaxSize: MaxGroupSize + 1}, ok) },
		"negative size":   func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{MaxSize: -1, Grace: time.Second}, ok) },
		"half a second":   func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{MaxDelay: time.Second / 2}, ok) },
		"grace too short": func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{Grace: time.Millisecond}, ok) },
		"job handler":     func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{MaxSize: 2}, func(*Job) error { return nil }) },
		"no error":        func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{MaxSize: 2}, func([]*Job) {}) },
		"nil":             func(wp *WorkerPool) { wp.GroupJob("j", GroupOptions{MaxSize: 2}, nil) },
	}
	for what, f := range panics {
		func() {
			defer func() {
				if p := recover(); p == nil {
					t.Errorf("%s: GroupJob did not panic", what)
				} else if what == "job handler" && !strings.Contains(fmt.Sprint(p), "func(*work.Job) error") {
					t.Errorf("%s: panic %q does not name the handler's form", what, p)
				}
			}()
			f(NewWorkerPool(bhvCtx{}, 1, ns, pool))
		}()
	}
}

// A group of a name no pool registered waits groupDefaultDelay after its first job; the settings a
// pool registers later apply to it (RegisterPool makes its groups due for a recheck), and a pool
// flushes it when it is due under them.
func TestGroupWithoutSettingsDueAfterDefaultDelay(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e, c := NewEnqueuer(ns, pool), NewClient(ns, pool)
	enqueueGroup(t, e, "late", "x", 1, 2)
	groups, err := c.Groups("late")
	if err != nil || len(groups) != 1 || groups[0].Size != 2 {
		t.Fatalf("Groups = %v, %v", groups, err)
	}
	g := groups[0]
	if d := g.NextFlush.Sub(g.Oldest); d < groupDefaultDelay || d > groupDefaultDelay+time.Second {
		t.Errorf("next flush %v after the oldest job, want %v (to the second)", d, groupDefaultDelay)
	}
	// A pool that registers settings for the name applies them to the group waiting already: with a
	// MaxDelay of an hour it is due an hour after its oldest job, not at the default time.
	regroup := NewWorkerPool(bhvCtx{}, 1, ns, pool).GroupJob("late", GroupOptions{MaxSize: 100, MaxDelay: time.Hour}, func([]*Job) error { return nil })
	regroup.Start()
	eventually(t, 10*time.Second, "the group indexed under the pool's settings", func() bool {
		gs, err := c.Groups("late")
		return err == nil && len(gs) == 1 && gs[0].NextFlush.Sub(gs[0].Oldest) > 50*time.Minute
	})
	regroup.Stop()
	// With a MaxDelay of a second, the next pool flushes it at once.
	calls := &groupCalls{}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).GroupJob("late", GroupOptions{MaxSize: 100, MaxDelay: time.Second}, calls.handler))
	eventually(t, 10*time.Second, "a call", func() bool { return len(calls.get()) > 0 })
	if got := calls.get(); fmt.Sprint(got) != "[[1 2]]" {
		t.Errorf("calls %v, want one of both jobs", got)
	}
	eventually(t, 5*time.Second, "the group out of the index", func() bool {
		return rInt(t, pool, "EXISTS", bhvKey(ns, "groups_due")) == 0
	})
}

// A job of the name that is not a call (enqueued without a group) reaches the handler as a call of
// one job.
func TestGroupPlainJobIsACallOfOne(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	calls := &groupCalls{}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).GroupJob("g", GroupOptions{MaxSize: 10}, calls.handler))
	if _, err := NewEnqueuer(ns, pool).Enqueue("g", Q{"v": 7}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a call", func() bool { return len(calls.get()) > 0 })
	if got := calls.get(); fmt.Sprint(got) != "[[7]]" {
		t.Errorf("calls %v, want one of the job", got)
	}
}
