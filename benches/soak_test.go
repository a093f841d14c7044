package main

import (
	"math"
	"testing"
	"time"
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
		"ns:unique:mail:{\"k\":1}\n":           famUnique,
		"ns:unique:mail:":                      famUnique,
		"ns:stats:mail:20000":                  famStats,
		"ns:job:" + id:                         famRecord,
		"ns:job:" + id + ":next":               famRecordNext,
		"ns:batch:" + id:                       famBatch,
		"ns:batch:" + id + ":next":             famBatchNext,
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
