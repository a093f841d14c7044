package work

import (
	"sync"
	"time"
)

// requeuer moves due jobs from the scheduled and retry sets to the back of their own queues, every
// second. A job goes to the queue its payload names whether or not this pool handles that name, so
// pools with different job sets share a namespace. A member that cannot be decoded goes to the dead
// set with the reason and its bytes instead of blocking the set.
type requeuer struct {
	r *poolRun
}

const (
	requeueEvery = time.Second
	requeueBatch = 1000
)

func newRequeuer(r *poolRun) *requeuer { return &requeuer{r: r} }

func (q *requeuer) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(requeueEvery)
		defer t.Stop()
		for {
			select {
			case <-q.r.ctx.Done():
				return
			case <-t.C:
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
