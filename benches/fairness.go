package main

// The fairness workload: how long small keys wait behind one key's backlog. See README.md,
// "fairness".

import (
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work"
)

// fairJobName is the fairness workload's one job name (a task type for asynq).
const fairJobName = "fair"

// fairConfig is the fairness workload's flags.
type fairConfig struct {
	backlog     int           // jobs of the one large key
	keys        int           // small keys
	perKey      int           // jobs of each small key
	job         time.Duration // how long a job sleeps
	concurrency int
	batch       int // jobs per EnqueueBatch call (work)
	batchG      int // goroutines making them
	rounds      int
}

// fairVariant is a column of the fairness workload.
type fairVariant struct {
	name    string
	lib     library // work or asynq
	keyed   bool    // the jobs have keys (work)
	backlog bool    // the large key's backlog is there
}

// fairnessCase is the fairness workload: the small keys' jobs behind one key's backlog on work
// (keyed), the same jobs alone, the same jobs unkeyed behind the same backlog on work and, when it
// is among the libraries, on asynq.
func (b *bench) fairnessCase(cfg fairConfig) *benchCase {
	wl, aq := b.lib("work"), b.lib("asynq")
	vs := []fairVariant{
		{name: "keyed", lib: wl, keyed: true, backlog: true},
		{name: "alone", lib: wl, keyed: true},
		{name: "work FIFO", lib: wl, backlog: true},
	}
	if aq != nil {
		vs = append(vs, fairVariant{name: "asynq FIFO", lib: aq, backlog: true})
	}
	small := cfg.keys * cfg.perKey
	c := &benchCase{
		id:    "fairness",
		title: fmt.Sprintf("fairness c=%d", cfg.concurrency),
		desc: fmt.Sprintf("jobs that sleep %v, %d workers; keyed: one key with a backlog of %s jobs (EnqueueBatch, %d per call, from %d goroutines), the pool started on it, then, once its first job has run, %d keys with %d jobs each (%s jobs, one EnqueueBatch call per %d, the keys in turn) timed until they are all done; alone: the same small keys on an idle pool (started %v before), no backlog; work FIFO: the same jobs without keys, behind the same backlog in the same queue; asynq FIFO: the same on asynq (single Enqueue calls: the backlog from 50 goroutines, the small jobs from 10). wait: enqueue (just before the call) to the handler's start",
			cfg.job, cfg.concurrency, commas(float64(cfg.backlog)), cfg.batch, cfg.batchG, cfg.keys, cfg.perKey, commas(float64(small)), cfg.batch, b.settle),
		rounds: cfg.rounds,
		metrics: []metricDef{
			{"fair.done_ms", "ms until the small keys' jobs are all done", kindSig},
			{"fair.wait_p50", "p50 wait of a small key's job, ms", kindSig},
			{"fair.wait_p99", "p99 wait of a small key's job, ms", kindSig},
			{"fair.wait_max", "max wait of a small key's job, ms", kindSig},
			{"fair.enq_ms", "ms to enqueue the small keys' jobs", kindSig},
			{"fair.backlog_ran", "backlog jobs started meanwhile", kindRate},
			{"fair.jobs_s", "jobs started/s meanwhile (backlog and small)", kindRate},
		},
		summary: []string{"fair.done_ms", "fair.wait_p50", "fair.wait_p99", "fair.backlog_ran"},
		ratios:  []ratioCol{{0, 1}, {0, 2}},
		goals: []goal{{label: "keyed: small keys done within 2 × the time alone", key: "fair.done_ms", num: 0, den: 1, atMost: true, bound: 2},
			{label: "keyed: small keys done sooner than work FIFO (ratio < 1)", key: "fair.done_ms", num: 0, den: 2, atMost: true, bound: 1}},
		runCol: func(ci int) (map[string]float64, error) {
			return b.fairnessRun(vs[ci], cfg)
		},
	}
	if aq != nil {
		c.ratios = append(c.ratios, ratioCol{0, 3})
		c.goals = append(c.goals, goal{label: "keyed: small keys done sooner than asynq FIFO (ratio < 1)", key: "fair.done_ms", num: 0, den: 3, atMost: true, bound: 1})
	}
	for _, v := range vs {
		c.cols = append(c.cols, v.name)
	}
	return c
}

// fairnessRun is one run of the fairness workload.
func (b *bench) fairnessRun(v fairVariant, cfg fairConfig) (map[string]float64, error) {
	small := cfg.keys * cfg.perKey
	names := []string{fairJobName}
	wl, isWork := v.lib.(workLib)
	keyed := func(k string) func(int) string {
		if !v.keyed {
			return keyOf(0)
		}
		if k != "" {
			return func(int) string { return k }
		}
		return func(i int) string { return "s" + strconv.Itoa(i%cfg.keys) }
	}

	// The backlog, before the pool starts.
	if v.backlog {
		var err error
		if isWork {
			p := wl.newProducer(cfg.batchG).(*workProducer)
			_, err = batched(cfg.backlog, cfg.batchG, cfg.batch, func(from, count int) error {
				return p.enqueueKeyed(fairJobName, from, count, keyed("big"), argsNoStamp)
			})
			p.close()
		} else {
			p := v.lib.newProducer(50)
			_, err = enqueueAll(p, names, cfg.backlog, 50, argsNoStamp)
			p.close()
		}
		if err != nil {
			return nil, fmt.Errorf("backlog: %w", err)
		}
	}

	var (
		t0                    atomic.Int64 // Unix ns just before the first small enqueue; 0 before
		smallStarted, smallDn atomic.Int64
		backlogRan            atomic.Int64
		lastEnd               atomic.Int64 // Unix ns when the last small job ended
		waits                 = make([]time.Duration, small)
		first                 = make(chan struct{})
		firstOnce             sync.Once
		finished              = make(chan struct{})
	)
	h := func(_ string, ts int64) error {
		now := time.Now()
		firstOnce.Do(func() { close(first) })
		if ts == 0 {
			if t0.Load() != 0 && smallDn.Load() < int64(small) {
				backlogRan.Add(1)
			}
		} else if i := smallStarted.Add(1) - 1; i < int64(small) {
			waits[i] = now.Sub(time.UnixMicro(ts))
		}
		time.Sleep(cfg.job)
		if ts != 0 && smallDn.Add(1) == int64(small) {
			lastEnd.Store(time.Now().UnixNano())
			close(finished)
		}
		return nil
	}
	ccfg := consumerConfig{concurrency: cfg.concurrency, names: names, wantTS: true, h: h}
	var c consumer
	if isWork {
		c = wl.newConsumerWith(ccfg, work.JobOptions{})
	} else {
		c = v.lib.newConsumer(ccfg)
	}
	stopProfile := b.startProfile()
	defer stopProfile()
	if err := c.start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	defer c.stop()
	if v.backlog {
		select {
		case <-first:
		case <-time.After(time.Minute):
			return nil, fmt.Errorf("no backlog job ran in a minute")
		}
	} else {
		time.Sleep(b.settle) // started, subscribed, idle
	}

	// The small keys' jobs, right after.
	start := time.Now()
	t0.Store(start.UnixNano())
	var err error
	if isWork {
		p := wl.newProducer(1).(*workProducer)
		_, err = batched(small, 1, cfg.batch, func(from, count int) error {
			return p.enqueueKeyed(fairJobName, from, count, keyed(""), argsTimestamp)
		})
		p.close()
	} else {
		p := v.lib.newProducer(10)
		_, err = enqueueAll(p, names, small, 10, argsTimestamp)
		p.close()
	}
	enqEl := time.Since(start)
	if err != nil {
		return nil, fmt.Errorf("small keys: %w", err)
	}
	timeout := processTimeout(cfg.backlog + small)
	select {
	case <-finished:
	case <-time.After(timeout):
		return nil, fmt.Errorf("%d of the small keys' %d jobs done after %v", smallDn.Load(), small, timeout)
	}
	stopProfile()
	done := time.Duration(lastEnd.Load() - start.UnixNano())
	sort.Slice(waits, func(i, j int) bool { return waits[i] < waits[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	ran := backlogRan.Load()
	return map[string]float64{
		"fair.done_ms":     ms(done),
		"fair.wait_p50":    ms(percentile(waits, 0.50)),
		"fair.wait_p99":    ms(percentile(waits, 0.99)),
		"fair.wait_max":    ms(waits[len(waits)-1]),
		"fair.enq_ms":      ms(enqEl),
		"fair.backlog_ran": float64(ran),
		"fair.jobs_s":      float64(ran+int64(small)) / done.Seconds(),
	}, nil
}
