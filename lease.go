package work

import (
	"sync"
	"sync/atomic"
	"time"
)

// lease is the pool's right to start the jobs it holds, earned by its heartbeats. Another pool takes
// a pool's jobs back only once its last heartbeat is older than DeadPoolTimeout on the Redis server's
// clock (or its process is proven gone, which no live pool is). That heartbeat was written after
// this pool sent it, so while less than DeadPoolTimeout has passed since the send of a heartbeat
// Redis accepted, no pool can have taken this one's jobs: the pool fetches and starts jobs only then.
// Past it (the process was frozen, the machine slept, Redis did not answer) the pool first sends a
// heartbeat; if that finds its heartbeat gone, a reaper did take its jobs back: the pool counts a new
// epoch, starts none of the jobs it fetched before, cancels those still running (their context's
// cause is ErrPoolReaped) and writes none of their outcomes, and goes on with its new heartbeat. It
// is shared state, built by the pool's run: the heartbeater renews it, the fetcher and the workers
// check it.
type lease struct {
	horizon time.Duration
	sent    atomic.Pointer[time.Time] // when the last heartbeat Redis accepted was sent; nil: none yet
	epoch   atomic.Uint64             // how many times the pool found itself reaped

	// idle says the last heartbeat declared the pool idle (see heartbeater.idleEvery): its peers wait
	// longer before they take its jobs back.
	idle atomic.Bool

	mu      sync.Mutex
	renewed chan struct{} // closed at the next renewal
	ask     chan struct{} // the heartbeater beats at once on a receive
	busy    chan struct{} // the same, when the pool took a job after a heartbeat declared it idle
}

// newLease returns a lease for a pool of the given DeadPoolTimeout. The margin it keeps covers the
// drift between this machine's clock and the Redis server's.
func newLease(deadPoolTimeout time.Duration) *lease {
	return &lease{horizon: deadPoolTimeout - max(deadPoolTimeout/20, 100*time.Millisecond),
		renewed: make(chan struct{}), ask: make(chan struct{}, 1), busy: make(chan struct{}, 1)}
}

// fresh reports whether the pool may start jobs at now. Both the monotonic and the wall clock must
// agree: the monotonic clock of some systems stands still while the machine sleeps.
func (l *lease) fresh(now time.Time) bool {
	sent := l.sent.Load()
	if sent == nil {
		return false
	}
	return now.Sub(*sent) < l.horizon && now.Round(0).Sub(sent.Round(0)) < l.horizon
}

// renew records a heartbeat Redis accepted, sent at sent.
func (l *lease) renew(sent time.Time) {
	l.sent.Store(&sent)
	l.mu.Lock()
	close(l.renewed)
	l.renewed = make(chan struct{})
	l.mu.Unlock()
}

// lost starts a new epoch: a heartbeat found the pool's jobs taken back.
func (l *lease) lost() { l.epoch.Add(1) }

// current reports whether job was fetched in the current epoch.
func (l *lease) current(j *Job) bool { return j.epoch == l.epoch.Load() }

// holding records that the pool took jobs, which the outcome queue holds already. After a heartbeat
// that declared the pool idle it asks for one at once, which declares it busy: a crash then leaves
// the jobs for DeadPoolTimeout, not for the longer limit of an idle pool. The heartbeater sets idle
// before it reads what the outcome queue holds, so a job taken during its beat is either seen by
// that beat or asks for the next one. A busy pool's fetches only read idle.
func (l *lease) holding() {
	if l.idle.Load() && l.idle.CompareAndSwap(true, false) {
		select {
		case l.busy <- struct{}{}:
		default:
		}
	}
}

// askBeat asks the heartbeater for a heartbeat at once.
func (l *lease) askBeat() {
	select {
	case l.ask <- struct{}{}:
	default:
	}
}

// next returns a channel closed at the next renewal.
func (l *lease) next() <-chan struct{} {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.renewed
}

// wait returns true once the lease is fresh, asking for a heartbeat if it is not; false if stop is
// closed first.
func (l *lease) wait(stop <-chan struct{}) bool {
	for {
		if l.fresh(time.Now()) {
			return true // every job start comes here: no lock on this path
		}
		next := l.next()
		if l.fresh(time.Now()) {
			return true // renewed since the first look
		}
		l.askBeat()
		select {
		case <-next:
		case <-stop:
			return false
		}
	}
}
