package work

import (
	"strconv"
	"sync"
	"time"
)

// acker gathers the outcomes of finished jobs (done, retry, dead, back to the queue) for the pool's
// loop, which records them in its next round trip to Redis, together with the fetch it makes anyway:
// under load many outcomes share one round trip, and at low load none waits, since the loop writes
// an outcome at once when it has nothing else to send. A finished job's outcome is therefore sent
// at most one round trip after it finished (the one under way, if any), unless Redis cannot be
// reached. The acker also sums the per-minute stats, which are written at most once a second.
type acker struct {
	r        *poolRun
	in       chan finishOp
	closed   chan struct{}
	mu       sync.Mutex // guards submit against close
	isClosed bool

	// Used by the loop only.
	pending   []finishOp // received, not yet written
	counts    map[statKey]int64
	lastStats time.Time
	failures  int // round trips that failed in a row
}

// statKey names a per-minute stats count: a queue, a minute and 'p' (processed) or 'f' (failed).
type statKey struct {
	q       *queueArgs
	minute  int64
	outcome byte
}

// maxAckBatch bounds the outcomes of one round trip.
const maxAckBatch = 512

// statsEvery is how often summed stats are written.
const statsEvery = time.Second

func newAcker(r *poolRun) *acker {
	return &acker{r: r, in: make(chan finishOp, 4096), closed: make(chan struct{}), counts: make(map[statKey]int64)}
}

// submit hands an outcome to the loop. After close it drops it: the job is still in the in-progress
// list (or was put back already), so it is not lost.
func (a *acker) submit(op finishOp) {
	a.mu.Lock()
	if a.isClosed {
		a.mu.Unlock()
		return
	}
	a.mu.Unlock()
	select {
	case a.in <- op:
	case <-a.closed:
	}
}

// close stops taking outcomes; the loop writes those already submitted, then ends.
func (a *acker) close() {
	a.mu.Lock()
	a.isClosed = true
	a.mu.Unlock()
	close(a.closed)
}

func (a *acker) isClosing() bool {
	select {
	case <-a.closed:
		return true
	default:
		return false
	}
}

// receive moves the submitted outcomes to pending, without waiting, and returns how many it moved.
func (a *acker) receive() int {
	n := 0
	for len(a.pending) < maxAckBatch {
		select {
		case op := <-a.in:
			a.pending = append(a.pending, op)
			n++
			continue
		default:
		}
		break
	}
	return n
}

// idle reports whether every submitted outcome is written.
func (a *acker) idle() bool { return len(a.pending) == 0 && len(a.in) == 0 }

// statsDue reports whether summed stats should ride on the next round trip.
func (a *acker) statsDue(now time.Time) bool {
	return len(a.counts) > 0 && (now.Sub(a.lastStats) >= statsEvery || a.isClosing())
}

// addStats puts the summed stats into x and clears them.
func (a *acker) addStats(x *exchange, now time.Time) {
	ks := a.r.wp.store.ks
	for k, c := range a.counts {
		day := k.minute / (24 * 60)
		if k.q.statsKey == "" || k.q.statsDay != day {
			k.q.statsDay, k.q.statsKey = day, ks.stats(k.q.name, day)
		}
		x.stats = append(x.stats, statsAdd{key: k.q.statsKey, field: string(k.outcome) + ":" + strconv.FormatInt(k.minute, 10), count: c})
	}
	clear(a.counts)
	a.lastStats = now
}

// giveUp counts a failed round trip while closing and reports whether to stop trying: the jobs stay
// in the in-progress list, and the pool's heartbeat is left for a reaper to put them back.
func (a *acker) giveUp() bool {
	a.failures++
	return a.failures >= 3
}

// written takes in the reply to the outcomes x carried: what was recorded is counted in the stats
// and no longer held; the requeuer learns when retries and snoozes are due.
func (a *acker) written(x *exchange, now time.Time) {
	minute := now.Unix() / 60
	logger := a.r.wp.logger
	a.failures = 0
	for i, k := range x.order {
		o := &x.ops[k]
		a.r.fetcher.sweeper.unhold(o.job)
		c := byte('1')
		if i < len(x.done) {
			c = x.done[i]
		}
		switch c {
		case '1':
			switch o.kind {
			case opAck:
				a.counts[statKey{o.q, minute, 'p'}]++
			case opDrop, opRetry, opDead:
				a.counts[statKey{o.q, minute, 'f'}]++
			}
			if o.kind == opRetry || o.kind == opSnooze {
				a.r.requeuer.at(time.Unix(o.score, 0))
			}
		case '0':
			logger.Info("work: job was no longer held by this pool (put back already)", "job_name", o.q.name, "job_id", o.job.ID)
		default:
			logger.Error("work: a destination key holds the wrong type; the job stays in progress until it is put back",
				"job_name", o.q.name, "job_id", o.job.ID)
		}
		o.job = nil
	}
}
