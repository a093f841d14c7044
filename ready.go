package work

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// readiness is the pool's view of which of its queues may hold runnable jobs ("ready"), so that a
// fetch only names those, whatever the number of registered job names.
//
// A queue becomes ready when a wake-up message names it (an Enqueuer published it when the queue went
// from empty to non-empty, a stop or reaper put jobs back, a concurrency slot or a pause was
// released) or when a look at the queues finds it non-empty (which catches jobs pushed by other
// programs). It stops being ready when a fetch finds it empty, paused, at its MaxConcurrency or past
// its rate limit (then the next look finds it again).
//
// Looks follow SleepBackoffs: once a second while looks find work, then further apart while they find
// none, up to the last SleepBackoff. The heartbeat looks too, so an idle pool whose last SleepBackoff
// is as long as its HeartbeatInterval sends nothing but its heartbeat.
type readiness struct {
	p        *fetcherParams
	fetchNow func()                // the fetcher's fetch on a wake-up
	handOff  func(rdb.HandOff)     // the fetcher's take of a job handed to the pool
	flush    func(leave bool) bool // the fetcher's wait for the hand-offs on their way
	wake     chan struct{}         // poked when there may be something for the loop to do
	sampler  prioritySampler       // used only under the fetcher's mu

	mu       sync.Mutex
	idle     int       // consecutive looks that found no queue holding jobs
	lastLook time.Time // the last look by a scan or a heartbeat; zero: look now
	ready    map[string]bool
	gen      map[string]uint64 // bumped by each wake-up, so a stale "empty" cannot hide a new job
	warned   map[string]time.Time
	drains   []drainWaiter
	scans    uint64 // scans started
	scanned  uint64 // the number of the last scan completed
	rescan   bool   // a scan is wanted at once (Drain)
	// scannedReleases is the room's releases when the last scan completed began: a Drain needs a
	// scan that began after the last job finished (it may have enqueued another).
	scannedReleases uint64

	subscribed atomic.Bool // wake-up messages are arriving
	// handedIn counts the hand-offs the pool has read (hand_off.lua counts those made to it),
	// set to Redis's count when the subscription starts: earlier ones will not come.
	handedIn atomic.Int64
}

// drainWaiter is a Drain call waiting for a scan that started after it.
type drainWaiter struct {
	ch    chan struct{}
	after uint64
}

func newReadiness(p *fetcherParams, fetchNow func(), handOff func(rdb.HandOff), flush func(bool) bool) *readiness {
	return &readiness{
		p:        p,
		fetchNow: fetchNow,
		handOff:  handOff,
		flush:    flush,
		wake:     make(chan struct{}, 1),
		sampler:  newPrioritySampler(p.served().priority, p.strictPriority),
		ready:    make(map[string]bool),
		gen:      make(map[string]uint64),
		warned:   make(map[string]time.Time),
		// A pool starts idle: the steps of SleepBackoffs serve a pool that has just run out of work.
		idle: len(p.sleepBackoffs) - 1,
	}
}

// poke wakes the pool's loop if it is waiting.
func (q *readiness) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// notify marks a queue ready (a wake-up message named it): a job name's own (keyed false), or its
// keyed jobs' (a message on the keyed wake-up channel).
func (q *readiness) notify(name string, keyed bool) {
	q.mu.Lock()
	if _, ok := q.p.served().jobTypes[name]; !ok {
		q.mu.Unlock()
		return
	}
	id := name
	if keyed {
		id = rdb.KeyedQueueID(name)
	}
	q.ready[id] = true
	q.gen[id]++
	q.mu.Unlock()
	q.fetchNow()
}

// anyReady reports whether a queue is ready: the last fetch from it gave all it was asked, or a
// wake-up named it since.
func (q *readiness) anyReady() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.ready) > 0
}

// markAllReady makes every queue ready: wake-ups may have been missed.
func (q *readiness) markAllReady() { q.markReady(q.p.served().queueIDs) }

// markReady makes the given queues ready.
func (q *readiness) markReady(ids []string) {
	q.mu.Lock()
	for _, id := range ids {
		q.ready[id] = true
		q.gen[id]++
	}
	q.mu.Unlock()
	q.poke()
}

// candidates returns the ready queues in the order to try them (weighted random by priority) and
// their wake-up generations.
func (q *readiness) candidates(names []string, gens []uint64) ([]string, []uint64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.ready) == 0 {
		return names[:0], gens[:0]
	}
	names = q.sampler.order(q.ready, names[:0])
	gens = gens[:0]
	for _, c := range names {
		gens = append(gens, q.gen[c])
	}
	return names, gens
}

// fetched takes in what a fetch found: a queue found empty, paused, at its limit, past its rate,
// broken or keyed on a server too old for keyed jobs stops being ready, unless a wake-up named it
// since the fetch began.
func (q *readiness) fetched(names []string, gens []uint64, status []interface{}) {
	q.mu.Lock()
	defer q.mu.Unlock()
	for i, name := range names {
		st, _ := status[i].(int64)
		if st == -5 && time.Since(q.warned[name]) > time.Minute {
			q.warned[name] = time.Now()
			qu := q.p.served().queues[name]
			q.p.logger.Warn("work: WRONGTYPE: a key of this queue holds the wrong type; skipping the queue until it is repaired",
				"job_name", qu.name, "keyed", qu.keyed, "keys", q.p.store.QueueKeys(qu.name, q.p.poolID, qu.keyed))
		}
		if st == -6 && time.Since(q.warned[name]) > time.Minute {
			q.warned[name] = time.Now()
			q.p.logger.Error("work: the Redis server lacks what keyed jobs need (ZMSCORE and RPOP with a count: Redis 6.2 or later, miniredis v2.30.3 or later); skipping the queue's keyed jobs",
				"job_name", q.p.served().queues[name].name)
		}
		if qu := q.p.served().queues[name]; qu != nil && (st == 0 || st == 1) {
			qu.args.Backlog.Store(st == 1)
		}
		if st == 0 || st == -1 || st == -2 || st == -4 || st == -5 || st == -6 {
			if q.gen[name] == gens[i] {
				delete(q.ready, name)
			}
		}
	}
}

func (q *readiness) backoff(i int) time.Duration {
	b := q.p.sleepBackoffs
	if i >= len(b) {
		i = len(b) - 1
	}
	return time.Duration(b[i]) * time.Millisecond
}

// scanWait is how long after a look the next one is due, given the looks in a row that found nothing.
// It is SleepBackoffs[idle], but at least the last SleepBackoff capped at a second (wake-ups make
// quicker looks pointless), and at most a second while wake-ups are not arriving. When the heartbeat
// will look before then, even an idle pool's (heartbeater.idleEvery), the scan waits a
// HeartbeatInterval longer, in case it does not.
func (q *readiness) scanWait(idle int) time.Duration {
	floor := q.backoff(len(q.p.sleepBackoffs) - 1)
	if floor <= 0 || floor > time.Second {
		floor = time.Second
	}
	d := max(q.backoff(idle), floor)
	if !q.subscribed.Load() {
		d = min(d, time.Second)
	}
	if hb := q.p.heartbeatInterval; d >= idleHeartbeatInterval(hb) {
		d += hb
	}
	return d
}

// nextScan is when the loop looks next.
func (q *readiness) nextScan() time.Time {
	q.mu.Lock()
	last, idle := q.lastLook, q.idle
	q.mu.Unlock()
	if last.IsZero() {
		return last
	}
	return last.Add(q.scanWait(idle))
}

// scanDue reports whether a look is due now (or was asked for by a Drain).
func (q *readiness) scanDue() bool {
	q.mu.Lock()
	r := q.rescan
	q.rescan = false
	q.mu.Unlock()
	return r || !time.Now().Before(q.nextScan())
}

// looked takes in what a look found: the queues holding jobs become ready, and the requeuer learns
// when the next scheduled or retry job is due.
func (q *readiness) looked(res rdb.ScanResult) {
	if res.DueIn >= 0 {
		q.p.alarm.in(time.Duration(res.DueIn) * time.Second)
	}
	// A heartbeat also looks at the queues of names it announces for the first time: those are
	// left alone until the pool serves them.
	served := q.p.served().queues
	q.mu.Lock()
	for _, id := range res.NonEmpty {
		if served[id] != nil {
			q.ready[id] = true
		}
	}
	if len(res.NonEmpty) > 0 {
		q.idle = 0
	} else {
		q.idle++
	}
	q.lastLook = time.Now()
	q.mu.Unlock()
	if len(res.NonEmpty) > 0 {
		q.poke()
	}
}

// scan looks for waiting jobs (see looked): one round trip, any number of names.
func (q *readiness) scan() error {
	q.mu.Lock()
	q.scans++
	seq := q.scans
	draining := len(q.drains) > 0
	q.mu.Unlock()
	releases := q.p.room.releases.Load()
	if draining {
		// A job handed to the pool is in its in-progress list, not in a queue: the flush takes those
		// sent before it, among them any that a job ended before releases was read enqueued.
		q.flush(false)
	}
	res, err := q.p.store.Poll(q.p.ctx, q.p.served().names)
	if err != nil {
		return err
	}
	q.looked(res)
	q.mu.Lock()
	q.scanned, q.scannedReleases = seq, releases
	q.mu.Unlock()
	return nil
}

// drain returns once the pool has found its queues empty with no job outstanding, or ctx is done.
func (q *readiness) drain(ctx context.Context) {
	d := drainWaiter{ch: make(chan struct{})}
	q.mu.Lock()
	d.after = q.scans
	q.drains = append(q.drains, d)
	q.rescan = true
	// While a Drain waits, the loop also wakes when the last outcome is written.
	q.p.out.allWritten.watch(true)
	q.mu.Unlock()
	q.poke()
	select {
	case <-d.ch:
	case <-ctx.Done():
	}
}

// draining reports whether a Drain waits.
func (q *readiness) draining() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.drains) > 0
}

// checkDrained closes the pending Drain calls that a scan has answered since they began, once no
// queue is ready; the caller has checked that every fetched job is finished and recorded. It
// reports whether a new scan is wanted at once.
func (q *readiness) checkDrained() bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.drains) == 0 || len(q.ready) != 0 {
		return false
	}
	kept := q.drains[:0]
	for _, d := range q.drains {
		// The scan must have started after the Drain call and after the last job finished (a job
		// may have enqueued another one).
		if q.scanned > d.after && q.scannedReleases == q.p.room.releases.Load() {
			close(d.ch)
		} else {
			kept = append(kept, d)
		}
	}
	q.drains = kept
	if len(kept) > 0 {
		q.rescan = true
	} else {
		q.p.out.allWritten.watch(false)
	}
	return q.rescan
}

// releaseDrains ends every pending Drain call (the pool stops).
func (q *readiness) releaseDrains() {
	q.mu.Lock()
	for _, d := range q.drains {
		close(d.ch)
	}
	q.drains = nil
	q.p.out.allWritten.watch(false)
	q.mu.Unlock()
}

// subscribe listens for wake-up messages until stopped is closed, reconnecting after errors and
// looking at every queue after each (re)connection, since messages sent meanwhile were missed.
func (q *readiness) subscribe(stopped <-chan struct{}) {
	logger := q.p.logger
	wait := 10 * time.Millisecond
	for {
		select {
		case <-stopped:
			return
		default:
		}
		subscribed, err := q.subscribeOnce(stopped)
		select {
		case <-stopped:
			return
		default:
		}
		if errors.Is(err, rdb.ErrSubscriptionTimedOut) {
			logger.Info(err.Error())
		} else if err != nil {
			logger.Warn("work: wake-up subscription lost; falling back to polling until it is back", "err", err)
		}
		if subscribed {
			wait = 10 * time.Millisecond // it worked for a while: retry soon, back off only if it keeps failing
		}
		select {
		case <-stopped:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// subscribeOnce subscribes until stopped is closed or the subscription fails; it reports whether it
// got as far as listening.
func (q *readiness) subscribeOnce(stopped <-chan struct{}) (bool, error) {
	var subscribed atomic.Bool
	ctx, cancel := context.WithCancel(q.p.ctx)
	defer cancel()
	go func() {
		select {
		case <-stopped:
		case <-ctx.Done():
		}
		cancel()
	}()
	defer func() {
		q.p.out.listening.Store(false)
		q.subscribed.Store(false)
		q.poke() // the loop may be waiting longer than it should without wake-ups
	}()
	err := q.p.store.SubscribePool(ctx, q.p.poolID, rdb.PoolEvents{
		Subscribed: func() {
			// Hand-offs sent before the subscription listened will not come. Not with ctx: this
			// may run while the pool stops and the application closes its redis.Pool, and a wait
			// for a connection that sees both cancelled panics inside redigo.
			if n, err := q.p.store.HandOffCount(context.Background(), q.p.poolID); err == nil {
				q.handedIn.Store(n)
			}
			subscribed.Store(true)
			q.subscribed.Store(true)
			q.p.out.listening.Store(true)
			// Subscribed: anything pushed before now may have been missed, and so may a
			// schedule made due sooner (looks leave schedules out: see lua/lib/scan.lua): a
			// requeuer pass learns when the next one is due.
			q.markAllReady()
			q.p.alarm.in(0)
		},
		Wake:      func(name string) { q.notify(name, false) },
		KeyedWake: func(name string) { q.notify(name, true) },
		Cancel:    q.p.cancelJob,
		// An Enqueuer scheduled a job.
		Due:     func(at int64) { q.p.alarm.at(time.Unix(at, 0)) },
		HandOff: q.handOff,
	})
	if ctx.Err() != nil {
		return subscribed.Load(), nil
	}
	return subscribed.Load(), err
}
