package main

// The work side of the outbox workload: pgwork writes the job in the transaction, its relay moves
// committed rows to Redis, and a pool runs them.

import (
	"context"

	"github.com/gomodule/redigo/redis"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/workqueue/work"
	"github.com/workqueue/work/pgwork"
)

const outboxNS, outboxJob = "outbox", "receipt"

type workTxQueue struct {
	db      *pgxpool.Pool
	addr    string
	workers int
	redis   *redis.Pool
	outbox  *pgwork.Outbox
}

func newWorkTxQueue(ctx context.Context, db *pgxpool.Pool, addr string, workers int) (*workTxQueue, error) {
	ob := pgwork.Default
	if err := ob.Migrate(ctx, db); err != nil {
		return nil, err
	}
	rp := &redis.Pool{MaxActive: workers + 20, MaxIdle: workers + 20, Wait: true,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	return &workTxQueue{db: db, addr: addr, workers: workers, redis: rp, outbox: ob}, nil
}

func (w *workTxQueue) insert(ctx context.Context, tx pgx.Tx, seq int64, n int) error {
	if n == 1 {
		_, err := w.outbox.Enqueue(ctx, tx, outboxJob, work.Q{"seq": seq}, work.EnqueueOptions{})
		return err
	}
	jobs := make([]pgwork.Job, n)
	for i := range jobs {
		jobs[i] = pgwork.Job{Name: outboxJob, Args: work.Q{"seq": seq + int64(i)}}
	}
	_, err := w.outbox.EnqueueMany(ctx, tx, jobs)
	return err
}

// relay starts the outbox's relay into the namespace.
func (w *workTxQueue) relay(ctx context.Context) (func(), error) {
	r := w.outbox.NewRelay(w.db, work.NewEnqueuer(outboxNS, w.redis), pgwork.RelayOptions{})
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(rctx) }()
	return func() { cancel(); <-done }, nil
}

func (w *workTxQueue) startConsumer(ctx context.Context, started func(int64)) (func(), error) {
	stopRelay, err := w.relay(ctx)
	if err != nil {
		return nil, err
	}
	wp := work.NewWorkerPool(struct{}{}, uint(w.workers), outboxNS, w.redis)
	wp.Job(outboxJob, func(j *work.Job) error {
		started(j.ArgInt64("seq"))
		return nil
	})
	wp.Start()
	return func() { wp.Stop(); stopRelay() }, nil
}

// queued reads the jobs off their Redis queue as the relay pushes them (BRPOP, as a pool's fetch
// would take them), without running them.
func (w *workTxQueue) queued(ctx context.Context, seen func(int64)) (func(), error) {
	stopRelay, err := w.relay(ctx)
	if err != nil {
		return nil, err
	}
	done, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		c := w.redis.Get()
		defer c.Close()
		queue := outboxNS + ":jobs:" + outboxJob
		for {
			select {
			case <-done:
				return
			default:
			}
			v, err := redis.ByteSlices(c.Do("BRPOP", queue, 0.2))
			if err != nil || len(v) != 2 {
				continue
			}
			var j work.Job
			if err := j.UnmarshalJSON(v[1]); err == nil {
				seen(j.ArgInt64("seq"))
			}
		}
	}()
	return func() { close(done); <-stopped; stopRelay() }, nil
}

func (w *workTxQueue) close() { w.redis.Close() }
