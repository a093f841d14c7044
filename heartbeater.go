package work

import (
	"context"
	"encoding/json"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// heartbeater tells Redis, every HeartbeatInterval, that the pool is alive (in the server's clock, so
// clocks of other machines do not matter), renews the pool's lease, squares the pool's concurrency
// counters with the jobs it actually holds, hands the pools whose heartbeat stopped, and those of
// this machine whose process is gone, to the reaper, and looks for waiting jobs on the fetcher's
// behalf (so an idle pool sends one command per heartbeat). A beat reads the heartbeats of the two
// live-looking pools after its own in the order of pool IDs, and of the dead and late ones before
// those (every pool's when the registered pools changed): each dead pool is seen by the two live
// ones before it, and a beat's cost does not grow with the number of pools. The pools of this
// machine it has seen it keeps, to check their processes at each beat.
//
// A pool that holds no job is idle: its heartbeat says so and declares a dead-after limit longer by
// what a slower beat adds (its recovery has nothing to wait for), and taking a job asks for a beat at
// once (lease.holding), which declares the pool busy again. An idle pool beats every idleEvery
// instead of every HeartbeatInterval, unless a pool it watches is busy (or late, or dead): that
// pool's jobs come back as soon as if every pool beat every HeartbeatInterval.
type heartbeater struct {
	heartbeaterParams
	hb    rdb.PoolHeartbeat
	reap  *reaper
	beats int
	now   chan struct{} // a registration on the started pool asks for a beat at once

	idleEvery time.Duration // the beat of an idle pool; no longer than interval: never idle
	watch     bool          // the last beat found a watched pool busy, late or dead, or it failed
	slow      atomic.Bool   // the last beat set the next one idleEvery after it

	mu      sync.Mutex              // one beat at a time: the loop's, or start's first
	written map[string]registration // what registerNames last wrote of each job name
	hbSet   *jobSet                 // the set hb was built from
	locals  map[string]string       // live-looking pools of this machine and PID namespace: ID -> process
}

// fullReconcileEvery is how many heartbeats apart every lock counter is recomputed from lock_info,
// which heals a counter someone else changed on a queue without a MaxConcurrency in this pool (and
// finds lock_info entries of pools that are gone); in between a heartbeat squares the queues with a
// MaxConcurrency, whose counters gate fetches (only their jobs are counted).
const fullReconcileEvery = 60

// askedBeatGap is the least time between a heartbeat and the next one a stale lease asks for.
const askedBeatGap = 250 * time.Millisecond

// heartbeaterParams are what a heartbeater uses. The pool's registry is reached through functions:
// registry returns every registered name (some perhaps not served yet), register writes a job set's
// names and limits, served returns the set the pool serves, and announced makes it serve the names
// a heartbeat has announced. looked takes what the heartbeat's look for waiting jobs found (the
// fetcher's readiness); keep, when set, leaves the heartbeat at stop for a reaper, since jobs may
// still be held. Each heartbeat Redis accepts renews lease; reaped is called when one finds that a
// reaper took the pool's jobs back.
type heartbeaterParams struct {
	ctx             context.Context
	store           *rdb.Store
	logger          *slog.Logger
	interval        time.Duration // WorkerPoolOptions.HeartbeatInterval
	deadPoolTimeout time.Duration // WorkerPoolOptions.DeadPoolTimeout
	heartbeat       rdb.PoolHeartbeat
	registry        func() *jobSet
	register        func(ctx context.Context, s *jobSet, written map[string]registration) error
	served          func() *jobSet
	announced       func(names []string)
	looked          func(rdb.ScanResult)
	keep            *atomic.Bool
	lease           *lease
	reaped          func()
	// holding reports whether the pool holds jobs, or its in-progress lists may hold entries a sweep
	// has yet to put back (a job was held since the last sweep).
	holding func() bool
}

// idleHeartbeatInterval is how often an idle pool beats: 2.5 HeartbeatIntervals, at most 5s (the
// beat of gocraft/work, and the last of the default SleepBackoffs, which its looks for waiting jobs
// keep), and never less often than HeartbeatInterval.
func idleHeartbeatInterval(interval time.Duration) time.Duration {
	return max(interval, min(5*time.Second, interval*5/2))
}

func newHeartbeater(p heartbeaterParams) *heartbeater {
	h := &heartbeater{heartbeaterParams: p, now: make(chan struct{}, 1), written: map[string]registration{},
		idleEvery: idleHeartbeatInterval(p.interval), watch: true}
	h.reap = newReaper(reaperParams{store: p.store, logger: p.logger, interval: p.interval,
		deadPoolTimeout: p.deadPoolTimeout, served: p.served})
	h.hb = p.heartbeat
	h.hb.Host, h.hb.Pid = hostname(), os.Getpid()
	self := ownIdentity()
	h.hb.Process, h.hb.Machine = self.id, self.machine
	h.reap.self = self
	return h
}

// describe fills in what the heartbeat says of the job set: every registered job name (announced
// before the pool serves it), their MaxConcurrency and the periodic jobs.
func (h *heartbeater) describe(s *jobSet) {
	if s == h.hbSet {
		return
	}
	h.hbSet = s
	h.hb.JobNames = s.names
	h.hb.MaxConcurrency = make([]uint, len(s.names))
	for i, name := range s.names {
		h.hb.MaxConcurrency[i] = s.jobTypes[name].MaxConcurrency
	}
	h.hb.PeriodicJobs = ""
	if len(s.periodic) > 0 {
		type entry struct {
			JobName string `json:"job_name"`
			Spec    string `json:"spec"`
		}
		list := make([]entry, len(s.periodic))
		for i, pj := range s.periodic {
			list[i] = entry{JobName: pj.jobName, Spec: pj.spec}
		}
		b, _ := json.Marshal(list) // strings only: cannot fail
		h.hb.PeriodicJobs = string(b)
	}
}

// announceNow asks for a heartbeat at once: the registry has job names the pool does not serve yet.
func (h *heartbeater) announceNow() {
	select {
	case h.now <- struct{}{}:
	default:
	}
}

func (h *heartbeater) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTimer(h.interval)
		defer t.Stop()
		var last time.Time
		for {
			select {
			case <-h.ctx.Done():
				return
			case <-t.C:
			case <-h.now:
			case <-h.lease.busy:
			case <-h.lease.ask:
				// The workers wait for a fresh lease; while heartbeats fail, asking again brings no
				// more than a few a second.
				if time.Since(last) < askedBeatGap {
					continue
				}
			}
			last = time.Now()
			next := h.beat()
			if !t.Stop() {
				select {
				case <-t.C:
				default:
				}
			}
			t.Reset(time.Until(last.Add(next)))
		}
	}()
}

// beat sends one heartbeat, reaps what it reports dead and returns how long after its start the next
// one is due: HeartbeatInterval, idleEvery when the pool and the pools it watches are idle, or, when
// another pool is late, the time until that pool would be dead, so that the next look comes then
// rather than at the next tick (recovery near DeadPoolTimeout instead of DeadPoolTimeout plus an
// interval). A heartbeat that names job names the pool does not serve yet makes the pool serve them.
func (h *heartbeater) beat() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	ctx, cancel := context.WithTimeout(h.ctx, h.deadPoolTimeout)
	defer cancel()
	// The names and limits of the registry go to Redis before any heartbeat names them (at the first
	// beat, and after a registration on the started pool).
	full := h.registry()
	if err := h.register(ctx, full, h.written); err != nil {
		if h.ctx.Err() == nil {
			h.logger.Error("work: registering job names", "err", err)
		}
		if full = h.hbSet; full == nil {
			full = h.served() // the first beat: the pool serves its names all the same
		}
	}
	h.describe(full)
	deadAfter := int64(h.deadPoolTimeout / time.Second)
	lateAfter := int64(h.interval/time.Second) + 1
	fullReconcile := h.beats%fullReconcileEvery == 0
	h.beats++
	var reconcile []int
	for i := range h.hb.JobNames {
		if fullReconcile || h.hb.MaxConcurrency[i] > 0 {
			reconcile = append(reconcile, i)
		}
	}
	idle := h.idleNow()
	h.hb.IdleDeadAfter = 0
	if idle {
		h.hb.IdleDeadAfter = deadAfter + int64((h.idleEvery-h.interval+time.Second-1)/time.Second)
	}
	sent := time.Now()
	h.hb.Epoch = h.lease.epoch.Load()
	res, err := h.store.Heartbeat(ctx, &h.hb, reconcile, deadAfter, lateAfter, fullReconcile)
	afterIdle := h.slow.Swap(false)
	if err != nil {
		if h.ctx.Err() == nil {
			h.logger.Error("work: heartbeat", "err", err)
		}
		h.reap.unhealthy()
		h.watch = true
		h.lease.idle.Store(false)
		return h.interval
	}
	h.hb.Registered = true
	if res.Reaped {
		h.logger.Warn("work: the pool's heartbeat had been missing past DeadPoolTimeout and its jobs were put back; " +
			"it starts none of the jobs it held and goes on with a new heartbeat")
		h.lease.lost()
		h.reaped()
	}
	h.lease.renew(sent)
	if !covers(h.served().names, full.names) {
		h.announced(full.names)
	}
	h.looked(res.Scan)
	h.reap.observe(ctx, res.Now, res.Stale, afterIdle)
	h.reap.gone(ctx, h.localPeers(res))
	h.watch = res.Watch || len(res.Stale) > 0 || res.LateAt != 0
	if idle && !h.watch {
		h.slow.Store(true)
		return h.idleEvery
	}
	if res.LateAt != 0 {
		if d := time.Duration(res.LateAt+deadAfter+1-res.Now) * time.Second; d > 0 && d < h.interval {
			return d
		}
	}
	return h.interval
}

// idleNow reports whether this beat declares the pool idle: it holds no job, and none since its
// last sweep (the first beat, which the pool sends as it starts to fetch, never is). It marks the
// lease idle before it reads what the pool holds, so that a job taken meanwhile asks for the next
// beat (lease.holding).
func (h *heartbeater) idleNow() bool {
	if h.idleEvery <= h.interval || h.beats <= 1 {
		h.lease.idle.Store(false)
		return false
	}
	h.lease.idle.Store(true)
	idle := !h.holding()
	if !idle {
		h.lease.idle.Store(false)
	}
	return idle
}

// localPeers returns the live-looking pools of this machine whose processes to check: those the
// heartbeat reported, and those an earlier one did while the registered pools stayed the same (a
// heartbeat looks at a few pools then; see heartbeat.lua). Those are given without job names, which
// may have changed since: a reap of one looks at every known job name.
func (h *heartbeater) localPeers(res rdb.HeartbeatResult) []rdb.StalePool {
	if res.Members != h.hb.Members || h.locals == nil {
		// This heartbeat looked at every pool: the pools of this machine are those it reported.
		h.locals = make(map[string]string, len(res.Peers))
	}
	h.hb.Members = res.Members
	peers := res.Peers
	seen := make(map[string]bool, len(res.Peers))
	for _, sp := range res.Peers {
		h.locals[sp.Id] = sp.Process
		seen[sp.Id] = true
	}
	for _, sp := range res.Stale {
		delete(h.locals, sp.Id)
	}
	for id, process := range h.locals {
		if !seen[id] {
			peers = append(peers, rdb.StalePool{Id: id, Process: process})
		}
	}
	return peers
}

// unregister removes the stopped pool's heartbeat the way a reaper would: anything still in its
// in-progress lists goes back to its queue and its share of the concurrency counters is released.
// After a clean stop the lists are empty; entries can remain when an acknowledgement was lost, as in
// a failover to a replica that had not received it.
func (h *heartbeater) unregister() {
	if h.keep.Load() {
		h.logger.Warn("work: pool stopped with jobs still held; another pool will put them back")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := h.store.Reap(ctx, h.hb.PoolID, h.served().names, -1)
	if err != nil {
		h.logger.Error("work: removing the pool's heartbeat", "err", err)
		return
	}
	if n > 0 {
		h.logger.Warn("work: put back jobs the stopped pool no longer held", "jobs_requeued", n)
	}
}
