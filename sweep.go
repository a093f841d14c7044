package work

import (
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// sweeper knows every job the pool fetched whose outcome is not yet written ("held"), and now and
// then puts back the entries of the pool's in-progress lists that it does not hold: a fetch whose
// reply was lost (Redis restarted, a connection cut, a failover) leaves such entries, which no worker
// would ever run. The pool's loop holds jobs and sweeps; writers of outcomes unhold them.
type sweeper struct {
	p         *fetcherParams
	mu        sync.Mutex // guards held and active
	held      map[*Job]struct{}
	lastSweep time.Time
	active    bool   // fetched since the last sweep
	sweptErrs uint64 // the store's error count at the last sweep
}

func newSweeper(p *fetcherParams) *sweeper {
	return &sweeper{p: p, held: make(map[*Job]struct{})}
}

// hold records a job just fetched. A worker that decodes the job changes only its exported fields
// (Job.setWire), so the sweep may read how it was fetched (q, rawArg) meanwhile.
func (s *sweeper) hold(j *Job) {
	s.mu.Lock()
	s.held[j] = struct{}{}
	s.active = true
	s.mu.Unlock()
}

// unholdAll forgets the jobs of outcomes just written.
func (s *sweeper) unholdAll(ops []rdb.FinishOp) {
	s.mu.Lock()
	for i := range ops {
		delete(s.held, ops[i].Ref.(*Job))
	}
	s.mu.Unlock()
}

// sweepEvery is how often the pool looks for in-progress entries it does not hold, when it fetched
// jobs or a Redis call failed since the last look: those are what leave such entries (a fetch or an
// acknowledgement applied whose reply was lost, a failover). Otherwise it looks every slowSweepEvery.
func (s *sweeper) sweepEvery() time.Duration { return 2 * s.p.heartbeatInterval }

const slowSweepEvery = 5 * time.Minute

func (s *sweeper) due() bool {
	since := time.Since(s.lastSweep)
	if since < s.sweepEvery() {
		return false
	}
	s.mu.Lock()
	active := s.active
	s.mu.Unlock()
	return active || s.p.store.Errs.Load() != s.sweptErrs || since >= slowSweepEvery
}

// sweep puts back the in-progress entries the pool does not hold. It runs on the loop, between
// round trips, so no fetch is under way; a job stays held until its outcome is written, so a pending
// acknowledgement is not mistaken for a lost one.
func (s *sweeper) sweep() {
	s.lastSweep = time.Now()
	s.sweptErrs = s.p.store.Errs.Load()
	set := s.p.served()
	held := make(map[string][][]byte, len(set.queueIDs))
	s.mu.Lock()
	s.active = false
	for j := range s.held {
		// The in-progress entry, by the id of the queue whose list holds it.
		entry, _ := j.rawArg.([]byte)
		held[j.q.id] = append(held[j.q.id], entry)
	}
	s.mu.Unlock()
	n, err := s.p.store.Sweep(s.p.ctx, s.p.poolID, set.names, held)
	if err != nil {
		if s.p.ctx.Err() == nil {
			s.p.logger.Error("work: looking for in-progress jobs the pool does not hold", "err", err)
		}
		return
	}
	if n > 0 {
		s.p.logger.Warn("work: put back in-progress jobs whose fetch reply was lost", "jobs_requeued", n)
	}
}
