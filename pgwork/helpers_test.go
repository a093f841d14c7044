package pgwork

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
	"github.com/workqueue/work/pgwork/internal/pgtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	// Relays log the failures tests provoke on purpose; WORK_TEST_LOG=1 shows them.
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	goleak.VerifyTestMain(m)
}

// env is one test's PostgreSQL database (migrated) and Redis namespace.
type env struct {
	db  *pgxpool.Pool
	dsn string
	rp  *redis.Pool
	ns  string
	enq *work.Enqueuer
	cl  *work.Client
}

func newEnv(t *testing.T) *env {
	t.Helper()
	db, dsn := pgtest.DB(t)
	rp := redistest.Pool(t, 0)
	ns := redistest.Namespace(t, rp, "pgwork")
	if err := Migrate(context.Background(), db); err != nil {
		t.Fatal(err)
	}
	return &env{db: db, dsn: dsn, rp: rp, ns: ns, enq: work.NewEnqueuer(ns, rp), cl: work.NewClient(ns, rp)}
}

// queued returns how many jobs of the name wait in Redis.
func (e *env) queued(t *testing.T, name string) int64 {
	t.Helper()
	qs, err := e.cl.Queues()
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range qs {
		if q.JobName == name {
			return q.Count
		}
	}
	return 0
}

// waiting returns how many rows wait in the default outbox.
func (e *env) waiting(t *testing.T) int64 {
	t.Helper()
	b, err := Default.Backlog(context.Background(), e.db)
	if err != nil {
		t.Fatal(err)
	}
	return b.Waiting
}

// drain runs relay passes until the outbox is empty.
func drain(t *testing.T, r *Relay) {
	t.Helper()
	for i := 0; i < 1000; i++ {
		n, err := r.Pass(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return
		}
	}
	t.Fatal("the outbox does not empty")
}

// runs counts the runs of each job ID by a worker pool on the env's namespace.
type runs struct {
	mu   sync.Mutex
	byID map[string]int
	args map[string]map[string]interface{}
}

func (e *env) startPool(t *testing.T, names ...string) (*runs, *work.WorkerPool) {
	t.Helper()
	r := &runs{byID: map[string]int{}, args: map[string]map[string]interface{}{}}
	pool := work.NewWorkerPool(struct{}{}, 8, e.ns, e.rp)
	for _, n := range names {
		pool.Job(n, func(job *work.Job) error {
			r.mu.Lock()
			defer r.mu.Unlock()
			r.byID[job.ID]++
			r.args[job.ID] = job.Args
			return nil
		})
	}
	pool.Start()
	t.Cleanup(pool.Stop)
	return r, pool
}

// waitRuns waits until n distinct jobs have run.
func (r *runs) waitRuns(t *testing.T, n int, within time.Duration) {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		r.mu.Lock()
		got := len(r.byID)
		r.mu.Unlock()
		if got >= n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d jobs ran within %v, want %d", got, within, n)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
