package work

import (
	"context"
	"encoding/json"
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

// ErrUnknownDependency is returned when a job or batch named as a dependency has no record: it was
// never tracked, never existed, or its record expired.
var ErrUnknownDependency = rdb.ErrUnknownDependency

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
	return e.enqueueAfter(jobs, nil, EnqueueOptions{Track: true})
}

// enqueueAfter is the step of jobs that wait for others (made by newCheckedJob): it enqueues them as
// tracked jobs, the first waiting for deps and each next one for the job before it.
func (e *Enqueuer) enqueueAfter(jobs []*Job, deps []rdb.Dep, opts EnqueueOptions) ([]*Job, error) {
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
	if _, err := e.store.EnqueueAfter(context.Background(), e.replicaWait(), specs); err != nil {
		return nil, err
	}
	return jobs, nil
}

// JobRecord is what Client.JobRecord reports about a tracked job, or a job whose pool keeps records
// of its name (JobOptions.KeepFinished).
type JobRecord struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// State is waiting (for dependencies), queued, running, retrying, done, dead, dropped or
	// deleted. A job shows running once its attempt has run for up to a second (the pool writes it
	// with the worker observations); a quick job may go from queued to done.
	State      string `json:"state"`
	EnqueuedAt int64  `json:"enqueued_at,omitempty"`
	FinishedAt int64  `json:"finished_at,omitempty"`
	Attempts   int64  `json:"attempts,omitempty"`
	Pool       string `json:"pool,omitempty"` // the pool that runs its attempt, or ran its last one
	Err        string `json:"err,omitempty"`
	// Result is what the handler recorded with Job.SetResult.
	Result json.RawMessage `json:"result,omitempty"`
	Batch  string          `json:"batch,omitempty"`
	// WaitingFor is the number of dependencies a waiting job still waits for.
	WaitingFor int64 `json:"waiting_for,omitempty"`
	// StartedAt is when the attempt running, or the last one seen running, started (epoch seconds);
	// Attempt is the running attempt (1 for the first), set while State is running.
	StartedAt int64 `json:"started_at,omitempty"`
	Attempt   int64 `json:"attempt,omitempty"`
	// Progress is the last progress the job reported (Job.SetProgress), kept after it ends.
	Progress *Progress `json:"progress,omitempty"`
}

// parseJobRecord reads a record hash (HGETALL reply as a map).
func parseJobRecord(id string, h map[string]string) *JobRecord {
	r := &JobRecord{ID: id, Name: h["name"], State: h["state"], Pool: h["pool"], Err: h["err"], Batch: h["batch"]}
	num := func(k string) int64 {
		var n int64
		fmt.Sscan(h[k], &n)
		return n
	}
	r.EnqueuedAt, r.FinishedAt, r.Attempts = num("enqueued_at"), num("finished_at"), num("attempts")
	if r.State == "waiting" {
		r.WaitingFor = num("deps")
	}
	r.StartedAt = num("started_at")
	if r.State == "running" {
		r.Attempt = num("attempt")
	}
	r.Progress = parseProgress(h["progress"], h["progress_msg"], h["progress_at"])
	if v, ok := h["result"]; ok && v != "" {
		r.Result = json.RawMessage(v)
		if !json.Valid(r.Result) {
			// Not written by SetResult: shown as the text it is.
			r.Result, _ = json.Marshal(v)
		}
	}
	return r
}
