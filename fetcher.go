package work

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"time"
)

// fetcher moves jobs from Redis to the pool's workers, in batches.
//
// It keeps a view of which of the pool's queues may hold runnable jobs ("ready"), so a fetch only
// names those, whatever the number of registered job names. A queue becomes ready when a wake-up
// message names it (an Enqueuer published it when the queue went from empty to non-empty, a stop or
// reaper put jobs back, a concurrency slot or a pause was released) or when a look at the queues
// finds it non-empty (which catches jobs pushed by other programs). It stops being ready when a
// fetch finds it empty, paused, at its MaxConcurrency or past its rate limit (then the next look
// finds it again).
//
// Looks follow SleepBackoffs: once a second while looks find work, then further apart while they find
// none, up to the last SleepBackoff. The heartbeat looks too, so an idle pool whose last SleepBackoff
// is as long as its HeartbeatInterval sends nothing but its heartbeat.
//
// Capacity is counted in tokens: a job holds one from fetch until its worker finishes it, so the pool
// holds at most concurrency running jobs plus as many fetched ahead, and quickAhead more while its jobs
// are quick (they then wait for a worker a few milliseconds at most, and the larger batches save round
// trips); a pool of slow jobs never holds them from other pools.
type fetcher struct {
	r        *poolRun
	jobs     chan *Job
	tokens   chan struct{}
	capacity int // tokens: base + quickAhead
	base     int // the most outstanding jobs while jobs are not quick
	minBatch int
	meanRun  atomic.Int64  // moving mean of handler run times, ns
	freed    chan struct{} // poked when jobs finish

	mu       sync.Mutex
	idle     int       // consecutive looks that found no queue holding jobs
	lastLook time.Time // the last look by a scan or a heartbeat; zero: look now
	ready    map[string]bool
	gen      map[string]uint64 // bumped by each wake-up, so a stale "empty" cannot hide a new job
	warned   map[string]time.Time
	drains   []drainWaiter
	scans    uint64 // scans started
	scanned  uint64 // the number of the last scan completed
	busyAt   uint64 // scans started when a job last finished: a Drain needs a scan after that
	rescan   bool   // a scan is wanted at once (Drain)
	wake     chan struct{}
	stopped  chan struct{}
	done     chan struct{}
	sampler  prioritySampler

	outstanding int64 // jobs fetched and not yet finished (guarded by mu)

	// held is every payload fetched whose outcome is not yet written, by job name, for the sweep
	// that puts back in-progress entries the pool does not hold.
	hmu       sync.Mutex
	held      map[string]map[string]int
	touched   map[string]bool // names fetched from or finished since the heartbeat last squared them
	lastSweep time.Time
	active    bool   // fetched since the last sweep
	sweptErrs uint64 // the store's error count at the last sweep

	subscribed atomic.Bool // wake-up messages are arriving
}

// drainWaiter is a Drain call waiting for a scan that started after it.
type drainWaiter struct {
	ch    chan struct{}
	after uint64
}

// quickAhead is how many more jobs a pool fetches ahead while its jobs run in under quickRun.
const (
	quickAhead = 16
	quickRun   = time.Millisecond
)

func newFetcher(r *poolRun, base int) *fetcher {
	capacity := base + quickAhead
	f := &fetcher{
		r:        r,
		jobs:     make(chan *Job, capacity),
		tokens:   make(chan struct{}, capacity),
		capacity: capacity,
		base:     base,
		minBatch: max(1, base/4),
		freed:    make(chan struct{}, 1),
		ready:    make(map[string]bool),
		gen:      make(map[string]uint64),
		warned:   make(map[string]time.Time),
		held:     make(map[string]map[string]int),
		touched:  make(map[string]bool),
		// A pool starts idle: the steps of SleepBackoffs serve a pool that has just run out of work.
		idle:    len(r.wp.opts.SleepBackoffs) - 1,
		wake:    make(chan struct{}, 1),
		stopped: make(chan struct{}),
		done:    make(chan struct{}),
	}
	for i := 0; i < capacity; i++ {
		f.tokens <- struct{}{}
	}
	f.meanRun.Store(int64(time.Second)) // not quick until jobs have shown it
	prio := make(map[string]uint, len(r.jobTypes))
	for name, jt := range r.jobTypes {
		prio[name] = jt.Priority
	}
	f.sampler = newPrioritySampler(prio, r.wp.opts.StrictPriority)
	return f
}

func (f *fetcher) start() {
	go f.subscribe()
	go f.loop()
}

// stop ends the fetch loop and the subscription, and puts jobs fetched but not started back at the
// front of their queues.
func (f *fetcher) stop() {
	close(f.stopped)
	<-f.done
	for {
		select {
		case j := <-f.jobs:
			f.release(1)
			f.r.acker.submit(finishOp{op: "requeue", name: j.Name, raw: j.raw})
			continue
		default:
		}
		break
	}
	f.mu.Lock()
	for _, d := range f.drains {
		close(d.ch)
	}
	f.drains = nil
	f.mu.Unlock()
}

// release returns n tokens (jobs finished, or never fetched).
func (f *fetcher) release(n int) {
	f.mu.Lock()
	f.outstanding -= int64(n)
	f.busyAt = f.scans
	f.mu.Unlock()
	for i := 0; i < n; i++ {
		f.tokens <- struct{}{}
	}
	select {
	case f.freed <- struct{}{}:
	default:
	}
	if n > 0 && f.drainPending() {
		f.poke()
	}
}

func (f *fetcher) drainPending() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.drains) > 0
}

// poke wakes the fetch loop if it is waiting.
func (f *fetcher) poke() {
	select {
	case f.wake <- struct{}{}:
	default:
	}
}

// notify marks a queue ready (a wake-up message named it).
func (f *fetcher) notify(name string) {
	f.mu.Lock()
	if _, ok := f.r.jobTypes[name]; !ok {
		f.mu.Unlock()
		return
	}
	f.ready[name] = true
	f.gen[name]++
	f.mu.Unlock()
	f.poke()
}

// drain returns once the pool has found its queues empty with no job outstanding.
func (f *fetcher) drain(ctx context.Context) {
	d := drainWaiter{ch: make(chan struct{})}
	f.mu.Lock()
	d.after = f.scans
	f.drains = append(f.drains, d)
	f.rescan = true
	f.mu.Unlock()
	f.poke()
	select {
	case <-d.ch:
	case <-ctx.Done():
	}
}

func (f *fetcher) backoff(i int) time.Duration {
	b := f.r.wp.opts.SleepBackoffs
	if i >= len(b) {
		i = len(b) - 1
	}
	return time.Duration(b[i]) * time.Millisecond
}

// scanWait is how long after a look the next one is due, given the looks in a row that found nothing.
// It is SleepBackoffs[idle], but at least the last SleepBackoff capped at a second (wake-ups make
// quicker looks pointless), and at most a second while wake-ups are not arriving. When the heartbeat
// will look before then, the scan waits a HeartbeatInterval longer, in case it does not.
func (f *fetcher) scanWait(idle int) time.Duration {
	floor := f.backoff(len(f.r.wp.opts.SleepBackoffs) - 1)
	if floor <= 0 || floor > time.Second {
		floor = time.Second
	}
	d := max(f.backoff(idle), floor)
	if !f.subscribed.Load() {
		d = min(d, time.Second)
	}
	if hb := f.r.wp.opts.HeartbeatInterval; d >= hb {
		d += hb
	}
	return d
}

// nextScan is when the fetch loop looks next.
func (f *fetcher) nextScan() time.Time {
	f.mu.Lock()
	last, idle := f.lastLook, f.idle
	f.mu.Unlock()
	if last.IsZero() {
		return last
	}
	return last.Add(f.scanWait(idle))
}

// looked takes in what a look found: the queues holding jobs become ready, and the requeuer learns
// when the next scheduled or retry job is due.
func (f *fetcher) looked(res scanResult) {
	if res.dueIn >= 0 {
		f.r.requeuer.in(time.Duration(res.dueIn) * time.Second)
	}
	f.mu.Lock()
	for _, name := range res.nonEmpty {
		f.ready[name] = true
	}
	if len(res.nonEmpty) > 0 {
		f.idle = 0
	} else {
		f.idle++
	}
	f.lastLook = time.Now()
	f.mu.Unlock()
	if len(res.nonEmpty) > 0 {
		f.poke()
	}
}

// takeTouched returns the names fetched from or finished since the last call, for the heartbeat to
// square their counters.
func (f *fetcher) takeTouched() map[string]bool {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	t := f.touched
	f.touched = make(map[string]bool)
	return t
}

// touch marks names to square at the next heartbeat (again, after a heartbeat that failed).
func (f *fetcher) touch(names map[string]bool) {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	for name := range names {
		f.touched[name] = true
	}
}

func (f *fetcher) loop() {
	defer close(f.done)
	logger := f.r.wp.logger
	errWait := 10 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	for {
		if f.isStopped() {
			return
		}
		if f.sweepDue() {
			f.sweep()
		}
		if !time.Now().Before(f.nextScan()) || f.takeRescan() {
			if err := f.scan(); err != nil {
				logger.Error("work: looking for jobs", "err", err)
				if !f.sleep(timer, errWait) {
					return
				}
				errWait = min(2*errWait, 5*time.Second)
				continue
			}
		}
		cands, gens := f.candidates()
		if len(cands) == 0 {
			if f.checkDrained() {
				continue
			}
			wait := time.Until(f.nextScan())
			if wait <= 0 {
				continue
			}
			timer.Reset(wait)
			select {
			case <-f.stopped:
				return
			case <-f.wake:
			case <-timer.C:
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
			continue
		}
		n := f.acquire()
		if n == 0 {
			return
		}
		if _, err := f.fetch(cands, gens, n); err != nil {
			logger.Error("work: fetching jobs", "err", err)
			if !f.sleep(timer, errWait) {
				return
			}
			errWait = min(2*errWait, 5*time.Second)
			continue
		}
		errWait = 10 * time.Millisecond
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

// sleep waits d unless the fetcher stops first; it reports whether to go on.
func (f *fetcher) sleep(timer *time.Timer, d time.Duration) bool {
	timer.Reset(d)
	defer timer.Stop()
	select {
	case <-f.stopped:
		return false
	case <-timer.C:
		return true
	}
}

func (f *fetcher) takeRescan() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	r := f.rescan
	f.rescan = false
	return r
}

// checkDrained closes the pending Drain calls that a scan has answered since they began, once no
// queue is ready and every fetched job is finished and recorded. It reports whether a new scan is
// wanted at once.
func (f *fetcher) checkDrained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.drains) == 0 || f.outstanding != 0 || len(f.jobs) != 0 || !f.r.acker.idle() {
		return false
	}
	kept := f.drains[:0]
	for _, d := range f.drains {
		// The scan must have started after the Drain call and after the last job finished (a job
		// may have enqueued another one).
		if f.scanned > d.after && f.scanned > f.busyAt {
			close(d.ch)
		} else {
			kept = append(kept, d)
		}
	}
	f.drains = kept
	if len(kept) > 0 {
		f.rescan = true
	}
	return f.rescan
}

// scan looks for waiting jobs (see looked): one round trip, any number of names.
func (f *fetcher) scan() error {
	f.mu.Lock()
	f.scans++
	seq := f.scans
	f.mu.Unlock()
	res, err := f.r.wp.store.poll(f.r.ctx, f.r.names)
	if err != nil {
		return err
	}
	f.looked(res)
	f.mu.Lock()
	f.scanned = seq
	f.mu.Unlock()
	return nil
}

// candidates returns the ready queues in the order to try them (weighted random by priority) and
// their wake-up generations.
func (f *fetcher) candidates() ([]string, []uint64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.ready) == 0 {
		return nil, nil
	}
	cands := f.sampler.order(f.ready)
	gens := make([]uint64, len(cands))
	for i, c := range cands {
		gens[i] = f.gen[c]
	}
	return cands, gens
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
	f.mu.Lock()
	defer f.mu.Unlock()
	return limit - int(f.outstanding)
}

// acquire takes at least one token, and more while fetched jobs are still waiting for a worker (so
// fetches are batched under load, and immediate when the workers are starved), within the room the
// pool has. It returns 0 when the fetcher stops.
func (f *fetcher) acquire() int {
	n := 0
	for n == 0 {
		select {
		case <-f.tokens:
			n = 1
		case <-f.stopped:
			return 0
		}
		if f.room() < 1 {
			// Jobs turned slow while the pool held quick ones ahead: wait until it holds fewer.
			f.tokens <- struct{}{}
			n = 0
			select {
			case <-f.freed:
			case <-f.stopped:
				return 0
			}
		}
	}
	room := f.room()
	for {
		for n < room {
			select {
			case <-f.tokens:
				n++
				continue
			default:
			}
			break
		}
		if n >= f.minBatch || n >= room || len(f.jobs) == 0 {
			return n
		}
		select {
		case <-f.tokens:
			n++
		case <-f.stopped:
			f.putTokens(n)
			return 0
		}
	}
}

func (f *fetcher) putTokens(n int) {
	for i := 0; i < n; i++ {
		f.tokens <- struct{}{}
	}
}

// fetch runs one fetch of up to n jobs, updates the ready view, and hands the jobs to the workers.
func (f *fetcher) fetch(cands []string, gens []uint64, n int) (int, error) {
	r := f.r
	rates := make([]rateLimit, len(cands))
	for i, name := range cands {
		if rl := r.jobTypes[name].RateLimit; rl.Jobs > 0 && rl.Period > 0 {
			rates[i] = rateLimit{jobs: rl.Jobs, periodMs: max(rl.Period.Milliseconds(), 1)}
		}
	}
	res, err := r.wp.store.fetch(r.ctx, r.poolID, cands, rates, n)
	if err != nil {
		f.putTokens(n)
		if errors.Is(err, context.Canceled) {
			return 0, nil
		}
		return 0, err
	}
	if len(res.status) != len(cands) || len(res.counts) != len(cands) {
		f.putTokens(n)
		return 0, fmt.Errorf("work: fetch: reply for %d queues, asked %d", len(res.status), len(cands))
	}
	f.mu.Lock()
	for i, name := range cands {
		if res.status[i] == -5 && time.Since(f.warned[name]) > time.Minute {
			f.warned[name] = time.Now()
			r.wp.logger.Warn("work: WRONGTYPE: a key of this queue holds the wrong type; skipping the queue until it is repaired",
				"job_name", name, "keys", []string{r.wp.store.ks.jobs(name), r.wp.store.ks.lock(name),
					r.wp.store.ks.lockInfo(name), r.wp.store.ks.maxConcurrency(name), r.wp.store.ks.rate(name)})
		}
		if st := res.status[i]; st == 0 || st == -1 || st == -2 || st == -4 || st == -5 {
			if f.gen[name] == gens[i] {
				delete(f.ready, name)
			}
		}
	}
	f.outstanding += int64(len(res.jobs))
	f.mu.Unlock()
	f.hold(cands, res)
	if unused := n - len(res.jobs); unused > 0 {
		f.putTokens(unused)
	}
	if len(res.jobs) == 0 {
		return 0, nil
	}
	jobs := f.decode(cands, res)
	for _, j := range jobs {
		f.jobs <- j // never blocks: the channel holds as many jobs as there are tokens
	}
	return len(res.jobs), nil
}

// hold records fetched payloads as held until their outcome is written (unhold).
func (f *fetcher) hold(cands []string, res fetchResult) {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	f.active = f.active || len(res.jobs) > 0
	k := 0
	for i, name := range cands {
		// The heartbeat squares the queues jobs came from, and those with a key of the wrong type.
		if res.counts[i] > 0 || res.status[i] == -5 {
			f.touched[name] = true
		}
		for c := int64(0); c < res.counts[i]; c++ {
			m := f.held[name]
			if m == nil {
				m = make(map[string]int)
				f.held[name] = m
			}
			m[string(res.jobs[k])]++
			k++
		}
	}
}

// unhold forgets payloads whose outcome was written (or given up on).
func (f *fetcher) unhold(ops []finishOp) {
	f.hmu.Lock()
	defer f.hmu.Unlock()
	for i := range ops {
		f.touched[ops[i].name] = true
		m := f.held[ops[i].name]
		key := string(ops[i].raw)
		if m[key] > 1 {
			m[key]--
		} else {
			delete(m, key)
		}
	}
}

// sweepEvery is how often the pool looks for in-progress entries it does not hold, when it fetched
// jobs or a Redis call failed since the last look: those are what leave such entries (a fetch or an
// acknowledgement applied whose reply was lost, a failover). Otherwise it looks every slowSweepEvery.
func (f *fetcher) sweepEvery() time.Duration { return 2 * f.r.wp.opts.HeartbeatInterval }

const slowSweepEvery = 5 * time.Minute

func (f *fetcher) sweepDue() bool {
	since := time.Since(f.lastSweep)
	if since < f.sweepEvery() {
		return false
	}
	f.hmu.Lock()
	active := f.active
	f.hmu.Unlock()
	return active || f.r.wp.store.errs.Load() != f.sweptErrs || since >= slowSweepEvery
}

// sweep puts back the in-progress entries the pool does not hold. It runs on the fetch loop, so no
// fetch is under way; payloads stay held until their outcome is written, so a pending acknowledgement
// is not mistaken for a lost one.
func (f *fetcher) sweep() {
	f.lastSweep = time.Now()
	f.sweptErrs = f.r.wp.store.errs.Load()
	f.hmu.Lock()
	f.active = false
	held := make(map[string][][]byte, len(f.held))
	for name, m := range f.held {
		for p, c := range m {
			for i := 0; i < c; i++ {
				held[name] = append(held[name], []byte(p))
			}
		}
	}
	f.hmu.Unlock()
	n, err := f.r.wp.store.sweep(f.r.ctx, f.r.poolID, f.r.names, held)
	if err != nil {
		if f.r.ctx.Err() == nil {
			f.r.wp.logger.Error("work: looking for in-progress jobs the pool does not hold", "err", err)
		}
		return
	}
	if n > 0 {
		f.r.wp.logger.Warn("work: put back in-progress jobs whose fetch reply was lost", "jobs_requeued", n)
	}
}

// decode turns fetched payloads into jobs. A payload that cannot run (it does not decode, or names
// another job than its queue) goes straight to the dead set with the reason and its bytes.
func (f *fetcher) decode(cands []string, res fetchResult) []*Job {
	r := f.r
	jobs := make([]*Job, 0, len(res.jobs))
	k := 0
	for i, name := range cands {
		for c := int64(0); c < res.counts[i]; c++ {
			raw := res.jobs[k]
			k++
			job, err := decodeJob(raw)
			if err == nil && job.Name != name {
				err = fmt.Errorf("job name %q does not match its queue %q", job.Name, name)
			}
			if err != nil {
				r.wp.logger.Error("work: payload sent to the dead set", "job_name", name, "err", err)
				r.acker.submit(deadLetterOp(r.wp.store.ks, name, raw, err))
				f.release(1)
				continue
			}
			jobs = append(jobs, job)
		}
	}
	return jobs
}

// subscribe listens for wake-up messages until the fetcher stops, reconnecting after errors and
// looking at every queue after each (re)connection, since messages sent meanwhile were missed.
func (f *fetcher) subscribe() {
	logger := f.r.wp.logger
	wait := 10 * time.Millisecond
	for !f.isStopped() {
		subscribed, err := f.subscribeOnce()
		if f.isStopped() {
			return
		}
		if errors.Is(err, errSubscriptionTimedOut) {
			logger.Info(err.Error())
		} else if err != nil {
			logger.Warn("work: wake-up subscription lost; falling back to polling until it is back", "err", err)
		}
		if subscribed {
			wait = 10 * time.Millisecond // it worked for a while: retry soon, back off only if it keeps failing
		}
		select {
		case <-f.stopped:
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, 5*time.Second)
	}
}

// subscribeOnce subscribes until the fetcher stops or the subscription fails; it reports whether it
// got as far as listening.
func (f *fetcher) subscribeOnce() (bool, error) {
	var subscribed atomic.Bool
	ctx, cancel := context.WithCancel(f.r.ctx)
	defer cancel()
	go func() {
		select {
		case <-f.stopped:
		case <-ctx.Done():
		}
		cancel()
	}()
	ks := f.r.wp.store.ks
	cancelCh, dueCh := ks.cancelChannel(), ks.dueChannel()
	defer func() {
		f.subscribed.Store(false)
		f.poke() // the fetch loop may be waiting longer than it should without wake-ups
	}()
	err := f.r.wp.store.backend.Subscribe(ctx, []string{ks.wakeChannel(), cancelCh, dueCh},
		func() {
			subscribed.Store(true)
			f.subscribed.Store(true)
			// Subscribed: anything pushed before now may have been missed.
			f.mu.Lock()
			for _, name := range f.r.names {
				f.ready[name] = true
				f.gen[name]++
			}
			f.mu.Unlock()
			f.poke()
		},
		func(channel string, data []byte) {
			switch channel {
			case cancelCh:
				f.r.cancelJob(string(data))
			case dueCh:
				// An Enqueuer scheduled a job: its run-at, in epoch seconds.
				if at, err := strconv.ParseInt(string(data), 10, 64); err == nil {
					f.r.requeuer.at(time.Unix(at, 0))
				}
			default:
				f.notify(string(data))
			}
		})
	if ctx.Err() != nil {
		return subscribed.Load(), nil
	}
	return subscribed.Load(), err
}
