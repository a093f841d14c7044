package work

import (
	"context"
	"log/slog"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// reaper puts the in-progress jobs of dead pools back at the front of their queues, without counting
// a failure, and releases their concurrency slots.
//
// A pool is dead when its heartbeat is older than DeadPoolTimeout on the Redis server's clock. So
// that a stall of Redis itself (or of this process) cannot make live pools look dead, the reaper acts
// only after its own heartbeats have arrived on time for a full HeartbeatInterval: by then every live
// pool has had the chance to send one too. The reap script checks the heartbeat again atomically, so
// a pool that comes back is left alone and concurrent reapers do the work once.
type reaper struct {
	reaperParams
	lastBeat     int64 // server time of this pool's previous heartbeat; 0: none yet or it failed
	healthySince int64 // server time since which heartbeats have arrived on time
}

// reaperParams are what a reaper uses: the store, the logger, the pool's heartbeat interval and dead
// pool timeout, and the job set the pool serves (whose names it reaps besides a dead pool's own).
type reaperParams struct {
	store           *rdb.Store
	logger          *slog.Logger
	interval        time.Duration
	deadPoolTimeout time.Duration
	served          func() *jobSet
}

func newReaper(p reaperParams) *reaper { return &reaper{reaperParams: p} }

// unhealthy records a failed heartbeat.
func (p *reaper) unhealthy() { p.lastBeat = 0 }

// observe takes the result of a heartbeat: the server's clock and the stale pools.
func (p *reaper) observe(ctx context.Context, now int64, stale []rdb.StalePool) {
	interval := int64(p.interval / time.Second)
	if interval < 1 {
		interval = 1
	}
	if p.lastBeat == 0 || now-p.lastBeat > interval+interval/2+1 {
		p.healthySince = now // first beat, or we (or Redis) stalled: wait a full interval
	}
	p.lastBeat = now
	if len(stale) == 0 || now-p.healthySince < interval {
		return
	}
	deadAfter := int64(p.deadPoolTimeout / time.Second)
	for _, sp := range stale {
		names := sp.JobNames
		if names == nil {
			// Its heartbeat is gone: look at every job name the namespace knows.
			known, err := p.store.KnownJobNames(ctx)
			if err != nil {
				p.logger.Error("work: reaping: listing job names", "err", err)
				continue
			}
			names = union(known, p.served().names)
		}
		n, err := p.store.Reap(ctx, sp.Id, names, deadAfter)
		if err != nil {
			p.logger.Error("work: reaping dead pool", "dead_pool_id", sp.Id, "err", err)
			continue
		}
		if n >= 0 {
			p.logger.Warn("work: reaped dead pool", "dead_pool_id", sp.Id, "jobs_requeued", n)
		}
	}
}

func union(a, b []string) []string {
	seen := make(map[string]bool, len(a)+len(b))
	out := make([]string, 0, len(a)+len(b))
	for _, s := range append(append([]string{}, a...), b...) {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}
