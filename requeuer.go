package work

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// requeuer is the pool's one timer of due work, gocraft/work's requeuer grown to six sources (the
// dueSources below): scheduled jobs and retries, which it moves to the back of their own queues;
// batches whose status expired, which it drops from the batch index; run-time schedules, which it
// hands to the scheduler (schedulesDue); groups of grouped jobs whose time came, which it flushes
// into calls (group.go); and bursts of debounced enqueues whose time came, whose job it moves into
// the scheduled set, from which the next step queues it. It runs when something is due, not on a
// clock: the dueAlarm it waits on is set by every look at Redis (a fetcher scan, a heartbeat, which
// say when the earliest member is due), by an Enqueuer's scheduled job and this pool's own retries,
// by the scheduler and the periodic enqueuer, and by each pass, which reports the next. So an idle
// pool sends no command for it. A job goes to the queue its payload names whether or not this pool
// handles that name, so pools with different job sets share a namespace. A member that cannot be
// decoded goes to the dead set with the reason and its bytes instead of blocking the set.
type requeuer struct {
	ctx          context.Context
	store        *rdb.Store
	logger       *slog.Logger
	alarm        *dueAlarm
	schedulesDue chan<- struct{}
}

// requeuerParams are what a requeuer uses: the pool run's context (done when the pool stops), the
// store, the logger, the alarm it waits on, and where it tells that schedules are due.
type requeuerParams struct {
	ctx          context.Context
	store        *rdb.Store
	logger       *slog.Logger
	alarm        *dueAlarm
	schedulesDue chan<- struct{}
}

const requeueBatch = 1000

func newRequeuer(p requeuerParams) *requeuer {
	return &requeuer{ctx: p.ctx, store: p.store, logger: p.logger, alarm: p.alarm, schedulesDue: p.schedulesDue}
}

// dueSource is a kind of due work: a sorted set of the layout scored by when its members are due.
type dueSource int

const (
	dueScheduled   dueSource = iota // scheduled jobs: to their queues
	dueRetries                      // retries and snoozed jobs: to their queues
	dueBatchExpiry                  // batches whose status expired: out of the batch index
	dueSchedules                    // buckets of run-time schedules: the scheduler fires them
	dueGroups                       // groups of grouped jobs: flushed into calls
	dueDebounces                    // bursts of debounced enqueues: their job to the scheduled set
	dueSources
)

// duePlaces are the sorted sets of the due sources, in their order.
var duePlaces = [dueSources]rdb.Place{
	dueScheduled:   rdb.Scheduled,
	dueRetries:     rdb.Retry,
	dueBatchExpiry: rdb.BatchesExpiry,
	dueSchedules:   rdb.SchedulesDue,
	dueGroups:      rdb.GroupsDue,
	dueDebounces:   rdb.Debounces,
}

// dueAlarm is when the pool wants its next pass over due work: anything that learns when something
// becomes due sets it, and the requeuer waits on it. Its zero value is not usable: see newDueAlarm.
type dueAlarm struct {
	wake chan struct{}

	mu   sync.Mutex
	next time.Time // when a pass is wanted; zero: none
}

func newDueAlarm() *dueAlarm { return &dueAlarm{wake: make(chan struct{}, 1)} }

// at asks for a pass at t, unless one is wanted sooner.
func (a *dueAlarm) at(t time.Time) {
	a.mu.Lock()
	sooner := a.next.IsZero() || t.Before(a.next)
	if sooner {
		a.next = t
	}
	a.mu.Unlock()
	if sooner {
		select {
		case a.wake <- struct{}{}:
		default:
		}
	}
}

// in asks for a pass in d.
func (a *dueAlarm) in(d time.Duration) { a.at(time.Now().Add(d)) }

// take returns how long until the pass wanted (-1: none wanted), clearing the alarm when it is due.
func (a *dueAlarm) take() time.Duration {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.next.IsZero() {
		return -1
	}
	wait := time.Until(a.next)
	if wait <= 0 {
		a.next = time.Time{}
		return 0
	}
	return wait
}

func (q *requeuer) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			wait := q.alarm.take()
			if wait == 0 {
				q.pass()
				continue
			}
			if wait > 0 {
				timer.Reset(wait)
			}
			select {
			case <-q.ctx.Done():
				return
			case <-q.alarm.wake:
			case <-timer.C:
			}
			if !timer.Stop() {
				select {
				case <-timer.C:
				default:
				}
			}
		}
	}()
}

// pass moves every due job, then asks for a pass when the next one is due.
func (q *requeuer) pass() {
	for q.ctx.Err() == nil {
		more, nextIn := q.once()
		if !more {
			if nextIn >= 0 {
				q.alarm.in(time.Duration(nextIn) * time.Millisecond)
			}
			return
		}
	}
}

// once moves one batch of due jobs from each set; it reports whether a set had more due, and the
// milliseconds until the next job is due (-1: none, or not known after an error).
func (q *requeuer) once() (bool, int64) {
	st, ctx := q.store, q.ctx
	now, due, nextIn, err := st.Due(ctx, duePlaces[:], requeueBatch)
	if err != nil {
		if ctx.Err() == nil {
			q.logger.Error("work: looking for due jobs", "err", err)
			q.alarm.in(time.Second) // the next look would find them too; do not wait for it
		}
		return false, -1
	}
	more := false
	for i, members := range due {
		src := dueSource(i)
		if len(members) == 0 {
			continue
		}
		switch src {
		case dueSchedules:
			// Buckets of schedules are due: the scheduler fires them, and says when the next is.
			select {
			case q.schedulesDue <- struct{}{}:
			default:
			}
			continue
		case dueGroups:
			more = more || len(members) == requeueBatch
			if err := q.flushGroups(members); err != nil {
				return false, -1
			}
			continue
		case dueDebounces:
			// Their jobs go to the scheduled set, which the next step reads again.
			n, _, err := st.EndBursts(ctx, members, false, nil)
			if err != nil {
				if ctx.Err() == nil {
					q.logger.Error("work: moving the jobs of due debounced bursts", "err", err)
					q.alarm.in(time.Second)
				}
				return false, -1
			}
			more = more || n > 0 || len(members) == requeueBatch
			continue
		case dueBatchExpiry:
			more = more || len(members) == requeueBatch
			// Batches whose status expired leave the batch index.
			if _, _, err := st.TrimBatches(ctx, requeueBatch, 0, 0); err != nil && ctx.Err() == nil {
				q.logger.Error("work: dropping expired batches from the batch index", "err", err)
			}
			continue
		}
		if len(members) == requeueBatch {
			more = true
		}
		set := duePlaces[src]
		good := make([][]byte, 0, len(members))
		names := make([]string, 0, len(members))
		keys := make([]string, 0, len(members))
		holds := make([]bool, 0, len(members))
		for _, m := range members {
			job, err := decodeJob(m)
			if err != nil {
				rec := deadLetterRecord("", m, err, now)
				if _, merr := st.ZsetMove(ctx, set, rdb.Dead, m, now, rec); merr != nil {
					q.logger.Error("work: moving an undecodable job to the dead set", "err", merr)
				} else {
					q.logger.Error("work: undecodable job sent to the dead set", "set", set, "err", err)
				}
				continue
			}
			if job.Key != "" && checkKey(job.Key) != nil {
				// A key no enqueue accepts (written by hand): its job would have no queue to wait in.
				rec := deadLetterRecord(job.Name, m, fmt.Errorf("job key: %w", checkKey(job.Key)), now)
				if _, merr := st.ZsetMove(ctx, set, rdb.Dead, m, now, rec); merr != nil {
					q.logger.Error("work: moving a job with a malformed key to the dead set", "err", merr)
				}
				continue
			}
			good = append(good, m)
			names = append(names, job.Name)
			keys = append(keys, job.Key)
			holds = append(holds, job.KeyHold)
		}
		if len(good) == 0 {
			continue
		}
		if _, err := st.EnqueueDue(ctx, set, good, names, keys, holds); err != nil {
			if ctx.Err() == nil {
				q.logger.Error("work: moving due jobs to their queues", "err", err)
				q.alarm.in(time.Second)
			}
			return false, -1
		}
	}
	return more, nextIn
}

// flushGroupsAtOnce is how many due groups one script flushes: each may push many calls.
const flushGroupsAtOnce = 100

// flushGroups flushes due groups into calls (see Store.FlushGroups).
func (q *requeuer) flushGroups(members [][]byte) error {
	for len(members) > 0 {
		n := min(len(members), flushGroupsAtOnce)
		_, _, skipped, err := q.store.FlushGroups(q.ctx, members[:n], seconds(groupDefaultDelay))
		if err != nil {
			if q.ctx.Err() == nil {
				q.logger.Error("work: flushing due groups", "err", err)
				q.alarm.in(time.Second)
			}
			return err
		}
		if skipped > 0 {
			q.logger.Error("work: groups left waiting: a key of their job name holds another type", "groups", skipped)
		}
		members = members[n:]
	}
	return nil
}
