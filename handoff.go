package work

import (
	"context"
	"strconv"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// The hand-off: a job enqueued to an empty queue goes straight to a pool that waits for its name
// (hand_off.lua pushes it onto the pool's in-progress list and sends it on the pool's channel), so
// that the pool runs it without a fetch. The pool takes it here as a fetched job; a fetch that ran
// after a hand-off was made and before the pool read it leaves room for it and keeps its own jobs
// behind it; a sweep, a Drain and a stop first wait for the hand-offs on their way (flush).

// handOff takes a job handed to the pool (hand_off.lua put it in its in-progress list) as a fetched
// one, or, when the pool stops or has no room for it, hands it back to its queue; a message with no
// name is a marker (see flush). It leaves, to be put back by others, a job that running would run
// twice: one handed while the pool's heartbeat held another epoch than the pool's (handed before the
// pool was reaped, the reaper put it back; handed after a beat that found the pool reaped and before
// the pool read that beat's reply, the sweep puts it back), and one a sweep may have put back (a
// hand-off counted when the sweep ran, read after it).
func (f *fetcher) handOff(h rdb.HandOff) {
	name := h.Name
	if name == "" {
		f.marked(string(h.Payload))
		return
	}
	if hook := f.handOffHook.Load(); hook != nil {
		(*hook)()
	}
	q, ok := f.p.served().queues[name]
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	// Read once in the channel or on its way back: a fetch that ran after it was made waits, its
	// jobs behind, until then.
	defer f.pushBehindLocked(false)
	defer f.ready.handedIn.Add(1)
	if !ok || q.keyed {
		// Not a queue this pool serves (it was never registered for it): the sweep puts it back.
		f.p.out.leftUnheld()
		return
	}
	if h.Epoch != f.p.lease.epoch.Load() || h.Seq <= f.sweptHandOffs {
		f.p.logger.Debug("work: a job handed to the pool before it was reaped or swept is left to be put back", "job_name", name)
		f.p.out.leftUnheld()
		return
	}
	j := &Job{raw: h.Payload, rawArg: h.Payload, q: q, epoch: h.Epoch, handed: true}
	f.p.out.hold(j)
	f.p.lease.holding()
	// Its registration may predate a fetch that filled the pool's room: then it goes back.
	if f.isStopped() || f.room.free() <= 0 {
		f.p.out.post(rdb.FinishOp{Kind: rdb.OpRequeue, Q: q.args, Entry: j.rawArg, Ref: j})
		return
	}
	f.room.reserve()
	from := f.pushed
	f.pushLocked(j)
	f.pushedLocked(from)
}

// flush returns once every hand-off Redis sent the pool before the call has been taken: it
// publishes a marker on the pool's hand-off channel, after which nothing sent earlier can still be
// on its way, and waits for it (false when the subscription is down or the marker does not come
// within markerWait). With leave, the same round trip first takes the pool off the idle sets of
// its queues, so that no hand-off follows the marker.
func (f *fetcher) flush(leave bool) bool {
	if !f.ready.subscribed.Load() {
		return false
	}
	token := strconv.FormatUint(f.markSeq.Add(1), 10)
	ch := make(chan struct{})
	f.markMu.Lock()
	f.marks[token] = ch
	f.markMu.Unlock()
	defer func() {
		f.markMu.Lock()
		delete(f.marks, token)
		f.markMu.Unlock()
	}()
	var names []string
	if leave {
		names = f.p.served().names
	}
	if err := f.p.store.HandOffMarker(context.Background(), f.p.poolID, token, names); err != nil {
		return false
	}
	t := time.NewTimer(markerWait)
	defer t.Stop()
	select {
	case <-ch:
		return true
	case <-t.C:
		return false
	}
}

// markerWait bounds flush's wait for its marker.
const markerWait = 2 * time.Second

// swept runs sweep, which puts back the in-progress jobs the pool does not hold and returns the count
// of hand-offs made to the pool when it did (-1: it did not run), holding batchMu, so that no
// hand-off is taken meanwhile: those counted then and read later are left (handOff).
func (f *fetcher) swept(sweep func() int64) {
	f.batchMu.Lock()
	defer f.batchMu.Unlock()
	if n := sweep(); n >= 0 {
		f.sweptHandOffs = n
	}
}

// marked takes the marker of a flush.
func (f *fetcher) marked(token string) {
	f.markMu.Lock()
	if ch, ok := f.marks[token]; ok {
		close(ch)
		delete(f.marks, token)
	}
	f.markMu.Unlock()
}

// pushBehindLocked puts the jobs waiting behind hand-offs in the channel once those have been read,
// or at once with force. The caller holds batchMu.
func (f *fetcher) pushBehindLocked(force bool) {
	if len(f.behind) == 0 || (!force && f.ready.handedIn.Load() < f.behindUntil) {
		return
	}
	from := f.pushed
	for i, j := range f.behind {
		f.pushLocked(j)
		f.behind[i] = nil
	}
	f.behind = f.behind[:0]
	f.behindTimer = false
	f.behindSeq++ // a release still scheduled has nothing left to do
	f.pushedLocked(from)
}

// forgetLostHandOffs takes the hand-offs a fetch counted, made before it and still unread
// markerWait later, for lost (their messages went with a subscription, or with a restarted Redis:
// the sweep puts their jobs back), so that fetches stop leaving room and waiting for them. handed is
// the count the fetch just returned. The caller holds batchMu.
func (f *fetcher) forgetLostHandOffs(handed int64) {
	now := time.Now()
	if f.awaitCount > 0 && now.Sub(f.awaitSince) >= markerWait {
		if f.raiseHandedIn(f.awaitCount) {
			f.p.logger.Debug("work: hand-off messages lost; their jobs are put back by the sweep")
			f.p.out.leftUnheld()
		}
		f.awaitCount = 0
	}
	if f.awaitCount == 0 && handed > f.ready.handedIn.Load() {
		f.awaitCount, f.awaitSince = handed, now
	}
	f.pushBehindLocked(false)
}

// raiseHandedIn sets the count of hand-offs read to at least n; it reports whether it was lower.
func (f *fetcher) raiseHandedIn(n int64) bool {
	for {
		in := f.ready.handedIn.Load()
		if in >= n {
			return false
		}
		if f.ready.handedIn.CompareAndSwap(in, n) {
			return true
		}
	}
}

// releaseBehind puts the jobs of fetch seq still waiting behind hand-offs in the channel: the
// hand-offs did not come within markerWait (their messages were lost with a subscription, and the
// sweep puts their jobs back).
func (f *fetcher) releaseBehind(seq uint64) {
	f.batchMu.Lock()
	if f.behindSeq == seq {
		if f.raiseHandedIn(f.behindUntil) { // the hand-offs they waited for are lost
			f.p.out.leftUnheld()
		}
		f.pushBehindLocked(true)
	}
	f.batchMu.Unlock()
}
