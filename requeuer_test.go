package work

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

func TestRequeuerMovesAScheduledJobOfAnUnregisteredNameToItsQueueForAnotherPool(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	sj, err := e.EnqueueIn("b", 0, Q{"x": 1})
	if err != nil {
		t.Fatal(err)
	}
	member := bhvZRange(t, pool, bhvKey(ns, "scheduled"))[0].Raw
	var ranA atomic.Int64
	a := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("a", func(*Job) error { ranA.Add(1); return nil }))
	eventually(t, 10*time.Second, "pool a to move job b onto its queue", func() bool {
		return rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "b")) == 1
	})
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 0 {
		t.Errorf("scheduled set holds %d jobs", n)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 0 {
		t.Errorf("a job pool a does not handle went to the dead set (%d)", n)
	}
	if got := rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", "b"), 0, -1)[0]; got != member {
		t.Errorf("queued payload %s, want the scheduled bytes %s", got, member)
	}
	// Pool a goes on with its own jobs meanwhile.
	if _, err := e.Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "pool a to run its job", func() bool { return ranA.Load() == 1 })
	a.Drain()
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "b")); n != 1 {
		t.Fatalf("job b left its queue before a pool handling b started (%d left)", n)
	}

	got := make(chan *Job, 1)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("b", func(j *Job) error { got <- j; return nil }))
	select {
	case j := <-got:
		if j.ID != sj.ID || j.ArgInt64("x") != 1 {
			t.Errorf("pool b ran %+v, want the scheduled job", j)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("pool b did not run job b")
	}
}

func TestRequeuerMovesADueRetryJobOfAnUnregisteredNameToItsQueueIntact(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("a", bhvNoop))
	now := time.Now().Unix()
	member := fmt.Sprintf(`{"name":"b","id":"r1","t":1,"args":{"n":1},"fails":2,"err":"earlier","failed_at":%d}`, now-100)
	rdo(t, pool, "ZADD", bhvKey(ns, "retry"), now-1, member)
	eventually(t, 10*time.Second, "the retry job on queue b", func() bool {
		return rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "b")) == 1
	})
	if got := rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", "b"), 0, -1)[0]; got != member {
		t.Errorf("queued %s, want the retry member verbatim %s", got, member)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) + rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 0 {
		t.Errorf("retry and dead sets hold %d jobs", n)
	}
}

func TestRequeuedRetryJobRunsWithItsFailureHistory(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan *Job, 1)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("r", func(j *Job) error { got <- j; return nil }))
	now := time.Now().Unix()
	rdo(t, pool, "ZADD", bhvKey(ns, "retry"), now-1,
		fmt.Sprintf(`{"name":"r","id":"r1","t":1,"args":null,"fails":2,"err":"earlier","failed_at":%d}`, now-100))
	select {
	case j := <-got:
		if j.ID != "r1" || j.Fails != 2 || j.LastErr != "earlier" || j.FailedAt != now-100 {
			t.Errorf("ran %+v", j)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the due retry job did not run")
	}
}

func TestRequeuerLeavesJobsThatAreNotDueYet(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	now := time.Now().Unix()
	future := `{"name":"f","id":"future","t":1,"args":null}`
	futureRetry := `{"name":"f","id":"future-retry","t":1,"args":null,"fails":1,"err":"x","failed_at":1}`
	rdo(t, pool, "ZADD", bhvKey(ns, "scheduled"), now+3600, future)
	rdo(t, pool, "ZADD", bhvKey(ns, "retry"), now+3600, futureRetry)
	rdo(t, pool, "ZADD", bhvKey(ns, "scheduled"), now-1, `{"name":"f","id":"due","t":1,"args":null}`)
	var ran atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("f", func(j *Job) error {
		if j.ID != "due" {
			t.Errorf("ran %s before it was due", j.ID)
		}
		ran.Add(1)
		return nil
	}))
	eventually(t, 10*time.Second, "the due job to run", func() bool { return ran.Load() == 1 })
	if m := bhvZRange(t, pool, bhvKey(ns, "scheduled")); len(m) != 1 || m[0].Raw != future {
		t.Errorf("scheduled set %+v, want the future job only", m)
	}
	if m := bhvZRange(t, pool, bhvKey(ns, "retry")); len(m) != 1 || m[0].Raw != futureRetry {
		t.Errorf("retry set %+v, want the future retry only", m)
	}
}

func TestRequeuerQueuesDueJobsBehindWaitingOnesInDueOrder(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	queue := bhvKey(ns, "jobs", "o")
	waiting := `{"name":"o","id":"waiting","t":1,"args":null}`
	rdo(t, pool, "LPUSH", queue, waiting)
	now := time.Now().Unix()
	job := func(id string) string { return fmt.Sprintf(`{"name":"o","id":"%s","t":1,"args":null}`, id) }
	rdo(t, pool, "ZADD", bhvKey(ns, "scheduled"), now-3, job("first"), now-2, job("second"), now-1, job("third"))
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("other", bhvNoop)) // does not handle o
	eventually(t, 10*time.Second, "the due jobs on queue o", func() bool { return rInt(t, pool, "LLEN", queue) == 4 })
	got := rStrings(t, pool, "LRANGE", queue, 0, -1)
	// Workers fetch from the tail: the waiting job first, then the due jobs in the order they fell due.
	want := []string{job("third"), job("second"), job("first"), waiting}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("queue (head to tail)\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestRequeuersOfSeveralPoolsMoveEachDueJobOnce(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	now := time.Now().Unix()
	const n = 2500 // more than one batch
	args := []interface{}{bhvKey(ns, "scheduled")}
	for i := 0; i < n; i++ {
		args = append(args, now-int64(i%50)-1, fmt.Sprintf(`{"name":"bulk","id":"s%d","t":1,"args":null}`, i))
	}
	rdo(t, pool, "ZADD", args...)
	for i := 0; i < 3; i++ {
		bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job(fmt.Sprintf("p%d", i), bhvNoop))
	}
	eventually(t, 20*time.Second, "every due job moved", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")) == 0
	})
	if got := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "bulk")); got != n {
		t.Errorf("queue holds %d jobs, want each of the %d once", got, n)
	}
	seen := map[string]bool{}
	for _, m := range rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", "bulk"), 0, -1) {
		if seen[m] {
			t.Fatalf("%s queued twice", m)
		}
		seen[m] = true
	}
}

func TestMalformedScheduledMembersGoToDeadWithoutBlockingLaterJobs(t *testing.T) {
	t.Parallel()
	testMalformedDueMembers(t, "scheduled")
}

func TestMalformedRetryMembersGoToDeadWithoutBlockingLaterJobs(t *testing.T) {
	t.Parallel()
	testMalformedDueMembers(t, "retry")
}

func testMalformedDueMembers(t *testing.T, set string) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	now := time.Now().Unix()
	bad := []string{
		"not json at all",
		`{"id":"no-name","t":1,"args":{}}`,
		"\xff\x00\xfe",
		`{"name":"s","id":"args-string","t":1,"args":"x"}`,
		`{"name":"s","id":"trailing","t":1,"args":{}} junk`,
	}
	args := []interface{}{bhvKey(ns, set)}
	for i, b := range bad {
		args = append(args, now-100+int64(i), b)
	}
	good := `{"name":"s","id":"good","t":1,"args":{"ok":true},"fails":1,"err":"x","failed_at":1}`
	args = append(args, now-5, good)
	rdo(t, pool, "ZADD", args...)
	got := make(chan *Job, 1)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("s", func(j *Job) error { got <- j; return nil }))
	select {
	case j := <-got:
		if j.ID != "good" || !j.ArgBool("ok") {
			t.Errorf("ran %+v", j)
		}
	case <-time.After(15 * time.Second):
		t.Fatalf("the good member behind malformed ones in %s did not run", set)
	}
	eventually(t, 10*time.Second, "the malformed members in the dead set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == int64(len(bad))
	})
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, set)); n != 0 {
		t.Errorf("%s set still holds %d members", set, n)
	}
	want := map[string]bool{}
	for _, b := range bad {
		want[b] = true
	}
	for _, m := range bhvZRange(t, pool, bhvKey(ns, "dead")) {
		j := bhvDecode(t, m.Raw)
		if !want[string(j.Raw)] {
			t.Errorf("dead record %s: Raw %q is not one of the malformed members", m.Raw, j.Raw)
		}
		delete(want, string(j.Raw))
		if j.LastErr == "" || j.FailedAt == 0 {
			t.Errorf("dead record %s has no reason or time", m.Raw)
		}
	}
	if len(want) != 0 {
		t.Errorf("malformed members missing from the dead set: %v", want)
	}
}

// dueHintPool starts a pool whose own looks at Redis are minutes apart, so a scheduled or retry job
// can only run promptly if the requeuer is told when it is due.
func dueHintPool(t *testing.T, pool *redis.Pool, ns string, handler func(*Job) error, opts JobOptions) {
	t.Helper()
	bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{
		HeartbeatInterval: 2 * time.Minute, SleepBackoffs: []int64{300000},
	}).JobWithOptions("a", opts, handler))
	eventually(t, 10*time.Second, "the pool to listen for due jobs", func() bool {
		r, err := redis.Values(rdo(t, pool, "PUBSUB", "NUMSUB", ns+":due"), nil)
		if err != nil || len(r) != 2 {
			return false
		}
		n, _ := redis.Int64(r[1], nil)
		return n >= 1
	})
}

func TestScheduledJobsRunWhenDueWithoutPolling(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ran := make(chan string, 3)
	dueHintPool(t, pool, ns, func(j *Job) error { ran <- j.ID; return nil }, JobOptions{})
	// Two jobs written by another program (no hint) and one by an Enqueuer: the pass for the
	// Enqueuer's job learns when the others are due.
	now := time.Now().Unix()
	rdo(t, pool, "ZADD", bhvKey(ns, "scheduled"), now+2, `{"name":"a","id":"raw2","t":1,"args":null}`)
	rdo(t, pool, "ZADD", bhvKey(ns, "scheduled"), now+3, `{"name":"a","id":"raw3","t":1,"args":null}`)
	sj, err := NewEnqueuer(ns, pool).EnqueueIn("a", 1, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{sj.ID: true, "raw2": true, "raw3": true}
	for range want {
		select {
		case id := <-ran:
			if !want[id] {
				t.Fatalf("ran %q", id)
			}
			delete(want, id)
		case <-time.After(30 * time.Second):
			t.Fatalf("jobs %v did not run", want)
		}
	}
}

func TestRetriesRunWhenDueWithoutPolling(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var attempts atomic.Int64
	dueHintPool(t, pool, ns, func(*Job) error {
		if attempts.Add(1) == 1 {
			return fmt.Errorf("first attempt fails")
		}
		return nil
	}, JobOptions{MaxFails: 3, Backoff: func(*Job) int64 { return 1 }})
	if _, err := NewEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the retry to run", func() bool { return attempts.Load() == 2 })
}

// The alarm keeps the soonest pass asked for, and take clears it once it is due.
func TestDueAlarmKeepsTheSoonestPass(t *testing.T) {
	a := newDueAlarm()
	if got := a.take(); got != -1 {
		t.Fatalf("take on a new alarm = %v, want -1 (none wanted)", got)
	}
	a.in(time.Hour)
	a.in(2 * time.Hour) // later: ignored
	if got := a.take(); got <= 0 || got > time.Hour {
		t.Fatalf("take = %v, want up to an hour", got)
	}
	a.at(time.Now().Add(-time.Second)) // sooner, and due
	if got := a.take(); got != 0 {
		t.Fatalf("take of a due alarm = %v, want 0", got)
	}
	if got := a.take(); got != -1 {
		t.Fatalf("take after a due pass = %v, want -1", got)
	}
}

// A requeuer built alone moves a due scheduled job to its queue and sets the alarm for the next.
func TestRequeuerAloneMovesDueJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	job := &Job{Name: "alone", ID: "j1", EnqueuedAt: 1}
	raw, err := job.serialize()
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().Unix()
	rdo(t, pool, "ZADD", ns+":scheduled", now-10, raw)
	rdo(t, pool, "ZADD", ns+":scheduled", now+3600, "later")
	alarm, due := newDueAlarm(), make(chan struct{}, 1)
	q := newRequeuer(requeuerParams{ctx: context.Background(), store: rdb.NewStore(ns, PoolBackend(pool)),
		logger: slog.Default(), alarm: alarm, schedulesDue: due})
	q.pass()
	if got := rStrings(t, pool, "LRANGE", ns+":jobs:alone", 0, -1); len(got) != 1 || got[0] != string(raw) {
		t.Fatalf("queue holds %q, want the due job", got)
	}
	if wait := alarm.take(); wait <= 0 || wait > time.Hour+time.Minute {
		t.Fatalf("alarm in %v, want about an hour (the later member)", wait)
	}
	select {
	case <-due:
		t.Fatal("told the scheduler of due schedules, and none is stored")
	default:
	}
}
