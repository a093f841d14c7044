package work

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// regCtx is the context of the registration tests' pools.
type regCtx struct{ through []string }

// TestRegisterOnStartedPool: as with gocraft/work, job names, middleware and periodic jobs may be
// registered on a started pool (some frameworks register handlers that way). A new name is served
// with its options in force (MaxConcurrency, keyed limits, priority), only once the pool's heartbeat
// names it (so that a crash cannot strand its jobs), and middleware added after Start applies to the
// jobs that start after it. Registrations race with running jobs: -race checks them.
func TestRegisterOnStartedPool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	enq := NewEnqueuer(ns, pool)
	wp := NewWorkerPoolWithOptions(regCtx{}, 6, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Hour})

	var mu sync.Mutex
	running := map[string]int{} // "name" or "name/key" -> jobs running now
	most := map[string]int{}    // the most seen running at once
	ran := map[string][]string{}
	var problems []string
	enter := func(what string) {
		mu.Lock()
		running[what]++
		most[what] = max(most[what], running[what])
		mu.Unlock()
	}
	leave := func(what string) {
		mu.Lock()
		running[what]--
		mu.Unlock()
	}
	handler := func(c *regCtx, job *Job) error {
		// The pool's heartbeat names the job before the pool holds any job of it.
		conn := pool.Get()
		names, err := redis.String(conn.Do("HGET", ks.Heartbeat(wp.workerPoolID), "job_names"))
		conn.Close()
		if err != nil || !strings.Contains(","+names+",", ","+job.Name+",") {
			mu.Lock()
			problems = append(problems, fmt.Sprintf("job %s ran while the pool's heartbeat named %q (%v)", job.Name, names, err))
			mu.Unlock()
		}
		what := job.Name
		if job.Key != "" {
			what += "/" + job.Key
		}
		enter(what)
		if job.Key != "" {
			enter(job.Name)
		}
		time.Sleep(2 * time.Millisecond) // let the jobs overlap if the limits allowed it
		if job.Key != "" {
			leave(job.Name)
		}
		leave(what)
		mu.Lock()
		ran[job.Name] = append(ran[job.Name], strings.Join(c.through, ">"))
		mu.Unlock()
		return nil
	}
	wp.Job("first", handler)
	wp.Start()
	defer wp.Stop()

	// Registrations on the running pool, from several goroutines at once, while jobs of the first
	// name run.
	for i := 0; i < 20; i++ {
		if _, err := enq.Enqueue("first", nil); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	register := []func(){
		func() { wp.JobWithOptions("limited", JobOptions{MaxConcurrency: 1, Priority: 7}, handler) },
		func() { wp.JobWithOptions("keyed", JobOptions{KeyConcurrency: 1}, handler) },
		func() {
			wp.Middleware(func(c *regCtx, job *Job, next NextMiddlewareFunc) error {
				c.through = append(c.through, "mw")
				return next()
			})
		},
		func() { wp.Job("plain", handler) },
	}
	for _, f := range register {
		wg.Add(1)
		go func() { defer wg.Done(); f() }()
	}
	wg.Wait()
	// The middleware is in place: every job that starts from now on goes through it.
	for i := 0; i < 10; i++ {
		for _, name := range []string{"limited", "plain", "first"} {
			if _, err := enq.Enqueue(name, Q{"i": i}); err != nil {
				t.Fatal(err)
			}
		}
		for _, key := range []string{"a", "b"} {
			if _, err := enq.EnqueueWith("keyed", Q{"i": i}, EnqueueOptions{Key: key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	eventually(t, 30*time.Second, "every job registered after Start ran", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran["limited"]) == 10 && len(ran["plain"]) == 10 && len(ran["keyed"]) == 20 && len(ran["first"]) == 30
	})

	mu.Lock()
	defer mu.Unlock()
	for _, p := range problems {
		t.Error(p)
	}
	if most["limited"] != 1 {
		t.Errorf("MaxConcurrency 1 registered after Start: %d jobs ran at once", most["limited"])
	}
	if most["keyed/a"] != 1 || most["keyed/b"] != 1 {
		t.Errorf("KeyConcurrency 1 registered after Start: key a ran %d at once, key b %d", most["keyed/a"], most["keyed/b"])
	}
	if most["plain"] < 2 {
		t.Logf("the unlimited name never ran two jobs at once (%d)", most["plain"])
	}
	for _, name := range []string{"limited", "plain", "keyed"} {
		for _, through := range ran[name] {
			if through != "mw" {
				t.Errorf("a %s job, enqueued after the middleware was added, ran through %q", name, through)
			}
		}
	}
	// The last 10 jobs of the first name started after the middleware was added.
	if n := len(ran["first"]); n == 30 {
		for _, through := range ran["first"][20:] {
			if through != "mw" {
				t.Errorf("a job of the first name enqueued after the middleware was added ran through %q", through)
			}
		}
	}
	if got := rInt(t, pool, "GET", ks.MaxConcurrency("limited")); got != 1 {
		t.Errorf("%s = %d, want 1", ks.MaxConcurrency("limited"), got)
	}
	if prio := wp.reg.run.jobs().priority["limited"]; prio != 7 {
		t.Errorf("the pool samples the name registered after Start with priority %d, want 7", prio)
	}
	hbs, err := NewClient(ns, pool).WorkerPoolHeartbeats()
	if err != nil || len(hbs) != 1 {
		t.Fatalf("heartbeats: %v, %v", hbs, err)
	}
	if got := strings.Join(hbs[0].JobNames, ","); got != "first,keyed,limited,plain" {
		t.Errorf("the heartbeat names %q", got)
	}
}

// TestRegisterPeriodicOnStartedPool: a periodic job registered on a started pool has its ticks
// scheduled at once, and shows in the pool's heartbeat.
func TestRegisterPeriodicOnStartedPool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	wp := NewWorkerPoolWithOptions(regCtx{}, 1, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Hour})
	wp.Job("tick", func(*Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	wp.PeriodicallyEnqueue("*/30 * * * * *", "tick") // the next runs are scheduled
	eventually(t, 10*time.Second, "the periodic job's next run in the scheduled set", func() bool {
		return rInt(t, pool, "ZCARD", ks.Scheduled()) >= 1
	})
	wp.Job("other", func(*Job) error { return nil }) // a heartbeat follows, naming the periodic job too
	eventually(t, 10*time.Second, "the heartbeat lists the periodic job", func() bool {
		pj, _ := redis.String(rdo(t, pool, "HGET", ks.Heartbeat(wp.workerPoolID), "periodic_jobs"), nil)
		return strings.Contains(pj, `"spec":"*/30 * * * * *"`)
	})
}

// TestRegisterOnStartedPoolWaitsForTheHeartbeat: while the heartbeat that names a new job name
// fails (Redis refuses writes of the pool's heartbeat hash), the pool does not take jobs of that
// name; once a heartbeat names it, they run.
func TestRegisterOnStartedPoolWaitsForTheHeartbeat(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	enq := NewEnqueuer(ns, pool)
	wp := NewWorkerPoolWithOptions(regCtx{}, 2, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Hour})
	ran := make(chan string, 10)
	wp.Job("old", func(j *Job) error { ran <- j.Name; return nil })
	wp.Start()
	defer wp.Stop()
	// The heartbeat hash holds a string: the heartbeat script fails until it is deleted.
	hbKey := ks.Heartbeat(wp.workerPoolID)
	rdo(t, pool, "DEL", hbKey)
	rdo(t, pool, "SET", hbKey, "not a hash")
	wp.Job("new", func(j *Job) error { ran <- j.Name; return nil })
	if _, err := enq.Enqueue("new", nil); err != nil {
		t.Fatal(err)
	}
	// A job of the old name runs: the pool is alive and fetching, but passes the new name over.
	if _, err := enq.Enqueue("old", nil); err != nil {
		t.Fatal(err)
	}
	if got := <-ran; got != "old" {
		t.Fatalf("the pool ran a job of %q before any heartbeat named it", got)
	}
	if n := rInt(t, pool, "LLEN", ks.Jobs("new")); n != 1 {
		t.Fatalf("the new name's queue holds %d jobs, want 1 (not taken before its heartbeat)", n)
	}
	rdo(t, pool, "DEL", hbKey)
	wp.reg.mu.Lock()
	wp.reg.run.heartbeater.announceNow()
	wp.reg.mu.Unlock()
	select {
	case got := <-ran:
		if got != "new" {
			t.Fatalf("ran %q, want the new name's job", got)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the new name's job did not run once a heartbeat could name it")
	}
}
