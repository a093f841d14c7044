package work

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// CancelJob travels over Redis pub/sub, so it must reach a pool in another process: these tests run
// the pool in a child process (this test binary, re-executed) and cancel from the parent.

const cancelChildEnv = "WORK_CANCEL_CHILD_NS"

type cancelProcCtx struct{}

// TestCancelChildProcess is the child's body: a pool of one worker whose "long" handler either
// returns at once (args block=false) or blocks until its context is cancelled, recording both in
// Redis under <ns>:test:*. It stops its pool and exits on SIGTERM or when its stdin closes. It does
// nothing in a normal run.
func TestCancelChildProcess(t *testing.T) {
	ns := os.Getenv(cancelChildEnv)
	if ns == "" {
		t.Skip("only runs as the child of a cancel test")
	}
	pool := newTestPool(t)
	record := func(cmd string, args ...interface{}) {
		c := pool.Get()
		defer c.Close()
		if _, err := c.Do(cmd, args...); err != nil {
			t.Errorf("%s: %v", cmd, err)
		}
	}
	wp := NewWorkerPool(cancelProcCtx{}, 1, ns, pool)
	// MaxFails 5: a cancel must send the job to the dead set at once, not after retries. MaxConcurrency
	// 1 keeps a second job in the queue (not fetched ahead) while the first runs.
	wp.JobWithOptions("long", JobOptions{MaxFails: 5, MaxConcurrency: 1}, func(ctx context.Context, j *Job) error {
		if !j.ArgBool("block") {
			record("RPUSH", ns+":test:ran", j.ID)
			return nil
		}
		record("RPUSH", ns+":test:started", j.ID)
		<-ctx.Done()
		cause := context.Cause(ctx)
		record("HSET", ns+":test:stopped", "id", j.ID, "err", ctx.Err().Error(), "cause", cause.Error(),
			"is_cancelled", strconv.FormatBool(errors.Is(cause, ErrJobCancelled)))
		return ctx.Err()
	})
	wp.Start()

	sig, stopSignals := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stopSignals()
	// A non-blocking stdin goes through the poller, so closing it ends the read below: the child
	// leaves no goroutine behind for goleak whichever way it is told to stop.
	if err := syscall.SetNonblock(0, true); err != nil {
		t.Fatal(err)
	}
	stdin := os.NewFile(0, "stdin")
	eof := make(chan struct{})
	go func() {
		defer close(eof)
		io.Copy(io.Discard, stdin)
	}()
	select {
	case <-sig.Done():
	case <-eof:
	}
	stdin.Close()
	<-eof
	// Stop waits for running jobs; a parent that gave up must not leave the child blocked in one.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	wp.StopContext(ctx)
}

type cancelChild struct {
	cmd    *exec.Cmd
	out    bytes.Buffer // stdout and stderr; read only after exited
	exited chan struct{}
	err    error // Wait's result, set before exited closes
}

// startCancelChild starts a child pool in ns. It is stopped (stdin closed, then killed) when the test
// ends, and its output is logged if the test failed.
func startCancelChild(t *testing.T, ns string) *cancelChild {
	t.Helper()
	ch := &cancelChild{exited: make(chan struct{})}
	ch.cmd = exec.Command(os.Args[0], "-test.run=^TestCancelChildProcess$", "-test.count=1", "-test.v")
	// atexit_sleep_ms=0: a -race child would otherwise sleep a second before exiting.
	ch.cmd.Env = append(os.Environ(), cancelChildEnv+"="+ns, "WORK_TEST_REDIS="+testRedisAddr(),
		"GORACE="+strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	ch.cmd.Stdout, ch.cmd.Stderr = &ch.out, &ch.out
	stdin, err := ch.cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ch.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		ch.err = ch.cmd.Wait()
		close(ch.exited)
	}()
	t.Cleanup(func() {
		stdin.Close()
		select {
		case <-ch.exited:
		case <-time.After(20 * time.Second):
			ch.cmd.Process.Kill()
			<-ch.exited
		}
		if t.Failed() {
			t.Logf("child output:\n%s", ch.out.String())
		}
	})
	return ch
}

// stop sends SIGTERM and waits for a clean exit (the child's own goleak check included).
func (ch *cancelChild) stop(t *testing.T) {
	t.Helper()
	if err := ch.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-ch.exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the child did not exit within 30s of SIGTERM")
	}
	if ch.err != nil {
		t.Fatalf("child exited with %v:\n%s", ch.err, ch.out.String())
	}
}

func cancelSubscribers(t *testing.T, pool *redis.Pool, ns string) int64 {
	t.Helper()
	v, err := redis.Values(rdo(t, pool, "PUBSUB", "NUMSUB", ns+":cancel"), nil)
	if err != nil || len(v) != 2 {
		t.Fatalf("PUBSUB NUMSUB: %v %v", v, err)
	}
	n, _ := redis.Int64(v[1], nil)
	return n
}

func wantCancelHeard(t *testing.T, client *Client, id string, want int64) {
	t.Helper()
	n, err := client.CancelJob(id)
	if err != nil || n != want {
		t.Fatalf("CancelJob(%q) = %d, %v; want %d pools heard, nil", id, n, err, want)
	}
}

func TestCancelJobCancelsAJobRunningInAnotherProcess(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	client := NewClient(ns, pool)
	e := NewEnqueuer(ns, pool)
	since := time.Now()
	queue := ns + ":jobs:long"

	a, err := e.Enqueue("long", Q{"block": true})
	if err != nil {
		t.Fatal(err)
	}
	// No pool listens yet: nobody hears the request and the queued job is not affected.
	wantCancelHeard(t, client, a.ID, 0)
	if got := rInt(t, pool, "LLEN", queue); got != 1 {
		t.Fatalf("queue length after cancelling a queued job with no pool: %d, want 1", got)
	}

	child := startCancelChild(t, ns)
	eventually(t, 30*time.Second, "the child to start the job", func() bool {
		return rInt(t, pool, "LLEN", ns+":test:started") == 1
	})
	// The pool subscribes apart from fetching; wait for it so that CancelJob's count is exact.
	eventually(t, 30*time.Second, "the child's pool to subscribe to <ns>:cancel", func() bool {
		return cancelSubscribers(t, pool, ns) == 1
	})
	pools := rStrings(t, pool, "SMEMBERS", ns+":worker_pools")
	if len(pools) != 1 {
		t.Fatalf("worker pools: %v", pools)
	}
	childID := pools[0]
	inProgress := ns + ":jobs:long:" + childID + ":inprogress"
	if lock, info, inp := rInt(t, pool, "GET", queue+":lock"), rInt(t, pool, "HGET", queue+":lock_info", childID),
		rInt(t, pool, "LLEN", inProgress); lock != 1 || info != 1 || inp != 1 {
		t.Fatalf("while running: lock %d, lock_info %d, in-progress %d; want 1, 1, 1", lock, info, inp)
	}

	// A second job waits in the queue behind the first (the child has one worker). Cancelling it, or
	// an ID no job has, reaches the pool but affects nothing.
	b, err := e.Enqueue("long", Q{"block": false})
	if err != nil {
		t.Fatal(err)
	}
	wantCancelHeard(t, client, b.ID, 1)
	wantCancelHeard(t, client, "000000000000000000000000", 1)
	// A wrong cancel of the running job would show within this pause; it cannot fail a correct run.
	time.Sleep(300 * time.Millisecond)
	if got := rInt(t, pool, "EXISTS", ns+":test:stopped"); got != 0 {
		t.Fatalf("the running job was cancelled by a request for another ID: %v",
			rStrings(t, pool, "HGETALL", ns+":test:stopped"))
	}
	if got := rInt(t, pool, "LLEN", queue); got != 1 {
		t.Fatalf("queue length after cancelling the queued job: %d, want 1", got)
	}

	wantCancelHeard(t, client, a.ID, 1)
	eventually(t, 30*time.Second, "the child's handler to see its context cancelled", func() bool {
		return rInt(t, pool, "EXISTS", ns+":test:stopped") == 1
	})
	stopped, err := redis.StringMap(rdo(t, pool, "HGETALL", ns+":test:stopped"), nil)
	if err != nil {
		t.Fatal(err)
	}
	if stopped["id"] != a.ID || stopped["err"] != context.Canceled.Error() ||
		stopped["cause"] != ErrJobCancelled.Error() || stopped["is_cancelled"] != "true" {
		t.Fatalf("in the child: %v; want id %s, err %q, cause ErrJobCancelled", stopped, a.ID, context.Canceled)
	}

	// The worker is free again: the queued job runs, untouched by its earlier cancel.
	eventually(t, 30*time.Second, "the queued job to run and both outcomes to be recorded", func() bool {
		return rInt(t, pool, "LLEN", ns+":test:ran") == 1 && rInt(t, pool, "ZCARD", ns+":dead") == 1 &&
			rInt(t, pool, "LLEN", inProgress) == 0 && rInt(t, pool, "GET", queue+":lock") == 0
	})
	if ran := rStrings(t, pool, "LRANGE", ns+":test:ran", 0, -1); ran[0] != b.ID {
		t.Fatalf("ran %v, want the queued job %s", ran, b.ID)
	}
	if started := rStrings(t, pool, "LRANGE", ns+":test:started", 0, -1); len(started) != 1 {
		t.Fatalf("the cancelled job started %d times: %v", len(started), started)
	}

	// Documented end state: dead with err "cancelled", no retry, nothing queued or held.
	dead, total, err := client.DeadJobs(1)
	if err != nil || total != 1 {
		t.Fatalf("DeadJobs: %d, %v", total, err)
	}
	if d := dead[0]; d.ID != a.ID || d.Name != "long" || d.LastErr != "cancelled" || d.Fails != 1 ||
		d.FailedAt == 0 || d.DiedAt == 0 || !d.ArgBool("block") {
		t.Fatalf("dead job %+v, died at %d; want %s with err \"cancelled\", fails 1", *d.Job, d.DiedAt, a.ID)
	}
	for key, want := range map[string]int64{"retry": 0, "scheduled": 0} {
		if got := rInt(t, pool, "ZCARD", ns+":"+key); got != want {
			t.Errorf("%s set: %d jobs, want %d", key, got, want)
		}
	}
	if got := rInt(t, pool, "LLEN", queue); got != 0 {
		t.Errorf("queue: %d jobs, want 0", got)
	}
	if got := rInt(t, pool, "EXISTS", inProgress); got != 0 {
		t.Errorf("the child's in-progress list still exists")
	}
	if lock, info := rInt(t, pool, "GET", queue+":lock"), rInt(t, pool, "HGET", queue+":lock_info", childID); lock != 0 || info != 0 {
		t.Errorf("after both jobs: lock %d, lock_info %d; want 0, 0", lock, info)
	}
	// Stats are summed and written at most once a second.
	var processed, failed int64
	eventually(t, 10*time.Second, "the stats of both jobs", func() bool {
		points, err := client.JobStats("long", since, time.Now())
		if err != nil {
			t.Fatal(err)
		}
		processed, failed = 0, 0
		for _, p := range points {
			processed, failed = processed+p.Processed, failed+p.Failed
		}
		return processed+failed >= 2
	})
	if processed != 1 || failed != 1 {
		t.Errorf("stats: processed %d, failed %d; want 1, 1", processed, failed)
	}

	// A finished job is not running: the request is heard and changes nothing.
	wantCancelHeard(t, client, a.ID, 1)
	if _, total, err := client.DeadJobs(1); err != nil || total != 1 {
		t.Errorf("dead jobs after cancelling a dead job: %d, %v", total, err)
	}

	child.stop(t)
	if got := rInt(t, pool, "SISMEMBER", ns+":worker_pools", childID); got != 0 {
		t.Errorf("the stopped child's pool is still registered")
	}
	if got := cancelSubscribers(t, pool, ns); got != 0 {
		t.Errorf("%d subscribers to <ns>:cancel after the child stopped", got)
	}
	wantCancelHeard(t, client, a.ID, 0)
}
