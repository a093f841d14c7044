package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// Dependencies: a job can wait for other jobs, or batches, to succeed. Only tracked jobs (those with
// a record from their enqueue on: EnqueueOptions.Track, every job enqueued with dependencies, every
// step of a chain) can be waited for, since a job learns that others wait for it from its record.
// A dependency must exist when the dependant is enqueued, so dependencies point only to older jobs
// and no cycle can be built.

// ChainStep is one job of a chain; see Enqueuer.EnqueueChain.
type ChainStep struct {
	Name string
	Args map[string]interface{}
	// Key makes the step a keyed job; see EnqueueOptions.Key.
	Key string
}

const defaultRecordKeep = 24 * time.Hour

// dependencies returns what a job enqueued with o waits for, after checking each ID.
func (o *EnqueueOptions) dependencies() ([]rdb.Dep, error) {
	if len(o.After) == 0 && len(o.AfterBatches) == 0 {
		return nil, nil
	}
	deps := make([]rdb.Dep, 0, len(o.After)+len(o.AfterBatches))
	for _, id := range o.After {
		if err := checkBatchID(id); err != nil {
			return nil, fmt.Errorf("in After: %w", err)
		}
		deps = append(deps, rdb.JobDep(id))
	}
	for _, id := range o.AfterBatches {
		if err := checkBatchID(id); err != nil {
			return nil, err
		}
		deps = append(deps, rdb.BatchDep(id))
	}
	return deps, nil
}

// EnqueueChain enqueues jobs that run one after the other: each step once the one before it has
// succeeded. If a step dies, the steps after it go to the dead set with that reason. The steps are
// enqueued together or not at all; the first one is queued at once.
func (e *Enqueuer) EnqueueChain(steps ...ChainStep) ([]*Job, error) {
	if len(steps) == 0 {
		return nil, errors.New("work: a chain needs at least one step")
	}
	jobs := make([]*Job, len(steps))
	for i, st := range steps {
		job, err := newCheckedJob(st.Name, st.Args, st.Key)
		if err != nil {
			return nil, err
		}
		jobs[i] = job
	}
	return e.enqueueAfter(jobs, nil, EnqueueOptions{Track: true}, nil)
}

// enqueueAfter is the step of jobs that wait for others (made by newCheckedJob): it enqueues them as
// tracked jobs, the first waiting for deps and each next one for the job before it.
func (e *Enqueuer) enqueueAfter(jobs []*Job, deps []rdb.Dep, opts EnqueueOptions, mark *rdb.JobIDMark) ([]*Job, error) {
	keep := int64(defaultRecordKeep / time.Second)
	if opts.Keep > 0 {
		keep = max(int64((opts.Keep+time.Second-1)/time.Second), 1)
	}
	specs := make([]rdb.AfterJob, len(jobs))
	for i, job := range jobs {
		job.Tracked = true
		raw, err := job.serialize()
		if err != nil {
			return nil, err
		}
		specs[i] = rdb.AfterJob{ID: job.ID, Name: job.Name, Payload: raw, RunIfDepFails: opts.RunIfDependencyFails,
			Keep: keep, Key: job.Key, Deps: deps}
		if i > 0 {
			specs[i].Deps = []rdb.Dep{rdb.JobDep(jobs[i-1].ID)}
		}
	}
	if _, err := e.store.EnqueueAfter(context.Background(), e.replicaWait(), specs, mark); err != nil {
		return nil, err
	}
	return jobs, nil
}
