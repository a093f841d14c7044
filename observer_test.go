package work

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// lateObservations is a Backend whose write of a busy worker's observation gets its reply only once
// the pool stops (its context is done): the observer's write is then cut short by the pool's own stop.
type lateObservations struct {
	Backend
	writing chan struct{} // a write of a busy worker's observation waits for the stop
}

func (b *lateObservations) Conn(ctx context.Context) (redis.Conn, error) {
	c, err := b.Backend.Conn(ctx)
	if err != nil {
		return nil, err
	}
	return &lateObservationConn{Conn: c, ctx: ctx, b: b}, nil
}

type lateObservationConn struct {
	redis.Conn
	ctx  context.Context
	b    *lateObservations
	busy bool // an observation of a busy worker is in the pipeline
}

func (c *lateObservationConn) Send(cmd string, args ...interface{}) error {
	if key, ok := firstArg(args).(string); cmd == "HSET" && ok && strings.Contains(key, ":worker:") {
		c.busy = true
	}
	return c.Conn.Send(cmd, args...)
}

func (c *lateObservationConn) Do(cmd string, args ...interface{}) (interface{}, error) {
	r, err := c.Conn.Do(cmd, args...)
	if cmd == "" && c.busy && err == nil {
		c.busy = false
		select {
		case c.b.writing <- struct{}{}:
		default:
		}
		<-c.ctx.Done()
		return nil, c.ctx.Err()
	}
	return r, err
}

func firstArg(args []interface{}) interface{} {
	if len(args) == 0 {
		return nil
	}
	return args[0]
}

// A pool that stops while its observer writes what a worker runs logs no warning about that write:
// its own stop cut it short, and the stopping pool clears its observations anyway.
func TestStopDuringAnObservationWriteLogsNoWarning(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	logs := &hstBuffer{}
	b := &lateObservations{Backend: PoolBackend(pool), writing: make(chan struct{}, 1)}
	wp := NewWorkerPoolWithBackend(struct{}{}, 1, ns, b, WorkerPoolOptions{Logger: slog.New(slog.NewTextHandler(logs, nil))})
	started, release := make(chan struct{}, 1), make(chan struct{})
	wp.Job("busy", func(*Job) error {
		started <- struct{}{}
		<-release
		return nil
	})
	wp.Start()
	stopped := false
	defer func() {
		if !stopped {
			close(release)
			wp.Stop()
		}
	}()
	if _, err := NewEnqueuer(ns, pool).Enqueue("busy", nil); err != nil {
		t.Fatal(err)
	}
	for _, ch := range []chan struct{}{started, b.writing} { // the job runs; the observer writes it
		select {
		case <-ch:
		case <-time.After(30 * time.Second):
			t.Fatal("the busy worker's observation was never written")
		}
	}
	close(release)
	wp.Stop()
	stopped = true
	if strings.Contains(logs.String(), "writing worker observations") {
		t.Errorf("a stopping pool logged the observation write its stop cut short:\n%s", logs.String())
	}
}
