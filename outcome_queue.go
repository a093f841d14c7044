package work

import (
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// outcomeQueue holds the pool's outcomes on their way to Redis, from the fetch of a job until its outcome
// is written. Two components write them, and both drain it: the fetcher carries the pending outcomes
// along on a fetch's round trip when no write is under way (which is what keeps a busy pool at
// about one round trip for many jobs), and the acker writes the rest. It is shared state, built by
// the pool's run, so that neither calls the other: whoever ends a write with outcomes still pending
// hands the next write to the acker's goroutine through kick.
//
// The outcome queue also knows the jobs held in flight (fetched, outcome not yet written), which the
// fetcher's sweep leaves alone, counts the written outcomes for the acker's per-minute stats, and
// gives allWritten when the last pending outcome is written (a Drain may wait for that).
type outcomeQueue struct {
	logger *slog.Logger
	alarm  *dueAlarm // set when retries and snoozed jobs are due

	// The outcomes submitted and not yet taken by a write; its writers count the chain's write (0 or
	// 1). Its mu guards the fields below, and the acker's that say so.
	groupCommit[rdb.FinishOp]
	handed  bool      // the chain's write is the acker's goroutine's (handed over, or its own)
	extra   bool      // an extra write is under way beside it (see acker)
	writeAt time.Time // when the chain's write under way began
	closed  bool      // no more outcomes are taken: the pool stops
	counts  map[statKey]int64
	// unconfirmed counts the outcomes written quietly and not yet confirmed (see quietWriter):
	// until they are, not every outcome counts as written.
	unconfirmed int
	quiet       *quietWriter // nil: outcomes are written with replies

	kick       chan struct{} // hands the chain's next write to the acker's goroutine
	allWritten notice        // given when no outcome is pending or being written any more

	// regGate keeps writes of outcomes, which register the pool for hand-offs (exchange.lua), from
	// running while a sweep or a stop takes the pool off the idle sets and waits for the hand-offs
	// in flight: writers hold it for reading. leaving stops those registrations for good (the pool
	// stops). listening says that the pool's subscription listens: only then does a write register
	// it, so that a hand-off reaches a pool whose flush can wait for it (see readiness.scan).
	regGate   sync.RWMutex
	leaving   atomic.Bool
	listening atomic.Bool
	// handOffRoom gives a write's HandedIn and Room (the fetcher's; set before the pool starts).
	handOffRoom func() (handedIn int64, room int)

	heldMu    sync.Mutex // guards held and heldSince apart from mu: a fetch holds jobs one by one
	held      map[*Job]struct{}
	heldSince bool // a job was held (or let go unwritten) since the last sweep
}

// statKey names a per-minute stats count: a queue, a minute and 'p' (processed) or 'f' (failed).
type statKey struct {
	q       *rdb.QueueArgs
	minute  int64
	outcome byte
}

func newOutcomeQueue(logger *slog.Logger, alarm *dueAlarm) *outcomeQueue {
	o := &outcomeQueue{logger: logger, alarm: alarm, counts: make(map[statKey]int64), kick: make(chan struct{}, 1),
		allWritten: newNotice(), held: make(map[*Job]struct{})}
	o.maxBatch = maxAckBatch
	return o
}

// hold records a job just fetched: it is in flight until its outcome is written. A worker that
// decodes the job changes only its exported fields (Job.setWire), so the sweep may read how it was
// fetched (q, rawArg) meanwhile.
func (o *outcomeQueue) hold(j *Job) {
	o.heldMu.Lock()
	o.held[j] = struct{}{}
	o.heldSince = true
	o.heldMu.Unlock()
}

// unhold forgets a job that is no longer the pool's (see lease): the sweep may put its entry back,
// and the next one is due as after a fetch, so that an entry fetched after the pool's reap does not
// wait for the slow sweep while the pool fetches nothing more.
func (o *outcomeQueue) unhold(j *Job) {
	o.heldMu.Lock()
	delete(o.held, j)
	o.heldSince = true
	o.heldMu.Unlock()
}

// leftUnheld records that an in-progress entry the pool does not hold was left where it is (a
// hand-off the pool did not take, or whose message was lost): the next sweep is due, as after a
// fetch, to put it back.
func (o *outcomeQueue) leftUnheld() {
	o.heldMu.Lock()
	o.heldSince = true
	o.heldMu.Unlock()
}

// anyHeld reports whether one of jobs is still held: its outcome not yet written (or dropped
// after close, which keeps it held).
func (o *outcomeQueue) anyHeld(jobs []*Job) bool {
	o.heldMu.Lock()
	defer o.heldMu.Unlock()
	for _, j := range jobs {
		if _, ok := o.held[j]; ok {
			return true
		}
	}
	return false
}

// heldCount returns the number of jobs held.
func (o *outcomeQueue) heldCount() int {
	o.heldMu.Lock()
	defer o.heldMu.Unlock()
	return len(o.held)
}

// heldSinceSweep reports whether a job was held, or let go unwritten, since the last call of
// heldEntries.
func (o *outcomeQueue) heldSinceSweep() bool {
	o.heldMu.Lock()
	defer o.heldMu.Unlock()
	return o.heldSince
}

// heldEntries returns the in-progress entries of the jobs held, by the id of the queue whose list
// holds each.
func (o *outcomeQueue) heldEntries() map[string][][]byte {
	o.heldMu.Lock()
	defer o.heldMu.Unlock()
	o.heldSince = false
	entries := make(map[string][][]byte)
	for j := range o.held {
		entry, _ := j.rawArg.([]byte)
		entries[j.q.id] = append(entries[j.q.id], entry)
	}
	return entries
}

// post adds an outcome whose maker does not write it (a job the fetcher hands back): the acker's
// goroutine writes it, or the write under way hands it on. After close it is dropped: the job is
// still in the in-progress list, so it is not lost.
func (o *outcomeQueue) post(op rdb.FinishOp) {
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		return
	}
	o.addLocked(op)
	kick := o.turnToAckerLocked()
	o.mu.Unlock()
	if kick {
		o.kickWriter()
	}
}

// turnToAckerLocked gives the next write to the acker's goroutine when no write is under way, and
// reports whether it did: the caller then kicks it, once it has unlocked mu.
func (o *outcomeQueue) turnToAckerLocked() bool {
	if o.writers > 0 {
		return false
	}
	o.beginLocked()
	o.handed = true
	return true
}

// setHandOffRoom sets x's HandedIn and Room for a write of outcomes, which may register the pool
// for hand-offs.
func (o *outcomeQueue) setHandOffRoom(x *rdb.Exchange) {
	if o.handOffRoom != nil {
		x.HandedIn, x.Room = o.handOffRoom()
	}
}

// noHandOffs reports that a write must not register the pool for hand-offs.
func (o *outcomeQueue) noHandOffs() bool { return o.leaving.Load() || !o.listening.Load() }

// kickWriter wakes the acker's goroutine to make the write handed to it.
func (o *outcomeQueue) kickWriter() {
	select {
	case o.kick <- struct{}{}:
	default:
	}
}

// takeForCarry returns the pending outcomes for a fetch to carry, or nil when a write is under way
// or none is pending. After the fetch its maker calls carried.
func (o *outcomeQueue) takeForCarry() []rdb.FinishOp {
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.writers > 0 || len(o.pending) == 0 {
		return nil
	}
	o.beginLocked()
	o.writeAt = time.Now()
	return o.takeLocked()
}

// carried takes the result of a fetch that carried batch: written with x, or err, in which case the
// outcomes are written again (one already applied is then found not held and left alone; jobs that
// a lost reply fetched are put back by the fetcher's sweep).
func (o *outcomeQueue) carried(batch []rdb.FinishOp, x *rdb.Exchange, err error) {
	if err != nil {
		o.putBack(batch)
	} else {
		o.written(x, time.Now())
	}
	o.handOver(batch)
}

// putBack returns outcomes whose write failed to the front of pending, all but the requeues: a
// failed write may still be applied (a call that timed out on a frozen Redis runs when Redis
// thaws), and a requeue applied late, or twice, after the pool fetched the same job again would take
// that new hold off the pool's in-progress list and queue the job a second time (other outcomes
// leave the job's entry where a new fetch cannot bring it back). A requeue is sent once: its job
// is let go, and the sweep puts its entry back if the requeue never applied.
func (o *outcomeQueue) putBack(batch []rdb.FinishOp) {
	keep := batch
	if slices.ContainsFunc(batch, func(op rdb.FinishOp) bool { return op.Kind == rdb.OpRequeue }) {
		keep = nil // the caller still owns batch
		for _, op := range batch {
			if op.Kind == rdb.OpRequeue {
				o.unhold(op.Ref.(*Job))
			} else {
				keep = append(keep, op)
			}
		}
	}
	o.mu.Lock()
	o.putBackLocked(keep)
	o.mu.Unlock()
}

// handOver ends a write: the acker's goroutine makes the next one if outcomes are pending, else no
// write is under way any more.
func (o *outcomeQueue) handOver(batch []rdb.FinishOp) {
	o.putAwayLock(batch)
	if !o.endLocked() {
		o.mu.Unlock()
		o.allWritten.give()
		return
	}
	o.handed = true
	o.writeAt = time.Now() // the chain's next write is about to begin
	o.mu.Unlock()
	o.kickWriter()
}

// idle reports whether every outcome submitted is written.
func (o *outcomeQueue) idle() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.idleLocked()
}

// idleLocked is idle for a caller that holds mu.
func (o *outcomeQueue) idleLocked() bool {
	return len(o.pending) == 0 && o.writers == 0 && !o.extra && o.unconfirmed == 0
}

// settleQuiet makes sure that the quiet writes sent so far have run, or are to be written again
// (their jobs still held), before the caller reads or changes what they may change.
func (o *outcomeQueue) settleQuiet() {
	if o.quiet != nil {
		o.quiet.settle()
	}
}

// redo takes back outcomes written quietly that may not have run, to be written with replies.
func (o *outcomeQueue) redo(ops []rdb.FinishOp) {
	o.mu.Lock()
	o.unconfirmed -= len(ops)
	o.putBackLocked(ops)
	kick := o.turnToAckerLocked()
	o.mu.Unlock()
	if kick {
		o.kickWriter()
	}
}

// confirmed takes in outcomes written quietly whose writes ran: as written does a reply that
// recorded them all.
func (o *outcomeQueue) confirmed(ops []rdb.FinishOp) {
	o.record(ops, nil, "", time.Now())
	o.mu.Lock()
	o.unconfirmed -= len(ops)
	idle := o.idleLocked()
	o.mu.Unlock()
	if idle {
		o.allWritten.give()
	}
}

// written takes in the reply to the outcomes x carried: their jobs are no longer held, what was
// recorded is counted for the stats, and the requeuer learns when retries and snoozes are due.
func (o *outcomeQueue) written(x *rdb.Exchange, now time.Time) {
	o.record(x.Ops, x.Order, x.Done, now)
}

// record takes in the result of a write of ops: done has the character of each, in the order of
// the indexes in order (nil: ops' own); a character missing means recorded.
func (o *outcomeQueue) record(ops []rdb.FinishOp, order []int, done string, now time.Time) {
	minute := now.Unix() / 60
	logger := o.logger
	o.heldMu.Lock()
	for i := range ops {
		delete(o.held, ops[i].Ref.(*Job))
	}
	o.heldMu.Unlock()
	o.mu.Lock()
	defer o.mu.Unlock()
	for i := range ops {
		k := i
		if order != nil {
			if i >= len(order) {
				break
			}
			k = order[i]
		}
		op := &ops[k]
		c := byte('1')
		if i < len(done) {
			c = done[i]
		}
		switch c {
		case '1':
			switch op.Kind {
			case rdb.OpAck:
				o.counts[statKey{op.Q, minute, 'p'}]++
			case rdb.OpDrop, rdb.OpRetry, rdb.OpDead:
				o.counts[statKey{op.Q, minute, 'f'}]++
			}
			if op.Kind == rdb.OpRetry || op.Kind == rdb.OpSnooze {
				o.alarm.at(time.Unix(op.Score, 0))
			}
		case '0':
			logger.Info("work: job was no longer held by this pool (put back already)", "job_name", op.Q.Name, "job_id", op.Ref.(*Job).ID)
		default:
			logger.Error("work: a destination key holds the wrong type; the job stays in progress until it is put back",
				"job_name", op.Q.Name, "job_id", op.Ref.(*Job).ID)
		}
	}
}
