// Command outbox writes an order and enqueues its receipt job in one PostgreSQL transaction: the
// job exists if and only if the order does. A relay moves the committed job to Redis, where a
// worker pool sends the receipt, once, however many times the job is delivered.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/workqueue/work"
	"github.com/workqueue/work/pgwork"
)

func main() {
	dsn := flag.String("postgres", os.Getenv("WORK_POSTGRES"), "PostgreSQL DSN (default: $WORK_POSTGRES)")
	addr := flag.String("redis", "", "Redis host:port (default: an embedded, in-process Redis)")
	flag.Parse()
	if *dsn == "" {
		fmt.Fprintln(os.Stderr, "outbox needs a PostgreSQL database: -postgres postgres://user@host:5432/db or WORK_POSTGRES")
		os.Exit(2)
	}
	ctx := context.Background()
	db, err := pgxpool.New(ctx, *dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if *addr == "" {
		mr, err := miniredis.Run()
		if err != nil {
			log.Fatal(err)
		}
		defer mr.Close()
		*addr = mr.Addr()
	}
	rp := &redis.Pool{MaxIdle: 10, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", *addr) }}
	defer rp.Close()

	// The schema: pgwork's tables, and the application's own.
	if err := pgwork.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(ctx, `CREATE TABLE IF NOT EXISTS orders (
  id bigint PRIMARY KEY, customer text NOT NULL, total numeric NOT NULL, receipt_sent_at timestamptz)`); err != nil {
		log.Fatal(err)
	}

	// An order that fails to commit leaves no job behind.
	orderID := rand.Int64N(1 << 53)
	errDeclined := errors.New("card declined")
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO orders (id, customer, total) VALUES ($1, 'ada', 12.50)", orderID+1); err != nil {
			return err
		}
		if _, err := pgwork.Enqueue(ctx, tx, "send_receipt", work.Q{"order_id": orderID + 1}, work.EnqueueOptions{}); err != nil {
			return err
		}
		return errDeclined // rolls back the order and its job
	})
	fmt.Printf("order %d: %v, rolled back with its receipt job\n", orderID+1, err)

	// The order and its receipt job commit together.
	var jobID string
	err = pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO orders (id, customer, total) VALUES ($1, 'ada', 19.90)", orderID); err != nil {
			return err
		}
		jobID, err = pgwork.Enqueue(ctx, tx, "send_receipt", work.Q{"order_id": orderID}, work.EnqueueOptions{})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("order %d committed with its receipt job %s\n", orderID, jobID)

	// The worker side: the receipt is marked sent in the same transaction as RunOnce's record, so a
	// second delivery of the job changes nothing.
	sent := make(chan int64, 2)
	pool := work.NewWorkerPool(struct{}{}, 2, "outbox-demo", rp)
	pool.Job("send_receipt", func(ctx context.Context, job *work.Job) error {
		id := job.ArgInt64("order_id")
		if err := job.ArgError(); err != nil {
			return work.FailNow(err)
		}
		_, err := pgwork.RunOnce(ctx, db, job.ID, func(tx pgx.Tx) error {
			// An email would go out here; what RunOnce covers is the write below.
			_, err := tx.Exec(ctx, "UPDATE orders SET receipt_sent_at = now() WHERE id = $1", id)
			return err
		})
		if err == nil {
			sent <- id
		}
		return err
	})
	pool.Start()
	defer pool.Stop()

	// The relay: any number may run, in any processes.
	relay := pgwork.NewRelay(db, work.NewEnqueuer("outbox-demo", rp), pgwork.RelayOptions{})
	relay.Start()
	defer relay.Stop()

	select {
	case id := <-sent:
		fmt.Printf("receipt for order %d sent\n", id)
	case <-time.After(30 * time.Second):
		log.Fatal("no receipt within 30 s")
	}
	var rolledBack int
	if err := db.QueryRow(ctx, "SELECT count(*) FROM orders WHERE id = $1", orderID+1).Scan(&rolledBack); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("order %d exists: %v; jobs run for it: %d\n", orderID+1, rolledBack == 1, len(sent))
}
