package work

import (
	"bytes"
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// A batch is a group of jobs with callbacks: jobs that run once every member has ended. Members are
// ordinary jobs, queued and run as any other, that carry the batch's ID; the batch itself is a small
// hash of counters (see docs/redis-layout.md), so a batch of a million members costs no more
// bookkeeping than one of ten.
//
// A batch is open while members are still being added: from the program that created it, and from
// inside its members, whose fan-out keeps the batch going until their own children end. Close says no
// more members will come from outside; once the batch is closed and no member is pending (each one
// succeeded or died), the batch completes: OnComplete runs, and OnSuccess too when no member died.
// Each callback runs exactly once, whatever happens to the workers (a member is counted when its
// outcome is recorded, in the same script that removes it from its pool's in-progress list, so a
// member that runs twice after a crash counts once).

// BatchOptions describe a batch; see Enqueuer.NewBatch.
type BatchOptions struct {
	// Description is shown with the batch's status.
	Description string
	// OnComplete, when set, is the job enqueued once every member has ended (done or dead).
	OnComplete *BatchCallback
	// OnSuccess, when set, is the job enqueued once every member has succeeded; it never runs for a
	// batch with a dead member.
	OnSuccess *BatchCallback
	// Keep is how long the batch's status stays readable after it completed. Zero: 24 hours.
	Keep time.Duration
}

// BatchCallback is a job enqueued when a batch completes. Besides Args, it receives the batch's ID
// and counts in its args: batch_id, batch_total, batch_done, batch_dead and batch_failed (see
// BatchStatus).
type BatchCallback struct {
	Name string
	Args map[string]interface{}
}

// Batch is a handle on a batch, to add members to it and close it. It is safe for concurrent use.
type Batch struct {
	ID string
	e  *Enqueuer
}

const defaultBatchKeep = 24 * time.Hour

// NewBatch creates an open batch with a new ID. Add members with Batch.Add, then Close it.
func (e *Enqueuer) NewBatch(opts BatchOptions) (*Batch, error) {
	b := &Batch{ID: makeIdentifier(), e: e}
	if err := e.runBatch(b.ID, "o", &opts); err != nil {
		return nil, err
	}
	return b, nil
}

// EnqueueInBatch creates a batch with the given members and closes it, atomically: either every job
// is queued, or none is and no batch exists. Jobs are returned in the order given.
func (e *Enqueuer) EnqueueInBatch(opts BatchOptions, jobs []BatchJob) (*Batch, []*Job, error) {
	if len(jobs) == 0 {
		return nil, nil, ErrBatchEmpty
	}
	b := &Batch{ID: makeIdentifier(), e: e}
	out, err := e.addToBatch(b.ID, "oac", &opts, jobs)
	if err != nil {
		return nil, nil, err
	}
	return b, out, nil
}

// OpenBatch returns a handle on an existing batch, such as the one a running member belongs to
// (job.Batch), to add members to it. It does not check that the batch exists: Add and Close do.
func (e *Enqueuer) OpenBatch(id string) *Batch { return &Batch{ID: id, e: e} }

// Add queues jobs as members of the batch, atomically. A member may add to its own batch while it
// runs (the batch cannot complete before the member itself ends). It returns ErrBatchNotFound or
// ErrBatchComplete when the batch takes no members.
func (b *Batch) Add(jobs ...BatchJob) ([]*Job, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	return b.e.addToBatch(b.ID, "a", nil, jobs)
}

// Close marks the batch as having all its members from outside (members may still add more). The
// batch completes once no member is pending, at once if none is. It returns ErrBatchEmpty for a
// batch without members, ErrBatchComplete for one that has completed already.
func (b *Batch) Close() error {
	return b.e.runBatch(b.ID, "c", nil)
}

// addToBatch queues jobs as members of batch id (steps as for batchScript).
func (e *Enqueuer) addToBatch(id, steps string, opts *BatchOptions, jobs []BatchJob) ([]*Job, error) {
	out, names, payloads, keyed, err := makeJobs(jobs, id)
	if err != nil {
		return nil, err
	}
	groups := make([]rdb.KeyedGroup, 0, len(names)+len(keyed))
	for _, n := range names {
		groups = append(groups, rdb.KeyedGroup{Name: n, Payloads: payloads[n]})
	}
	if err := e.runBatchWith(id, steps, opts, append(groups, keyed...)); err != nil {
		return nil, err
	}
	return out, nil
}

func (e *Enqueuer) runBatch(id, steps string, opts *BatchOptions) error {
	return e.runBatchWith(id, steps, opts, nil)
}

func (e *Enqueuer) runBatchWith(id, steps string, opts *BatchOptions, groups []rdb.KeyedGroup) error {
	if err := checkBatchID(id); err != nil {
		return err
	}
	var open rdb.BatchOpen
	if opts != nil {
		var err error
		if open, err = encodeBatchOpen(id, opts); err != nil {
			return err
		}
	}
	err := e.store.Batch(context.Background(), e.replicaWait(), id, steps, open, groups)
	return err
}

func encodeBatchOpen(id string, opts *BatchOptions) (rdb.BatchOpen, error) {
	o := rdb.BatchOpen{Description: opts.Description, Keep: int64(defaultBatchKeep / time.Second)}
	if opts.Keep > 0 {
		o.Keep = max(int64((opts.Keep+time.Second-1)/time.Second), 1)
	}
	var err error
	if opts.OnComplete != nil {
		o.OnCompleteName = opts.OnComplete.Name
		if o.OnComplete, err = callbackHead(id, opts.OnComplete); err != nil {
			return o, err
		}
	}
	if opts.OnSuccess != nil {
		o.OnSuccessName = opts.OnSuccess.Name
		if o.OnSuccess, err = callbackHead(id, opts.OnSuccess); err != nil {
			return o, err
		}
	}
	return o, nil
}

// batchCountArgs are the args the script appends to a callback's own.
var batchCountArgs = []string{"batch_total", "batch_done", "batch_dead", "batch_failed"}

// callbackHead encodes a callback job up to the end of its args, which the completing script closes
// after appending the batch's counts: the args object is the payload's last field.
func callbackHead(batchID string, cb *BatchCallback) ([]byte, error) {
	if err := checkJobName(cb.Name); err != nil {
		return nil, err
	}
	args := make(map[string]interface{}, len(cb.Args)+1)
	for k, v := range cb.Args {
		for _, reserved := range batchCountArgs {
			if k == reserved {
				return nil, fmt.Errorf("work: batch callback arg %q is set by the batch", k)
			}
		}
		args[k] = v
	}
	args["batch_id"] = batchID
	raw, err := newJob(cb.Name, args).serialize()
	if err != nil {
		return nil, err
	}
	if !bytes.HasSuffix(raw, []byte("}}")) {
		return nil, fmt.Errorf("work: batch callback %q does not encode with its args last", cb.Name)
	}
	return raw[:len(raw)-2], nil
}

// BatchStatus is what Client.BatchStatus reports about a batch.
type BatchStatus struct {
	ID          string `json:"id"`
	Description string `json:"description"`
	// State is open (members may come from outside), closed (waiting for members to end) or
	// complete (callbacks fired).
	State   string `json:"state"`
	Total   int64  `json:"total"`   // members added
	Pending int64  `json:"pending"` // members not yet ended
	Done    int64  `json:"done"`    // members that succeeded
	Dead    int64  `json:"dead"`    // members that failed for good (dead or dropped)
	// Failed counts failed attempts of members: each retry and each death.
	Failed          int64  `json:"failed"`
	CreatedAt       int64  `json:"created_at"`
	CompletedAt     int64  `json:"completed_at,omitempty"`
	OnComplete      string `json:"on_complete,omitempty"`       // the callback's job name
	OnSuccess       string `json:"on_success,omitempty"`        // the callback's job name
	OnCompleteFired int64  `json:"on_complete_fired,omitempty"` // when it was enqueued, epoch s
	OnSuccessFired  int64  `json:"on_success_fired,omitempty"`  // when it was enqueued, epoch s
	// Damaged is set when the batch's hash holds values no writer of this library wrote (another
	// program changed it): its counts are then unreliable.
	Damaged bool `json:"damaged,omitempty"`
}

// parseBatchStatus reads a batch hash (HGETALL reply as a map).
func parseBatchStatus(id string, h map[string]string) *BatchStatus {
	s := &BatchStatus{ID: id, Description: h["description"], State: h["state"],
		OnComplete: h["on_complete_name"], OnSuccess: h["on_success_name"]}
	num := func(k string) int64 {
		v, ok := h[k]
		if !ok {
			return 0
		}
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			s.Damaged = true
		}
		return n
	}
	c := num("c")
	s.Total, s.Failed, s.CreatedAt, s.CompletedAt = num("total"), num("failed"), num("created_at"), num("completed_at")
	s.OnCompleteFired, s.OnSuccessFired = num("complete_fired"), num("success_fired")
	if c < 0 {
		s.Damaged = true
		c = 0
	}
	s.Pending, s.Dead = c%rdb.BatchCounterUnit, c/rdb.BatchCounterUnit
	s.Done = s.Total - s.Pending - s.Dead
	switch s.State {
	case "open", "closed", "complete":
	default:
		s.Damaged = true
	}
	if s.Done < 0 {
		s.Damaged = true
		s.Done = 0
	}
	return s
}
