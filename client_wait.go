package work

// Client.WaitJob: waiting for jobs with a record to end. The scripts that write a final state into
// a record announce the job's ID on <ns>:ended (lua/lib/workflow.lua); a Client listens there with
// one subscription, shared by all its waiters, started by the first and ended when the last one
// leaves, so that any number of waiters costs Redis one connection and no polling.

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// WaitJob blocks until the job with the given ID has ended (done, dead, dropped or deleted: see
// JobRecord.Ended) and returns its record, with the result its handler set (JobRecord.Result), or
// returns ctx's error. A job that ended before the call returns at once.
//
// Only a job with a record can be waited for: a tracked job (EnqueueOptions.Track, a step of a
// chain, a job with dependencies) from its enqueue, or a job of a name whose pools keep records
// (JobOptions.KeepFinished) from the moment it runs. For an ID without a record (unknown, never
// tracked, expired, or a KeepFinished job that has not started yet) WaitJob returns an error
// wrapping ErrNoRecord at once, rather than wait for an end it might never hear of: track the jobs
// you mean to wait for.
//
// The waiters of a Client share one pub/sub subscription, made by the first and closed when the
// last one returns: waiting costs one read of the record when called, and one more when the job
// ends. A subscription that is lost is made again, and every waiter then reads its record again, so
// that an end announced meanwhile is not missed. An error reading the record is returned.
func (c *Client) WaitJob(ctx context.Context, id string) (*JobRecord, error) {
	if err := checkBatchID(id); err != nil {
		return nil, err
	}
	// Ended already: no subscription needed.
	rec, err := c.waitRead(ctx, id)
	if err != nil || rec.Ended() {
		return rec, err
	}
	// Subscribe first, then read again: an end between the read above and the subscription is then
	// seen by the read.
	w := c.waits.add(id)
	defer c.waits.remove(w)
	for {
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-w.wake:
		}
		rec, err := c.waitRead(ctx, id)
		if err != nil || rec.Ended() {
			return rec, err
		}
	}
}

// waitRead reads the record WaitJob waits on.
func (c *Client) waitRead(ctx context.Context, id string) (*JobRecord, error) {
	rec, err := c.readJobRecord(ctx, id)
	if errors.Is(err, ErrNoRecord) {
		return nil, fmt.Errorf("%w %s: only a tracked job, or one of a name whose pools keep records that has started, can be waited for", ErrNoRecord, id)
	}
	return rec, err
}

// jobWaiters are the waiters of a Client, by job ID, and the subscription that wakes them.
type jobWaiters struct {
	store *rdb.Store

	mu    sync.Mutex
	byID  map[string]map[*jobWaiter]struct{}
	count int
	sub   *waitSubscription // nil while no one waits
}

// waitSubscription is one run of the subscription: from the first waiter to the last.
type waitSubscription struct {
	cancel context.CancelFunc
	done   chan struct{} // closed when its goroutine has ended
	live   bool          // listening: an end announced from now on is heard (guarded by jobWaiters.mu)
}

// jobWaiter is one WaitJob call.
type jobWaiter struct {
	id   string
	wake chan struct{} // read the record (again): the subscription listens, or the job ended
}

func (w *jobWaiter) signal() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

func newJobWaiters(s *rdb.Store) *jobWaiters {
	return &jobWaiters{store: s, byID: make(map[string]map[*jobWaiter]struct{})}
}

// add registers a waiter, starting the subscription if none runs. The waiter is woken once the
// subscription listens (at once if it does already).
func (h *jobWaiters) add(id string) *jobWaiter {
	w := &jobWaiter{id: id, wake: make(chan struct{}, 1)}
	h.mu.Lock()
	defer h.mu.Unlock()
	set := h.byID[id]
	if set == nil {
		set = make(map[*jobWaiter]struct{})
		h.byID[id] = set
	}
	set[w] = struct{}{}
	h.count++
	switch {
	case h.sub == nil:
		ctx, cancel := context.WithCancel(context.Background())
		h.sub = &waitSubscription{cancel: cancel, done: make(chan struct{})}
		go h.listen(ctx, h.sub)
	case h.sub.live:
		w.signal()
	}
	return w
}

// remove unregisters a waiter; the last one ends the subscription and waits for its goroutine.
func (h *jobWaiters) remove(w *jobWaiter) {
	h.mu.Lock()
	set := h.byID[w.id]
	delete(set, w)
	if len(set) == 0 {
		delete(h.byID, w.id)
	}
	h.count--
	var ended *waitSubscription
	if h.count == 0 {
		ended, h.sub = h.sub, nil
	}
	h.mu.Unlock()
	if ended != nil {
		ended.cancel()
		<-ended.done
	}
}

// wakeAll wakes every waiter to read its record again. The caller holds mu.
func (h *jobWaiters) wakeAllLocked() {
	for _, set := range h.byID {
		for w := range set {
			w.signal()
		}
	}
}

// listen runs the subscription until ctx is done, subscribing again after a failure.
func (h *jobWaiters) listen(ctx context.Context, sub *waitSubscription) {
	defer close(sub.done)
	wait := 10 * time.Millisecond
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	for {
		var listened atomic.Bool
		_ = h.store.SubscribeEnded(ctx, func() {
			listened.Store(true)
			h.mu.Lock()
			if h.sub == sub {
				// Listening (again): ends announced while it did not are read in the records.
				sub.live = true
				h.wakeAllLocked()
			}
			h.mu.Unlock()
		}, func(id []byte) {
			h.mu.Lock()
			for w := range h.byID[string(id)] {
				w.signal()
			}
			h.mu.Unlock()
		})
		h.mu.Lock()
		sub.live = false
		h.mu.Unlock()
		if ctx.Err() != nil {
			return
		}
		if listened.Load() {
			wait = 10 * time.Millisecond
		}
		timer.Reset(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}
