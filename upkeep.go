package work

import (
	"context"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// upkeep bounds what would otherwise grow in Redis for as long as a service runs: every minute (with
// some jitter, so pools spread their passes) it trims the dead set within
// WorkerPoolOptions.DeadMaxJobs and DeadMaxAge, and trims the batch index: the batches whose status
// expired (which the requeuer drops too, as it moves due jobs, so they leave at once) and, walking a
// part of the index each pass, batches gone another way. Each call costs O(log n + removed) in
// Redis and removes at most upkeepBudget entries, looping while there is more, so a large backlog
// goes in short steps. Several pools doing it at once is harmless.
type upkeep struct {
	upkeepParams
	// batchWalk is the rank of the batch index from which the next pass checks for entries whose
	// batch is gone (see store.trimBatches).
	batchWalk int64
}

const (
	upkeepEvery  = time.Minute
	upkeepBudget = 10000
	// batchBudget bounds the entries of the batch index one call removes or checks.
	batchBudget = 1000
)

// upkeepParams are what an upkeep uses: the pool run's context (done when the pool stops), the
// store, the logger, and the bounds of the dead set (WorkerPoolOptions.DeadMaxJobs, DeadMaxAge).
type upkeepParams struct {
	ctx         context.Context
	store       *rdb.Store
	logger      *slog.Logger
	deadMaxJobs int
	deadMaxAge  time.Duration
}

func newUpkeep(p upkeepParams) *upkeep { return &upkeep{upkeepParams: p} }

func (u *upkeep) start(wg *sync.WaitGroup) {
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			u.pass()
			wait := upkeepEvery + time.Duration(rand.Int64N(int64(5*time.Second)))
			select {
			case <-u.ctx.Done():
				return
			case <-time.After(wait):
			}
		}
	}()
}

// pass runs every task of the upkeep once.
func (u *upkeep) pass() {
	if u.deadMaxJobs > 0 || u.deadMaxAge > 0 {
		u.trimDead()
	}
	u.trimBatches()
}

// trimDead runs calls until nothing is left to trim; it returns the number trimmed.
func (u *upkeep) trimDead() int64 {
	var minDiedAt int64
	if u.deadMaxAge > 0 {
		minDiedAt = time.Now().Add(-u.deadMaxAge).Unix()
	}
	var total int64
	for u.ctx.Err() == nil {
		n, err := u.store.TrimDead(u.ctx, int64(max(u.deadMaxJobs, 0)), minDiedAt, upkeepBudget)
		if err != nil {
			if u.ctx.Err() == nil {
				u.logger.Error("work: trimming the dead set", "err", err)
			}
			break
		}
		total += n
		if n < upkeepBudget {
			break
		}
	}
	if total > 0 {
		u.logger.Info("work: trimmed the dead set", "jobs_removed", total)
	}
	return total
}

// trimBatches drops expired batches from the batch index: every one that is due, and a walk of a
// part of the index for entries whose batch is gone by another way. It returns the number removed.
func (u *upkeep) trimBatches() int64 {
	var total int64
	for u.ctx.Err() == nil {
		n, next, err := u.store.TrimBatches(u.ctx, batchBudget, batchBudget, u.batchWalk)
		if err != nil {
			if u.ctx.Err() == nil {
				u.logger.Error("work: trimming the batch index", "err", err)
			}
			break
		}
		u.batchWalk = next
		total += n
		if n < batchBudget {
			break
		}
	}
	return total
}
