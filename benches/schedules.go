package main

// The schedules workload: schedules set at run time (Client.SetSchedules), stored by the million and
// fired by the pools; and, for the memory they take, the same schedules in BullMQ's layout of job
// schedulers. See README.md, "schedules".

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"math"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// The schedules' zone and job names. The stored schedules enqueue schedStoredJob on a weekday some
// days ahead; the ones the firing cost is measured on enqueue schedDueJob, which no pool serves (its
// jobs stay queued, so the measure is the firing alone), after a few of schedWarmJob; those of the
// burst enqueue schedBurstJob, which the pools serve.
const (
	schedZone      = "Europe/Berlin"
	schedStoredJob = "report"
	schedDueJob    = "reminder"
	schedBurstJob  = "digest"
	schedWarmJob   = "warmup"
)

// schedConfig is the schedules workload's configuration.
type schedConfig struct {
	n, due, burst  int           // schedules stored; due at one second, fired alone and among n; due in the burst
	fires          int           // firings of due schedules measured
	batch, batchG  int           // schedules per SetSchedules call, goroutines making them
	idle           time.Duration // how long idle pools are watched
	otherRate      int           // other jobs/s offered during the burst
	otherSenders   int           // goroutines offering them, one Enqueue call at a time each
	pools, workers int           // pools, and workers in each
	bullmq         bool          // write n job schedulers in BullMQ's layout too
	rounds         int
}

// declareScheduleFlags declares the schedules workload's flags.
func declareScheduleFlags() *schedConfig {
	c := &schedConfig{batchG: 4, pools: 2, workers: 25}
	flag.IntVar(&c.n, "schedules-n", 1000000, "schedules stored in the schedules workload's large variant (and job schedulers in BullMQ's layout)")
	flag.IntVar(&c.due, "schedules-due", 1000, "schedules due at one second whose firing cost the schedules workload compares, alone and among -schedules-n stored")
	flag.IntVar(&c.fires, "schedules-fires", 3, "firings of -schedules-due schedules, each at its own second, over which the schedules workload measures the Redis CPU per tick")
	flag.IntVar(&c.burst, "schedules-burst", 100000, "schedules due at one second in the schedules workload's burst")
	flag.IntVar(&c.batch, "schedules-batch", 10000, "schedules per Client.SetSchedules call in the schedules workload (from 4 goroutines)")
	flag.DurationVar(&c.idle, "schedules-idle", 20*time.Second, "how long the schedules workload watches idle pools")
	flag.IntVar(&c.otherRate, "schedules-other-rate", 1000, "other jobs/s offered to the pools during the schedules workload's burst")
	flag.IntVar(&c.otherSenders, "schedules-other-senders", 256, "goroutines offering -schedules-other-rate, each making one Enqueue call at a time, as an application's request handlers do: enough that calls held up behind the burst's scripts do not hold back the rate offered")
	flag.BoolVar(&c.bullmq, "schedules-bullmq", true, "also write -schedules-n job schedulers in BullMQ's Redis layout and measure their memory")
	flag.IntVar(&c.rounds, "schedules-rounds", 3, "rounds of the schedules workload (0: -rounds); 3, not 5, as a round takes minutes")
	return c
}

// check checks the flags once parsed, given -rounds and the libraries of the run.
func (c *schedConfig) check(rounds int, libs []string) error {
	if !contains(libs, "work") {
		return errors.New("the schedules workload needs work among -libs")
	}
	if c.n < 1 || c.due < 1 || c.fires < 1 || c.burst < 1 || c.batch < 1 || c.idle <= 0 || c.otherRate < 1 || c.otherSenders < 1 || c.rounds < 0 {
		return errors.New("the schedules flags take positive numbers (-schedules-rounds may be 0)")
	}
	if c.rounds == 0 {
		c.rounds = rounds
	}
	return nil
}

// schedVariant is a column of the schedules workload.
type schedVariant int

const (
	schedNone   schedVariant = iota // no schedule: idle pools
	schedSmall                      // c.due schedules, all due at one second
	schedLarge                      // c.n schedules: set, idle, c.due more due, then the burst
	schedBullMQ                     // c.n job schedulers in BullMQ's layout: memory only
)

// schedulesCase is the schedules workload, work alone.
func (b *bench) schedulesCase(cfg *schedConfig) *benchCase {
	n, due, burst := commas(float64(cfg.n)), commas(float64(cfg.due)), commas(float64(cfg.burst))
	vs := []schedVariant{schedNone, schedSmall, schedLarge}
	cols := []string{"none", due + " stored", n + " stored"}
	if cfg.bullmq {
		vs = append(vs, schedBullMQ)
		cols = append(cols, "BullMQ layout")
	}
	fire := fmt.Sprintf("fire %s due (×%d): ", due, cfg.fires)
	c := &benchCase{
		id:    "schedules",
		title: "schedules",
		desc: fmt.Sprintf("work alone; per-customer schedules (ID customer-<n>-report, spec \"0 0 9 * * <the weekday 3 days ahead>\" in %s, job %q, args {\"customer_id\":<n>}, key <n>; n from 1,000,000) set by Client.SetSchedules, %d per call from %d goroutines; "+
			"%d pools of %d workers serving 5 job names and %q. none: no schedule; the pools idle for %v. "+
			"%s stored: %s schedules due at one second just ahead (spec \"<s> <m> <h> * * <weekday>\", job %q, which no pool serves) fired, %d times, each at its own second, after 10 others that load the scripts; Redis's CPU and commands counted from just before that second until their jobs are all queued; then the pools idle for %v. "+
			"%s stored: %s schedules set (memory, rate); the pools idle for %v; %s due at one second fired as in %s stored; then %s more (job %q) due at one second while the pools are offered %s other jobs/s from %d goroutines making one Enqueue call at a time each; lateness is from the tick to when a job is queued (polled every 5 ms) or starts. "+
			"BullMQ layout: %s job schedulers written as BullMQ stores them (see README.md), memory only",
			schedZone, schedStoredJob, cfg.batch, cfg.batchG, cfg.pools, cfg.workers, schedBurstJob, cfg.idle,
			due, due, schedDueJob, cfg.fires, cfg.idle,
			n, n, cfg.idle, due, due, burst, schedBurstJob, commas(float64(cfg.otherRate)), cfg.otherSenders, n),
		rounds: cfg.rounds,
		metrics: []metricDef{
			{"set.rate", "set: schedules/s (SetSchedules)", kindRate},
			{"set.bytes", "set: Redis bytes per schedule stored (used_memory delta)", kindBytes},
			{"set.redis_us", "set: Redis CPU µs per schedule", kindSig},
			{"set.bound", "set: schedules/s Redis's CPU allows (1 / Redis CPU per schedule)", kindRate},
			{"set.go_us", "set: Go CPU µs per schedule", kindSig},
			{"set.cmds", "set: Redis cmds per schedule", kindSig},
			{"set.keys", "set: namespace keys with the schedules stored", kindRate},
			{"idle.cmds_s", "idle: Redis cmds/s (commandstats calls)", kindSig},
			{"idle.total_s", "idle: Redis total_commands_processed/s", kindSig},
			{"idle.rt_s", "idle: client socket writes/s", kindSig},
			{"idle.redis_cpu", "idle: Redis CPU ms/s", kindSig},
			{"fire.redis_us", fire + "Redis CPU µs per tick", kindSig},
			{"fire.cmds", fire + "Redis cmds per tick", kindSig},
			{"fire.rt", fire + "client socket writes per tick", kindSig},
			{"fire.go_us", fire + "Go CPU µs per tick (pools)", kindSig},
			{"fire.first_ms", fire + "ms from the tick to the first job queued (worst)", kindSig},
			{"fire.last_ms", fire + "ms from the tick to the last job queued (worst)", kindSig},
			{"burst.set_rate", "burst: set " + burst + " schedules/s", kindRate},
			{"burst.first", "burst " + burst + ": lateness to the first queued ms", kindSig},
			{"burst.p50", "burst " + burst + ": lateness to queued p50 ms", kindSig},
			{"burst.p99", "burst " + burst + ": lateness to queued p99 ms", kindSig},
			{"burst.max", "burst " + burst + ": lateness to queued max ms", kindSig},
			{"burst.seen_p50", "burst " + burst + ": tick to handler start p50 ms", kindSig},
			{"burst.seen_p99", "burst " + burst + ": tick to handler start p99 ms", kindSig},
			{"burst.seen_max", "burst " + burst + ": tick to handler start max ms", kindSig},
			{"burst.bound", "burst: least ms Redis's CPU allows to queue it (fire's Redis CPU per tick × " + burst + ")", kindSig},
			{"burst.redis_cores", "burst: Redis CPU cores busy, tick to last queued", kindSig},
			{"burst.go_cores", "burst: Go CPU cores busy (harness: pools, other jobs' producer), tick to last queued", kindSig},
			{"burst.ran", "burst: jobs run", kindRate},
			{"burst.twice", "burst: ticks run more than once", kindRate},
			{"burst.wrong", "burst: jobs with another tick, or run before it", kindRate},
			{"other.offered", "other jobs: enqueued/s during the burst (offered: -schedules-other-rate)", kindRate},
			{"other.lag_max", "other jobs: most an Enqueue call began behind its time ms", kindSig},
			{"other.before_p99", "other jobs: p99 wait before the burst ms", kindSig},
			{"other.p50", "other jobs: p50 wait during the burst ms", kindSig},
			{"other.p99", "other jobs: p99 wait during the burst ms", kindSig},
			{"other.max", "other jobs: max wait during the burst ms", kindSig},
			{"other.gap", "other jobs: longest gap between starts during the burst ms", kindSig},
			{"other.rate", "other jobs: started/s during the burst", kindRate},
			{"other.cores", "burst: other processes' CPU cores busy", kindSig},
		},
		summary: []string{"set.rate", "set.bytes", "idle.cmds_s", "fire.redis_us", "fire.cmds", "burst.p50", "burst.p99", "burst.max", "other.max"},
		ratios:  []ratioCol{{2, 1}, {2, 0}, {1, 0}},
		goals: []goal{
			{label: n + " stored: Redis bytes per schedule ≤ 250", key: "set.bytes", num: 2, atMost: true, bound: 250, abs: true},
			{label: n + " stored: SetSchedules schedules/s ≥ 100,000", key: "set.rate", num: 2, bound: 100000, abs: true},
			{label: fmt.Sprintf("Redis CPU per fired tick, %s due among %s stored / %s stored ≤ 1.5", due, n, due), key: "fire.redis_us", num: 2, den: 1, atMost: true, bound: 1.5},
			{label: fmt.Sprintf("%s due at one second, among %s stored: all queued within 2 s (max lateness ms ≤ 2,000)", burst, n), key: "burst.max", num: 2, atMost: true, bound: 2000, abs: true},
			{label: "meanwhile the other jobs kept flowing: max wait during the burst ≤ 2,000 ms", key: "other.max", num: 2, atMost: true, bound: 2000, abs: true},
			{label: fmt.Sprintf("idle: Redis cmds/s with %s stored / with none ≤ 1", n), key: "idle.cmds_s", num: 2, den: 0, atMost: true, bound: 1},
		},
		runCol: func(ci int) (map[string]float64, error) {
			return b.schedulesRun(vs[ci], cfg)
		},
	}
	c.cols = cols
	if cfg.bullmq {
		c.ratios = append(c.ratios, ratioCol{2, 3})
		c.goals = append(c.goals, goal{label: "for comparison: Redis bytes per schedule, " + n + " stored / BullMQ layout", key: "set.bytes", num: 2, den: 3, atMost: true, bound: 1})
	}
	return c
}

// schedulesRun is one run of a column of the schedules workload.
func (b *bench) schedulesRun(v schedVariant, cfg *schedConfig) (map[string]float64, error) {
	m := make(map[string]float64)
	if v == schedBullMQ {
		return m, b.bullmqLayout(m, cfg)
	}
	client := work.NewClient(workNamespace, redigoPool(b.srv.addr, cfg.batchG+2))
	loc, err := time.LoadLocation(schedZone)
	if err != nil {
		return nil, err
	}
	if v == schedLarge {
		if err := b.setStored(m, client, cfg, loc); err != nil {
			return nil, err
		}
	}
	rec := &schedRecorder{}
	pools := startSchedPools(b.srv.addr, cfg, rec)
	defer pools.stop()
	time.Sleep(b.settle)
	if v == schedNone || v == schedLarge {
		b.schedIdle(m, cfg.idle)
	}
	if v == schedSmall || v == schedLarge {
		if err := b.fireDue(m, client, cfg, loc); err != nil {
			return nil, err
		}
	}
	if v == schedSmall {
		// Their next ticks a week ahead: what idle pools cost with few schedules stored.
		b.schedIdle(m, cfg.idle)
	}
	if v == schedLarge {
		if err := b.schedBurst(m, client, cfg, loc, rec); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// customerSchedule is the schedule of customer i (number 1,000,000 + i) for a job: ID
// customer-<n>-<job>, args {"customer_id":<n>}, key <n>.
func customerSchedule(i int, job, spec string) work.Schedule {
	n := 1000000 + i
	id := strconv.Itoa(n)
	return work.Schedule{ID: "customer-" + id + "-" + job, Spec: spec, Location: schedZone, JobName: job,
		Args: map[string]interface{}{"customer_id": n}, Key: id}
}

// storedSpec is the stored schedules' spec: Mondays at 9:00, in effect, but on the weekday three
// days ahead, so that no tick of theirs falls during a run.
func storedSpec(loc *time.Location) string {
	return "0 0 9 * * " + weekday(time.Now().In(loc).AddDate(0, 0, 3))
}

// specAt is a spec whose next tick is t (in loc), within a week.
func specAt(t time.Time, loc *time.Location) string {
	t = t.In(loc)
	return fmt.Sprintf("%d %d %d * * %s", t.Second(), t.Minute(), t.Hour(), weekday(t))
}

func weekday(t time.Time) string { return strings.ToUpper(t.Weekday().String()[:3]) }

// setSchedules sets n schedules, schedule i made by mk(i), in SetSchedules calls of cfg.batch from
// g goroutines. It returns the time the calls took.
func setSchedules(client *work.Client, n, g, batch int, mk func(int) work.Schedule) (time.Duration, error) {
	return batched(n, g, batch, func(from, count int) error {
		list := make([]work.Schedule, count)
		for i := range list {
			list[i] = mk(from + i)
		}
		return client.SetSchedules(list)
	})
}

// setStored sets the large variant's cfg.n schedules: their rate, cost and memory.
func (b *bench) setStored(m map[string]float64, client *work.Client, cfg *schedConfig, loc *time.Location) error {
	spec := storedSpec(loc)
	runtime.GC()
	stopProfile := b.startPhaseProfile("set")
	defer stopProfile()
	s0 := b.snap()
	el, err := setSchedules(client, cfg.n, cfg.batchG, cfg.batch, func(i int) work.Schedule { return customerSchedule(i, schedStoredJob, spec) })
	s1 := b.snap()
	stopProfile()
	if err != nil {
		return fmt.Errorf("set: %w", err)
	}
	u := since(s0, s1)
	fn := float64(cfg.n)
	m["set.rate"] = fn / el.Seconds()
	m["set.bytes"] = float64(u.mem) / fn
	m["set.redis_us"] = u.redisCPU * 1e6 / fn
	m["set.go_us"] = u.goCPU * 1e6 / fn
	m["set.cmds"] = float64(u.cmds) / fn
	m["set.bound"] = 1e6 / m["set.redis_us"]
	addBreakdown(m, "set", u, cfg.n)
	addUsec(m, "set", u, cfg.n)
	keys, err := scanPrefix(b.srv.do, workNamespace+":")
	if err != nil {
		return err
	}
	m["set.keys"] = float64(len(keys))
	if rec, err := redigo.String(b.srv.do("HGET", workNamespace+":schedules", customerSchedule(0, schedStoredJob, spec).ID)); err == nil {
		progress("[schedules] %s schedules set in %.1fs; a record: %d bytes %s", commas(fn), el.Seconds(), len(rec), rec)
	}
	return nil
}

// startPhaseProfile starts a profile (-profile) of a phase of the run under way: the column's name
// in the file's name is followed by the phase.
func (b *bench) startPhaseProfile(phase string) func() {
	col := b.cur.col
	b.cur.col = col + " " + phase
	defer func() { b.cur.col = col }()
	return b.startProfile()
}

// schedIdle watches the idle pools for dur: Redis commands, socket writes and CPU per second.
func (b *bench) schedIdle(m map[string]float64, dur time.Duration) {
	runtime.GC()
	s0 := b.snap()
	time.Sleep(dur)
	s1 := b.snap()
	u := since(s0, s1)
	// Per second of the nominal window, not of the measured one: the columns' windows differ by
	// milliseconds, and the same commands counted in each must compare equal.
	el := dur.Seconds()
	m["idle.cmds_s"] = float64(u.cmds) / el
	m["idle.total_s"] = float64(u.totalCmds) / el
	m["idle.rt_s"] = float64(u.rt) / el
	m["idle.redis_cpu"] = u.redisCPU * 1000 / el
	for k, v := range u.byCmd {
		m["cmds:idle:"+k] = float64(v) / el
	}
}

// nextSecond is the first whole second at least lead from now.
func nextSecond(lead time.Duration) time.Time {
	return time.Now().Add(lead).Truncate(time.Second).Add(time.Second)
}

// fireDue sets cfg.due schedules due at one second just ahead and measures their firing: Redis's
// CPU and commands from just before that second until the last of their jobs is queued.
func (b *bench) fireDue(m map[string]float64, client *work.Client, cfg *schedConfig, loc *time.Location) error {
	// A few ticks fired first load the pools' scripts into Redis (a script is compiled the first
	// time it runs), which the measured firing would otherwise pay in the first round.
	warm := nextSecond(time.Second)
	warmSpec := specAt(warm, loc)
	if _, err := setSchedules(client, 10, 1, 10, func(i int) work.Schedule { return customerSchedule(i, schedWarmJob, warmSpec) }); err != nil {
		return fmt.Errorf("set the warm-up schedules: %w", err)
	}
	if _, _, err := b.pollCount(10, 5*time.Millisecond, warm.Add(time.Minute), func() (int64, error) {
		return hgetInt(b.srv.do, workNamespace+":keyed:"+schedWarmJob+":meta", "waiting")
	}); err != nil {
		return fmt.Errorf("warm-up: %w", err)
	}

	var total usage
	total.byCmd, total.usecByCmd = map[string]int64{}, map[string]int64{}
	var first, last time.Duration
	waitingKey := workNamespace + ":keyed:" + schedDueJob + ":meta"
	for k := range cfg.fires {
		tick := nextSecond(2 * time.Second)
		spec := specAt(tick, loc)
		if _, err := setSchedules(client, cfg.due, 1, cfg.batch, func(i int) work.Schedule { return customerSchedule(k*cfg.due+i, schedDueJob, spec) }); err != nil {
			return fmt.Errorf("set the due schedules: %w", err)
		}
		if time.Until(tick) < 500*time.Millisecond {
			return fmt.Errorf("setting %d schedules took until %v before their tick", cfg.due, time.Until(tick))
		}
		runtime.GC()
		time.Sleep(time.Until(tick.Add(-200 * time.Millisecond)))
		stopProfile := b.startPhaseProfile("fire" + strconv.Itoa(k+1))
		s0 := b.snap()
		// The jobs of the earlier firings wait in the same name's queues.
		samples, polls, err := b.pollCount(int64(cfg.due), 2*time.Millisecond, tick.Add(time.Minute), func() (int64, error) {
			n, err := hgetInt(b.srv.do, waitingKey, "waiting")
			return n - int64(k*cfg.due), err
		})
		s1 := b.snap()
		stopProfile()
		if err != nil {
			return fmt.Errorf("fire: %w", err)
		}
		u := since(s0, s1)
		// The polls are the harness's own HGETs: left out of the counts.
		u.cmds -= int64(polls)
		if u.byCmd["hget"] -= int64(polls); u.byCmd["hget"] <= 0 {
			delete(u.byCmd, "hget")
		}
		total.redisCPU, total.goCPU, total.cmds, total.rt = total.redisCPU+u.redisCPU, total.goCPU+u.goCPU, total.cmds+u.cmds, total.rt+u.rt
		for c, v := range u.byCmd {
			total.byCmd[c] += v
		}
		for c, v := range u.usecByCmd {
			total.usecByCmd[c] += v
		}
		first, last = max(first, firstQueued(samples).Sub(tick)), max(last, samples[len(samples)-1].at.Sub(tick))
	}
	n := cfg.fires * cfg.due
	fn := float64(n)
	m["fire.redis_us"] = total.redisCPU * 1e6 / fn
	m["fire.go_us"] = total.goCPU * 1e6 / fn
	m["fire.cmds"] = float64(total.cmds) / fn
	m["fire.rt"] = float64(total.rt) / fn
	m["fire.first_ms"], m["fire.last_ms"] = ms(first), ms(last)
	addBreakdown(m, "fire", total, n)
	addUsec(m, "fire", total, n)
	return nil
}

// countSample is a count polled at a moment.
type countSample struct {
	at time.Time
	n  int64
}

// pollCount polls count every interval until it reaches n, and returns the samples where it changed
// and how many polls it made. It fails at deadline.
func (b *bench) pollCount(n int64, every time.Duration, deadline time.Time, count func() (int64, error)) ([]countSample, int, error) {
	var samples []countSample
	polls := 0
	last := int64(-1)
	for {
		c, err := count()
		at := time.Now()
		polls++
		if err != nil {
			return samples, polls, err
		}
		if c != last {
			samples = append(samples, countSample{at, c})
			last = c
		}
		if c >= n {
			return samples, polls, nil
		}
		if at.After(deadline) {
			return samples, polls, fmt.Errorf("%d of %d jobs queued at the deadline", c, n)
		}
		time.Sleep(every)
	}
}

// addUsec records the Redis µs of a phase per item, by command (commandstats usec; shown with -v).
func addUsec(m map[string]float64, phase string, u usage, n int) {
	for k, v := range u.usecByCmd {
		m["usec:"+phase+":"+k] = float64(v) / float64(n)
	}
}

// firstQueued is when the count was first seen above 0.
func firstQueued(samples []countSample) time.Time {
	for _, s := range samples {
		if s.n > 0 {
			return s.at
		}
	}
	return samples[len(samples)-1].at
}

// hgetInt reads an integer field of a hash; 0 when it is missing.
func hgetInt(do redisDo, key, field string) (int64, error) {
	v, err := redigo.Int64(do("HGET", key, field))
	if err == redigo.ErrNil {
		return 0, nil
	}
	return v, err
}

// queuedScript reads a keyed job name's waiting count (KEYS[1], its meta hash) and in-progress lists
// (the other keys) at one instant.
const queuedScript = `local r = {redis.call('hget', KEYS[1], 'waiting')}
for i = 2, #KEYS do r[i] = redis.call('lrange', KEYS[i], 0, -1) end
return r`

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// schedBurst sets cfg.burst schedules due at one second and, while the pools are offered a steady
// stream of other jobs, measures how late their jobs are queued and start, checks that each tick
// runs once, and how the other jobs fared.
func (b *bench) schedBurst(m map[string]float64, client *work.Client, cfg *schedConfig, loc *time.Location, rec *schedRecorder) error {
	// Time enough to set them at a fifth of the rate the stored ones were set (with the pools
	// running and a million stored, the burst's set has run at half that rate and less).
	lead := 5*time.Second + time.Duration(5*float64(cfg.burst)/m["set.rate"]*float64(time.Second))
	tick := nextSecond(lead)
	rec.reset(tick.Unix())
	spec := specAt(tick, loc)
	el, err := setSchedules(client, cfg.burst, cfg.batchG, cfg.batch, func(i int) work.Schedule { return customerSchedule(i, schedBurstJob, spec) })
	if err != nil {
		return fmt.Errorf("set the burst's schedules: %w", err)
	}
	m["burst.set_rate"] = float64(cfg.burst) / el.Seconds()
	if time.Until(tick) < time.Second {
		return fmt.Errorf("setting the burst's %d schedules took until %v before their tick", cfg.burst, time.Until(tick))
	}

	// The other jobs: offered from now until a second after the burst's jobs are all queued.
	conns := redigoPool(b.srv.addr, 18)
	defer conns.Close()
	enq := work.NewEnqueuer(workNamespace, conns)
	stop := make(chan struct{})
	var sent, sendErrs int64
	var lagMax time.Duration
	var sending sync.WaitGroup
	sending.Add(1)
	go func() {
		defer sending.Done()
		sent, sendErrs, lagMax = offerOthers(enq, cfg.otherRate, cfg.otherSenders, stop)
	}()
	stopOthers := func() {
		select {
		case <-stop:
		default:
			close(stop)
			sending.Wait()
		}
	}
	defer stopOthers()

	runtime.GC()
	time.Sleep(time.Until(tick.Add(-200 * time.Millisecond)))
	stopProfile := b.startPhaseProfile("burst")
	defer stopProfile()
	s0 := b.snap()
	waitingKey := workNamespace + ":keyed:" + schedBurstJob + ":meta"
	poolIDs, err := redigo.Strings(b.srv.do("SMEMBERS", workNamespace+":worker_pools"))
	if err != nil {
		return fmt.Errorf("burst: the pools' IDs: %w", err)
	}
	queuedKeys := []interface{}{queuedScript, len(poolIDs) + 1, waitingKey}
	for _, id := range poolIDs {
		queuedKeys = append(queuedKeys, workNamespace+":keyed:"+schedBurstJob+":"+id+":inprogress")
	}
	samples, _, err := b.pollCount(int64(cfg.burst), 5*time.Millisecond, tick.Add(processTimeout(cfg.burst)), func() (int64, error) {
		// A job of the burst is queued once it is waiting, taken (in a pool's in-progress list)
		// or started. The started count comes first, then the waiting count and the in-progress
		// lists in one read (a take moves a job from one to the other atomically); a taken job
		// counts unless it was among the started, so none counts twice. One that starts, ends
		// and is acknowledged between the two reads is missed: the count is never ahead.
		started := rec.burstStarted.Load()
		r, err := redigo.Values(b.srv.do("EVAL", queuedKeys...))
		if err != nil {
			return 0, err
		}
		w, err := redigo.Int64(r[0], nil)
		if err != nil && err != redigo.ErrNil {
			return 0, err
		}
		var taken int64
		for _, v := range r[1:] {
			entries, err := redigo.ByteSlices(v, nil)
			if err != nil {
				return 0, err
			}
			taken += rec.notStartedBy(entries, started)
		}
		return started + taken + w, nil
	})
	s1 := b.snap()
	stopProfile()
	if err != nil {
		return fmt.Errorf("burst: %w", err)
	}
	done := samples[len(samples)-1].at
	time.Sleep(time.Second)
	stopOthers()
	if sendErrs > 0 {
		return fmt.Errorf("burst: %d enqueue errors of the other jobs", sendErrs)
	}

	// Lateness to queued: when the count first reached each share of the burst.
	at := func(p float64) float64 {
		target := int64(math.Ceil(p * float64(cfg.burst)))
		for _, s := range samples {
			if s.n >= target {
				return ms(s.at.Sub(tick))
			}
		}
		return math.NaN()
	}
	m["burst.first"] = ms(firstQueued(samples).Sub(tick))
	m["burst.bound"] = m["fire.redis_us"] * float64(cfg.burst) / 1000
	m["burst.p50"], m["burst.p99"], m["burst.max"] = at(0.5), at(0.99), at(1)
	u := since(s0, s1)
	m["burst.redis_cores"] = u.redisCPU / u.wall.Seconds()
	m["burst.go_cores"] = u.goCPU / u.wall.Seconds()
	addUsec(m, "burst", u, cfg.burst)
	m["other.cores"] = max(0, u.otherCPU/u.wall.Seconds())

	// Every job of the burst run, and every other job: then each tick is checked to have run once.
	deadline := time.Now().Add(processTimeout(cfg.burst))
	for rec.burstStarted.Load() < int64(cfg.burst) || rec.otherCount() < int(sent) {
		if time.Now().After(deadline) {
			return fmt.Errorf("burst: %d of %d jobs of the burst and %d of %d other jobs ran", rec.burstStarted.Load(), cfg.burst, rec.otherCount(), sent)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(time.Second) // a tick run twice would show now
	runs, twice, wrong, seen := rec.burstResult()
	m["burst.ran"], m["burst.twice"], m["burst.wrong"] = float64(runs), float64(twice), float64(wrong)
	sort.Slice(seen, func(i, j int) bool { return seen[i] < seen[j] })
	m["burst.seen_p50"], m["burst.seen_p99"], m["burst.seen_max"] = ms(percentile(seen, 0.5)), ms(percentile(seen, 0.99)), ms(seen[len(seen)-1])

	// The other jobs: their waits before and during the burst (from the tick to the last job
	// queued), their rate then and the longest time without one starting.
	before, during, starts := rec.otherWaits(tick, done)
	m["other.offered"] = float64(len(during)) / done.Sub(tick).Seconds()
	if len(during) == 0 {
		return errors.New("burst: no other job was enqueued during the burst")
	}
	m["other.lag_max"] = ms(lagMax)
	m["other.before_p99"] = ms(percentile(before, 0.99))
	m["other.p50"], m["other.p99"], m["other.max"] = ms(percentile(during, 0.5)), ms(percentile(during, 0.99)), ms(during[len(during)-1])
	gap, prev := time.Duration(0), tick
	for _, s := range append(starts, done) {
		gap, prev = max(gap, s.Sub(prev)), s
	}
	m["other.gap"] = ms(gap)
	m["other.rate"] = float64(len(starts)) / done.Sub(tick).Seconds()
	progress("[schedules] burst of %s: queued p50 %.0f ms, p99 %.0f ms, max %.0f ms after the tick; other jobs' max wait %.0f ms",
		commas(float64(cfg.burst)), m["burst.p50"], m["burst.p99"], m["burst.max"], m["other.max"])
	return nil
}

// offerOthers enqueues rate jobs/s of the traffic names from g goroutines until stop, each stamped
// with the time it was due to be sent rather than the time its Enqueue call began: a call that
// Redis holds up (behind a burst's commits, say) makes the calls after it late, and their jobs' wait
// counts that. It returns the jobs sent, the errors and the most a call began behind its time.
func offerOthers(e *work.Enqueuer, rate, g int, stop <-chan struct{}) (sent, errs int64, lagMax time.Duration) {
	sent, errs, lagMax, _ = paceEach(rate, math.MaxInt, g, stop, func(i int, due time.Time) error {
		_, err := e.Enqueue(trafficNames[i%len(trafficNames)], work.Q{"t": due.UnixMicro()})
		return err
	})
	return sent, errs, lagMax
}

// schedRecorder records what the pools' handlers ran.
type schedRecorder struct {
	burstStarted atomic.Int64

	mu        sync.Mutex
	burstTick int64
	runs      map[string]int   // burst: runs by schedule ID
	startedAs map[string]int64 // burst: the value of burstStarted its first run made it
	wrong     int              // burst: jobs of another tick, or started before it
	seen      []time.Duration  // burst: handler start less the tick
	other     []otherRun
}

// otherRun is an other job: its enqueue time and start.
type otherRun struct{ enq, start time.Time }

func (r *schedRecorder) reset(tick int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.burstStarted.Store(0)
	r.burstTick, r.runs, r.startedAs, r.wrong, r.seen, r.other = tick, make(map[string]int), make(map[string]int64), 0, nil, nil
}

func (r *schedRecorder) burstJob(job *work.Job) error {
	now := time.Now()
	t := time.Unix(job.Tick, 0)
	r.mu.Lock()
	if r.runs != nil {
		r.runs[job.ScheduleID]++
		if job.Tick != r.burstTick || now.Before(t) {
			r.wrong++
		}
		r.seen = append(r.seen, now.Sub(t))
	}
	// Counted under the lock, so that notStartedBy sees the count a start made.
	n := r.burstStarted.Add(1)
	if r.startedAs != nil {
		if _, ok := r.startedAs[job.ScheduleID]; !ok {
			r.startedAs[job.ScheduleID] = n
		}
	}
	r.mu.Unlock()
	return nil
}

func (r *schedRecorder) otherJob(job *work.Job) error {
	now := time.Now()
	enq := time.UnixMicro(job.ArgInt64("t"))
	if err := job.ArgError(); err != nil {
		return err
	}
	r.mu.Lock()
	r.other = append(r.other, otherRun{enq, now})
	r.mu.Unlock()
	return nil
}

func (r *schedRecorder) otherCount() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.other)
}

// notStartedBy counts the in-progress entries (key, line feed, job JSON) of burst jobs that had not
// started when burstStarted read started: those not started yet, and those whose start made the
// count higher than that.
func (r *schedRecorder) notStartedBy(entries [][]byte, started int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	var n int64
	for _, e := range entries {
		id := scheduleIDOf(e)
		if id == "" {
			continue
		}
		if as, ok := r.startedAs[id]; !ok || as > started {
			n++
		}
	}
	return n
}

// scheduleIDOf returns the schedule_id field of a job's JSON ("": none); the IDs of the burst's
// schedules need no escaping.
func scheduleIDOf(b []byte) string {
	const field = `"schedule_id":"`
	i := bytes.Index(b, []byte(field))
	if i < 0 {
		return ""
	}
	b = b[i+len(field):]
	j := bytes.IndexByte(b, '"')
	if j < 0 {
		return ""
	}
	return string(b[:j])
}

// burstResult returns the burst's jobs run, the ticks run more than once, the jobs of another tick
// or run before it, and the times from the tick to each start.
func (r *schedRecorder) burstResult() (runs, twice, wrong int, seen []time.Duration) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, n := range r.runs {
		runs += n
		if n > 1 {
			twice++
		}
	}
	return runs, twice, r.wrong, append([]time.Duration(nil), r.seen...)
}

// otherWaits returns, sorted, the waits of the other jobs enqueued before from and of those enqueued
// from from to to, and the starts within from..to.
func (r *schedRecorder) otherWaits(from, to time.Time) (before, during []time.Duration, starts []time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, o := range r.other {
		w := o.start.Sub(o.enq)
		switch {
		case o.enq.Before(from):
			before = append(before, w)
		case !o.enq.After(to):
			during = append(during, w)
		}
		if !o.start.Before(from) && !o.start.After(to) {
			starts = append(starts, o.start)
		}
	}
	sort.Slice(before, func(i, j int) bool { return before[i] < before[j] })
	sort.Slice(during, func(i, j int) bool { return during[i] < during[j] })
	sort.Slice(starts, func(i, j int) bool { return starts[i].Before(starts[j]) })
	return before, during, starts
}

// schedPools are the workload's worker pools, in the harness process.
type schedPools struct {
	conns []*redigo.Pool
	wps   []*work.WorkerPool
}

// startSchedPools starts cfg.pools pools of cfg.workers workers serving the traffic names (the
// other jobs) and the burst's job name, recording into rec.
func startSchedPools(addr string, cfg *schedConfig, rec *schedRecorder) *schedPools {
	ps := &schedPools{}
	for range cfg.pools {
		conns := redigoPool(addr, cfg.workers+10)
		wp := work.NewWorkerPool(workContext{}, uint(cfg.workers), workNamespace, conns)
		for _, name := range trafficNames {
			wp.Job(name, rec.otherJob)
		}
		wp.Job(schedBurstJob, rec.burstJob)
		wp.Start()
		ps.conns, ps.wps = append(ps.conns, conns), append(ps.wps, wp)
	}
	return ps
}

func (ps *schedPools) stop() {
	for i, wp := range ps.wps {
		wp.Stop()
		ps.conns[i].Close()
	}
}
