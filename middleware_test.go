package work

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type bhvCtxKey struct{}

func TestAllMiddlewareFormsRunInRegistrationOrderAroundTheHandler(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var mu sync.Mutex
	trails := map[string][]string{} // job ID -> steps
	step := func(j *Job, s string) {
		mu.Lock()
		trails[j.ID] = append(trails[j.ID], s)
		mu.Unlock()
	}
	wp := NewWorkerPool(bhvCtx{}, 3, ns, pool)
	wp.Middleware(func(j *Job, next NextMiddlewareFunc) error {
		step(j, "m1")
		err := next()
		step(j, "m1<")
		return err
	})
	wp.Middleware(func(c *bhvCtx, j *Job, next NextMiddlewareFunc) error {
		c.trail = append(c.trail, "m2")
		step(j, "m2")
		err := next()
		step(j, "m2<")
		return err
	})
	wp.Middleware(func(ctx context.Context, j *Job, next NextMiddlewareContextFunc) error {
		step(j, "m3")
		err := next(context.WithValue(ctx, bhvCtxKey{}, "from m3"))
		step(j, "m3<")
		return err
	})
	wp.Middleware(func(c *bhvCtx, ctx context.Context, j *Job, next NextMiddlewareContextFunc) error {
		c.trail = append(c.trail, "m4")
		step(j, "m4")
		if v, _ := ctx.Value(bhvCtxKey{}).(string); v != "from m3" {
			t.Errorf("m4 got context value %q, want the one m3 passed down", v)
		}
		err := next(context.WithValue(ctx, bhvCtxKey{}, "from m4"))
		step(j, "m4<")
		return err
	})
	wp.Middleware(GenericMiddlewareHandler(func(j *Job, next NextMiddlewareFunc) error {
		step(j, "m5")
		err := next()
		step(j, "m5<")
		return err
	}))
	wp.Middleware(ContextMiddlewareHandler(func(ctx context.Context, j *Job, next NextMiddlewareContextFunc) error {
		step(j, "m6")
		err := next(ctx)
		step(j, "m6<")
		return err
	}))
	wp.Job("h", func(c *bhvCtx, ctx context.Context, j *Job) error {
		if strings.Join(c.trail, ",") != "m2,m4" {
			t.Errorf("handler sees custom context trail %v, want the middleware's [m2 m4]", c.trail)
		}
		if v, _ := ctx.Value(bhvCtxKey{}).(string); v != "from m4" {
			t.Errorf("handler got context value %q, want the one m4 passed down", v)
		}
		step(j, "h")
		return nil
	})
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	var ids []string
	for i := 0; i < 10; i++ {
		j, err := e.Enqueue("h", Q{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, j.ID)
	}
	wp.Drain()
	want := "m1,m2,m3,m4,m5,m6,h,m6<,m5<,m4<,m3<,m2<,m1<"
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if got := strings.Join(trails[id], ","); got != want {
			t.Errorf("job %s ran %s, want %s", id, got, want)
		}
	}
}

func TestEachJobGetsAFreshCustomContextSharedByItsChain(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var mu sync.Mutex
	seen := map[*bhvCtx]int{}
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool) // one worker: any reuse would show
	wp.Middleware(func(c *bhvCtx, j *Job, next NextMiddlewareFunc) error {
		if c.n != 0 || len(c.trail) != 0 {
			t.Errorf("middleware got a used context: %+v", *c)
		}
		c.n = 100
		mu.Lock()
		seen[c]++
		mu.Unlock()
		return next()
	})
	wp.Job("fresh", func(c *bhvCtx, j *Job) error {
		mu.Lock()
		seen[c]++
		mu.Unlock()
		if c.n != 100 {
			t.Errorf("handler got n=%d, want the middleware's 100 (same context)", c.n)
		}
		c.trail = append(c.trail, "dirty")
		return nil
	})
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 20; i++ {
		if _, err := e.Enqueue("fresh", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	wp.Drain()
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 20 {
		t.Errorf("%d distinct contexts for 20 jobs", len(seen))
	}
	for c, n := range seen {
		if n != 2 {
			t.Errorf("context %p seen %d times, want once by the middleware and once by the handler", c, n)
		}
	}
}

func TestMiddlewareCanStopTheChain(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var handled atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool)
	wp.Middleware(func(j *Job, next NextMiddlewareFunc) error {
		switch j.ArgString("mode") {
		case "skip":
			return nil
		case "reject":
			return errors.New("rejected by middleware")
		case "wrap":
			if err := next(); err != nil {
				return fmt.Errorf("mw: %w", err)
			}
			return nil
		}
		return next()
	})
	wp.JobWithOptions("m", JobOptions{MaxFails: 1}, func(j *Job) error {
		handled.Add(1)
		if j.ArgString("mode") == "wrap" {
			return errors.New("handler failed")
		}
		return nil
	})
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	for _, mode := range []string{"skip", "reject", "wrap", "pass"} {
		if _, err := e.Enqueue("m", Q{"mode": mode}); err != nil {
			t.Fatal(err)
		}
	}
	wp.Drain()
	if n := handled.Load(); n != 2 {
		t.Errorf("handler ran %d times, want 2 (wrap and pass)", n)
	}
	got := map[string]string{}
	for _, j := range bhvZJobs(t, pool, bhvKey(ns, "dead")) {
		got[j.ArgString("mode")] = j.LastErr
	}
	want := map[string]string{"reject": "rejected by middleware", "wrap": "mw: handler failed"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("dead errs %v, want %v", got, want)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")); n != 0 {
		t.Errorf("retry set holds %d jobs", n)
	}
}

func TestMiddlewareChangesToTheJobReachTheHandler(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan string, 1)
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool)
	wp.Middleware(func(j *Job, next NextMiddlewareFunc) error {
		j.Args["added"] = "by middleware"
		return next()
	})
	wp.Job("x", func(j *Job) error { got <- j.ArgString("added"); return nil })
	bhvStart(t, wp)
	if _, err := NewEnqueuer(ns, pool).Enqueue("x", Q{"a": 1}); err != nil {
		t.Fatal(err)
	}
	select {
	case v := <-got:
		if v != "by middleware" {
			t.Errorf("handler saw %q", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("job not run")
	}
}

func TestInvalidMiddlewareSignaturesPanicListingTheValidForms(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	for _, tc := range []struct {
		name string
		fn   interface{}
	}{
		{"handler form", func(*Job) error { return nil }},
		{"no error result", func(*Job, NextMiddlewareFunc) {}},
		{"other context type", func(*bhvOtherCtx, *Job, NextMiddlewareFunc) error { return nil }},
		{"context by value", func(bhvCtx, *Job, NextMiddlewareFunc) error { return nil }},
		{"context.Context with a plain next", func(context.Context, *Job, NextMiddlewareFunc) error { return nil }},
		{"custom context with a context next", func(*bhvCtx, *Job, NextMiddlewareContextFunc) error { return nil }},
		{"next of the wrong type", func(*Job, func() int) error { return nil }},
		{"extra argument", func(*Job, NextMiddlewareFunc, int) error { return nil }},
		{"not a func", 3.5},
	} {
		msg := bhvPanicMessage(t, "Middleware of form "+tc.name, func() { wp.Middleware(tc.fn) })
		for _, form := range []string{"func(*Job, NextMiddlewareFunc) error", "func(*bhvCtx, *Job, NextMiddlewareFunc) error",
			"func(context.Context, *Job, NextMiddlewareContextFunc) error",
			"func(*bhvCtx, context.Context, *Job, NextMiddlewareContextFunc) error"} {
			if msg != "" && !strings.Contains(msg, form) {
				t.Errorf("%s: panic %q does not list the valid form %s", tc.name, msg, form)
				break
			}
		}
	}
}

func TestNilMiddlewarePanicsListingTheValidForms(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	msg := bhvPanicMessage(t, "Middleware(nil)", func() { wp.Middleware(nil) })
	if !strings.Contains(msg, "func(*Job, NextMiddlewareFunc) error") {
		t.Errorf("panic %q does not list the valid middleware forms", msg)
	}
}
