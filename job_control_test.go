package work

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

type controlCtx struct{}

func TestEnqueueAtSchedulesAtTheGivenSecond(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	at := time.Now().Add(90 * time.Minute)
	sj, err := NewEnqueuer(ns, pool).EnqueueAt("x", at, Q{"a": 1})
	if err != nil {
		t.Fatal(err)
	}
	if sj.RunAt != at.Unix() {
		t.Fatalf("RunAt %d, want %d", sj.RunAt, at.Unix())
	}
	if score := rInt(t, pool, "ZSCORE", ns+":scheduled", mustJSON(t, sj.Job)); score != at.Unix() {
		t.Fatalf("scheduled score %d, want %d", score, at.Unix())
	}
}

func mustJSON(t *testing.T, j *Job) string {
	t.Helper()
	b, err := j.serialize()
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestUniqueTTLSetsTheLockLifetime(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	e.UniqueTTL = 90 * time.Second
	j, err := e.EnqueueUnique("u", Q{"k": 1})
	if err != nil || j == nil {
		t.Fatalf("enqueue: %v %v", j, err)
	}
	if ttl := rInt(t, pool, "TTL", j.UniqueKey); ttl <= 0 || ttl > 90 {
		t.Fatalf("lock TTL %d, want at most 90", ttl)
	}
	e2 := NewEnqueuer(ns, pool)
	j2, _ := e2.EnqueueUnique("u", Q{"k": 2})
	if ttl := rInt(t, pool, "TTL", j2.UniqueKey); ttl <= 90 {
		t.Fatalf("default lock TTL %d, want 24h", ttl)
	}
}

func TestRateLimitHoldsAcrossTwoPoolsWithoutBurningRetries(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	const limit, jobs = 20, 60
	var mu sync.Mutex
	var starts []time.Time
	var retried atomic.Int64
	opts := JobOptions{RateLimit: RateLimit{Jobs: limit, Period: time.Second}}
	h := func(j *Job) error {
		if j.Fails != 0 {
			retried.Add(1)
		}
		mu.Lock()
		starts = append(starts, time.Now())
		mu.Unlock()
		return nil
	}
	var batch []BatchJob
	for i := 0; i < jobs; i++ {
		batch = append(batch, BatchJob{Name: "limited", Args: Q{"i": i}})
	}
	if _, err := NewEnqueuer(ns, pool).EnqueueBatch(batch); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		wp := NewWorkerPool(controlCtx{}, 10, ns, pool)
		wp.JobWithOptions("limited", opts, h)
		wp.Start()
		defer wp.Stop()
	}
	eventually(t, 20*time.Second, "every limited job to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(starts) == jobs
	})
	mu.Lock()
	defer mu.Unlock()
	// A burst of 20, then 20 a second: 60 jobs cannot all start in much less than 2 seconds, however
	// many pools there are. Tolerant bound: the span of the starts is over 1.5s.
	first, last := starts[0], starts[0]
	for _, s := range starts {
		if s.Before(first) {
			first = s
		}
		if s.After(last) {
			last = s
		}
	}
	if span := last.Sub(first); span < 1500*time.Millisecond {
		t.Fatalf("%d jobs limited to %d/s started within %v", jobs, limit, span)
	}
	if retried.Load() != 0 || rInt(t, pool, "ZCARD", ns+":retry") != 0 {
		t.Fatal("throttled jobs burned a retry")
	}
}

func TestDeadSetTrimmingBySizeAndAgeOnALargeSet(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	now := time.Now().Unix()
	const total = 200000
	c := pool.Get()
	for i := 0; i < total; i++ {
		// The first 50,000 died ten days ago; the rest within the last day, oldest first.
		score := now - 86400 + int64(i%80000)
		if i < 50000 {
			score = now - 10*86400 + int64(i)
		}
		c.Send("ZADD", ns+":dead", score, `{"name":"d","id":"`+makeIdentifier()+`","t":1,"args":null}`)
		if i%5000 == 4999 {
			if _, err := c.Do(""); err != nil {
				t.Fatal(err)
			}
		}
	}
	c.Do("")
	c.Close()

	wp := NewWorkerPoolWithOptions(controlCtx{}, 1, ns, pool, WorkerPoolOptions{DeadMaxJobs: 100000, DeadMaxAge: 7 * 24 * time.Hour})
	wp.Job("d", func(*Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	eventually(t, 30*time.Second, "the dead set trimmed to 100,000", func() bool {
		return rInt(t, pool, "ZCARD", ns+":dead") == 100000
	})
	if old := rInt(t, pool, "ZCOUNT", ns+":dead", "-inf", now-7*86400); old != 0 {
		t.Fatalf("%d jobs older than the age limit remain", old)
	}
	trimmed, err := NewClient(ns, pool).DeadJobsTrimmed()
	if err != nil || trimmed != 100000 {
		t.Fatalf("DeadJobsTrimmed = %d, %v; want 100000", trimmed, err)
	}
}

func TestListedJobsRoundTripThroughJSON(t *testing.T) {
	in := `{"retry_at":99,"name":"x","id":"a","t":1,"args":{"big":12345678901234567890},"fails":2}`
	var r RetryJob
	if err := json.Unmarshal([]byte(in), &r); err != nil || r.RetryAt != 99 || r.Job == nil || r.Fails != 2 || r.Name != "x" {
		t.Fatalf("RetryJob: %+v %v", r, err)
	}
	out, _ := json.Marshal(&r)
	if string(out) != in {
		t.Fatalf("RetryJob re-encoded as %s", out)
	}
	var s ScheduledJob
	if err := json.Unmarshal([]byte(`{"run_at":7,"name":"y","id":"b","t":1,"args":null}`), &s); err != nil || s.RunAt != 7 || s.Name != "y" {
		t.Fatalf("ScheduledJob: %+v %v", s, err)
	}
	var d DeadJob
	if err := json.Unmarshal([]byte(`{"died_at":5,"name":"z","id":"c","t":1,"args":null}`), &d); err != nil || d.DiedAt != 5 || d.Name != "z" {
		t.Fatalf("DeadJob: %+v %v", d, err)
	}
	var list []*DeadJob
	if err := json.Unmarshal([]byte(`[{"died_at":5,"name":"z","id":"c","t":1,"args":null}]`), &list); err != nil || list[0].DiedAt != 5 {
		t.Fatalf("[]*DeadJob: %v", err)
	}
}
