package work

import (
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

func newTestOutcomeQueue() *outcomeQueue {
	return newOutcomeQueue(slog.New(slog.NewTextHandler(io.Discard, nil)), newDueAlarm())
}

// heldJob returns a job as a fetch of queue q makes it, and the outcome that acknowledges it.
func heldJob(q *queue, entry string) (*Job, rdb.FinishOp) {
	j := &Job{rawArg: []byte(entry), q: q}
	return j, rdb.FinishOp{Kind: rdb.OpAck, Q: q.args, Entry: j.rawArg, Ref: j}
}

// reply makes x the reply of a round trip that recorded all of x.Ops.
func reply(x *rdb.Exchange) {
	x.Order, x.Done = x.Order[:0], ""
	for i := range x.Ops {
		x.Order = append(x.Order, i)
		x.Done += "1"
	}
}

// A fetch carries what is pending when no write is under way, and nothing while one is; outcomes
// submitted during the carried write are handed to the acker's goroutine when it ends, and the last
// write gives allWritten. Jobs stay held until their outcome is written.
func TestOutcomeQueueCarriesPendingOutcomesOnAFetch(t *testing.T) {
	o := newTestOutcomeQueue()
	o.allWritten.watch(true)
	q := &queue{id: "q", name: "q", args: &rdb.QueueArgs{Name: "q"}}
	j1, op1 := heldJob(q, "1")
	j2, op2 := heldJob(q, "2")
	o.hold(j1)
	o.hold(j2)
	if !o.heldSinceSweep() {
		t.Fatal("jobs held, and heldSinceSweep says none was")
	}
	if got := o.heldEntries()["q"]; len(got) != 2 {
		t.Fatalf("held entries %q, want both jobs'", got)
	}
	if o.heldSinceSweep() {
		t.Fatal("heldSinceSweep still set after the entries were taken")
	}

	o.mu.Lock()
	o.addLocked(op1)
	o.mu.Unlock()
	batch := o.takeForCarry()
	if len(batch) != 1 || o.idle() {
		t.Fatalf("carried %d outcomes (idle %v), want the pending one, with a write under way", len(batch), o.idle())
	}
	if again := o.takeForCarry(); again != nil {
		t.Fatal("a second fetch carried outcomes while the first one's write was under way")
	}
	o.mu.Lock()
	o.addLocked(op2) // submitted meanwhile: it waits for the carried write
	o.mu.Unlock()
	x := &rdb.Exchange{Ops: batch}
	reply(x)
	o.carried(batch, x, nil)
	select {
	case <-o.kick:
	default:
		t.Fatal("the carried write ended with an outcome pending, and the acker's goroutine was not handed the next write")
	}
	if got := o.heldEntries()["q"]; len(got) != 1 || string(got[0]) != "2" {
		t.Fatalf("held entries %q after the first outcome was written, want only job 2's", got)
	}
	if got := o.counts[statKey{q.args, time.Now().Unix() / 60, 'p'}]; got != 1 {
		t.Fatalf("%d processed counted, want 1", got)
	}

	// The acker's goroutine makes the handed-over write (as acker.step does).
	o.mu.Lock()
	if !o.handed || o.writers != 1 {
		t.Fatalf("handed %v, writers %d: the turn to write was not handed over", o.handed, o.writers)
	}
	batch = o.takeLocked()
	o.mu.Unlock()
	x = &rdb.Exchange{Ops: batch}
	reply(x)
	o.written(x, time.Now())
	o.handOver(batch)
	if !o.idle() || len(o.allWritten.wait()) != 1 {
		t.Fatalf("idle %v, allWritten given %v after the last write", o.idle(), len(o.allWritten.wait()) == 1)
	}
	if got := o.heldEntries(); len(got) != 0 {
		t.Fatalf("held entries %q once every outcome was written", got)
	}
}

// A carried write that failed leaves its outcomes pending, first, for the acker's goroutine.
func TestOutcomeQueueCarriedWriteFailedPutsOutcomesBack(t *testing.T) {
	o := newTestOutcomeQueue()
	q := &queue{id: "q", name: "q", args: &rdb.QueueArgs{Name: "q"}}
	_, op1 := heldJob(q, "1")
	_, op2 := heldJob(q, "2")
	o.mu.Lock()
	o.addLocked(op1)
	o.mu.Unlock()
	batch := o.takeForCarry()
	o.mu.Lock()
	o.addLocked(op2)
	o.mu.Unlock()
	o.carried(batch, &rdb.Exchange{Ops: batch}, io.ErrUnexpectedEOF)
	<-o.kick
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) != 2 || string(o.pending[0].Entry.([]byte)) != "1" {
		t.Fatalf("pending %v after a failed carried write, want job 1's outcome then job 2's", o.pending)
	}
}

// A failed write is not made again for its requeues: one applied late (a call that timed out on a
// frozen Redis runs when it thaws) after the pool fetched the same job again would take the new
// hold off the in-progress list. Their jobs are let go, for the sweep; the other outcomes are
// written again.
func TestOutcomeQueueFailedWriteLetsItsRequeuesGo(t *testing.T) {
	o := newTestOutcomeQueue()
	q := &queue{id: "q", name: "q", args: &rdb.QueueArgs{Name: "q"}}
	j1, op1 := heldJob(q, "1")
	j2, op2 := heldJob(q, "2")
	op2.Kind = rdb.OpRequeue
	o.hold(j1)
	o.hold(j2)
	o.mu.Lock()
	o.addLocked(op1)
	o.addLocked(op2)
	o.mu.Unlock()
	batch := o.takeForCarry()
	heldEntries := o.heldEntries() // the sweep's call: it resets heldSince
	if len(heldEntries["q"]) != 2 {
		t.Fatalf("held entries %q, want both jobs'", heldEntries["q"])
	}
	o.carried(batch, &rdb.Exchange{Ops: batch}, io.ErrUnexpectedEOF)
	o.mu.Lock()
	pending := append([]rdb.FinishOp(nil), o.pending...)
	o.mu.Unlock()
	if len(pending) != 1 || pending[0].Kind != rdb.OpAck {
		t.Errorf("pending %v after a failed write, want job 1's acknowledgement alone", pending)
	}
	if !o.anyHeld([]*Job{j1}) || o.anyHeld([]*Job{j2}) {
		t.Errorf("held after a failed write: job 1 %v (want true), job 2 %v (want false: let go)",
			o.anyHeld([]*Job{j1}), o.anyHeld([]*Job{j2}))
	}
	if !o.heldSinceSweep() {
		t.Error("a requeue let go does not make a sweep due")
	}
}

// Outcomes posted from many goroutines (jobs handed back) are all kept, the first poster hands the
// write to the acker's goroutine, and none is taken after close.
func TestOutcomeQueuePostHandsTheWriteToTheAcker(t *testing.T) {
	o := newTestOutcomeQueue()
	q := &queue{id: "q", name: "q", args: &rdb.QueueArgs{Name: "q"}}
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, op := heldJob(q, string(rune('a'+i)))
			o.post(op)
		}()
	}
	wg.Wait()
	<-o.kick
	o.mu.Lock()
	if len(o.pending) != 20 || o.writers != 1 || !o.handed {
		t.Fatalf("pending %d, writers %d, handed %v: want 20 pending, the write handed to the acker", len(o.pending), o.writers, o.handed)
	}
	o.closed = true
	o.mu.Unlock()
	_, op := heldJob(q, "late")
	o.post(op)
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.pending) != 20 {
		t.Fatalf("an outcome posted after close was kept (%d pending)", len(o.pending))
	}
}
