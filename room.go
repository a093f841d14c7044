package work

import (
	"sync/atomic"
	"time"
)

// room is the pool's room for jobs: how many jobs it may hold now, and how many it holds. A job is
// held from its fetch until its outcome is submitted (or dropped). The fetcher reserves room for the
// jobs it fetches and waits for room when there is none; the acker releases a job's room when its
// outcome is submitted, and so does the fetcher for a job it hands back. It is shared state, built by
// the pool's run, so that the acker frees room without calling the fetcher.
//
// The limit is one job per worker, and as many more as the workers start within about aheadWait,
// judged by the mean run time of the pool's jobs (see fetcher), up to capacity.
type room struct {
	concurrency int
	capacity    int // the most jobs held, however quick the jobs

	held     atomic.Int64  // jobs fetched whose outcome was not submitted yet
	meanRun  atomic.Int64  // moving mean of handler run times, ns
	noAhead  atomic.Bool   // fetched-ahead jobs were handed back: none until a job ends
	releases atomic.Uint64 // room released so far: a Drain needs a look that began after the last one

	// freed is given on each release while the fetcher waits for room.
	freed notice
}

func newRoom(concurrency int) *room {
	r := &room{concurrency: concurrency, capacity: quickCapacity(concurrency), freed: newNotice()}
	r.meanRun.Store(int64(time.Second)) // nothing fetched ahead until jobs have shown they are quick
	return r
}

// reserve counts a job just fetched as held.
func (r *room) reserve() { r.held.Add(1) }

// release ends a job's hold on the room (its outcome was submitted, or it was handed back), and
// tells a fetcher waiting for room.
func (r *room) release() {
	r.held.Add(-1)
	if r.noAhead.Load() {
		r.noAhead.Store(false)
	}
	r.releases.Add(1)
	r.freed.give()
}

// handedBack stops fetching ahead until a job ends: fetched-ahead jobs waited too long for a worker.
func (r *room) handedBack() { r.noAhead.Store(true) }

// ran records a handler's run time in the moving mean that decides how far ahead to fetch.
func (r *room) ran(d time.Duration) {
	m := r.meanRun.Load()
	r.meanRun.Store(m + (int64(d)-m)/8) // racing workers may drop a sample: it is only a mean
}

// limit is how many jobs the pool may hold now.
func (r *room) limit() int {
	limit := r.concurrency
	if !r.noAhead.Load() {
		ahead := int64(r.concurrency) * int64(aheadWait) / max(r.meanRun.Load(), 1)
		limit += int(min(ahead, int64(r.capacity-r.concurrency)))
	}
	return limit
}

// free is how many more jobs the pool may hold now: one per free worker, and as many more as its
// workers start within aheadWait at the mean run time.
func (r *room) free() int { return r.limit() - int(r.held.Load()) }
