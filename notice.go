package work

import "sync/atomic"

// notice tells a goroutine that waits for something that it may have happened. It is given only
// while watched, so that those who give it on a hot path pay one atomic load while no one waits; a
// notice given and not yet received is kept (one at most), so none is lost between a waiter's
// watch and its wait.
type notice struct {
	watched *atomic.Bool
	c       chan struct{}
}

func newNotice() notice { return notice{watched: new(atomic.Bool), c: make(chan struct{}, 1)} }

// watch starts (on) or stops the notice being given.
func (n notice) watch(on bool) { n.watched.Store(on) }

// give tells the waiter, if one watches.
func (n notice) give() {
	if n.watched.Load() {
		select {
		case n.c <- struct{}{}:
		default:
		}
	}
}

// wait returns the channel a waiter receives the notice on.
func (n notice) wait() <-chan struct{} { return n.c }
