package work

// The job record (a hash per job: tracked jobs, and jobs whose pool keeps records of their name) as
// the Client and handlers read it, and the one vocabulary of job states that records and locations
// (JobLocation) share.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// JobState is a job's state, as Redis stores it and the JSON shows it. A JobLocation says where a
// job is: JobStateQueued, JobStateInProgress, JobStateScheduled, JobStateRetry or JobStateDead. A
// JobRecord says how far the job got: JobStateWaiting, JobStateQueued, JobStateRunning,
// JobStateRetrying, JobStateDone, JobStateDead, JobStateDropped or JobStateDeleted. Queued and dead
// mean the same in both.
type JobState string

// Where a job is (JobLocation.State).
const (
	JobStateQueued     JobState = "queued"      // waiting in its queue
	JobStateInProgress JobState = "in_progress" // fetched by a worker pool and not yet finished
	JobStateScheduled  JobState = "scheduled"   // in the scheduled set, to run at its score
	JobStateRetry      JobState = "retry"       // failed, in the retry set, to run again at its score
	JobStateDead       JobState = "dead"        // failed for good, in the dead set since its score
)

// How far a job with a record got (JobRecord.State), besides JobStateQueued and JobStateDead.
const (
	JobStateWaiting  JobState = "waiting"  // waiting for its dependencies, kept in its record only
	JobStateRunning  JobState = "running"  // an attempt is running (shown up to a second late)
	JobStateRetrying JobState = "retrying" // failed, to be retried
	JobStateDone     JobState = "done"     // succeeded
	JobStateDropped  JobState = "dropped"  // failed for good and dropped (JobOptions.SkipDead)
	JobStateDeleted  JobState = "deleted"  // deleted through the Client
)

// Findable reports whether a job whose record is in state s may be in a queue or set, where
// Client.FindJob looks: not when it waits for its dependencies (it is kept in its record only), nor
// once it is done, dropped or deleted.
func (s JobState) Findable() bool {
	switch s {
	case JobStateWaiting, JobStateDone, JobStateDropped, JobStateDeleted:
		return false
	}
	return true
}

// JobRecord is what Client.JobRecord reports about a tracked job, or a job whose pool keeps records
// of its name (JobOptions.KeepFinished).
type JobRecord struct {
	ID   string `json:"id"`
	Name string `json:"name"`
	// State is JobStateWaiting (for dependencies), JobStateQueued, JobStateRunning,
	// JobStateRetrying, JobStateDone, JobStateDead, JobStateDropped or JobStateDeleted. A job shows
	// running once its attempt has run for up to a second (the pool writes it with the worker
	// observations); a quick job may go from queued to done.
	State      JobState `json:"state"`
	EnqueuedAt int64    `json:"enqueued_at,omitempty"`
	FinishedAt int64    `json:"finished_at,omitempty"`
	// Attempts counts the attempts started, the running one included.
	Attempts int64  `json:"attempts,omitempty"`
	Pool     string `json:"pool,omitempty"` // the pool that runs its attempt, or ran its last one
	Err      string `json:"err,omitempty"`
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

// Ended reports whether the record's state is final: done, dead, dropped or deleted. A dead job
// may still be retried by hand from the dead set, and then run again.
func (r *JobRecord) Ended() bool {
	switch r.State {
	case JobStateDone, JobStateDead, JobStateDropped, JobStateDeleted:
		return true
	}
	return false
}

// parseJobRecord reads a record hash (HGETALL reply as a map).
func parseJobRecord(id string, h map[string]string) *JobRecord {
	r := &JobRecord{ID: id, Name: h["name"], State: JobState(h["state"]), Pool: h["pool"], Err: h["err"], Batch: h["batch"]}
	num := func(k string) int64 {
		var n int64
		fmt.Sscan(h[k], &n)
		return n
	}
	r.EnqueuedAt, r.FinishedAt, r.Attempts = num("enqueued_at"), num("finished_at"), num("attempts")
	if r.State == JobStateWaiting {
		r.WaitingFor = num("deps")
	}
	r.StartedAt = num("started_at")
	if r.State == JobStateRunning {
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

// JobRecord returns the record of a job: one round trip. Tracked jobs have one from their enqueue;
// other jobs when they end, if their pool keeps records of their name.
func (c *Client) JobRecord(id string) (*JobRecord, error) {
	if err := checkBatchID(id); err != nil {
		return nil, err
	}
	return c.readJobRecord(context.Background(), id)
}

// readJobRecord reads the record of a job whose ID was checked; ErrNoRecord when there is none.
func (c *Client) readJobRecord(ctx context.Context, id string) (*JobRecord, error) {
	h, err := c.store.JobRecord(ctx, id)
	if err != nil {
		return nil, err
	}
	if h == nil {
		return nil, ErrNoRecord
	}
	return parseJobRecord(id, h), nil
}

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

// JobLookup is what Client.LookupJob knows of a job: its record, where it is, or both.
type JobLookup struct {
	ID string
	// Record is the job's record; nil when it has none, or when RecordErr says why it cannot be
	// read.
	Record *JobRecord
	// RecordErr, when set, says why the job's record exists but cannot be read (it wraps
	// ErrWrongType: another program wrote its key).
	RecordErr error
	// Location is where the job is; nil when it is in no queue or set (then its record says why:
	// it waits for its dependencies, or it ended).
	Location *JobLocation
}

// LookupJob returns what is known of the job id: its record (one round trip), then where it is
// (FindJob, which reads every job in the worst case) unless the record's state says it cannot be in
// a queue or set (JobState.Findable). An ID no record can have (a periodic job's, say) is only
// looked for in the queues and sets. A job that moves on between the two reads (it finished, say)
// is returned with its record only. It returns an error wrapping ErrJobNotFound when the job has
// neither a record nor a place.
func (c *Client) LookupJob(id string) (*JobLookup, error) {
	l := &JobLookup{ID: id}
	if CheckID(id) == nil {
		rec, err := c.readJobRecord(context.Background(), id)
		switch {
		case err == nil:
			l.Record = rec
		case errors.Is(err, ErrNoRecord):
		case errors.Is(err, ErrWrongType):
			l.RecordErr = err
		default:
			return nil, err
		}
	}
	if l.Record != nil && !l.Record.State.Findable() {
		return l, nil
	}
	loc, err := c.FindJob(id)
	if errors.Is(err, ErrJobNotFound) && l.Record != nil {
		return l, nil
	}
	if err != nil {
		return nil, err
	}
	l.Location = loc
	return l, nil
}
