// Command worker is the worker process of the fault tests: one work.WorkerPool serving the test job
// names, whose handler records every run and every completion in Redis, so that the test can account
// for every job after it has killed, stopped or frozen things.
//
// Bookkeeping, under the -ledger prefix (outside the pool's namespace):
//
//	<ledger>:runs  hash  "<key>|<run token>" -> "<job name>|<job key>|<pid>|<start>"
//	                                            one field per handler run that started
//	<ledger>:done  set   <key>                  jobs whose handler completed successfully
//
// With -timeline, every run that ends (returning, successful or not) also records when:
//
//	<ledger>:ends  hash  "<key>|<run token>" -> <end>
//
// <start> and <end> are the wall clock in nanoseconds (Unix), read as the handler starts and before
// it writes its end; <job key> is Job.Key ("" for a job without one). Every write is idempotent (a run
// token is random per run), so a write retried after a lost reply does not count twice.
//
// A job's args: "k" its tracking key, "ms" how long the handler works (milliseconds), "fail"
// "first" (fail the first attempt) or "always" (fail every attempt, so it ends in the dead set), and
// for a keyed job "key", the key it was enqueued with: a run that finds another in Job.Key records
// "<tracking key>|<Job.Key>" in the set <ledger>:wrong_key.
//
// -key-concurrency gives job names a JobOptions.KeyConcurrency: "ka=1,kb=2".
//
// With -callbacks, the pool also serves batch callback jobs of those names, which record:
//
//	<ledger>:callback_runs  hash  "<batch>|<name>" -> runs of the callback's handler
//	<ledger>:callback_jobs  set   "<batch>|<name>|<job ID>"   one member per callback job enqueued
//
// -groups registers grouped-job handlers (WorkerPool.GroupJob): "name=<max size>:<max delay s>:<grace
// s>,...". Each call records, with the call job's ID and a run token random per handler run:
//
//	<ledger>:calls     hash  "<call ID>|<run token>" -> "<job name>|<group>|<pid>|<k>,<k>,..."
//	                                                    written as the handler starts
//	<ledger>:calls_ok  set   "<call ID>|<run token>"   runs whose handler then returned nil
//
// and adds its members' tracking keys to <ledger>:done before it marks the run in calls_ok. A call
// works for the longest "ms" of its members. A call rerun (its worker killed before the ack) has the
// same call ID and a new run token.
//
// On SIGTERM or SIGINT the pool is stopped with StopContext and a deadline of -stop-timeout; jobs
// still running then go back to their queue. SIGKILL just kills it.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

type ctx struct{}

func main() {
	addr := flag.String("redis", "127.0.0.1:6379", "redis address")
	ns := flag.String("ns", "faults", "namespace")
	ledger := flag.String("ledger", "ledger", "key prefix of the bookkeeping")
	names := flag.String("names", "fa,fb,fc", "job names, comma-separated")
	concurrency := flag.Uint("concurrency", 8, "workers")
	heartbeat := flag.Duration("heartbeat", 0, "HeartbeatInterval (0: library default)")
	deadPool := flag.Duration("dead-pool", 0, "DeadPoolTimeout (0: library default)")
	stopTimeout := flag.Duration("stop-timeout", 500*time.Millisecond, "StopContext deadline on SIGTERM")
	readTimeout := flag.Duration("read-timeout", 0, "redigo read timeout (0: none)")
	maxFails := flag.Uint("max-fails", 3, "JobOptions.MaxFails")
	backoff := flag.Int64("backoff", 1, "retry backoff, seconds")
	logLevel := flag.String("log", "warn", "log level: debug, info, warn, error")
	callbacks := flag.String("callbacks", "", "batch callback job names, comma-separated")
	keyConcurrency := flag.String("key-concurrency", "", "JobOptions.KeyConcurrency per job name: name=n,...")
	timeline := flag.Bool("timeline", false, "record when each run ends too (<ledger>:ends)")
	groups := flag.String("groups", "", "grouped-job names: name=maxsize:maxdelay:grace (seconds),...")
	flag.Parse()

	var level slog.Level
	if err := level.UnmarshalText([]byte(*logLevel)); err != nil {
		level = slog.LevelWarn
	}
	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))

	dialOpts := []redis.DialOption{redis.DialConnectTimeout(time.Second)}
	if *readTimeout > 0 {
		dialOpts = append(dialOpts, redis.DialReadTimeout(*readTimeout), redis.DialWriteTimeout(*readTimeout))
	}
	pool := &redis.Pool{
		MaxIdle:     int(*concurrency) + 8,
		IdleTimeout: time.Minute,
		Dial:        func() (redis.Conn, error) { return redis.Dial("tcp", *addr, dialOpts...) },
	}

	wp := work.NewWorkerPoolWithOptions(ctx{}, *concurrency, *ns, pool, work.WorkerPoolOptions{
		Logger:            logger,
		HeartbeatInterval: *heartbeat,
		DeadPoolTimeout:   *deadPool,
	})
	runsKey, doneKey, endsKey, wrongKey := *ledger+":runs", *ledger+":done", *ledger+":ends", *ledger+":wrong_key"
	pid := strconv.Itoa(os.Getpid())
	handler := func(c context.Context, job *work.Job) (err error) {
		start := time.Now().UnixNano()
		k := job.ArgString("k")
		if err := job.ArgError(); err != nil {
			return err
		}
		run := k + "|" + token()
		if err := record(c, pool, "HSET", runsKey, run, job.Name+"|"+job.Key+"|"+pid+"|"+strconv.FormatInt(start, 10)); err != nil {
			return err
		}
		if want, _ := job.Args["key"].(string); want != job.Key {
			if err := record(c, pool, "SADD", wrongKey, k+"|"+job.Key); err != nil {
				return err
			}
		}
		if *timeline {
			defer func() {
				end := strconv.FormatInt(time.Now().UnixNano(), 10)
				// Written even when the job's context has ended: the run has ended all the same.
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				if rerr := record(ctx, pool, "HSET", endsKey, run, end); rerr != nil && err == nil {
					err = rerr
				}
			}()
		}
		if ms, ok := job.Args["ms"].(float64); ok && ms > 0 {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-c.Done():
				return c.Err()
			}
		}
		switch job.Args["fail"] {
		case "always":
			return errors.New("fails every attempt")
		case "first":
			if job.Fails == 0 {
				return errors.New("fails its first attempt")
			}
		}
		return record(c, pool, "SADD", doneKey, k)
	}
	limits := map[string]uint{}
	if *keyConcurrency != "" {
		for _, f := range strings.Split(*keyConcurrency, ",") {
			name, n, _ := strings.Cut(f, "=")
			v, err := strconv.ParseUint(n, 10, 32)
			if err != nil {
				fmt.Fprintf(os.Stderr, "-key-concurrency %q: %v\n", f, err)
				os.Exit(2)
			}
			limits[name] = uint(v)
		}
	}
	opts := work.JobOptions{MaxFails: *maxFails, Backoff: func(*work.Job) int64 { return *backoff }}
	for _, name := range strings.Split(*names, ",") {
		if name == "" {
			continue
		}
		o := opts
		o.KeyConcurrency = limits[name]
		wp.JobWithOptions(name, o, handler)
	}

	if *callbacks != "" {
		cbRuns, cbJobs := *ledger+":callback_runs", *ledger+":callback_jobs"
		callback := func(c context.Context, job *work.Job) error {
			b := job.ArgString("batch_id")
			if err := record(c, pool, "SADD", cbJobs, b+"|"+job.Name+"|"+job.ID); err != nil {
				return err
			}
			return record(c, pool, "HINCRBY", cbRuns, b+"|"+job.Name, 1)
		}
		for _, name := range strings.Split(*callbacks, ",") {
			wp.JobWithOptions(name, opts, callback)
		}
	}

	if *groups != "" {
		if err := registerGroups(wp, pool, *groups, *ledger, pid, opts); err != nil {
			fmt.Fprintf(os.Stderr, "-groups: %v\n", err)
			os.Exit(2)
		}
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	wp.Start()
	fmt.Println("started", os.Getpid())
	<-sig
	stopCtx, cancel := context.WithTimeout(context.Background(), *stopTimeout)
	err := wp.StopContext(stopCtx)
	cancel()
	fmt.Println("stopped", os.Getpid(), err)
}

// record runs an idempotent bookkeeping write, retrying while Redis is unreachable (a handler's side
// effect is not given up because of an outage), until the job's context ends.
func record(c context.Context, pool *redis.Pool, cmd string, args ...interface{}) error {
	wait := 20 * time.Millisecond
	for {
		conn, err := pool.GetContext(c)
		if err == nil {
			_, err = conn.Do(cmd, args...)
			conn.Close()
			if err == nil {
				return nil
			}
		}
		select {
		case <-c.Done():
			return fmt.Errorf("recording %s: %w (last error: %v)", cmd, c.Err(), err)
		case <-time.After(wait):
		}
		wait = min(2*wait, 500*time.Millisecond)
	}
}

// callKey carries the call job into its group handler's context, which only gets the members.
type callKey struct{}

// registerGroups registers the GroupJob handlers of spec (see -groups).
func registerGroups(wp *work.WorkerPool, pool *redis.Pool, spec, ledger, pid string, opts work.JobOptions) error {
	callsKey, okKey, doneKey := ledger+":calls", ledger+":calls_ok", ledger+":done"
	wp.Middleware(func(c context.Context, job *work.Job, next work.NextMiddlewareContextFunc) error {
		return next(context.WithValue(c, callKey{}, job))
	})
	handler := func(c context.Context, jobs []*work.Job) error {
		call, _ := c.Value(callKey{}).(*work.Job)
		if call == nil {
			return errors.New("no call job in the context")
		}
		run := call.ID + "|" + token()
		keys := make([]string, len(jobs))
		var ms float64
		for i, j := range jobs {
			keys[i] = j.ArgString("k")
			if v, ok := j.Args["ms"].(float64); ok {
				ms = max(ms, v)
			}
		}
		if err := record(c, pool, "HSET", callsKey, run, call.Name+"|"+call.Group+"|"+pid+"|"+strings.Join(keys, ",")); err != nil {
			return err
		}
		if ms > 0 {
			select {
			case <-time.After(time.Duration(ms) * time.Millisecond):
			case <-c.Done():
				return c.Err()
			}
		}
		if err := record(c, pool, "SADD", redis.Args{doneKey}.AddFlat(keys)...); err != nil {
			return err
		}
		return record(c, pool, "SADD", okKey, run)
	}
	for _, f := range strings.Split(spec, ",") {
		name, v, _ := strings.Cut(f, "=")
		var n [3]int64
		parts := strings.Split(v, ":")
		if len(parts) != 3 {
			return fmt.Errorf("%q: want name=maxsize:maxdelay:grace", f)
		}
		for i, p := range parts {
			var err error
			if n[i], err = strconv.ParseInt(p, 10, 64); err != nil {
				return fmt.Errorf("%q: %w", f, err)
			}
		}
		wp.GroupJob(name, work.GroupOptions{MaxSize: int(n[0]), MaxDelay: time.Duration(n[1]) * time.Second,
			Grace: time.Duration(n[2]) * time.Second, JobOptions: opts}, handler)
	}
	return nil
}

func token() string {
	var b [8]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}
