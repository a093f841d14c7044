package main

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/worktest"
)

// times returns n sample times, every 30 s from 2 minutes on, in seconds.
func times(n int) []float64 {
	ts := make([]float64, n)
	for i := range ts {
		ts[i] = 120 + 30*float64(i)
	}
	return ts
}

// noise is a fixed, zero-mean sequence in [-1, 1], so the tests do not depend on a random seed.
func noise(i int) float64 { return math.Sin(float64(i)*2.39996) * math.Cos(float64(i)*0.7) }

func TestJudgeGrowthFailsASteadilyGrowingSeries(t *testing.T) {
	ts := times(17)
	xs := make([]float64, len(ts))
	for i := range xs {
		xs[i] = 2400 + 600*float64(i) + 50*noise(i) // a batches index: 20 batches/s, never trimmed
	}
	if g := judgeGrowth(ts, xs, 0.1, 20); !g.grows {
		t.Fatalf("judgeGrowth(%v) = %+v, want grows", xs, g)
	}
}

func TestJudgeGrowthPassesFlatSeries(t *testing.T) {
	ts := times(17)
	cases := map[string]struct {
		xs    func(i int) float64
		floor float64
	}{
		"noisy around a level": {func(i int) float64 { return 1300 + 120*noise(i) }, 50},
		// A dead set trimmed about once a minute, sampled every 30 s: it climbs between trims.
		"sawtooth": {func(i int) float64 { return 1000 + 600*math.Mod(float64(i)*30/62.5, 1) }, 100},
		// A queue that is empty but for one burst at the end.
		"spike at the end": {func(i int) float64 {
			if i == 16 {
				return 5000
			}
			return 3
		}, 2000},
		// Growing, but by less than the floor over the window: 0.5 MiB over 8 minutes.
		"under the floor": {func(i int) float64 { return 10 + 0.03*float64(i) }, 1},
		"shrinking":       {func(i int) float64 { return 5000 - 100*float64(i) }, 20},
		"zero":            {func(int) float64 { return 0 }, 2},
	}
	for name, c := range cases {
		xs := make([]float64, len(ts))
		for i := range xs {
			xs[i] = c.xs(i)
		}
		if g := judgeGrowth(ts, xs, 0.1, c.floor); g.grows {
			t.Errorf("%s: judgeGrowth(%v) = %+v, want no growth", name, xs, g)
		}
	}
}

func TestJudgeGrowthNeedsTheLastSamplesAboveTheFirst(t *testing.T) {
	// A step up half-way that then falls back: the fit rises, the last samples do not stay up.
	xs := []float64{100, 100, 100, 900, 900, 900, 100, 100}
	g := judgeGrowth(times(len(xs)), xs, 0.1, 20)
	if g.grows || !g.noisy {
		t.Fatalf("judgeGrowth(%v) = %+v, want noisy, not growing", xs, g)
	}
}

func TestJudgeGrowthDoesNotJudgeFewerThanFourSamples(t *testing.T) {
	xs := []float64{1, 1000, 1000000}
	if g := judgeGrowth(times(3), xs, 0.1, 1); g.grows || g.noisy {
		t.Fatalf("judgeGrowth(%v) = %+v, want no verdict", xs, g)
	}
}

func TestSoakConfigCountsItsJudgedSamples(t *testing.T) {
	c := soakConfig{duration: 10 * time.Minute, interval: 30 * time.Second, warmup: 2 * time.Minute, rate: 1, workers: 1,
		keep: time.Second, growth: 0.1}
	if n := c.judgedSamples(); n != 17 {
		t.Errorf("10m, 30s, 2m warm-up: %d judged samples, want 17", n)
	}
	if err := c.check(); err != nil {
		t.Errorf("check: %v", err)
	}
	c.duration = 3 * time.Minute
	if n := c.judgedSamples(); n != 3 {
		t.Errorf("3m, 30s, 2m warm-up: %d judged samples, want 3", n)
	}
	if err := c.check(); err == nil {
		t.Error("check accepted 3 judged samples")
	}
}

func TestClassifyKeyNamesTheFamiliesOfTheLayout(t *testing.T) {
	const id = "5f1c3a9e0b7d4e2f8a6c1b3d"
	cases := map[string]string{
		"ns:jobs:mail":                         famQueue,
		"ns:jobs:mail:" + id + ":inprogress":   famInProgress,
		"ns:jobs:mail:paused":                  famQueueState,
		"ns:jobs:mail:lock":                    famQueueState,
		"ns:jobs:mail:lock_info":               famQueueState,
		"ns:jobs:mail:max_concurrency":         famQueueState,
		"ns:jobs:mail:rate":                    famQueueState,
		"ns:scheduled":                         famSingleton,
		"ns:retry":                             famSingleton,
		"ns:dead":                              famSingleton,
		"ns:batches":                           famSingleton,
		"ns:known_jobs":                        famSingleton,
		"ns:worker_pools":                      famSingleton,
		"ns:last_periodic_enqueue":             famSingleton,
		"ns:dead_trimmed":                      famSingleton,
		"ns:worker_pools:" + id:                famHeartbeat,
		"ns:worker:" + id:                      famWorker,
		"ns:idle_pools:mail":                   famHandOff,
		"ns:handoffs:" + id:                    famHandOff,
		"ns:quiet:" + id:                       famHandOff,
		"ns:unique:mail:{\"k\":1}\n":           famUnique,
		"ns:unique:mail:":                      famUnique,
		"ns:stats:mail:20000":                  famStats,
		"ns:job:" + id:                         famRecord,
		"ns:job:" + id + ":next":               famRecordNext,
		"ns:batch:" + id:                       famBatch,
		"ns:batch:" + id + ":next":             famBatchNext,
		"ns:batches_expiry":                    famSingleton,
		"ns:keyed:mail:ready":                  famKeyedState,
		"ns:keyed:mail:waiting":                famKeyedState,
		"ns:keyed:mail:running":                famKeyedState,
		"ns:keyed:mail:delayed":                famKeyedState,
		"ns:keyed:mail:conf":                   famKeyedState,
		"ns:keyed:mail:meta":                   famKeyedState,
		"ns:keyed:mail:{acme}":                 famKeyedQueue,
		"ns:keyed:mail:{a:b ready}":            famKeyedQueue,
		"ns:keyed:mail:{acme}:rate":            famKeyedRate,
		"ns:keyed:mail:" + id + ":inprogress":  famKeyedInProgress,
		"ns:keyed:mail:{}":                     famOther,
		"ns:keyed:mail:{acme":                  famOther,
		"ns:keyed:mail:{acme}:x":               famOther,
		"ns:keyed:mail:other":                  famOther,
		"ns:keyed:mail":                        famOther,
		"ns:something_new":                     famOther,
		"ns:jobs:":                             famOther,
		"ns:jobs:mail:" + id + ":inprogress:x": famOther,
		"other:jobs:mail":                      famOther,
	}
	for key, want := range cases {
		if got := classifyKey("ns:", key); got != want {
			t.Errorf("classifyKey(%q) = %s, want %s", key, got, want)
		}
	}
}

// TestSoakKeepsRedisBounded runs the soak workload for a minute against the Redis at
// WORK_TEST_REDIS, in a namespace of its own, and checks after its warm-up that what must stay
// bounded in that time does: the families bounded by construction at every sample, and every
// judged series by the harness's growth criterion.
//
// The bound on the batches index (<ns>:batches) assumes that an expired batch leaves the index
// within a few keep windows (2 s each here), as the pools' requeuer does it when the batch's
// <ns>:batches_expiry entry is due; a pruning once a minute would need a longer run to show.
func TestSoakKeepsRedisBounded(t *testing.T) {
	addr := os.Getenv("WORK_TEST_REDIS")
	if addr == "" {
		t.Skip("WORK_TEST_REDIS is not set")
	}
	if testing.Short() {
		t.Skip("runs for a minute")
	}
	pool := &redigo.Pool{Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", addr) }}
	t.Cleanup(func() { pool.Close() })
	ns := worktest.Namespace(t, pool) // deleted when the test ends
	cfg := soakConfig{
		addr: addr, namespace: ns,
		duration: time.Minute, interval: 5 * time.Second, warmup: 20 * time.Second,
		rate: 400, workers: 10, keep: 2 * time.Second, restart: 15 * time.Second, growth: 0.1,
		// Trimmed at every start of the second pool, so every 15 s: bounded within the minute.
		deadMax: 20, deadAge: time.Minute,
		log: t.Logf,
	}
	run, err := runSoak(cfg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tb := range run.tables() {
		var b strings.Builder
		tb.plain(&b)
		t.Log("\n" + b.String())
	}
	if run.enqErrs > 0 {
		t.Errorf("%d enqueue calls failed; the first: %v", run.enqErrs, run.firstErr)
	}
	t.Logf("%d enqueues of the paused key's jobs refused with ErrKeyFull", run.refused)
	if run.waitsBad > 0 || run.depBad > 0 {
		t.Errorf("%d waits went wrong (the first: %v), %d chain steps did not read the step before them", run.waitsBad, run.firstWait, run.depBad)
	}
	if run.waitsOK == 0 {
		t.Errorf("no WaitJob call got its job's result")
	}

	// Bounds by construction, at every sample after the warm-up.
	bounds := []struct {
		key   string
		bound float64
		why   string
	}{
		{famUnique, 3 * soakUniqueKeys, "three kinds of unique jobs over 64 args or keys each"},
		{famWorker, 2 * float64(cfg.workers), "a busy worker has one, two pools run"},
		{famHeartbeat, 2, "two pools run"},
		{"pool_ids", 2, "two pools run; a pool replaced leaves the set"},
		{"known_jobs", float64(len(soakNames)), "the soak's job names"},
		{famQueueState, 5 * float64(len(soakNames)), "five per job name at most"},
		{famKeyedState, 6 * float64(len(soakKeyedNames)), "six per job name with keyed jobs at most"},
		{"keyed_conf_fields", 2 + 3, "the paused key's pause and cap, the other key's three overrides"},
		{famKeyedQueue, soakKeys + 1 + soakSeqKeys, "the keys that have jobs waiting"},
		{famKeyedInProgress, 2 * float64(len(soakKeyedNames)), "one per pool and job name with keyed jobs"},
		{famOther, 0, "every key belongs to a family of docs/redis-layout.md"},
	}
	var overIndex []string
	for i, s := range run.samples {
		at := run.at[i].Round(time.Second)
		if at < cfg.warmup {
			continue
		}
		for _, b := range bounds {
			if s[b.key] > b.bound {
				t.Errorf("at %v: %s = %v, more than %v (%s)", at, b.key, s[b.key], b.bound, b.why)
			}
		}
		// What a keep window holds: a batch's hash lives from its creation until Keep after it
		// completed, so the hashes that exist are the batches the index needs to hold.
		if idx, live := s["batch_index"], s[famBatch]; idx > 3*live+20 {
			overIndex = append(overIndex, fmt.Sprintf("%v at %v (3 × %v hashes + 20 = %v)", idx, at, live, 3*live+20))
		}
	}
	if len(overIndex) > 0 {
		t.Errorf("the batches index holds more batches than 3 × the batch hashes that exist + 20 at %d samples after the warm-up: it keeps expired batches (expected until the index forgets them): %s",
			len(overIndex), strings.Join(overIndex, ", "))
	}

	// The growth criterion, on every series that must be flat within a minute. Redis's memory,
	// scripts and clients are the server's, which other tests share; the heap is left to the
	// harness's longer runs.
	skip := map[string]bool{"mem": true, "scripts": true, "clients": true, "heap": true}
	for _, v := range run.verdicts() {
		if skip[v.s.key] || v.s.unjudged != "" {
			continue
		}
		if v.g.n < 4 {
			t.Errorf("%s: %d samples after the warm-up, too few to judge", v.s.key, v.g.n)
			continue
		}
		if v.g.grows {
			t.Errorf("%s (%s) grows: %s over the %v after the warm-up (threshold %s)", v.s.key, strings.TrimSpace(v.s.label),
				formatValue(v.s.kind, v.g.rise), (run.at[len(run.at)-1] - cfg.warmup).Round(time.Second), formatValue(v.s.kind, v.g.threshold))
		}
	}
}
