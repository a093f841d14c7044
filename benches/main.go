// Command benches runs the same workloads on work, on github.com/gocraft/work and on
// github.com/hibiken/asynq, against one redis-server that it starts itself, alternating the libraries
// round by round, and prints tables of medians, ranges and paired ratios.
//
//	go run . [-rounds 5] [-workloads burn,manynames,latency,idle,enqueue,crash] [-libs work,gocraft,asynq] [-markdown]
//
// The keyed, millionkeys and fairness workloads compare variants of their own (work's keyed jobs
// against its unkeyed ones and asynq's) rather than the libraries. The longjobs workload times jobs
// of seconds on several pools against the ideal makespan of each shape. The groups workload compares
// work's grouped jobs with its unkeyed ones and asynq's aggregation, and its debounced enqueues with
// plain ones.
//
// The soak workload (-workloads soak) runs work alone, for a long time, and exits with status 1 when
// something it keeps in Redis, or the pools' heap or goroutines, keeps growing.
//
// See README.md for what each workload measures.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"
	"time"
)

var allWorkloads = []string{"burn", "million", "manynames", "latency", "idle", "enqueue", "crash", "keyed", "millionkeys", "fairness", "longjobs", "schedules", "outbox", "groups"}

const defaultWorkloads = "burn,manynames,latency,idle,enqueue,crash"

type bench struct {
	srv                *redisServer
	libs               []library
	settle             time.Duration
	asynqCheckInterval time.Duration
	profileDir         string // -profile: where CPU profiles of the consumer go ("": none)
	trace              bool   // -trace: an execution trace beside each profile

	cur struct { // the run under way, for the profiles' names
		caseID string
		col    string // the library, or the variant of a case of variants
		round  int
	}
}

func (b *bench) fatalf(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "benches: "+format+"\n", args...)
	if b.srv != nil {
		b.srv.stop()
	}
	os.Exit(1)
}

func main() {
	if len(os.Args) > 1 && os.Args[1] == childArg {
		childMain(os.Args[2:])
		return
	}
	var (
		rounds        = flag.Int("rounds", 5, "rounds per library, or per variant of a workload that compares variants, per workload (work gocraft asynq work gocraft asynq ...)")
		libs          = flag.String("libs", defaultLibs, "libraries to run, a subset of "+strings.Join(libraryNames, ",")+" (floor, floor-ack: the latency workload only; floor-enqueue: the enqueue workload only)")
		workloads     = flag.String("workloads", defaultWorkloads, "comma-separated subset of "+strings.Join(allWorkloads, ",")+", or all; and soak (work alone, a pass/fail run of its own, not in all)")
		n             = flag.Int("n", 100000, "jobs per burn, manynames and keyed run")
		millionN      = flag.Int("million-n", 1000000, "jobs per million run")
		millionRounds = flag.Int("million-rounds", 1, "rounds of the million workload")
		millionBatch  = flag.Int("million-batch", 1000, "jobs per batch enqueue call in the million workload, for a library that has one (0: single Enqueue calls)")
		checkInterval = flag.Duration("asynq-task-check-interval", 0, "asynq Config.TaskCheckInterval (0: asynq's default, 1s)")
		names         = flag.Int("names", 500, "registered job names in the manynames workload")
		namesLimit    = flag.Duration("manynames-limit", 30*time.Second, "longest process phase of a manynames run: the jobs/s and per-job figures are then over the jobs run by then (0: no limit)")
		latDur        = flag.Duration("latency-duration", 10*time.Second, "how long each latency run offers load")
		latRates      = flag.String("latency-rates", "1000,5000", "offered loads of the latency workload, jobs/s")
		latConc       = flag.Int("latency-concurrency", 50, "workers in the latency workload")
		latNames      = flag.Int("latency-names", 5, "registered job names in the latency workload (traffic is on 5)")
		idleDur       = flag.Duration("idle", 30*time.Second, "how long the idle workload watches an idle pool")
		idleRounds    = flag.Int("idle-rounds", 3, "rounds of the idle workload")
		idleNames     = flag.Int("idle-names", 5, "registered job names in the idle workload")
		idlePools     = flag.String("idle-pools", "1", "pools/servers the idle workload's 100 workers are split among, one case per count (comma-separated)")
		enqN          = flag.Int("enqueue-n", 50000, "jobs per enqueue run")
		settle        = flag.Duration("settle", 2*time.Second, "wait after starting a pool before measuring (latency, idle; fairness's small keys alone)")
		markdown      = flag.Bool("markdown", false, "also write the results as markdown to stdout")
		verbose       = flag.Bool("v", false, "also print the Redis commands per job, by command, and every run of the crash workload")
		skipCeiling   = flag.Bool("skip-ceiling", false, "skip the redis-benchmark ceiling")
		crashN        = flag.Int("crash-n", 100000, "backlog of the crash workload, no-op jobs")
		crashRates    = flag.String("crash-rate", "2000,15000", "offered loads of the crash workload's steady variants, jobs/s, comma-separated (0 or empty: no steady variant)")
		crashRun      = flag.Duration("crash-run", 1500*time.Millisecond, "how long the crash workload's pool works before the SIGKILL")
		crashConc     = flag.Int("crash-concurrency", 50, "workers in the crash workload")
		traceRuns     = flag.Bool("trace", false, "with -profile, also write a Go execution trace (runtime/trace) of the consumer over each profiled run, beside its profile")
		profileDir    = flag.String("profile", "", "write a Go CPU profile of the consumer (the harness process) over every burn, million, manynames, keyed and millionkeys process phase and every latency and fairness run to this directory")
		soakDur       = flag.Duration("soak-duration", 10*time.Minute, "how long the soak workload runs its load")
		soakRate      = flag.Int("soak-rate", 2000, "jobs/s the soak workload offers (every member of a batch, step of a chain and job of an EnqueueBatch counted)")
		soakInterval  = flag.Duration("soak-interval", 30*time.Second, "time between the soak workload's samples")
		soakWarmup    = flag.Duration("soak-warmup", 2*time.Minute, "the soak workload's samples before this are shown but not judged")
		soakKeep      = flag.Duration("soak-keep", 5*time.Second, "the soak workload's BatchOptions.Keep, EnqueueOptions.Keep and JobOptions.KeepFinished")
		soakWorkers   = flag.Int("soak-workers", 25, "workers in each of the soak workload's two pools")
		soakRestart   = flag.Duration("soak-restart", time.Minute, "the soak workload replaces its second pool by a new one this often (0: never)")
		soakGrowth    = flag.Float64("soak-growth", 0.1, "the soak workload's relative growth threshold: a series grows when its rise over the judged window exceeds this fraction of its level (and its floor; see README.md)")
	)
	kf := declareKeyedFlags()
	lcfg := declareLongFlags()
	sf := declareScheduleFlags()
	ocfg := declareOutboxFlags()
	gcfg := declareGroupsFlags()
	flag.Parse()
	if *rounds < 1 || *millionRounds < 1 || *idleRounds < 1 {
		fmt.Fprintln(os.Stderr, "benches: rounds must be at least 1")
		os.Exit(2)
	}
	var steadyRates []int
	var err error
	if r := strings.TrimSpace(*crashRates); r != "" && r != "0" {
		steadyRates, err = parseRates(r)
	}
	if *crashN < 1 || *crashConc < 1 || err != nil || *crashRun <= 0 {
		fmt.Fprintln(os.Stderr, "benches: -crash-n, -crash-concurrency and -crash-run must be positive, -crash-rate 0 or a comma-separated list of positive rates")
		os.Exit(2)
	}
	selected := map[string]bool{}
	for _, w := range strings.Split(*workloads, ",") {
		w = strings.TrimSpace(w)
		switch {
		case w == "":
		case w == "all":
			for _, a := range allWorkloads {
				selected[a] = true
			}
		case contains(allWorkloads, w) || w == "soak":
			selected[w] = true
		default:
			fmt.Fprintf(os.Stderr, "benches: unknown workload %q (have %s,soak)\n", w, strings.Join(allWorkloads, ","))
			os.Exit(2)
		}
	}
	var libNames []string
	for _, name := range strings.Split(*libs, ",") {
		name = strings.TrimSpace(name)
		if name == "" || contains(libNames, name) {
			continue
		}
		if !contains(libraryNames, name) {
			fmt.Fprintf(os.Stderr, "benches: unknown library %q (have %s)\n", name, strings.Join(libraryNames, ","))
			os.Exit(2)
		}
		libNames = append(libNames, name)
	}
	// A cycle of rounds runs the libraries in the order of libraryNames.
	var ordered []string
	for _, name := range libraryNames {
		if contains(libNames, name) {
			ordered = append(ordered, name)
		}
	}
	libNames = ordered
	if len(libNames) == 0 {
		fmt.Fprintln(os.Stderr, "benches: -libs names no library")
		os.Exit(2)
	}
	for floor, only := range map[string]string{"floor": "latency", "floor-ack": "latency", "floor-enqueue": "enqueue"} {
		if !contains(libNames, floor) {
			continue
		}
		for w := range selected {
			if w != only {
				fmt.Fprintf(os.Stderr, "benches: %s runs only the %s workload, not %s\n", floor, only, w)
				os.Exit(2)
			}
		}
	}
	if *profileDir != "" {
		if err := os.MkdirAll(*profileDir, 0o755); err != nil {
			fmt.Fprintln(os.Stderr, "benches:", err)
			os.Exit(1)
		}
	}
	soakCfg := soakConfig{duration: *soakDur, interval: *soakInterval, warmup: *soakWarmup, rate: *soakRate,
		workers: *soakWorkers, keep: *soakKeep, restart: *soakRestart, growth: *soakGrowth,
		deadMax: 1000, deadAge: time.Minute, log: progress}
	if selected["soak"] {
		if err := soakCfg.check(); err != nil {
			fmt.Fprintln(os.Stderr, "benches:", err)
			os.Exit(2)
		}
	}
	rates, err := parseRates(*latRates)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benches: bad -latency-rates %q\n", *latRates)
		os.Exit(2)
	}
	idlePoolCounts, err := parseRates(*idlePools)
	if err != nil {
		fmt.Fprintf(os.Stderr, "benches: bad -idle-pools %q\n", *idlePools)
		os.Exit(2)
	}
	if (selected["keyed"] || selected["millionkeys"] || selected["fairness"] || selected["groups"]) && !contains(libNames, "work") {
		fmt.Fprintln(os.Stderr, "benches: the keyed, millionkeys, fairness and groups workloads need work among -libs")
		os.Exit(2)
	}
	kcfg, fcfg, err := kf.configs(*n, *rounds)
	if err != nil {
		fmt.Fprintln(os.Stderr, "benches:", err)
		os.Exit(2)
	}
	lcfg.rounds = *rounds
	if err := lcfg.check(); err != nil {
		fmt.Fprintln(os.Stderr, "benches:", err)
		os.Exit(2)
	}
	if err := ocfg.check(*rounds); selected["outbox"] && err != nil {
		fmt.Fprintln(os.Stderr, "benches:", err)
		os.Exit(2)
	}
	if err := gcfg.check(*rounds); selected["groups"] && err != nil {
		fmt.Fprintln(os.Stderr, "benches:", err)
		os.Exit(2)
	}
	if err := sf.check(*rounds, libNames); selected["schedules"] && err != nil {
		fmt.Fprintln(os.Stderr, "benches:", err)
		os.Exit(2)
	}

	srv, err := startRedis()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benches:", err)
		os.Exit(1)
	}
	defer srv.stop()
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		fmt.Fprintf(os.Stderr, "\nbenches: %v: stopping redis-server\n", s)
		srv.stop()
		os.Exit(130)
	}()

	b := &bench{srv: srv, settle: *settle, asynqCheckInterval: *checkInterval, profileDir: *profileDir, trace: *traceRuns}
	for _, name := range libNames {
		l, err := newLibrary(name, srv.addr, *checkInterval)
		if err != nil {
			b.fatalf("%v", err)
		}
		b.libs = append(b.libs, l)
	}
	rep := &report{
		libs:    libNames,
		command: "go run . " + strings.Join(os.Args[1:], " "),
		env:     environment(srv, *checkInterval),
		verbose: *verbose,
	}
	progress("redis-server %s on %s", srv.version(), srv.addr)

	if !*skipCeiling {
		progress("ceiling: redis-benchmark -t lpush,rpop -n 200000 -q at -P 1 and -P 16")
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		rep.ceiling, err = srv.benchmarkCeiling(ctx)
		cancel()
		if err != nil {
			progress("ceiling: %v", err)
		}
	}

	var cases []*benchCase
	if selected["burn"] {
		for _, conc := range []int{10, 50} {
			conc := conc
			cases = append(cases, &benchCase{
				id:      fmt.Sprintf("burn/c%d", conc),
				title:   fmt.Sprintf("burn c=%d", conc),
				desc:    fmt.Sprintf("%s no-op jobs over 5 names; enqueue: single Enqueue calls from 10 goroutines; process: %d workers started after the enqueue, timed until the %sth handler run", commas(float64(*n)), conc, commas(float64(*n))),
				rounds:  *rounds,
				metrics: append(enqueueMetrics(), processMetrics()...),
				summary: []string{"enq.jobs_s", "proc.jobs_s"},
				run: func(l library) (map[string]float64, error) {
					return b.burnRun(l, conc, *n, 10, 0, 0, trafficNames, 0)
				},
			})
		}
	}
	if selected["million"] {
		cases = append(cases, &benchCase{
			id:      "million",
			title:   "million c=50",
			desc:    fmt.Sprintf("%s no-op jobs over 5 names; enqueue: work EnqueueBatch, %d jobs per call from 4 goroutines (gocraft/work and asynq have no batch enqueue: single Enqueue calls from 50 goroutines); process: 50 workers", commas(float64(*millionN)), *millionBatch),
			rounds:  *millionRounds,
			metrics: append(enqueueMetrics(), processMetrics()...),
			summary: []string{"enq.jobs_s", "proc.jobs_s"},
			run: func(l library) (map[string]float64, error) {
				return b.burnRun(l, 50, *millionN, 50, *millionBatch, 4, trafficNames, 0)
			},
		})
	}
	if selected["manynames"] {
		all := manyNames(*names)
		cases = append(cases, &benchCase{
			id:      "manynames",
			title:   fmt.Sprintf("manynames c=50 (%d names)", *names),
			desc:    fmt.Sprintf("as burn c=50, but the pool/server registers %d job names (task types for asynq); all traffic is on 5 of them; the process phase ends after %v if the %s jobs have not all run by then", *names, *namesLimit, commas(float64(*n))),
			rounds:  *rounds,
			metrics: append(processMetrics(), metricDef{"proc.jobs", "process jobs run", kindRate}),
			summary: []string{"proc.jobs_s"},
			run: func(l library) (map[string]float64, error) {
				return b.burnRun(l, 50, *n, 10, 0, 0, all, *namesLimit)
			},
		})
	}
	if selected["latency"] {
		for _, rate := range rates {
			rate := rate
			cases = append(cases, &benchCase{
				id:      fmt.Sprintf("latency/%d", rate),
				title:   fmt.Sprintf("latency %s jobs/s", commas(float64(rate))),
				desc:    fmt.Sprintf("%s jobs/s offered for %v by a paced producer (8 goroutines) in a child process to a running pool/server of %d workers serving %d job names in the harness process; enqueue-to-start latency; Go CPU and socket writes per process, Redis figures for both", commas(float64(rate)), *latDur, *latConc, *latNames),
				rounds:  *rounds,
				metrics: latencyMetrics(),
				summary: []string{"lat.p50", "lat.p99", "lat.p999"},
				run: func(l library) (map[string]float64, error) {
					return b.latencyRun(l, rate, *latDur, *latConc, 8, manyNames(*latNames))
				},
			})
		}
	}
	if selected["idle"] {
		for _, n := range idlePoolCounts {
			n := n
			c := &benchCase{
				id:      "idle",
				title:   "idle (100 workers)",
				desc:    fmt.Sprintf("a pool/server of 100 workers and %d job names with nothing to do, watched for %v after a %v settle", *idleNames, *idleDur, *settle),
				rounds:  *idleRounds,
				metrics: idleMetrics(),
				summary: []string{"idle.cmds_s"},
				run: func(l library) (map[string]float64, error) {
					return b.idleRun(l, *idleDur, manyNames(*idleNames), n)
				},
			}
			if n > 1 {
				c.id, c.title = fmt.Sprintf("idle/p%d", n), fmt.Sprintf("idle (100 workers, %d pools)", n)
				c.desc = fmt.Sprintf("%d pools/servers of 100/%d workers each (at least 1) in one process, serving %d job names with nothing to do, watched for %v after a %v settle",
					n, n, *idleNames, *idleDur, *settle)
			}
			cases = append(cases, c)
		}
	}
	if selected["enqueue"] {
		for _, g := range []int{1, 10, 50} {
			g := g
			cases = append(cases, &benchCase{
				id:      fmt.Sprintf("enqueue/c%d", g),
				title:   fmt.Sprintf("enqueue C=%d", g),
				desc:    fmt.Sprintf("%s single Enqueue calls of a job with small args ({\"addr\":\"test@example.com\",\"n\":1}) from %d goroutine(s)", commas(float64(*enqN)), g),
				rounds:  *rounds,
				metrics: enqueueMetrics(),
				summary: []string{"enq.jobs_s"},
				run: func(l library) (map[string]float64, error) {
					return b.enqueueRun(l, *enqN, g)
				},
			})
		}
	}

	if selected["crash"] {
		type variant struct {
			id, title, load string
			rate            int
		}
		vs := []variant{{"crash/backlog", fmt.Sprintf("crash, backlog of %s (c=%d)", commas(float64(*crashN)), *crashConc),
			fmt.Sprintf("a backlog of %s no-op jobs over 5 names", commas(float64(*crashN))), 0}}
		for _, rate := range steadyRates {
			vs = append(vs, variant{fmt.Sprintf("crash/steady-%d", rate), fmt.Sprintf("crash, steady %s jobs/s (c=%d)", commas(float64(rate)), *crashConc),
				fmt.Sprintf("%s no-op jobs/s over 5 names offered by the harness, starting on empty queues", commas(float64(rate))), rate})
		}
		for _, v := range vs {
			v := v
			cases = append(cases, &benchCase{
				id:    v.id,
				title: v.title,
				desc: fmt.Sprintf("a pool/server of %d workers serving 5 job names in a child process, on %s; its handlers SADD the job ID to a started set, then to a finished set; SIGKILL after %v; then, from Redis: its in-progress entries, by whether the handler had started or finished them (both run again later)",
					*crashConc, v.load, *crashRun),
				rounds:  *rounds,
				metrics: crashMetrics(),
				summary: []string{"crash.twice", "crash.never_started"},
				run: func(l library) (map[string]float64, error) {
					return b.crashRun(l, *crashN, v.rate, *crashRun, *crashConc, trafficNames)
				},
			})
		}
	}

	if selected["keyed"] {
		cases = append(cases, b.keyedCase(kcfg))
	}
	if selected["millionkeys"] {
		cases = append(cases, b.millionKeysCase(kcfg))
	}
	if selected["fairness"] {
		cases = append(cases, b.fairnessCase(fcfg))
	}
	if selected["longjobs"] {
		cases = append(cases, b.longCases(*lcfg)...)
	}
	if selected["schedules"] {
		cases = append(cases, b.schedulesCase(sf))
	}
	if selected["outbox"] {
		c, stopPG := b.outboxCase(ocfg)
		defer stopPG()
		cases = append(cases, c)
	}
	if selected["groups"] {
		cases = append(cases, b.groupsCases(gcfg)...)
	}

	rep.loadStart = loadAverage()
	start := time.Now()
	for _, c := range cases {
		b.runCase(c)
	}
	rep.cases = cases
	if selected["soak"] {
		if err := b.srv.flushAll(); err != nil {
			b.fatalf("FLUSHALL: %v", err)
		}
		soakCfg.addr, soakCfg.namespace = srv.addr, "soak"
		progress("[soak] %s jobs/s for %v, a sample every %v, judged after %v", commas(float64(soakCfg.rate)), soakCfg.duration, soakCfg.interval, soakCfg.warmup)
		rep.soak, err = runSoak(soakCfg, func(at time.Duration, s map[string]float64) { progress("%s", soakProgress(at, s)) })
		if err != nil {
			b.fatalf("%v", err)
		}
	}
	rep.elapsed = time.Since(start)
	rep.loadEnd = loadAverage()
	rep.plain(os.Stdout)
	if *markdown {
		fmt.Println()
		rep.markdown(os.Stdout)
	}
	if rep.soak != nil {
		if g := rep.soak.growing(); len(g) > 0 {
			b.fatalf("soak: %d series kept growing: %s", len(g), growingNames(g))
		}
		if r := rep.soak; r.waitsBad > 0 || r.depBad > 0 {
			b.fatalf("soak: %d waits did not get their job's result (the first: %v), %d chain steps did not read the step before them", r.waitsBad, r.firstWait, r.depBad)
		}
	}
}

// runCase runs a case's rounds, alternating its columns (the libraries: work gocraft asynq work
// gocraft asynq ...; or a case's own variants), FLUSHALL before every run. A failed run leaves a nil
// in its column's place for that round, so that the paired ratios pair the runs of the same cycle.
func (b *bench) runCase(c *benchCase) {
	cols := c.cols
	if cols == nil {
		for _, l := range b.libs {
			cols = append(cols, l.name())
		}
	}
	c.vals = make([][]map[string]float64, len(cols))
	c.fails = make([]int, len(cols))
	for r := 0; r < c.rounds; r++ {
		for ci, name := range cols {
			if err := b.srv.flushAll(); err != nil {
				b.fatalf("FLUSHALL: %v", err)
			}
			runtime.GC()
			b.cur.caseID, b.cur.col, b.cur.round = c.id, name, r+1
			t0 := time.Now()
			var m map[string]float64
			var err error
			if c.cols != nil {
				m, err = c.runCol(ci)
			} else {
				m, err = c.run(b.libs[ci])
			}
			if err != nil {
				c.fails[ci]++
				c.vals[ci] = append(c.vals[ci], nil)
				progress("[%s] round %d/%d %s: FAILED: %v", c.title, r+1, c.rounds, name, err)
				continue
			}
			c.vals[ci] = append(c.vals[ci], m)
			var parts []string
			for _, k := range c.summary {
				md := metricByKey(c.metrics, k)
				parts = append(parts, strings.TrimSpace(md.label)+" "+md.format(m[k]))
			}
			progress("[%s] round %d/%d %-7s %s (%.1fs)", c.title, r+1, c.rounds, name, strings.Join(parts, ", "), time.Since(t0).Seconds())
		}
	}
	if err := b.srv.flushAll(); err != nil {
		b.fatalf("FLUSHALL: %v", err)
	}
}

// parseRates reads a comma-separated list of positive rates.
func parseRates(list string) ([]int, error) {
	var rates []int
	for _, r := range strings.Split(list, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(r))
		if err != nil {
			return nil, err
		}
		if v <= 0 {
			return nil, fmt.Errorf("rate %d is not positive", v)
		}
		rates = append(rates, v)
	}
	return rates, nil
}

func progress(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, time.Now().Format("15:04:05 ")+format+"\n", args...)
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}

// environment describes the machine and the versions, for the report.
func environment(srv *redisServer, checkInterval time.Duration) [][2]string {
	env := [][2]string{
		{"CPUs", strconv.Itoa(runtime.NumCPU())},
		{"CPU model", cpuModel()},
		{"memory", memTotal()},
		{"Go", runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH},
		{"redis-server", srv.version()},
	}
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			switch d.Path {
			case "github.com/gocraft/work", "github.com/hibiken/asynq", "github.com/redis/go-redis/v9", "github.com/gomodule/redigo",
				"github.com/riverqueue/river", "github.com/jackc/pgx/v5":
				env = append(env, [2]string{d.Path, d.Version})
			case "github.com/workqueue/work":
				v := d.Version
				if d.Replace != nil {
					v = "local tree (replace => " + d.Replace.Path + ")"
				}
				env = append(env, [2]string{d.Path, v})
			}
		}
	}
	if rev, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output(); err == nil {
		v := "commit " + strings.TrimSpace(string(rev))
		// The library's own files: the Go files and go.mod at the top of the repository.
		st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no", "--",
			":(top,glob)*.go", ":(top,glob)go.mod").Output()
		if err == nil && len(st) > 0 {
			var files []string
			for _, line := range strings.Split(strings.TrimSpace(string(st)), "\n") {
				if f := strings.Fields(line); len(f) > 0 {
					files = append(files, f[len(f)-1])
				}
			}
			v += ", uncommitted changes to " + strings.Join(files, " ")
		}
		env = append(env, [2]string{"work tree", v})
	}
	ci := "asynq default (1s)"
	if checkInterval > 0 {
		ci = checkInterval.String()
	}
	env = append(env, [2]string{"asynq TaskCheckInterval", ci})
	return env
}

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(line, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "?"
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "MemTotal:"); ok {
			f := strings.Fields(v)
			if kb, err := strconv.ParseFloat(f[0], 64); err == nil {
				return fmt.Sprintf("%.1f GiB", kb/1024/1024)
			}
		}
	}
	return "?"
}

// redisBenchmarkVersion is printed with the ceiling.
func redisBenchmarkVersion() string {
	out, err := exec.Command("redis-benchmark", "--version").Output()
	if err != nil {
		return "?"
	}
	return strings.TrimSpace(string(out))
}
