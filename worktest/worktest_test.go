package worktest_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/worktest"
)

// The tests and examples that need Redis use the one at $WORK_TEST_REDIS (default 127.0.0.1:6379).

func TestMain(m *testing.M) {
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

func redisAddr() string {
	if a := os.Getenv("WORK_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

func newPool() *redis.Pool {
	addr := redisAddr()
	return &redis.Pool{
		MaxActive: 10, MaxIdle: 10, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr, redis.DialConnectTimeout(5*time.Second)) },
	}
}

func testPool(t *testing.T) *redis.Pool {
	t.Helper()
	pool := newPool()
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("PING"); err != nil {
		t.Fatalf("no Redis at %s (set WORK_TEST_REDIS): %v", redisAddr(), err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

type appContext struct {
	userID int64
	trail  []string
}

func (c *appContext) LoadUser(job *work.Job, next work.NextMiddlewareFunc) error {
	c.userID = job.ArgInt64("user_id")
	c.trail = append(c.trail, "LoadUser")
	return next()
}

type ctxKey struct{}

type outerKey struct{}

func (c *appContext) WithRequestID(ctx context.Context, job *work.Job, next work.NextMiddlewareContextFunc) error {
	c.trail = append(c.trail, "WithRequestID")
	return next(context.WithValue(ctx, ctxKey{}, "req-1"))
}

func (c *appContext) Handle(ctx context.Context, job *work.Job) error {
	c.trail = append(c.trail, fmt.Sprintf("Handle(user %d, %v, %v)", c.userID, ctx.Value(ctxKey{}), ctx.Value(outerKey{})))
	return nil
}

func TestRunWithCustomContextAndMiddleware(t *testing.T) {
	c := &appContext{}
	outer := context.WithValue(context.Background(), outerKey{}, "given")
	err := worktest.Run((*appContext).Handle, work.Q{"user_id": 42},
		worktest.WithContext(outer),
		worktest.WithCustomContext(c),
		worktest.WithMiddleware((*appContext).LoadUser, (*appContext).WithRequestID))
	if err != nil {
		t.Fatal(err)
	}
	want := "LoadUser WithRequestID Handle(user 42, req-1, given)"
	if got := strings.Join(c.trail, " "); got != want {
		t.Fatalf("trail %q, want %q", got, want)
	}
}

func TestRunAllForms(t *testing.T) {
	var got []string
	record := func(s string) { got = append(got, s) }
	handlers := []interface{}{
		func(job *work.Job) error { record("job"); return nil },
		work.GenericHandler(func(job *work.Job) error { record("generic"); return nil }),
		func(ctx context.Context, job *work.Job) error { record("ctx"); return nil },
		work.ContextHandler(func(ctx context.Context, job *work.Job) error { record("ContextHandler"); return nil }),
		func(c *appContext, job *work.Job) error { record(fmt.Sprintf("custom %d", c.userID)); return nil },
		func(c *appContext, ctx context.Context, job *work.Job) error { record("custom ctx"); return nil },
	}
	middleware := []interface{}{
		func(job *work.Job, next work.NextMiddlewareFunc) error { record("m1"); return next() },
		work.GenericMiddlewareHandler(func(job *work.Job, next work.NextMiddlewareFunc) error { record("m2"); return next() }),
		func(ctx context.Context, job *work.Job, next work.NextMiddlewareContextFunc) error {
			record("m3")
			return next(ctx)
		},
		work.ContextMiddlewareHandler(func(ctx context.Context, job *work.Job, next work.NextMiddlewareContextFunc) error {
			record("m4")
			return next(ctx)
		}),
		func(c *appContext, job *work.Job, next work.NextMiddlewareFunc) error {
			c.userID = 9
			record("m5")
			return next()
		},
		func(c *appContext, ctx context.Context, job *work.Job, next work.NextMiddlewareContextFunc) error {
			record("m6")
			return next(ctx)
		},
	}
	for _, h := range handlers {
		if err := worktest.Run(h, nil, worktest.WithMiddleware(middleware...)); err != nil {
			t.Fatal(err)
		}
	}
	all := strings.Join(got, " ")
	for _, h := range []string{"job", "generic", "ctx", "ContextHandler", "custom 9", "custom ctx"} {
		if !strings.Contains(all, "m6 "+h) {
			t.Errorf("handler %q not run after the middleware: %s", h, all)
		}
	}
	if strings.Count(all, "m1 m2 m3 m4 m5 m6") != 6 {
		t.Errorf("middleware order: %s", all)
	}
}

func TestRunArgsAsAfterRedis(t *testing.T) {
	err := worktest.Run(func(job *work.Job) error {
		if _, ok := job.Args["n"].(float64); !ok {
			return fmt.Errorf("n is %T, want float64 as a worker sees it", job.Args["n"])
		}
		if job.ArgInt64("big") != 1<<60 {
			return fmt.Errorf("big = %v", job.Args["big"])
		}
		if job.Name != "resize" || job.Fails != 2 || len(job.ID) != 24 || job.EnqueuedAt == 0 {
			return fmt.Errorf("job %+v", job)
		}
		return job.ArgError()
	}, work.Q{"n": 3, "big": int64(1) << 60}, worktest.WithJobName("resize"), worktest.WithFails(2))
	if err != nil {
		t.Fatal(err)
	}

	// RunJob hands the job over as it is.
	job := &work.Job{Name: "x", Args: map[string]interface{}{"n": 3}}
	err = worktest.RunJob(func(j *work.Job) error {
		if j != job {
			return errors.New("not the same job")
		}
		if _, ok := j.Args["n"].(int); !ok {
			return fmt.Errorf("n is %T", j.Args["n"])
		}
		return nil
	}, job)
	if err != nil {
		t.Fatal(err)
	}

	if err := worktest.Run(func(*work.Job) error { return nil }, work.Q{"f": func() {}}); err == nil {
		t.Fatal("args that JSON cannot encode: no error")
	}
}

func TestRunErrorsPanicsTimeouts(t *testing.T) {
	boom := errors.New("boom")
	if err := worktest.Run(func(*work.Job) error { return boom }, nil); err != boom {
		t.Fatalf("err %v, want boom", err)
	}
	err := worktest.Run(func(*work.Job) error { panic("nil map") }, nil,
		worktest.WithMiddleware(func(job *work.Job, next work.NextMiddlewareFunc) error { return next() }))
	var pe *worktest.PanicError
	if !errors.As(err, &pe) || pe.Error() != "nil map" || len(pe.Stack) == 0 {
		t.Fatalf("err %#v, want a PanicError", err)
	}
	func() {
		defer func() {
			if p := recover(); p != "again" {
				t.Fatalf("recovered %v, want the panic to go on", p)
			}
		}()
		worktest.Run(func(*work.Job) error { panic("again") }, nil, worktest.WithoutRecover())
	}()

	// A handler that ignores its context and outlives the timeout fails as in a pool.
	err = worktest.Run(func(*work.Job) error { time.Sleep(30 * time.Millisecond); return nil }, nil,
		worktest.WithTimeout(5*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
	err = worktest.Run(func(ctx context.Context, _ *work.Job) error { <-ctx.Done(); return ctx.Err() }, nil,
		worktest.WithTimeout(5*time.Millisecond))
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err %v, want DeadlineExceeded", err)
	}
}

func TestRunRejectsWhatThePoolRejects(t *testing.T) {
	defer func() {
		p := recover()
		if s, _ := p.(string); !strings.Contains(s, "valid forms") {
			t.Fatalf("recovered %v, want the pool's message", p)
		}
	}()
	worktest.Run(func(job work.Job) error { return nil }, nil)
}

// fakeT records the failures of an assertion instead of failing the test.
type fakeT struct {
	testing.TB
	errors []string
}

func (f *fakeT) Helper() {}
func (f *fakeT) Errorf(format string, args ...interface{}) {
	f.errors = append(f.errors, fmt.Sprintf(format, args...))
}

func TestEnqueuedAndAssertions(t *testing.T) {
	pool := testPool(t)
	ns := worktest.Namespace(t, pool)
	enq := work.NewEnqueuer(ns, pool)
	enq.Enqueue("send_email", work.Q{"address": "a@example.com", "n": 1})
	enq.Enqueue("send_email", work.Q{"address": "b@example.com", "n": 2, "nested": map[string]interface{}{"k": []int{1}}})
	enq.EnqueueIn("send_email", 600, work.Q{"address": "later@example.com"})
	enq.EnqueueIn("other", 60, nil)

	jobs := worktest.Enqueued(t, pool, ns, "send_email")
	if len(jobs) != 2 || jobs[0].ArgString("address") != "a@example.com" || jobs[1].ArgString("address") != "b@example.com" {
		t.Fatalf("Enqueued = %v, want a then b", jobs)
	}
	if j := worktest.AssertEnqueued(t, pool, ns, "send_email", work.Q{"address": "b@example.com", "n": 2.0,
		"nested": map[string]interface{}{"k": []float64{1}}}); j == nil || j.ID != jobs[1].ID {
		t.Fatalf("AssertEnqueued = %v", j)
	}
	worktest.AssertEnqueued(t, pool, ns, "send_email", nil)
	worktest.AssertNotEnqueued(t, pool, ns, "send_email", work.Q{"address": "c@example.com"})
	worktest.AssertNotEnqueued(t, pool, ns, "nothing", nil)

	f := &fakeT{TB: t}
	if j := worktest.AssertEnqueued(f, pool, ns, "send_email", work.Q{"address": "c@example.com"}); j != nil {
		t.Fatal("found a job that is not there")
	}
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], `no send_email job with args {"address":"c@example.com"}`) ||
		!strings.Contains(f.errors[0], "a@example.com") {
		t.Fatalf("failure message %q", f.errors)
	}
	f.errors = nil
	worktest.AssertNotEnqueued(f, pool, ns, "send_email", work.Q{"n": 1})
	if len(f.errors) != 1 || !strings.Contains(f.errors[0], "found send_email job") {
		t.Fatalf("failure message %q", f.errors)
	}

	sched := worktest.Scheduled(t, pool, ns, "send_email")
	if len(sched) != 1 || sched[0].ArgString("address") != "later@example.com" || sched[0].RunAt < time.Now().Unix()+590 {
		t.Fatalf("Scheduled = %v", sched)
	}
	if all := worktest.Scheduled(t, pool, ns, ""); len(all) != 2 || all[0].Name != "other" {
		t.Fatalf("Scheduled(all) = %v", all)
	}
}

func TestNamespaceIsDeleted(t *testing.T) {
	pool := testPool(t)
	var ns string
	t.Run("inner", func(t *testing.T) {
		ns = worktest.Namespace(t, pool)
		work.NewEnqueuer(ns, pool).Enqueue("x", nil)
		if len(worktest.Enqueued(t, pool, ns, "x")) != 1 {
			t.Fatal("not enqueued")
		}
	})
	c := pool.Get()
	defer c.Close()
	keys, err := redis.Strings(c.Do("KEYS", ns+":*"))
	if err != nil || len(keys) != 0 {
		t.Fatalf("keys left: %v %v", keys, err)
	}
}

func TestDrain(t *testing.T) {
	pool := testPool(t)
	ns := worktest.Namespace(t, pool)
	var done atomic.Int64
	wp := work.NewWorkerPool(struct{}{}, 3, ns, pool)
	wp.Job("count", func(*work.Job) error { time.Sleep(time.Millisecond); done.Add(1); return nil })
	enq := work.NewEnqueuer(ns, pool)
	for i := 0; i < 50; i++ {
		enq.Enqueue("count", work.Q{"i": i})
	}
	worktest.Drain(t, wp, time.Second) // not started: returns at once
	wp.Start()
	defer wp.Stop()
	worktest.Drain(t, wp, 0)
	if n := done.Load(); n != 50 {
		t.Fatalf("%d jobs done after Drain, want 50", n)
	}
	worktest.AssertNotEnqueued(t, pool, ns, "count", nil)

	// A job that does not finish: DrainContext gives up at the deadline.
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	wp2 := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	wp2.Job("stuck", func(*work.Job) error { <-release; return nil })
	enq.Enqueue("stuck", nil)
	wp2.Start()
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	if err := worktest.DrainContext(ctx, wp2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("DrainContext = %v, want DeadlineExceeded", err)
	}
	once.Do(func() { close(release) })
	worktest.Drain(t, wp2, 0)
	wp2.Stop()
}

// The same handler and middleware give the same outcome under Run as in a real pool.
func TestRunMatchesAPool(t *testing.T) {
	pool := testPool(t)
	ns := worktest.Namespace(t, pool)
	results := make(chan string, 2)
	handler := func(c *appContext, ctx context.Context, job *work.Job) error {
		results <- fmt.Sprintf("user %d, req %v, n %T", c.userID, ctx.Value(ctxKey{}), job.Args["user_id"])
		return nil
	}
	wp := work.NewWorkerPool(appContext{}, 1, ns, pool)
	wp.Middleware((*appContext).LoadUser)
	wp.Middleware((*appContext).WithRequestID)
	wp.Job("h", handler)
	wp.Start()
	work.NewEnqueuer(ns, pool).Enqueue("h", work.Q{"user_id": 7})
	worktest.Drain(t, wp, 0)
	wp.Stop()
	if err := worktest.Run(handler, work.Q{"user_id": 7},
		worktest.WithMiddleware((*appContext).LoadUser, (*appContext).WithRequestID)); err != nil {
		t.Fatal(err)
	}
	inPool, inRun := <-results, <-results
	if inPool != inRun {
		t.Fatalf("pool: %s; Run: %s", inPool, inRun)
	}
}
