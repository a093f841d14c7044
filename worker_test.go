package work

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/gomodule/redigo/redis"
)

// Handler forms.

func TestAllHandlerFormsRun(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var mu sync.Mutex
	ran := map[string]int{}
	mark := func(name string) {
		mu.Lock()
		ran[name]++
		mu.Unlock()
	}
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	wp.Job("plain", func(j *Job) error { mark(j.Name); return nil })
	wp.Job("generic", GenericHandler(func(j *Job) error { mark(j.Name); return nil }))
	wp.Job("ctxstruct", func(c *bhvCtx, j *Job) error {
		if c == nil {
			t.Error("nil custom context")
		}
		mark(j.Name)
		return nil
	})
	wp.Job("method", (*bhvCtx).Record)
	wp.Job("context", func(ctx context.Context, j *Job) error {
		if ctx == nil || ctx.Err() != nil {
			t.Errorf("context handler got ctx %v", ctx)
		}
		if _, ok := ctx.Deadline(); ok {
			t.Error("a job without Timeout has a deadline")
		}
		mark(j.Name)
		return nil
	})
	wp.Job("contexthandler", ContextHandler(func(ctx context.Context, j *Job) error { mark(j.Name); return nil }))
	wp.Job("ctxcontext", func(c *bhvCtx, ctx context.Context, j *Job) error {
		if c == nil || ctx == nil {
			t.Error("nil custom context or context.Context")
		}
		mark(j.Name)
		return nil
	})
	var methodRuns atomic.Int64
	wp.Middleware(func(c *bhvCtx, j *Job, next NextMiddlewareFunc) error {
		err := next()
		if j.Name == "method" && c.n == 1 && len(c.trail) == 1 && c.trail[0] == "record:method" {
			methodRuns.Add(1)
		}
		return err
	})
	bhvStart(t, wp)
	names := []string{"plain", "generic", "ctxstruct", "method", "context", "contexthandler", "ctxcontext"}
	e := NewEnqueuer(ns, pool)
	for _, n := range names {
		if _, err := e.Enqueue(n, Q{"n": n}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "one run of every handler form", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == len(names)-1 && methodRuns.Load() == 1
	})
	wp.Drain()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if n == "method" {
			continue
		}
		if ran[n] != 1 {
			t.Errorf("handler %s ran %d times", n, ran[n])
		}
	}
	for _, set := range []string{"retry", "dead"} {
		if n := rInt(t, pool, "ZCARD", bhvKey(ns, set)); n != 0 {
			t.Errorf("%s set holds %d jobs", set, n)
		}
	}
}

type bhvOtherCtx struct{}

func TestInvalidHandlerSignaturesPanicListingTheValidForms(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	for _, tc := range []struct {
		name string
		fn   interface{}
	}{
		{"no error result", func(*Job) {}},
		{"wrong result type", func(*Job) string { return "" }},
		{"two results", func(*Job) (int, error) { return 0, nil }},
		{"no args", func() error { return nil }},
		{"job by value", func(Job) error { return nil }},
		{"other context type", func(*bhvOtherCtx, *Job) error { return nil }},
		{"context by value", func(bhvCtx, *Job) error { return nil }},
		{"extra argument", func(*bhvCtx, *Job, int) error { return nil }},
		{"job first", func(*Job, *bhvCtx) error { return nil }},
		{"context.Context last", func(*Job, context.Context) error { return nil }},
		{"middleware form", func(*Job, NextMiddlewareFunc) error { return nil }},
		{"not a func", 42},
		{"a string", "handler"},
	} {
		msg := bhvPanicMessage(t, "Job with a handler of form "+tc.name, func() { wp.Job("x", tc.fn) })
		for _, form := range []string{"func(*Job) error", "func(*bhvCtx, *Job) error",
			"func(context.Context, *Job) error", "func(*bhvCtx, context.Context, *Job) error"} {
			if msg != "" && !strings.Contains(msg, form) {
				t.Errorf("%s: panic %q does not list the valid form %s", tc.name, msg, form)
				break
			}
		}
	}
}

func TestNilHandlerPanicsListingTheValidForms(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	msg := bhvPanicMessage(t, "Job with a nil handler", func() { wp.Job("x", nil) })
	if !strings.Contains(msg, "func(*Job) error") {
		t.Errorf("panic %q does not list the valid handler forms", msg)
	}
}

func TestPriorityAboveMaximumPanics(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	bhvPanicMessage(t, "Priority 100001", func() { wp.JobWithOptions("x", JobOptions{Priority: 100001}, bhvNoop) })
	bhvPanicMessage(t, "Priority max uint", func() { wp.JobWithOptions("y", JobOptions{Priority: ^uint(0)}, bhvNoop) })
	// The bounds themselves are fine.
	wp.JobWithOptions("max", JobOptions{Priority: 100000}, bhvNoop)
	wp.JobWithOptions("zero", JobOptions{Priority: 0}, bhvNoop)
	wp.JobWithOptions("one", JobOptions{Priority: 1}, bhvNoop)
}

func TestEmptyJobNamePanicsAtRegistration(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	bhvPanicMessage(t, `Job("")`, func() { wp.Job("", bhvNoop) })
	bhvPanicMessage(t, `PeriodicallyEnqueue(spec, "")`, func() { wp.PeriodicallyEnqueue("* * * * *", "") })
}

// Failures.

func TestFailedJobGoesToRetryWithFailsErrAndFailedAt(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	type call struct {
		fails    int64
		lastErr  string
		failedAt int64
	}
	var mu sync.Mutex
	var calls []call
	backoff := func(j *Job) int64 {
		mu.Lock()
		calls = append(calls, call{j.Fails, j.LastErr, j.FailedAt})
		mu.Unlock()
		return 1000
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).
		JobWithOptions("f", JobOptions{Backoff: backoff}, func(*Job) error { return errors.New("boom") }))
	before := time.Now().Unix()
	job, err := NewEnqueuer(ns, pool).Enqueue("f", Q{"k": "v", "n": 7})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the failed job in the retry set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) == 1
	})
	after := time.Now().Unix()
	m := bhvZRange(t, pool, bhvKey(ns, "retry"))[0]
	j := bhvDecode(t, m.Raw)
	if j.ID != job.ID || j.Name != "f" || j.EnqueuedAt != job.EnqueuedAt || j.ArgString("k") != "v" || j.ArgInt64("n") != 7 {
		t.Errorf("retry job %s does not carry the original job", m.Raw)
	}
	if j.Fails != 1 || j.LastErr != "boom" {
		t.Errorf("fails %d err %q, want 1 and boom", j.Fails, j.LastErr)
	}
	if j.FailedAt < before || j.FailedAt > after {
		t.Errorf("failed_at %d, want between %d and %d", j.FailedAt, before, after)
	}
	if m.Score != j.FailedAt+1000 {
		t.Errorf("retry score %d, want failed_at+backoff = %d", m.Score, j.FailedAt+1000)
	}
	if !strings.Contains(m.Raw, `"fails":1,"err":"boom","failed_at":`) {
		t.Errorf("retry payload %s lacks the retry fields in compat order", m.Raw)
	}
	mu.Lock()
	if len(calls) != 1 || calls[0] != (call{1, "boom", j.FailedAt}) {
		t.Errorf("Backoff calls %+v, want one with Fails 1, LastErr boom, FailedAt %d", calls, j.FailedAt)
	}
	mu.Unlock()
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 0 {
		t.Errorf("dead set holds %d jobs", n)
	}
	bhvEventuallyReleased(t, pool, ns, "f", wp.workerPoolID)
}

func TestDefaultBackoffOfAFirstFailure(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("f", func(*Job) error { return errors.New("x") }))
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 10; i++ {
		if _, err := e.Enqueue("f", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "10 jobs in the retry set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) == 10
	})
	for _, m := range bhvZRange(t, pool, bhvKey(ns, "retry")) {
		j := bhvDecode(t, m.Raw)
		// fails^4 + 15 + rand(30)*(fails+1) with fails = 1: 16 .. 16+29*2.
		if d := m.Score - j.FailedAt; d < 16 || d > 74 {
			t.Errorf("default backoff of a first failure is %ds, want 16..74", d)
		}
	}
}

func TestMaxFailsOneSendsTheFirstFailureToDeadWithoutCallingBackoff(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var backoffCalls atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("f",
		JobOptions{MaxFails: 1, Backoff: func(*Job) int64 { backoffCalls.Add(1); return 0 }},
		func(*Job) error { return errors.New("fatal") }))
	job, err := NewEnqueuer(ns, pool).Enqueue("f", Q{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job in the dead set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 1
	})
	m := bhvZRange(t, pool, bhvKey(ns, "dead"))[0]
	j := bhvDecode(t, m.Raw)
	if j.ID != job.ID || j.Fails != 1 || j.LastErr != "fatal" || j.FailedAt == 0 || j.Raw != nil {
		t.Errorf("dead job %s", m.Raw)
	}
	if m.Score != j.FailedAt {
		t.Errorf("dead score %d, want the time it died (%d)", m.Score, j.FailedAt)
	}
	if n := backoffCalls.Load(); n != 0 {
		t.Errorf("Backoff called %d times for a job going to dead", n)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")); n != 0 {
		t.Errorf("retry set holds %d jobs", n)
	}
	bhvEventuallyReleased(t, pool, ns, "f", wp.workerPoolID)
}

func TestSkipDeadDropsTheJobWhenRetriesAreExhausted(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).
		JobWithOptions("once", JobOptions{MaxFails: 1, SkipDead: true}, func(*Job) error {
			runs.Add(1)
			return errors.New("x")
		}).
		JobWithOptions("twice", JobOptions{MaxFails: 2, SkipDead: true, Backoff: func(*Job) int64 { return 0 }},
			func(*Job) error { runs.Add(1); return errors.New("y") }))
	e := NewEnqueuer(ns, pool)
	if _, err := e.Enqueue("once", nil); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Enqueue("twice", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "three runs (once, and twice with a retry)", func() bool { return runs.Load() == 3 })
	wp.Drain()
	for _, set := range []string{"retry", "dead", "scheduled"} {
		if n := rInt(t, pool, "ZCARD", bhvKey(ns, set)); n != 0 {
			t.Errorf("%s set holds %d jobs with SkipDead", set, n)
		}
	}
	for _, name := range []string{"once", "twice"} {
		if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", name)); n != 0 {
			t.Errorf("queue %s holds %d jobs", name, n)
		}
		if held := bhvHeld(t, pool, ns, name, wp.workerPoolID); held != "" {
			t.Errorf("%s still held: %s", name, held)
		}
	}
}

func TestRetriedJobRunsAgainUntilDead(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	type seen struct {
		id      string
		fails   int64
		lastErr string
	}
	var mu sync.Mutex
	var runs []seen
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).JobWithOptions("r",
		JobOptions{MaxFails: 3, Backoff: func(*Job) int64 { return 0 }},
		func(j *Job) error {
			mu.Lock()
			runs = append(runs, seen{j.ID, j.Fails, j.LastErr})
			n := len(runs)
			mu.Unlock()
			return fmt.Errorf("attempt %d", n)
		}))
	job, err := NewEnqueuer(ns, pool).Enqueue("r", Q{"x": "y"})
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the job dead after 3 attempts", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 1
	})
	mu.Lock()
	want := []seen{{job.ID, 0, ""}, {job.ID, 1, "attempt 1"}, {job.ID, 2, "attempt 2"}}
	if fmt.Sprint(runs) != fmt.Sprint(want) {
		t.Errorf("runs %+v, want %+v", runs, want)
	}
	mu.Unlock()
	j := bhvZJobs(t, pool, bhvKey(ns, "dead"))[0]
	if j.ID != job.ID || j.Fails != 3 || j.LastErr != "attempt 3" || j.EnqueuedAt != job.EnqueuedAt || j.ArgString("x") != "y" {
		t.Errorf("dead job %+v", j)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")); n != 0 {
		t.Errorf("retry set holds %d jobs", n)
	}
	bhvEventuallyReleased(t, pool, ns, "r", wp.workerPoolID)
}

func TestRetriedJobThatSucceedsLeavesNoTrace(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var runs atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("r",
		JobOptions{Backoff: func(*Job) int64 { return 1 }},
		func(j *Job) error {
			runs.Add(1)
			if j.Fails == 0 {
				return errors.New("first try fails")
			}
			if j.LastErr != "first try fails" {
				t.Errorf("the retry sees LastErr %q", j.LastErr)
			}
			return nil
		}))
	if _, err := NewEnqueuer(ns, pool).Enqueue("r", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the retry to run", func() bool { return runs.Load() == 2 })
	wp.Drain()
	for _, set := range []string{"retry", "dead"} {
		if n := rInt(t, pool, "ZCARD", bhvKey(ns, set)); n != 0 {
			t.Errorf("%s set holds %d jobs", set, n)
		}
	}
	bhvEventuallyReleased(t, pool, ns, "r", wp.workerPoolID)
}

type bhvPanicValue struct {
	A int
	B string
}

func TestPanicsInHandlersAndMiddlewareAreFailuresWithTheirValueAsErr(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	cases := map[string]interface{}{
		"p-string": "kaboom",
		"p-error":  errors.New("an error value"),
		"p-int":    42,
		"p-struct": bhvPanicValue{1, "x"},
	}
	opts := JobOptions{MaxFails: 1}
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool)
	wp.Middleware(func(j *Job, next NextMiddlewareFunc) error {
		if j.Name == "mw-panic" {
			panic(fmt.Sprintf("middleware panicked on %s", j.ID))
		}
		return next()
	})
	for name, v := range cases {
		v := v
		wp.JobWithOptions(name, opts, func(*Job) error { panic(v) })
	}
	var handlerAfterMiddlewarePanic, ok atomic.Int64
	wp.JobWithOptions("mw-panic", opts, func(*Job) error { handlerAfterMiddlewarePanic.Add(1); return nil })
	wp.Job("ok", func(*Job) error { ok.Add(1); return nil })
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	for name := range cases {
		if _, err := e.Enqueue(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	mwJob, err := e.Enqueue("mw-panic", nil)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "5 panicking jobs in the dead set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 5
	})
	// The single worker survived the panics.
	if _, err := e.Enqueue("ok", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "a job after the panics", func() bool { return ok.Load() == 1 })
	got := map[string]string{}
	for _, j := range bhvZJobs(t, pool, bhvKey(ns, "dead")) {
		got[j.Name] = j.LastErr
		if j.Fails != 1 {
			t.Errorf("%s: fails %d", j.Name, j.Fails)
		}
	}
	for name, v := range cases {
		if want := fmt.Sprintf("%v", v); got[name] != want {
			t.Errorf("%s: err %q, want %q", name, got[name], want)
		}
	}
	if want := "middleware panicked on " + mwJob.ID; got["mw-panic"] != want {
		t.Errorf("mw-panic: err %q, want %q", got["mw-panic"], want)
	}
	if n := handlerAfterMiddlewarePanic.Load(); n != 0 {
		t.Errorf("the handler ran after its middleware panicked")
	}
	for name := range cases {
		bhvEventuallyReleased(t, pool, ns, name, wp.workerPoolID)
	}
}

// Timeouts.

func TestTimeoutCancelsTheContextOfAContextHandler(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	errs := make(chan error, 2)
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	wp.JobWithOptions("plainctx", JobOptions{Timeout: 50 * time.Millisecond, MaxFails: 1},
		func(ctx context.Context, j *Job) error {
			if _, ok := ctx.Deadline(); !ok {
				t.Error("no deadline on the context of a job with a Timeout")
			}
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return ctx.Err()
			case <-time.After(20 * time.Second):
				errs <- nil
				return nil
			}
		})
	wp.JobWithOptions("structctx", JobOptions{Timeout: 50 * time.Millisecond, MaxFails: 1},
		func(c *bhvCtx, ctx context.Context, j *Job) error {
			select {
			case <-ctx.Done():
				errs <- ctx.Err()
				return fmt.Errorf("gave up: %w", ctx.Err())
			case <-time.After(20 * time.Second):
				errs <- nil
				return nil
			}
		})
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	for _, n := range []string{"plainctx", "structctx"} {
		if _, err := e.Enqueue(n, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 2; i++ {
		select {
		case err := <-errs:
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("handler saw ctx.Err() = %v, want context.DeadlineExceeded", err)
			}
		case <-time.After(15 * time.Second):
			t.Fatal("the handler's context was not cancelled")
		}
	}
	eventually(t, 10*time.Second, "both timed-out jobs dead", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 2
	})
	got := map[string]string{}
	for _, j := range bhvZJobs(t, pool, bhvKey(ns, "dead")) {
		got[j.Name] = j.LastErr
	}
	if got["plainctx"] != context.DeadlineExceeded.Error() || got["structctx"] != "gave up: "+context.DeadlineExceeded.Error() {
		t.Errorf("dead errs %q", got)
	}
}

func TestHandlerThatOutlivesItsTimeoutFailsWithDeadlineExceeded(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var mwSawDeadline atomic.Bool
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool)
	wp.Middleware(func(ctx context.Context, j *Job, next NextMiddlewareContextFunc) error {
		if _, ok := ctx.Deadline(); ok {
			mwSawDeadline.Store(true)
		}
		return next(ctx)
	})
	wp.JobWithOptions("slow", JobOptions{Timeout: 20 * time.Millisecond, MaxFails: 1}, func(*Job) error {
		time.Sleep(150 * time.Millisecond) // ignores its context
		return nil
	})
	bhvStart(t, wp)
	if _, err := NewEnqueuer(ns, pool).Enqueue("slow", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the job dead", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 1
	})
	if j := bhvZJobs(t, pool, bhvKey(ns, "dead"))[0]; j.LastErr != context.DeadlineExceeded.Error() {
		t.Errorf("err %q, want %q", j.LastErr, context.DeadlineExceeded.Error())
	}
	if !mwSawDeadline.Load() {
		t.Error("the middleware's context has no deadline")
	}
}

// Malformed payloads.

func TestMalformedPayloadsInAQueueGoToDeadWithTheirBytes(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	bad := map[string]string{ // payload -> what its err must mention
		`{"name":"m","id":"bad-json",`:                        "malformed job payload",
		`{"name":"m","id":"args-string","t":1,"args":"no"}`:   "malformed job payload",
		`{"id":"no-name","t":1,"args":{}}`:                    "no job name",
		`{"name":"other","id":"wrong-queue","t":1,"args":{}}`: "does not match its queue",
		"\x00\x00{\"name\":\"m\"}\x00":                        "malformed job payload",
		"\xff\xfe\xfd{\"name\":\"m\"}":                        "malformed job payload",
		`{"name":"m","id":"trailing","t":1,"args":{}} junk`:   "data after the JSON object",
		``:               "malformed job payload",
		`[{"name":"m"}]`: "malformed job payload",
	}
	queue := bhvKey(ns, "jobs", "m")
	i := 0
	for payload := range bad {
		rdo(t, pool, "LPUSH", queue, fmt.Sprintf(`{"name":"m","id":"good-%d","t":1,"args":{"i":%d}}`, i, i))
		rdo(t, pool, "LPUSH", queue, payload)
		i++
	}
	var good atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).Job("m", func(j *Job) error {
		if !strings.HasPrefix(j.ID, "good-") {
			t.Errorf("a malformed payload reached the handler: %+v", j)
		}
		good.Add(1)
		return nil
	}))
	eventually(t, 10*time.Second, "every good job run", func() bool { return good.Load() == int64(len(bad)) })
	wp.Drain()
	dead := bhvZRange(t, pool, bhvKey(ns, "dead"))
	if len(dead) != len(bad) {
		t.Fatalf("dead set holds %d records, want %d", len(dead), len(bad))
	}
	seen := map[string]bool{}
	for _, m := range dead {
		j := bhvDecode(t, m.Raw)
		why, ok := bad[string(j.Raw)]
		if !ok {
			t.Errorf("dead record %s: Raw %q is not one of the malformed payloads", m.Raw, j.Raw)
			continue
		}
		seen[string(j.Raw)] = true
		if !strings.Contains(j.LastErr, why) {
			t.Errorf("payload %q: err %q does not mention %q", j.Raw, j.LastErr, why)
		}
		if j.Name != "m" {
			t.Errorf("payload %q: dead record name %q, want the queue's name", j.Raw, j.Name)
		}
		if len(j.Raw) > 0 {
			want := `"raw_base64":"` + base64.StdEncoding.EncodeToString(j.Raw) + `"`
			if utf8.Valid(j.Raw) {
				b, _ := json.Marshal(string(j.Raw))
				want = `"raw_text":` + string(b)
			}
			if !strings.Contains(m.Raw, want) {
				t.Errorf("dead record %s does not hold the payload as %s", m.Raw, want)
			}
		}
		if j.FailedAt == 0 || m.Score == 0 {
			t.Errorf("dead record %s has no time of death", m.Raw)
		}
	}
	if len(seen) != len(bad) {
		t.Errorf("%d distinct payloads in the dead set, want %d", len(seen), len(bad))
	}
	if n := rInt(t, pool, "LLEN", queue); n != 0 {
		t.Errorf("queue holds %d payloads", n)
	}
	if held := bhvHeld(t, pool, ns, "m", wp.workerPoolID); held != "" {
		t.Errorf("malformed payloads left the queue held: %s", held)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")); n != 0 {
		t.Errorf("retry set holds %d jobs", n)
	}
}

func TestMalformedPayloadsDoNotStallAMaxConcurrencyQueue(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var good atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).
		JobWithOptions("mc", JobOptions{MaxConcurrency: 1}, func(*Job) error { good.Add(1); return nil }))
	queue := bhvKey(ns, "jobs", "mc")
	for i := 0; i < 10; i++ {
		rdo(t, pool, "LPUSH", queue, "garbage")
		rdo(t, pool, "LPUSH", queue, fmt.Sprintf(`{"name":"mc","id":"g%d","t":1,"args":null}`, i))
	}
	rdo(t, pool, "PUBLISH", bhvKey(ns, "wake"), "mc")
	eventually(t, 15*time.Second, "10 good jobs through a MaxConcurrency 1 queue with garbage", func() bool {
		return good.Load() == 10
	})
	wp.Drain()
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 10 {
		t.Errorf("dead set holds %d records, want 10", n)
	}
	bhvEventuallyReleased(t, pool, ns, "mc", wp.workerPoolID)
}

// Observations.

func TestCheckinShowsInTheWorkerObservationAndIsDeletedAfterTheJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := newBhvGate()
	started := make(chan struct{})
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("c", func(j *Job) error {
		j.Checkin("50%")
		close(started)
		gate.Wait()
		return nil
	}))
	t.Cleanup(gate.Open)
	wids, _ := redis.String(rdo(t, pool, "HGET", bhvKey(ns, "worker_pools", wp.workerPoolID), "worker_ids"), nil)
	if !bhvHexID.MatchString(wids) {
		t.Fatalf("worker_ids %q: want one worker ID", wids)
	}
	job, err := NewEnqueuer(ns, pool).Enqueue("c", Q{"p": 1})
	if err != nil {
		t.Fatal(err)
	}
	bhvWait(t, started, "the job to start")
	key := bhvKey(ns, "worker", wids)
	var obs map[string]string
	eventually(t, 10*time.Second, "the check-in in the worker's observation", func() bool {
		obs, _ = redis.StringMap(rdo(t, pool, "HGETALL", key), nil)
		return obs["checkin"] == "50%"
	})
	now := time.Now().Unix()
	if obs["job_name"] != "c" || obs["job_id"] != job.ID || obs["args"] != `{"p":1}` {
		t.Errorf("observation %v", obs)
	}
	for _, f := range []string{"checkin_at", "started_at"} {
		var v int64
		if _, err := fmt.Sscan(obs[f], &v); err != nil || v < now-60 || v > now+60 {
			t.Errorf("%s = %q, want epoch seconds of about now", f, obs[f])
		}
	}
	if ttl := rInt(t, pool, "TTL", key); ttl <= 0 || ttl > 86400 {
		t.Errorf("observation TTL %d, want at most a day", ttl)
	}
	gate.Open()
	eventually(t, 10*time.Second, "the observation deleted after the job", func() bool {
		return rInt(t, pool, "EXISTS", key) == 0
	})
}

func TestCheckinOutsideAWorkerDoesNothing(t *testing.T) {
	t.Parallel()
	j := &Job{Name: "x", ID: "y"}
	j.Checkin("nobody is listening") // must not panic
}

func TestWorkerObservationIsWrittenWhileBusyWithoutCheckin(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := newBhvGate()
	started := make(chan struct{})
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("busy", func(j *Job) error {
		close(started)
		gate.Wait()
		return nil
	}))
	t.Cleanup(gate.Open)
	wid, _ := redis.String(rdo(t, pool, "HGET", bhvKey(ns, "worker_pools", wp.workerPoolID), "worker_ids"), nil)
	job, err := NewEnqueuer(ns, pool).Enqueue("busy", nil)
	if err != nil {
		t.Fatal(err)
	}
	bhvWait(t, started, "the job to start")
	key := bhvKey(ns, "worker", wid)
	var obs map[string]string
	eventually(t, 10*time.Second, "an observation of the busy worker", func() bool {
		obs, _ = redis.StringMap(rdo(t, pool, "HGETALL", key), nil)
		return obs["job_id"] == job.ID
	})
	if args, ok := obs["args"]; !ok || args != "" {
		t.Errorf("args of a job without args = %q (present: %v), want \"\" as gocraft/work writes", args, ok)
	}
	if _, ok := obs["checkin"]; ok {
		t.Errorf("observation without a check-in has checkin %q", obs["checkin"])
	}
	gate.Open()
	eventually(t, 10*time.Second, "the observation deleted", func() bool { return rInt(t, pool, "EXISTS", key) == 0 })
}

// Job payloads reach the handler intact.

func TestHandlerSeesTheEnqueuedJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan *Job, 1)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("see", func(j *Job) error { got <- j; return nil }))
	sent, err := NewEnqueuer(ns, pool).Enqueue("see", Q{"s": "str", "n": 12, "f": 1.5, "b": true, "big": int64(1) << 60,
		"nested": map[string]interface{}{"k": []interface{}{1, "two"}}})
	if err != nil {
		t.Fatal(err)
	}
	var j *Job
	select {
	case j = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("job not run")
	}
	if j.ID != sent.ID || j.Name != "see" || j.EnqueuedAt != sent.EnqueuedAt || j.Fails != 0 {
		t.Errorf("job %+v, sent %+v", j, sent)
	}
	if j.ArgString("s") != "str" || j.ArgInt64("n") != 12 || j.ArgFloat64("f") != 1.5 || !j.ArgBool("b") ||
		j.ArgInt64("big") != int64(1)<<60 || j.ArgError() != nil {
		t.Errorf("args %v (arg error %v)", j.Args, j.ArgError())
	}
	if v, ok := j.Args["n"].(float64); !ok || v != 12 {
		t.Errorf("a small integer reaches the handler as %T %v, want float64 as with gocraft", j.Args["n"], j.Args["n"])
	}
	nested, _ := j.Args["nested"].(map[string]interface{})
	if fmt.Sprint(nested["k"]) != "[1 two]" {
		t.Errorf("nested args %v", j.Args["nested"])
	}
}

type bhvPtrErr struct{ msg string }

func (e *bhvPtrErr) Error() string { return e.msg }

func TestHandlerErrorWhoseErrorMethodPanicsIsAFailureNotACrash(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ok atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).
		JobWithOptions("typednil", JobOptions{MaxFails: 1}, func(*Job) error {
			var e *bhvPtrErr // a typed nil: a non-nil error interface
			return e
		}).
		Job("ok", func(*Job) error { ok.Add(1); return nil }))
	e := NewEnqueuer(ns, pool)
	if _, err := e.Enqueue("typednil", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the failed job in the dead set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 1
	})
	if j := bhvZJobs(t, pool, bhvKey(ns, "dead"))[0]; j.LastErr == "" {
		t.Errorf("dead job %+v has no err", j)
	}
	if _, err := e.Enqueue("ok", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the worker to go on", func() bool { return ok.Load() == 1 })
}

func TestBackoffThatPanicsDoesNotLoseTheJobOrCrash(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("b",
		JobOptions{Backoff: func(*Job) int64 { panic("backoff exploded") }},
		func(*Job) error { return errors.New("handler failed") }))
	if _, err := NewEnqueuer(ns, pool).Enqueue("b", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the failed job in the retry or dead set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "retry"))+rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 1
	})
	bhvEventuallyReleased(t, pool, ns, "b", wp.workerPoolID)
}

func TestOddJobNamesRunEndToEnd(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	names := []string{"with:colon", "with space", "ünïcode-名前", "{tagged}", "a:b:inprogress", "dots.and-dashes"}
	var mu sync.Mutex
	ran := map[string]int{}
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	for _, n := range names {
		wp.Job(n, func(j *Job) error {
			mu.Lock()
			ran[j.Name]++
			mu.Unlock()
			return nil
		})
	}
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	for _, n := range names {
		if _, err := e.Enqueue(n, Q{"n": n}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "a job of every name", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == len(names)
	})
	wp.Drain()
	mu.Lock()
	defer mu.Unlock()
	for _, n := range names {
		if ran[n] != 1 {
			t.Errorf("%q ran %d times", n, ran[n])
		}
		if l := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", n)); l != 0 {
			t.Errorf("queue %q holds %d jobs", n, l)
		}
	}
}

func TestNamespaceEndingInAColonGetsNoSecondColon(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan *Job, 1)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns+":", pool).Job("c", func(j *Job) error { got <- j; return nil }))
	wp.Drain()
	if _, err := NewEnqueuer(ns+":", pool).EnqueueIn("c", 3600, nil); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 1 {
		t.Errorf("%s holds %d jobs", bhvKey(ns, "scheduled"), n)
	}
	if n := rInt(t, pool, "SISMEMBER", bhvKey(ns, "worker_pools"), wp.workerPoolID); n != 1 {
		t.Errorf("the pool is not in %s", bhvKey(ns, "worker_pools"))
	}
	if keys := rStrings(t, pool, "KEYS", ns+"::*"); len(keys) != 0 {
		t.Errorf("keys with a doubled colon: %q", keys)
	}
	if _, err := NewEnqueuer(ns+":", pool).Enqueue("c", nil); err != nil {
		t.Fatal(err)
	}
	select {
	case <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("job not run")
	}
}

func TestEnqueuedJobsWakeAPoolWhoseSleepBackoffsAreLong(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 1, ns, pool, WorkerPoolOptions{SleepBackoffs: []int64{120000}}).
		Job("w", func(*Job) error { ran.Add(1); return nil }))
	wp.Drain() // idle now, and not looking again for two minutes
	e := NewEnqueuer(ns, pool)
	for i := 1; i <= 3; i++ {
		if _, err := e.Enqueue("w", nil); err != nil {
			t.Fatal(err)
		}
		i := int64(i)
		eventually(t, 15*time.Second, "the enqueued job to wake the idle pool", func() bool { return ran.Load() == i })
	}
}
