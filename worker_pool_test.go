package work

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Helpers shared by the behaviour tests of the worker pool (prefixed bhv so that they cannot collide
// with the helpers of other test files).

// bhvCtx is the custom context of the behaviour tests.
type bhvCtx struct {
	trail []string
	n     int
}

// Record is a handler in method-expression form: (*bhvCtx).Record.
func (c *bhvCtx) Record(job *Job) error {
	c.n++
	c.trail = append(c.trail, "record:"+job.Name)
	return nil
}

var bhvHexID = regexp.MustCompile(`^[0-9a-f]{24}$`)

// bhvKey builds a key of the documented layout by hand: the namespace, then the parts, joined by ":".
func bhvKey(ns string, parts ...string) string { return ns + ":" + strings.Join(parts, ":") }

// bhvStart starts wp and stops it when the test ends.
func bhvStart(t testing.TB, wp *WorkerPool) *WorkerPool {
	t.Helper()
	wp.Start()
	t.Cleanup(wp.Stop)
	return wp
}

// bhvGate blocks handlers until opened. Register Open with t.Cleanup after the pool's Stop so that a
// failing test never leaves Stop waiting for a blocked handler; Wait gives up on its own after a while.
type bhvGate struct {
	ch   chan struct{}
	once sync.Once
}

func newBhvGate() *bhvGate { return &bhvGate{ch: make(chan struct{})} }

func (g *bhvGate) Open() { g.once.Do(func() { close(g.ch) }) }

func (g *bhvGate) Wait() {
	select {
	case <-g.ch:
	case <-time.After(30 * time.Second):
	}
}

// bhvWait waits for ch to yield or close.
func bhvWait(t testing.TB, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(15 * time.Second):
		t.Fatalf("timed out waiting for: %s", what)
	}
}

// bhvMember is a sorted-set member with its score.
type bhvMember struct {
	Raw   string
	Score int64
}

func bhvZRange(t testing.TB, pool *redis.Pool, key string) []bhvMember {
	t.Helper()
	vals := rStrings(t, pool, "ZRANGE", key, 0, -1, "WITHSCORES")
	out := make([]bhvMember, 0, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		f, err := strconv.ParseFloat(vals[i+1], 64)
		if err != nil {
			t.Fatalf("score %q of %s: %v", vals[i+1], key, err)
		}
		out = append(out, bhvMember{Raw: vals[i], Score: int64(f)})
	}
	return out
}

// bhvDecode decodes a stored job the way any reader of the layout would (encoding/json).
func bhvDecode(t testing.TB, raw string) *Job {
	t.Helper()
	var j Job
	if err := json.Unmarshal([]byte(raw), &j); err != nil {
		t.Fatalf("stored job %q does not decode: %v", raw, err)
	}
	return &j
}

// bhvZJobs decodes every member of a sorted set, in score order.
func bhvZJobs(t testing.TB, pool *redis.Pool, key string) []*Job {
	t.Helper()
	var out []*Job
	for _, m := range bhvZRange(t, pool, key) {
		out = append(out, bhvDecode(t, m.Raw))
	}
	return out
}

// bhvHeld reports what is still counted against a job name: the lock counter, the lock_info hash and
// the in-progress lists of the given pools.
func bhvHeld(t testing.TB, pool *redis.Pool, ns, name string, poolIDs ...string) string {
	t.Helper()
	var held []string
	if n := rInt(t, pool, "GET", bhvKey(ns, "jobs", name, "lock")); n != 0 {
		held = append(held, fmt.Sprintf("lock=%d", n))
	}
	if h := rStrings(t, pool, "HGETALL", bhvKey(ns, "jobs", name, "lock_info")); len(h) != 0 {
		held = append(held, fmt.Sprintf("lock_info=%v", h))
	}
	for _, id := range poolIDs {
		if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", name, id, "inprogress")); n != 0 {
			held = append(held, fmt.Sprintf("inprogress(%s)=%d", id, n))
		}
	}
	return strings.Join(held, " ")
}

// bhvEventuallyReleased waits until nothing is counted against name any more.
func bhvEventuallyReleased(t testing.TB, pool *redis.Pool, ns, name string, poolIDs ...string) {
	t.Helper()
	var last string
	eventually(t, 10*time.Second, "lock, lock_info and in-progress of "+name+" released", func() bool {
		last = bhvHeld(t, pool, ns, name, poolIDs...)
		return last == ""
	})
}

// bhvPanicMessage runs fn and returns the text of its panic; it fails the test when fn returns.
func bhvPanicMessage(t *testing.T, what string, fn func()) (msg string) {
	t.Helper()
	defer func() {
		r := recover()
		if r == nil {
			t.Errorf("%s did not panic", what)
			return
		}
		msg = fmt.Sprint(r)
	}()
	fn()
	return ""
}

func bhvNoop(*Job) error { return nil }

// Constructors and registration.

func TestNewWorkerPoolPanicsOnNilRedisPool(t *testing.T) {
	t.Parallel()
	bhvPanicMessage(t, "NewWorkerPool(nil pool)", func() { NewWorkerPool(bhvCtx{}, 1, "ns", nil) })
	bhvPanicMessage(t, "NewWorkerPoolWithOptions(nil pool)", func() {
		NewWorkerPoolWithOptions(bhvCtx{}, 1, "ns", nil, WorkerPoolOptions{})
	})
}

func TestNewWorkerPoolPanicsWhenContextIsNotAStruct(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	for _, tc := range []struct {
		name string
		ctx  interface{}
	}{
		{"pointer to struct", &bhvCtx{}},
		{"nil", nil},
		{"int", 5},
		{"string", "ctx"},
		{"map", map[string]int{}},
		{"func", func() {}},
	} {
		bhvPanicMessage(t, "NewWorkerPool with a "+tc.name+" context", func() { NewWorkerPool(tc.ctx, 1, "ns", pool) })
	}
	// A struct value, named or not, is fine.
	NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	NewWorkerPool(struct{}{}, 1, "ns", pool)
}

// Lifecycle.

func TestStartTwiceRunsOnePool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 3, ns, pool).Job("s", func(*Job) error { ran.Add(1); return nil })
	wp.Start()
	wp.Start()
	t.Cleanup(wp.Stop)
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 20; i++ {
		if _, err := e.Enqueue("s", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "20 jobs run", func() bool { return ran.Load() == 20 })
	wp.Drain()
	if n := ran.Load(); n != 20 {
		t.Errorf("ran %d jobs, want each of the 20 once", n)
	}
	ids := rStrings(t, pool, "SMEMBERS", bhvKey(ns, "worker_pools"))
	if len(ids) != 1 || ids[0] != wp.workerPoolID {
		t.Fatalf("worker_pools = %v, want just this pool", ids)
	}
	wids, _ := redis.String(rdo(t, pool, "HGET", bhvKey(ns, "worker_pools", ids[0]), "worker_ids"), nil)
	if got := strings.Split(wids, ","); len(got) != 3 {
		t.Errorf("worker_ids %q: want 3 workers after two Starts", wids)
	}
	wp.Stop()
	wp.Stop()
}

func TestStopBeforeStartAndStopTwiceDoNothing(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("s", bhvNoop)
	done := make(chan struct{})
	go func() {
		defer close(done)
		wp.Stop()
		if err := wp.StopContext(context.Background()); err != nil {
			t.Errorf("StopContext before Start: %v", err)
		}
	}()
	bhvWait(t, done, "Stop before Start to return")
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "worker_pools")); n != 0 {
		t.Error("Stop before Start wrote to Redis")
	}

	wp.Start()
	if _, err := NewEnqueuer(ns, pool).Enqueue("s", nil); err != nil {
		t.Fatal(err)
	}
	wp.Drain()
	done2 := make(chan struct{})
	go func() {
		defer close(done2)
		wp.Stop()
		wp.Stop()
		wp.Drain() // on a stopped pool: returns at once
	}()
	bhvWait(t, done2, "Stop twice, then Drain, to return")
	if n := rInt(t, pool, "SCARD", bhvKey(ns, "worker_pools")); n != 0 {
		t.Errorf("worker_pools holds %d pools after Stop", n)
	}
}

func TestDrainBeforeStartReturnsAtOnceEvenWithQueuedJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	if _, err := NewEnqueuer(ns, pool).Enqueue("q", Q{"x": 1}); err != nil {
		t.Fatal(err)
	}
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("q", bhvNoop)
	done := make(chan struct{})
	go func() { wp.Drain(); close(done) }()
	bhvWait(t, done, "Drain before Start to return")
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "q")); n != 1 {
		t.Errorf("Drain before Start touched the queue: %d jobs", n)
	}
}

func TestDrainReturnsOnceQueuesAreEmptyAndOutcomesAreWritten(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 50; i++ {
		if _, err := e.Enqueue("d", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Enqueue("other", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	var ran atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 4, ns, pool)
	wp.JobWithOptions("d", JobOptions{Backoff: func(*Job) int64 { return 3600 }}, func(j *Job) error {
		ran.Add(1)
		if j.ArgInt64("i")%5 == 0 {
			return fmt.Errorf("fail %d", j.ArgInt64("i"))
		}
		return nil
	})
	wp.JobWithOptions("other", JobOptions{MaxFails: 1}, func(j *Job) error {
		ran.Add(1)
		if j.ArgInt64("i")%10 == 0 {
			return fmt.Errorf("dead %d", j.ArgInt64("i"))
		}
		return nil
	})
	bhvStart(t, wp)
	wp.Drain()
	// No polling: Drain has returned, so everything must be visible already.
	if n := ran.Load(); n != 100 {
		t.Errorf("ran %d jobs before Drain returned, want 100", n)
	}
	for _, name := range []string{"d", "other"} {
		if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", name)); n != 0 {
			t.Errorf("queue %s holds %d jobs after Drain", name, n)
		}
		if held := bhvHeld(t, pool, ns, name, wp.workerPoolID); held != "" {
			t.Errorf("%s still held after Drain: %s", name, held)
		}
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")); n != 10 {
		t.Errorf("retry set holds %d jobs after Drain, want the 10 failures", n)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 5 {
		t.Errorf("dead set holds %d jobs after Drain, want the 5 MaxFails=1 failures", n)
	}

	// A second round on the running pool.
	for i := 0; i < 20; i++ {
		if _, err := e.Enqueue("d", Q{"i": 1}); err != nil {
			t.Fatal(err)
		}
	}
	wp.Drain()
	if n := ran.Load(); n != 120 {
		t.Errorf("ran %d jobs after the second Drain, want 120", n)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "d")); n != 0 {
		t.Errorf("queue d holds %d jobs after the second Drain", n)
	}
}

func TestDrainDoesNotWaitForScheduledJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	if _, err := NewEnqueuer(ns, pool).EnqueueIn("later", 3600, nil); err != nil {
		t.Fatal(err)
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("later", bhvNoop))
	done := make(chan struct{})
	go func() { wp.Drain(); close(done) }()
	bhvWait(t, done, "Drain with only a scheduled job")
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 1 {
		t.Errorf("scheduled set holds %d jobs, want the future one", n)
	}
}

// Registration in Redis.

func TestStartRegistersJobNamesAndMaxConcurrency(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool).
		JobWithOptions("limited", JobOptions{MaxConcurrency: 7}, bhvNoop).
		Job("free", bhvNoop)
	bhvStart(t, wp)
	known := rStrings(t, pool, "SMEMBERS", bhvKey(ns, "known_jobs"))
	sort.Strings(known)
	if strings.Join(known, ",") != "free,limited" {
		t.Errorf("known_jobs = %v", known)
	}
	if v, _ := redis.String(rdo(t, pool, "GET", bhvKey(ns, "jobs", "limited", "max_concurrency")), nil); v != "7" {
		t.Errorf("max_concurrency of limited = %q, want 7", v)
	}
	if v, _ := redis.String(rdo(t, pool, "GET", bhvKey(ns, "jobs", "free", "max_concurrency")), nil); v != "0" {
		t.Errorf("max_concurrency of free = %q, want 0", v)
	}
}

// Heartbeat.

func TestHeartbeatDescribesThePoolAndIsRemovedOnStop(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPool(bhvCtx{}, 3, ns, pool)
	for _, name := range []string{"zeta", "alpha", "mid"} {
		wp.Job(name, bhvNoop)
	}
	bhvStart(t, wp)
	id := wp.workerPoolID
	eventually(t, 10*time.Second, "the pool in worker_pools", func() bool {
		return rInt(t, pool, "SISMEMBER", bhvKey(ns, "worker_pools"), id) == 1
	})
	hb, err := redis.StringMap(rdo(t, pool, "HGETALL", bhvKey(ns, "worker_pools", id)), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	for _, f := range []string{"heartbeat_at", "started_at"} {
		v, err := strconv.ParseInt(hb[f], 10, 64)
		if err != nil || v < now-60 || v > now+60 {
			t.Errorf("%s = %q, want epoch seconds of about now (%d)", f, hb[f], now)
		}
	}
	if hb["job_names"] != "alpha,mid,zeta" {
		t.Errorf("job_names = %q, want sorted and comma-joined", hb["job_names"])
	}
	if hb["concurrency"] != "3" {
		t.Errorf("concurrency = %q", hb["concurrency"])
	}
	wids := strings.Split(hb["worker_ids"], ",")
	if len(wids) != 3 || !sort.StringsAreSorted(wids) {
		t.Errorf("worker_ids = %q, want 3 sorted IDs", hb["worker_ids"])
	}
	for _, w := range wids {
		if !bhvHexID.MatchString(w) {
			t.Errorf("worker ID %q is not 24 hex chars", w)
		}
	}
	if host, _ := os.Hostname(); hb["host"] != host {
		t.Errorf("host = %q, want %q", hb["host"], host)
	}
	if hb["pid"] != strconv.Itoa(os.Getpid()) {
		t.Errorf("pid = %q, want %d", hb["pid"], os.Getpid())
	}
	if !bhvHexID.MatchString(id) {
		t.Errorf("pool ID %q is not 24 hex chars", id)
	}

	wp.Stop()
	if n := rInt(t, pool, "SISMEMBER", bhvKey(ns, "worker_pools"), id); n != 0 {
		t.Error("pool still in worker_pools after Stop")
	}
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "worker_pools", id)); n != 0 {
		t.Error("heartbeat hash still there after Stop")
	}
}

func TestHeartbeatIsRefreshed(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 1, ns, pool,
		WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}).Job("h", bhvNoop))
	key := bhvKey(ns, "worker_pools", wp.workerPoolID)
	first := rInt(t, pool, "HGET", key, "heartbeat_at")
	if first == 0 {
		t.Fatal("no heartbeat_at right after Start")
	}
	eventually(t, 10*time.Second, "a newer heartbeat_at", func() bool {
		return rInt(t, pool, "HGET", key, "heartbeat_at") > first
	})
}

func TestTwoPoolsEachHaveTheirOwnHeartbeat(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	a := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("a", bhvNoop))
	b := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("b", bhvNoop))
	ids := rStrings(t, pool, "SMEMBERS", bhvKey(ns, "worker_pools"))
	sort.Strings(ids)
	want := []string{a.workerPoolID, b.workerPoolID}
	sort.Strings(want)
	if strings.Join(ids, ",") != strings.Join(want, ",") {
		t.Fatalf("worker_pools = %v, want %v", ids, want)
	}
	a.Stop()
	if ids := rStrings(t, pool, "SMEMBERS", bhvKey(ns, "worker_pools")); len(ids) != 1 || ids[0] != b.workerPoolID {
		t.Errorf("after stopping a: worker_pools = %v, want just b", ids)
	}
	if jn, _ := redis.String(rdo(t, pool, "HGET", bhvKey(ns, "worker_pools", b.workerPoolID), "job_names"), nil); jn != "b" {
		t.Errorf("b's job_names = %q", jn)
	}
}

// Fetching.

func TestJobsPushedByAnotherProgramWithoutWakeUpAreRun(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan *Job, 1)
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("ext", func(j *Job) error {
		got <- j
		return nil
	}))
	wp.Drain() // the pool has looked at its queue and found it empty: it is idle now
	payload := `{"name":"ext","id":"from-another-program","t":1700000000,"args":{"to":"x@example.com","n":3}}`
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "ext"), payload) // no PUBLISH
	var j *Job
	select {
	case j = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("a job pushed without a wake-up message was not run")
	}
	if j.ID != "from-another-program" || j.EnqueuedAt != 1700000000 || j.ArgString("to") != "x@example.com" ||
		j.ArgInt64("n") != 3 || j.ArgError() != nil {
		t.Errorf("job = %+v (arg error %v)", j, j.ArgError())
	}
	bhvEventuallyReleased(t, pool, ns, "ext", wp.workerPoolID)
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "ext")); n != 0 {
		t.Errorf("queue holds %d jobs", n)
	}
}

func TestJobsQueuedBeforeStartAreRun(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	for i := 0; i < 5; i++ {
		rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "early"), fmt.Sprintf(`{"name":"early","id":"e%d","t":1,"args":null}`, i))
	}
	var ran atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("early", func(*Job) error { ran.Add(1); return nil }))
	eventually(t, 10*time.Second, "5 jobs queued before Start to run", func() bool { return ran.Load() == 5 })
}

func TestQueueIsFIFOWithOneWorker(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 30; i++ {
		if _, err := e.Enqueue("fifo", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("fifo", func(j *Job) error {
		mu.Lock()
		order = append(order, j.ArgInt64("i"))
		mu.Unlock()
		return nil
	}))
	wp.Drain()
	mu.Lock()
	defer mu.Unlock()
	if len(order) != 30 {
		t.Fatalf("ran %d jobs", len(order))
	}
	for i, v := range order {
		if v != int64(i) {
			t.Fatalf("order %v: want enqueue order", order)
		}
	}
}

func TestMaxConcurrencyIsEnforcedAcrossPools(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var running, maxRunning, done atomic.Int64
	slow := func(*Job) error {
		n := running.Add(1)
		for {
			m := maxRunning.Load()
			if n <= m || maxRunning.CompareAndSwap(m, n) {
				break
			}
		}
		time.Sleep(15 * time.Millisecond)
		running.Add(-1)
		done.Add(1)
		return nil
	}
	var free atomic.Int64
	newPool := func() *WorkerPool {
		return NewWorkerPool(bhvCtx{}, 4, ns, pool).
			JobWithOptions("slow", JobOptions{MaxConcurrency: 2}, slow).
			Job("free", func(*Job) error { free.Add(1); return nil })
	}
	p1 := bhvStart(t, newPool())
	p2 := bhvStart(t, newPool())
	if v, _ := redis.String(rdo(t, pool, "GET", bhvKey(ns, "jobs", "slow", "max_concurrency")), nil); v != "2" {
		t.Errorf("max_concurrency = %q, want 2", v)
	}
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 40; i++ {
		if _, err := e.Enqueue("slow", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Enqueue("free", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "40 slow jobs run", func() bool { return done.Load() == 40 })
	eventually(t, 10*time.Second, "40 free jobs run", func() bool { return free.Load() == 40 })
	p1.Drain()
	p2.Drain()
	if m := maxRunning.Load(); m > 2 {
		t.Errorf("%d slow jobs ran at once; MaxConcurrency is 2", m)
	} else {
		t.Logf("at most %d slow jobs ran at once", m)
	}
	if n := done.Load(); n != 40 {
		t.Errorf("ran %d slow jobs, want 40", n)
	}
	bhvEventuallyReleased(t, pool, ns, "slow", p1.workerPoolID, p2.workerPoolID)
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "slow")); n != 0 {
		t.Errorf("slow queue holds %d jobs", n)
	}
}

func TestMaxConcurrencyOneRunsJobsOneAtATimeAndNeverStalls(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var running, overlaps, done atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 5, ns, pool).JobWithOptions("one", JobOptions{MaxConcurrency: 1, MaxFails: 1},
		func(j *Job) error {
			if running.Add(1) > 1 {
				overlaps.Add(1)
			}
			time.Sleep(2 * time.Millisecond)
			running.Add(-1)
			done.Add(1)
			if j.ArgInt64("i")%3 == 0 {
				return fmt.Errorf("failing %d", j.ArgInt64("i"))
			}
			return nil
		})
	bhvStart(t, wp)
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 30; i++ {
		if _, err := e.Enqueue("one", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 30*time.Second, "30 jobs run one at a time", func() bool { return done.Load() == 30 })
	wp.Drain()
	if n := overlaps.Load(); n != 0 {
		t.Errorf("jobs overlapped %d times with MaxConcurrency 1", n)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 10 {
		t.Errorf("dead set holds %d jobs, want 10", n)
	}
	bhvEventuallyReleased(t, pool, ns, "one", wp.workerPoolID)
}

// Pause.

func TestPausedQueueIsNotRunUntilUnpaused(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var paused, other atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		Job("p", func(*Job) error { paused.Add(1); return nil }).
		Job("other", func(*Job) error { other.Add(1); return nil }))
	rdo(t, pool, "SET", bhvKey(ns, "jobs", "p", "paused"), "1")
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 3; i++ {
		if _, err := e.Enqueue("p", Q{"i": i}); err != nil { // the first one publishes a wake-up
			t.Fatal(err)
		}
	}
	if _, err := e.Enqueue("other", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the unpaused queue to run", func() bool { return other.Load() == 1 })
	wp.Drain() // the pool has looked at the paused queue since the jobs were enqueued
	if n := paused.Load(); n != 0 {
		t.Fatalf("%d jobs of a paused queue ran", n)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "p")); n != 3 {
		t.Errorf("paused queue holds %d jobs, want 3", n)
	}
	if held := bhvHeld(t, pool, ns, "p", wp.workerPoolID); held != "" {
		t.Errorf("paused queue is held: %s", held)
	}

	rdo(t, pool, "DEL", bhvKey(ns, "jobs", "p", "paused"))
	rdo(t, pool, "PUBLISH", bhvKey(ns, "wake"), "p")
	eventually(t, 10*time.Second, "the unpaused jobs to run", func() bool { return paused.Load() == 3 })
	bhvEventuallyReleased(t, pool, ns, "p", wp.workerPoolID)
}

func TestQueuePausedBeforeStartIsNotRun(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	rdo(t, pool, "SET", bhvKey(ns, "jobs", "p", "paused"), "1")
	if _, err := NewEnqueuer(ns, pool).Enqueue("p", nil); err != nil {
		t.Fatal(err)
	}
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("p", func(*Job) error { ran.Add(1); return nil }))
	wp.Drain()
	if ran.Load() != 0 || rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "p")) != 1 {
		t.Fatalf("a queue paused before Start ran (%d runs)", ran.Load())
	}
	// Unpausing without a wake-up message: the periodic look at the queues finds it.
	rdo(t, pool, "DEL", bhvKey(ns, "jobs", "p", "paused"))
	eventually(t, 15*time.Second, "the job to run once unpaused", func() bool { return ran.Load() == 1 })
}

func TestDrainWaitsForJobsEnqueuedByRunningJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	const chain = 30
	var ran atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("chain", func(j *Job) error {
		ran.Add(1)
		if i := j.ArgInt64("i"); i+1 < chain {
			if _, err := e.Enqueue("chain", Q{"i": i + 1}); err != nil {
				return err
			}
		}
		return nil
	}))
	if _, err := e.Enqueue("chain", Q{"i": 0}); err != nil {
		t.Fatal(err)
	}
	wp.Drain()
	if n := ran.Load(); n != chain {
		t.Errorf("Drain returned after %d of the %d chained jobs (queue holds %d)", n, chain,
			rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "chain")))
	}
}

func TestPoolCanBeStartedAgainAfterStop(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("again", func(*Job) error { ran.Add(1); return nil })
	t.Cleanup(wp.Stop)
	e := NewEnqueuer(ns, pool)
	for round := int64(1); round <= 2; round++ {
		wp.Start()
		if _, err := e.Enqueue("again", nil); err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, fmt.Sprintf("the job of round %d", round), func() bool { return ran.Load() == round })
		if n := rInt(t, pool, "SISMEMBER", bhvKey(ns, "worker_pools"), wp.workerPoolID); n != 1 {
			t.Errorf("round %d: the pool has no heartbeat", round)
		}
		wp.Stop()
		if n := rInt(t, pool, "EXISTS", bhvKey(ns, "worker_pools", wp.workerPoolID)); n != 0 {
			t.Errorf("round %d: heartbeat left after Stop", round)
		}
		bhvEventuallyReleased(t, pool, ns, "again", wp.workerPoolID)
	}
}
