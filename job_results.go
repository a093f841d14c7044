package work

import (
	"context"
	"errors"
)

// ErrNotInPool is returned by Job.DependencyResults for a job that no worker pool runs (a handler
// called by a test, say).
var ErrNotInPool = errors.New("work: the job is not run by a worker pool")

// DependencyResults returns the records of the jobs this job waited for, in one round trip: those
// named in EnqueueOptions.After when it was enqueued, or the step before it in a chain, in that
// order. Each record holds the dependency's state and the result its handler set with SetResult
// (JobRecord.Result), so that a job that fans in reads what the jobs before it produced. With
// RunIfDependencyFails a dependency may be dead; it is then there with its state and error.
//
// A job without such dependencies (none, or only batches: AfterBatches) gets none. A dependency
// whose record expired (its Keep elapsed before this job ran) has only its ID. Call it from the
// handler, while the job runs.
func (j *Job) DependencyResults(ctx context.Context) ([]*JobRecord, error) {
	w := j.observer
	if w == nil || w.store == nil {
		return nil, ErrNotInPool
	}
	ids, hashes, err := w.store.DependencyResults(ctx, j.ID)
	if err != nil {
		return nil, err
	}
	out := make([]*JobRecord, len(ids))
	for i, id := range ids {
		out[i] = parseJobRecord(id, hashes[i])
	}
	return out, nil
}
