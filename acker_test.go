package work

import (
	"bytes"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// markedWriteConn holds up the first write that contains the marker (once one is set) until
// release is closed.
type markedWriteConn struct {
	net.Conn
	marker  *atomic.Pointer[[]byte]
	held    chan<- struct{}
	release <-chan struct{}
}

func (c markedWriteConn) Write(b []byte) (int, error) {
	if m := c.marker.Load(); m != nil && bytes.Contains(b, *m) && c.marker.CompareAndSwap(m, nil) {
		c.held <- struct{}{}
		<-c.release
	}
	return c.Conn.Write(b)
}

func TestOutcomesWaitingBehindAHeldUpWriteAreWrittenBesideIt(t *testing.T) {
	t.Parallel()
	var marker atomic.Pointer[[]byte]
	held, release := make(chan struct{}, 1), make(chan struct{})
	released := false
	releaseOnce := func() {
		if !released {
			released = true
			close(release)
		}
	}
	dial := redis.DialNetDial(func(network, address string) (net.Conn, error) {
		c, err := net.Dial(network, address)
		if err != nil {
			return nil, err
		}
		return markedWriteConn{Conn: c, marker: &marker, held: held, release: release}, nil
	})
	pool := &redis.Pool{MaxActive: 20, MaxIdle: 20, Wait: true, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", testRedisAddr(), dial)
	}}
	t.Cleanup(func() { pool.Close() })
	ns := newTestNamespace(t, newTestPool(t))

	const later = 2 * secondAckAt
	var ran atomic.Int64
	wp := NewWorkerPool(struct{}{}, later+1, ns, pool)
	wp.Job("first", func(*Job) error { return nil })
	wp.Job("later", func(*Job) error { ran.Add(1); return nil })
	e := NewEnqueuer(ns, pool)
	first, err := e.Enqueue("first", nil)
	if err != nil {
		t.Fatal(err)
	}
	id := []byte(first.ID)
	marker.Store(&id) // the write that carries the first job's outcome is held up
	wp.Start()
	defer wp.Stop()
	defer releaseOnce()
	select {
	case <-held:
	case <-time.After(10 * time.Second):
		t.Fatal("the first job's outcome was never written")
	}
	time.Sleep(extraAfter) // an extra write is made beside a write under way for this long

	for i := 0; i < later; i++ {
		if _, err := e.Enqueue("later", Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, 10*time.Second, "every later job run", func() bool { return ran.Load() == later })
	// Outcomes fewer than secondAckAt may still wait for the held-up write; the rest must not.
	inProgress := bhvKey(ns, "jobs", "later", wp.workerPoolID, "inprogress")
	eventually(t, 10*time.Second, "the later jobs' outcomes written while the first one's is held up", func() bool {
		return rInt(t, pool, "LLEN", inProgress) < secondAckAt
	})
	releaseOnce()
	eventually(t, 10*time.Second, "every outcome written", func() bool {
		return rInt(t, pool, "LLEN", inProgress) == 0 &&
			rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "first", wp.workerPoolID, "inprogress")) == 0
	})
}
