package work

import (
	"os"
	"os/exec"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/redistest"
)

// The crash tests run a worker pool in a child process (this test binary, re-executed) and kill it.

const crashChildEnv = "WORK_CRASH_CHILD_NS"

type crashCtx struct{}

// TestCrashChildProcess is the child's body: a pool whose handler marks the job started, then blocks
// until the process is killed. It does nothing in a normal run.
func TestCrashChildProcess(t *testing.T) {
	ns := os.Getenv(crashChildEnv)
	if ns == "" {
		t.Skip("only runs as the child of a crash test")
	}
	pool := newTestPool(t)
	wp := NewWorkerPool(crashCtx{}, 5, ns, pool)
	wp.Job("slow", func(j *Job) error {
		c := pool.Get()
		c.Do("SADD", ns+":started", j.ID)
		c.Close()
		select {}
	})
	wp.Start()
	select {}
}

func startCrashChild(t *testing.T, ns string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChildProcess$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashChildEnv+"="+ns, "WORK_TEST_REDIS="+testRedisAddr())
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

func TestCrashedPoolJobsAreRequeuedWithinSecondsWithoutBurningARetry(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the default dead-pool timeout")
	}
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	const n = 5
	for i := 0; i < n; i++ {
		if _, err := e.Enqueue("slow", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	child := startCrashChild(t, ns)
	eventually(t, 20*time.Second, "the child starts every job", func() bool {
		return rInt(t, pool, "SCARD", ns+":started") == n
	})
	childPools := rStrings(t, pool, "SMEMBERS", ns+":worker_pools")
	if len(childPools) != 1 {
		t.Fatalf("worker pools: %v", childPools)
	}
	childID := childPools[0]
	if got := rInt(t, pool, "LLEN", ns+":jobs:slow:"+childID+":inprogress"); got != n {
		t.Fatalf("in progress while the child runs: %d, want %d", got, n)
	}

	if err := child.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.Wait()
	killed := time.Now()

	// A pool with default timings takes the jobs over.
	var done, retried atomic.Int64
	wp := NewWorkerPool(crashCtx{}, 5, ns, pool)
	wp.Job("slow", func(j *Job) error {
		if j.Fails != 0 {
			retried.Add(1)
		}
		done.Add(1)
		return nil
	})
	wp.Start()
	defer wp.Stop()
	eventually(t, 30*time.Second, "the dead pool's jobs to run again", func() bool { return done.Load() == n })
	recovery := time.Since(killed)
	t.Logf("recovery after SIGKILL: %.1fs (default HeartbeatInterval 5s, DeadPoolTimeout 10s)", recovery.Seconds())
	if retried.Load() != 0 {
		t.Errorf("%d jobs came back with a failure counted", retried.Load())
	}
	wp.Drain()
	if got := rInt(t, pool, "EXISTS", ns+":jobs:slow:"+childID+":inprogress"); got != 0 {
		t.Errorf("dead pool's in-progress list still exists")
	}
	if got := rInt(t, pool, "SISMEMBER", ns+":worker_pools", childID); got != 0 {
		t.Errorf("dead pool still registered")
	}
	if got := rInt(t, pool, "HEXISTS", ns+":jobs:slow:lock_info", childID); got != 0 {
		t.Errorf("dead pool still holds lock_info")
	}
	if got := rInt(t, pool, "GET", ns+":jobs:slow:lock"); got != 0 {
		t.Errorf("lock after recovery: %d, want 0", got)
	}
}

// privateRedis starts a redis-server of the test's own, so that it can be frozen (its process
// signalled) without touching the other tests. It skips the test when redis-server is not installed.
func privateRedis(t *testing.T) (*redis.Pool, *os.Process) {
	t.Helper()
	s := redistest.Start(t, redistest.Options{})
	pool := &redis.Pool{MaxActive: 20, Wait: true, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", s.Addr) }}
	t.Cleanup(func() { pool.Close() })
	return pool, s.Process()
}

func TestFrozenRedisDoesNotGetLivePoolsReaped(t *testing.T) {
	if testing.Short() {
		t.Skip("freezes a redis-server for seconds")
	}
	t.Parallel()
	pool, server := privateRedis(t)
	ns := "frozen"
	opts := WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}
	var runs atomic.Int64
	release := make(chan struct{})
	a := NewWorkerPoolWithOptions(crashCtx{}, 1, ns, pool, opts)
	a.Job("long", func(j *Job) error {
		runs.Add(1)
		<-release
		return nil
	})
	b := NewWorkerPoolWithOptions(crashCtx{}, 1, ns, pool, opts)
	b.Job("long", func(j *Job) error {
		runs.Add(1)
		return nil
	})
	a.Start()
	defer a.Stop()
	if _, err := NewEnqueuer(ns, pool).Enqueue("long", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "pool a to start the job", func() bool { return runs.Load() == 1 })
	b.Start()
	defer b.Stop()
	time.Sleep(2 * time.Second) // both pools healthy and heartbeating

	// Freeze Redis for longer than DeadPoolTimeout: every heartbeat is late, none is missing.
	server.Signal(syscall.SIGSTOP)
	time.Sleep(5 * time.Second)
	server.Signal(syscall.SIGCONT)
	time.Sleep(4 * time.Second) // several heartbeat intervals after the thaw

	close(release)
	a.Drain()
	if got := runs.Load(); got != 1 {
		t.Fatalf("the job ran %d times; a live pool was reaped after Redis froze", got)
	}
}
