package goredis_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
)

// The end-to-end suite: the main flows of the work package through the go-redis backend. It runs on
// one server and on Redis Cluster (see cluster_test.go).

type suiteEnv struct {
	client  redis.UniversalClient
	hashTag bool     // namespaces get a hash tag (Redis Cluster)
	mode    string   // "single" or "cluster": how a crash child connects
	addrs   []string // the servers, for a crash child
	volume  int      // jobs in the volume case
}

func (e *suiteEnv) ns(prefix string) string { return newNamespace(prefix, e.hashTag) }

type tctx struct{}

// fastOpts makes pools notice dead pools and due jobs quickly.
var fastOpts = work.WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}

func runSuite(t *testing.T, e *suiteEnv) {
	t.Run("EnqueueAndProcessVolume", func(t *testing.T) { t.Parallel(); caseVolume(t, e) })
	t.Run("RetryThenDead", func(t *testing.T) { t.Parallel(); caseRetryDead(t, e) })
	t.Run("Unique", func(t *testing.T) { t.Parallel(); caseUnique(t, e) })
	t.Run("Scheduled", func(t *testing.T) { t.Parallel(); caseScheduled(t, e) })
	t.Run("Periodic", func(t *testing.T) { t.Parallel(); casePeriodic(t, e) })
	t.Run("MaxConcurrency", func(t *testing.T) { t.Parallel(); caseMaxConcurrency(t, e) })
	t.Run("PauseViaClient", func(t *testing.T) { t.Parallel(); casePause(t, e) })
	t.Run("ClientListing", func(t *testing.T) { t.Parallel(); caseClientListing(t, e) })
	t.Run("CrashRecovery", func(t *testing.T) { t.Parallel(); caseCrash(t, e) })
}

// caseVolume enqueues jobs of several names from several goroutines (single enqueues and batches)
// and checks each runs exactly once.
func caseVolume(t *testing.T, e *suiteEnv) {
	ns := e.ns("volume")
	names := []string{"a", "b", "c", "d"}
	var mu sync.Mutex
	seen := map[string]int{}
	wp := goredis.NewWorkerPool(tctx{}, 20, ns, e.client, fastOpts)
	for _, n := range names {
		wp.Job(n, func(j *work.Job) error {
			mu.Lock()
			seen[j.ArgString("k")]++
			mu.Unlock()
			return nil
		})
	}
	wp.Start()
	defer wp.Stop()
	enq := goredis.NewEnqueuer(ns, e.client)
	var wg sync.WaitGroup
	const workers = 4
	per := e.volume / workers
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			for i := 0; i < per; {
				if i%100 == 0 && per-i >= 50 {
					batch := make([]work.BatchJob, 50)
					for j := range batch {
						batch[j] = work.BatchJob{Name: names[(i+j)%len(names)], Args: work.Q{"k": fmt.Sprintf("%d-%d", w, i+j)}}
					}
					if _, err := enq.EnqueueBatch(batch); err != nil {
						t.Error(err)
						return
					}
					i += 50
					continue
				}
				if _, err := enq.Enqueue(names[i%len(names)], work.Q{"k": fmt.Sprintf("%d-%d", w, i)}); err != nil {
					t.Error(err)
					return
				}
				i++
			}
		}(w)
	}
	wg.Wait()
	total := per * workers
	eventually(t, 60*time.Second, "every job to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(seen) == total
	})
	wp.Drain()
	mu.Lock()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("job %s ran %d times", k, n)
		}
	}
	mu.Unlock()
	qs, err := goredis.NewClient(ns, e.client).Queues()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != len(names) {
		t.Errorf("Queues: %d queues, want %d", len(qs), len(names))
	}
	for _, q := range qs {
		if q.Count != 0 {
			t.Errorf("queue %s has %d jobs left", q.JobName, q.Count)
		}
	}
}

// caseRetryDead fails a job until it is dead, then retries it from the dead set through the Client.
func caseRetryDead(t *testing.T, e *suiteEnv) {
	ns := e.ns("dead")
	var attempts, succeeded atomic.Int64
	var allow atomic.Bool
	wp := goredis.NewWorkerPool(tctx{}, 2, ns, e.client, fastOpts)
	wp.JobWithOptions("flaky", work.JobOptions{MaxFails: 2, Backoff: func(*work.Job) int64 { return 0 }},
		func(j *work.Job) error {
			attempts.Add(1)
			if allow.Load() {
				succeeded.Add(1)
				return nil
			}
			return errors.New("boom")
		})
	wp.Start()
	defer wp.Stop()
	job, err := goredis.NewEnqueuer(ns, e.client).Enqueue("flaky", work.Q{"n": 1})
	if err != nil {
		t.Fatal(err)
	}
	cl := goredis.NewClient(ns, e.client)
	var dead []*work.DeadJob
	eventually(t, 20*time.Second, "the job to die after 2 attempts", func() bool {
		var err error
		dead, _, err = cl.DeadJobs(1)
		return err == nil && len(dead) == 1
	})
	if attempts.Load() != 2 {
		t.Errorf("attempts: %d, want 2", attempts.Load())
	}
	d := dead[0]
	if d.ID != job.ID || d.Fails != 2 || d.LastErr != "boom" {
		t.Errorf("dead job: %+v", d.Job)
	}
	if rj, n, err := cl.RetryJobs(1); err != nil || n != 0 || len(rj) != 0 {
		t.Errorf("retry set: %d %v", n, err)
	}
	allow.Store(true)
	if err := cl.RetryDeadJob(d.DiedAt, d.ID); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the retried dead job to run", func() bool { return succeeded.Load() == 1 })
	if _, n, _ := cl.DeadJobs(1); n != 0 {
		t.Errorf("dead set after retry: %d", n)
	}
	if err := cl.DeleteDeadJob(d.DiedAt, d.ID); !errors.Is(err, work.ErrNotDeleted) {
		t.Errorf("DeleteDeadJob of a retried job: %v, want ErrNotDeleted", err)
	}
}

// caseUnique checks EnqueueUnique and EnqueueUniqueByKey.
func caseUnique(t *testing.T, e *suiteEnv) {
	ns := e.ns("unique")
	enq := goredis.NewEnqueuer(ns, e.client)
	j1, err := enq.EnqueueUnique("u", work.Q{"x": 1})
	if err != nil || j1 == nil {
		t.Fatalf("first unique: %v %v", j1, err)
	}
	if j, err := enq.EnqueueUnique("u", work.Q{"x": 1}); err != nil || j != nil {
		t.Fatalf("duplicate unique: %v %v", j, err)
	}
	if j, err := enq.EnqueueUnique("u", work.Q{"x": 2}); err != nil || j == nil {
		t.Fatalf("unique with other args: %v %v", j, err)
	}
	if j, err := enq.EnqueueUniqueByKey("k", work.Q{"v": "old"}, work.Q{"id": 7}); err != nil || j == nil {
		t.Fatalf("first by key: %v %v", j, err)
	}
	if j, err := enq.EnqueueUniqueByKey("k", work.Q{"v": "new"}, work.Q{"id": 7}); err != nil || j != nil {
		t.Fatalf("duplicate by key: %v %v", j, err)
	}
	if j, err := enq.EnqueueUniqueIn("s", 60, work.Q{"x": 1}); err != nil || j == nil {
		t.Fatalf("unique scheduled: %v %v", j, err)
	}
	if j, err := enq.EnqueueUniqueIn("s", 60, work.Q{"x": 1}); err != nil || j != nil {
		t.Fatalf("duplicate unique scheduled: %v %v", j, err)
	}
	var mu sync.Mutex
	var runs []string
	wp := goredis.NewWorkerPool(tctx{}, 2, ns, e.client, fastOpts)
	wp.Job("u", func(j *work.Job) error {
		mu.Lock()
		runs = append(runs, fmt.Sprintf("u%d", j.ArgInt64("x")))
		mu.Unlock()
		return nil
	})
	wp.Job("k", func(j *work.Job) error {
		mu.Lock()
		runs = append(runs, "k:"+j.ArgString("v"))
		mu.Unlock()
		return nil
	})
	wp.Start()
	defer wp.Stop()
	eventually(t, 10*time.Second, "the unique jobs to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) >= 3
	})
	wp.Drain()
	mu.Lock()
	sort.Strings(runs)
	got := strings.Join(runs, ",")
	mu.Unlock()
	if got != "k:new,u1,u2" {
		t.Errorf("runs: %s, want k:new,u1,u2", got)
	}
	// Picked up, so the lock is free again.
	if j, err := enq.EnqueueUnique("u", work.Q{"x": 1}); err != nil || j == nil {
		t.Errorf("unique after the job started: %v %v", j, err)
	}
}

// caseScheduled runs a job scheduled a second ahead, and deletes another through the Client.
func caseScheduled(t *testing.T, e *suiteEnv) {
	ns := e.ns("sched")
	enq := goredis.NewEnqueuer(ns, e.client)
	start := time.Now()
	sj, err := enq.EnqueueIn("later", 1, work.Q{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	gone, err := enq.EnqueueIn("later", 30, work.Q{"a": 2})
	if err != nil {
		t.Fatal(err)
	}
	cl := goredis.NewClient(ns, e.client)
	if jobs, n, err := cl.ScheduledJobs(1); err != nil || n != 2 || len(jobs) != 2 || jobs[0].ID != sj.ID {
		t.Fatalf("ScheduledJobs: %d %v", n, err)
	}
	if err := cl.DeleteScheduledJob(gone.RunAt, gone.ID); err != nil {
		t.Fatal(err)
	}
	ran := make(chan time.Time, 2)
	wp := goredis.NewWorkerPool(tctx{}, 2, ns, e.client, fastOpts)
	wp.Job("later", func(j *work.Job) error { ran <- time.Now(); return nil })
	wp.Start()
	defer wp.Stop()
	select {
	case at := <-ran:
		// Run-at is whole seconds, so the job may run up to a second early relative to start.
		if at.Sub(start) < 0 {
			t.Errorf("ran before it was due")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("scheduled job did not run")
	}
	select {
	case <-ran:
		t.Errorf("the deleted scheduled job ran")
	case <-time.After(1500 * time.Millisecond):
	}
}

// casePeriodic declares a job every second on two pools and checks each tick runs once.
func casePeriodic(t *testing.T, e *suiteEnv) {
	ns := e.ns("periodic")
	var mu sync.Mutex
	ids := map[string]int{}
	mk := func() *work.WorkerPool {
		wp := goredis.NewWorkerPool(tctx{}, 2, ns, e.client, fastOpts)
		wp.PeriodicallyEnqueue("* * * * * *", "tick")
		wp.Job("tick", func(j *work.Job) error {
			mu.Lock()
			ids[j.ID]++
			mu.Unlock()
			return nil
		})
		return wp
	}
	a, b := mk(), mk()
	a.Start()
	b.Start()
	defer a.Stop()
	defer b.Stop()
	eventually(t, 15*time.Second, "three ticks", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ids) >= 3
	})
	mu.Lock()
	defer mu.Unlock()
	for id, n := range ids {
		if n != 1 {
			t.Errorf("tick %s ran %d times", id, n)
		}
		if !strings.HasPrefix(id, "periodic:tick:") {
			t.Errorf("periodic job ID %q", id)
		}
	}
}

// caseMaxConcurrency runs jobs limited to 2 at a time over two pools.
func caseMaxConcurrency(t *testing.T, e *suiteEnv) {
	ns := e.ns("maxc")
	var running, peak, done atomic.Int64
	h := func(j *work.Job) error {
		n := running.Add(1)
		for {
			p := peak.Load()
			if n <= p || peak.CompareAndSwap(p, n) {
				break
			}
		}
		time.Sleep(40 * time.Millisecond)
		running.Add(-1)
		done.Add(1)
		return nil
	}
	var pools []*work.WorkerPool
	for i := 0; i < 2; i++ {
		wp := goredis.NewWorkerPool(tctx{}, 5, ns, e.client, fastOpts)
		wp.JobWithOptions("limited", work.JobOptions{MaxConcurrency: 2}, h)
		wp.Start()
		pools = append(pools, wp)
		defer wp.Stop()
	}
	enq := goredis.NewEnqueuer(ns, e.client)
	const n = 16
	for i := 0; i < n; i++ {
		if _, err := enq.Enqueue("limited", work.Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "every limited job to run", func() bool { return done.Load() == n })
	if p := peak.Load(); p > 2 {
		t.Errorf("peak concurrency %d, want at most 2", p)
	}
	for _, wp := range pools {
		wp.Drain()
	}
	qs, err := goredis.NewClient(ns, e.client).QueueStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 1 || qs[0].InFlight != 0 || qs[0].MaxConcurrency != 2 {
		t.Errorf("queue stats after the run: %+v", qs[0])
	}
}

// casePause pauses a queue through the Client: nothing runs until it is unpaused.
func casePause(t *testing.T, e *suiteEnv) {
	ns := e.ns("pause")
	cl := goredis.NewClient(ns, e.client)
	if err := cl.PauseQueue("p"); err != nil {
		t.Fatal(err)
	}
	var done atomic.Int64
	wp := goredis.NewWorkerPool(tctx{}, 2, ns, e.client, fastOpts)
	wp.Job("p", func(j *work.Job) error { done.Add(1); return nil })
	wp.Start()
	defer wp.Stop()
	enq := goredis.NewEnqueuer(ns, e.client)
	for i := 0; i < 3; i++ {
		if _, err := enq.Enqueue("p", work.Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(1200 * time.Millisecond)
	if done.Load() != 0 {
		t.Fatalf("%d jobs ran on a paused queue", done.Load())
	}
	qs, err := cl.QueueStats()
	if err != nil || len(qs) != 1 || !qs[0].Paused || qs[0].Count != 3 {
		t.Fatalf("QueueStats while paused: %v %v", qs, err)
	}
	if err := cl.UnpauseQueue("p"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 5*time.Second, "the unpaused jobs to run", func() bool { return done.Load() == 3 })
}

// caseClientListing checks what the Client sees of running pools and queues.
func caseClientListing(t *testing.T, e *suiteEnv) {
	ns := e.ns("listing")
	release := make(chan struct{})
	started := make(chan string, 1)
	wp := goredis.NewWorkerPool(tctx{}, 3, ns, e.client, fastOpts)
	wp.Job("block", func(j *work.Job) error {
		started <- j.ID
		<-release
		return nil
	})
	wp.Job("idle", func(j *work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	defer close(release)
	enq := goredis.NewEnqueuer(ns, e.client)
	job, err := enq.Enqueue("block", work.Q{"who": "me"})
	if err != nil {
		t.Fatal(err)
	}
	<-started
	cl := goredis.NewClient(ns, e.client)
	eventually(t, 10*time.Second, "a busy worker observation", func() bool {
		obs, err := cl.WorkerObservations()
		if err != nil {
			return false
		}
		for _, o := range obs {
			if o.IsBusy && o.JobID == job.ID && o.JobName == "block" && strings.Contains(o.ArgsJSON, "me") {
				return true
			}
		}
		return false
	})
	hbs, err := cl.WorkerPoolHeartbeats()
	if err != nil || len(hbs) != 1 {
		t.Fatalf("heartbeats: %v %v", hbs, err)
	}
	if hb := hbs[0]; strings.Join(hb.JobNames, ",") != "block,idle" || hb.Concurrency != 3 || len(hb.WorkerIDs) != 3 || hb.Pid != os.Getpid() {
		t.Errorf("heartbeat: %+v", hb)
	}
	for i := 0; i < 2; i++ {
		enq.EnqueueIn("block", 3600, nil)
	}
	sum, err := cl.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if sum.Queues != 2 || sum.InFlight != 1 || sum.Scheduled != 2 {
		t.Errorf("summary: %+v", sum)
	}
	loc, err := cl.FindJob(job.ID)
	if err != nil || loc == nil {
		t.Errorf("FindJob of the running job: %v %v", loc, err)
	}
}

// Crash recovery: a pool in a child process (this test binary, re-executed) takes jobs and blocks in
// them; the child is killed; a pool of this process puts the jobs back and runs them.

const (
	crashChildEnv = "GOREDIS_CRASH_CHILD_NS"
	crashModeEnv  = "GOREDIS_CRASH_MODE"
	crashAddrsEnv = "GOREDIS_CRASH_ADDRS"
)

func runCrashChild() int {
	ns := os.Getenv(crashChildEnv)
	addrs := strings.Split(os.Getenv(crashAddrsEnv), ",")
	var client redis.UniversalClient
	if os.Getenv(crashModeEnv) == "cluster" {
		client = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs})
	} else {
		client = redis.NewClient(&redis.Options{Addr: addrs[0]})
	}
	wp := goredis.NewWorkerPool(tctx{}, 5, ns, client, work.WorkerPoolOptions{HeartbeatInterval: time.Second})
	wp.Job("slow", func(j *work.Job) error {
		client.SAdd(context.Background(), ns+":started", j.ID)
		select {}
	})
	wp.Start()
	select {}
}

func caseCrash(t *testing.T, e *suiteEnv) {
	ns := e.ns("crash")
	enq := goredis.NewEnqueuer(ns, e.client)
	const n = 4
	for i := 0; i < n; i++ {
		if _, err := enq.Enqueue("slow", work.Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+ns, crashModeEnv+"="+e.mode, crashAddrsEnv+"="+strings.Join(e.addrs, ","))
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	eventually(t, 20*time.Second, "the child to start every job", func() bool {
		return rInt(t, e.client, "SCARD", ns+":started") == n
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	killed := time.Now()

	var done, retried atomic.Int64
	wp := goredis.NewWorkerPool(tctx{}, 5, ns, e.client, fastOpts)
	wp.Job("slow", func(j *work.Job) error {
		if j.Fails != 0 {
			retried.Add(1)
		}
		done.Add(1)
		return nil
	})
	wp.Start()
	defer wp.Stop()
	eventually(t, 30*time.Second, "the dead pool's jobs to run again", func() bool { return done.Load() == n })
	t.Logf("recovery after SIGKILL of the pool's process: %.1fs (DeadPoolTimeout 3s)", time.Since(killed).Seconds())
	if retried.Load() != 0 {
		t.Errorf("%d jobs came back with a failure counted", retried.Load())
	}
	wp.Drain()
	if got := rInt(t, e.client, "GET", ns+":jobs:slow:lock"); got != 0 {
		t.Errorf("lock after recovery: %d", got)
	}
	hbs, err := goredis.NewClient(ns, e.client).WorkerPoolHeartbeats()
	if err != nil || len(hbs) != 1 {
		t.Errorf("pools after recovery: %d %v", len(hbs), err)
	}
}

// The suite on one server, over both protocols go-redis speaks.

func TestSingleNodeSuite(t *testing.T) {
	for _, proto := range []int{2, 3} {
		proto := proto
		t.Run(map[int]string{2: "RESP2", 3: "RESP3"}[proto], func(t *testing.T) {
			c, s := singleClient(t, proto)
			runSuite(t, &suiteEnv{client: c, mode: "single", addrs: []string{s.Addr}, volume: 2000})
		})
	}
}
