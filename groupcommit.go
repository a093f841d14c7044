package work

import "sync"

// groupCommit holds items submitted concurrently for writing, so that one write (one round trip)
// carries every item submitted while the write before it was under way. The Enqueuer's pushes and
// the acker's outcomes both go through one; each keeps its own rules on top of it: who may write
// beside a write under way, whom a finished write hands the next one to, what a failed write does,
// and whether submitters wait for their item.
//
// A write is counted in writers from beginLocked (or a submitLocked that reports true) until an
// endLocked that reports false: while items are pending when it ends, the turn to write stays
// taken, for its maker to hand over. Items leave pending in the order they were added, each in
// exactly one batch, unless putBackLocked returns them after a failed write.
//
// mu also guards the fields of the type that holds the groupCommit.
type groupCommit[T any] struct {
	mu       sync.Mutex
	pending  []T // added, not yet taken by a write
	spare    []T // a written batch's array, kept for pending
	writers  int // writes under way, and turns to write handed over but not yet begun
	maxBatch int // most items one batch takes; 0: no limit
}

// submitLocked adds item and reports whether its caller is to write: when no write is under way,
// it counts the caller's (one submitter alone pays no wait for sharing). The caller holds mu.
func (g *groupCommit[T]) submitLocked(item T) bool {
	g.pending = append(g.pending, item)
	if g.writers > 0 {
		return false
	}
	g.writers++
	return true
}

// addLocked adds item for a write to take. The caller holds mu.
func (g *groupCommit[T]) addLocked(item T) {
	g.pending = append(g.pending, item)
}

// beginLocked counts a write the caller makes. The caller holds mu.
func (g *groupCommit[T]) beginLocked() {
	g.writers++
}

// takeLocked returns the pending items, up to maxBatch, as a batch; pending goes on in the spare
// array, so that two arrays serve a steady stream of writes. The caller holds mu.
func (g *groupCommit[T]) takeLocked() []T {
	batch, rest := g.pending, g.pending[len(g.pending):]
	if n := g.maxBatch; n > 0 && len(batch) > n {
		batch, rest = batch[:n], batch[n:]
	}
	g.pending = append(g.spare[:0], rest...)
	clear(rest) // the batch's array holds only its own items, and its whole capacity is reused
	g.spare = nil
	return batch
}

// takeFirstLocked removes the first pending item and returns it; the others stay pending. The
// caller holds mu, and one item at least is pending.
func (g *groupCommit[T]) takeFirstLocked() T {
	first := g.pending[0]
	n := copy(g.pending, g.pending[1:])
	var zero T
	g.pending[n] = zero
	g.pending = g.pending[:n]
	return first
}

// putAwayLock clears a written batch (its items are not kept alive by it) and locks mu; the
// batch's array is kept for pending, the larger one if there are two.
func (g *groupCommit[T]) putAwayLock(batch []T) {
	clear(batch)
	g.mu.Lock()
	if cap(batch) > cap(g.spare) {
		g.spare = batch[:0]
	}
}

// endLocked ends a counted write whose batch is put away. It reports whether items are pending:
// then the turn to write stays counted, for the caller to hand over; else the write is no longer
// counted. The caller holds mu.
func (g *groupCommit[T]) endLocked() bool {
	if len(g.pending) > 0 {
		return true
	}
	g.writers--
	return false
}

// putBackLocked returns the items of a batch whose write failed to the front of pending, in their
// order. The batch's array is not reused. The caller holds mu.
func (g *groupCommit[T]) putBackLocked(batch []T) {
	g.pending = append(append(make([]T, 0, len(batch)+len(g.pending)), batch...), g.pending...)
}
