package work

import (
	"context"
	"log/slog"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// acker records the outcomes of finished jobs in Redis: done, retry, dead, or back to the queue.
//
// Writes carry every outcome submitted before they began (group commit). A worker that finishes a
// job while no write is under way writes the outcome itself, at once, in the script round trip that
// also updates counters and workflow state; outcomes that arrive during a write wait for it and go in
// the next one, which the acker's own goroutine makes. The pool's loop also takes pending outcomes
// along when it fetches and no write is under way. So a finished job's outcome reaches Redis within
// two round trips of its end (the write under way, then its own), unless Redis cannot be reached:
// the window in which a crash would make finished work run again is that short, and under load many
// outcomes share each round trip.
//
// When a write has been under way for extraAfter and secondAckAt outcomes wait behind it, the worker
// that submits the last of them writes them at once on a connection of its own (an extra write, at
// most one alongside the chain of writes above): on a Redis slowed by other work an outcome then
// waits for part of a slow round trip rather than a whole one, and fewer finished jobs are left for a
// crash to make run again. Quick writes get no company, so a busy pool on a quick Redis makes hardly
// more round trips than with the chain alone.
//
// The acker also sums the per-minute stats, which are written at most once a second.
type acker struct {
	ackerParams
	kick chan struct{} // hands the writing over to the acker's goroutine
	done chan struct{} // closed when the goroutine has written everything and ended

	// The outcomes submitted and not yet taken by a write; its writers count the chain's write
	// (0 or 1), and its mu also guards the fields below.
	groupCommit[rdb.FinishOp]
	handed    bool      // the chain's write is the acker's goroutine's (handed over, or its own)
	extra     bool      // an extra write is under way beside it (secondAckAt)
	writeAt   time.Time // when the chain's write under way began
	closed    bool
	gaveUp    bool // closed, and Redis stayed out of reach
	counts    map[statKey]int64
	lastStats time.Time
	failures  int // writes of the acker's goroutine that failed in a row

	x      rdb.Exchange // the buffer of whoever makes the chain's writes of outcomes alone (writers is 1)
	xExtra rdb.Exchange // the extra write's buffer (extra is set)
}

// statKey names a per-minute stats count: a queue, a minute and 'p' (processed) or 'f' (failed).
type statKey struct {
	q       *rdb.QueueArgs
	minute  int64
	outcome byte
}

// maxAckBatch bounds the outcomes of one round trip.
const maxAckBatch = 512

// An extra write is made once the chain's write has been under way for extraAfter and secondAckAt
// outcomes wait behind it: fewer outcomes, or a younger write, wait for it to end rather than take a
// connection and a round trip of their own.
const (
	secondAckAt = 4
	extraAfter  = 500 * time.Microsecond
)

// statsEvery is how often summed stats are written.
const statsEvery = time.Second

// ackerParams are what an acker uses: the store, the logger, the pool's ID, the pool's room (a
// submitted outcome ends its job's hold), and the pool's signals: onWritten tells which outcomes are
// in Redis (the fetcher's sweeper stops holding their jobs), idleNow that every outcome is written (a
// Drain may be waiting for it), alarm is set when retries and snoozed jobs are due, and keepHeartbeat
// is set when outcomes could not be written before the pool stopped.
type ackerParams struct {
	store         *rdb.Store
	logger        *slog.Logger
	poolID        string
	room          *room
	onWritten     func(ops []rdb.FinishOp)
	idleNow       func()
	alarm         *dueAlarm
	keepHeartbeat *atomic.Bool

	boxedPoolID interface{} // poolID as a script argument, boxed once
}

func newAcker(p ackerParams) *acker {
	p.boxedPoolID = p.poolID
	a := &acker{ackerParams: p, kick: make(chan struct{}, 1), done: make(chan struct{}), counts: make(map[statKey]int64)}
	a.maxBatch = maxAckBatch
	return a
}

func (a *acker) start() { go a.loop() }

// submit records an outcome: at once, on the caller's goroutine, when no write is under way; else
// with the next write. After close it drops it: the job is still in the in-progress list (or was put
// back already), so it is not lost. It ends the job's hold on the pool's room.
func (a *acker) submit(op rdb.FinishOp) {
	a.mu.Lock()
	if a.closed {
		a.mu.Unlock()
		a.room.release()
		return
	}
	if !a.submitLocked(op) {
		if a.extra || !a.extraDueLocked() {
			a.mu.Unlock()
			a.room.release()
			return
		}
		a.extra = true
		batch := a.takeLocked()
		a.mu.Unlock()
		a.room.release()
		a.writeExtra(batch)
		return
	}
	a.writeAt = time.Now()
	batch := a.takeLocked()
	a.mu.Unlock()
	// The outcome is pending (the acker is not idle), so a Drain cannot mistake the freed room for
	// a finished pool; the loop may fetch again while this write is under way.
	a.room.release()
	if err := a.write(&a.x, batch); err != nil {
		// Redis is out of reach: the acker's goroutine keeps trying, the worker goes on.
		a.putBack(batch)
	}
	a.handOver(batch)
}

// extraDueLocked reports whether the outcomes pending behind the chain's write under way are due an
// extra write: a submit makes one unless one is under way, and the extra write goes on while it holds.
// The caller holds mu.
func (a *acker) extraDueLocked() bool {
	return a.writers > 0 && len(a.pending) >= secondAckAt && time.Since(a.writeAt) >= extraAfter
}

// writeExtra makes the extra write, and more while outcomes keep waiting behind the chain's write.
// When the chain has ended meanwhile, what is pending is handed over to the acker's goroutine.
func (a *acker) writeExtra(batch []rdb.FinishOp) {
	for {
		err := a.write(&a.xExtra, batch)
		if err != nil {
			a.putBack(batch)
		}
		a.putAwayLock(batch)
		if err == nil && a.extraDueLocked() {
			batch = a.takeLocked()
			a.mu.Unlock()
			continue
		}
		a.extra = false
		idle := a.writers == 0 && len(a.pending) == 0
		handOver := a.writers == 0 && (len(a.pending) > 0 || a.closed)
		if handOver && len(a.pending) > 0 {
			// The chain ended meanwhile: its next write is the goroutine's.
			a.beginLocked()
			a.handed = true
		}
		a.mu.Unlock()
		if idle {
			a.idleNow()
		}
		if handOver {
			select {
			case a.kick <- struct{}{}:
			default:
			}
		}
		return
	}
}

// putBack returns outcomes whose write failed to the front of pending.
func (a *acker) putBack(batch []rdb.FinishOp) {
	a.mu.Lock()
	a.putBackLocked(batch)
	a.mu.Unlock()
}

// handOver ends a write: the acker's goroutine makes the next one if outcomes are pending, else no
// write is under way any more.
func (a *acker) handOver(batch []rdb.FinishOp) {
	a.putAwayLock(batch)
	if !a.endLocked() {
		a.mu.Unlock()
		a.idleNow()
		return
	}
	a.handed = true
	a.writeAt = time.Now() // the chain's next write is about to begin
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
}

// takeForFetch returns the pending outcomes for the loop to carry on a fetch, or nil when a write is
// under way or none is pending. After the fetch the loop calls fetched.
func (a *acker) takeForFetch() []rdb.FinishOp {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.writers > 0 || len(a.pending) == 0 {
		return nil
	}
	a.beginLocked()
	a.writeAt = time.Now()
	return a.takeLocked()
}

// fetched takes the result of a fetch that carried batch: written with x, or err, in which case the
// outcomes are written again (one already applied is then found not held and left alone; jobs that
// a lost reply fetched are put back by the fetcher's sweep).
func (a *acker) fetched(batch []rdb.FinishOp, x *rdb.Exchange, err error) {
	if err != nil {
		a.putBack(batch)
	} else {
		a.written(x, time.Now())
	}
	a.handOver(batch)
}

// write records a batch of outcomes alone, and the stats when they are due, using x.
func (a *acker) write(x *rdb.Exchange, batch []rdb.FinishOp) error {
	x.Reset()
	x.Ops = batch
	now := time.Now()
	a.mu.Lock()
	if a.statsDueLocked(now) {
		a.addStatsLocked(x, now)
	}
	a.mu.Unlock()
	if err := a.store.RunExchange(context.Background(), a.boxedPoolID, x); err != nil {
		a.logger.Error("work: recording job outcomes", "jobs", len(batch), "err", err)
		return err
	}
	a.written(x, now)
	return nil
}

// loop makes the writes handed over to it, retrying while Redis is out of reach, and writes the
// stats at least once a second while there are some. Once closed, it writes what is pending and
// ends.
func (a *acker) loop() {
	defer close(a.done)
	timer := time.NewTimer(statsEvery)
	defer timer.Stop()
	wait := 10 * time.Millisecond
	for {
		select {
		case <-a.kick:
		case <-timer.C:
		}
		timer.Reset(statsEvery)
		for a.step(&wait) {
		}
		a.mu.Lock()
		end := a.gaveUp || (a.closed && len(a.pending) == 0 && a.writers == 0 && !a.extra && len(a.counts) == 0)
		a.mu.Unlock()
		if end {
			return
		}
	}
}

// step makes one write if one is due and no one else is writing; it reports whether to look again.
func (a *acker) step(wait *time.Duration) bool {
	now := time.Now()
	a.mu.Lock()
	if a.writers > 0 && !a.handed {
		// A worker or the loop is writing: it hands over, or ends the chain, when done.
		closed := a.closed
		a.mu.Unlock()
		if closed {
			time.Sleep(time.Millisecond)
			return true
		}
		return false
	}
	if len(a.pending) == 0 && !a.statsDueLocked(now) {
		wasWriting := a.writers > 0
		a.writers, a.handed = 0, false
		a.mu.Unlock()
		if wasWriting {
			a.idleNow()
		}
		return false
	}
	if a.writers == 0 {
		a.beginLocked()
	}
	a.handed = true
	a.writeAt = now
	batch := a.takeLocked()
	a.mu.Unlock()
	if err := a.write(&a.x, batch); err != nil {
		a.putBack(batch)
		a.mu.Lock()
		a.failures++
		if a.closed && a.failures >= 3 {
			// The jobs stay in the in-progress list; the pool's heartbeat is left for a reaper to
			// put them back.
			a.gaveUp, a.pending, a.writers, a.handed = true, nil, 0, false
			a.mu.Unlock()
			a.keepHeartbeat.Store(true)
			return false
		}
		a.mu.Unlock()
		time.Sleep(*wait)
		*wait = min(2**wait, 2*time.Second)
		return true
	}
	*wait = 10 * time.Millisecond
	a.putAwayLock(batch)
	a.failures = 0
	a.mu.Unlock()
	return true
}

// close stops taking outcomes and returns once those already submitted are written (or given up
// on, after a few failed tries).
func (a *acker) close() {
	a.mu.Lock()
	a.closed = true
	a.mu.Unlock()
	select {
	case a.kick <- struct{}{}:
	default:
	}
	<-a.done
}

// idle reports whether every submitted outcome is written.
func (a *acker) idle() bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.pending) == 0 && a.writers == 0 && !a.extra
}

func (a *acker) statsDueLocked(now time.Time) bool {
	return len(a.counts) > 0 && (now.Sub(a.lastStats) >= statsEvery || a.closed)
}

// addStatsLocked puts the summed stats into x and clears them. The caller holds mu.
func (a *acker) addStatsLocked(x *rdb.Exchange, now time.Time) {
	for k, c := range a.counts {
		a.store.SetStatsDay(k.q, k.minute/(24*60))
		x.Stats = append(x.Stats, rdb.StatsAdd{Key: k.q.StatsKey, Field: string(k.outcome) + ":" + strconv.FormatInt(k.minute, 10), Count: c})
	}
	clear(a.counts)
	a.lastStats = now
}

// written takes in the reply to the outcomes x carried: what was recorded is counted in the stats
// and no longer held; the requeuer learns when retries and snoozes are due.
func (a *acker) written(x *rdb.Exchange, now time.Time) {
	minute := now.Unix() / 60
	logger := a.logger
	a.onWritten(x.Ops)
	a.mu.Lock()
	defer a.mu.Unlock()
	for i, k := range x.Order {
		o := &x.Ops[k]
		c := byte('1')
		if i < len(x.Done) {
			c = x.Done[i]
		}
		switch c {
		case '1':
			switch o.Kind {
			case rdb.OpAck:
				a.counts[statKey{o.Q, minute, 'p'}]++
			case rdb.OpDrop, rdb.OpRetry, rdb.OpDead:
				a.counts[statKey{o.Q, minute, 'f'}]++
			}
			if o.Kind == rdb.OpRetry || o.Kind == rdb.OpSnooze {
				a.alarm.at(time.Unix(o.Score, 0))
			}
		case '0':
			logger.Info("work: job was no longer held by this pool (put back already)", "job_name", o.Q.Name, "job_id", o.Ref.(*Job).ID)
		default:
			logger.Error("work: a destination key holds the wrong type; the job stays in progress until it is put back",
				"job_name", o.Q.Name, "job_id", o.Ref.(*Job).ID)
		}
	}
}
