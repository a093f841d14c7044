package main

// The outbox workload: jobs enqueued inside the application's PostgreSQL transaction, work's pgwork
// module (a row in the transaction, a relay to Redis, work's pool) against River (a row in the
// transaction, River's own workers), on one PostgreSQL server the harness starts, both with their
// default settings.

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/riverqueue/river"
	"github.com/riverqueue/river/riverdriver/riverpgxv5"
	"github.com/riverqueue/river/rivermigrate"

	"github.com/workqueue/work/internal/pgserver"
)

// outboxConfig is the outbox workload's flags.
type outboxConfig struct {
	n        int           // jobs per throughput run
	conc     int           // goroutines writing transactions
	batch    int           // jobs per transaction in the batched runs
	rate     int           // transactions/s offered in the latency run
	duration time.Duration // how long the latency run offers its load
	workers  int           // workers of each consumer
	rounds   int
}

func declareOutboxFlags() *outboxConfig {
	c := &outboxConfig{}
	flag.IntVar(&c.n, "outbox-n", 20000, "outbox: jobs per throughput run")
	flag.IntVar(&c.conc, "outbox-concurrency", 10, "outbox: goroutines writing transactions")
	flag.IntVar(&c.batch, "outbox-batch", 100, "outbox: jobs per transaction in the batched runs")
	flag.IntVar(&c.rate, "outbox-rate", 1000, "outbox: transactions/s offered in the latency run (one job each)")
	flag.DurationVar(&c.duration, "outbox-duration", 10*time.Second, "outbox: how long the latency run offers its load")
	flag.IntVar(&c.workers, "outbox-workers", 50, "outbox: workers of each consumer (work's pool, River's queue)")
	flag.IntVar(&c.rounds, "outbox-rounds", 0, "outbox: rounds (0: -rounds)")
	return c
}

func (c *outboxConfig) check(rounds int) error {
	if c.rounds == 0 {
		c.rounds = rounds
	}
	if c.n < 1 || c.conc < 1 || c.batch < 1 || c.rate < 1 || c.duration <= 0 || c.workers < 1 || c.rounds < 1 {
		return errors.New("the -outbox-* flags must be positive")
	}
	return nil
}

// txQueue is one side of the comparison: what writes jobs in a transaction and what runs them.
type txQueue interface {
	// insert writes jobs seq..seq+n-1 in tx.
	insert(ctx context.Context, tx pgx.Tx, seq int64, n int) error
	// startConsumer starts what runs the jobs (and, for work, the relay); started is called with the
	// job's seq when its handler starts. stop stops it all.
	startConsumer(ctx context.Context, started func(seq int64)) (stop func(), err error)
	// queued starts reading jobs as they reach the store that consumers take them from, without
	// running them (work: the Redis queue, after the relay; River has no such step), or returns nil.
	queued(ctx context.Context, seen func(seq int64)) (stop func(), err error)
	close()
}

// outboxRun holds a PostgreSQL server for the whole workload.
type outboxRun struct {
	b   *bench
	cfg *outboxConfig
	pg  *pgserver.Server
	db  int // databases made so far
}

func (b *bench) outboxCase(cfg *outboxConfig) (*benchCase, func()) {
	o := &outboxRun{b: b, cfg: cfg}
	label := func(s string) string { return s }
	c := &benchCase{
		id:    "outbox",
		title: "outbox",
		desc: fmt.Sprintf("jobs enqueued inside PostgreSQL transactions; work: pgwork (a row in the transaction, its relay moving committed rows to Redis, a pool of %d workers), River %s: InsertTx/InsertManyTx and River's client with %d workers on its default queue, with its default settings (river) and with FetchCooldown 1 ms (river-1ms: at its default 100 ms a client fetches at most MaxWorkers jobs per 100 ms); "+
			"one PostgreSQL %s (default settings, fsync on) started by the harness, a fresh database per run. "+
			"enq1/enq%d: %s jobs written by %d goroutines in transactions of 1 and of %d jobs, nothing consuming; "+
			"e2e: the same %s jobs in transactions of %d while the consumer runs, until the last handler started; Postgres CPU and WAL per job over it; "+
			"latency: %d transactions/s of one job for %v, commit → handler start (and for work commit → in Redis, read with BRPOP, no pool running)",
			cfg.workers, riverVersion(), cfg.workers, pgVersion(), cfg.batch, commas(float64(cfg.n)), cfg.conc, cfg.batch,
			commas(float64(cfg.n)), cfg.batch, cfg.rate, cfg.duration),
		rounds: cfg.rounds,
		cols:   []string{"work", "river", "river-1ms"},
		metrics: []metricDef{
			{"enq1.jobs_s", label("enqueue, 1 job per transaction: jobs/s"), kindRate},
			{"enqN.jobs_s", label(fmt.Sprintf("enqueue, %d jobs per transaction: jobs/s", cfg.batch)), kindRate},
			{"e2e.jobs_s", "end to end (enqueue in transactions, relay, run): jobs/s", kindRate},
			{"e2e.pg_cpu_us", "end to end: Postgres CPU µs per job", kindSig},
			{"e2e.wal_bytes", "end to end: WAL bytes per job", kindSig},
			{"lat.redis_p50", "latency: commit → in Redis p50 ms", kindSig},
			{"lat.redis_p99", "latency: commit → in Redis p99 ms", kindSig},
			{"lat.start_p50", "latency: commit → handler start p50 ms", kindSig},
			{"lat.start_p99", "latency: commit → handler start p99 ms", kindSig},
			{"lat.tx_s", "latency: transactions/s achieved", kindRate},
		},
		summary: []string{"enq1.jobs_s", "enqN.jobs_s", "e2e.jobs_s", "lat.start_p99"},
		ratios:  []ratioCol{{0, 1}, {0, 2}},
		goals: []goal{
			{label: "enqueue in a transaction of 1: jobs/s ≥ 1 × River", key: "enq1.jobs_s", num: 0, den: 1, bound: 1},
			{label: fmt.Sprintf("enqueue in a transaction of %d: jobs/s ≥ 1 × River", cfg.batch), key: "enqN.jobs_s", num: 0, den: 1, bound: 1},
			{label: "end to end: jobs/s ≥ 3 × River", key: "e2e.jobs_s", num: 0, den: 1, bound: 3},
			{label: "commit → handler start p99 < River's", key: "lat.start_p99", num: 0, den: 1, bound: 1, atMost: true},
			{label: "commit → in Redis p50 ≤ 5 ms", key: "lat.redis_p50", num: 0, bound: 5, atMost: true, abs: true},
			{label: "commit → in Redis p99 ≤ 50 ms", key: "lat.redis_p99", num: 0, bound: 50, atMost: true, abs: true},
		},
	}
	c.runCol = func(col int) (map[string]float64, error) {
		if o.pg == nil {
			pg, err := pgserver.Start(pgserver.Options{})
			if err != nil {
				return nil, err
			}
			o.pg = pg
		}
		return o.run(col)
	}
	return c, func() {
		if o.pg != nil {
			o.pg.Stop(true)
		}
	}
}

// newDatabase makes a fresh database and returns a pool on it.
func (o *outboxRun) newDatabase(ctx context.Context) (*pgxpool.Pool, error) {
	o.db++
	name := "bench" + strconv.Itoa(o.db)
	admin, err := pgx.Connect(ctx, o.pg.DSN("postgres"))
	if err != nil {
		return nil, err
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		return nil, err
	}
	cfg, err := pgxpool.ParseConfig(o.pg.DSN(name))
	if err != nil {
		return nil, err
	}
	cfg.MaxConns = int32(o.cfg.conc + o.cfg.workers/2 + 10)
	return pgxpool.NewWithConfig(ctx, cfg)
}

// run measures one side (0 work, 1 River) on a fresh database per phase.
func (o *outboxRun) run(col int) (map[string]float64, error) {
	ctx := context.Background()
	m := map[string]float64{}
	phase := func(f func(q txQueue, db *pgxpool.Pool) error) error {
		if err := o.b.srv.flushAll(); err != nil {
			return err
		}
		db, err := o.newDatabase(ctx)
		if err != nil {
			return err
		}
		defer db.Close()
		var q txQueue
		switch col {
		case 0:
			q, err = newWorkTxQueue(ctx, db, o.b.srv.addr, o.cfg.workers)
		case 1:
			q, err = newRiverTxQueue(ctx, db, o.cfg.workers, 0)
		default:
			q, err = newRiverTxQueue(ctx, db, o.cfg.workers, river.FetchCooldownMin)
		}
		if err != nil {
			return err
		}
		defer q.close()
		return f(q, db)
	}
	// Enqueue alone, transactions of 1 and of batch.
	for _, per := range []int{1, o.cfg.batch} {
		key := "enq1.jobs_s"
		if per != 1 {
			key = "enqN.jobs_s"
		}
		if err := phase(func(q txQueue, db *pgxpool.Pool) error {
			el, err := o.writeAll(ctx, q, db, o.cfg.n, per, nil)
			m[key] = float64(o.cfg.n) / el.Seconds()
			return err
		}); err != nil {
			return nil, err
		}
	}
	// End to end.
	if err := phase(func(q txQueue, db *pgxpool.Pool) error {
		var ran atomic.Int64
		done := make(chan struct{})
		stop, err := q.startConsumer(ctx, func(int64) {
			if ran.Add(1) == int64(o.cfg.n) {
				close(done)
			}
		})
		if err != nil {
			return err
		}
		defer stop()
		time.Sleep(o.b.settle)
		wal0, err := walLSN(ctx, db)
		if err != nil {
			return err
		}
		cpu0 := pgCPU(o.pg)
		t0 := time.Now()
		if _, err := o.writeAll(ctx, q, db, o.cfg.n, o.cfg.batch, nil); err != nil {
			return err
		}
		select {
		case <-done:
		case <-time.After(5 * time.Minute):
			return fmt.Errorf("e2e: %d of %d jobs ran within 5 minutes", ran.Load(), o.cfg.n)
		}
		el := time.Since(t0)
		cpu := pgCPU(o.pg) - cpu0
		wal1, err := walLSN(ctx, db)
		if err != nil {
			return err
		}
		m["e2e.jobs_s"] = float64(o.cfg.n) / el.Seconds()
		m["e2e.pg_cpu_us"] = float64(cpu.Microseconds()) / float64(o.cfg.n)
		m["e2e.wal_bytes"] = float64(wal1-wal0) / float64(o.cfg.n)
		return nil
	}); err != nil {
		return nil, err
	}
	// Latency: commit → handler start, and for work commit → in Redis (River has no such step).
	// watch starts what sees each job (a consumer, or a reader of the Redis queue) at the paced load.
	latency := func(prefix string, watch func(q txQueue, seen func(int64)) (func(), error)) error {
		return phase(func(q txQueue, db *pgxpool.Pool) error {
			commits := &commitTimes{}
			var lat latencies
			stop, err := watch(q, func(seq int64) { lat.add(commits.since(seq)) })
			if err != nil {
				return err
			}
			time.Sleep(o.b.settle)
			txs, err := o.paced(ctx, q, db, commits)
			waitFor(&lat, txs, 30*time.Second)
			stop()
			if err != nil {
				return err
			}
			m["lat.tx_s"] = float64(txs) / o.cfg.duration.Seconds()
			m[prefix+"_p50"], m[prefix+"_p99"] = lat.pct(0.50), lat.pct(0.99)
			return nil
		})
	}
	if err := latency("lat.start", func(q txQueue, seen func(int64)) (func(), error) { return q.startConsumer(ctx, seen) }); err != nil {
		return nil, err
	}
	m["lat.redis_p50"], m["lat.redis_p99"] = nan(), nan()
	if col == 0 {
		if err := latency("lat.redis", func(q txQueue, seen func(int64)) (func(), error) { return q.queued(ctx, seen) }); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// writeAll writes n jobs in transactions of per jobs from the configured goroutines, and returns how
// long it took. commits, when non-nil, records each transaction's commit.
func (o *outboxRun) writeAll(ctx context.Context, q txQueue, db *pgxpool.Pool, n, per int, commits *commitTimes) (time.Duration, error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, o.cfg.conc)
	t0 := time.Now()
	for g := 0; g < o.cfg.conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				seq := next.Add(int64(per)) - int64(per)
				if seq >= int64(n) {
					return
				}
				k := min(per, n-int(seq))
				if err := writeTx(ctx, q, db, seq, k, commits); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	el := time.Since(t0)
	select {
	case err := <-errs:
		return el, err
	default:
		return el, nil
	}
}

// writeTx writes jobs seq..seq+k-1 in one transaction.
func writeTx(ctx context.Context, q txQueue, db *pgxpool.Pool, seq int64, k int, commits *commitTimes) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return err
	}
	defer tx.Rollback(ctx)
	if err := q.insert(ctx, tx, seq, k); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return err
	}
	if commits != nil {
		commits.set(seq, time.Now())
	}
	return nil
}

// paced offers cfg.rate transactions of one job a second for cfg.duration, from as many goroutines
// as it takes, and returns how many it wrote.
func (o *outboxRun) paced(ctx context.Context, q txQueue, db *pgxpool.Pool, commits *commitTimes) (int, error) {
	total := int(float64(o.cfg.rate) * o.cfg.duration.Seconds())
	interval := time.Second / time.Duration(o.cfg.rate)
	sem := make(chan struct{}, 64)
	var wg sync.WaitGroup
	var failed atomic.Value
	start := time.Now()
	for i := 0; i < total; i++ {
		if d := time.Until(start.Add(time.Duration(i) * interval)); d > 0 {
			time.Sleep(d)
		}
		sem <- struct{}{}
		wg.Add(1)
		go func(seq int64) {
			defer func() { <-sem; wg.Done() }()
			if err := writeTx(ctx, q, db, seq, 1, commits); err != nil {
				failed.Store(err)
			}
		}(int64(i))
	}
	wg.Wait()
	if err, _ := failed.Load().(error); err != nil {
		return total, err
	}
	return total, nil
}

// commitTimes maps a job's seq to when its transaction committed.
type commitTimes struct{ m sync.Map }

func (c *commitTimes) set(seq int64, t time.Time) { c.m.Store(seq, t) }

// since is how long ago seq's transaction committed; a job seen before its commit returned to the
// writer (it can be: the commit is visible before its reply arrives) counts as 0.
func (c *commitTimes) since(seq int64) time.Duration {
	now := time.Now()
	for i := 0; i < 1000; i++ {
		if v, ok := c.m.Load(seq); ok {
			return max(now.Sub(v.(time.Time)), 0)
		}
		time.Sleep(100 * time.Microsecond)
	}
	return 0
}

// latencies collects durations from many goroutines.
type latencies struct {
	mu sync.Mutex
	d  []time.Duration
}

func (l *latencies) add(d time.Duration) { l.mu.Lock(); l.d = append(l.d, d); l.mu.Unlock() }

func (l *latencies) len() int { l.mu.Lock(); defer l.mu.Unlock(); return len(l.d) }

// pct is the p quantile in ms.
func (l *latencies) pct(p float64) float64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.d) == 0 {
		return nan()
	}
	s := append([]time.Duration(nil), l.d...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return float64(percentile(s, p)) / float64(time.Millisecond)
}

func waitFor(l *latencies, n int, within time.Duration) {
	deadline := time.Now().Add(within)
	for l.len() < n && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
}

// walLSN is the server's current WAL position, in bytes.
func walLSN(ctx context.Context, db *pgxpool.Pool) (int64, error) {
	var n int64
	err := db.QueryRow(ctx, "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), '0/0')::bigint").Scan(&n)
	return n, err
}

// pgCPU is the CPU time the server's processes have used: the live ones', and through the
// postmaster's counts of its reaped children, the ended ones'.
func pgCPU(pg *pgserver.Server) time.Duration {
	const tick = 100 // USER_HZ
	var total int64
	for _, pid := range pg.PIDs() {
		b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) < 15 {
			continue
		}
		for _, i := range []int{11, 12, 13, 14} { // utime, stime, cutime, cstime
			v, _ := strconv.ParseInt(f[i], 10, 64)
			total += v
		}
	}
	return time.Duration(total) * time.Second / tick
}

func pgVersion() string {
	bin, err := pgserver.Bin()
	if err != nil {
		return "?"
	}
	return filepath.Base(filepath.Dir(bin))
}

// The River side.

// receiptArgs is River's job: the seq the harness follows.
type receiptArgs struct {
	Seq int64 `json:"seq"`
}

func (receiptArgs) Kind() string { return "receipt" }

type receiptWorker struct {
	river.WorkerDefaults[receiptArgs]
	started func(int64)
}

func (w *receiptWorker) Work(ctx context.Context, job *river.Job[receiptArgs]) error {
	w.started(job.Args.Seq)
	return nil
}

type riverTxQueue struct {
	db       *pgxpool.Pool
	workers  int
	cooldown time.Duration // River's FetchCooldown; 0: its default
	inserts  *river.Client[pgx.Tx]
}

// newRiverTxQueue is River with its defaults, or with a FetchCooldown of its own: at its default
// (100 ms) a client fetches at most MaxWorkers jobs per cooldown, which bounds a no-op workload.
func newRiverTxQueue(ctx context.Context, db *pgxpool.Pool, workers int, cooldown time.Duration) (*riverTxQueue, error) {
	mig, err := rivermigrate.New(riverpgxv5.New(db), nil)
	if err != nil {
		return nil, err
	}
	if _, err := mig.Migrate(ctx, rivermigrate.DirectionUp, nil); err != nil {
		return nil, err
	}
	// A client without workers only inserts, as an application's web process would.
	c, err := river.NewClient(riverpgxv5.New(db), &river.Config{})
	if err != nil {
		return nil, err
	}
	return &riverTxQueue{db: db, workers: workers, cooldown: cooldown, inserts: c}, nil
}

func (r *riverTxQueue) insert(ctx context.Context, tx pgx.Tx, seq int64, n int) error {
	if n == 1 {
		_, err := r.inserts.InsertTx(ctx, tx, receiptArgs{Seq: seq}, nil)
		return err
	}
	params := make([]river.InsertManyParams, n)
	for i := range params {
		params[i] = river.InsertManyParams{Args: receiptArgs{Seq: seq + int64(i)}}
	}
	_, err := r.inserts.InsertManyTx(ctx, tx, params)
	return err
}

func (r *riverTxQueue) startConsumer(ctx context.Context, started func(int64)) (func(), error) {
	workers := river.NewWorkers()
	river.AddWorker(workers, &receiptWorker{started: started})
	c, err := river.NewClient(riverpgxv5.New(r.db), &river.Config{
		Queues:        map[string]river.QueueConfig{river.QueueDefault: {MaxWorkers: r.workers}},
		Workers:       workers,
		Logger:        quietLogger(),
		FetchCooldown: r.cooldown,
	})
	if err != nil {
		return nil, err
	}
	if err := c.Start(ctx); err != nil {
		return nil, err
	}
	return func() {
		sctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		_ = c.Stop(sctx)
	}, nil
}

func (r *riverTxQueue) queued(context.Context, func(int64)) (func(), error) { return nil, nil }

func (r *riverTxQueue) close() {}

func riverVersion() string { return moduleVersion("github.com/riverqueue/river") }

func nan() float64 { return math.NaN() }

// quietLogger drops River's logs: the harness prints its own progress.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// moduleVersion is the version of a module the harness is built with.
func moduleVersion(path string) string {
	if bi, ok := debug.ReadBuildInfo(); ok {
		for _, d := range bi.Deps {
			if d.Path == path {
				return d.Version
			}
		}
	}
	return "?"
}
