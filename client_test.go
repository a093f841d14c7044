package work

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"sort"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// newTestClient returns a Client on a fresh namespace, the pool and the namespace's keyspace.
func newTestClient(t *testing.T) (*Client, *redis.Pool, rdb.Keyspace) {
	t.Helper()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	return NewClient(ns, pool), pool, rdb.NewKeyspace(ns)
}

func clientJobBytes(t *testing.T, j *Job) []byte {
	t.Helper()
	b, err := j.serialize()
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// subscribeWake subscribes to the namespace's wake-up channel; the caller closes the connection.
func subscribeWake(t *testing.T, pool *redis.Pool, ks rdb.Keyspace) redis.PubSubConn {
	t.Helper()
	psc := redis.PubSubConn{Conn: pool.Get()}
	if err := psc.Subscribe(ks.WakeChannel()); err != nil {
		t.Fatal(err)
	}
	if _, ok := psc.ReceiveWithTimeout(5 * time.Second).(redis.Subscription); !ok {
		t.Fatal("no subscription confirmation")
	}
	return psc
}

// nextWake returns the next message on a subscribed wake-up channel.
func nextWake(t *testing.T, psc redis.PubSubConn) string {
	t.Helper()
	switch m := psc.ReceiveWithTimeout(5 * time.Second).(type) {
	case redis.Message:
		return string(m.Data)
	case error:
		t.Fatalf("waiting for a wake-up: %v", m)
	default:
		t.Fatalf("waiting for a wake-up: got %#v", m)
	}
	return ""
}

func TestClientWorkerPoolHeartbeatsAreSortedAndListMissingHashesByID(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "SADD", ks.WorkerPools(), "p2", "p1", "missing", "wrongtype", "garbled")
	rdo(t, pool, "HSET", ks.Heartbeat("p2"), "heartbeat_at", 1700000010, "started_at", 1700000000,
		"job_names", "zeta,alpha", "concurrency", 10, "worker_ids", "w3,w1,w2", "host", "h2", "pid", 42)
	rdo(t, pool, "HSET", ks.Heartbeat("p1"), "heartbeat_at", 1700000011, "started_at", 1700000001,
		"job_names", "", "concurrency", 1, "worker_ids", "w9", "host", "h1", "pid", 7)
	rdo(t, pool, "SET", ks.Heartbeat("wrongtype"), "not a hash")
	rdo(t, pool, "HSET", ks.Heartbeat("garbled"), "heartbeat_at", "soon", "concurrency", "-3", "pid", "x",
		"host", "h3")

	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil {
		t.Fatal(err)
	}
	want := []*WorkerPoolHeartbeat{
		{WorkerPoolID: "garbled", JobNames: []string{}, Host: "h3", WorkerIDs: []string{}},
		{WorkerPoolID: "missing"},
		{WorkerPoolID: "p1", StartedAt: 1700000001, HeartbeatAt: 1700000011, JobNames: []string{},
			Concurrency: 1, Host: "h1", Pid: 7, WorkerIDs: []string{"w9"}},
		{WorkerPoolID: "p2", StartedAt: 1700000000, HeartbeatAt: 1700000010, JobNames: []string{"alpha", "zeta"},
			Concurrency: 10, Host: "h2", Pid: 42, WorkerIDs: []string{"w1", "w2", "w3"}},
		{WorkerPoolID: "wrongtype"},
	}
	if !reflect.DeepEqual(hbs, want) {
		got, _ := json.Marshal(hbs)
		exp, _ := json.Marshal(want)
		t.Fatalf("heartbeats:\n got %s\nwant %s", got, exp)
	}
}

func TestClientWorkerPoolHeartbeatsEmptyWithoutPools(t *testing.T) {
	t.Parallel()
	c, _, _ := newTestClient(t)
	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil || len(hbs) != 0 {
		t.Fatalf("got %v, %v; want none", hbs, err)
	}
}

func TestClientWorkerObservationsIncludeIdleWorkersInPoolOrder(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "SADD", ks.WorkerPools(), "pa", "pb", "gone")
	rdo(t, pool, "HSET", ks.Heartbeat("pa"), "heartbeat_at", 1, "worker_ids", "wc,wa")
	rdo(t, pool, "HSET", ks.Heartbeat("pb"), "heartbeat_at", 1, "worker_ids", "wb")
	rdo(t, pool, "HSET", ks.Worker("wb"), "job_name", "send", "job_id", "j1", "started_at", 1700000000,
		"args", `{"to":"x"}`, "checkin", "half way", "checkin_at", 1700000005)
	rdo(t, pool, "HSET", ks.Worker("wc"), "job_name", "other", "job_id", "j2", "started_at", 1700000001,
		"args", `null`)

	obs, err := c.WorkerObservations()
	if err != nil {
		t.Fatal(err)
	}
	// By pool ID, then by worker ID within the pool, as gocraft/work lists them.
	want := []*WorkerObservation{
		{WorkerID: "wa"},
		{WorkerID: "wc", IsBusy: true, JobName: "other", JobID: "j2", StartedAt: 1700000001, ArgsJSON: "null"},
		{WorkerID: "wb", IsBusy: true, JobName: "send", JobID: "j1", StartedAt: 1700000000, ArgsJSON: `{"to":"x"}`,
			Checkin: "half way", CheckinAt: 1700000005},
	}
	if !reflect.DeepEqual(obs, want) {
		got, _ := json.Marshal(obs)
		exp, _ := json.Marshal(want)
		t.Fatalf("observations:\n got %s\nwant %s", got, exp)
	}
}

func TestClientQueuesListsEveryKnownJobWithCountAndLatency(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	now := time.Now().Unix()
	rdo(t, pool, "SADD", ks.KnownJobs(), "charlie", "alpha", "bravo", "delta")
	// LPUSH puts the first pushed job at the tail: the oldest, next to be fetched.
	rdo(t, pool, "LPUSH", ks.Jobs("alpha"),
		clientJobBytes(t, &Job{Name: "alpha", ID: "a1", EnqueuedAt: now - 100}),
		clientJobBytes(t, &Job{Name: "alpha", ID: "a2", EnqueuedAt: now - 5}),
		clientJobBytes(t, &Job{Name: "alpha", ID: "a3", EnqueuedAt: now}))
	rdo(t, pool, "LPUSH", ks.Jobs("charlie"), `{"name":"charlie","t":"yesterday"`,
		clientJobBytes(t, &Job{Name: "charlie", ID: "c2", EnqueuedAt: now - 50}))
	rdo(t, pool, "LPUSH", ks.Jobs("delta"), clientJobBytes(t, &Job{Name: "delta", ID: "d1", EnqueuedAt: now + 3600}))

	qs, err := c.Queues()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 4 {
		t.Fatalf("got %d queues, want 4", len(qs))
	}
	names := []string{qs[0].JobName, qs[1].JobName, qs[2].JobName, qs[3].JobName}
	if !reflect.DeepEqual(names, []string{"alpha", "bravo", "charlie", "delta"}) {
		t.Fatalf("queues not sorted by name: %v", names)
	}
	if qs[0].Count != 3 || qs[0].Latency < 100 || qs[0].Latency > 160 {
		t.Errorf("alpha: got %+v, want count 3 and latency about 100", qs[0])
	}
	if *qs[1] != (Queue{JobName: "bravo"}) {
		t.Errorf("empty queue: got %+v", qs[1])
	}
	if *qs[2] != (Queue{JobName: "charlie", Count: 2}) {
		t.Errorf("queue with a malformed oldest job: got %+v, want count 2 latency 0", qs[2])
	}
	if *qs[3] != (Queue{JobName: "delta", Count: 1}) {
		t.Errorf("queue whose oldest job is from the future: got %+v, want latency 0", qs[3])
	}
}

func TestClientPauseQueueSetsThePausedKeyAndUnpauseWakesPools(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	if err := c.PauseQueue("mail"); err != nil {
		t.Fatal(err)
	}
	if v, _ := redis.String(rdo(t, pool, "GET", ks.Paused("mail")), nil); v != "1" {
		t.Fatalf("paused key holds %q, want \"1\"", v)
	}
	psc := subscribeWake(t, pool, ks)
	defer psc.Close()
	if err := c.UnpauseQueue("mail"); err != nil {
		t.Fatal(err)
	}
	if rInt(t, pool, "EXISTS", ks.Paused("mail")) != 0 {
		t.Error("paused key still there")
	}
	if got := nextWake(t, psc); got != "mail" {
		t.Errorf("wake-up message %q, want the job name", got)
	}
	if c.PauseQueue("") == nil || c.UnpauseQueue("") == nil {
		t.Error("an empty job name must be refused")
	}
}

func TestClientQueueStatsAndSummary(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	now := time.Now().Unix()
	rdo(t, pool, "SADD", ks.KnownJobs(), "beta", "alpha", "gamma")
	rdo(t, pool, "LPUSH", ks.Jobs("alpha"), clientJobBytes(t, &Job{Name: "alpha", ID: "a1", EnqueuedAt: now - 60}),
		clientJobBytes(t, &Job{Name: "alpha", ID: "a2", EnqueuedAt: now}))
	rdo(t, pool, "SET", ks.Paused("alpha"), "1")
	rdo(t, pool, "SET", ks.Lock("alpha"), "3")
	rdo(t, pool, "SET", ks.MaxConcurrency("alpha"), "5")
	rdo(t, pool, "SET", ks.Lock("beta"), "garbage")
	rdo(t, pool, "SET", ks.MaxConcurrency("beta"), "0")
	rdo(t, pool, "HSET", ks.Jobs("gamma"), "wrong", "type")
	rdo(t, pool, "ZADD", ks.Scheduled(), 1, "s")
	rdo(t, pool, "ZADD", ks.Retry(), 1, "r1", 2, "r2")
	rdo(t, pool, "ZADD", ks.Dead(), 1, "d1", 2, "d2", 3, "d3")
	rdo(t, pool, "ZADD", ks.Debounces(), 1, "mail\nb1", 2, "mail\nb2")

	qs, err := c.QueueStats()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != 3 {
		t.Fatalf("%d queues, want 3", len(qs))
	}
	if a := *qs[0]; a.JobName != "alpha" || a.Count != 2 || a.Latency < 60 || a.Latency > 120 || !a.Paused || a.InFlight != 3 || a.MaxConcurrency != 5 {
		t.Errorf("alpha: %+v", a)
	}
	if *qs[1] != (QueueStat{JobName: "beta"}) || *qs[2] != (QueueStat{JobName: "gamma"}) {
		t.Errorf("beta, gamma: %+v %+v", *qs[1], *qs[2])
	}
	s, err := c.Summary()
	if err != nil {
		t.Fatal(err)
	}
	if *s != (Summary{Queues: 3, Queued: 2, InFlight: 3, Paused: 1, Scheduled: 1, Debounced: 2, Retry: 2, Dead: 3}) {
		t.Errorf("summary %+v", *s)
	}
}

func TestClientJobStatsReadsPerMinuteCountsAcrossDays(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	// Two minutes on each side of a UTC midnight.
	midnight := time.Date(2024, 3, 1, 0, 0, 0, 0, time.UTC)
	day := midnight.Unix() / 86400
	m := midnight.Unix() / 60
	rdo(t, pool, "SADD", ks.KnownJobs(), "mail", "sms")
	rdo(t, pool, "HSET", ks.Stats("mail", day-1), fmt.Sprintf("p:%d", m-2), 5, fmt.Sprintf("f:%d", m-1), 2, fmt.Sprintf("p:%d", m-10), 99)
	rdo(t, pool, "HSET", ks.Stats("mail", day), fmt.Sprintf("p:%d", m), 7, fmt.Sprintf("f:%d", m), "garbage", fmt.Sprintf("p:%d", m+1), 1)
	rdo(t, pool, "HSET", ks.Stats("sms", day), fmt.Sprintf("p:%d", m), 10, fmt.Sprintf("f:%d", m+1), 4)

	since, until := midnight.Add(-2*time.Minute), midnight.Add(time.Minute+59*time.Second)
	pts, err := c.JobStats("mail", since, until)
	if err != nil {
		t.Fatal(err)
	}
	want := []StatPoint{
		{Time: midnight.Add(-2 * time.Minute), Processed: 5},
		{Time: midnight.Add(-time.Minute), Failed: 2},
		{Time: midnight, Processed: 7},
		{Time: midnight.Add(time.Minute), Processed: 1},
	}
	if !reflect.DeepEqual(pts, want) {
		t.Errorf("JobStats:\n got %+v\nwant %+v", pts, want)
	}
	pts, err = c.NamespaceStats(since, until)
	if err != nil {
		t.Fatal(err)
	}
	want[2].Processed, want[3].Failed = 17, 4
	if !reflect.DeepEqual(pts, want) {
		t.Errorf("NamespaceStats:\n got %+v\nwant %+v", pts, want)
	}
	if _, err := c.JobStats("mail", until, since); err == nil {
		t.Error("until before since must be refused")
	}
	if _, err := c.JobStats("", since, until); err == nil {
		t.Error("an empty job name must be refused")
	}
	pts, err = c.JobStats("mail", time.Unix(0, 0), until)
	if err != nil || len(pts) != 8*24*60 || !pts[len(pts)-1].Time.Equal(midnight.Add(time.Minute)) {
		t.Errorf("a range beyond 8 days is clamped: %d points, %v", len(pts), err)
	}
}

func TestClientJobStatsCountsWhatWorkersFinish(t *testing.T) {
	t.Parallel()
	c, pool, _ := newTestClient(t)
	ns := c.store.Ks.P[:len(c.store.Ks.P)-1]
	wp := NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.JobWithOptions("flaky", JobOptions{MaxFails: 1, SkipDead: true}, func(j *Job) error {
		if j.ArgBool("fail") {
			return errors.New("boom")
		}
		return nil
	})
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 5; i++ {
		if _, err := e.Enqueue("flaky", Q{"fail": i%3 == 0}); err != nil {
			t.Fatal(err)
		}
	}
	start := time.Now()
	wp.Start()
	wp.Drain()
	wp.Stop()
	var p, f int64
	eventually(t, 5*time.Second, "stats of 3 processed and 2 failed", func() bool {
		pts, err := c.JobStats("flaky", start.Add(-time.Minute), time.Now())
		if err != nil {
			t.Fatal(err)
		}
		p, f = 0, 0
		for _, pt := range pts {
			p, f = p+pt.Processed, f+pt.Failed
		}
		return p == 3 && f == 2
	})
}

func TestClientPeriodicJobsListsWhatLivePoolsDeclare(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	start := func() *WorkerPool {
		return bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).
			Job("report", func(*Job) error { return nil }).
			Job("sweep", func(*Job) error { return nil }).
			PeriodicallyEnqueue("0 0 * * * *", "report").
			PeriodicallyEnqueue("@every 1m", "sweep"))
	}
	a, b := start(), start()
	// A hash written by hand is skipped, not an error.
	rdo(t, pool, "SADD", bhvKey(ns, "worker_pools"), "junk")
	rdo(t, pool, "HSET", bhvKey(ns, "worker_pools", "junk"), "heartbeat_at", time.Now().Unix(), "periodic_jobs", "{not json")

	before := time.Now()
	got, err := NewClient(ns, pool).PeriodicJobs()
	if err != nil {
		t.Fatal(err)
	}
	// The next runs are computed from the call's own clock, somewhere between before and after: a
	// minute may turn meanwhile.
	after := time.Now()
	if len(got) != 2 {
		t.Fatalf("got %d periodic jobs, want 2: %+v", len(got), got)
	}
	ids := []string{a.workerPoolID, b.workerPoolID}
	sort.Strings(ids)
	// @every 1m is due before the top of the hour unless the hour starts within the minute.
	for _, pj := range got {
		if !reflect.DeepEqual(pj.WorkerPoolIDs, ids) {
			t.Errorf("%s: pools %v, want %v", pj.JobName, pj.WorkerPoolIDs, ids)
		}
		next := time.Unix(pj.NextRunAt, 0)
		if !next.After(before.Add(-time.Second)) {
			t.Errorf("%s: next run %v is not after now", pj.JobName, next)
		}
		switch pj.JobName {
		case "report":
			if pj.Spec != "0 0 * * * *" || next.Minute() != 0 || next.Second() != 0 || next.Sub(after) > time.Hour {
				t.Errorf("report: %+v (next %v)", pj, next)
			}
		case "sweep":
			if pj.Spec != "@every 1m" || next.Unix()%60 != 0 || next.Sub(after) > time.Minute {
				t.Errorf("sweep: %+v (next %v)", pj, next)
			}
		default:
			t.Errorf("unexpected %+v", pj)
		}
	}
	if got[0].NextRunAt > got[1].NextRunAt {
		t.Errorf("not sorted by next run: %+v, %+v", got[0], got[1])
	}
}

// A heartbeat reads the dead-after limit its pool declared, and Stale applies it (or the legacy
// limit to a pool that declares none); a pool's real heartbeat declares its DeadPoolTimeout as it
// starts, and 3s more once it is idle.
func TestWorkerPoolHeartbeatStaleAfterItsDeclaredLimit(t *testing.T) {
	t.Parallel()
	c, pool, ks := newTestClient(t)
	rdo(t, pool, "SADD", ks.WorkerPools(), "declared", "legacy")
	rdo(t, pool, "HSET", ks.Heartbeat("declared"), "heartbeat_at", 1700000000, "dead_after", 6)
	rdo(t, pool, "HSET", ks.Heartbeat("legacy"), "heartbeat_at", 1700000000)
	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil || len(hbs) != 2 {
		t.Fatalf("heartbeats %v, %v", hbs, err)
	}
	declared, legacy := hbs[0], hbs[1]
	if declared.DeadAfter != 6 || legacy.DeadAfter != 0 {
		t.Fatalf("DeadAfter %d and %d, want 6 and 0", declared.DeadAfter, legacy.DeadAfter)
	}
	at := time.Unix(1700000000, 0)
	for _, c := range []struct {
		hb    *WorkerPoolHeartbeat
		after time.Duration
		stale bool
	}{
		{declared, 6 * time.Second, false}, {declared, 7 * time.Second, true},
		{legacy, LegacyDeadAfter, false}, {legacy, LegacyDeadAfter + time.Second, true},
	} {
		if got := c.hb.Stale(at.Add(c.after)); got != c.stale {
			t.Errorf("pool %s, %v after its heartbeat: stale %v, want %v", c.hb.WorkerPoolID, c.after, got, c.stale)
		}
	}

	// A running pool declares its DeadPoolTimeout.
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPoolWithOptions(struct{}{}, 1, ns, pool, WorkerPoolOptions{DeadPoolTimeout: 42 * time.Second})
	wp.Job("x", func(*Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	hbs, err = NewClient(ns, pool).WorkerPoolHeartbeats()
	if err != nil || len(hbs) != 1 || hbs[0].DeadAfter != 42 || hbs[0].Idle {
		t.Fatalf("a running pool's heartbeats %+v (%v), want one declaring 42 s, not idle", hbs, err)
	}
	eventually(t, 30*time.Second, "the idle pool to declare 45 s", func() bool {
		hbs, err = NewClient(ns, pool).WorkerPoolHeartbeats()
		return err == nil && len(hbs) == 1 && hbs[0].DeadAfter == 45 && hbs[0].Idle
	})
}
