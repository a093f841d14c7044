package work

import (
	"math/rand/v2"
	"sync"
	"time"
)

// deadTrimmer keeps the dead set within WorkerPoolOptions.DeadMaxJobs and DeadMaxAge. Each pass costs
// O(log n + trimmed) in Redis and removes at most trimBudget jobs, looping while there is more, so a
// large backlog is trimmed in short steps. Several pools trimming at once is harmless.
type deadTrimmer struct {
	r *poolRun
}

const (
	trimEvery  = time.Minute
	trimBudget = 10000
)

func newDeadTrimmer(r *poolRun) *deadTrimmer { return &deadTrimmer{r: r} }

func (d *deadTrimmer) start(wg *sync.WaitGroup) {
	opts := d.r.wp.opts
	if opts.DeadMaxJobs <= 0 && opts.DeadMaxAge <= 0 {
		return
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			d.trim()
			wait := trimEvery + time.Duration(rand.Int64N(int64(5*time.Second)))
			select {
			case <-d.r.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// trim runs passes until nothing is left to trim; it returns the number trimmed.
func (d *deadTrimmer) trim() int64 {
	opts := d.r.wp.opts
	var minDiedAt int64
	if opts.DeadMaxAge > 0 {
		minDiedAt = time.Now().Add(-opts.DeadMaxAge).Unix()
	}
	var total int64
	for d.r.ctx.Err() == nil {
		n, err := d.r.wp.store.trimDead(d.r.ctx, int64(max(opts.DeadMaxJobs, 0)), minDiedAt, trimBudget)
		if err != nil {
			if d.r.ctx.Err() == nil {
				d.r.wp.logger.Error("work: trimming the dead set", "err", err)
			}
			break
		}
		total += n
		if n < trimBudget {
			break
		}
	}
	if total > 0 {
		d.r.wp.logger.Info("work: trimmed the dead set", "jobs_removed", total)
	}
	return total
}
