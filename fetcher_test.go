package work

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// commandStats returns INFO commandstats calls by command (cmdstat_ left out; script-internal
// commands included), without the test's own INFO and CONFIG calls.
func commandStats(t *testing.T, pool *redis.Pool) map[string]int64 {
	t.Helper()
	info, err := redis.String(rdo(t, pool, "INFO", "commandstats"), nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		name, found := strings.CutPrefix(name, "cmdstat_")
		if !ok || !found || strings.HasPrefix(name, "info") || strings.HasPrefix(name, "config") {
			continue
		}
		n, _ := strconv.ParseInt(strings.SplitN(rest, ",", 2)[0], 10, 64)
		calls[name] = n
	}
	return calls
}

// commandCalls sums commandStats and reports the HSET calls apart: an idle pool runs one a
// heartbeat (of its own heartbeat hash) and no other.
func commandCalls(t *testing.T, pool *redis.Pool) (total, beats int64) {
	t.Helper()
	calls := commandStats(t, pool)
	for _, n := range calls {
		total += n
	}
	return total, calls["hset"]
}

// An idle pool sends one script per heartbeat and the script runs five commands (TIME, HSET of its
// heartbeat, SMEMBERS, EXISTS), whatever its concurrency and number of job names: no per-worker or
// per-queue polling, and no more with schedules stored, none of them due. Beats are counted by HSET,
// one a beat in an idle pool.
func TestIdlePoolCostsFiveCommandsPerHeartbeat(t *testing.T) {
	for _, stored := range []int{0, 500} {
		t.Run(fmt.Sprintf("%d schedules", stored), func(t *testing.T) { testIdlePoolCost(t, stored) })
	}
}

func testIdlePoolCost(t *testing.T, schedules int) {
	pool, _ := privateRedis(t)
	ns := newTestNamespace(t, pool)
	var list []Schedule
	for i := range schedules {
		list = append(list, Schedule{ID: fmt.Sprintf("s%d", i), Spec: "0 0 0 1 1 *", JobName: "a"})
	}
	if err := NewClient(ns, pool).SetSchedules(list); err != nil {
		t.Fatal(err)
	}
	wp := NewWorkerPoolWithOptions(bhvCtx{}, 100, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Second})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		wp.Job(name, func(*Job) error { return nil })
	}
	bhvStart(t, wp)
	// Let the start-up looks pass: the pool is idle once heartbeats come alone.
	eventually(t, 30*time.Second, "the pool to settle", func() bool {
		rdo(t, pool, "CONFIG", "RESETSTAT")
		time.Sleep(2500 * time.Millisecond)
		total, beats := commandCalls(t, pool)
		return beats >= 1 && total <= 5*beats
	})
	rdo(t, pool, "CONFIG", "RESETSTAT")
	eventually(t, 60*time.Second, "six heartbeats", func() bool {
		_, beats := commandCalls(t, pool)
		return beats >= 6
	})
	total, beats := commandCalls(t, pool)
	// A look of the fetcher may fall in the window, nothing more.
	if total > 5*beats+2 {
		t.Errorf("idle pool, %d schedules: %d commands over %d heartbeats, want at most 5 per heartbeat", schedules, total, beats)
	}
}

// Idle pools of one namespace each read two peers' heartbeats a beat (rdb.WatchedPeers), however many
// they are: a beat of each of n pools reading the n-1 others made the pools' idle cost grow with the
// square of their number.
func TestIdlePoolsReadTwoPeersAHeartbeat(t *testing.T) {
	pool, _ := privateRedis(t)
	ns := newTestNamespace(t, pool)
	for range 6 {
		bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Second}).
			Job("a", func(*Job) error { return nil }))
	}
	calls := func() (beats, peers int64) {
		t.Helper()
		c := commandStats(t, pool)
		return c["hset"], c["hmget"]
	}
	// Past the start-up, whose beats read every pool while the registered pools change.
	eventually(t, 30*time.Second, "the pools to settle", func() bool {
		rdo(t, pool, "CONFIG", "RESETSTAT")
		time.Sleep(2500 * time.Millisecond)
		beats, peers := calls()
		return beats >= 6 && peers <= 2*beats
	})
	rdo(t, pool, "CONFIG", "RESETSTAT")
	eventually(t, 60*time.Second, "thirty heartbeats", func() bool {
		beats, _ := calls()
		return beats >= 30
	})
	if beats, peers := calls(); peers > 2*beats {
		t.Errorf("%d reads of peers' heartbeats over %d heartbeats, want at most 2 a heartbeat", peers, beats)
	}
}

// A job pushed onto a queue by another program (no wake-up) is found by the heartbeat's look, even
// when the pool's own looks are a minute apart.
func TestHeartbeatFindsAJobPushedWithoutWakeUp(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{
		HeartbeatInterval: time.Second, SleepBackoffs: []int64{60000},
	}).Job("a", func(*Job) error { ran.Add(1); return nil }))
	if _, err := NewEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the enqueued job to run", func() bool { return ran.Load() == 1 })
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "a"), `{"name":"a","id":"pushed1","t":1,"args":null}`)
	eventually(t, 20*time.Second, "the pushed job to run", func() bool { return ran.Load() == 2 })
}

// A pool whose jobs are slow holds no more than its concurrency (the jobs it runs, none fetched
// ahead), so other pools can take the rest; quick jobs may be fetched further ahead.
//
// What the pool holds is counted as the jobs gone from the queue less the handlers that returned: the
// in-progress list would also count finished jobs whose acknowledgement has not landed yet. The queue
// is read before the count, so a reading can only undercount what the pool held at that moment.
func TestPoolOfSlowJobsFetchesAheadAtMostItsConcurrency(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var quick, slow atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).
		Job("quick", func(*Job) error { quick.Add(1); return nil }).
		Job("slow", func(*Job) error { time.Sleep(20 * time.Millisecond); slow.Add(1); return nil }))
	// Quick jobs first, so the pool has fetched further ahead before jobs turn slow.
	for i := 0; i < 200; i++ {
		if _, err := e.Enqueue("quick", nil); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 20*time.Second, "the quick jobs to run", func() bool { return quick.Load() == 200 })
	queue := bhvKey(ns, "jobs", "slow")
	enqueued := int64(0)
	enqueueSlow := func(n int) {
		for i := 0; i < n; i++ {
			if _, err := e.Enqueue("slow", nil); err != nil {
				t.Fatal(err)
			}
			enqueued++
		}
	}
	heldMost := func(what string) int64 {
		most := int64(0)
		eventually(t, 30*time.Second, what, func() bool {
			waiting := rInt(t, pool, "LLEN", queue)
			if held := enqueued - waiting - slow.Load(); held > most {
				most = held
			}
			return slow.Load() == enqueued
		})
		return most
	}
	enqueueSlow(40)
	// The first slow fetches may still be made while the mean says quick: a handful, no more.
	if most := heldMost("the slow jobs to run"); most > int64(quickCapacity(2*2)) {
		t.Errorf("the pool held %d slow jobs at once, want at most %d", most, quickCapacity(2*2))
	}
	// Once the mean has turned slow, the pool holds at most 2.
	enqueueSlow(20)
	if most := heldMost("the second slow batch to run"); most > 2 {
		t.Errorf("a pool of 2 workers running slow jobs held %d at once, want at most 2", most)
	}
}

// Wake-ups that come in a stream are fetched by the pool's loop, which takes every queue they made
// ready in one round trip, rather than one fetch per wake-up on the goroutine that reads them (which
// reads no wake-up while it waits for a fetch).
func TestAStreamOfWakeUpsIsFetchedInFewRoundTrips(t *testing.T) {
	t.Parallel()
	pool, writes := newCountingPool(t)
	ns := newTestNamespace(t, pool)
	const n = 50
	gate := newBhvGate()
	var started atomic.Int64
	wp := NewWorkerPool(bhvCtx{}, n, ns, pool)
	names := make([]string, n)
	for i := range names {
		names[i] = "s" + strconv.Itoa(i)
		wp.Job(names[i], func(*Job) error {
			started.Add(1)
			gate.Wait()
			return nil
		})
	}
	bhvStart(t, wp)
	t.Cleanup(gate.Open) // runs before the pool's Stop
	wp.Drain()
	eventually(t, 10*time.Second, "the pool to subscribe to wake-ups", wp.reg.run.fetcher.ready.subscribed.Load)

	// The jobs and their wake-ups in one pipeline, on a connection the count leaves out: the wake-ups
	// reach the pool together.
	c := newTestPool(t).Get()
	defer c.Close()
	for _, name := range names {
		c.Send("LPUSH", bhvKey(ns, "jobs", name), `{"name":"`+name+`","id":"id-`+name+`","t":1700000000}`)
	}
	for _, name := range names {
		c.Send("PUBLISH", bhvKey(ns, "wake"), name)
	}
	before := writes.Load()
	if _, err := c.Do(""); err != nil {
		t.Fatal(err)
	}
	eventually(t, 15*time.Second, "every job to start", func() bool { return started.Load() == n })
	// One fetch for the first wake-up, then the loop's for the rest: one or two, a few more when the
	// loop fetches while wake-ups are still being read (a busy machine); one per wake-up would be 50.
	got := writes.Load() - before
	t.Logf("%d round trips to start %d jobs woken together", got, n)
	// On a loaded machine with -race, 11 to 23 were seen; a fetch per wake-up makes 50 or more.
	if got >= 3*n/4 {
		t.Errorf("%d round trips to start %d jobs woken together, want fewer than %d", got, n, 3*n/4)
	}
}

// A pool refills its fetched-ahead jobs while half of them still wait for workers, so that its
// workers do not idle for the next fetch; jobs of microseconds still wait for a batch of room.
func TestFetchAheadRefillsBeforeTheWaitingJobsRunOut(t *testing.T) {
	f := &fetcher{room: newRoom(10), jobs: make(chan *Job, quickCapacity(10))}
	fill := func(held, waiting int) {
		for len(f.jobs) > 0 {
			<-f.jobs
		}
		for range waiting {
			f.jobs <- &Job{}
		}
		f.room.held.Store(int64(held))
	}
	// Jobs of 10 ms: 5 fetched ahead of the 10 workers.
	f.room.meanRun.Store(int64(10 * time.Millisecond))
	if got := f.room.limit(); got != 15 {
		t.Fatalf("limit %d for jobs of 10 ms, want 15", got)
	}
	fill(13, 3)
	if !f.roomFor() {
		t.Error("10 running and 3 waiting of 5 ahead: no fetch for 2, so workers would wait for the next one")
	}
	fill(14, 4)
	if f.roomFor() {
		t.Error("10 running and 4 waiting: a fetch for 1 job, where one for 2 was due soon")
	}
	// Jobs of 10 µs: the pool holds its most, and fetches in batches of half its workers.
	f.room.meanRun.Store(int64(10 * time.Microsecond))
	limit := f.room.limit()
	fill(limit-4, 10)
	if f.roomFor() {
		t.Error("quick jobs: a fetch for 4 jobs while 10 wait, want a batch of 5")
	}
	fill(limit-5, 10)
	if !f.roomFor() {
		t.Error("quick jobs: no fetch for a batch of 5")
	}
}

// TestOneWakeUpRunsTheWholeBacklog: a pool that looks at Redis only once an hour runs every job of
// a batch after the batch's one wake-up, also when its workers finish the jobs of the fetch made
// on the wake-up before that fetch returns (the loop was then told of nothing: neither that room
// came back, since it did not wait for room, nor that the queue still held jobs). A new pool
// fetches no further ahead than its workers, which makes that likely: each round starts one.
func TestOneWakeUpRunsTheWholeBacklog(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	for round := 0; round < 10; round++ {
		ns := newTestNamespace(t, pool)
		var done sync.WaitGroup
		wp := NewWorkerPoolWithOptions(bhvCtx{}, 4, ns, pool, WorkerPoolOptions{
			SleepBackoffs: []int64{3600 * 1000}, HeartbeatInterval: time.Hour}).
			Job("quick", func(*Job) error { done.Done(); return nil })
		bhvStart(t, wp)
		batch := make([]BatchJob, 400)
		for i := range batch {
			batch[i] = BatchJob{Name: "quick"}
		}
		done.Add(len(batch))
		if _, err := NewEnqueuer(ns, pool).EnqueueBatch(batch); err != nil {
			t.Fatal(err)
		}
		ran := make(chan struct{})
		go func() { done.Wait(); close(ran) }()
		select {
		case <-ran:
		case <-time.After(time.Minute):
			t.Fatalf("round %d: %d jobs still queued a minute after their wake-up", round, rInt(t, pool, "LLEN", ns+":jobs:quick"))
		}
		wp.Stop()
	}
}
