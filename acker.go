package work

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// acker records the outcome of finished jobs in Redis: done, retry, dead, or back to the queue. It
// batches whatever outcomes arrive while a write is under way into the next single write (group
// commit), so under load many jobs are acknowledged per round trip and at low load none waits.
type acker struct {
	r        *poolRun
	in       chan finishOp
	pending  atomic.Int64 // submitted and not yet written
	closed   chan struct{}
	done     chan struct{}
	mu       sync.Mutex // guards submit against close
	isClosed bool
}

// maxAckBatch bounds one write.
const maxAckBatch = 512

func newAcker(r *poolRun) *acker {
	return &acker{r: r, in: make(chan finishOp, 4096), closed: make(chan struct{}), done: make(chan struct{})}
}

func (a *acker) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.loop()
	}()
}

// submit queues an outcome. After close it drops it: the job is still in the in-progress list (or
// was put back already), so it is not lost.
func (a *acker) submit(op finishOp) {
	a.mu.Lock()
	if a.isClosed {
		a.mu.Unlock()
		return
	}
	a.pending.Add(1)
	a.mu.Unlock()
	select {
	case a.in <- op:
	case <-a.closed:
		a.pending.Add(-1)
	}
}

// close writes everything submitted so far and ends the loop.
func (a *acker) close() {
	a.mu.Lock()
	a.isClosed = true
	a.mu.Unlock()
	close(a.closed)
	<-a.done
}

func (a *acker) idle() bool { return a.pending.Load() == 0 }

func (a *acker) loop() {
	defer close(a.done)
	batch := make([]finishOp, 0, maxAckBatch)
	for {
		select {
		case op := <-a.in:
			batch = a.fill(append(batch[:0], op))
		case <-a.closed:
			// Write what was submitted before close.
			for batch = a.fill(batch[:0]); len(batch) > 0; batch = a.fill(batch[:0]) {
				a.write(batch, true)
			}
			return
		}
		a.write(batch, false)
	}
}

// fill adds to batch, without waiting, whatever outcomes are already submitted, up to maxAckBatch.
func (a *acker) fill(batch []finishOp) []finishOp {
	for len(batch) < maxAckBatch {
		select {
		case op := <-a.in:
			batch = append(batch, op)
		default:
			return batch
		}
	}
	return batch
}

// write applies a batch, retrying while Redis is unreachable. While closing it gives up after a few
// tries: the jobs stay in the in-progress list, and the pool's heartbeat is left for a reaper.
func (a *acker) write(batch []finishOp, closing bool) {
	logger := a.r.wp.logger
	wait := 10 * time.Millisecond
	for attempt := 1; ; attempt++ {
		done, err := a.r.wp.store.finish(context.Background(), a.r.poolID, batch)
		if err == nil {
			a.scheduleRequeues(batch)
			for i, d := range done {
				if d == 0 && i < len(batch) {
					logger.Info("work: job was no longer held by this pool (put back already)",
						"job_name", batch[i].name, "op", batch[i].op)
				}
			}
			break
		}
		logger.Error("work: recording job outcomes", "jobs", len(batch), "attempt", attempt, "err", err)
		if closing && attempt >= 3 {
			a.r.heartbeater.keepRegistered()
			break
		}
		select {
		case <-time.After(wait):
		case <-a.closed:
			if !closing {
				closing = true
			}
		}
		wait = min(2*wait, 2*time.Second)
	}
	a.r.fetcher.unhold(batch)
	a.pending.Add(-int64(len(batch)))
	if a.pending.Load() == 0 {
		a.r.fetcher.poke()
	}
}

// scheduleRequeues tells the requeuer when the retries and snoozes just written are due: no look at
// Redis would tell it sooner.
func (a *acker) scheduleRequeues(batch []finishOp) {
	ks := a.r.wp.store.ks
	for i := range batch {
		if o := &batch[i]; o.op == "zadd" && (o.dest == ks.retry() || o.dest == ks.scheduled()) {
			a.r.requeuer.at(time.Unix(o.score, 0))
		}
	}
}
