package main

// The groups workload: work's grouped jobs (EnqueueOptions.Group, WorkerPool.GroupJob) end to end
// against its unkeyed jobs and asynq's task aggregation, and its debounced enqueues
// (EnqueueOptions.Debounce) against plain ones. Two cases of variants (see benchCase). See
// README.md, "groups".

import (
	"context"
	"encoding/binary"
	"errors"
	"flag"
	"fmt"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"

	"github.com/workqueue/work"
)

// groupsConfig is the groups workload's flags.
type groupsConfig struct {
	n         int           // jobs per end-to-end run
	groups    int           // groups they go into, job i into group i mod groups
	size      int           // GroupOptions.MaxSize, asynq's GroupMaxSize
	delay     time.Duration // GroupOptions.MaxDelay, asynq's GroupMaxDelay
	workers   int           // the pool's workers, asynq's concurrency
	enqueuers int           // goroutines making the enqueue calls
	debN      int           // enqueue calls per debounce run
	debIDs    int           // debounce IDs, call i with ID i mod debIDs
	debWindow time.Duration // Debounce.Window
	rounds    int
}

func declareGroupsFlags() *groupsConfig {
	c := &groupsConfig{}
	flag.IntVar(&c.n, "groups-n", 100000, "groups: jobs per end-to-end run")
	flag.IntVar(&c.groups, "groups-groups", 100, "groups: groups the jobs go into, in turn")
	flag.IntVar(&c.size, "groups-size", 100, "groups: most jobs per handler call (GroupOptions.MaxSize, asynq GroupMaxSize)")
	flag.DurationVar(&c.delay, "groups-delay", time.Second, "groups: GroupOptions.MaxDelay and asynq GroupMaxDelay")
	flag.IntVar(&c.workers, "groups-workers", 10, "groups: the pool's workers (asynq: Concurrency)")
	flag.IntVar(&c.enqueuers, "groups-enqueuers", 10, "groups: goroutines making the Enqueue calls")
	flag.IntVar(&c.debN, "groups-debounce-n", 50000, "groups: Enqueue calls per debounce run")
	flag.IntVar(&c.debIDs, "groups-debounce-ids", 1000, "groups: debounce IDs the debounced calls take in turn")
	flag.DurationVar(&c.debWindow, "groups-debounce-window", time.Minute, "groups: Debounce.Window of the debounced calls")
	flag.IntVar(&c.rounds, "groups-rounds", 0, "groups: rounds (0: -rounds)")
	return c
}

func (c *groupsConfig) check(rounds int) error {
	if c.rounds == 0 {
		c.rounds = rounds
	}
	if c.n < 1 || c.groups < 1 || c.size < 1 || c.size > work.MaxGroupSize || c.workers < 1 || c.enqueuers < 1 ||
		c.debN < 1 || c.debIDs < 1 || c.rounds < 1 {
		return fmt.Errorf("the -groups-* counts must be positive (-groups-size at most %d)", work.MaxGroupSize)
	}
	// asynq takes no group delay under a second, and work times groups and bursts to the second.
	if c.delay < time.Second || c.debWindow < time.Second {
		return errors.New("-groups-delay and -groups-debounce-window must be at least 1s")
	}
	return nil
}

// The job names (task types) of the groups workload.
const (
	groupedJobName   = "grouped"
	aggregatedTask   = "grouped:aggregated"
	debouncedJobName = "debounced"
)

// groupsCases are the groups workload's two cases: grouped jobs end to end, debounced enqueues.
func (b *bench) groupsCases(cfg *groupsConfig) []*benchCase {
	wl, aq := b.lib("work").(workLib), b.lib("asynq")
	addr := b.srv.addr
	cols := []string{"grouped", "unkeyed"}
	if aq != nil {
		cols = append(cols, "asynq aggregation")
	}
	e2e := &benchCase{
		id:    "groups/e2e",
		title: "groups: grouped jobs end to end",
		desc: fmt.Sprintf("%s no-op jobs of one job name, single Enqueue calls from %d goroutines (job i: call i mod %d), to a pool/server of %d workers started %v before; timed from the first enqueue to the last job handled (a member of a call counted as a job); "+
			"grouped: work, EnqueueOptions.Group g<i mod %d>, WorkerPool.GroupJob with MaxSize %d and MaxDelay %v, a no-op handler counting the jobs of its calls; unkeyed: work, plain jobs, a no-op handler; "+
			"asynq aggregation: asynq.Group(g<i mod %d>), GroupMaxSize %d, GroupMaxDelay %v, GroupGracePeriod 1s (its least, also its check interval), an aggregator packing the members' payloads into one task whose handler counts them",
			commas(float64(cfg.n)), cfg.enqueuers, cfg.enqueuers, cfg.workers, b.settle,
			cfg.groups, cfg.size, cfg.delay, cfg.groups, cfg.size, cfg.delay),
		rounds: cfg.rounds,
		cols:   cols,
		metrics: []metricDef{
			{"e2e.jobs_s", "end to end jobs/s (first enqueue → last job handled)", kindRate},
			{"e2e.enq_s", "enqueue calls/s (while the pool runs)", kindRate},
			{"e2e.per_call", "jobs per handler call", kindSig},
			{"e2e.go_cpu", "Go CPU s/1k jobs", kindSig},
			{"e2e.redis_cpu", "Redis CPU s/1k jobs", kindSig},
			{"e2e.go_cores", "Go CPU cores busy", kindSig},
			{"e2e.redis_cores", "Redis CPU cores busy", kindSig},
			{"e2e.other_cores", "other processes' CPU cores busy", kindSig},
			{"e2e.cmds", "Redis cmds/job", kindSig},
			{"e2e.rt", "client socket writes/job", kindSig},
		},
		summary: []string{"e2e.jobs_s", "e2e.enq_s", "e2e.per_call", "e2e.go_cpu", "e2e.redis_cpu", "e2e.cmds"},
		ratios:  []ratioCol{{0, 1}},
		goals:   []goal{{label: "grouped: end to end jobs/s ≥ 1 × unkeyed", key: "e2e.jobs_s", num: 0, den: 1, bound: 1}},
		runCol: func(col int) (map[string]float64, error) {
			switch col {
			case 0:
				return b.groupedRun(cfg, newWorkGrouped(addr, cfg, true))
			case 1:
				return b.groupedRun(cfg, newWorkGrouped(addr, cfg, false))
			}
			return b.groupedRun(cfg, newAsynqGrouped(addr, cfg, b.asynqCheckInterval))
		},
	}
	if aq != nil {
		e2e.ratios = append(e2e.ratios, ratioCol{0, 2})
		e2e.goals = append(e2e.goals, goal{label: "grouped: end to end jobs/s ≥ 10 × asynq aggregation", key: "e2e.jobs_s", num: 0, den: 2, bound: 10})
	}

	deb := &benchCase{
		id:    "groups/debounce",
		title: "groups: debounced enqueues",
		desc: fmt.Sprintf("%s single Enqueue calls of a job with small args ({\"addr\":\"test@example.com\",\"n\":1}) from %d goroutines, nothing consuming; debounced: EnqueueWith with Debounce{ID: d<i mod %d>, Window: %v} (so %s pending jobs at the end; bytes/queued job is the memory over the calls); plain: Enqueue",
			commas(float64(cfg.debN)), cfg.enqueuers, cfg.debIDs, cfg.debWindow, commas(float64(min(cfg.debIDs, cfg.debN)))),
		rounds:  cfg.rounds,
		cols:    []string{"debounced", "plain"},
		metrics: enqueueMetrics(),
		summary: []string{"enq.jobs_s", "enq.go_cpu", "enq.redis_cpu", "enq.cmds", "enq.rt"},
		ratios:  []ratioCol{{0, 1}},
		goals:   []goal{{label: "debounced: enqueue calls/s ≥ 0.5 × plain", key: "enq.jobs_s", num: 0, den: 1, bound: 0.5}},
		runCol: func(col int) (map[string]float64, error) {
			return b.debounceRun(wl, cfg, col == 0)
		},
	}
	return []*benchCase{e2e, deb}
}

// groupedSide is one column of the end-to-end case: what enqueues job i, and a consumer that calls
// handled with the number of jobs each handler call got.
type groupedSide interface {
	enqueue(i int) error
	consumer(handled func(jobs int)) consumer
	close()
}

// groupedRun is one end-to-end run: the consumer started and settled, then the enqueue calls, timed
// until the handlers have had every job.
func (b *bench) groupedRun(cfg *groupsConfig, side groupedSide) (map[string]float64, error) {
	defer side.close()
	var jobs, calls atomic.Int64
	done := make(chan struct{})
	n := int64(cfg.n)
	c := side.consumer(func(k int) {
		calls.Add(1)
		if now := jobs.Add(int64(k)); now >= n && now-int64(k) < n {
			close(done)
		}
	})
	if err := c.start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	defer c.stop()
	time.Sleep(b.settle)
	runtime.GC()
	s0 := b.snap()
	t0 := time.Now()
	enqEl, err := eachCall(cfg.n, cfg.enqueuers, side.enqueue)
	if err != nil {
		return nil, fmt.Errorf("enqueue: %w", err)
	}
	select {
	case <-done:
	case <-time.After(processTimeout(cfg.n)):
		return nil, fmt.Errorf("%d of %d jobs handled after %v", jobs.Load(), n, processTimeout(cfg.n))
	}
	el := time.Since(t0)
	s1 := b.snap()
	m := map[string]float64{}
	since(s0, s1).perJob(m, "e2e", cfg.n, el, false)
	m["e2e.enq_s"] = float64(cfg.n) / enqEl.Seconds()
	m["e2e.per_call"] = float64(jobs.Load()) / float64(calls.Load())
	return m, nil
}

// eachCall makes calls f(0)..f(n-1) from g goroutines, goroutine k making calls k, k+g, ... (as
// enqueueAll does), and returns the time they took and the first error.
func eachCall(n, g int, f func(i int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	var once sync.Once
	var firstErr error
	start := time.Now()
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := k; i < n; i += g {
				if err := f(i); err != nil {
					once.Do(func() { firstErr = err })
					return
				}
			}
		}(k)
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// groupKey is the group of job i.
func groupKey(i, groups int) string { return "g" + strconv.Itoa(i%groups) }

// workGrouped is work's side of the end-to-end case: grouped jobs, or (grouped false) plain ones.
type workGrouped struct {
	wl      workLib
	cfg     *groupsConfig
	grouped bool
	p       *workProducer
}

func newWorkGrouped(addr string, cfg *groupsConfig, grouped bool) *workGrouped {
	wl := workLib{addr: addr}
	return &workGrouped{wl: wl, cfg: cfg, grouped: grouped, p: wl.newProducer(cfg.enqueuers).(*workProducer)}
}

func (w *workGrouped) enqueue(i int) error {
	if !w.grouped {
		_, err := w.p.e.Enqueue(groupedJobName, nil)
		return err
	}
	_, err := w.p.e.EnqueueWith(groupedJobName, nil, work.EnqueueOptions{Group: groupKey(i, w.cfg.groups)})
	return err
}

func (w *workGrouped) consumer(handled func(int)) consumer {
	if !w.grouped {
		return w.wl.newConsumer(consumerConfig{concurrency: w.cfg.workers, names: []string{groupedJobName},
			h: func(string, int64) error { handled(1); return nil }})
	}
	pool := redigoPool(w.wl.addr, w.cfg.workers+10)
	wp := work.NewWorkerPool(workContext{}, uint(w.cfg.workers), workNamespace, pool)
	wp.GroupJob(groupedJobName, work.GroupOptions{MaxSize: w.cfg.size, MaxDelay: w.cfg.delay}, func(jobs []*work.Job) error {
		handled(len(jobs))
		return nil
	})
	return &workConsumer{pool: pool, wp: wp}
}

func (w *workGrouped) close() { w.p.close() }

// asynqGrouped is asynq's side: tasks enqueued into groups, aggregated by its server.
type asynqGrouped struct {
	addr          string
	cfg           *groupsConfig
	checkInterval time.Duration
	c             *asynq.Client
}

func newAsynqGrouped(addr string, cfg *groupsConfig, checkInterval time.Duration) *asynqGrouped {
	return &asynqGrouped{addr: addr, cfg: cfg, checkInterval: checkInterval,
		c: asynq.NewClient(asynqConnOpt{addr: addr, poolSize: cfg.enqueuers + 10})}
}

func (a *asynqGrouped) enqueue(i int) error {
	_, err := a.c.Enqueue(asynq.NewTask(groupedJobName, nil), asynq.Group(groupKey(i, a.cfg.groups)))
	return err
}

func (a *asynqGrouped) consumer(handled func(int)) consumer {
	srv := asynq.NewServer(asynqConnOpt{addr: a.addr, poolSize: a.cfg.workers + 10}, asynq.Config{
		Concurrency:       a.cfg.workers,
		LogLevel:          asynq.ErrorLevel,
		TaskCheckInterval: a.checkInterval,
		GroupMaxSize:      a.cfg.size,
		GroupMaxDelay:     a.cfg.delay,
		GroupGracePeriod:  time.Second,
		GroupAggregator:   asynq.GroupAggregatorFunc(packTasks),
	})
	mux := asynq.NewServeMux()
	mux.HandleFunc(aggregatedTask, func(_ context.Context, t *asynq.Task) error {
		k, err := countPacked(t.Payload())
		if err != nil {
			return err
		}
		handled(k)
		return nil
	})
	return &asynqConsumer{srv: srv, mux: mux}
}

func (a *asynqGrouped) close() { a.c.Close() }

// packTasks is the aggregator: one task carrying every member's payload, each after its length,
// so that its handler gets the members as work's group handler does.
func packTasks(_ string, tasks []*asynq.Task) *asynq.Task {
	var buf []byte
	for _, t := range tasks {
		buf = binary.AppendUvarint(buf, uint64(len(t.Payload())))
		buf = append(buf, t.Payload()...)
	}
	return asynq.NewTask(aggregatedTask, buf)
}

// countPacked counts the members packTasks packed.
func countPacked(buf []byte) (int, error) {
	k := 0
	for len(buf) > 0 {
		l, w := binary.Uvarint(buf)
		if w <= 0 || uint64(len(buf)-w) < l {
			return k, errors.New("a malformed aggregated task")
		}
		buf = buf[w+int(l):]
		k++
	}
	return k, nil
}

// debounceRun is one run of the debounce case: cfg.debN enqueue calls, debounced or plain.
func (b *bench) debounceRun(wl workLib, cfg *groupsConfig, debounced bool) (map[string]float64, error) {
	p := wl.newProducer(cfg.enqueuers).(*workProducer)
	defer p.close()
	m := map[string]float64{}
	return m, b.enqueuePhase(m, cfg.debN, func() (time.Duration, error) {
		return eachCall(cfg.debN, cfg.enqueuers, func(i int) error {
			if !debounced {
				_, err := p.e.Enqueue(debouncedJobName, workArgs(argsSmall))
				return err
			}
			_, err := p.e.EnqueueWith(debouncedJobName, workArgs(argsSmall), work.EnqueueOptions{
				Debounce: &work.Debounce{ID: "d" + strconv.Itoa(i%cfg.debIDs), Window: cfg.debWindow}})
			return err
		})
	})
}
