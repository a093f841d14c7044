package work

import (
	"fmt"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// requeuer moves due jobs from the scheduled and retry sets to the back of their own queues. It runs
// when a job is due, not on a clock: every look at Redis (a fetcher scan, a heartbeat) says when the
// earliest job is due, an Enqueuer's scheduled job and this pool's own retries say when they are due,
// and each pass reports the next. So an idle pool sends no command for it. A job goes to the queue
// its payload names whether or not this pool handles that name, so pools with different job sets
// share a namespace. A member that cannot be decoded goes to the dead set with the reason and its
// bytes instead of blocking the set. The batch index is kept the same way: batches_expiry lists
// complete batches by when their status expires, and a pass drops the due ones from the index. When
// schedules are due (schedules:due), a pass pokes the scheduler, which fires them.
type requeuer struct {
	r    *poolRun
	wake chan struct{}

	mu   sync.Mutex
	next time.Time // when a pass is wanted; zero: none
}

const requeueBatch = 1000

func newRequeuer(r *poolRun) *requeuer { return &requeuer{r: r, wake: make(chan struct{}, 1)} }

// at asks for a pass at t, unless one is wanted sooner.
func (q *requeuer) at(t time.Time) {
	q.mu.Lock()
	sooner := q.next.IsZero() || t.Before(q.next)
	if sooner {
		q.next = t
	}
	q.mu.Unlock()
	if sooner {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// in asks for a pass in d.
func (q *requeuer) in(d time.Duration) { q.at(time.Now().Add(d)) }

func (q *requeuer) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		for {
			q.mu.Lock()
			next := q.next
			wait := time.Duration(-1)
			if !next.IsZero() {
				if wait = time.Until(next); wait <= 0 {
					q.next = time.Time{}
				}
			}
			q.mu.Unlock()
			if !next.IsZero() && wait <= 0 {
				q.pass()
				continue
			}
			if wait > 0 {
				timer.Reset(wait)
			}
			select {
			case <-q.r.ctx.Done():
				return
			case <-q.wake:
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
	for q.r.ctx.Err() == nil {
		more, nextIn := q.once()
		if !more {
			if nextIn >= 0 {
				q.in(time.Duration(nextIn) * time.Millisecond)
			}
			return
		}
	}
}

// once moves one batch of due jobs from each set; it reports whether a set had more due, and the
// milliseconds until the next job is due (-1: none, or not known after an error).
func (q *requeuer) once() (bool, int64) {
	st := q.r.wp.store
	sets := []rdb.Place{rdb.Scheduled, rdb.Retry, rdb.BatchesExpiry, rdb.SchedulesDue}
	now, due, nextIn, err := st.Due(q.r.ctx, sets, requeueBatch)
	if err != nil {
		if q.r.ctx.Err() == nil {
			q.r.wp.logger.Error("work: looking for due jobs", "err", err)
			q.in(time.Second) // the next look would find them too; do not wait for it
		}
		return false, -1
	}
	more := false
	for i, members := range due {
		if len(members) == 0 {
			continue
		}
		if sets[i] == rdb.SchedulesDue {
			// Buckets of schedules are due: the scheduler fires them, and says when the next is.
			q.r.scheduler.poke()
			continue
		}
		if len(members) == requeueBatch {
			more = true
		}
		if sets[i] == rdb.BatchesExpiry {
			// Batches whose status expired leave the batch index.
			if _, _, err := st.TrimBatches(q.r.ctx, requeueBatch, 0, 0); err != nil && q.r.ctx.Err() == nil {
				q.r.wp.logger.Error("work: dropping expired batches from the batch index", "err", err)
			}
			continue
		}
		good := make([][]byte, 0, len(members))
		names := make([]string, 0, len(members))
		keys := make([]string, 0, len(members))
		holds := make([]bool, 0, len(members))
		for _, m := range members {
			job, err := decodeJob(m)
			if err != nil {
				rec := deadLetterRecord("", m, err, now)
				if _, merr := st.ZsetMove(q.r.ctx, sets[i], rdb.Dead, m, now, rec); merr != nil {
					q.r.wp.logger.Error("work: moving an undecodable job to the dead set", "err", merr)
				} else {
					q.r.wp.logger.Error("work: undecodable job sent to the dead set", "set", sets[i], "err", err)
				}
				continue
			}
			if job.Key != "" && checkKey(job.Key) != nil {
				// A key no enqueue accepts (written by hand): its job would have no queue to wait in.
				rec := deadLetterRecord(job.Name, m, fmt.Errorf("job key: %w", checkKey(job.Key)), now)
				if _, merr := st.ZsetMove(q.r.ctx, sets[i], rdb.Dead, m, now, rec); merr != nil {
					q.r.wp.logger.Error("work: moving a job with a malformed key to the dead set", "err", merr)
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
		if _, err := st.EnqueueDue(q.r.ctx, sets[i], good, names, keys, holds); err != nil {
			if q.r.ctx.Err() == nil {
				q.r.wp.logger.Error("work: moving due jobs to their queues", "err", err)
				q.in(time.Second)
			}
			return false, -1
		}
	}
	return more, nextIn
}
