package work

import (
	"bytes"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestOutcomesWaitingBehindAHeldUpWriteAreWrittenBesideIt(t *testing.T) {
	t.Parallel()
	var marker atomic.Pointer[[]byte] // the first write containing it is held up
	held, release := make(chan struct{}, 1), make(chan struct{})
	releaseOnce := sync.OnceFunc(func() { close(release) })
	hold := func(b []byte) bool {
		m := marker.Load()
		return m != nil && bytes.Contains(b, *m) && marker.CompareAndSwap(m, nil)
	}
	pool := wrappedPool(t, 20, func(c net.Conn) net.Conn {
		return heldConn{Conn: c, hold: hold, held: held, release: release}
	})
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
