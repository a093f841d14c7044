package work

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// quietWriter writes the outcomes of jobs handed to the pool on a connection without replies
// (rdb.QuietConn). A pool that waits for hand-offs is idle between jobs; the reply to a job's
// outcome would wake its process once more per job, which costs it more CPU than the write.
// Quiet writes are made only there: a busy pool fetches its jobs, and its outcomes share round
// trips.
//
// A job written quietly stays held (the sweep leaves its entry alone) until a confirm, made within
// confirmAfter of the first write after the last confirm (or at once when a Drain waits, a sweep
// or a stop comes), reads the writes' counter back: then its outcome counts as written. When the
// counter says a write did not run (the script was flushed, Redis refused writes) or cannot be
// read, every outcome since the last confirm goes back to the outcome queue and is written again
// with replies (an outcome acts only on a job still in the in-progress list, so one that did run
// changes nothing the second time), and the next quiet writes wait for a connection dialled anew.
// Requeues never go quietly (see outcomeQueue.putBack). A write registers the pool for hand-offs:
// a sweep or a stop confirms before it takes the pool off the idle sets, so that no such write runs
// after.
type quietWriter struct {
	store  *rdb.Store
	logger *slog.Logger
	poolID string
	boxed  interface{}
	o      *outcomeQueue

	mu     sync.Mutex
	conn   *rdb.QuietConn // nil: not dialled yet, or broken
	off    bool           // no quiet write any more: the backend has no quiet connection, or the pool stops
	dialAt time.Time      // the next dial's earliest time
	sent   []rdb.FinishOp // written, not yet confirmed
	armed  bool           // timer is set for a confirm (or a dial)
	timer  *time.Timer
	x      rdb.Exchange
}

// confirmAfter bounds how long a quiet write waits for its confirm.
const confirmAfter = 100 * time.Millisecond

func newQuietWriter(store *rdb.Store, logger *slog.Logger, poolID string, o *outcomeQueue) *quietWriter {
	w := &quietWriter{store: store, logger: logger, poolID: poolID, boxed: poolID, o: o}
	w.timer = time.AfterFunc(time.Hour, w.settle)
	w.timer.Stop()
	return w
}

// eligible reports whether batch may go quietly: outcomes of handed jobs, no requeue.
func eligible(batch []rdb.FinishOp) bool {
	for i := range batch {
		if batch[i].Kind == rdb.OpRequeue || !batch[i].Ref.(*Job).handed {
			return false
		}
	}
	return true
}

// write sends batch quietly and reports whether it did; when it did not, the caller writes it with
// replies.
func (w *quietWriter) write(batch []rdb.FinishOp) bool {
	if !eligible(batch) {
		return false
	}
	o := w.o
	o.regGate.RLock()
	defer o.regGate.RUnlock()
	if o.noHandOffs() {
		return false
	}
	if !w.mu.TryLock() {
		return false // a confirm or a dial is under way: a worker does not wait for it
	}
	defer w.mu.Unlock()
	if w.conn == nil {
		if !w.off && !time.Now().Before(w.dialAt) {
			w.armLocked()
		}
		return false
	}
	x := &w.x
	x.Reset()
	x.Ops = batch
	o.setHandOffRoom(x)
	if err := w.store.SendQuiet(w.conn, w.boxed, x); err != nil {
		w.logger.Debug("work: a quiet write failed; writing with replies", "err", err)
		w.brokenLocked()
		return false // it may have run or not: written again, as is every write not confirmed
	}
	o.mu.Lock()
	o.unconfirmed += len(batch)
	o.mu.Unlock()
	w.sent = append(w.sent, batch...)
	w.armLocked()
	return true
}

// armLocked sets the timer for a confirm (or a dial), unless it is set. The caller holds mu.
func (w *quietWriter) armLocked() {
	if !w.armed {
		w.armed = true
		w.timer.Reset(confirmAfter)
	}
}

// brokenLocked closes the connection and sends what it did not confirm back to the outcome queue.
// The caller holds mu.
func (w *quietWriter) brokenLocked() {
	w.conn.Close()
	w.conn = nil
	w.redoLocked()
	if !w.off {
		w.redialLaterLocked()
	}
}

// redialLaterLocked sets the timer for a dial redialAfter from now. The caller holds mu.
func (w *quietWriter) redialLaterLocked() {
	w.dialAt, w.armed = time.Now().Add(redialAfter), true
	w.timer.Reset(redialAfter)
}

// redialAfter is how long a pool writes every outcome with replies after its quiet connection
// broke, or could not be dialled.
const redialAfter = time.Second

// redoLocked sends the outcomes written and not confirmed back to the outcome queue, to be written
// with replies. The caller holds mu.
func (w *quietWriter) redoLocked() {
	if len(w.sent) == 0 {
		return
	}
	w.o.redo(w.sent)
	w.sent = nil
}

// settle confirms the writes sent, and dials when a dial is due: on the timer, and before a sweep
// or a stop reads Redis, or a Drain decides.
func (w *quietWriter) settle() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.armed = false
	if w.conn == nil && !w.off && !w.o.leaving.Load() && !time.Now().Before(w.dialAt) {
		w.dialLocked()
	}
	w.confirmLocked()
}

// confirmLocked confirms the writes sent; the outcomes of those that did not run, or may not have,
// go back to the outcome queue. The caller holds mu.
func (w *quietWriter) confirmLocked() {
	if w.conn == nil || len(w.sent) == 0 {
		return
	}
	ok, err := w.conn.Confirm()
	if err != nil {
		w.logger.Debug("work: confirming quiet writes failed; writing them again with replies", "jobs", len(w.sent), "err", err)
		w.brokenLocked()
		return
	}
	if !ok {
		// The server refused them (a replica after a failover, a flushed script cache): they are
		// written again with replies, and the next quiet writes go on a connection dialled anew.
		w.logger.Warn("work: quiet writes of job outcomes did not all run; writing them again with replies", "jobs", len(w.sent))
		w.brokenLocked()
		return
	}
	w.o.confirmed(w.sent)
	clear(w.sent)
	w.sent = w.sent[:0]
}

// dialLocked opens the quiet connection. The caller holds mu.
func (w *quietWriter) dialLocked() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	c, err := w.store.DialQuiet(ctx, w.poolID)
	if errors.Is(err, rdb.ErrNoQuiet) {
		w.off = true
		w.logger.Debug("work: outcomes are written with replies", "reason", err)
		return
	}
	if err != nil {
		w.redialLaterLocked()
		return
	}
	w.conn = c
}

// close confirms what was sent and closes the connection; no quiet write is made after it.
func (w *quietWriter) close() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.off = true
	w.timer.Stop()
	w.confirmLocked()
	if w.conn != nil {
		w.brokenLocked() // nothing is left to send back: the confirm took it all, or sent it back
	}
}
