package pgwork_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
	"github.com/workqueue/work/pgwork"
	"github.com/workqueue/work/pgwork/internal/pgtest"
)

// An order and its receipt job are written in one transaction; a relay moves the job to Redis
// once the transaction has committed, and a pool runs it.
func Example() {
	// The test servers; an application has its own pgxpool.Pool and redis.Pool.
	db, _, drop := pgtest.ExampleDB()
	defer drop()
	addr := redistest.Addr()
	rp := &redis.Pool{Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	defer rp.Close()
	ns := fmt.Sprintf("pgwork-example-%d", time.Now().UnixNano())
	defer redistest.DeleteNamespace(rp, ns)

	ctx := context.Background()
	if err := pgwork.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(ctx, "CREATE TABLE orders (id bigint PRIMARY KEY, total numeric)"); err != nil {
		log.Fatal(err)
	}

	// The order and its job commit together, or neither does.
	err := pgx.BeginFunc(ctx, db, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, "INSERT INTO orders VALUES (42, 19.90)"); err != nil {
			return err
		}
		_, err := pgwork.Enqueue(ctx, tx, "send_receipt", work.Q{"order_id": 42}, work.EnqueueOptions{})
		return err
	})
	if err != nil {
		log.Fatal(err)
	}

	done := make(chan struct{})
	pool := work.NewWorkerPool(struct{}{}, 2, ns, rp)
	pool.Job("send_receipt", func(job *work.Job) error {
		fmt.Println("receipt for order", job.ArgInt64("order_id"))
		close(done)
		return nil
	})
	pool.Start()
	defer pool.Stop()

	relay := pgwork.NewRelay(db, work.NewEnqueuer(ns, rp), pgwork.RelayOptions{})
	relay.Start() // beside pool.Start; relay.Stop beside pool.Stop
	defer relay.Stop()
	<-done
	// Output: receipt for order 42
}

// A handler whose job may be delivered twice makes its database writes once with RunOnce.
func ExampleRunOnce() {
	db, _, drop := pgtest.ExampleDB()
	defer drop()
	ctx := context.Background()
	if err := pgwork.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	if _, err := db.Exec(ctx, "CREATE TABLE points (customer bigint, points int)"); err != nil {
		log.Fatal(err)
	}
	handler := func(job *work.Job) error {
		ran, err := pgwork.RunOnce(ctx, db, job.ID, func(tx pgx.Tx) error {
			_, err := tx.Exec(ctx, "INSERT INTO points VALUES ($1, 10)", job.ArgInt64("customer"))
			return err
		})
		fmt.Println("ran:", ran)
		return err
	}
	job := &work.Job{ID: work.NewJobID(), Name: "award_points", Args: work.Q{"customer": 7}}
	handler(job) // the first delivery
	handler(job) // the same job again, after a pool crashed before it could say it was done
	var total int
	if err := db.QueryRow(ctx, "SELECT sum(points) FROM points").Scan(&total); err != nil {
		log.Fatal(err)
	}
	fmt.Println("points:", total)
	// Output:
	// ran: true
	// ran: false
	// points: 10
}

// EnqueueMany writes many jobs in one statement of the transaction.
func ExampleEnqueueMany() {
	db, _, drop := pgtest.ExampleDB()
	defer drop()
	ctx := context.Background()
	if err := pgwork.Migrate(ctx, db); err != nil {
		log.Fatal(err)
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback(ctx)
	var jobs []pgwork.Job
	for _, user := range []int{1, 2, 3} {
		jobs = append(jobs, pgwork.Job{Name: "welcome", Args: work.Q{"user": user}, Options: work.EnqueueOptions{Key: fmt.Sprint("user-", user)}})
	}
	ids, err := pgwork.EnqueueMany(ctx, tx, jobs)
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		log.Fatal(err)
	}
	b, err := pgwork.Default.Backlog(ctx, db)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(ids), "jobs written,", b.Waiting, "waiting for a relay")
	// Output: 3 jobs written, 3 waiting for a relay
}

// With database/sql (lib/pq, pgx's stdlib, sqlx, or GORM's underlying *sql.Tx), FromSQL adapts the
// transaction.
func ExampleFromSQL() {
	pool, dsn, drop := pgtest.ExampleDB()
	defer drop()
	ctx := context.Background()
	if err := pgwork.Migrate(ctx, pool); err != nil {
		log.Fatal(err)
	}
	db, err := sql.Open("pgx", dsn) // or "postgres" with lib/pq
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer tx.Rollback()
	id, err := pgwork.Enqueue(ctx, pgwork.FromSQL(tx), "send_receipt", work.Q{"order_id": 43}, work.EnqueueOptions{})
	if err != nil {
		log.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		log.Fatal(err)
	}
	fmt.Println("job ID given:", id != "")
	// Output: job ID given: true
}
