package work

import "time"

// sweeper now and then puts back the entries of the pool's in-progress lists whose jobs the pool
// does not hold (the outcome queue knows those it holds: fetched, outcome not yet written): a fetch whose
// reply was lost (Redis restarted, a connection cut, a failover) leaves such entries, which no worker
// would ever run. The pool's loop sweeps.
type sweeper struct {
	p          *fetcherParams
	flush      func(leave bool) bool // the fetcher's flush
	subscribed func() bool           // whether the wake-up subscription listens
	swept      func(func() int64)    // the fetcher's swept: runs the sweep under its batch lock
	lastSweep  time.Time
	sweptErrs  uint64 // the store's error count at the last sweep
}

func newSweeper(p *fetcherParams, flush func(bool) bool, subscribed func() bool, swept func(func() int64)) *sweeper {
	return &sweeper{p: p, flush: flush, subscribed: subscribed, swept: swept}
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
	return s.p.out.heldSinceSweep() || s.p.store.Errs.Load() != s.sweptErrs || since >= slowSweepEvery
}

// sweep puts back the in-progress entries the pool does not hold. It runs on the loop, between
// round trips, so no fetch is under way; a job stays held until its outcome is written, so a pending
// acknowledgement is not mistaken for a lost one.
//
// A job handed to the pool (hand_off.lua) is in its in-progress list before the pool reads the
// message that hands it: so that the sweep does not take one on its way for lost, it first takes
// the pool off the idle sets and waits for the hand-offs sent before (flush), while no write of
// outcomes (which registers the pool again) runs and no fetch either (the caller holds the
// fetcher's mu). When the subscription is down, hand-offs sent meanwhile are lost: swept. One may
// still come, on a subscription Redis took before the client heard of it: the pool leaves those the
// sweep counted (fetcher.swept).
func (s *sweeper) sweep() {
	s.lastSweep = time.Now()
	s.p.out.regGate.Lock()
	defer s.p.out.regGate.Unlock()
	s.p.out.settleQuiet()
	if !s.flush(true) && s.subscribed() {
		return // the marker did not come back: the next sweep tries again
	}
	s.sweptErrs = s.p.store.Errs.Load()
	set := s.p.served()
	s.swept(func() int64 {
		held := s.p.out.heldEntries()
		n, handed, err := s.p.store.Sweep(s.p.ctx, s.p.poolID, set.names, held)
		if err != nil {
			if s.p.ctx.Err() == nil {
				s.p.logger.Error("work: looking for in-progress jobs the pool does not hold", "err", err)
			}
			return -1
		}
		if n > 0 {
			s.p.logger.Warn("work: put back in-progress jobs the pool did not hold (a fetch's reply or a requeue's write was lost)", "jobs_requeued", n)
		}
		return handed
	})
}
