package work

import (
	"sync"
)

// requeuer moves due jobs from the scheduled and retry sets to the back of their own queues. The
// fetcher's once-a-second poll tells it when a job is due, so an idle pool sends one command a second
// for both. A job goes to the queue its payload names whether or not this pool handles that name, so
// pools with different job sets share a namespace. A member that cannot be decoded goes to the dead
// set with the reason and its bytes instead of blocking the set.
type requeuer struct {
	r    *poolRun
	wake chan struct{}
}

const requeueBatch = 1000

func newRequeuer(r *poolRun) *requeuer { return &requeuer{r: r, wake: make(chan struct{}, 1)} }

// poke tells the requeuer that a job is due.
func (q *requeuer) poke() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

func (q *requeuer) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			select {
			case <-q.r.ctx.Done():
				return
			case <-q.wake:
				for q.r.ctx.Err() == nil && q.once() {
				}
			}
		}
	}()
}

// once moves one batch of due jobs from each set; it reports whether a set had more due.
func (q *requeuer) once() bool {
	st := q.r.wp.store
	sets := []string{st.ks.scheduled(), st.ks.retry()}
	now, due, err := st.due(q.r.ctx, sets, requeueBatch)
	if err != nil {
		if q.r.ctx.Err() == nil {
			q.r.wp.logger.Error("work: looking for due jobs", "err", err)
		}
		return false
	}
	more := false
	for i, members := range due {
		if len(members) == 0 {
			continue
		}
		if len(members) == requeueBatch {
			more = true
		}
		good := make([][]byte, 0, len(members))
		names := make([]string, 0, len(members))
		for _, m := range members {
			job, err := decodeJob(m)
			if err != nil {
				rec := deadLetterOp(st.ks, "", m, err)
				if _, merr := st.zsetMove(q.r.ctx, sets[i], st.ks.dead(), m, now, rec.payload); merr != nil {
					q.r.wp.logger.Error("work: moving an undecodable job to the dead set", "err", merr)
				} else {
					q.r.wp.logger.Error("work: undecodable job sent to the dead set", "set", sets[i], "err", err)
				}
				continue
			}
			good = append(good, m)
			names = append(names, job.Name)
		}
		if len(good) == 0 {
			continue
		}
		if _, err := st.enqueueDue(q.r.ctx, sets[i], good, names); err != nil {
			if q.r.ctx.Err() == nil {
				q.r.wp.logger.Error("work: moving due jobs to their queues", "err", err)
			}
			return false
		}
	}
	return more
}
