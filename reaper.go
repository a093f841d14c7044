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
//
// A pool of the same machine and PID namespace is reaped at once, whatever its heartbeat, when its
// process is proven gone (see processIdentity): a pool that starts after a crash, or the next
// heartbeat of any pool beside it, takes the dead pool's jobs back without waiting for the timeout.
type reaper struct {
	reaperParams
	self         processIdentity // this process (no peer is proven gone when unknown)
	lastBeat     int64           // server time of this pool's previous heartbeat; 0: none yet or it failed
	healthySince int64           // server time since which heartbeats have arrived on time
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

// observe takes the result of a heartbeat: the server's clock and the stale pools. afterIdle says
// the beat came after the longer wait of an idle pool, which would hide a stall as long: it counts
// as a first beat.
func (p *reaper) observe(ctx context.Context, now int64, stale []rdb.StalePool, afterIdle bool) {
	interval := int64(p.interval / time.Second)
	if interval < 1 {
		interval = 1
	}
	if p.lastBeat == 0 || afterIdle || now-p.lastBeat > interval+interval/2+1 {
		p.healthySince = now // first beat, or we (or Redis) stalled: wait a full interval
	}
	p.lastBeat = now
	if len(stale) == 0 || now-p.healthySince < interval {
		return
	}
	deadAfter := int64(p.deadPoolTimeout / time.Second)
	for _, sp := range stale {
		names, ok := p.names(ctx, sp)
		if !ok {
			continue
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

// gone reaps the pools of this machine whose processes are proven gone.
func (p *reaper) gone(ctx context.Context, peers []rdb.StalePool) {
	for _, sp := range peers {
		if !p.self.processGone(sp.Process) {
			continue
		}
		names, ok := p.names(ctx, sp)
		if !ok {
			continue
		}
		n, err := p.store.Reap(ctx, sp.Id, names, -1)
		if err != nil {
			p.logger.Error("work: reaping dead pool", "dead_pool_id", sp.Id, "err", err)
			continue
		}
		p.logger.Warn("work: reaped dead pool", "dead_pool_id", sp.Id, "jobs_requeued", n, "process_gone", true)
	}
}

// names returns the job names whose in-progress lists of the dead pool to look at.
func (p *reaper) names(ctx context.Context, sp rdb.StalePool) ([]string, bool) {
	if sp.JobNames != nil {
		return sp.JobNames, true
	}
	// Its heartbeat names none: look at every job name the namespace knows.
	known, err := p.store.KnownJobNames(ctx)
	if err != nil {
		p.logger.Error("work: reaping: listing job names", "err", err)
		return nil, false
	}
	return union(known, p.served().names), true
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
