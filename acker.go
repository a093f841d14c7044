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
// the next one, which the acker's own goroutine makes. The outcomes wait in the pool's outcome queue, which
// the fetcher drains too: it carries them along when it fetches and no write is under way. So a
// finished job's outcome reaches Redis within two round trips of its end (the write under way, then
// its own), unless Redis cannot be reached: the window in which a crash would make finished work run
// again is that short, and under load many outcomes share each round trip.
//
// When a write has been under way for extraAfter and secondAckAt outcomes wait behind it, the worker
// that submits the last of them writes them at once on a connection of its own (an extra write, at
// most one alongside the chain of writes above): on a Redis slowed by other work an outcome then
// waits for part of a slow round trip rather than a whole one, and fewer finished jobs are left for a
// crash to make run again. Quick writes get no company, so a busy pool on a quick Redis makes hardly
// more round trips than with the chain alone.
//
// The acker also writes the per-minute stats the outcome queue sums, at most once a second.
type acker struct {
	ackerParams
	done chan struct{} // closed when the goroutine has written everything and ended

	// Guarded by the outcome queue's mu.
	gaveUp    bool // closed, and Redis stayed out of reach
	lastStats time.Time
	failures  int // writes of the acker's goroutine that failed in a row

	x      rdb.Exchange // the buffer of whoever makes the chain's writes of outcomes alone (writers is 1)
	xExtra rdb.Exchange // the extra write's buffer (extra is set)
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
// submitted outcome ends its job's hold), the outcome queue it writes outcomes from (shared with the
// fetcher, whose round trips carry some of them), and keepHeartbeat, set when outcomes could not be
// written before the pool stopped.
type ackerParams struct {
	store         *rdb.Store
	logger        *slog.Logger
	poolID        string
	room          *room
	out           *outcomeQueue
	keepHeartbeat *atomic.Bool

	boxedPoolID interface{} // poolID as a script argument, boxed once
}

func newAcker(p ackerParams) *acker {
	p.boxedPoolID = p.poolID
	return &acker{ackerParams: p, done: make(chan struct{})}
}

func (a *acker) start() { go a.loop() }

// submit records an outcome: at once, on the caller's goroutine, when no write is under way; else
// with the next write. After close it drops it: the job is still in the in-progress list (or was put
// back already), so it is not lost. It ends the job's hold on the pool's room.
func (a *acker) submit(op rdb.FinishOp) {
	o := a.out
	o.mu.Lock()
	if o.closed {
		o.mu.Unlock()
		a.room.release()
		return
	}
	if !o.submitLocked(op) {
		if o.extra || !a.extraDueLocked() {
			o.mu.Unlock()
			a.room.release()
			return
		}
		o.extra = true
		batch := o.takeLocked()
		o.mu.Unlock()
		a.room.release()
		a.writeExtra(batch)
		return
	}
	o.writeAt = time.Now()
	batch := o.takeLocked()
	o.mu.Unlock()
	// The outcome is pending (the outcome queue is not idle), so a Drain cannot mistake the freed room for
	// a finished pool; the fetcher may fetch again while this write is under way.
	a.room.release()
	// A quiet write carries no stats: the acker's goroutine writes them within statsEvery.
	if o.quiet != nil && o.quiet.write(batch) {
		o.handOver(batch)
		return
	}
	if err := a.write(&a.x, batch); err != nil {
		// Redis is out of reach: the acker's goroutine keeps trying, the worker goes on.
		o.putBack(batch)
	}
	o.handOver(batch)
}

// extraDueLocked reports whether the outcomes pending behind the chain's write under way are due an
// extra write: a submit makes one unless one is under way, and the extra write goes on while it holds.
// The caller holds the outcome queue's mu.
func (a *acker) extraDueLocked() bool {
	o := a.out
	return o.writers > 0 && len(o.pending) >= secondAckAt && time.Since(o.writeAt) >= extraAfter
}

// writeExtra makes the extra write, and more while outcomes keep waiting behind the chain's write.
// When the chain has ended meanwhile, what is pending is handed over to the acker's goroutine.
func (a *acker) writeExtra(batch []rdb.FinishOp) {
	o := a.out
	for {
		err := a.write(&a.xExtra, batch)
		if err != nil {
			o.putBack(batch)
		}
		o.putAwayLock(batch)
		if err == nil && a.extraDueLocked() {
			batch = o.takeLocked()
			o.mu.Unlock()
			continue
		}
		o.extra = false
		idle := o.writers == 0 && len(o.pending) == 0
		handOver := o.writers == 0 && (len(o.pending) > 0 || o.closed)
		if handOver && len(o.pending) > 0 {
			// The chain ended meanwhile: its next write is the goroutine's.
			o.beginLocked()
			o.handed = true
		}
		o.mu.Unlock()
		if idle {
			o.allWritten.give()
		}
		if handOver {
			o.kickWriter()
		}
		return
	}
}

// write records a batch of outcomes alone, and the stats when they are due, using x.
func (a *acker) write(x *rdb.Exchange, batch []rdb.FinishOp) error {
	x.Reset()
	x.Ops = batch
	now := time.Now()
	a.out.mu.Lock()
	if a.statsDueLocked(now) {
		a.addStatsLocked(x, now)
	}
	a.out.mu.Unlock()
	a.out.regGate.RLock()
	x.NoWait = a.out.noHandOffs()
	a.out.setHandOffRoom(x)
	err := a.store.RunExchange(context.Background(), a.boxedPoolID, x)
	a.out.regGate.RUnlock()
	if err != nil {
		a.logger.Error("work: recording job outcomes", "jobs", len(batch), "err", err)
		return err
	}
	a.out.written(x, now)
	return nil
}

// loop makes the writes handed over to it, retrying while Redis is out of reach, and writes the
// stats at least once a second while there are some. Once closed, it writes what is pending and
// ends.
func (a *acker) loop() {
	defer close(a.done)
	o := a.out
	timer := time.NewTimer(statsEvery)
	defer timer.Stop()
	if o.quiet != nil {
		o.quiet.settle() // dials
	}
	wait := 10 * time.Millisecond
	for {
		select {
		case <-o.kick:
		case <-timer.C:
		}
		timer.Reset(statsEvery)
		o.mu.Lock()
		closed := o.closed
		o.mu.Unlock()
		if o.quiet != nil && closed {
			o.quiet.close() // what it sends back is pending now
		}
		for a.step(&wait) {
		}
		o.mu.Lock()
		end := a.gaveUp || (o.closed && o.idleLocked() && len(o.counts) == 0)
		o.mu.Unlock()
		if end {
			return
		}
	}
}

// step makes one write if one is due and no one else is writing; it reports whether to look again.
func (a *acker) step(wait *time.Duration) bool {
	o := a.out
	now := time.Now()
	o.mu.Lock()
	if o.writers > 0 && !o.handed {
		// A worker or the fetcher is writing: it hands over, or ends the chain, when done.
		closed := o.closed
		o.mu.Unlock()
		if closed {
			time.Sleep(time.Millisecond)
			return true
		}
		return false
	}
	if len(o.pending) == 0 && !a.statsDueLocked(now) {
		wasWriting := o.writers > 0
		o.writers, o.handed = 0, false
		o.mu.Unlock()
		if wasWriting {
			o.allWritten.give()
		}
		return false
	}
	if o.writers == 0 {
		o.beginLocked()
	}
	o.handed = true
	o.writeAt = now
	batch := o.takeLocked()
	o.mu.Unlock()
	if err := a.write(&a.x, batch); err != nil {
		o.putBack(batch)
		o.mu.Lock()
		a.failures++
		if o.closed && a.failures >= 3 {
			// The jobs stay in the in-progress list; the pool's heartbeat is left for a reaper to
			// put them back.
			a.gaveUp, o.pending, o.writers, o.handed = true, nil, 0, false
			o.mu.Unlock()
			a.keepHeartbeat.Store(true)
			return false
		}
		o.mu.Unlock()
		time.Sleep(*wait)
		*wait = min(2**wait, 2*time.Second)
		return true
	}
	*wait = 10 * time.Millisecond
	o.putAwayLock(batch)
	a.failures = 0
	o.mu.Unlock()
	return true
}

// close stops taking outcomes and returns once those already submitted are written (or given up
// on, after a few failed tries).
func (a *acker) close() {
	a.out.mu.Lock()
	a.out.closed = true
	a.out.mu.Unlock()
	a.out.kickWriter()
	<-a.done
}

// statsDueLocked reports whether the summed stats are due a write. The caller holds the outcome queue's mu.
func (a *acker) statsDueLocked(now time.Time) bool {
	return len(a.out.counts) > 0 && (now.Sub(a.lastStats) >= statsEvery || a.out.closed)
}

// addStatsLocked puts the summed stats into x and clears them. The caller holds the outcome queue's mu.
func (a *acker) addStatsLocked(x *rdb.Exchange, now time.Time) {
	for k, c := range a.out.counts {
		a.store.SetStatsDay(k.q, k.minute/(24*60))
		x.Stats = append(x.Stats, rdb.StatsAdd{Key: k.q.StatsKey, Field: string(k.outcome) + ":" + strconv.FormatInt(k.minute, 10), Count: c})
	}
	clear(a.out.counts)
	a.lastStats = now
}
