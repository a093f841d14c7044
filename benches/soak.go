package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// The soak workload: a steady mix of every feature of work that writes state in Redis, run for
// a long time while a sampler counts what Redis holds, key family by key family, so that anything
// that keeps growing shows. See README.md, "soak".

// soakConfig is one soak run.
type soakConfig struct {
	addr      string
	namespace string
	duration  time.Duration // how long the load runs
	interval  time.Duration // time between samples
	warmup    time.Duration // samples before this are left out of the verdicts
	rate      int           // jobs/s offered, every job of a batch, chain or EnqueueBatch counted
	workers   int           // workers per pool; two pools run
	keep      time.Duration // batches' Keep, tracked jobs' Keep and KeepFinished
	restart   time.Duration // the second pool is replaced by a new one this often (0: never)
	growth    float64       // relative threshold of the growth criterion (see judgeGrowth)
	deadMax   int           // the pools' DeadMaxJobs
	deadAge   time.Duration // the pools' DeadMaxAge
	log       func(format string, args ...interface{})
}

// The job names of the soak. Each stands for one feature, or one way of failing.
const (
	soakPlain      = "soak_plain"    // no-op; also enqueued with EnqueueIn and EnqueueBatch; some check in
	soakFlaky      = "soak_flaky"    // fails its first args.fails attempts (MaxFails 3), or snoozes once
	soakSlow       = "soak_slow"     // waits args.ms on its context (Timeout), reporting progress; some are cancelled
	soakLong       = "soak_long"     // tracked, runs soakLongMs reporting progress in a tight loop; every one is waited for (Client.WaitJob)
	soakUnique     = "soak_unique"   // EnqueueUnique and EnqueueUniqueIn over 64 args each
	soakUUD        = "soak_uud"      // EnqueueUniqueByKey over 64 keys, UniqueUntilDone, MaxConcurrency
	soakTracked    = "soak_tracked"  // EnqueueWith Track and Keep, sets a result; its queue is paused now and then; a fifth are waited for
	soakRecord     = "soak_record"   // KeepFinished and RateLimit, sets a result; some FailNow
	soakMember     = "soak_member"   // batch member: fails its first args.fails attempts (MaxFails 2); some add a member
	soakComplete   = "soak_complete" // the batches' OnComplete
	soakSuccess    = "soak_success"  // the batches' OnSuccess
	soakAfterBatch = "soak_after"    // EnqueueWith AfterBatches
	soakChainA     = "soak_chain_a"  // EnqueueChain, three steps; each step after the first reads the one before (DependencyResults)
	soakChainB     = "soak_chain_b"  //
	soakChainC     = "soak_chain_c"  //
	soakTick       = "soak_tick"     // PeriodicallyEnqueue "* * * * * *"
	soakTock       = "soak_tock"     // PeriodicallyEnqueue "@every 2s"
	soakKeyed      = "soak_keyed"    // keyed: KeyConcurrency, KeyRateLimit, KeyMaxWaiting; a key paused now and then, one with overrides set and cleared
	soakKeyedSeq   = "soak_seq"      // keyed over many keys, each getting a job now and then, KeyConcurrency 1
	soakBatchSize  = 10              // members of a batch
	soakMultiSize  = 10              // jobs of an EnqueueBatch call
	soakUniqueKeys = 64              // distinct args (keys) of each kind of unique job
	soakSlowMs     = 200             // how long a slow job runs
	soakLongMs     = 1500            // how long a long job runs
	soakMaxWaiters = 512             // WaitJob calls at once; a job to wait for beyond them is not waited for (counted)
	soakTimeout    = 300 * time.Millisecond
	soakKeys       = 8        // keys of soak_keyed's steady traffic, "t0".."t7"
	soakSeqKeys    = 1000     // keys of soak_seq, "s0".."s999", taken in turn
	soakPausedKey  = "paused" // a key of soak_keyed paused 3 s of every 10, which may have 3 jobs waiting: its enqueues meet ErrKeyFull
	soakVIPKey     = "t0"     // a key of soak_keyed given overrides every 10 s, cleared 4 s later
	soakPausedMax  = 3
)

// soakKeyedOptions are soak_keyed's options: 2 jobs of a key at once, 50 starts of a key per second
// (an interval of a whole number of milliseconds, as for soak_record's RateLimit), 20 jobs of a key
// waiting at most.
var soakKeyedOptions = work.JobOptions{KeyConcurrency: 2, KeyRateLimit: work.RateLimit{Jobs: 50, Period: time.Second},
	KeyMaxWaiting: 20, MaxFails: 3, Backoff: func(*work.Job) int64 { return 1 }}

// soakVIPLimits are the overrides soakVIPKey gets every 10 s, for 4 s.
var soakVIPLimits = work.KeyLimits{Concurrency: 4, Weight: 3, RateLimit: work.RateLimit{Jobs: 100, Period: time.Second}}

// soakNames are the job names the soak's pools serve.
var soakNames = []string{soakPlain, soakFlaky, soakSlow, soakLong, soakUnique, soakUUD, soakTracked, soakRecord,
	soakMember, soakComplete, soakSuccess, soakAfterBatch, soakChainA, soakChainB, soakChainC, soakTick, soakTock,
	soakKeyed, soakKeyedSeq}

// soakKeyedNames are the soak's job names with keyed jobs.
var soakKeyedNames = []string{soakKeyed, soakKeyedSeq}

// soakKind is one way the soak's producer enqueues: weight picks of it for every
// sum-of-weights picks, each counting as jobs jobs of the offered rate. n is the pick's number
// among the picks of its kind, from 0, which decides what its jobs do.
type soakKind struct {
	name   string
	weight int
	jobs   int
	do     func(l *soakLoad, n int64) error
}

// soakKinds is the mix. Per 10,000 jobs offered: 5,237 plain jobs, 500 of them in EnqueueBatch
// calls and 500 scheduled; 1,000 that fail or snooze; 100 slow; 10 long; 600 unique; 500 unique until
// done; 500 tracked (100 of them waited for); 500 recorded; 1,000 batch members (100 batches, each with two callbacks; a quarter
// built with NewBatch, Add and Close, with a member that adds a member; a quarter with a job
// waiting for the batch, not counted); one chain of three steps; 550 keyed jobs (300 over the 8
// steady keys, 100 more in EnqueueBatch calls, 50 to the key that is paused now and then, 100 over
// 1,000 keys with KeyConcurrency 1). Every job of a chain keeps its record 24 hours (EnqueueChain
// has no Keep), so chains are rare: their records would otherwise dominate what grows over a run
// shorter than a day.
var soakKinds = []soakKind{
	{"plain", 4237, 1, (*soakLoad).plain},
	{"multi", 50, soakMultiSize, (*soakLoad).multi},
	{"scheduled", 500, 1, (*soakLoad).scheduled},
	{"flaky", 1000, 1, (*soakLoad).flaky},
	{"slow", 100, 1, (*soakLoad).slow},
	{"long", 10, 1, (*soakLoad).long},
	{"unique", 500, 1, (*soakLoad).unique},
	{"unique-in", 100, 1, (*soakLoad).uniqueIn},
	{"until-done", 500, 1, (*soakLoad).untilDone},
	{"tracked", 500, 1, (*soakLoad).tracked},
	{"recorded", 500, 1, (*soakLoad).recorded},
	{"batch", 100, soakBatchSize, (*soakLoad).batch},
	{"chain", 1, 3, (*soakLoad).chain},
	{"keyed", 300, 1, (*soakLoad).keyed},
	{"keyed-multi", 10, soakMultiSize, (*soakLoad).keyedMulti},
	{"keyed-paused", 50, 1, (*soakLoad).keyedPaused},
	{"keyed-seq", 100, 1, (*soakLoad).keyedSeq},
}

// soakLoad is a running soak: two pools, a paced producer, a canceller and an administrator.
type soakLoad struct {
	cfg    soakConfig
	rp     *redigo.Pool // the enqueuer's, the client's and the pools' connections
	enq    *work.Enqueuer
	client *work.Client
	logger *slog.Logger

	mu    sync.Mutex // held while the second pool is replaced, and while the process is measured
	pools [2]*work.WorkerPool

	toCancel chan string // IDs of running slow jobs that are to be cancelled

	offered  atomic.Int64 // jobs whose enqueue call returned, successful or not
	enqErrs  atomic.Int64 // enqueue calls that failed (but for refusals)
	refused  atomic.Int64 // enqueue calls refused with ErrKeyFull, as expected now and then
	firstErr atomic.Value // the first enqueue error (error)
	outcomes [5]atomic.Int64
	restarts atomic.Int64
	cancels  atomic.Int64 // CancelJob calls that reached a pool

	waiters    chan struct{} // a slot per WaitJob call under way
	waitCtx    context.Context
	waitCancel context.CancelFunc // ends the waits still under way when the run ends
	waitsCut   atomic.Int64       // waits the end of the run cut short
	waitsOK    atomic.Int64       // WaitJob calls that returned the record the job should have ended with
	waitsBad   atomic.Int64       // WaitJob calls that failed, timed out, or returned another record
	waitsSkip  atomic.Int64       // jobs not waited for: soakMaxWaiters calls were under way
	firstWait  atomic.Value       // the first bad wait (error)
	depResults atomic.Int64       // chain steps that read the step before them
	depBad     atomic.Int64       // chain steps whose DependencyResults was not the step before them, done
	kindN      []atomic.Int64     // picks of each kind so far, by index in soakKinds
}

func newSoakLoad(cfg soakConfig) *soakLoad {
	rp := redigoPool(cfg.addr, 2*cfg.workers+40)
	l := &soakLoad{
		cfg:      cfg,
		rp:       rp,
		enq:      work.NewEnqueuer(cfg.namespace, rp),
		client:   work.NewClient(cfg.namespace, rp),
		toCancel: make(chan string, 64),
		waiters:  make(chan struct{}, soakMaxWaiters),
		kindN:    make([]atomic.Int64, len(soakKinds)),
	}
	l.waitCtx, l.waitCancel = context.WithCancel(context.Background())
	// Errors only: the failures the soak provokes are logged as warnings.
	l.logger = slog.New(slog.NewTextHandler(logWriter{cfg.log}, &slog.HandlerOptions{Level: slog.LevelError}))
	return l
}

// logWriter writes log records through a printf-style function.
type logWriter struct {
	logf func(format string, args ...interface{})
}

func (w logWriter) Write(p []byte) (int, error) {
	w.logf("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

var _ io.Writer = logWriter{}

// newPool makes a pool serving every soak name; each pool made is a new pool ID, as after a deploy.
func (l *soakLoad) newPool() *work.WorkerPool {
	wp := work.NewWorkerPoolWithOptions(struct{}{}, uint(l.cfg.workers), l.cfg.namespace, l.rp, work.WorkerPoolOptions{
		Logger:      l.logger,
		DeadMaxJobs: l.cfg.deadMax,
		DeadMaxAge:  l.cfg.deadAge,
		OnOutcome: func(o work.JobOutcome) {
			if r := int(o.Result); r >= 0 && r < len(l.outcomes) {
				l.outcomes[r].Add(1)
			}
		},
	})
	oneSecond := func(*work.Job) int64 { return 1 }
	keep := l.cfg.keep
	wp.Job(soakPlain, func(job *work.Job) error {
		if job.ArgBool("checkin") {
			job.Checkin("halfway")
		}
		return nil
	})
	wp.JobWithOptions(soakFlaky, work.JobOptions{MaxFails: 3, Backoff: oneSecond}, func(job *work.Job) error {
		if until := job.ArgInt64("snooze_until"); until > 0 {
			if d := time.Until(time.UnixMilli(until)); d > 0 {
				return work.Snooze(d)
			}
		}
		return failFirst(job)
	})
	wp.JobWithOptions(soakSlow, work.JobOptions{MaxFails: 3, Backoff: oneSecond, Timeout: soakTimeout},
		func(ctx context.Context, job *work.Job) error {
			ms := job.ArgInt64("ms")
			if job.Fails > 0 {
				ms = soakSlowMs / 2 // a job that timed out runs shorter the next time
			}
			if job.ArgBool("cancel") {
				select {
				case l.toCancel <- job.ID:
				default:
				}
			}
			// Report progress as it goes, as a long job would.
			start, d := time.Now(), time.Duration(ms)*time.Millisecond
			tick := time.NewTicker(10 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-tick.C:
					el := time.Since(start)
					if el >= d {
						return nil
					}
					_ = job.SetProgress(float64(el)/float64(d), "waiting")
				}
			}
		})
	wp.JobWithOptions(soakLong, work.JobOptions{MaxFails: 3, Backoff: oneSecond}, func(ctx context.Context, job *work.Job) error {
		start, d := time.Now(), soakLongMs*time.Millisecond
		for i := 0; ; i++ {
			el := time.Since(start)
			if el >= d {
				break
			}
			if err := job.SetProgress(float64(el)/float64(d), "step "+strconv.Itoa(i)); err != nil {
				return err
			}
			if i%1000 == 0 {
				select {
				case <-ctx.Done():
					return ctx.Err()
				case <-time.After(time.Millisecond):
				}
			}
		}
		return job.SetResult(map[string]interface{}{"n": job.ArgInt64("n")})
	})
	wp.Job(soakUnique, func(*work.Job) error { return nil })
	wp.JobWithOptions(soakUUD, work.JobOptions{UniqueUntilDone: true, MaxConcurrency: 8, MaxFails: 3, Backoff: oneSecond}, failFirst)
	wp.JobWithOptions(soakTracked, work.JobOptions{MaxFails: 3, Backoff: oneSecond}, func(job *work.Job) error {
		if err := failFirst(job); err != nil {
			return err
		}
		return job.SetResult(map[string]interface{}{"n": job.ArgInt64("n")})
	})
	// A limit far above the load, so that it writes its state without holding jobs back. Its
	// interval (Period/Jobs) is a whole number of milliseconds: with any other, the fetch script
	// stores a fractional theoretical arrival time, then refuses it as a damaged key and skips the
	// queue, which then backs up (seen with Jobs 100000 per second, and 3 per second).
	wp.JobWithOptions(soakRecord, work.JobOptions{KeepFinished: keep, RateLimit: work.RateLimit{Jobs: 1000, Period: time.Second}},
		func(job *work.Job) error {
			if job.ArgBool("fail_now") {
				return work.FailNow(errors.New("refused"))
			}
			return job.SetResult(map[string]interface{}{"n": job.ArgInt64("n")})
		})
	wp.JobWithOptions(soakMember, work.JobOptions{MaxFails: 2, Backoff: oneSecond}, func(job *work.Job) error {
		if job.ArgBool("fan_out") {
			if _, err := l.enq.OpenBatch(job.Batch).Add(work.BatchJob{Name: soakMember, Args: work.Q{"n": job.ArgInt64("n")}}); err != nil {
				return err
			}
		}
		return failFirst(job)
	})
	wp.JobWithOptions(soakKeyed, soakKeyedOptions, failFirst)
	wp.JobWithOptions(soakKeyedSeq, work.JobOptions{KeyConcurrency: 1}, func(*work.Job) error { return nil })
	for _, name := range []string{soakComplete, soakSuccess, soakAfterBatch, soakChainA, soakTick, soakTock} {
		wp.Job(name, func(*work.Job) error { return nil })
	}
	for _, name := range []string{soakChainB, soakChainC} {
		wp.Job(name, l.readStepBefore)
	}
	wp.PeriodicallyEnqueue("* * * * * *", soakTick)
	wp.PeriodicallyEnqueue("@every 2s", soakTock)
	return wp
}

// failFirst fails the first args.fails attempts of a job.
func failFirst(job *work.Job) error {
	if job.Fails < job.ArgInt64("fails") {
		return fmt.Errorf("attempt %d of %d fails", job.Fails+1, job.ArgInt64("fails")+1)
	}
	return nil
}

// The producer's kinds. n numbers the picks of a kind; its value modulo 100 (or 4) chooses what the
// job does, so that the mix is the same in every run.

func (l *soakLoad) plain(n int64) error {
	_, err := l.enq.Enqueue(soakPlain, work.Q{"n": n, "checkin": n%20 == 0})
	return err
}

func (l *soakLoad) multi(n int64) error {
	jobs := make([]work.BatchJob, soakMultiSize)
	for i := range jobs {
		jobs[i] = work.BatchJob{Name: soakPlain, Args: work.Q{"n": n*soakMultiSize + int64(i)}}
	}
	_, err := l.enq.EnqueueBatch(jobs)
	return err
}

func (l *soakLoad) scheduled(n int64) error {
	_, err := l.enq.EnqueueIn(soakPlain, 1+n%3, work.Q{"n": n})
	return err
}

// flaky: 75% succeed at once, 15% fail once, 5% twice, 2% die after three failures, 3% snooze for
// half a second first.
func (l *soakLoad) flaky(n int64) error {
	q := work.Q{"n": n}
	switch m := n % 100; {
	case m < 75:
	case m < 90:
		q["fails"] = 1
	case m < 95:
		q["fails"] = 2
	case m < 97:
		q["fails"] = 3
	default:
		q["snooze_until"] = time.Now().Add(500 * time.Millisecond).UnixMilli()
	}
	_, err := l.enq.Enqueue(soakFlaky, q)
	return err
}

// slow: a quarter are cancelled while they run (and die); a quarter overrun their timeout once and
// succeed on the retry.
func (l *soakLoad) slow(n int64) error {
	q := work.Q{"ms": soakSlowMs}
	switch n % 4 {
	case 0:
		q["cancel"] = true
	case 1:
		q["ms"] = 2 * soakTimeout.Milliseconds()
	}
	_, err := l.enq.Enqueue(soakSlow, q)
	return err
}

func (l *soakLoad) unique(n int64) error {
	_, err := l.enq.EnqueueUnique(soakUnique, work.Q{"k": n % soakUniqueKeys})
	return err
}

func (l *soakLoad) uniqueIn(n int64) error {
	_, err := l.enq.EnqueueUniqueIn(soakUnique, 1, work.Q{"k": n % soakUniqueKeys, "in": true})
	return err
}

// tenthFailOnce are the args of the n-th job of a kind of which a tenth fail once.
func tenthFailOnce(n int64) work.Q {
	if n%10 == 0 {
		return work.Q{"n": n, "fails": 1}
	}
	return work.Q{"n": n}
}

// untilDone: a tenth fail once, so that the lock is held through a retry.
func (l *soakLoad) untilDone(n int64) error {
	_, err := l.enq.EnqueueUniqueByKey(soakUUD, tenthFailOnce(n), work.Q{"k": n % soakUniqueKeys})
	return err
}

// tracked: a tenth fail once; a fifth are waited for.
func (l *soakLoad) tracked(n int64) error {
	job, err := l.enq.EnqueueWith(soakTracked, tenthFailOnce(n), work.EnqueueOptions{Track: true, Keep: l.cfg.keep})
	if err == nil && n%5 == 0 {
		l.wait(job.ID, fmt.Sprintf(`{"n":%d}`, n))
	}
	return err
}

// long: a job that runs soakLongMs reporting progress all along, waited for.
func (l *soakLoad) long(n int64) error {
	job, err := l.enq.EnqueueWith(soakLong, work.Q{"n": n}, work.EnqueueOptions{Track: true, Keep: l.cfg.keep})
	if err == nil {
		l.wait(job.ID, fmt.Sprintf(`{"n":%d}`, n))
	}
	return err
}

// wait waits for a job in the background (Client.WaitJob, on the load's one Client) and checks that
// it ended done with the result want; with soakMaxWaiters waits under way, it counts the job as not
// waited for.
func (l *soakLoad) wait(id, want string) {
	select {
	case l.waiters <- struct{}{}:
	default:
		l.waitsSkip.Add(1)
		return
	}
	go func() {
		defer func() { <-l.waiters }()
		ctx, cancel := context.WithTimeout(l.waitCtx, time.Minute)
		defer cancel()
		rec, err := l.client.WaitJob(ctx, id)
		if l.waitCtx.Err() != nil {
			l.waitsCut.Add(1)
			return
		}
		if err == nil && (rec.State != "done" || string(rec.Result) != want) {
			err = fmt.Errorf("job %s ended %s with %s, want done with %s", id, rec.State, rec.Result, want)
		}
		if err != nil {
			if l.waitsBad.Add(1) == 1 {
				l.firstWait.Store(err)
			}
			return
		}
		l.waitsOK.Add(1)
	}()
}

// readStepBefore is a chain's later steps: it reads the step before it, which must have succeeded.
func (l *soakLoad) readStepBefore(job *work.Job) error {
	deps, err := job.DependencyResults(context.Background())
	if err != nil {
		return err
	}
	if len(deps) != 1 || deps[0].State != "done" {
		l.depBad.Add(1)
		return nil
	}
	l.depResults.Add(1)
	return nil
}

// recorded: 2% fail for good at once.
func (l *soakLoad) recorded(n int64) error {
	_, err := l.enq.Enqueue(soakRecord, work.Q{"n": n, "fail_now": n%50 == 0})
	return err
}

// batch: soakBatchSize members, of which 8% fail once and 2% die, spread over the batches (member
// g fails by g×37 mod 100, 37 being prime to 100); both callbacks. Every fourth batch is built with
// NewBatch, Add and Close, with a member that adds one more member while it runs; every fourth
// (another one) gets a job that waits for it (AfterBatches), not counted among the pick's jobs.
func (l *soakLoad) batch(n int64) error {
	members := make([]work.BatchJob, soakBatchSize)
	for i := range members {
		g := n*soakBatchSize + int64(i)
		q := work.Q{"n": g}
		switch m := g * 37 % 100; {
		case m < 8:
			q["fails"] = 1
		case m < 10:
			q["fails"] = 2 // MaxFails 2: dead
		}
		members[i] = work.BatchJob{Name: soakMember, Args: q}
	}
	opts := work.BatchOptions{
		Description: "soak",
		OnComplete:  &work.BatchCallback{Name: soakComplete, Args: work.Q{"n": n}},
		OnSuccess:   &work.BatchCallback{Name: soakSuccess, Args: work.Q{"n": n}},
		Keep:        l.cfg.keep,
	}
	var id string
	if n%4 == 0 {
		members[0].Args["fan_out"] = true
		b, err := l.enq.NewBatch(opts)
		if err != nil {
			return err
		}
		if _, err := b.Add(members...); err != nil {
			return err
		}
		if err := b.Close(); err != nil {
			return err
		}
		id = b.ID
	} else {
		b, _, err := l.enq.EnqueueInBatch(opts, members)
		if err != nil {
			return err
		}
		id = b.ID
	}
	if n%4 == 1 {
		_, err := l.enq.EnqueueWith(soakAfterBatch, work.Q{"n": n}, work.EnqueueOptions{AfterBatches: []string{id}, Keep: l.cfg.keep})
		return err
	}
	return nil
}

func (l *soakLoad) chain(n int64) error {
	_, err := l.enq.EnqueueChain(
		work.ChainStep{Name: soakChainA, Args: work.Q{"n": n}},
		work.ChainStep{Name: soakChainB},
		work.ChainStep{Name: soakChainC},
	)
	return err
}

// keyed: soak_keyed over its steady keys in turn; a tenth fail once, another tenth are scheduled a
// second ahead (EnqueueOptions.At).
func (l *soakLoad) keyed(n int64) error {
	opts := work.EnqueueOptions{Key: soakKey(n)}
	if n%10 == 5 {
		opts.At = time.Now().Add(time.Second)
	}
	_, err := l.enq.EnqueueWith(soakKeyed, tenthFailOnce(n), opts)
	return err
}

// soakKey is the n-th steady key of soak_keyed.
func soakKey(n int64) string { return "t" + strconv.FormatInt(n%soakKeys, 10) }

// keyedMulti: an EnqueueBatch of soak_keyed jobs over the steady keys.
func (l *soakLoad) keyedMulti(n int64) error {
	jobs := make([]work.BatchJob, soakMultiSize)
	for i := range jobs {
		g := n*soakMultiSize + int64(i)
		jobs[i] = work.BatchJob{Name: soakKeyed, Key: soakKey(g), Args: work.Q{"n": g}}
	}
	_, err := l.enq.EnqueueBatch(jobs)
	return err
}

// keyedPaused: a job of the key that is paused 3 s of every 10 and may have soakPausedMax jobs
// waiting: while it is paused, enqueues past that are refused (ErrKeyFull).
func (l *soakLoad) keyedPaused(n int64) error {
	_, err := l.enq.EnqueueWith(soakKeyed, work.Q{"n": n}, work.EnqueueOptions{Key: soakPausedKey})
	return err
}

// keyedSeq: soak_seq over 1,000 keys in turn, so that each key comes and goes.
func (l *soakLoad) keyedSeq(n int64) error {
	_, err := l.enq.EnqueueWith(soakKeyedSeq, work.Q{"n": n}, work.EnqueueOptions{Key: "s" + strconv.FormatInt(n%soakSeqKeys, 10)})
	return err
}

// picker hands out the kinds in proportion to their weights, evenly spread (smooth weighted
// round-robin), with the job slot at which each pick is due.
type picker struct {
	mu      sync.Mutex
	current []int
	total   int
	slots   int64 // jobs handed out so far
}

func newPicker() *picker {
	p := &picker{current: make([]int, len(soakKinds))}
	for _, k := range soakKinds {
		p.total += k.weight
	}
	return p
}

// next returns the index of the next kind and the job slot it starts at.
func (p *picker) next() (int, int64) {
	p.mu.Lock()
	defer p.mu.Unlock()
	best := 0
	for i, k := range soakKinds {
		p.current[i] += k.weight
		if p.current[i] > p.current[best] {
			best = i
		}
	}
	p.current[best] -= p.total
	slot := p.slots
	p.slots += int64(soakKinds[best].jobs)
	return best, slot
}

// produce offers cfg.rate jobs/s from g goroutines until stop is closed: each pick is sent when its
// first job slot is due (slot/rate after the start), or at once when the producer is late.
func (l *soakLoad) produce(g int, stop <-chan struct{}) {
	p := newPicker()
	interval := float64(time.Second) / float64(l.cfg.rate)
	t0 := time.Now()
	var wg sync.WaitGroup
	for k := 0; k < g; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				ki, slot := p.next()
				if d := time.Until(t0.Add(time.Duration(float64(slot) * interval))); d > 0 {
					select {
					case <-stop:
						return
					case <-time.After(d):
					}
				}
				select {
				case <-stop:
					return
				default:
				}
				kind := soakKinds[ki]
				// Only the paused key is meant to fill up: a refusal of any other kind is an error.
				if err := kind.do(l, l.kindN[ki].Add(1)-1); errors.Is(err, work.ErrKeyFull) && kind.name == "keyed-paused" {
					l.refused.Add(1)
				} else if err != nil {
					if l.enqErrs.Add(1) == 1 {
						l.firstErr.Store(fmt.Errorf("%s: %w", kind.name, err))
					}
				}
				l.offered.Add(int64(kind.jobs))
			}
		}()
	}
	wg.Wait()
}

// cancel cancels the slow jobs that ask for it, while they run.
func (l *soakLoad) cancel(stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		case id := <-l.toCancel:
			if n, err := l.client.CancelJob(id); err == nil && n > 0 {
				l.cancels.Add(1)
			}
		}
	}
}

// administer pauses the tracked jobs' queue for half a second every ten seconds, and replaces the
// second pool by a new one every cfg.restart, as a deploy would.
func (l *soakLoad) administer(stop <-chan struct{}) {
	pause := time.NewTicker(10 * time.Second)
	defer pause.Stop()
	var restart <-chan time.Time
	if l.cfg.restart > 0 {
		t := time.NewTicker(l.cfg.restart)
		defer t.Stop()
		restart = t.C
	}
	for {
		select {
		case <-stop:
			return
		case <-pause.C:
			if err := l.client.PauseQueue(soakTracked); err != nil {
				l.cfg.log("soak: pause: %v", err)
			}
			select {
			case <-stop:
			case <-time.After(500 * time.Millisecond):
			}
			if err := l.client.UnpauseQueue(soakTracked); err != nil {
				l.cfg.log("soak: unpause: %v", err)
			}
		case <-restart:
			l.mu.Lock()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if err := l.pools[1].StopContext(ctx); err != nil {
				l.cfg.log("soak: stopping the second pool: %v", err)
			}
			cancel()
			l.pools[1] = l.newPool()
			l.pools[1].Start()
			l.mu.Unlock()
			l.restarts.Add(1)
		}
	}
}

// administerKeys pauses soakPausedKey 3 s of every 10, and sets soakVIPKey's overrides every 10 s
// and clears them 4 s later.
func (l *soakLoad) administerKeys(stop <-chan struct{}) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for sec := 1; ; sec++ {
		select {
		case <-stop:
			return
		case <-tick.C:
		}
		var err error
		switch sec % 10 {
		case 0:
			err = l.client.PauseKey(soakKeyed, soakPausedKey)
		case 3:
			err = l.client.UnpauseKey(soakKeyed, soakPausedKey)
		case 5:
			err = l.client.SetKeyLimits(soakKeyed, soakVIPKey, soakVIPLimits)
		case 9:
			err = l.client.ClearKeyLimits(soakKeyed, soakVIPKey)
		}
		if err != nil {
			l.cfg.log("soak: key control: %v", err)
		}
	}
}

// soakRun is what a soak run recorded.
type soakRun struct {
	cfg     soakConfig
	at      []time.Duration      // when each sample was taken, from the start of the load
	samples []map[string]float64 // by series key (soakSeriesDefs)
	elapsed time.Duration
	offered int64
	enqErrs int64
	refused int64 // ErrKeyFull refusals
	// firstErr is the first enqueue error, if any.
	firstErr error
	outcomes map[string]int64
	restarts int64
	cancels  int64
	// WaitJob calls that got the right record, that did not, jobs not waited for and waits the end
	// of the run cut short; the first bad wait; chain steps that read the step before them, and those that did not find it done.
	waitsOK, waitsBad, waitsSkip, waitsCut int64
	firstWait                              error
	depResults, depBad                     int64
	goCPU                                  float64 // seconds, the whole process
	redisCPU                               float64 // seconds
}

// runSoak runs the soak described by cfg and samples it every cfg.interval, from the start of the
// load to its end; each sample is also passed to onSample as it is taken.
func runSoak(cfg soakConfig, onSample func(at time.Duration, s map[string]float64)) (*soakRun, error) {
	sm, err := newSoakSampler(cfg.addr, cfg.namespace)
	if err != nil {
		return nil, err
	}
	defer sm.close()
	l := newSoakLoad(cfg)
	defer l.rp.Close()
	cpu0, rcpu0 := goCPU(), sm.redisCPU()

	l.pools[0], l.pools[1] = l.newPool(), l.newPool()
	l.pools[0].Start()
	l.pools[1].Start()
	// The paused key may have a few jobs waiting: its own override, kept throughout.
	if err := l.client.SetKeyLimits(soakKeyed, soakPausedKey, work.KeyLimits{MaxWaiting: soakPausedMax}); err != nil {
		for _, wp := range l.pools {
			wp.Stop()
		}
		return nil, fmt.Errorf("soak: %w", err)
	}
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Add(4)
	go func() { defer bg.Done(); l.produce(16, stop) }()
	go func() { defer bg.Done(); l.cancel(stop) }()
	go func() { defer bg.Done(); l.administer(stop) }()
	go func() { defer bg.Done(); l.administerKeys(stop) }()

	run := &soakRun{cfg: cfg}
	t0 := time.Now()
	var prevOffered, prevRuns int64
	prevAt := time.Duration(0)
	var sampleErr error
	for i := 0; ; i++ {
		at := time.Duration(i) * cfg.interval // when the sample is due; then, when it was taken
		if at > cfg.duration {
			break
		}
		time.Sleep(time.Until(t0.Add(at)))
		// Never while the second pool is being replaced: two pools run at every sample.
		l.mu.Lock()
		at = time.Since(t0)
		s, err := sm.sample()
		if err != nil {
			l.mu.Unlock()
			sampleErr = err
			break
		}
		// The process, after a GC.
		runtime.GC()
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		s["heap"] = float64(ms.HeapInuse) / (1 << 20)
		s["goroutines"] = float64(runtime.NumGoroutine())
		s["waiters"] = float64(len(l.waiters))
		l.mu.Unlock()
		now := time.Since(t0)
		offered, runs := l.offered.Load(), l.runs()
		if i > 0 {
			s["sent_s"] = float64(offered-prevOffered) / (now - prevAt).Seconds()
			s["runs_s"] = float64(runs-prevRuns) / (now - prevAt).Seconds()
		} else {
			s["sent_s"], s["runs_s"] = 0, 0
		}
		prevOffered, prevRuns, prevAt = offered, runs, now
		run.at = append(run.at, at)
		run.samples = append(run.samples, s)
		if onSample != nil {
			onSample(at, s)
		}
	}
	run.elapsed = time.Since(t0)
	close(stop)
	bg.Wait()
	// The jobs waited for end while the pools still run; a wait left after that is cut short.
	for i := 0; i < 100 && len(l.waiters) > 0; i++ {
		time.Sleep(100 * time.Millisecond)
	}
	l.waitCancel()
	for len(l.waiters) > 0 {
		time.Sleep(10 * time.Millisecond)
	}
	l.mu.Lock()
	for _, wp := range l.pools {
		wp.Stop()
	}
	l.mu.Unlock()
	run.offered, run.enqErrs, run.refused = l.offered.Load(), l.enqErrs.Load(), l.refused.Load()
	if e, ok := l.firstErr.Load().(error); ok {
		run.firstErr = e
	}
	run.outcomes = make(map[string]int64)
	for r := range l.outcomes {
		run.outcomes[work.Result(r).String()] = l.outcomes[r].Load()
	}
	run.restarts, run.cancels = l.restarts.Load(), l.cancels.Load()
	run.waitsOK, run.waitsBad, run.waitsSkip, run.waitsCut = l.waitsOK.Load(), l.waitsBad.Load(), l.waitsSkip.Load(), l.waitsCut.Load()
	if e, ok := l.firstWait.Load().(error); ok {
		run.firstWait = e
	}
	run.depResults, run.depBad = l.depResults.Load(), l.depBad.Load()
	run.goCPU, run.redisCPU = goCPU()-cpu0, sm.redisCPU()-rcpu0
	if sampleErr != nil {
		return run, fmt.Errorf("soak: sampling: %w", sampleErr)
	}
	return run, nil
}

// runs is the number of job runs that ended so far (every outcome).
func (l *soakLoad) runs() int64 {
	var n int64
	for i := range l.outcomes {
		n += l.outcomes[i].Load()
	}
	return n
}

// check refuses a configuration that cannot be run or judged.
func (c soakConfig) check() error {
	switch {
	case c.duration <= 0 || c.interval <= 0 || c.rate < 1 || c.workers < 1:
		return errors.New("-soak-duration, -soak-interval, -soak-rate and -soak-workers must be positive")
	case c.keep < time.Second:
		return errors.New("-soak-keep must be at least 1s (Redis keeps keys for whole seconds)")
	case c.restart < 0 || c.warmup < 0 || c.growth <= 0:
		return errors.New("-soak-restart and -soak-warmup cannot be negative, -soak-growth must be positive")
	}
	if n := c.judgedSamples(); n < 4 {
		return fmt.Errorf("the soak would judge %d samples (-soak-duration %v, -soak-warmup %v, -soak-interval %v): it needs 4", n, c.duration, c.warmup, c.interval)
	}
	return nil
}

// judgedSamples is the number of samples taken at or after the warm-up.
func (c soakConfig) judgedSamples() int {
	n := 0
	for at := time.Duration(0); at <= c.duration; at += c.interval {
		if at >= c.warmup {
			n++
		}
	}
	return n
}
