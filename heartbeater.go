package work

import (
	"context"
	"encoding/json"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// heartbeater tells Redis, every HeartbeatInterval, that the pool is alive (in the server's clock, so
// clocks of other machines do not matter), squares the pool's concurrency counters with the jobs it
// actually holds, hands the pools whose heartbeat stopped to the reaper, and looks for waiting jobs
// on the fetcher's behalf (so an idle pool sends one command per heartbeat).
type heartbeater struct {
	r     *poolRun
	hb    poolHeartbeat
	reap  *reaper
	keep  atomic.Bool // leave the heartbeat in place at stop: jobs may still be held
	beats int
}

// fullReconcileEvery is how many heartbeats apart every lock counter is recomputed from lock_info,
// which heals a counter someone else changed on a queue without a MaxConcurrency in this pool (and
// finds lock_info entries of pools that are gone); in between a heartbeat squares the queues with a
// MaxConcurrency, whose counters gate fetches (only their jobs are counted).
const fullReconcileEvery = 60

func newHeartbeater(r *poolRun) *heartbeater {
	h := &heartbeater{r: r, reap: newReaper(r)}
	h.hb = poolHeartbeat{
		poolID:    r.poolID,
		startedAt: r.startedAt,
		jobNames:  r.names,
		maxConcurrency: func() []uint {
			m := make([]uint, len(r.names))
			for i, name := range r.names {
				m[i] = r.jobTypes[name].MaxConcurrency
			}
			return m
		}(),
		concurrency: r.wp.concurrency,
		workerIDs:   r.workerIDs(),
		host:        hostname(),
		pid:         os.Getpid(),
	}
	if len(r.wp.reg.periodicJobs) > 0 {
		type entry struct {
			JobName string `json:"job_name"`
			Spec    string `json:"spec"`
		}
		list := make([]entry, len(r.wp.reg.periodicJobs))
		for i, pj := range r.wp.reg.periodicJobs {
			list[i] = entry{JobName: pj.jobName, Spec: pj.spec}
		}
		b, _ := json.Marshal(list) // strings only: cannot fail
		h.hb.periodicJobs = string(b)
	}
	return h
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
			}
			if d := h.beat(); d > 0 {
				extra.Reset(d)
			}
		}
	}()
}

// beat sends one heartbeat and reaps what it reports dead. When another pool is late, it returns
// how long until that pool would be dead, so the next look comes then rather than at the next tick:
// that keeps recovery near DeadPoolTimeout instead of DeadPoolTimeout plus an interval.
func (h *heartbeater) beat() time.Duration {
	opts := h.r.wp.opts
	ctx, cancel := context.WithTimeout(h.r.ctx, opts.DeadPoolTimeout)
	defer cancel()
	deadAfter := int64(opts.DeadPoolTimeout / time.Second)
	lateAfter := int64(opts.HeartbeatInterval/time.Second) + 1
	full := h.beats%fullReconcileEvery == 0
	h.beats++
	var reconcile []int
	for i := range h.hb.jobNames {
		if full || h.hb.maxConcurrency[i] > 0 {
			reconcile = append(reconcile, i)
		}
	}
	res, err := h.r.wp.store.heartbeat(ctx, &h.hb, reconcile, deadAfter, lateAfter, full)
	if err != nil {
		if h.r.ctx.Err() == nil {
			h.r.wp.logger.Error("work: heartbeat", "err", err)
		}
		h.reap.unhealthy()
		return 0
	}
	h.r.fetcher.ready.looked(res.scan)
	h.reap.observe(ctx, res.now, res.stale)
	if res.lateAt == 0 {
		return 0
	}
	d := time.Duration(res.lateAt+deadAfter+1-res.now) * time.Second
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
	n, err := h.r.wp.store.reap(ctx, h.r.poolID, h.r.names, -1)
	if err != nil {
		h.r.wp.logger.Error("work: removing the pool's heartbeat", "err", err)
		return
	}
	if n > 0 {
		h.r.wp.logger.Warn("work: put back jobs the stopped pool no longer held", "jobs_requeued", n)
	}
}
