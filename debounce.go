package work

import (
	"fmt"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// Debounce makes an enqueue part of a burst: the enqueues of one job name and debounce ID become
// one job, which runs Window after the last of them, but no later than MaxWait after the first.
// Each enqueue while the burst's job is pending replaces its args (the latest win; KeepFirst keeps
// the first) and moves its run time. Once the job is due it is an ordinary job: it is never
// replaced, and the next enqueue begins a new burst. So every burst runs exactly once, with the
// args of its last enqueue (or its first). The job is due in whole seconds, as EnqueueAt's: at least
// Window after the last enqueue (less than a second more), and no later than MaxWait after the
// first. Until it is due the pending job waits with its burst, not in the scheduled set:
// Client.PendingBursts lists it, and the Client's methods that take a job by its ID or its run time
// and ID (FindJob, RescheduleJob, DeleteScheduledJob, RunScheduledJobNow, ...) reach it.
//
// "A user edits a document 40 times in a minute; re-index it once, 5 seconds after the last edit,
// but never later than a minute after the first":
//
//	e.EnqueueWith("reindex", work.Q{"doc": id}, work.EnqueueOptions{
//		Debounce: &work.Debounce{ID: id, Window: 5 * time.Second, MaxWait: time.Minute},
//	})
type Debounce struct {
	// ID names the burst within the job name: enqueues with the same name and ID are one burst.
	// Empty: the job's key (EnqueueOptions.Key), or for a job without one its name, so that by
	// default the name and key make the burst. The same rules as a key's apply (1 to MaxKeyLen bytes
	// of UTF-8, no control character or brace), except that it may be empty.
	ID string
	// Window is how long after the burst's last enqueue its job runs: 1 second to 24 hours.
	Window time.Duration
	// MaxWait bounds how long after the burst's first enqueue its job runs, however the enqueues
	// keep coming: zero for no bound, else Window to 7 days.
	MaxWait time.Duration
	// KeepFirst keeps the args of the burst's first enqueue; later enqueues only move its run time.
	KeepFirst bool
}

// Bounds of Debounce.
const (
	MaxDebounceWindow  = 24 * time.Hour
	MaxDebounceMaxWait = 7 * 24 * time.Hour
)

// check refuses a debounce out of bounds, or with options it cannot go with.
func (d *Debounce) check(opts EnqueueOptions) error {
	bad := ""
	switch {
	case d.Window < time.Second || d.Window > MaxDebounceWindow:
		bad = fmt.Sprintf("window %v: want 1s to %v", d.Window, MaxDebounceWindow)
	case d.MaxWait != 0 && (d.MaxWait < d.Window || d.MaxWait > MaxDebounceMaxWait):
		bad = fmt.Sprintf("maximum wait %v: want 0 (none) or the window (%v) to %v", d.MaxWait, d.Window, MaxDebounceMaxWait)
	case !opts.At.IsZero():
		bad = "a debounced job runs when its burst ends, not At"
	case opts.Unique || opts.UniqueBy != nil:
		bad = "a debounced job is unique in its burst already; it cannot be Unique"
	case len(opts.After) > 0 || len(opts.AfterBatches) > 0 || opts.Track:
		bad = "a debounced job cannot have dependencies or a record"
	}
	if bad != "" {
		return fmt.Errorf("%w: %s", ErrMalformedDebounce, bad)
	}
	if d.ID != "" {
		if err := checkKey(d.ID); err != nil {
			return fmt.Errorf("%w: ID: %w", ErrMalformedDebounce, err)
		}
	}
	return nil
}

// burstID is the ID of the burst: its own, or the job's key, or its name.
func (d *Debounce) burstID(job *Job) string {
	switch {
	case d.ID != "":
		return d.ID
	case job.Key != "":
		return job.Key
	}
	return job.Name
}

// enqueueDebounced is the step of a debounced job: the burst's pending job is this one, or keeps
// its args (KeepFirst). It returns the pending job and when it runs.
func (e *Enqueuer) enqueueDebounced(job *Job, d *Debounce, mark *rdb.JobIDMark) (*Job, int64, error) {
	job.Debounce = d.burstID(job)
	raw, err := job.serialize()
	if err != nil {
		return nil, 0, err
	}
	p := pendingPushes.Get().(*pendingPush)
	p.Push = rdb.Push{Name: job.Name, Payload: raw, Debounce: &rdb.DebounceSpec{ID: job.Debounce,
		WindowMs: d.Window.Milliseconds(), MaxWaitMs: d.MaxWait.Milliseconds(), KeepFirst: d.KeepFirst}}
	e.writeScripted(p, mark)
	reply, err := p.Reply, p.Err
	p.Push = rdb.Push{}
	pendingPushes.Put(p)
	if err != nil {
		return nil, 0, err
	}
	r, err := rdb.DebounceReply(reply)
	if err != nil {
		return nil, 0, err
	}
	if r.State == "kept" {
		pending := &Job{}
		if err := pending.UnmarshalJSON(r.Payload); err != nil {
			return nil, 0, fmt.Errorf("work: the pending job of the burst cannot be read: %w", err)
		}
		job = pending
	}
	return job, 0, nil
}
