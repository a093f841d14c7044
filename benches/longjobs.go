package main

// The longjobs workload: jobs of seconds on several pools, each pool in a child process of its
// own, timed from outside. See README.md, "longjobs".

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work"
)

// longJobName is the longjobs workload's one job name (a task type for asynq). The mixed shapes'
// quick jobs and long jobs share it: the pools see one name whose jobs turn long.
const longJobName = "longjob"

// longGoal is the most makespan / ideal the workload asks of work in the shapes of long jobs.
const longGoal = 1.15

// longConfig is the longjobs workload's flags.
type longConfig struct {
	quick      int           // no-op jobs the mixed shapes' pools run before their long jobs
	throughput time.Duration // the ideal makespan of the throughput shapes
	shapes     string        // the shapes to run, by the last part of their IDs ("a,c,1ms"); "": all
	rounds     int
}

// declareLongFlags declares the longjobs workload's flags.
func declareLongFlags() *longConfig {
	c := &longConfig{}
	flag.IntVar(&c.quick, "longjobs-quick", 5000, "no-op jobs the longjobs workload's mixed shapes run before their long jobs")
	flag.DurationVar(&c.throughput, "longjobs-throughput", 4*time.Second, "ideal makespan of the longjobs workload's 1 ms and 10 ms shapes (their jobs: this × workers ÷ job length)")
	flag.StringVar(&c.shapes, "longjobs-shapes", "", "the longjobs workload's shapes to run, comma-separated, of a,b,c,d,e,f,1ms,10ms (empty: all)")
	return c
}

// check returns an error when the flags make no sense.
func (c longConfig) check() error {
	if c.quick < 1 || c.throughput < 10*time.Millisecond {
		return errors.New("-longjobs-quick must be positive and -longjobs-throughput at least 10ms")
	}
	all := longShapes(c)
	for _, name := range strings.Split(c.shapes, ",") {
		name = strings.TrimSpace(name)
		found := name == ""
		for _, s := range all {
			found = found || s.id == "longjobs/"+name
		}
		if !found {
			return fmt.Errorf("-longjobs-shapes: no shape %q (have a,b,c,d,e,f,1ms,10ms)", name)
		}
	}
	return nil
}

// selected reports whether the shape is among those -longjobs-shapes names.
func (c longConfig) selected(s longShape) bool {
	if strings.TrimSpace(c.shapes) == "" {
		return true
	}
	for _, name := range strings.Split(c.shapes, ",") {
		if "longjobs/"+strings.TrimSpace(name) == s.id {
			return true
		}
	}
	return false
}

// longShape is a shape of the longjobs workload: jobs of length d on pools of workers each,
// enqueued once the pools are started and idle.
type longShape struct {
	id, title  string
	pools      int
	workers    int // per pool
	jobs       int
	d          time.Duration
	keys       int  // KeyConcurrency 1 over this many keys, job i keyed k<i mod keys> (work only); 0: no keys
	quick      int  // no-op jobs (keyed as the long ones) the pools run first, before the long jobs are enqueued
	throughput bool // a shape of many short jobs: its figure is jobs/s
}

// ideal is the shape's makespan if every job started the moment a worker that may run it was free:
// ceil(jobs / workers) job lengths, and with KeyConcurrency 1 at least a key's jobs one after the
// other.
func (s longShape) ideal() time.Duration {
	w := s.pools * s.workers
	turns := (s.jobs + w - 1) / w
	if s.keys > 0 {
		turns = max(turns, (s.jobs+s.keys-1)/s.keys)
	}
	return time.Duration(turns) * s.d
}

// desc describes the shape, its pools being idle for settle before the enqueue.
func (s longShape) desc(settle time.Duration) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d pools of %d workers, each in a child process, started and idle for %v before the enqueue; ", s.pools, s.workers, settle)
	if s.quick > 0 {
		fmt.Fprintf(&b, "first %s no-op jobs", commas(float64(s.quick)))
		if s.keys > 0 {
			fmt.Fprintf(&b, " over the same keys")
		}
		fmt.Fprintf(&b, ", run to the last, then (the same job name) ")
	}
	if s.keys > 0 {
		fmt.Fprintf(&b, "%d keys × %d jobs of %v (job i: key k<i mod %d>), JobOptions.KeyConcurrency 1, one EnqueueBatch call; ", s.keys, s.jobs/s.keys, s.d, s.keys)
	} else {
		fmt.Fprintf(&b, "%s jobs of %v, single Enqueue calls from %d goroutines; ", commas(float64(s.jobs)), s.d, min(s.jobs, 10))
	}
	fmt.Fprintf(&b, "makespan: from the first enqueue call to the harness's reading the last job's completion from its pool; ideal %v (%s)",
		s.ideal(), s.idealWhy())
	return b.String()
}

func (s longShape) idealWhy() string {
	w := s.pools * s.workers
	if s.throughput {
		return fmt.Sprintf("%s jobs/s: %d workers ÷ %v", commas(float64(w)/s.d.Seconds()), w, s.d)
	}
	why := fmt.Sprintf("ceil(%d jobs ÷ %d workers) × %v", s.jobs, w, s.d)
	if s.keys > 0 {
		why = fmt.Sprintf("max(%s, %d jobs a key one after the other × %v)", why, s.jobs/s.keys, s.d)
	}
	return why
}

// longShapes are the workload's shapes.
func longShapes(cfg longConfig) []longShape {
	tp := func(d time.Duration) longShape {
		n := int(cfg.throughput/d) * 20
		return longShape{id: "longjobs/" + d.String(), title: fmt.Sprintf("longjobs: %v jobs, 2 pools × 10", d),
			pools: 2, workers: 10, jobs: n, d: d, throughput: true}
	}
	return []longShape{
		{id: "longjobs/a", title: "longjobs: 6 jobs of 2s, 2 pools × 4", pools: 2, workers: 4, jobs: 6, d: 2 * time.Second},
		{id: "longjobs/b", title: "longjobs: 8 jobs of 2s, 4 pools × 2", pools: 4, workers: 2, jobs: 8, d: 2 * time.Second},
		{id: "longjobs/c", title: "longjobs: KC 1, 4 keys × 4 jobs of 1s, 2 pools × 2", pools: 2, workers: 2, jobs: 16, d: time.Second, keys: 4},
		{id: "longjobs/d", title: "longjobs: KC 1, 8 keys × 3 jobs of 1s, 4 pools × 2", pools: 4, workers: 2, jobs: 24, d: time.Second, keys: 8},
		{id: "longjobs/e", title: fmt.Sprintf("longjobs: mixed, %s quick jobs then 6 of 2s, 2 pools × 4", commas(float64(cfg.quick))),
			pools: 2, workers: 4, jobs: 6, d: 2 * time.Second, quick: cfg.quick},
		{id: "longjobs/f", title: fmt.Sprintf("longjobs: mixed, KC 1, %s quick jobs then 4 keys × 4 of 1s, 2 pools × 2", commas(float64(cfg.quick))),
			pools: 2, workers: 2, jobs: 16, d: time.Second, keys: 4, quick: cfg.quick},
		tp(time.Millisecond),
		tp(10 * time.Millisecond),
	}
}

func longMetrics(s longShape) []metricDef {
	ms := []metricDef{
		{"long.ideal_s", "ideal makespan s", kindSig},
		{"long.makespan_s", "makespan s", kindSig},
		{"long.ratio", "makespan / ideal", kindSig},
		{"long.jobs_s", "jobs/s", kindRate},
		{"long.enq_ms", "enqueue calls ms", kindSig},
		{"long.handler_ms", "handler run ms a job (its sleep as long as it lasted)", kindSig},
		{"long.ratio_run", "makespan / ideal at the handlers' own run time", kindSig},
	}
	if s.quick > 0 {
		ms = append(ms, metricDef{"long.quick_s", "quick jobs before: s from their enqueue to the last one's end", kindSig})
	}
	if !s.throughput {
		ms = append(ms, metricDef{"long.busiest", "jobs run by the busiest pool", kindRate})
	}
	return append(ms,
		metricDef{"long.pools_cpu", "pools' Go CPU s/1k jobs (child processes)", kindSig},
		metricDef{"long.redis_cpu", "Redis CPU s/1k jobs", kindSig},
		metricDef{"long.cmds", "Redis cmds/job", kindSig},
		metricDef{"long.other_cores", "other processes' CPU cores busy", kindSig},
	)
}

// longCases are the longjobs workload's cases: one per shape, the keyed ones on work alone (the
// other libraries have no keys; left out when work is not among the libraries).
func (b *bench) longCases(cfg longConfig) []*benchCase {
	var cases []*benchCase
	for _, s := range longShapes(cfg) {
		s := s
		if !cfg.selected(s) {
			continue
		}
		c := &benchCase{
			id:        s.id,
			title:     s.title,
			desc:      s.desc(b.settle),
			rounds:    cfg.rounds,
			metrics:   longMetrics(s),
			summary:   []string{"long.makespan_s", "long.ratio"},
			noSummary: true,
			run:       func(l library) (map[string]float64, error) { return b.longRun(l, s) },
		}
		if s.throughput {
			c.summary = []string{"long.jobs_s", "long.ratio"}
		}
		if s.keys > 0 {
			wl := b.lib("work")
			if wl == nil {
				continue
			}
			c.cols = []string{"work"}
			c.runCol = func(int) (map[string]float64, error) { return b.longRun(wl, s) }
		}
		cases = append(cases, c)
	}
	return cases
}

// longRun is one run of a shape on a library: the pools started, idle for -settle, then (mixed
// shapes) the quick jobs run to the last, then the jobs enqueued and timed until the harness reads
// the last one's completion.
func (b *bench) longRun(l library, s longShape) (map[string]float64, error) {
	sleep := s.d
	if s.quick > 0 {
		sleep = 0
	}
	args := []string{"-lib", l.name(), "-redis", b.srv.addr, "-concurrency", strconv.Itoa(s.workers),
		"-names", longJobName, "-asynq-task-check-interval", b.asynqCheckInterval.String(), "-sleep", sleep.String()}
	if s.keys > 0 {
		args = append(args, "-key-concurrency", "1")
	}
	ps, err := startPools(s.pools, args)
	if err != nil {
		return nil, err
	}
	defer ps.kill()
	time.Sleep(b.settle) // started, subscribed, idle

	p := l.newProducer(10)
	defer p.close()
	enqueue := func(n int) error {
		if s.keys == 0 {
			_, err := enqueueAll(p, []string{longJobName}, n, min(n, 10), argsNone)
			return err
		}
		wp, ok := p.(*workProducer)
		if !ok {
			return fmt.Errorf("%s has no keyed jobs", l.name())
		}
		_, err := batched(n, 1, 1000, func(from, count int) error {
			return wp.enqueueKeyed(longJobName, from, count, keyOf(s.keys), argsNone)
		})
		return err
	}
	timeout := 10*s.ideal() + time.Minute
	m := make(map[string]float64)
	if s.quick > 0 {
		t := time.Now()
		if err := enqueue(s.quick); err != nil {
			return nil, fmt.Errorf("quick jobs: %w", err)
		}
		at, err := ps.waitTotal(s.quick, timeout)
		if err != nil {
			return nil, fmt.Errorf("quick jobs: %w", err)
		}
		m["long.quick_s"] = at.Sub(t).Seconds()
		if err := ps.setSleep(s.d); err != nil {
			return nil, err
		}
	}
	before := ps.counts()
	cpu0, ran0, err := ps.cpu()
	if err != nil {
		return nil, err
	}
	runtime.GC()
	s0 := b.snap()
	t0 := time.Now()
	if err := enqueue(s.jobs); err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	enqEl := time.Since(t0)
	end, err := ps.waitTotal(s.quick+s.jobs, timeout)
	if err != nil {
		return nil, err
	}
	s1 := b.snap()
	cpu1, ran1, err := ps.cpu()
	if err != nil {
		return nil, err
	}
	after := ps.counts()
	busiest := 0
	for i := range after {
		busiest = max(busiest, after[i]-before[i])
	}
	makespan := end.Sub(t0)
	u := since(s0, s1)
	n := float64(s.jobs)
	m["long.ideal_s"] = s.ideal().Seconds()
	m["long.makespan_s"] = makespan.Seconds()
	m["long.ratio"] = makespan.Seconds() / s.ideal().Seconds()
	m["long.jobs_s"] = n / makespan.Seconds()
	m["long.enq_ms"] = float64(enqEl) / float64(time.Millisecond)
	// A handler's sleep lasts longer than asked (the Go runtime's timers), which no library can
	// help: the ideal scaled to the handlers' own mean run time leaves only the library's part.
	if ran := (ran1 - ran0) / n; ran > 0 && s.d > 0 {
		m["long.handler_ms"] = ran * 1000
		m["long.ratio_run"] = makespan.Seconds() / (s.ideal().Seconds() * ran / s.d.Seconds())
	}
	if !s.throughput {
		m["long.busiest"] = float64(busiest)
	}
	m["long.pools_cpu"] = (cpu1 - cpu0) * 1000 / n
	m["long.redis_cpu"] = u.redisCPU * 1000 / n
	m["long.cmds"] = float64(u.cmds) / n
	m["long.other_cores"] = max(0, (u.otherCPU-(cpu1-cpu0))/u.wall.Seconds())
	addBreakdown(m, "long", u, s.jobs)
	return m, nil
}

// poolSet is the pools of a longjobs run, child processes, with the count of handler runs each
// reported last.
type poolSet struct {
	chs  []*child
	cpuC []chan [2]float64 // answers to "cpu": Go CPU s, handler run s
	okC  []chan struct{}

	mu      sync.Mutex
	done    []int
	target  int           // the total waitTotal waits for
	at      time.Time     // when the total reached target was read
	reached chan struct{} // closed then
}

// startPools starts n pool children with args and waits until every one is started.
func startPools(n int, args []string) (*poolSet, error) {
	ps := &poolSet{done: make([]int, n)}
	for i := 0; i < n; i++ {
		ch, err := startChild("pool", args...)
		if err != nil {
			ps.kill()
			return nil, err
		}
		ps.chs = append(ps.chs, ch)
		ps.cpuC = append(ps.cpuC, make(chan [2]float64, 1))
		ps.okC = append(ps.okC, make(chan struct{}, 1))
		if _, err := ch.expect("started", 30*time.Second); err != nil {
			ps.kill()
			return nil, fmt.Errorf("pool %d: %w", i, err)
		}
		go ps.read(i)
	}
	return ps, nil
}

// read reads pool i's lines until it ends.
func (ps *poolSet) read(i int) {
	for line := range ps.chs[i].lines {
		now := time.Now()
		word, rest, _ := strings.Cut(line, " ")
		switch word {
		case "done":
			d, err := strconv.Atoi(rest)
			if err != nil {
				fmt.Fprintln(os.Stderr, "benches (pool): bad line:", line)
				continue
			}
			ps.mu.Lock()
			ps.done[i] = max(ps.done[i], d)
			total := 0
			for _, v := range ps.done {
				total += v
			}
			if ps.reached != nil && ps.at.IsZero() && total >= ps.target {
				ps.at = now
				close(ps.reached)
			}
			ps.mu.Unlock()
		case "cpu":
			v := [2]float64{math.NaN(), math.NaN()}
			for j, f := range strings.Fields(rest) {
				if x, err := strconv.ParseFloat(f, 64); err == nil && j < len(v) {
					v[j] = x
				}
			}
			ps.cpuC[i] <- v
		case "ok":
			ps.okC[i] <- struct{}{}
		default:
			fmt.Fprintln(os.Stderr, "benches (pool):", line)
		}
	}
}

// waitTotal waits until the pools' handler runs add up to target and returns when the harness read
// the completion that made them.
func (ps *poolSet) waitTotal(target int, timeout time.Duration) (time.Time, error) {
	ps.mu.Lock()
	ps.target, ps.at, ps.reached = target, time.Time{}, make(chan struct{})
	total := 0
	for _, v := range ps.done {
		total += v
	}
	if total >= target {
		ps.at = time.Now()
		close(ps.reached)
	}
	reached := ps.reached
	ps.mu.Unlock()
	select {
	case <-reached:
	case <-time.After(timeout):
		return time.Time{}, fmt.Errorf("%d of %d jobs done after %v (per pool: %v)", sum(ps.counts()), target, timeout, ps.counts())
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return ps.at, nil
}

// counts are the handler runs each pool reported.
func (ps *poolSet) counts() []int {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	return append([]int(nil), ps.done...)
}

// setSleep makes the pools' later handler runs last d.
func (ps *poolSet) setSleep(d time.Duration) error {
	for i, ch := range ps.chs {
		if err := ch.send("sleep " + d.String()); err != nil {
			return fmt.Errorf("pool %d: %w", i, err)
		}
	}
	for i := range ps.chs {
		select {
		case <-ps.okC[i]:
		case <-time.After(10 * time.Second):
			return fmt.Errorf("pool %d: no answer to sleep", i)
		}
	}
	return nil
}

// cpu is the Go CPU seconds the pools' processes have used, and the seconds their handlers have
// run, summed over handler runs.
func (ps *poolSet) cpu() (cpu, ran float64, err error) {
	for i, ch := range ps.chs {
		if err := ch.send("cpu"); err != nil {
			return 0, 0, fmt.Errorf("pool %d: %w", i, err)
		}
	}
	for i := range ps.chs {
		select {
		case v := <-ps.cpuC[i]:
			cpu += v[0]
			ran += v[1]
		case <-time.After(10 * time.Second):
			return 0, 0, fmt.Errorf("pool %d: no answer to cpu", i)
		}
	}
	return cpu, ran, nil
}

func (ps *poolSet) kill() {
	for _, ch := range ps.chs {
		ch.kill()
	}
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// poolChild runs a pool/server of conc workers serving names, whose handlers sleep for sleep (and
// KeyConcurrency keyConc for every name when it is not 0: work alone). It prints "started" once
// started and "done <n>" when handler runs have ended, n being all that have so far (lines
// coalesced under load: the newest count is what counts). Lines on its standard input: "sleep
// <duration>" sets how long the handler runs that start after it sleep (answered "ok"); "cpu" asks
// for this process's Go CPU seconds and its handlers' run time, summed (answered "cpu <s> <s>").
func poolChild(l library, in *bufio.Scanner, conc int, names []string, sleep time.Duration, keyConc uint) {
	var d, done, ran atomic.Int64
	d.Store(int64(sleep))
	ended := make(chan struct{}, 1)
	cfg := consumerConfig{concurrency: conc, names: names, h: func(string, int64) error {
		if s := time.Duration(d.Load()); s > 0 {
			t := time.Now()
			time.Sleep(s)
			ran.Add(int64(time.Since(t)))
		}
		done.Add(1)
		select {
		case ended <- struct{}{}:
		default:
		}
		return nil
	}}
	var c consumer
	if keyConc > 0 {
		wl, ok := l.(workLib)
		if !ok {
			childFatal(errors.New("pool: -key-concurrency needs work"))
		}
		c = wl.newConsumerWith(cfg, work.JobOptions{KeyConcurrency: keyConc})
	} else {
		c = l.newConsumer(cfg)
	}
	if err := c.start(); err != nil {
		childFatal(err)
	}
	var mu sync.Mutex
	say := func(format string, args ...interface{}) {
		mu.Lock()
		fmt.Printf(format+"\n", args...)
		mu.Unlock()
	}
	// A count read after the signal was taken: a run that ends after the read signals again.
	go func() {
		for range ended {
			say("done %d", done.Load())
		}
	}()
	say("started")
	for in.Scan() {
		cmd, arg, _ := strings.Cut(in.Text(), " ")
		switch cmd {
		case "sleep":
			v, err := time.ParseDuration(arg)
			if err != nil {
				childFatal(fmt.Errorf("pool: sleep %q: %w", arg, err))
			}
			d.Store(int64(v))
			say("ok")
		case "cpu":
			say("cpu %.6f %.6f", goCPU(), time.Duration(ran.Load()).Seconds())
		}
	}
	os.Exit(0)
}

// longJobsTable is the longjobs workload's summary: per shape and library, the makespan and its
// ratio to the shape's ideal (median and min–max over the rounds), and whether work meets the goal.
func (r *report) longJobsTable() *table {
	t := table{
		title: "longjobs: makespan / ideal",
		left:  2,
		notes: []string{
			"makespan: from the first enqueue call to the harness's reading the last job's completion from its pool (the pools run in child processes, started and idle before the enqueue)",
			"ideal: every job started the moment a worker that may run it was free: ceil(jobs ÷ workers) × job length, and with KeyConcurrency 1 at least the jobs of a key one after the other; for the 1 ms and 10 ms shapes, workers ÷ job length jobs/s",
			fmt.Sprintf("goal for work in the shapes of long jobs: makespan ≤ %.2f × ideal (judged on the median, and on the worst round)", longGoal),
		},
		header: []string{"shape", "library", "ideal s", "makespan s", "min..max", "÷ ideal", "min..max", "jobs/s", "busiest pool's jobs", "goal met (median / every round)"},
	}
	for _, c := range r.cases {
		if !strings.HasPrefix(c.id, "longjobs/") {
			continue
		}
		for ci, name := range c.colNames(r.libs) {
			ideal, _, _ := summarize(c.series(ci, "long.ideal_s"))
			med, lo, hi := summarize(c.series(ci, "long.makespan_s"))
			rmed, rlo, rhi := summarize(c.series(ci, "long.ratio"))
			jobs, _, _ := summarize(c.series(ci, "long.jobs_s"))
			busiest := "-"
			if xs := c.series(ci, "long.busiest"); len(xs) > 0 {
				b, _, _ := summarize(xs)
				busiest = commas(b)
			}
			met := "-"
			if name == "work" && busiest != "-" && !math.IsNaN(rmed) {
				yes := func(v float64) string {
					if v <= longGoal {
						return "yes"
					}
					return "NO"
				}
				met = yes(rmed) + " / " + yes(rhi)
			}
			t.rows = append(t.rows, []string{strings.TrimPrefix(c.title, "longjobs: "), name, sig3(ideal), sig3(med), sig3(lo) + ".." + sig3(hi),
				ratioStr(rmed), ratioStr(rlo) + ".." + ratioStr(rhi), commas(jobs), busiest, met})
		}
	}
	if len(t.rows) == 0 {
		return nil
	}
	return &t
}
