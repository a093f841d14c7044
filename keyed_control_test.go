package work

import (
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

// Client.Keys lists a name's keys busiest first, then those with jobs running only; Key reads one;
// overrides and pauses show in both.
func TestClientKeysListsBusiestFirst(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var jobs []BatchJob
	for k := 0; k < 25; k++ {
		for i := 0; i <= k; i++ {
			jobs = append(jobs, BatchJob{Name: "mail", Key: fmt.Sprintf("k%02d", k)})
		}
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	c := NewClient(ns, pool)
	if err := c.SetKeyLimits("mail", "k24", KeyLimits{Concurrency: 10, Weight: 2, RateLimit: RateLimit{Jobs: 5, Period: time.Second}}); err != nil {
		t.Fatal(err)
	}
	if err := c.PauseKey("mail", "k23"); err != nil {
		t.Fatal(err)
	}
	// A key with a job running only (as a pool's fetch leaves it).
	rdo(t, pool, "HSET", ns+":keyed:mail:running", "busy", 2)
	page1, total, err := c.Keys("mail", 1)
	if err != nil {
		t.Fatal(err)
	}
	if total != 26 || len(page1) != 20 {
		t.Fatalf("page 1: %d keys of %d, want 20 of 26", len(page1), total)
	}
	top := page1[0]
	if top.Key != "k24" || top.Waiting != 25 || top.Limits.Concurrency != 10 || top.Limits.Weight != 2 ||
		top.Limits.RateLimit != (RateLimit{Jobs: 5, Period: time.Second}) {
		t.Fatalf("busiest key %+v", top)
	}
	if !page1[1].Paused || page1[1].Key != "k23" {
		t.Fatalf("second key %+v, want k23 paused", page1[1])
	}
	page2, _, err := c.Keys("mail", 2)
	if err != nil {
		t.Fatal(err)
	}
	if len(page2) != 6 || page2[4].Key != "k00" || page2[5].Key != "busy" || page2[5].Running != 2 {
		t.Fatalf("page 2: %d keys, last two %+v %+v", len(page2), page2[len(page2)-2], page2[len(page2)-1])
	}
	one, err := c.Key("mail", "k05")
	if err != nil || one.Waiting != 6 || one.Paused {
		t.Fatalf("Key(k05) = %+v, %v", one, err)
	}
	if _, err := c.Key("mail", "a{b"); !errors.Is(err, ErrMalformedKey) {
		t.Fatalf("Key with a malformed key: %v", err)
	}
	if err := c.ClearKeyLimits("mail", "k24"); err != nil {
		t.Fatal(err)
	}
	if k, _ := c.Key("mail", "k24"); k.Limits != (KeyLimits{}) {
		t.Fatalf("limits after ClearKeyLimits: %+v", k.Limits)
	}
	stats, err := c.KeyStats()
	if err != nil || len(stats) != 1 {
		t.Fatalf("KeyStats: %v %v", stats, err)
	}
	if s := stats[0]; s.JobName != "mail" || s.Waiting != 325 || s.WaitingKeys != 25 || s.LargestBacklog != 25 ||
		s.LargestBacklogKey != "k24" || s.PausedKeys != 1 || s.RunningKeys != 1 || s.Running != 2 {
		t.Fatalf("KeyStats: %+v", s)
	}
	if err := c.SetKeyLimits("mail", "k1", KeyLimits{Concurrency: -2}); err == nil {
		t.Error("a concurrency of -2 was accepted")
	}
}

// A paused key waits while the others run; resumed, it runs. An override raises one key's limit
// above its name's KeyConcurrency.
func TestKeyPauseAndOverride(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	c := NewClient(ns, pool)
	if err := c.PauseKey("mail", "held"); err != nil {
		t.Fatal(err)
	}
	if err := c.SetKeyLimits("mail", "big", KeyLimits{Concurrency: 3}); err != nil {
		t.Fatal(err)
	}
	var jobs []BatchJob
	for i := 0; i < 12; i++ {
		jobs = append(jobs, BatchJob{Name: "mail", Key: "held"}, BatchJob{Name: "mail", Key: "big"}, BatchJob{Name: "mail", Key: "small"})
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	s := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 10, ns, pool).JobWithOptions("mail", JobOptions{KeyConcurrency: 1}, s.handler(20*time.Millisecond)))
	eventually(t, 20*time.Second, "the unpaused keys' jobs", func() bool { return s.started() == 24 })
	s.mu.Lock()
	if len(s.order["held"]) != 0 {
		t.Fatalf("%d jobs of a paused key ran", len(s.order["held"]))
	}
	if s.max["big"] != 3 || s.max["small"] != 1 {
		t.Fatalf("most running at once: big %d (override 3), small %d (KeyConcurrency 1)", s.max["big"], s.max["small"])
	}
	s.mu.Unlock()
	if err := c.UnpauseKey("mail", "held"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the resumed key's jobs", func() bool { return s.started() == 36 })
}

// While two keys have jobs waiting, one of weight 3 gets three jobs to the other's one.
func TestKeyWeightGivesMoreTurns(t *testing.T) {
	t.Parallel()
	for _, lane := range []bool{false, true} {
		t.Run(fmt.Sprintf("lane=%v", lane), func(t *testing.T) {
			t.Parallel()
			testKeyWeight(t, lane)
		})
	}
}

// testKeyWeight runs TestKeyWeightGivesMoreTurns with the light jobs in one key's queue, or in the
// lane: 300 keys of one job each, enqueued a unit of virtual time apart (meta's vt set before each,
// then put back), so that a fetch pops many of them at once, and the heavy key must still get its
// three jobs for their one.
func testKeyWeight(t *testing.T, lane bool) {
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	if err := NewClient(ns, pool).SetKeyLimits("mail", "heavy", KeyLimits{Weight: 3}); err != nil {
		t.Fatal(err)
	}
	var jobs []BatchJob
	for i := 0; i < 300; i++ {
		jobs = append(jobs, BatchJob{Name: "mail", Key: "heavy"})
		if lane {
			rdo(t, pool, "HSET", ns+":keyed:mail:meta", "vt", i)
			if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: fmt.Sprintf("light-%d", i)}); err != nil {
				t.Fatal(err)
			}
		} else {
			jobs = append(jobs, BatchJob{Name: "mail", Key: "light"})
		}
	}
	rdo(t, pool, "HSET", ns+":keyed:mail:meta", "vt", 0)
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "HLEN", ns+":keyed:mail:lane"); lane != (n == 300) {
		t.Fatalf("%d keys in the lane (lane %v)", n, lane)
	}
	s := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("mail", s.handler(0)))
	eventually(t, 20*time.Second, "every job", func() bool { return s.started() == 600 })
	s.mu.Lock()
	defer s.mu.Unlock()
	heavy := 0
	for _, k := range s.keys[:300] {
		if k == "heavy" {
			heavy++
		}
	}
	// 3:1 gives 225 of the first 300 starts; a fetch's turns are whole jobs, so allow some slack.
	if heavy < 200 || heavy > 250 {
		t.Fatalf("the key of weight 3 had %d of the first 300 starts, want about 225", heavy)
	}
}

// A key past its KeyRateLimit waits while other keys go on: with 4 jobs an hour, each key starts its
// burst of 4 and no more, while a key enqueued after them runs its own.
func TestKeyRateLimitPacesEachKey(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	enqueue := func(keys ...string) {
		t.Helper()
		var jobs []BatchJob
		for i := 0; i < 6; i++ {
			for _, k := range keys {
				jobs = append(jobs, BatchJob{Name: "mail", Key: k})
			}
		}
		if _, err := e.EnqueueBatch(jobs); err != nil {
			t.Fatal(err)
		}
	}
	enqueue("a", "b")
	s := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 10, ns, pool).JobWithOptions("mail",
		JobOptions{KeyRateLimit: RateLimit{Jobs: 4, Period: time.Hour}}, s.handler(0)))
	eventually(t, 20*time.Second, "the bursts of a and b", func() bool { return s.started() == 8 })
	// Key c, enqueued once a and b are past their rate, runs its burst: the pool goes on fetching.
	enqueue("c")
	eventually(t, 20*time.Second, "the burst of c", func() bool { return s.started() == 12 })
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, k := range []string{"a", "b", "c"} {
		if n := len(s.order[k]); n != 4 {
			t.Errorf("key %s started %d jobs, want its burst of 4 (4 an hour)", k, n)
		}
	}
}

// A key with a large backlog delays keys enqueued after it by a turn, not by its backlog.
func TestSmallKeysOvertakeABacklog(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var jobs []BatchJob
	for i := 0; i < 2000; i++ {
		jobs = append(jobs, BatchJob{Name: "mail", Key: "whale"})
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	s := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).Job("mail", s.handler(time.Millisecond)))
	eventually(t, 10*time.Second, "the backlog to start", func() bool { return s.started() > 50 })
	jobs = jobs[:0]
	for k := 0; k < 20; k++ {
		for i := 0; i < 3; i++ {
			jobs = append(jobs, BatchJob{Name: "mail", Key: fmt.Sprintf("small%d", k)})
		}
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the small keys' jobs", func() bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		return len(s.keys)-len(s.order["whale"]) == 60
	})
	s.mu.Lock()
	defer s.mu.Unlock()
	// The small keys' 60 jobs take 60 turns among 21 keys: the whale gets about one in 21 of them,
	// plus what pools held already; the small keys do not wait for its 2,000.
	whale := len(s.order["whale"])
	t.Logf("whale jobs started by the time the 60 small ones had: %d", whale)
	if whale > 300 {
		t.Fatalf("the whale had %d jobs started by the time 60 small jobs enqueued after its backlog ran", whale)
	}
}

// With KeyRetryInOrder a failed job keeps its key's place: with KeyConcurrency 1 the key's next job
// waits for its retry. Without it, the next jobs run meanwhile. Deleting a waiting retry frees the
// key's slot.
func TestKeyRetryInOrder(t *testing.T) {
	t.Parallel()
	for _, inOrder := range []bool{true, false} {
		t.Run(fmt.Sprint(inOrder), func(t *testing.T) {
			pool := newTestPool(t)
			ns := newTestNamespace(t, pool)
			e := NewEnqueuer(ns, pool)
			var jobs []BatchJob
			for i := 0; i < 4; i++ {
				jobs = append(jobs, BatchJob{Name: "sync", Key: "acme", Args: Q{"i": i}})
			}
			if _, err := e.EnqueueBatch(jobs); err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var done []int64
			failed := false
			h := func(j *Job) error {
				mu.Lock()
				defer mu.Unlock()
				if j.ArgInt64("i") == 1 && !failed {
					failed = true
					return errors.New("first attempt fails")
				}
				done = append(done, j.ArgInt64("i"))
				return nil
			}
			bhvStart(t, NewWorkerPool(bhvCtx{}, 4, ns, pool).JobWithOptions("sync", JobOptions{
				KeyConcurrency: 1, KeyRetryInOrder: inOrder, Backoff: func(*Job) int64 { return 1 },
			}, h))
			eventually(t, 20*time.Second, "every job", func() bool {
				mu.Lock()
				defer mu.Unlock()
				return len(done) == 4
			})
			mu.Lock()
			got := fmt.Sprint(done)
			mu.Unlock()
			if inOrder && got != "[0 1 2 3]" {
				t.Fatalf("with KeyRetryInOrder the key ran %s, want [0 1 2 3]", got)
			}
			if !inOrder && got != "[0 2 3 1]" {
				t.Fatalf("without KeyRetryInOrder the key ran %s, want [0 2 3 1]", got)
			}
			waitKeyedStateGone(t, pool, ns, "sync")
		})
	}
}

// A retry that holds its key's slot frees it when the Client deletes it, and goes to the front of
// its key's queue when run at once.
func TestKeyHeldRetryFreedByTheClient(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var mu sync.Mutex
	var ran []string
	h := func(j *Job) error {
		mu.Lock()
		defer mu.Unlock()
		if j.ArgString("fail") == "yes" && j.Fails == 0 {
			return errors.New("fails")
		}
		ran = append(ran, j.ArgString("id"))
		return nil
	}
	bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).JobWithOptions("sync", JobOptions{
		KeyConcurrency: 1, KeyRetryInOrder: true, Backoff: func(*Job) int64 { return 3600 },
	}, h))
	c := NewClient(ns, pool)
	for _, id := range []string{"del", "now"} {
		if _, err := e.EnqueueBatch([]BatchJob{{Name: "sync", Key: "k-" + id, Args: Q{"fail": "yes", "id": id}},
			{Name: "sync", Key: "k-" + id, Args: Q{"id": id + "-next"}}}); err != nil {
			t.Fatal(err)
		}
	}
	var retries []*RetryJob
	eventually(t, 10*time.Second, "both failed jobs in the retry set", func() bool {
		retries, _, _ = c.RetryJobs(1)
		return len(retries) == 2
	})
	// A job of another key, enqueued now, runs: the pool has fetched since the retries held their
	// keys' slots.
	if _, err := e.EnqueueWith("sync", Q{"id": "other"}, EnqueueOptions{Key: "k-other"}); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "another key's job", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) > 0
	})
	mu.Lock()
	if len(ran) != 1 || ran[0] != "other" {
		t.Fatalf("jobs ran while their keys' first jobs held the slots: %v", ran)
	}
	ran = nil
	mu.Unlock()
	for _, r := range retries {
		if !r.KeyHold {
			t.Fatalf("retry %+v does not hold its key's slot", r.Job)
		}
		var err error
		if r.Key == "k-del" {
			err = c.DeleteRetryJob(r.RetryAt, r.ID)
		} else {
			err = c.RunRetryJobNow(r.RetryAt, r.ID)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "the keys' jobs", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 3
	})
	mu.Lock()
	defer mu.Unlock()
	want := map[string]bool{"del-next": true, "now": true, "now-next": true}
	for i, id := range ran {
		if !want[id] {
			t.Fatalf("ran %v", ran)
		}
		if id == "now-next" && (i == 0 || (ran[i-1] != "now" && (i < 2 || ran[i-2] != "now"))) {
			t.Fatalf("the key's next job ran before the retry run at once: %v", ran)
		}
	}
	waitKeyedStateGone(t, pool, ns, "sync")
}

// FindJob finds a keyed job waiting in its key's queue and running in a pool; QueueStats counts the
// name's keyed jobs waiting and in flight.
func TestFindJobAndQueueStatsSeeKeyedJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	c := NewClient(ns, pool)
	first, err := e.EnqueueWith("mail", Q{"n": 1}, EnqueueOptions{Key: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.EnqueueWith("mail", Q{"n": 2}, EnqueueOptions{Key: "acme"})
	if err != nil {
		t.Fatal(err)
	}
	loc, err := c.FindJob(second.ID)
	if err != nil || loc.State != JobStateQueued || loc.Job.Key != "acme" || !loc.Decoded {
		t.Fatalf("FindJob of a waiting keyed job: %+v, %v", loc, err)
	}
	gate := newBhvGate()
	t.Cleanup(gate.Open)
	started := make(chan struct{}, 2)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("mail", JobOptions{KeyConcurrency: 1},
		func(*Job) error { started <- struct{}{}; gate.Wait(); return nil }))
	<-started
	loc, err = c.FindJob(first.ID)
	if err != nil || loc.State != JobStateInProgress || loc.Job.Key != "acme" || !loc.Decoded || loc.PoolID == "" {
		t.Fatalf("FindJob of a running keyed job: %+v, %v", loc, err)
	}
	stats, err := c.QueueStats()
	if err != nil || len(stats) != 1 || stats[0].KeyedCount != 1 || stats[0].InFlight != 1 || stats[0].Count != 0 {
		t.Fatalf("QueueStats: %+v, %v", stats[0], err)
	}
	gate.Open()
}

// The lane job of a key paused after it was enqueued waits: the pool moves it to the key's queue
// as it meets it, and runs it, then the key's next job, once the key is resumed. The Client counts
// a key's job in the lane as one waiting.
func TestLaneJobOfAPausedKeyWaitsInItsQueue(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	c := NewClient(ns, pool)
	for _, key := range []string{"held", "free-1", "free-2"} {
		if _, err := e.EnqueueWith("mail", Q{"i": 0}, EnqueueOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.EnqueueBatch([]BatchJob{{Name: "mail", Key: "queued"}, {Name: "mail", Key: "queued"}}); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "HLEN", ns+":keyed:mail:lane"); n != 3 {
		t.Fatalf("%d keys in the lane, want 3", n)
	}
	keys, total, err := c.Keys("mail", 1)
	if err != nil || total != 4 || len(keys) != 4 || keys[0].Key != "queued" || keys[0].Waiting != 2 || keys[3].Waiting != 1 {
		t.Fatalf("Keys: %d keys, %v", total, err)
	}
	if k, err := c.Key("mail", "held"); err != nil || k.Waiting != 1 {
		t.Fatalf("Key(held) = %+v, %v", k, err)
	}
	if st, err := c.KeyStats(); err != nil || len(st) != 1 || st[0].Waiting != 5 || st[0].WaitingKeys != 4 || st[0].LargestBacklog != 2 {
		t.Fatalf("KeyStats: %+v, %v", st, err)
	}
	if err := c.PauseKey("mail", "held"); err != nil {
		t.Fatal(err)
	}
	run := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("mail", run.handler(0)))
	eventually(t, 20*time.Second, "the jobs of the keys not paused", func() bool { return run.done() == 4 })
	if n := rInt(t, pool, "LLEN", ns+":keyed:mail:{held}"); n != 1 {
		t.Fatalf("the paused key has %d jobs in its queue, want its lane job", n)
	}
	if _, err := e.EnqueueWith("mail", Q{"i": 1}, EnqueueOptions{Key: "held"}); err != nil {
		t.Fatal(err)
	}
	if k, err := c.Key("mail", "held"); err != nil || k.Waiting != 2 || !k.Paused {
		t.Fatalf("Key(held) while paused = %+v, %v", k, err)
	}
	if err := c.UnpauseKey("mail", "held"); err != nil {
		t.Fatal(err)
	}
	eventually(t, 20*time.Second, "the resumed key's jobs", func() bool { return run.done() == 6 })
	run.mu.Lock()
	order := run.order["held"]
	run.mu.Unlock()
	if fmt.Sprint(order) != "[0 1]" {
		t.Fatalf("the resumed key ran its jobs in the order %v", order)
	}
	waitKeyedStateGone(t, pool, ns, "mail")
}

// KeyStats of a name whose keys all wait in the lane: each key counts one job, and one of them
// stands for the largest backlog, without a read of every key.
func TestKeyStatsOfLaneKeys(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	keys := map[string]bool{"a": true, "b": true, "c": true}
	enqueueKeyed(t, e, "mail", "a", "b", "c")
	st, err := NewClient(ns, pool).KeyStats()
	if err != nil || len(st) != 1 || st[0].Waiting != 3 || st[0].WaitingKeys != 3 || st[0].LargestBacklog != 1 ||
		!keys[st[0].LargestBacklogKey] {
		t.Fatalf("KeyStats: %+v, %v", st, err)
	}
}
