package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
)

// The five job names that carry all the traffic. For asynq they are task types on the default queue.
var trafficNames = []string{"job0", "job1", "job2", "job3", "job4"}

// manyNames returns the traffic names plus idle ones, n in all.
func manyNames(n int) []string {
	names := append([]string(nil), trafficNames...)
	for i := len(names); i < n; i++ {
		names = append(names, fmt.Sprintf("idle%03d", i))
	}
	return names
}

// enqueueAll enqueues n jobs, round-robin over names, with single Enqueue calls from g goroutines.
func enqueueAll(p producer, names []string, n, g int, a args) (time.Duration, error) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func(k int) {
			defer wg.Done()
			for i := k; i < n; i += g {
				if err := p.enqueue(names[i%len(names)], a); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}(k)
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// batched makes n jobs' calls in batches of batch jobs from g goroutines: each call is f(from,
// count) for jobs from..from+count-1. It returns the time all calls took and the first error.
func batched(n, g, batch int, f func(from, count int) error) (time.Duration, error) {
	var wg sync.WaitGroup
	var next atomic.Int64
	var mu sync.Mutex
	var firstErr error
	start := time.Now()
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				from := int(next.Add(int64(batch))) - batch
				if from >= n {
					return
				}
				if err := f(from, min(batch, n-from)); err != nil {
					mu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					mu.Unlock()
					return
				}
			}
		}()
	}
	wg.Wait()
	return time.Since(start), firstErr
}

// processTimeout bounds a process phase of n jobs.
func processTimeout(n int) time.Duration { return time.Minute + time.Duration(n)*2*time.Millisecond }

// burnRun is one burn-down: n no-op jobs over the traffic names are enqueued from enqG goroutines
// (the enqueue phase; when batch > 0 and the library has a batch enqueue, in batches of that many
// jobs from batchG goroutines instead), then a pool/server of the given concurrency serving names is started and
// timed until its handlers have run n jobs, or for limit when limit > 0 and that is shorter (the
// process phase; its per-job figures are over the jobs run, proc.jobs).
func (b *bench) burnRun(l library, conc, n, enqG, batch, batchG int, names []string, limit time.Duration) (map[string]float64, error) {
	m := make(map[string]float64)
	p := l.newProducer(max(enqG, batchG))
	err := b.enqueuePhase(m, n, func() (time.Duration, error) {
		if bp, ok := p.(batchProducer); ok && batch > 0 {
			return batched(n, batchG, batch, func(from, count int) error { return bp.enqueueBatch(trafficNames, from, count) })
		}
		return enqueueAll(p, trafficNames, n, enqG, argsNone)
	})
	p.close()
	if err != nil {
		return nil, err
	}
	return m, b.burnDown(m, n, limit, func(h onJob) consumer {
		return l.newConsumer(consumerConfig{concurrency: conc, names: names, h: h})
	})
}

// enqueuePhase measures an enqueue of n jobs, made by enqueue (which returns the time its calls
// took), into m's enq.* metrics.
func (b *bench) enqueuePhase(m map[string]float64, n int, enqueue func() (time.Duration, error)) error {
	runtime.GC()
	s0 := b.snap()
	el, err := enqueue()
	s1 := b.snap()
	if err != nil {
		return fmt.Errorf("enqueue: %w", err)
	}
	u := since(s0, s1)
	u.perJob(m, "enq", n, el, true)
	addBreakdown(m, "enq", u, n)
	return nil
}

// burnDown is a process phase: it starts the consumer that newConsumer makes around the handler it
// is given and times it until the handler has run n jobs, or for limit when limit > 0 and that is
// shorter, into m's proc.* metrics (over the jobs run, proc.jobs). The consumer is stopped after.
func (b *bench) burnDown(m map[string]float64, n int, limit time.Duration, newConsumer func(onJob) consumer) error {
	r, err := b.startTimed([]int{n}, nil, newConsumer)
	if err != nil {
		return err
	}
	s, ran, el, err := r.wait(0, limit, processTimeout(n))
	// Measured up to the last handler run (or the limit): the few outcomes still being recorded then
	// (at most about two per worker) are left out, and so is the stop.
	r.stop()
	if err != nil {
		return fmt.Errorf("process: %w", err)
	}
	if ran == 0 {
		return fmt.Errorf("process: no job ran in %v", limit)
	}
	u := since(r.s0, s)
	u.perJob(m, "proc", ran, el, false)
	m["proc.jobs"] = float64(ran)
	addBreakdown(m, "proc", u, ran)
	return nil
}

// timedRun is a consumer started by startTimed, its handler runs counted, with the marks (counts of
// handler runs) it is waited for.
type timedRun struct {
	b           *bench
	c           consumer
	done        atomic.Int64
	marks       []int
	reached     []chan struct{} // reached[i] is closed when done reaches marks[i]
	t0          time.Time
	s0          snapshot // taken just before the start
	stopProfile func()
	stopped     bool
}

// startTimed starts the consumer that newConsumer makes around a handler that counts its runs and
// then calls then (when not nil), after a GC, with a profile (-profile) running and a snapshot taken.
func (b *bench) startTimed(marks []int, then onJob, newConsumer func(onJob) consumer) (*timedRun, error) {
	r := &timedRun{b: b, marks: marks, reached: make([]chan struct{}, len(marks))}
	for i := range r.reached {
		r.reached[i] = make(chan struct{})
	}
	r.c = newConsumer(func(id string, ts int64) error {
		d := int(r.done.Add(1))
		for i, mk := range r.marks {
			if d == mk {
				close(r.reached[i])
			}
		}
		if then != nil {
			return then(id, ts)
		}
		return nil
	})
	runtime.GC()
	r.stopProfile = b.startProfile()
	r.s0 = b.snap()
	r.t0 = time.Now()
	if err := r.c.start(); err != nil {
		r.stopProfile()
		return nil, fmt.Errorf("start: %w", err)
	}
	return r, nil
}

// wait waits until the handler has run marks[i] times, or for limit from the start when limit > 0
// and that comes first, and returns the time since the start, a snapshot taken right after and the
// handler runs counted right after that (more than marks[i] when the consumer ran on meanwhile). It
// fails after timeout (from the start).
func (r *timedRun) wait(i int, limit, timeout time.Duration) (snapshot, int, time.Duration, error) {
	var limitC <-chan time.Time
	if limit > 0 {
		limitC = time.After(time.Until(r.t0.Add(limit)))
	}
	select {
	case <-r.reached[i]:
	case <-limitC:
	case <-time.After(time.Until(r.t0.Add(timeout))):
		return snapshot{}, 0, 0, fmt.Errorf("%d of %d jobs after %v", r.done.Load(), r.marks[i], timeout)
	}
	el := time.Since(r.t0)
	s := r.b.snap()
	return s, int(r.done.Load()), el, nil
}

// stop stops the profile and the consumer (once).
func (r *timedRun) stop() {
	if r.stopped {
		return
	}
	r.stopped = true
	r.stopProfile()
	r.c.stop()
}

// latencyRun offers rate jobs/s for dur to a started pool/server of concurrency conc, from a paced
// producer of g goroutines in a child process, and records enqueue-to-start latencies: each job
// carries the time just before its Enqueue call, and the handler subtracts it from the time it
// starts. The harness process is the consumer alone: its CPU and socket writes are the pool's; the
// producer reports its own.
func (b *bench) latencyRun(l library, rate int, dur time.Duration, conc, g int, names []string) (map[string]float64, error) {
	total := int(float64(rate) * dur.Seconds())
	if total < 1 {
		return nil, errors.New("latency: no job to send")
	}
	lats := make([]time.Duration, total)
	var done atomic.Int64
	finished := make(chan struct{})
	c := l.newConsumer(consumerConfig{concurrency: conc, names: names, wantTS: true, h: func(_ string, ts int64) error {
		now := time.Now().UnixNano()
		i := done.Add(1) - 1
		if i < int64(total) {
			lats[i] = time.Duration(now - ts*1000) // ts: Unix µs
		}
		if i+1 == int64(total) {
			close(finished)
		}
		return nil
	}})
	if err := c.start(); err != nil {
		return nil, fmt.Errorf("start: %w", err)
	}
	stopped := false
	defer func() {
		if !stopped {
			c.stop()
		}
	}()
	time.Sleep(b.settle) // started, subscribed, idle
	ch, err := startChild("producer", "-lib", l.name(), "-redis", b.srv.addr,
		"-rate", strconv.Itoa(rate), "-n", strconv.Itoa(total), "-goroutines", strconv.Itoa(g))
	if err != nil {
		return nil, err
	}
	defer ch.kill()
	if _, err := ch.expect("ready", 30*time.Second); err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	runtime.GC()
	stopProfile := b.startProfile()
	defer stopProfile()
	s0 := b.snap()
	if err := ch.send("go"); err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	line, err := ch.expect("{", dur+time.Minute)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	var res producerResult
	if err := json.Unmarshal([]byte(line), &res); err != nil {
		return nil, fmt.Errorf("producer: %q: %w", line, err)
	}
	if res.Errors > 0 {
		return nil, fmt.Errorf("latency: %d enqueue errors", res.Errors)
	}
	select {
	case <-finished:
	case <-time.After(time.Minute):
		return nil, fmt.Errorf("latency: %d of %d jobs ran", done.Load(), total)
	}
	s1 := b.snap()
	stopProfile()
	c.stop()
	stopped = true
	ch.wait(10 * time.Second)
	sort.Slice(lats, func(i, j int) bool { return lats[i] < lats[j] })
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	ft := float64(total)
	u := since(s0, s1)
	m := map[string]float64{
		"lat.achieved":    float64(res.Sent) / res.SendS,
		"lat.p50":         ms(percentile(lats, 0.50)),
		"lat.p99":         ms(percentile(lats, 0.99)),
		"lat.p999":        ms(percentile(lats, 0.999)),
		"lat.max":         ms(lats[len(lats)-1]),
		"lat.go_cpu":      u.goCPU * 1000 / ft,
		"lat.prod_go_cpu": res.CPUS * 1000 / ft,
		"lat.redis_cpu":   u.redisCPU * 1000 / ft,
		"lat.cmds":        float64(u.cmds) / ft,
		"lat.rt":          float64(u.rt) / ft,
		"lat.prod_rt":     float64(res.RT) / ft,
		"lat.go_cores":    u.goCPU / u.wall.Seconds(),
		"lat.other_cores": max(0, (u.otherCPU-res.CPUS)/u.wall.Seconds()),
	}
	addBreakdown(m, "lat", u, total)
	return m, nil
}

// idleRun starts pools/servers of 100 workers in all (split among pools, at least one each) serving
// names with nothing to do and measures, after they settled, the load they put on Redis for dur.
func (b *bench) idleRun(l library, dur time.Duration, names []string, pools int) (map[string]float64, error) {
	var cs []consumer
	defer func() {
		for _, c := range cs {
			c.stop()
		}
	}()
	for range pools {
		c := l.newConsumer(consumerConfig{concurrency: max(1, 100/pools), names: names, h: func(string, int64) error { return nil }})
		if err := c.start(); err != nil {
			return nil, fmt.Errorf("start: %w", err)
		}
		cs = append(cs, c)
	}
	time.Sleep(b.settle)
	s0 := b.snap()
	t0 := time.Now()
	time.Sleep(dur)
	s1 := b.snap()
	el := time.Since(t0).Seconds()
	u := since(s0, s1)
	m := map[string]float64{
		"idle.cmds_s":      float64(u.cmds) / el,
		"idle.total_s":     float64(u.totalCmds) / el,
		"idle.rt_s":        float64(u.rt) / el,
		"idle.redis_cpu":   u.redisCPU * 1000 / el,
		"idle.go_cpu":      u.goCPU * 1000 / el,
		"idle.other_cores": max(0, u.otherCPU/u.wall.Seconds()),
		"idle.mem_growth":  float64(u.mem),
	}
	for k, v := range u.byCmd {
		m["cmds:idle:"+k] = float64(v) / el
	}
	return m, nil
}

// enqueueRun measures n single Enqueue calls of a small-args job from g goroutines.
func (b *bench) enqueueRun(l library, n, g int) (map[string]float64, error) {
	m := make(map[string]float64)
	p := l.newProducer(g)
	defer p.close()
	runtime.GC()
	s0 := b.snap()
	el, err := enqueueAll(p, trafficNames, n, g, argsSmall)
	s1 := b.snap()
	if err != nil {
		return nil, err
	}
	u := since(s0, s1)
	u.perJob(m, "enq", n, el, true)
	addBreakdown(m, "enq", u, n)
	return m, nil
}

// addBreakdown records the Redis commands of a phase per job, by command (shown with -v).
func addBreakdown(m map[string]float64, phase string, u usage, n int) {
	for k, v := range u.byCmd {
		m["cmds:"+phase+":"+k] = float64(v) / float64(n)
	}
}

// crashRun starts a pool/server of concurrency conc serving names in a child process, lets it work
// for runFor, kills it with SIGKILL and counts, from Redis, the jobs that will run twice: those the
// killed process holds as in progress (not acknowledged) although its handlers had started them,
// finished or not. With rate 0 the pool starts on a backlog of n no-op jobs; with rate > 0 it starts
// on empty queues and the harness offers rate jobs/s while it runs.
func (b *bench) crashRun(l library, n, rate int, runFor time.Duration, conc int, names []string) (map[string]float64, error) {
	if rate == 0 {
		p := l.newProducer(10)
		_, err := enqueueAll(p, trafficNames, n, 10, argsNone)
		p.close()
		if err != nil {
			return nil, fmt.Errorf("enqueue: %w", err)
		}
	}
	ch, err := startChild("crash", "-lib", l.name(), "-redis", b.srv.addr, "-concurrency", strconv.Itoa(conc),
		"-names", strings.Join(names, ","), "-asynq-task-check-interval", b.asynqCheckInterval.String())
	if err != nil {
		return nil, err
	}
	defer ch.kill()
	if _, err := ch.expect("started", 30*time.Second); err != nil {
		return nil, fmt.Errorf("crash child: %w", err)
	}
	t0 := time.Now()
	var p producer
	var stop chan struct{}
	var sending sync.WaitGroup
	var sendErrs int64
	if rate > 0 {
		p = l.newProducer(8)
		stop = make(chan struct{})
		sending.Add(1)
		go func() {
			defer sending.Done()
			_, sendErrs, _ = pace(p, rate, int(float64(rate)*(runFor+time.Minute).Seconds()), 8, argsNone, stop)
		}()
	}
	time.Sleep(runFor)
	ch.kill()
	ranFor := time.Since(t0)
	if rate > 0 {
		close(stop)
		sending.Wait()
		p.close()
		if sendErrs > 0 {
			return nil, fmt.Errorf("crash: %d enqueue errors", sendErrs)
		}
	}
	// What the killed process had written to its sockets may still be in them: Redis has run all of
	// it once it has closed every connection but the harness's own.
	deadline := time.Now().Add(10 * time.Second)
	for {
		nc, err := b.srv.connectedClients()
		if err != nil {
			return nil, err
		}
		if nc <= 1 {
			break
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("crash: %d Redis connections still open 10s after the kill", nc)
		}
		time.Sleep(5 * time.Millisecond)
	}
	set := func(key string) (map[string]bool, error) {
		ids, err := redigo.Strings(b.srv.do("SMEMBERS", key))
		if err != nil {
			return nil, err
		}
		s := make(map[string]bool, len(ids))
		for _, id := range ids {
			s[id] = true
		}
		return s, nil
	}
	started, err := set(crashStartedKey)
	if err != nil {
		return nil, err
	}
	finished, err := set(crashFinishedKey)
	if err != nil {
		return nil, err
	}
	if rate == 0 && len(started) >= n {
		return nil, fmt.Errorf("crash: all %d jobs of the backlog started before the kill: make -crash-n larger or -crash-run shorter", n)
	}
	inProg, err := l.inProgress(b.srv.do)
	if err != nil {
		return nil, fmt.Errorf("in progress: %w", err)
	}
	var finUnacked, startedOnly, neverStarted int
	for _, id := range inProg {
		switch {
		case finished[id]:
			finUnacked++
		case started[id]:
			startedOnly++
		default:
			neverStarted++
		}
	}
	// By Little's law a count of jobs in a state is the rate times the time a job spends in it, so
	// dividing by the rate compares libraries that run at different rates: the time a handler runs
	// (the same handler for all) and the time a finished job waits for its acknowledgement.
	jobsS := float64(len(finished)) / ranFor.Seconds()
	if jobsS == 0 {
		return nil, fmt.Errorf("crash: no job finished in the %v before the kill", ranFor)
	}
	return map[string]float64{
		"crash.ran_s":              ranFor.Seconds(),
		"crash.finished":           float64(len(finished)),
		"crash.jobs_s":             jobsS,
		"crash.run_window_ms":      1000 * float64(startedOnly) / jobsS,
		"crash.fin_window_ms":      1000 * float64(finUnacked) / jobsS,
		"crash.inprog":             float64(len(inProg)),
		"crash.twice":              float64(finUnacked + startedOnly),
		"crash.fin_unacked":        float64(finUnacked),
		"crash.started_unfinished": float64(startedOnly),
		"crash.never_started":      float64(neverStarted),
	}, nil
}
