package work

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// heartbeater tells Redis, every HeartbeatInterval, that the pool is alive (in the server's clock, so
// clocks of other machines do not matter), squares the pool's concurrency counters with the jobs it
// actually holds, hands the pools whose heartbeat stopped to the reaper, and looks for waiting jobs
// on the fetcher's behalf (so an idle pool sends one command per heartbeat).
type heartbeater struct {
	r     *poolRun
	hb    rdb.PoolHeartbeat
	reap  *reaper
	keep  atomic.Bool // leave the heartbeat in place at stop: jobs may still be held
	beats int
	now   chan struct{} // a registration on the started pool asks for a beat at once

	mu      sync.Mutex         // one beat at a time: the loop's, or start's first
	written map[string][2]uint // what registerNames last wrote of each job name
	hbSet   *jobSet            // the set hb was built from
}

// fullReconcileEvery is how many heartbeats apart every lock counter is recomputed from lock_info,
// which heals a counter someone else changed on a queue without a MaxConcurrency in this pool (and
// finds lock_info entries of pools that are gone); in between a heartbeat squares the queues with a
// MaxConcurrency, whose counters gate fetches (only their jobs are counted).
const fullReconcileEvery = 60

func newHeartbeater(r *poolRun) *heartbeater {
	h := &heartbeater{r: r, reap: newReaper(r), now: make(chan struct{}, 1), written: map[string][2]uint{}}
	h.hb = rdb.PoolHeartbeat{
		PoolID:      r.poolID,
		StartedAt:   r.startedAt,
		Concurrency: r.wp.concurrency,
		WorkerIDs:   r.workerIDs(),
		Host:        hostname(),
		Pid:         os.Getpid(),
	}
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
		t := time.NewTicker(h.r.wp.opts.HeartbeatInterval)
		defer t.Stop()
		extra := time.NewTimer(time.Hour)
		extra.Stop()
		defer extra.Stop()
		for {
			select {
			case <-h.r.ctx.Done():
				return
			case <-t.C:
			case <-extra.C:
			case <-h.now:
			}
			if d := h.beat(); d > 0 {
				extra.Reset(d)
			}
		}
	}()
}

// beat sends one heartbeat and reaps what it reports dead. When another pool is late, it returns
// how long until that pool would be dead, so the next look comes then rather than at the next tick:
// that keeps recovery near DeadPoolTimeout instead of DeadPoolTimeout plus an interval. A heartbeat
// that names job names the pool does not serve yet makes the pool serve them.
func (h *heartbeater) beat() time.Duration {
	h.mu.Lock()
	defer h.mu.Unlock()
	opts := h.r.wp.opts
	ctx, cancel := context.WithTimeout(h.r.ctx, opts.DeadPoolTimeout)
	defer cancel()
	// The names and limits of the registry go to Redis before any heartbeat names them (at the first
	// beat, and after a registration on the started pool).
	full := h.r.full.Load()
	if err := h.r.registerNames(ctx, full, h.written); err != nil {
		if h.r.ctx.Err() == nil {
			h.r.wp.logger.Error("work: registering job names", "err", err)
		}
		if full = h.hbSet; full == nil {
			full = h.r.jobs() // the first beat: the pool serves its names all the same
		}
	}
	h.describe(full)
	deadAfter := int64(opts.DeadPoolTimeout / time.Second)
	lateAfter := int64(opts.HeartbeatInterval/time.Second) + 1
	fullReconcile := h.beats%fullReconcileEvery == 0
	h.beats++
	var reconcile []int
	for i := range h.hb.JobNames {
		if fullReconcile || h.hb.MaxConcurrency[i] > 0 {
			reconcile = append(reconcile, i)
		}
	}
	res, err := h.r.wp.store.Heartbeat(ctx, &h.hb, reconcile, deadAfter, lateAfter, fullReconcile)
	if err != nil {
		if h.r.ctx.Err() == nil {
			h.r.wp.logger.Error("work: heartbeat", "err", err)
		}
		h.reap.unhealthy()
		return 0
	}
	if !covers(h.r.jobs().names, full.names) {
		h.r.announced(full.names)
	}
	h.r.fetcher.ready.looked(res.Scan)
	h.reap.observe(ctx, res.Now, res.Stale)
	if res.LateAt == 0 {
		return 0
	}
	d := time.Duration(res.LateAt+deadAfter+1-res.Now) * time.Second
	if d <= 0 || d >= opts.HeartbeatInterval {
		return 0
	}
	return d
}

// keepRegistered makes unregister leave the heartbeat, so that a reaper returns the jobs this pool
// could not put back itself.
func (h *heartbeater) keepRegistered() { h.keep.Store(true) }

// unregister removes the stopped pool's heartbeat the way a reaper would: anything still in its
// in-progress lists goes back to its queue and its share of the concurrency counters is released.
// After a clean stop the lists are empty; entries can remain when an acknowledgement was lost, as in
// a failover to a replica that had not received it.
func (h *heartbeater) unregister() {
	if h.keep.Load() {
		h.r.wp.logger.Warn("work: pool stopped with jobs still held; another pool will put them back")
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	n, err := h.r.wp.store.Reap(ctx, h.r.poolID, h.r.jobs().names, -1)
	if err != nil {
		h.r.wp.logger.Error("work: removing the pool's heartbeat", "err", err)
		return
	}
	if n > 0 {
		h.r.wp.logger.Warn("work: put back jobs the stopped pool no longer held", "jobs_requeued", n)
	}
}
