package work

import (
	"sync/atomic"
	"time"
)

// fetcher is the pool's loop: the one goroutine that moves jobs between Redis and the workers. Each
// round trip (store.runExchange) records the outcomes the acker gathered since the last one and
// fetches as many jobs as the pool has room for from the ready queues (readiness), split between
// them by priority (prioritySampler); the jobs go to the workers through the jobs channel. So under
// load a round trip both acknowledges and fetches a batch, and an idle pool sends nothing until a
// wake-up, a look or an outcome gives it something to do.
//
// The pool's room is counted in jobs held: a job is held from its fetch until its worker hands over
// its outcome. The pool holds at most 2 x concurrency jobs (the jobs it runs and as many fetched
// ahead), and quickAhead more while its jobs are quick (they then wait for a worker a few
// milliseconds at most, and the larger batches save round trips); a pool of slow jobs never holds
// them from other pools.
type fetcher struct {
	r        *poolRun
	jobs     chan *Job
	ready    *readiness
	sweeper  *sweeper
	capacity int // base + quickAhead
	base     int // the most jobs held while jobs are not quick
	minBatch int
	meanRun  atomic.Int64 // moving mean of handler run times, ns

	held int // jobs fetched whose outcome the loop has not received yet

	stopped      chan struct{} // closed by stop: fetch no more
	fetchStopped chan struct{} // closed by the loop once it fetches no more
	done         chan struct{} // closed when the loop ends

	// Buffers reused from round trip to round trip.
	x      exchange
	names  []string
	gens   []uint64
	shares []int
}

// quickAhead is how many more jobs a pool fetches ahead while its jobs run in under quickRun.
const (
	quickAhead = 16
	quickRun   = time.Millisecond
)

func newFetcher(r *poolRun, base int) *fetcher {
	capacity := base + quickAhead
	f := &fetcher{
		r:            r,
		jobs:         make(chan *Job, capacity),
		ready:        newReadiness(r),
		sweeper:      newSweeper(r),
		capacity:     capacity,
		base:         base,
		minBatch:     max(1, base/4),
		stopped:      make(chan struct{}),
		fetchStopped: make(chan struct{}),
		done:         make(chan struct{}),
	}
	f.meanRun.Store(int64(time.Second)) // not quick until jobs have shown it
	return f
}

func (f *fetcher) start() {
	go f.ready.subscribe(f.stopped)
	go f.loop()
}

// stop ends fetching and the subscription, and puts jobs fetched but not started back at the front
// of their queues. The loop goes on writing outcomes until the acker is closed.
func (f *fetcher) stop() {
	close(f.stopped)
	f.ready.poke()
	<-f.fetchStopped
	for {
		select {
		case j := <-f.jobs:
			f.r.acker.submit(finishOp{kind: opRequeue, q: j.q.args, job: j})
			continue
		default:
		}
		break
	}
	f.ready.releaseDrains()
}

func (f *fetcher) isStopped() bool {
	select {
	case <-f.stopped:
		return true
	default:
		return false
	}
}

// ran records a handler's run time in the moving mean that decides whether jobs are quick.
func (f *fetcher) ran(d time.Duration) {
	m := f.meanRun.Load()
	f.meanRun.Store(m + (int64(d)-m)/8) // racing workers may drop a sample: it is only a mean
}

// room is how many more jobs the pool may hold now.
func (f *fetcher) room() int {
	limit := f.base
	if f.meanRun.Load() < int64(quickRun) {
		limit = f.capacity
	}
	return limit - f.held
}

func (f *fetcher) loop() {
	defer close(f.done)
	a := f.r.acker
	logger := f.r.wp.logger
	errWait := 10 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	fetching := true
	for {
		f.received(a.receive())
		if fetching && f.isStopped() {
			fetching = false
			close(f.fetchStopped)
		}
		if !fetching && a.isClosing() && a.idle() && !a.statsDue(time.Now()) {
			return
		}
		if fetching {
			if f.sweeper.due() {
				f.sweeper.sweep()
			}
			if f.ready.scanDue() {
				if err := f.ready.scan(); err != nil {
					logger.Error("work: looking for jobs", "err", err)
					if !f.sleep(timer, errWait) {
						continue
					}
					errWait = min(2*errWait, 5*time.Second)
					continue
				}
			}
		}
		n := 0
		if fetching {
			n = f.want(len(a.pending) > 0)
		}
		if n == 0 && len(a.pending) == 0 && !a.statsDue(time.Now()) {
			if fetching && a.idle() && f.held == 0 && len(f.jobs) == 0 && f.ready.checkDrained() {
				continue
			}
			f.wait(timer, fetching)
			continue
		}
		if err := f.exchange(n); err != nil {
			logger.Error("work: recording outcomes and fetching jobs", "outcomes", len(a.pending), "err", err)
			if a.isClosing() && a.giveUp() {
				f.r.heartbeater.keepRegistered()
				return
			}
			f.sleep(timer, errWait)
			errWait = min(2*errWait, 2*time.Second)
			continue
		}
		errWait = 10 * time.Millisecond
	}
}

// received counts n outcomes just received: each ends a job's hold on the pool's room.
func (f *fetcher) received(n int) {
	if n == 0 {
		return
	}
	f.held = max(f.held-n, 0)
	f.ready.jobFinished()
}

// want returns how many jobs to fetch now: the room the pool has if some queue is ready. While
// fetched jobs still wait for a worker, it waits for room for a batch, unless outcomes must be
// written anyway (the jobs then ride on that round trip).
func (f *fetcher) want(outcomes bool) int {
	room := f.room()
	if room <= 0 {
		return 0
	}
	if !outcomes && len(f.jobs) > 0 && room < f.minBatch {
		return 0
	}
	f.names, f.gens = f.ready.candidates(f.names, f.gens)
	if len(f.names) == 0 {
		return 0
	}
	return room
}

// wait blocks until there may be something to do: an outcome, a wake-up, a look due, a stop.
func (f *fetcher) wait(timer *time.Timer, fetching bool) {
	d := time.Hour
	if fetching {
		d = time.Until(f.ready.nextScan())
	}
	if a := f.r.acker; len(a.counts) > 0 {
		d = min(d, time.Until(a.lastStats.Add(statsEvery)))
	}
	if d <= 0 {
		return
	}
	timer.Reset(d)
	stopped := f.stopped
	if !fetching {
		stopped = nil
	}
	select {
	case op := <-f.r.acker.in:
		f.r.acker.pending = append(f.r.acker.pending, op)
		f.received(1)
	case <-f.ready.wake:
	case <-timer.C:
	case <-stopped:
	case <-f.r.acker.closed:
	}
	if !timer.Stop() {
		select {
		case <-timer.C:
		default:
		}
	}
}

// sleep waits d unless the acker closes first; it reports whether it slept the whole time.
func (f *fetcher) sleep(timer *time.Timer, d time.Duration) bool {
	timer.Reset(d)
	defer timer.Stop()
	select {
	case <-f.r.acker.closed:
		return false
	case <-timer.C:
		return true
	}
}

// exchange makes one round trip: it writes the pending outcomes (and stats when due) and fetches up
// to n jobs from the candidates, then hands the jobs to the workers.
func (f *fetcher) exchange(n int) error {
	r, a, x := f.r, f.r.acker, &f.x
	x.reset()
	if n > 0 {
		f.shares = f.ready.sampler.shares(f.names, n, f.shares)
		for i, name := range f.names {
			x.fetch = append(x.fetch, fetchShare{q: r.queues[name].args, share: f.shares[i]})
		}
	}
	x.ops = a.pending
	now := time.Now()
	if a.statsDue(now) {
		a.addStats(x, now)
	}
	err := r.wp.store.runExchange(r.ctx, r.boxedPoolID, x)
	if err != nil {
		// The outcomes stay pending and are written again: one already applied is then found not
		// held and left alone. Jobs that a lost reply fetched are put back by the sweep. The stats
		// of a failed round trip are dropped rather than risk counting them twice.
		return err
	}
	a.written(x, now)
	a.pending = a.pending[:0]
	if n == 0 {
		return nil
	}
	f.ready.fetched(f.names, f.gens, x.status)
	k := 0
	for g := range f.names {
		c, _ := x.counts[g].(int64)
		q := r.queues[f.names[g]]
		for ; c > 0 && k < len(x.jobs); c-- {
			raw, _ := x.jobs[k].([]byte)
			j := &Job{raw: raw, rawArg: x.jobs[k], q: q}
			k++
			f.sweeper.hold(j)
			f.held++
			f.jobs <- j // never blocks: the channel holds as many jobs as the pool has room for
		}
	}
	return nil
}
