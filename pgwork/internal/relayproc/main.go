// Command relayproc is the process pgwork's fault tests SIGKILL: a Relay (-mode relay), or a worker
// pool whose handler applies its effect with RunOnce (-mode worker).
//
// The worker's job "effect" records in Redis that its handler started (HINCRBY <ledger>:starts
// <job ID> 1), then, with RunOnce, inserts (job ID, pid) into the table effects and sleeps 0-50 ms
// inside the transaction, so that a kill often lands mid-transaction; when RunOnce finds the job
// done already it records HINCRBY <ledger>:skipped <job ID> 1. After RunOnce it sleeps 0-20 ms more
// (the handler's work outside the database), so that a kill also lands between the commit and the
// job's acknowledgement, the case only RunOnce's mark covers.
//
// SIGTERM or SIGINT stops it cleanly; SIGKILL is what the tests send.
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"math/rand"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/workqueue/work"
	"github.com/workqueue/work/pgwork"
)

func main() {
	mode := flag.String("mode", "relay", "relay or worker")
	addr := flag.String("redis", "127.0.0.1:6379", "redis address")
	ns := flag.String("ns", "pgfaults", "namespace")
	ledger := flag.String("ledger", "pgfaults-ledger", "key prefix of the worker's bookkeeping")
	dsn := flag.String("pg", "", "PostgreSQL DSN")
	concurrency := flag.Uint("concurrency", 4, "workers (-mode worker)")
	deadPool := flag.Duration("dead-pool", 3*time.Second, "DeadPoolTimeout (-mode worker)")
	poll := flag.Duration("poll", 250*time.Millisecond, "RelayOptions.PollInterval (-mode relay)")
	deleteDelay := flag.Duration("delete-delay", 0, "a pause before the relay's delete (-mode relay)")
	flag.Parse()

	logger := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()

	rp := &redis.Pool{
		MaxIdle:     int(*concurrency) + 8,
		IdleTimeout: time.Minute,
		Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", *addr, redis.DialConnectTimeout(time.Second))
		},
	}
	defer rp.Close()
	cfg, err := pgxpool.ParseConfig(*dsn)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *deleteDelay > 0 {
		cfg.ConnConfig.Tracer = delayDelete{*deleteDelay}
	}
	db, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	defer db.Close()

	switch *mode {
	case "relay":
		r := pgwork.NewRelay(db, work.NewEnqueuer(*ns, rp), pgwork.RelayOptions{PollInterval: *poll, Logger: logger})
		r.Run(ctx)
	case "worker":
		runWorker(ctx, db, rp, *ns, *ledger, *concurrency, *deadPool, logger)
	default:
		fmt.Fprintf(os.Stderr, "-mode %q: relay or worker\n", *mode)
		os.Exit(2)
	}
}

func runWorker(ctx context.Context, db *pgxpool.Pool, rp *redis.Pool, ns, ledger string, concurrency uint, deadPool time.Duration, logger *slog.Logger) {
	pid := os.Getpid()
	wp := work.NewWorkerPoolWithOptions(struct{}{}, concurrency, ns, rp, work.WorkerPoolOptions{
		Logger: logger, HeartbeatInterval: time.Second, DeadPoolTimeout: deadPool,
	})
	wp.JobWithOptions("effect", work.JobOptions{MaxFails: 100, Backoff: func(*work.Job) int64 { return 1 }},
		func(c context.Context, job *work.Job) error {
			if err := incr(rp, ledger+":starts", job.ID); err != nil {
				return err
			}
			ran, err := pgwork.RunOnce(c, db, job.ID, func(tx pgx.Tx) error {
				if _, err := tx.Exec(c, "INSERT INTO effects (job_id, pid) VALUES ($1, $2)", job.ID, pid); err != nil {
					return err
				}
				time.Sleep(time.Duration(rand.Intn(50)) * time.Millisecond)
				return nil
			})
			if err != nil {
				return err
			}
			if !ran {
				if err := incr(rp, ledger+":skipped", job.ID); err != nil {
					return err
				}
			}
			time.Sleep(time.Duration(rand.Intn(20)) * time.Millisecond)
			return nil
		})
	wp.Start()
	<-ctx.Done()
	wp.Stop()
}

// delayDelete pauses before the relay's DELETE of the rows it moved: the jobs are in Redis then, and
// the rows not yet gone, the window that the job IDs make safe. Without the pause a pass is so
// short that a kill at a random moment seldom lands in it.
type delayDelete struct{ d time.Duration }

func (t delayDelete) TraceQueryStart(ctx context.Context, _ *pgx.Conn, q pgx.TraceQueryStartData) context.Context {
	if strings.HasPrefix(q.SQL, "DELETE FROM work_outbox ") {
		time.Sleep(t.d)
	}
	return ctx
}

func (delayDelete) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}

func incr(rp *redis.Pool, key, field string) error {
	c := rp.Get()
	defer c.Close()
	_, err := c.Do("HINCRBY", key, field, 1)
	return err
}
