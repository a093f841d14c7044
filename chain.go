package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Dependencies: a job can wait for other jobs, or batches, to succeed. Only tracked jobs (those with
// a record from their enqueue on: EnqueueOptions.Track, every job enqueued with dependencies, every
// step of a chain) can be waited for, since a job learns that others wait for it from its record.
// A dependency must exist when the dependant is enqueued, so dependencies point only to older jobs
// and no cycle can be built.

// EnqueueOptions are the options of Enqueuer.EnqueueWith.
type EnqueueOptions struct {
	// After makes the job wait until every job listed (by ID; tracked jobs only) has succeeded.
	After []string
	// AfterBatches makes the job wait until every batch listed has completed with no dead member.
	AfterBatches []string
	// RunIfDependencyFails runs the job all the same once its dependencies have ended, even if one
	// of them died. By default a job whose dependency dies goes to the dead set, with the reason,
	// and so do the jobs waiting for it.
	RunIfDependencyFails bool
	// Track gives the job a record from now on, so that other jobs can wait for it and
	// Client.JobRecord tells its state in one round trip. Jobs with dependencies are tracked anyway.
	Track bool
	// Keep is how long the record of a tracked job stays after the job ended. Zero: 24 hours.
	Keep time.Duration

	// Key makes the job a keyed job (see keyed.go's overview in the package documentation): it waits
	// in its key's queue and is served in its key's turn, within the per-key limits of its name
	// (JobOptions.KeyConcurrency, KeyRateLimit, KeyMaxWaiting). It keeps its key through retries,
	// scheduling and a retry from the dead set. A key is 1 to MaxKeyLen bytes of UTF-8 without
	// control characters or braces; an enqueue past the key's KeyMaxWaiting fails with ErrKeyFull.
	Key string
	// At schedules the job to run at that time (to the second), as EnqueueAt does.
	At time.Time
	// Unique enqueues the job only when no job of the same name, key and args waits, as
	// EnqueueUnique does; UniqueBy compares that map instead of the args, as EnqueueUniqueByKey
	// does (and implies Unique). EnqueueWith returns a nil job for a duplicate. A unique job cannot
	// have dependencies or a record.
	Unique   bool
	UniqueBy map[string]interface{}
}

// ErrUnknownDependency is returned when a job or batch named as a dependency has no record: it was
// never tracked, never existed, or its record expired.
var ErrUnknownDependency = errors.New("work: unknown dependency")

// ChainStep is one job of a chain; see Enqueuer.EnqueueChain.
type ChainStep struct {
	Name string
	Args map[string]interface{}
	// Key makes the step a keyed job; see EnqueueOptions.Key.
	Key string
}

const defaultRecordKeep = 24 * time.Hour

// EnqueueWith enqueues a job with options: dependencies on other jobs or batches, or a record. A job
// whose dependencies have all succeeded already is queued at once. The returned job's ID is what
// later jobs name in After.
func (e *Enqueuer) EnqueueWith(jobName string, args map[string]interface{}, opts EnqueueOptions) (*Job, error) {
	if opts.Key != "" {
		if err := checkKey(opts.Key); err != nil {
			return nil, err
		}
	}
	waits := len(opts.After) > 0 || len(opts.AfterBatches) > 0 || opts.Track
	unique := opts.Unique || opts.UniqueBy != nil
	switch {
	case unique && waits:
		return nil, errors.New("work: a unique job cannot have dependencies or a record")
	case !opts.At.IsZero() && waits:
		return nil, errors.New("work: a scheduled job cannot have dependencies or a record")
	case unique:
		var secs int64
		if !opts.At.IsZero() {
			secs = opts.At.Unix() - nowEpochSeconds()
		}
		job, _, err := e.enqueueUnique(jobName, !opts.At.IsZero(), secs, args, opts.UniqueBy, opts.Key)
		return job, err
	case !opts.At.IsZero():
		sj, err := e.enqueueIn(jobName, opts.At.Unix()-nowEpochSeconds(), args, opts.Key)
		if err != nil {
			return nil, err
		}
		return sj.Job, nil
	case !waits && opts.Key != "":
		return e.enqueueKeyed(jobName, args, opts.Key)
	case !waits:
		return e.Enqueue(jobName, args)
	}
	var deps []string
	for _, id := range opts.After {
		if err := checkBatchID(id); err != nil {
			return nil, fmt.Errorf("in After: %w", err)
		}
		deps = append(deps, "j:"+id)
	}
	for _, id := range opts.AfterBatches {
		if err := checkBatchID(id); err != nil {
			return nil, err
		}
		deps = append(deps, "b:"+id)
	}
	jobs, err := e.enqueueAfter([]ChainStep{{Name: jobName, Args: args, Key: opts.Key}}, deps, opts)
	if err != nil {
		return nil, err
	}
	return jobs[0], nil
}

// EnqueueChain enqueues jobs that run one after the other: each step once the one before it has
// succeeded. If a step dies, the steps after it go to the dead set with that reason. The steps are
// enqueued together or not at all; the first one is queued at once.
func (e *Enqueuer) EnqueueChain(steps ...ChainStep) ([]*Job, error) {
	if len(steps) == 0 {
		return nil, errors.New("work: a chain needs at least one step")
	}
	return e.enqueueAfter(steps, nil, EnqueueOptions{Track: true})
}

// enqueueAfter enqueues steps as tracked jobs, the first waiting for deps and each next one for the
// step before it.
func (e *Enqueuer) enqueueAfter(steps []ChainStep, deps []string, opts EnqueueOptions) ([]*Job, error) {
	keep := int64(defaultRecordKeep / time.Second)
	if opts.Keep > 0 {
		keep = max(int64((opts.Keep+time.Second-1)/time.Second), 1)
	}
	policy := "dead"
	if opts.RunIfDependencyFails {
		policy = "run"
	}
	out := make([]*Job, len(steps))
	specs := make([]afterJob, len(steps))
	for i, st := range steps {
		if err := checkJobName(st.Name); err != nil {
			return nil, err
		}
		if st.Key != "" {
			if err := checkKey(st.Key); err != nil {
				return nil, err
			}
		}
		job := newJob(st.Name, st.Args)
		job.Tracked = true
		job.Key = st.Key
		raw, err := job.serialize()
		if err != nil {
			return nil, err
		}
		specs[i] = afterJob{id: job.ID, name: st.Name, payload: raw, policy: policy, keep: keep, key: st.Key, deps: deps}
		if i > 0 {
			specs[i].deps = []string{"j:" + out[i-1].ID}
		}
		out[i] = job
	}
	if _, err := e.store.enqueueAfter(context.Background(), e.replicaWait(), specs); err != nil {
		var re redis.Error
		if errors.As(err, &re) && strings.HasPrefix(string(re), "WORKDEP unknown ") {
			dep := strings.TrimPrefix(string(re), "WORKDEP unknown ")
			return nil, fmt.Errorf("%w: %s", ErrUnknownDependency, dep[2:])
		}
		return nil, err
	}
	return out, nil
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
