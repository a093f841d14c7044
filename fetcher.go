package work

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// fetcher is the pool's loop: the goroutine that moves jobs from Redis to the workers. Each round
// trip (store.runExchange) fetches as many jobs as the pool has room for from the ready queues
// (readiness), split between them by priority (prioritySampler), and carries along the outcomes
// pending in the pool's outcome queue when no write of them is under way; the jobs go to the workers
// through the jobs channel. An idle pool sends nothing until a wake-up or a look gives it something
// to do.
//
// The pool's room (room.go) is counted in jobs held: a job is held from its fetch until its worker
// hands over its outcome. A pool holds a job for each worker, and fetches ahead only as many more as
// its workers will start within about aheadWait, judged by the mean run time of its jobs: many for
// jobs of microseconds (the batches save round trips), a few for jobs of milliseconds, none for
// longer jobs, which are then fetched only by a free worker, so that no job waits in a busy pool
// while another pool that serves its name idles, and no key's slot is held by a job that has not
// started. If the fetched-ahead jobs wait longer than handBackAfter all the same, no worker taking
// a job meanwhile (the workers turned to long jobs), the pool hands them back to the front of their
// queues, for any pool to take, fetches again only once they are there (so that its next fetch
// does not take the jobs behind them first), and fetches ahead no more until one of its jobs ends.
type fetcher struct {
	p       *fetcherParams
	room    *room // p.room
	jobs    chan *Job
	ready   *readiness
	sweeper *sweeper
	// handBackAfter is how long a fetched-ahead job may wait for a worker (the constant; tests that
	// need jobs to stay fetched ahead raise it).
	handBackAfter time.Duration

	// mu is held by whoever fetches (the loop, or the subscription's goroutine in fetchNow) and by
	// the sweep: it guards the fetch state below and keeps a sweep from running during a fetch.
	mu sync.Mutex

	lastWake atomic.Int64 // when fetchNow last returned, Unix ns: wake-ups coming in a stream

	// What waits in the jobs channel: pushed counts the jobs put in it, taken those workers took out,
	// and batches when each fetch's jobs went in (oldest first), so the loop knows how long the
	// job at its head has waited. batchMu guards pushed and batches, and is held by a fetch from
	// its send to its jobs' push into the channel: a hand-off takes it, not mu, which a sweep holds
	// while it waits for the hand-offs in flight.
	batchMu sync.Mutex
	pushed  uint64
	taken   atomic.Uint64
	batches []fetchedBatch
	// Jobs fetched while hand-offs made before the fetch were still on their way: they wait, held,
	// until the pool has read behindUntil hand-offs (or markerWait passed for fetch behindSeq).
	behind      []*Job
	behindUntil int64
	behindSeq   uint64
	behindTimer bool // a release of behind is scheduled
	// The count of hand-offs made to the pool when the last sweep ran: it may have put back the
	// jobs of those the pool had not read.
	sweptHandOffs int64
	// The hand-off count a fetch saw ahead of what the pool had read, and when: those messages are
	// taken for lost once markerWait has passed (see forgetLostHandOffs).
	awaitCount int64
	awaitSince time.Time
	// lastTaken is taken as the loop last saw it change, at lastTakenAt: how long the workers have
	// taken no job.
	lastTaken   uint64
	lastTakenAt time.Time

	handOffHook atomic.Pointer[func()] // called before a hand-off is taken (nil but in tests)

	// The markers of flushes waiting for them, by token.
	markMu  sync.Mutex
	marks   map[string]chan struct{}
	markSeq atomic.Uint64

	stopped chan struct{} // closed by stop: fetch no more
	done    chan struct{} // closed when the loop ends

	// Buffers reused from round trip to round trip.
	x      rdb.Exchange
	names  []string
	gens   []uint64
	shares []int
}

// fetcherParams are what the fetcher and its parts (readiness, sweeper) use: the pool run's context
// (done when the pool stops), the store, the logger, the pool's ID and the options that pace its
// looks, the job set the pool serves, the pool's room (which it reserves from for each job it
// fetches) and outcome queue (whose pending outcomes a fetch carries along, and where the outcomes of jobs
// it hands back go), the alarm it sets when a look finds due work, the cancel of a running job
// that a wake-up message asks for, and the pool's lease, without which it fetches and hands out
// nothing.
type fetcherParams struct {
	ctx               context.Context
	store             *rdb.Store
	logger            *slog.Logger
	poolID            string
	sleepBackoffs     []int64
	heartbeatInterval time.Duration
	strictPriority    bool
	served            func() *jobSet
	room              *room
	out               *outcomeQueue
	alarm             *dueAlarm
	cancelJob         func(jobID string)
	lease             *lease

	boxedPoolID interface{} // poolID as a script argument, boxed once
}

// fetchedBatch is one fetch's jobs in the channel: they were put in at at, and the last of them is
// job number end (counted by pushed).
type fetchedBatch struct {
	end uint64
	at  time.Time
}

// aheadWait is about how long a job fetched ahead waits for a worker; handBackAfter how long it may
// wait before the pool hands it back. quickHeld is the most jobs a pool holds while its jobs are
// quick, and quickAhead the fetch-ahead of a small pool of quick jobs: its batches are then large
// enough that round trips do not bound it.
const (
	aheadWait     = 5 * time.Millisecond
	handBackAfter = 10 * time.Millisecond
	quickAhead    = 16
	quickHeld     = 128
)

// quickCapacity is the most jobs a pool of the given concurrency holds, however quick its jobs: up
// to 14 per worker, a job it holds then waiting for a worker some 14 ms at most.
func quickCapacity(concurrency int) int {
	base := 2 * concurrency
	return base + max(quickAhead, min(quickHeld-base, 6*base))
}

// streamGap is how soon after the last one a wake-up counts as part of a stream: one read while a
// fetch was under way comes at once, and a round trip on a busy machine takes about this long.
const streamGap = 500 * time.Microsecond

func newFetcher(p fetcherParams) *fetcher {
	p.boxedPoolID = p.poolID
	f := &fetcher{
		p:             &p,
		room:          p.room,
		jobs:          make(chan *Job, p.room.capacity),
		sweeper:       nil,
		handBackAfter: handBackAfter,
		stopped:       make(chan struct{}),
		done:          make(chan struct{}),
		marks:         make(map[string]chan struct{}),
	}
	p.out.handOffRoom = f.handOffRoom
	f.sweeper = newSweeper(f.p, f.flush, func() bool { return f.ready.subscribed.Load() }, f.swept)
	f.ready = newReadiness(f.p, f.fetchNow, f.handOff, f.flush)
	return f
}

func (f *fetcher) start() {
	go f.ready.subscribe(f.stopped)
	go f.loop()
}

// stop ends fetching and the subscription, and puts jobs fetched but not started back at the front
// of their queues.
func (f *fetcher) stop() {
	// No hand-off may come after the subscription ends: the pool stops registering for them, leaves
	// the idle sets and takes those on their way, which then go back with the jobs still waiting.
	f.p.out.leaving.Store(true)
	f.p.out.regGate.Lock()
	f.p.out.settleQuiet()
	if f.flush(true) {
		// None can come any more: its count goes (a pool that dies leaves it to its 24 h TTL).
		if err := f.p.store.ForgetHandOffs(f.p.ctx, f.p.poolID); err != nil {
			f.p.logger.Debug("work: deleting the pool's count of hand-offs", "err", err)
		}
	}
	f.p.out.regGate.Unlock()
	close(f.stopped)
	<-f.done
	// Holding mu, no fetch is under way (one in fetchNow ends first) and none starts: the channel
	// holds every job fetched and not started.
	f.mu.Lock()
	f.batchMu.Lock()
	f.pushBehindLocked(true) // they go back in their order, after what they waited behind
	f.batchMu.Unlock()
	f.requeueWaiting()
	f.mu.Unlock()
	f.ready.releaseDrains()
}

// requeueWaiting puts the jobs waiting in the channel back at the fetch end of their queues, so
// that they are the next ones out again, in the order they were fetched, and returns them.
func (f *fetcher) requeueWaiting() []*Job {
	var waiting []*Job
	for {
		select {
		case j := <-f.jobs:
			waiting = append(waiting, j)
			continue
		default:
		}
		break
	}
	f.taken.Add(uint64(len(waiting)))
	// Each goes to the fetch end: the last fetched goes first, so that the first ends up there. Its
	// outcome is pending before its room is freed, so a Drain cannot take the pool for finished.
	for i := len(waiting) - 1; i >= 0; i-- {
		j := waiting[i]
		f.p.out.post(rdb.FinishOp{Kind: rdb.OpRequeue, Q: j.q.args, Entry: j.rawArg, Ref: j})
		f.room.release()
	}
	return waiting
}

// requeueWait bounds how long a hand-back waits for its jobs to be back in their queues.
const requeueWait = time.Second

// awaitRequeued waits, up to requeueWait, until the outcome queue has written the requeues of jobs:
// the pool's next fetch must find them back at the front of their queues, or it would take the
// jobs behind them first and run a queue's (or a key's) jobs out of order. The caller holds mu, so
// no fetch of the pool starts meanwhile.
func (f *fetcher) awaitRequeued(jobs []*Job) {
	deadline := time.Now().Add(requeueWait)
	for f.p.out.anyHeld(jobs) && !f.isStopped() && time.Now().Before(deadline) {
		time.Sleep(100 * time.Microsecond)
	}
}

func (f *fetcher) isStopped() bool {
	select {
	case <-f.stopped:
		return true
	default:
		return false
	}
}

// take hands a worker the next fetched job; false once the pool stopped fetching. A job fetched
// before the pool found itself reaped (see lease) is not handed out: it may be another pool's now.
func (f *fetcher) take() (*Job, bool) {
	for {
		j, ok := <-f.jobs
		if !ok {
			return nil, false
		}
		f.taken.Add(1)
		if !f.p.lease.current(j) {
			f.drop(j)
			continue
		}
		return j, true
	}
}

// admit reports whether a worker may start j now, the last thing before its handler runs (the
// process may have been frozen since take): only while the pool's lease is fresh, waiting for a
// heartbeat if it is not, and only if j was fetched in the lease's current epoch. A job not admitted
// no longer holds its room.
func (f *fetcher) admit(j *Job) bool {
	if !f.p.lease.wait(f.stopped) {
		// The pool stops: the job goes back as the ones still waiting do (nothing happens if it is
		// no longer the pool's).
		f.p.out.post(rdb.FinishOp{Kind: rdb.OpRequeue, Q: j.q.args, Entry: j.rawArg, Ref: j})
		f.room.release()
		return false
	}
	if !f.p.lease.current(j) {
		f.drop(j)
		return false
	}
	return true
}

// current reports whether j was fetched since the pool last found itself reaped.
func (f *fetcher) current(j *Job) bool { return f.p.lease.current(j) }

// drop ends the hold of a job that is no longer the pool's, with no outcome: its reaper put it back.
// Should it have been fetched after the reap all the same, it is in the pool's in-progress list and
// no longer held, so the sweep puts it back.
func (f *fetcher) drop(j *Job) {
	f.p.out.unhold(j)
	f.room.release()
	f.p.logger.Info("work: dropped a job fetched before the pool was taken for dead", "job_name", j.q.name)
}

// ran records a handler's run time in the moving mean that decides how far ahead to fetch.
func (f *fetcher) ran(d time.Duration) { f.room.ran(d) }

// headWait reports how long the job at the head of the jobs channel has waited for a worker, if
// one waits. The caller holds mu.
func (f *fetcher) headWait(now time.Time) (time.Duration, bool) {
	taken := f.taken.Load()
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	i := 0
	for i < len(f.batches) && f.batches[i].end <= taken {
		i++
	}
	if i > 0 {
		f.batches = append(f.batches[:0], f.batches[i:]...)
	}
	if len(f.batches) == 0 {
		return 0, false
	}
	return now.Sub(f.batches[0].at), true
}

// handBack puts every job waiting in the channel back at the front of its queue, when the one at
// its head has waited f.handBackAfter and no worker took a job meanwhile: the workers are all busy
// with longer jobs than the pool judged, and another pool may be idle. (A pool whose workers still
// take jobs, only slower, on a loaded machine say, keeps them: they are about to start.) It returns
// how long until a hand-back could be due, or 0 when no job waits. The caller holds mu.
func (f *fetcher) handBack(now time.Time) time.Duration {
	wait, ok := f.headWait(now)
	if !ok {
		return 0
	}
	if taken := f.taken.Load(); taken != f.lastTaken {
		f.lastTaken, f.lastTakenAt = taken, now
	}
	if d := f.handBackAfter - min(wait, now.Sub(f.lastTakenAt)); d > 0 {
		return d
	}
	handed := f.requeueWaiting()
	f.awaitRequeued(handed)
	n := len(handed)
	f.batchMu.Lock()
	f.batches = f.batches[:0]
	f.batchMu.Unlock()
	if n > 0 {
		f.room.handedBack()
		f.p.logger.Debug("work: handed back jobs that waited for a busy worker", "jobs", n)
	}
	return 0
}

func (f *fetcher) loop() {
	defer close(f.done)
	logger := f.p.logger
	errWait := 10 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for !f.isStopped() {
		f.mu.Lock() // the sweeper's state is under mu: a test sweeps from its own goroutine
		if f.sweeper.due() {
			f.sweeper.sweep()
		}
		f.mu.Unlock()
		if f.ready.scanDue() {
			if err := f.ready.scan(); err != nil {
				logger.Error("work: looking for jobs", "err", err)
				f.sleep(timer, errWait)
				errWait = min(2*errWait, 5*time.Second)
				continue
			}
		}
		f.mu.Lock()
		handBackIn := f.handBack(time.Now())
		n, roomBound := f.want()
		var err error
		if n > 0 {
			err = f.exchange(n)
		}
		f.mu.Unlock()
		if n == 0 {
			if f.room.held.Load() == 0 && len(f.jobs) == 0 {
				if f.ready.draining() {
					f.p.out.settleQuiet() // a Drain does not wait for the confirm's timer
				}
				if f.p.out.idle() && f.ready.checkDrained() {
					continue
				}
			}
			f.wait(timer, roomBound, handBackIn)
			continue
		}
		if err != nil {
			logger.Error("work: fetching jobs", "err", err)
			f.sleep(timer, errWait)
			errWait = min(2*errWait, 5*time.Second)
			continue
		}
		errWait = 10 * time.Millisecond
	}
}

// fetchNow fetches at once on the caller's goroutine (the subscription's, when a wake-up names a
// queue), unless wake-ups come in a stream or the loop is fetching: then the loop is poked and
// fetches itself. Fetching where a lone wake-up arrives spares the hand-off to the loop. But while
// that goroutine waits for a fetch it reads no wake-up, so under a steady load the next ones would
// wait for it and each fetch one queue's jobs, often finding them taken already; poked instead, the
// loop takes every queue they made ready in one fetch, and sooner.
func (f *fetcher) fetchNow() {
	now := time.Now().UnixNano()
	stream := now-f.lastWake.Load() < int64(streamGap)
	defer func() { f.lastWake.Store(time.Now().UnixNano()) }()
	if stream || !f.mu.TryLock() {
		f.ready.poke()
		return
	}
	n := 0
	var err error
	if !f.isStopped() {
		if n, _ = f.want(); n > 0 {
			err = f.exchange(n)
		}
	}
	f.mu.Unlock()
	if err != nil || (n > 0 && (f.room.free() <= 0 || len(f.jobs) > 0 || f.ready.anyReady())) {
		// The loop retries after an error, fetches the rest once room comes back, and hands back
		// the jobs fetched ahead should they wait too long. A queue still ready may hold more: the
		// loop must look even when the workers have already run what this fetch took, since their
		// ends only wake a loop that waits for room.
		f.ready.poke()
	}
}

// handOffRoom returns the hand-offs the pool has read and then its room, for a write of outcomes:
// read in that order, a hand-off read between them makes the room one less, never one more.
func (f *fetcher) handOffRoom() (int64, int) {
	h := f.ready.handedIn.Load()
	return h, f.room.free()
}

// finished ends a job's hold on the pool's room without an outcome (a worker's, when the pool was
// abandoned), waking the loop if it waits for room.
func (f *fetcher) finished() { f.room.release() }

// want returns how many jobs to fetch now: the room the pool has if some queue is ready. While
// fetched jobs still wait for a worker, it waits for room for a batch. roomBound reports that room
// is what it waits for.
func (f *fetcher) want() (n int, roomBound bool) {
	if !f.p.lease.fresh(time.Now()) {
		f.p.lease.askBeat()
		return 0, false
	}
	// The sampler is only used under mu: it takes the priorities of the set served now.
	f.ready.sampler.priority = f.p.served().priority
	f.names, f.gens = f.ready.candidates(f.names, f.gens)
	if len(f.names) == 0 {
		return 0, false
	}
	if !f.roomFor() {
		return 0, true
	}
	return f.room.free(), false
}

// roomFor reports whether the pool has room enough to fetch: any room while its workers are starved,
// room for a batch while fetched jobs still wait for one.
func (f *fetcher) roomFor() bool {
	limit, concurrency := f.room.limit(), f.room.concurrency
	room := limit - int(f.room.held.Load())
	// The batch waited for is at most half the jobs fetched ahead, so that the next fetch is under
	// way while the other half still waits for workers: with more, workers would idle for it.
	minBatch := max(1, min(concurrency/2, limit/4, (limit-concurrency)/2))
	return room > 0 && (len(f.jobs) == 0 || room >= minBatch)
}

// wait blocks until there may be something to do: a wake-up, a look due, a stop, a hand-back due
// (in handBackIn, when positive), when roomBound room for a fetch, and while a Drain waits every
// outcome written.
func (f *fetcher) wait(timer *time.Timer, roomBound bool, handBackIn time.Duration) {
	d := time.Until(f.ready.nextScan())
	if handBackIn > 0 {
		d = min(d, handBackIn)
	}
	if d <= 0 {
		return
	}
	if roomBound {
		f.room.freed.watch(true)
		defer f.room.freed.watch(false)
		if f.roomFor() { // a job finished since want looked
			return
		}
	}
	timer.Reset(d)
	select {
	case <-f.ready.wake:
	case <-f.p.lease.next(): // a heartbeat: the lease may have been stale
	case <-f.room.freed.wait():
	case <-f.p.out.allWritten.wait(): // watched while a Drain waits (see readiness.drain)
	case <-timer.C:
	case <-f.stopped:
	}
	if !timer.Stop() {
		select {
		case <-timer.C:
		default:
		}
	}
}

// sleep waits d unless the fetcher stops first.
func (f *fetcher) sleep(timer *time.Timer, d time.Duration) {
	timer.Reset(d)
	defer timer.Stop()
	select {
	case <-f.stopped:
	case <-timer.C:
	}
}

// exchange makes one round trip: it fetches up to n jobs from the candidates, carrying the outcome queue's
// pending outcomes along when no write of outcomes is under way, then hands the jobs to the workers.
func (f *fetcher) exchange(n int) error {
	p, x := f.p, &f.x
	x.Reset()
	set := p.served()
	f.shares = f.ready.sampler.shares(f.names, n, f.shares)
	for i, name := range f.names {
		x.Fetch = append(x.Fetch, rdb.FetchShare{Q: set.queues[name].args, Share: f.shares[i]})
	}
	// The epoch before the round trip: should a heartbeat find the pool reaped meanwhile, the jobs
	// may have been fetched before the reap.
	epoch := p.lease.epoch.Load()
	batch := p.out.takeForCarry()
	x.Ops = batch
	x.NoWait = p.out.noHandOffs()
	// A hand-off waits until this fetch's jobs are in the channel: a job handed to the pool after
	// this fetch took the queue's last ones must not start before them.
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	x.HandedIn = f.ready.handedIn.Load()
	x.Room = f.room.free()
	err := p.store.RunExchange(p.ctx, p.boxedPoolID, x)
	if batch != nil {
		p.out.carried(batch, x, err)
	}
	if err != nil {
		return err
	}
	f.ready.fetched(f.names, f.gens, x.Status)
	// Jobs handed to the pool before this fetch ran and not read yet go first (the fetch left room
	// for them): until they are read, this fetch's jobs wait, held, behind them.
	f.forgetLostHandOffs(x.Handed)
	behind := x.Handed > f.ready.handedIn.Load() || len(f.behind) > 0
	from := f.pushed
	k := 0
	for g := range f.names {
		c, _ := x.Counts[g].(int64)
		q := set.queues[f.names[g]]
		for ; c > 0 && k < len(x.Jobs); c-- {
			raw, _ := x.Jobs[k].([]byte)
			j := &Job{raw: raw, rawArg: x.Jobs[k], q: q, epoch: epoch}
			if q.keyed {
				_, j.raw = rdb.SplitKeyedEntry(raw)
			}
			k++
			p.out.hold(j)
			f.room.reserve()
			if behind {
				f.behind = append(f.behind, j)
				continue
			}
			f.pushLocked(j)
		}
	}
	f.pushedLocked(from)
	if k > 0 {
		p.lease.holding()
	}
	if behind {
		f.behindUntil = max(f.behindUntil, x.Handed)
		// A fetch that took no job puts none behind: it arms no bound, which would be spent on
		// nothing and leave the next jobs behind without one.
		if !f.behindTimer && len(f.behind) > 0 {
			// One bound from the first job that waits, not renewed by later fetches.
			f.behindTimer = true
			f.behindSeq++
			seq := f.behindSeq
			time.AfterFunc(markerWait, func() { f.releaseBehind(seq) })
		}
		f.pushBehindLocked(false)
	}
	return nil
}

// pushLocked puts a fetched job in the jobs channel, which never blocks: the channel holds as many
// jobs as the pool has room for. The caller holds batchMu.
func (f *fetcher) pushLocked(j *Job) {
	f.jobs <- j
	f.pushed++
}

// pushedLocked records when the jobs pushed since the last call went in. The caller holds batchMu.
func (f *fetcher) pushedLocked(from uint64) {
	if f.pushed > from {
		f.batches = append(f.batches, fetchedBatch{end: f.pushed, at: time.Now()})
	}
}
