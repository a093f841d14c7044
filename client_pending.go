package work

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// The Client's view and repair of jobs that have not started: the pending jobs of debounced bursts,
// and jobs waiting in the scheduled or retry set moved to another time or given other args.

// PendingBurst is a burst of debounced enqueues whose job has not run yet (Client.PendingBursts).
type PendingBurst struct {
	// Name and ID are the job name and the debounce ID (the key, when the enqueues gave none).
	Name string `json:"name"`
	ID   string `json:"id"`
	// Job is the pending job, with the args it will run with.
	Job *Job `json:"job"`
	// First is when the burst began, RunAt when its job runs (unless more enqueues come).
	First time.Time `json:"first"`
	RunAt time.Time `json:"run_at"`
	// Window and MaxWait are the last enqueue's; Enqueues how many enqueues the burst has had (so
	// Enqueues-1 replaced or were merged into the pending job).
	Window   time.Duration `json:"window"`
	MaxWait  time.Duration `json:"max_wait"`
	Enqueues int64         `json:"enqueues"`
}

// MaxPendingBursts is the most bursts Client.PendingBursts lists.
const MaxPendingBursts = 1000

// PendingBursts lists the bursts of debounced enqueues whose job has not run yet, the soonest to run
// first, at most MaxPendingBursts.
func (c *Client) PendingBursts() ([]*PendingBurst, error) {
	bursts, err := c.store.PendingBursts(context.Background(), MaxPendingBursts)
	if err != nil {
		return nil, err
	}
	out := make([]*PendingBurst, 0, len(bursts))
	for _, b := range bursts {
		job := &Job{}
		if err := job.UnmarshalJSON(b.Payload); err != nil {
			job = &Job{Name: b.Name, Raw: b.Payload, LastErr: "cannot be read: " + err.Error()}
		}
		out = append(out, &PendingBurst{Name: b.Name, ID: b.ID, Job: job, First: time.UnixMilli(b.FirstMs),
			RunAt: time.Unix(b.RunAt, 0), Window: time.Duration(b.WindowMs) * time.Millisecond,
			MaxWait: time.Duration(b.MaxWaitMs) * time.Millisecond, Enqueues: b.Count})
	}
	return out, nil
}

// RescheduleJob moves the job with the given ID, the pending job of a debounced burst or one waiting
// in the scheduled set or the retry set, to run at t (to the second), unchanged otherwise. The
// pending job of a debounced burst stays the burst's: later enqueues of the burst still replace it
// and move its time. It returns ErrJobNotFound (wrapped) when no such job waits there: a queued or
// running job cannot be moved.
func (c *Client) RescheduleJob(jobID string, t time.Time) error {
	return c.replacePending(jobID, func(j *Job, score int64) (*Job, int64, error) { return j, t.Unix(), nil })
}

// ReplaceJobArgs gives the job with the given ID, the pending job of a debounced burst or one waiting
// in the scheduled set or the retry set, other args, keeping its ID, its time and the rest; see
// RescheduleJob.
func (c *Client) ReplaceJobArgs(jobID string, args map[string]interface{}) error {
	return c.replacePending(jobID, func(j *Job, score int64) (*Job, int64, error) {
		j.Args = args
		return j, score, nil
	})
}

// replacePending finds a job among the pending jobs of bursts, then in the scheduled and retry sets
// (the order jobs move in, so a job moving on meanwhile is still found), and replaces it with what
// edit makes of it.
func (c *Client) replacePending(jobID string, edit func(j *Job, score int64) (*Job, int64, error)) error {
	if jobID == "" {
		return errEmptyJobID
	}
	ctx := context.Background()
	needles := idNeedles(jobID)
	loc, burst, err := c.findBurst(ctx, jobID, needles)
	if err != nil {
		return err
	}
	at := rdb.Scheduled
	for _, set := range []struct {
		state JobState
		at    rdb.Place
	}{{JobStateScheduled, rdb.Scheduled}, {JobStateRetry, rdb.Retry}} {
		if loc != nil {
			break
		}
		if loc, err = c.findInSet(ctx, set.state, set.at, jobID, needles); err != nil {
			return err
		}
		at = set.at
	}
	if loc == nil {
		return fmt.Errorf("%w: no job %s waits in a debounced burst or in the scheduled or retry set", ErrJobNotFound, jobID)
	}
	if !loc.Decoded {
		return fmt.Errorf("work: the job %s cannot be decoded, so it cannot be edited: %s", jobID, loc.Job.LastErr)
	}
	j, score, err := edit(loc.Job, loc.Score)
	if err != nil {
		return err
	}
	payload, err := j.serialize()
	if err != nil {
		return fmt.Errorf("%w: %v", ErrMalformedArgs, err)
	}
	var ok bool
	if burst != nil {
		ok, err = c.store.EditBurst(ctx, burst.Name, burst.ID, burst.Payload, payload, score)
	} else {
		ok, err = c.store.Reschedule(ctx, at, []byte(loc.Payload), score, payload)
	}
	if err != nil {
		return err
	}
	if !ok && burst != nil {
		return fmt.Errorf("%w: %s was replaced by a later enqueue of its burst, or became due, meanwhile", ErrJobNotFound, jobID)
	}
	if !ok {
		return fmt.Errorf("%w: %s left the %s set meanwhile", ErrJobNotFound, jobID, loc.State)
	}
	return nil
}

// findBurst looks for a job ID among the pending jobs of debounced bursts, which it reports as
// scheduled at their run time, with the burst.
func (c *Client) findBurst(ctx context.Context, jobID string, needles [][]byte) (*JobLocation, *rdb.PendingBurst, error) {
	var loc *JobLocation
	var burst *rdb.PendingBurst
	err := c.store.EachPendingBurst(ctx, func(bursts []rdb.PendingBurst) bool {
		for i, b := range bursts {
			if j, ok, is := matchID(b.Payload, jobID, needles); is {
				loc = &JobLocation{State: JobStateScheduled, Score: b.RunAt, Job: j, Decoded: ok, Payload: string(b.Payload)}
				burst = &bursts[i]
				return false
			}
		}
		return true
	})
	return loc, burst, err
}

// deleteBurstJob deletes the pending job of a debounced burst with the given run time and ID, which
// ends its burst: DeleteScheduledJob's way to a job that waits in its burst rather than in the set.
func (c *Client) deleteBurstJob(runAt int64, jobID string) error {
	ctx := context.Background()
	_, b, err := c.findBurst(ctx, jobID, idNeedles(jobID))
	if err != nil {
		return err
	}
	if b == nil || b.RunAt != runAt {
		return ErrNotDeleted
	}
	ok, err := c.store.EditBurst(ctx, b.Name, b.ID, b.Payload, nil, 0)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotDeleted
	}
	return nil
}

// runBurstJobNow ends the burst whose pending job has the given run time and ID, its job moved into
// the scheduled set, and queues that job: RunScheduledJobNow's way to a job that waits in its burst.
func (c *Client) runBurstJobNow(runAt int64, jobID string) error {
	ctx := context.Background()
	_, b, err := c.findBurst(ctx, jobID, idNeedles(jobID))
	if err != nil {
		return err
	}
	if b == nil || b.RunAt != runAt {
		return ErrNotRetried
	}
	ok, at, err := c.store.EndBurst(ctx, b.Name, b.ID, b.Payload)
	if err != nil {
		return err
	}
	if !ok {
		return ErrNotRetried
	}
	// Not found there any more means that a pool's requeuer queued it first.
	if err := c.runNow(rdb.Scheduled, at, jobID); err != nil && !errors.Is(err, ErrNotRetried) {
		return err
	}
	return nil
}
