package main

// The keyed and millionkeys workloads: work's keyed jobs (EnqueueOptions.Key, BatchJob.Key) against
// its unkeyed jobs and asynq's, each a case of variants (see benchCase) whose columns are run in
// turn, round after round. See README.md, "keyed" and "millionkeys".

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/workqueue/work"
)

// keyedJobName is the one job name of the keyed and millionkeys workloads (a task type for asynq):
// the keys of one name share its queue turn by turn.
const keyedJobName = "keyed"

// keyOf returns the key of job i when keys keys take the jobs in turn: "k<i mod keys>"; none ("")
// when keys is 0.
func keyOf(keys int) func(int) string {
	if keys == 0 {
		return func(int) string { return "" }
	}
	return func(i int) string { return "k" + strconv.Itoa(i%keys) }
}

// keyedConfig is the keyed and millionkeys workloads' configuration.
type keyedConfig struct {
	n       int   // jobs per keyed run
	keys    []int // keys of the keyed variants
	seqKeys int   // keys of the KeyConcurrency 1 variant (0: none)
	batch   int   // jobs per EnqueueBatch call
	batchG  int   // goroutines making them
	rounds  int

	millionN, millionSmall, millionMeasure, millionRounds int
}

// keyedFlags are the flags of the keyed, millionkeys and fairness workloads.
type keyedFlags struct {
	keys  string
	keyed keyedConfig
	fair  fairConfig
}

// declareKeyedFlags declares the flags of the keyed, millionkeys and fairness workloads.
func declareKeyedFlags() *keyedFlags {
	f := &keyedFlags{}
	k, fc := &f.keyed, &f.fair
	flag.StringVar(&f.keys, "keyed-keys", "10,100000", "keys of the keyed workload's keyed variants, comma-separated (its jobs: -n)")
	flag.IntVar(&k.seqKeys, "keyed-seq-keys", 10000, "keys of the keyed workload's KeyConcurrency 1 variant (0: none)")
	flag.IntVar(&k.batch, "keyed-batch", 1000, "jobs per EnqueueBatch call in the keyed, millionkeys and fairness workloads (from 4 goroutines; fairness's small keys from 1)")
	flag.IntVar(&k.millionN, "millionkeys-n", 1000000, "jobs of each millionkeys run, and keys of its one-job-per-key variant")
	flag.IntVar(&k.millionSmall, "millionkeys-small", 1000, "keys of the millionkeys variant that compares with -millionkeys-n keys ready")
	flag.IntVar(&k.millionMeasure, "millionkeys-measure", 100000, "jobs over which millionkeys compares the Redis CPU per job")
	flag.IntVar(&k.millionRounds, "millionkeys-rounds", 0, "rounds of the millionkeys workload (0: -rounds)")
	flag.IntVar(&fc.backlog, "fairness-backlog", 100000, "jobs of the large key in the fairness workload")
	flag.IntVar(&fc.keys, "fairness-keys", 100, "small keys in the fairness workload")
	flag.IntVar(&fc.perKey, "fairness-jobs", 10, "jobs of each small key in the fairness workload")
	flag.DurationVar(&fc.job, "fairness-job", time.Millisecond, "how long a fairness job sleeps")
	flag.IntVar(&fc.concurrency, "fairness-concurrency", 50, "workers in the fairness workload")
	return f
}

// configs returns the workloads' configurations once the flags are parsed, given the jobs per
// keyed run (-n) and the rounds (-rounds).
func (f *keyedFlags) configs(n, rounds int) (keyedConfig, fairConfig, error) {
	k, fc := f.keyed, f.fair
	k.n, k.rounds, k.batchG = n, rounds, 4
	if k.millionRounds == 0 {
		k.millionRounds = rounds
	}
	fc.batch, fc.batchG, fc.rounds = k.batch, 4, rounds
	if list := strings.TrimSpace(f.keys); list != "" && list != "0" {
		var err error
		if k.keys, err = parseRates(list); err != nil {
			return k, fc, fmt.Errorf("bad -keyed-keys %q", f.keys)
		}
	}
	if k.seqKeys < 0 || k.batch < 1 || k.millionN < 1 || k.millionSmall < 1 || k.millionMeasure < 1 || k.millionRounds < 0 ||
		fc.backlog < 1 || fc.keys < 1 || fc.perKey < 1 || fc.job < 0 || fc.concurrency < 1 {
		return k, fc, errors.New("the keyed, millionkeys and fairness flags take positive numbers (-keyed-seq-keys and -millionkeys-rounds may be 0, -fairness-job 0s)")
	}
	return k, fc, nil
}

// keyedVariant is a column of the keyed workload.
type keyedVariant struct {
	name    string
	lib     library // work or asynq
	keys    int     // 0: unkeyed
	keyConc uint    // JobOptions.KeyConcurrency
}

// keyedCase is the keyed workload: n no-op jobs burned down at concurrency 50, on work unkeyed (the
// baseline), keyed over each of cfg.keys keys and with KeyConcurrency 1 over cfg.seqKeys keys, and
// on asynq unkeyed when it is among the libraries.
func (b *bench) keyedCase(cfg keyedConfig) *benchCase {
	wl, aq := b.lib("work"), b.lib("asynq")
	vs := []keyedVariant{{name: "unkeyed", lib: wl}}
	for _, k := range cfg.keys {
		vs = append(vs, keyedVariant{name: commas(float64(k)) + " keys", lib: wl, keys: k})
	}
	if cfg.seqKeys > 0 {
		vs = append(vs, keyedVariant{name: commas(float64(cfg.seqKeys)) + " keys, KC 1", lib: wl, keys: cfg.seqKeys, keyConc: 1})
	}
	keyedCols := len(vs) - 1
	if aq != nil {
		vs = append(vs, keyedVariant{name: "asynq", lib: aq})
	}
	c := &benchCase{
		id:    "keyed",
		title: "keyed c=50",
		desc: fmt.Sprintf("%s no-op jobs of one job name burned down as in burn c=50 (50 workers started after the enqueue, timed until the %sth handler run); work: unkeyed, keyed with the keys taking the jobs in turn (job i: key k<i mod keys>), and with JobOptions.KeyConcurrency 1; enqueue: EnqueueBatch, %d jobs per call from %d goroutines; asynq: unkeyed, single Enqueue calls from 10 goroutines",
			commas(float64(cfg.n)), commas(float64(cfg.n)), cfg.batch, cfg.batchG),
		rounds:  cfg.rounds,
		metrics: append(enqueueMetrics(), processMetrics()...),
		summary: []string{"proc.jobs_s", "proc.go_cpu", "proc.redis_cpu", "proc.cmds", "enq.jobs_s"},
		runCol: func(ci int) (map[string]float64, error) {
			return b.keyedBurnRun(vs[ci], cfg, 50)
		},
	}
	for _, v := range vs {
		c.cols = append(c.cols, v.name)
	}
	for i := 1; i <= keyedCols; i++ {
		c.ratios = append(c.ratios, ratioCol{i, 0})
		c.goals = append(c.goals, goal{label: vs[i].name + ": process jobs/s ≥ 0.7 × unkeyed", key: "proc.jobs_s", num: i, den: 0, bound: 0.7})
	}
	if aq != nil {
		for i := 1; i <= keyedCols; i++ {
			c.ratios = append(c.ratios, ratioCol{i, len(vs) - 1})
			c.goals = append(c.goals, goal{label: vs[i].name + ": process jobs/s ≥ 10 × asynq unkeyed", key: "proc.jobs_s", num: i, den: len(vs) - 1, bound: 10})
		}
	}
	return c
}

// keyedBurnRun is one run of the keyed workload: the enqueue of cfg.n jobs, then their burn-down by
// a pool/server of conc workers.
func (b *bench) keyedBurnRun(v keyedVariant, cfg keyedConfig, conc int) (map[string]float64, error) {
	m := make(map[string]float64)
	names := []string{keyedJobName}
	var newConsumer func(onJob) consumer
	if wl, ok := v.lib.(workLib); ok {
		newConsumer = func(h onJob) consumer {
			return wl.newConsumerWith(consumerConfig{concurrency: conc, names: names, h: h}, work.JobOptions{KeyConcurrency: v.keyConc})
		}
		if v.keyConc > 0 {
			// A deployment's pools have registered the name's key limits before its jobs come (the
			// FLUSHALL before each run wiped that): a pool started and stopped writes them, so that
			// the enqueue queues per key, as it would in production, rather than in the lane.
			c := newConsumer(func(string, int64) error { return nil })
			if err := c.start(); err != nil {
				return nil, err
			}
			c.stop()
		}
		if err := b.enqueueKeyed(m, wl, cfg.n, keyOf(v.keys), cfg); err != nil {
			return nil, err
		}
	} else {
		p := v.lib.newProducer(10)
		err := b.enqueuePhase(m, cfg.n, func() (time.Duration, error) { return enqueueAll(p, names, cfg.n, 10, argsNone) })
		p.close()
		if err != nil {
			return nil, err
		}
		newConsumer = func(h onJob) consumer {
			return v.lib.newConsumer(consumerConfig{concurrency: conc, names: names, h: h})
		}
	}
	return m, b.burnDown(m, cfg.n, 0, newConsumer)
}

// enqueueKeyed is the enqueue phase of a keyed or millionkeys run on work: n no-op jobs of
// keyedJobName, job i keyed key(i), in EnqueueBatch calls of cfg.batch jobs from cfg.batchG
// goroutines.
func (b *bench) enqueueKeyed(m map[string]float64, wl workLib, n int, key func(int) string, cfg keyedConfig) error {
	p := wl.newProducer(cfg.batchG).(*workProducer)
	defer p.close()
	return b.enqueuePhase(m, n, func() (time.Duration, error) {
		return batched(n, cfg.batchG, cfg.batch, func(from, count int) error {
			return p.enqueueKeyed(keyedJobName, from, count, key, argsNone)
		})
	})
}

// lib returns the library of that name among the run's, or nil.
func (b *bench) lib(name string) library {
	for _, l := range b.libs {
		if l.name() == name {
			return l
		}
	}
	return nil
}

// millionKeysCase is the millionkeys workload, work alone: cfg.millionN jobs enqueued and processed
// unkeyed, over as many keys (one job each) and over cfg.millionSmall keys; the namespace's keys
// counted before the enqueue, while the jobs wait and after they ran; Redis's memory per waiting
// job; and the Redis CPU per job over the first cfg.millionMeasure jobs, when a million keys are
// ready against a thousand.
func (b *bench) millionKeysCase(cfg keyedConfig) *benchCase {
	wl := b.lib("work").(workLib)
	type variant struct {
		name string
		keys int
	}
	vs := []variant{{"unkeyed", 0}, {commas(float64(cfg.millionN)) + " keys", cfg.millionN}, {commas(float64(cfg.millionSmall)) + " keys", cfg.millionSmall}}
	first := "first " + commas(float64(cfg.millionMeasure)) + " jobs: "
	metrics := append(enqueueMetrics(),
		metricDef{"keys.before", "namespace keys before the enqueue", kindRate},
		metricDef{"keys.waiting", "namespace keys while the jobs wait", kindRate},
		metricDef{"keys.waiting_keyed", "  of which keyed jobs' (<ns>:keyed:*)", kindRate},
		metricDef{"keys.after", "namespace keys after processing (pool stopped)", kindRate},
		metricDef{"keys.after_keyed_state", "  keyed jobs' per-name keys (meta, conf, ready, ...)", kindRate},
		metricDef{"keys.after_keyed_keys", "  keyed jobs' per-key keys (queues, rate, in-progress)", kindRate},
		metricDef{"first.jobs_s", first + "process jobs/s", kindRate},
		metricDef{"first.go_cpu", first + "process Go CPU s/1k jobs", kindSig},
		metricDef{"first.redis_cpu", first + "process Redis CPU s/1k jobs", kindSig},
		metricDef{"first.cmds", first + "process Redis cmds/job", kindSig},
	)
	metrics = append(metrics, processMetrics()...)
	c := &benchCase{
		id:    "millionkeys",
		title: "millionkeys c=50",
		desc: fmt.Sprintf("work alone: %s no-op jobs of one job name, unkeyed, one per key over %s keys, and over %s keys (job i: key k<i mod keys>); enqueue: EnqueueBatch, %d jobs per call from %d goroutines; process: 50 workers started after the enqueue, timed over the first %s jobs and until the last; the namespace's keys counted by SCAN before the enqueue, after it and after the pool stopped",
			commas(float64(cfg.millionN)), commas(float64(cfg.millionN)), commas(float64(cfg.millionSmall)), cfg.batch, cfg.batchG, commas(float64(cfg.millionMeasure))),
		rounds:  cfg.millionRounds,
		metrics: metrics,
		summary: []string{"enq.jobs_s", "enq.bytes", "proc.jobs_s", "first.redis_cpu", "first.cmds", "keys.waiting", "keys.after", "keys.after_keyed_keys"},
		ratios:  []ratioCol{{1, 0}, {2, 0}, {1, 2}},
		goals: []goal{
			{label: vs[1].name + ": Redis bytes per waiting job ≤ 1.3 × unkeyed", key: "enq.bytes", num: 1, den: 0, atMost: true, bound: 1.3},
			{label: vs[2].name + ": Redis bytes per waiting job ≤ 1.3 × unkeyed", key: "enq.bytes", num: 2, den: 0, atMost: true, bound: 1.3},
			{label: fmt.Sprintf("%sRedis CPU per job, %s ready / %s ready ≤ 2 (O(log n): %s; O(n): %s)", first, vs[1].name, vs[2].name,
				sig3(math.Log(float64(cfg.millionN))/math.Log(float64(cfg.millionSmall))), commas(float64(cfg.millionN)/float64(cfg.millionSmall))),
				key: "first.redis_cpu", num: 1, den: 2, atMost: true, bound: 2},
		},
		runCol: func(ci int) (map[string]float64, error) {
			return b.millionKeysRun(wl, vs[ci].keys, cfg)
		},
	}
	for _, v := range vs {
		c.cols = append(c.cols, v.name)
	}
	return c
}

// millionKeysRun is one run of the millionkeys workload: cfg.millionN jobs over keys keys (0:
// unkeyed), enqueued, counted, processed, counted again.
func (b *bench) millionKeysRun(wl workLib, keys int, cfg keyedConfig) (map[string]float64, error) {
	m := make(map[string]float64)
	n := cfg.millionN
	count := func(when string) error {
		fams, err := b.countKeys(workNamespace + ":")
		if err != nil {
			return fmt.Errorf("counting the keys %s: %w", when, err)
		}
		total, state, perKey := 0.0, fams[famKeyedState], fams[famKeyedQueue]+fams[famKeyedRate]+fams[famKeyedInProgress]
		for _, v := range fams {
			total += v
		}
		switch when {
		case "before":
			m["keys.before"] = total
		case "waiting":
			m["keys.waiting"], m["keys.waiting_keyed"] = total, state+perKey
		case "after":
			m["keys.after"], m["keys.after_keyed_state"], m["keys.after_keyed_keys"] = total, state, perKey
		}
		return nil
	}
	if err := count("before"); err != nil {
		return nil, err
	}
	if err := b.enqueueKeyed(m, wl, n, keyOf(keys), cfg); err != nil {
		return nil, err
	}
	if err := count("waiting"); err != nil {
		return nil, err
	}
	measure := min(cfg.millionMeasure, n)
	r, err := b.startTimed([]int{measure, n}, nil, func(h onJob) consumer {
		return wl.newConsumer(consumerConfig{concurrency: 50, names: []string{keyedJobName}, h: h})
	})
	if err != nil {
		return nil, err
	}
	timeout := processTimeout(n)
	s1, ran1, el1, err := r.wait(0, 0, timeout)
	if err != nil {
		r.stop()
		return nil, fmt.Errorf("process: %w", err)
	}
	s2, ran2, el2, err := r.wait(1, 0, timeout)
	r.stop()
	if err != nil {
		return nil, fmt.Errorf("process: %w", err)
	}
	u := since(r.s0, s1)
	u.perJob(m, "first", ran1, el1, false)
	addBreakdown(m, "first", u, ran1)
	u = since(r.s0, s2)
	u.perJob(m, "proc", ran2, el2, false)
	addBreakdown(m, "proc", u, ran2)
	if err := count("after"); err != nil {
		return nil, err
	}
	return m, nil
}

// countKeys counts the keys that start with prefix by family (classifyKey).
func (b *bench) countKeys(prefix string) (map[string]float64, error) {
	keys, err := scanPrefix(b.srv.do, prefix)
	if err != nil {
		return nil, err
	}
	fams := make(map[string]float64)
	for _, k := range keys {
		fams[classifyKey(prefix, k)]++
	}
	return fams, nil
}
