package interop

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gocraft "github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Context types: both libraries want a struct value.
type gocraftCtx struct{}
type workCtx struct{}

// quick are work pool options that keep crash recovery within seconds in a test.
var quick = work.WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}

func recordWork(rec *recorder, fn func(j *work.Job) error) func(j *work.Job) error {
	return func(j *work.Job) error {
		rec.add(run{pool: "work", id: j.ID, name: j.Name, args: j.Args, fails: j.Fails, lastErr: j.LastErr})
		if fn != nil {
			return fn(j)
		}
		return nil
	}
}

func recordGocraft(rec *recorder, fn func(j *gocraft.Job) error) func(j *gocraft.Job) error {
	return func(j *gocraft.Job) error {
		rec.add(run{pool: "gocraft", id: j.ID, name: j.Name, args: j.Args, fails: j.Fails, lastErr: j.LastErr})
		if fn != nil {
			return fn(j)
		}
		return nil
	}
}

// Jobs enqueued by gocraft/work's Enqueuer (plain, scheduled, unique, unique scheduled) and
// ByKey jobs as gocraft/work's master writes them run on a work pool with their args; unique locks
// are released, and ByKey runs the latest args.
func TestGocraftEnqueuerToWorkPool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ge := gocraft.NewEnqueuer(ns, pool)

	const big = int64(1234567890123456789) // beyond 2^53: must reach the handler exact
	type want struct {
		i      int64
		s      string
		noArgs bool
	}
	wants := map[string]want{}
	for i := int64(0); i < 5; i++ {
		j, err := ge.Enqueue("plain", gocraft.Q{"i": i, "s": fmt.Sprintf("<s%d>", i), "f": 1.5, "b": true, "big": big})
		if err != nil {
			t.Fatal(err)
		}
		wants[j.ID] = want{i: i, s: fmt.Sprintf("<s%d>", i)}
	}
	jn, err := ge.Enqueue("plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	wants[jn.ID] = want{noArgs: true}
	sj, err := ge.EnqueueIn("plain", 1, gocraft.Q{"i": 100, "s": "scheduled", "f": 1.5, "b": true, "big": big})
	if err != nil {
		t.Fatal(err)
	}
	wants[sj.ID] = want{i: 100, s: "scheduled"}
	if n := rInt(t, pool, "ZCARD", ns+":scheduled"); n != 1 {
		t.Fatalf("scheduled set holds %d jobs, want 1", n)
	}

	uArgs := gocraft.Q{"k": "a&b", "n": 7, "big": big}
	u1, err := ge.EnqueueUnique("uniq", uArgs)
	if err != nil || u1 == nil {
		t.Fatalf("EnqueueUnique: %v, %v", u1, err)
	}
	if dup, err := ge.EnqueueUnique("uniq", gocraft.Q{"big": big, "n": 7, "k": "a&b"}); err != nil || dup != nil {
		t.Fatalf("duplicate EnqueueUnique: %v, %v; want nil, nil", dup, err)
	}
	uiArgs := gocraft.Q{"k": "later"}
	ui, err := ge.EnqueueUniqueIn("uniq", 1, uiArgs)
	if err != nil || ui == nil {
		t.Fatalf("EnqueueUniqueIn: %v, %v", ui, err)
	}
	if dup, err := ge.EnqueueUniqueIn("uniq", 1, uiArgs); err != nil || dup != nil {
		t.Fatalf("duplicate EnqueueUniqueIn: %v, %v; want nil, nil", dup, err)
	}

	// gocraft/work v0.5.1 has no EnqueueUniqueByKey; its master does. These are its bytes.
	key := gocraft.Q{"account": 42}
	bk := gocraftMasterEnqueueUniqueByKey(t, pool, ns, "bykey", gocraft.Q{"account": 42, "v": 1}, key)
	if bk == nil {
		t.Fatal("first ByKey enqueue reported a duplicate")
	}
	if dup := gocraftMasterEnqueueUniqueByKey(t, pool, ns, "bykey", gocraft.Q{"account": 42, "v": 2}, key); dup != nil {
		t.Fatal("second ByKey enqueue was not a duplicate")
	}

	locks := []string{
		uniqueKey(t, ns, "uniq", uArgs),
		uniqueKey(t, ns, "uniq", uiArgs),
		uniqueKey(t, ns, "bykey", key),
	}
	for _, k := range locks {
		if rInt(t, pool, "EXISTS", k) != 1 {
			t.Fatalf("unique lock %q missing after enqueue", k)
		}
	}

	rec := &recorder{}
	wp := work.NewWorkerPool(workCtx{}, 4, ns, pool)
	wp.Job("plain", recordWork(rec, nil))
	wp.Job("uniq", recordWork(rec, nil))
	wp.Job("bykey", recordWork(rec, nil))
	wp.Start()
	defer wp.Stop()

	eventually(t, 15*time.Second, "every job to run", func() bool { return rec.count() >= len(wants)+3 })
	wp.Drain()
	runs := rec.byID()

	for id, w := range wants {
		r := onlyRun(t, runs, id)
		j := &work.Job{ID: r.id, Args: r.args}
		if w.noArgs {
			if r.args != nil {
				t.Errorf("nil-args job ran with args %v", r.args)
			}
			continue
		}
		if got := j.ArgInt64("i"); got != w.i {
			t.Errorf("job %s: i = %d, want %d", id, got, w.i)
		}
		if got := j.ArgString("s"); got != w.s {
			t.Errorf("job %s: s = %q, want %q", id, got, w.s)
		}
		if got := j.ArgFloat64("f"); got != 1.5 {
			t.Errorf("job %s: f = %v, want 1.5", id, got)
		}
		if !j.ArgBool("b") {
			t.Errorf("job %s: b = false", id)
		}
		if got := j.ArgInt64("big"); got != big {
			t.Errorf("job %s: big = %d, want %d", id, got, big)
		}
		if err := j.ArgError(); err != nil {
			t.Errorf("job %s: %v", id, err)
		}
		if r.fails != 0 {
			t.Errorf("job %s ran with fails %d", id, r.fails)
		}
	}
	if r := onlyRun(t, runs, sj.ID); r.at.Unix() < sj.RunAt {
		t.Errorf("scheduled job ran at %d, before its run-at %d", r.at.Unix(), sj.RunAt)
	}
	if r := onlyRun(t, runs, u1.ID); r.args["k"] != "a&b" {
		t.Errorf("unique job args: %v", r.args)
	}
	if r := onlyRun(t, runs, ui.ID); r.args["k"] != "later" || r.at.Unix() < ui.RunAt {
		t.Errorf("unique scheduled job: args %v, ran at %d (run-at %d)", r.args, r.at.Unix(), ui.RunAt)
	}
	r := onlyRun(t, runs, bk.ID)
	if got := (&work.Job{Args: r.args}).ArgInt64("v"); got != 2 {
		t.Errorf("ByKey job ran with v = %d, want the latest args (v = 2)", got)
	}

	for _, k := range locks {
		if rInt(t, pool, "EXISTS", k) != 0 {
			t.Errorf("unique lock %q still held after its job ran", k)
		}
	}
	for _, name := range []string{"plain", "uniq", "bykey"} {
		if n := rInt(t, pool, "GET", ns+":jobs:"+name+":lock"); n != 0 {
			t.Errorf("%s lock = %d after the jobs ran, want 0", name, n)
		}
	}
	if n := rInt(t, pool, "ZCARD", ns+":scheduled"); n != 0 {
		t.Errorf("scheduled set still holds %d jobs", n)
	}

	// The released lock lets gocraft enqueue the same unique job again.
	again, err := ge.EnqueueUnique("uniq", uArgs)
	if err != nil || again == nil {
		t.Fatalf("EnqueueUnique after the job ran: %v, %v; want a job", again, err)
	}
	eventually(t, 10*time.Second, "the re-enqueued unique job to run", func() bool { return len(rec.byID()[again.ID]) == 1 })
}

// Jobs enqueued by work's Enqueuer (plain, scheduled, unique, unique scheduled) run on a
// gocraft/work pool: our JSON and layout are what gocraft/work reads, and it releases our unique locks.
func TestWorkEnqueuerToGocraftPool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	we := work.NewEnqueuer(ns, pool)

	type want struct {
		i      int64
		s      string
		noArgs bool
	}
	wants := map[string]want{}
	for i := int64(0); i < 5; i++ {
		j, err := we.Enqueue("plain", work.Q{"i": i, "s": fmt.Sprintf("<s%d>", i), "f": 1.5, "b": true})
		if err != nil {
			t.Fatal(err)
		}
		wants[j.ID] = want{i: i, s: fmt.Sprintf("<s%d>", i)}
	}
	jn, err := we.Enqueue("plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	wants[jn.ID] = want{noArgs: true}
	sj, err := we.EnqueueIn("plain", 1, work.Q{"i": 100, "s": "scheduled", "f": 1.5, "b": true})
	if err != nil {
		t.Fatal(err)
	}
	wants[sj.ID] = want{i: 100, s: "scheduled"}

	uArgs := work.Q{"k": "a&b", "n": 7}
	u1, err := we.EnqueueUnique("uniq", uArgs)
	if err != nil || u1 == nil {
		t.Fatalf("EnqueueUnique: %v, %v", u1, err)
	}
	if dup, err := we.EnqueueUnique("uniq", work.Q{"n": 7, "k": "a&b"}); err != nil || dup != nil {
		t.Fatalf("duplicate EnqueueUnique: %v, %v; want nil, nil", dup, err)
	}
	uiArgs := work.Q{"k": "later"}
	ui, err := we.EnqueueUniqueIn("uniq", 1, uiArgs)
	if err != nil || ui == nil {
		t.Fatalf("EnqueueUniqueIn: %v, %v", ui, err)
	}
	if dup, err := we.EnqueueUniqueIn("uniq", 1, uiArgs); err != nil || dup != nil {
		t.Fatalf("duplicate EnqueueUniqueIn: %v, %v; want nil, nil", dup, err)
	}
	locks := []string{uniqueKey(t, ns, "uniq", uArgs), uniqueKey(t, ns, "uniq", uiArgs)}
	for _, k := range locks {
		if rInt(t, pool, "EXISTS", k) != 1 {
			t.Fatalf("unique lock %q missing after enqueue", k)
		}
	}

	rec := &recorder{}
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 3, ns, pool)
	gp.Job("plain", recordGocraft(rec, nil))
	gp.Job("uniq", recordGocraft(rec, nil))
	gp.Start()
	defer gp.Stop()

	// gocraft/work's idle workers poll every 5 s at most.
	eventually(t, 20*time.Second, "every job to run on the gocraft/work pool", func() bool { return rec.count() >= len(wants)+2 })
	gp.Drain()
	runs := rec.byID()
	for id, w := range wants {
		r := onlyRun(t, runs, id)
		j := &gocraft.Job{ID: r.id, Args: r.args}
		if w.noArgs {
			if len(r.args) != 0 {
				t.Errorf("nil-args job ran with args %v", r.args)
			}
			continue
		}
		if got := j.ArgInt64("i"); got != w.i {
			t.Errorf("job %s: i = %d, want %d", id, got, w.i)
		}
		if got := j.ArgString("s"); got != w.s {
			t.Errorf("job %s: s = %q, want %q", id, got, w.s)
		}
		if got := j.ArgFloat64("f"); got != 1.5 {
			t.Errorf("job %s: f = %v", id, got)
		}
		if !j.ArgBool("b") {
			t.Errorf("job %s: b = false", id)
		}
		if err := j.ArgError(); err != nil {
			t.Errorf("job %s: %v", id, err)
		}
	}
	if r := onlyRun(t, runs, sj.ID); r.at.Unix() < sj.RunAt {
		t.Errorf("scheduled job ran at %d, before its run-at %d", r.at.Unix(), sj.RunAt)
	}
	if r := onlyRun(t, runs, u1.ID); r.args["k"] != "a&b" {
		t.Errorf("unique job args: %v", r.args)
	}
	if r := onlyRun(t, runs, ui.ID); r.args["k"] != "later" {
		t.Errorf("unique scheduled job args: %v", r.args)
	}
	for _, k := range locks {
		if rInt(t, pool, "EXISTS", k) != 0 {
			t.Errorf("unique lock %q still held after gocraft/work ran its job", k)
		}
	}
	for _, name := range []string{"plain", "uniq"} {
		if n := rInt(t, pool, "GET", ns+":jobs:"+name+":lock"); n != 0 {
			t.Errorf("%s lock = %d after the jobs ran, want 0", name, n)
		}
	}
	again, err := we.EnqueueUnique("uniq", uArgs)
	if err != nil || again == nil {
		t.Fatalf("EnqueueUnique after gocraft/work ran the job: %v, %v; want a job", again, err)
	}
	eventually(t, 20*time.Second, "the re-enqueued unique job to run", func() bool { return len(rec.byID()[again.ID]) == 1 })
}

// A ByKey job enqueued by work and run by a gocraft/work v0.5.1 pool (which predates ByKey) runs
// once, but v0.5.1 runs the args of the first enqueue and releases the lock it derives from the args,
// not the key map's lock: that lock stays until its 24 h TTL, and EnqueueUniqueByKey with that key
// reports a duplicate meanwhile. This pins down what a rolling deploy with v0.5.1 pools still
// running meets; once only work pools run, ByKey behaves as documented.
func TestWorkByKeyJobOnGocraftV051Pool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	we := work.NewEnqueuer(ns, pool)
	key := work.Q{"account": 42}
	first, err := we.EnqueueUniqueByKey("bykey", work.Q{"account": 42, "v": 1}, key)
	if err != nil || first == nil {
		t.Fatalf("EnqueueUniqueByKey: %v, %v", first, err)
	}
	if dup, err := we.EnqueueUniqueByKey("bykey", work.Q{"account": 42, "v": 2}, key); err != nil || dup != nil {
		t.Fatalf("duplicate EnqueueUniqueByKey: %v, %v; want nil, nil", dup, err)
	}
	rec := &recorder{}
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 1, ns, pool)
	gp.Job("bykey", recordGocraft(rec, nil))
	gp.Start()
	defer gp.Stop()
	eventually(t, 15*time.Second, "the gocraft/work pool to run the ByKey job", func() bool { return rec.count() == 1 })
	gp.Drain()
	r := onlyRun(t, rec.byID(), first.ID)
	v := (&gocraft.Job{Args: r.args}).ArgInt64("v")
	lockLeft := rInt(t, pool, "EXISTS", uniqueKey(t, ns, "bykey", key)) == 1
	t.Logf("gocraft/work v0.5.1 ran the ByKey job with v = %d (latest: 2); key-map lock left behind: %v", v, lockLeft)
	if v != 1 || !lockLeft {
		t.Errorf("gocraft/work v0.5.1 no longer behaves as described above: v = %d, lock left = %v", v, lockLeft)
	}
}

// retryMember returns the only member of the retry set, decoded, and its score.
func retryMember(t *testing.T, pool *redis.Pool, ns string) (map[string]interface{}, int64) {
	t.Helper()
	r, err := redis.Values(rdo(t, pool, "ZRANGE", ns+":retry", 0, -1, "WITHSCORES"), nil)
	if err != nil || len(r) != 2 {
		t.Fatalf("retry set: %d elements, %v; want one member", len(r)/2, err)
	}
	raw, _ := redis.Bytes(r[0], nil)
	score, _ := redis.Int64(r[1], nil)
	var m map[string]interface{}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatalf("retry member %q: %v", raw, err)
	}
	return m, score
}

// A retry record written by gocraft/work (fails, err, failed_at) is retried by a work pool, and a
// retry record written by work is retried by a gocraft/work pool.
func TestRetriesCrossBetweenLibraries(t *testing.T) {
	t.Parallel()
	t.Run("gocraft fails, work retries", func(t *testing.T) {
		t.Parallel()
		pool := newTestPool(t)
		ns := newTestNamespace(t, pool)
		rec := &recorder{}
		gp := gocraft.NewWorkerPool(gocraftCtx{}, 2, ns, pool)
		gp.JobWithOptions("flaky", gocraft.JobOptions{MaxFails: 3, Backoff: func(*gocraft.Job) int64 { return 3 }},
			recordGocraft(rec, func(*gocraft.Job) error { return errors.New("gocraft boom") }))
		gp.Start()
		stopped := false
		defer func() {
			if !stopped {
				gp.Stop()
			}
		}()
		j, err := gocraft.NewEnqueuer(ns, pool).Enqueue("flaky", gocraft.Q{"n": 5})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "gocraft/work to fail the job into the retry set",
			func() bool { return rInt(t, pool, "ZCARD", ns+":retry") == 1 })
		gp.Stop()
		stopped = true
		m, score := retryMember(t, pool, ns)
		failedAt, _ := m["failed_at"].(float64)
		if m["id"] != j.ID || m["fails"] != float64(1) || m["err"] != "gocraft boom" || failedAt == 0 || score < int64(failedAt)+3 || score > int64(failedAt)+4 {
			t.Fatalf("gocraft/work's retry record: %v (score %d)", m, score)
		}

		wp := work.NewWorkerPool(workCtx{}, 2, ns, pool)
		wp.Job("flaky", recordWork(rec, nil))
		wp.Start()
		defer wp.Stop()
		eventually(t, 15*time.Second, "the work pool to retry the job", func() bool { return rec.count() == 2 })
		wp.Drain()
		runs := rec.all()
		if len(runs) != 2 {
			t.Fatalf("%d runs, want 2", len(runs))
		}
		r := runs[1]
		if r.pool != "work" || r.id != j.ID || r.fails != 1 || r.lastErr != "gocraft boom" || (&work.Job{Args: r.args}).ArgInt64("n") != 5 {
			t.Fatalf("retry on the work pool: %+v", r)
		}
		if n := rInt(t, pool, "ZCARD", ns+":retry"); n != 0 {
			t.Errorf("retry set still holds %d jobs", n)
		}
		if n := rInt(t, pool, "GET", ns+":jobs:flaky:lock"); n != 0 {
			t.Errorf("lock = %d, want 0", n)
		}
	})
	t.Run("work fails, gocraft retries", func(t *testing.T) {
		t.Parallel()
		pool := newTestPool(t)
		ns := newTestNamespace(t, pool)
		rec := &recorder{}
		wp := work.NewWorkerPool(workCtx{}, 2, ns, pool)
		wp.JobWithOptions("flaky", work.JobOptions{MaxFails: 3, Backoff: func(*work.Job) int64 { return 3 }},
			recordWork(rec, func(*work.Job) error { return errors.New("work boom") }))
		wp.Start()
		stopped := false
		defer func() {
			if !stopped {
				wp.Stop()
			}
		}()
		j, err := work.NewEnqueuer(ns, pool).Enqueue("flaky", work.Q{"n": 5})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "work to fail the job into the retry set",
			func() bool { return rInt(t, pool, "ZCARD", ns+":retry") == 1 })
		wp.Stop()
		stopped = true
		m, score := retryMember(t, pool, ns)
		failedAt, _ := m["failed_at"].(float64)
		if m["id"] != j.ID || m["fails"] != float64(1) || m["err"] != "work boom" || failedAt == 0 || score < int64(failedAt)+3 || score > int64(failedAt)+4 {
			t.Fatalf("work's retry record: %v (score %d)", m, score)
		}

		gp := gocraft.NewWorkerPool(gocraftCtx{}, 2, ns, pool)
		gp.Job("flaky", recordGocraft(rec, nil))
		gp.Start()
		defer gp.Stop()
		eventually(t, 20*time.Second, "the gocraft/work pool to retry the job", func() bool { return rec.count() == 2 })
		gp.Drain()
		runs := rec.all()
		if len(runs) != 2 {
			t.Fatalf("%d runs, want 2", len(runs))
		}
		r := runs[1]
		if r.pool != "gocraft" || r.id != j.ID || r.fails != 1 || r.lastErr != "work boom" || (&gocraft.Job{Args: r.args}).ArgInt64("n") != 5 {
			t.Fatalf("retry on the gocraft/work pool: %+v", r)
		}
		if n := rInt(t, pool, "ZCARD", ns+":retry"); n != 0 {
			t.Errorf("retry set still holds %d jobs", n)
		}
	})
}

const gocraftChildEnv = "INTEROP_GOCRAFT_CHILD_NS"

// TestGocraftChildProcess is the body of the child process of the crash test: a gocraft/work pool
// whose handler marks its job started, then blocks until the process is killed. It does nothing in
// a normal run.
func TestGocraftChildProcess(t *testing.T) {
	ns := os.Getenv(gocraftChildEnv)
	if ns == "" {
		t.Skip("only runs as the child of the crash test")
	}
	pool := newTestPool(t)
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 5, ns, pool)
	gp.Job("slow", func(j *gocraft.Job) error {
		c := pool.Get()
		c.Do("SADD", ns+":started", j.ID)
		c.Close()
		select {}
	})
	gp.Start()
	select {}
}

// A gocraft/work pool killed with SIGKILL while it holds jobs: a work pool puts its jobs back and
// runs them, without counting a failure, and the concurrency counters end at zero.
func TestWorkPoolRecoversJobsOfKilledGocraftPool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ge := gocraft.NewEnqueuer(ns, pool)
	const n = 5
	ids := map[string]bool{}
	for i := 0; i < n; i++ {
		j, err := ge.Enqueue("slow", gocraft.Q{"i": i})
		if err != nil {
			t.Fatal(err)
		}
		ids[j.ID] = true
	}

	child := exec.Command(os.Args[0], "-test.run=^TestGocraftChildProcess$", "-test.count=1")
	child.Env = append(os.Environ(), gocraftChildEnv+"="+ns, "WORK_TEST_REDIS="+testRedisAddr())
	child.Stdout, child.Stderr = os.Stderr, os.Stderr
	if err := child.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { child.Process.Kill(); child.Wait() })
	eventually(t, 20*time.Second, "the gocraft/work child to start every job", func() bool {
		return rInt(t, pool, "SCARD", ns+":started") == n
	})
	var childID string
	eventually(t, 10*time.Second, "the gocraft/work child to register its pool", func() bool {
		p := rStrings(t, pool, "SMEMBERS", ns+":worker_pools")
		if len(p) == 1 {
			childID = p[0]
		}
		return len(p) == 1
	})
	inProgress := ns + ":jobs:slow:" + childID + ":inprogress"
	if got := rInt(t, pool, "LLEN", inProgress); got != n {
		t.Fatalf("child's in-progress list holds %d jobs, want %d", got, n)
	}
	if got := rInt(t, pool, "GET", ns+":jobs:slow:lock"); got != n {
		t.Fatalf("lock while the child runs: %d, want %d", got, n)
	}
	if got := rInt(t, pool, "HGET", ns+":jobs:slow:lock_info", childID); got != n {
		t.Fatalf("lock_info[child] while the child runs: %d, want %d", got, n)
	}

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	killed := time.Now()

	rec := &recorder{}
	wp := work.NewWorkerPoolWithOptions(workCtx{}, 5, ns, pool, quick)
	wp.Job("slow", recordWork(rec, nil))
	wp.Start()
	defer wp.Stop()
	eventually(t, 20*time.Second, "the work pool to run the dead gocraft/work pool's jobs", func() bool { return rec.count() >= n })
	t.Logf("gocraft/work pool's jobs back and run %.1fs after SIGKILL (HeartbeatInterval 1s, DeadPoolTimeout 3s)",
		time.Since(killed).Seconds())
	wp.Drain()
	runs := rec.byID()
	if len(runs) != n {
		t.Errorf("%d distinct jobs ran, want %d", len(runs), n)
	}
	for id := range ids {
		if r := onlyRun(t, runs, id); r.fails != 0 {
			t.Errorf("job %s came back with fails = %d", id, r.fails)
		}
	}
	if got := rInt(t, pool, "EXISTS", inProgress); got != 0 {
		t.Errorf("dead pool's in-progress list still exists")
	}
	if got := rInt(t, pool, "SISMEMBER", ns+":worker_pools", childID); got != 0 {
		t.Errorf("dead pool still in worker_pools")
	}
	if got := rInt(t, pool, "EXISTS", ns+":worker_pools:"+childID); got != 0 {
		t.Errorf("dead pool's heartbeat still exists")
	}
	if got := rInt(t, pool, "GET", ns+":jobs:slow:lock"); got != 0 {
		t.Errorf("lock after recovery: %d, want 0", got)
	}
	if got := rStringMap(t, pool, "HGETALL", ns+":jobs:slow:lock_info"); len(got) != 0 {
		t.Errorf("lock_info after recovery: %v, want empty", got)
	}
}

// A gocraft/work pool and a work pool serve the same queue at the same time, fed by both
// enqueuers: every job runs exactly once, and both pools take part.
func TestMixedPoolsRunEveryJobExactlyOnce(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ge := gocraft.NewEnqueuer(ns, pool)
	we := work.NewEnqueuer(ns, pool)

	const n = 400
	var mu sync.Mutex
	ids := map[string]bool{}
	enqueue := func(i int) {
		var id string
		if i%2 == 0 {
			j, err := ge.Enqueue("shared", gocraft.Q{"i": i})
			if err != nil {
				t.Error(err)
				return
			}
			id = j.ID
		} else {
			j, err := we.Enqueue("shared", work.Q{"i": i})
			if err != nil {
				t.Error(err)
				return
			}
			id = j.ID
		}
		mu.Lock()
		ids[id] = true
		mu.Unlock()
	}
	for i := 0; i < n/2; i++ {
		enqueue(i)
	}

	rec := &recorder{}
	pause := func() { time.Sleep(time.Millisecond) }
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 5, ns, pool)
	gp.Job("shared", recordGocraft(rec, func(*gocraft.Job) error { pause(); return nil }))
	wp := work.NewWorkerPool(workCtx{}, 5, ns, pool)
	wp.Job("shared", recordWork(rec, func(*work.Job) error { pause(); return nil }))
	gp.Start()
	defer gp.Stop()
	wp.Start()
	defer wp.Stop()

	var wg sync.WaitGroup
	for g := 0; g < 4; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := n/2 + g; i < n; i += 4 {
				enqueue(i)
			}
		}(g)
	}
	wg.Wait()
	eventually(t, 30*time.Second, "every job to run", func() bool { return len(rec.byID()) >= n })
	wp.Drain()
	gp.Drain()

	runs := rec.byID()
	perPool := map[string]int{}
	for id := range ids {
		r := onlyRun(t, runs, id)
		perPool[r.pool]++
	}
	if len(runs) != n || rec.count() != n {
		t.Errorf("%d runs of %d distinct jobs, want %d of %d", rec.count(), len(runs), n, n)
	}
	t.Logf("jobs run per pool: %v", perPool)
	if perPool["gocraft"] == 0 || perPool["work"] == 0 {
		t.Errorf("both pools should have taken part: %v", perPool)
	}
	if got := rInt(t, pool, "LLEN", ns+":jobs:shared"); got != 0 {
		t.Errorf("queue still holds %d jobs", got)
	}
	for _, k := range keysMatching(t, pool, ns+":jobs:shared:*:inprogress") {
		if got := rInt(t, pool, "LLEN", k); got != 0 {
			t.Errorf("%s holds %d jobs", k, got)
		}
	}
	if got := rInt(t, pool, "GET", ns+":jobs:shared:lock"); got != 0 {
		t.Errorf("lock = %d after every job ran, want 0", got)
	}
}

// concurrencyTracker counts the jobs running at once, over every handler of both libraries.
type concurrencyTracker struct {
	running atomic.Int64
	max     atomic.Int64
	started chan string // job IDs of held jobs, as they start

	mu       sync.Mutex
	release  map[string]chan struct{} // held job ID -> closed to let it finish
	released map[string]bool
}

func newConcurrencyTracker() *concurrencyTracker {
	return &concurrencyTracker{started: make(chan string, 10), release: map[string]chan struct{}{}, released: map[string]bool{}}
}

func (c *concurrencyTracker) gate(id string) chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	ch, ok := c.release[id]
	if !ok {
		ch = make(chan struct{})
		c.release[id] = ch
	}
	return ch
}

func (c *concurrencyTracker) enter() {
	n := c.running.Add(1)
	for {
		m := c.max.Load()
		if n <= m || c.max.CompareAndSwap(m, n) {
			return
		}
	}
}

func (c *concurrencyTracker) body(id string, hold bool) {
	c.enter()
	defer c.running.Add(-1)
	if hold {
		ch := c.gate(id)
		c.started <- id
		<-ch
		return
	}
	time.Sleep(10 * time.Millisecond)
}

// releaseJob lets a held job finish (once; later calls do nothing).
func (c *concurrencyTracker) releaseJob(id string) {
	ch := c.gate(id)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.released[id] {
		c.released[id] = true
		close(ch)
	}
}

// releaseAll lets every held job finish, so that pools can stop.
func (c *concurrencyTracker) releaseAll() {
	c.mu.Lock()
	ids := make([]string, 0, len(c.release))
	for id := range c.release {
		ids = append(ids, id)
	}
	c.mu.Unlock()
	for _, id := range ids {
		c.releaseJob(id)
	}
}

// MaxConcurrency 1, registered by a gocraft/work pool and a work pool on the same queue: a job
// held by either pool keeps every worker of both pools off the queue, and no two jobs ever run at once.
func TestMixedPoolsShareMaxConcurrency(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ge := gocraft.NewEnqueuer(ns, pool)
	we := work.NewEnqueuer(ns, pool)
	rec := &recorder{}
	tr := newConcurrencyTracker()

	newGocraft := func() *gocraft.WorkerPool {
		gp := gocraft.NewWorkerPool(gocraftCtx{}, 4, ns, pool)
		gp.JobWithOptions("limited", gocraft.JobOptions{MaxConcurrency: 1}, recordGocraft(rec, func(j *gocraft.Job) error {
			tr.body(j.ID, j.ArgBool("hold"))
			return nil
		}))
		return gp
	}
	wp := work.NewWorkerPool(workCtx{}, 4, ns, pool)
	wp.JobWithOptions("limited", work.JobOptions{MaxConcurrency: 1}, recordWork(rec, func(j *work.Job) error {
		tr.body(j.ID, j.ArgBool("hold"))
		return nil
	}))
	lock := ns + ":jobs:limited:lock"
	fillers := 0
	enqueueFillers := func(k int, viaGocraft bool) {
		for i := 0; i < k; i++ {
			var err error
			if viaGocraft {
				_, err = ge.Enqueue("limited", gocraft.Q{"hold": false})
			} else {
				_, err = we.Enqueue("limited", work.Q{"hold": false})
			}
			if err != nil {
				t.Fatal(err)
			}
		}
		fillers += k
	}
	waitHeld := func(wantPool string) string {
		t.Helper()
		select {
		case id := <-tr.started:
			runs := rec.byID()[id]
			if len(runs) != 1 || runs[0].pool != wantPool {
				t.Fatalf("held job %s: runs %+v, want one on the %s pool", id, runs, wantPool)
			}
			return id
		case <-time.After(15 * time.Second):
			t.Fatalf("no held job started on the %s pool", wantPool)
			return ""
		}
	}
	// assertNothingElseRuns watches for d: the held job is the only one running anywhere.
	assertNothingElseRuns := func(d time.Duration, total int) {
		t.Helper()
		deadline := time.Now().Add(d)
		for time.Now().Before(deadline) {
			if got := rec.count(); got != total {
				t.Fatalf("%d jobs started while one was held at MaxConcurrency 1, want %d", got, total)
			}
			if got := rInt(t, pool, "GET", lock); got != 1 {
				t.Fatalf("lock = %d while one job is held, want 1", got)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// The gocraft/work pool holds the only slot; a work pool started meanwhile must wait.
	gp := newGocraft()
	gp.Start()
	gpStopped := false
	defer func() {
		if !gpStopped {
			tr.releaseAll()
			gp.Stop()
		}
	}()
	if _, err := ge.Enqueue("limited", gocraft.Q{"hold": true}); err != nil {
		t.Fatal(err)
	}
	h1 := waitHeld("gocraft")
	wp.Start()
	defer func() { tr.releaseAll(); wp.Stop() }()
	enqueueFillers(5, false) // a work Enqueuer also wakes the work pool at once
	assertNothingElseRuns(2500*time.Millisecond, 1)
	tr.releaseJob(h1)
	eventually(t, 30*time.Second, "the first fillers to run", func() bool { return rec.count() == 1+fillers })

	// The work pool holds the only slot; a gocraft/work pool started meanwhile must wait. (Its idle
	// workers look at 0, 10, 100 and 1000 ms after they start: about 16 looks in this window.)
	gp.Stop()
	gpStopped = true
	if _, err := we.Enqueue("limited", work.Q{"hold": true}); err != nil {
		t.Fatal(err)
	}
	h2 := waitHeld("work")
	gp2 := newGocraft()
	gp2.Start()
	defer func() { tr.releaseAll(); gp2.Stop() }()
	enqueueFillers(5, true)
	assertNothingElseRuns(2500*time.Millisecond, 2+5)
	tr.releaseJob(h2)

	// Both pools, free for all.
	enqueueFillers(15, true)
	enqueueFillers(15, false)
	eventually(t, 60*time.Second, "every job to run", func() bool { return rec.count() == 2+fillers })
	wp.Drain()
	gp2.Drain()

	runs := rec.byID()
	perPool := map[string]int{}
	for id, rs := range runs {
		if len(rs) != 1 {
			t.Errorf("job %s ran %d times", id, len(rs))
		}
		perPool[rs[0].pool]++
	}
	t.Logf("jobs run per pool: %v; most running at once: %d", perPool, tr.max.Load())
	if got := tr.max.Load(); got != 1 {
		t.Errorf("%d jobs ran at once with MaxConcurrency 1 on both pools", got)
	}
	if got := rInt(t, pool, "GET", lock); got != 0 {
		t.Errorf("lock = %d after every job ran, want 0", got)
	}
}
