package work

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// Grouped jobs: many small jobs of one group handed to one handler call. A job enqueued with
// EnqueueOptions.Group waits in its group (its job name and group key); a handler registered with
// WorkerPool.GroupJob receives up to MaxSize of them in one call, when the group reaches MaxSize, or
// MaxDelay after its oldest job arrived, or Grace after its newest. The flush that takes them makes
// one call job, a keyed job of the name whose key is the group, so the name's keyed limits
// (KeyConcurrency: calls of one group at once) and the turns across keys apply to calls. A call is
// an ordinary job from there: it is retried as a whole, with the name's backoff, and dies after
// MaxFails, unless the handler reports outcomes per job (GroupError).

// GroupOptions are the options of WorkerPool.GroupJob. At least one of MaxSize, MaxDelay and Grace
// is set; times are to the second.
type GroupOptions struct {
	// MaxSize is the most jobs in one call, 1 to MaxGroupSize: a group that reaches it is flushed at
	// once. Zero: no bound by size (a flush by time takes up to MaxGroupSize jobs a call).
	MaxSize int
	// MaxDelay, when set (1 s to MaxGroupDelay), flushes a group this long after its oldest job
	// arrived.
	MaxDelay time.Duration
	// Grace, when set (1 s to MaxGroupDelay), flushes a group this long after its newest job arrived:
	// once its jobs stop coming.
	Grace time.Duration
	// JobOptions apply to the calls: priority, MaxFails and Backoff of a failed call (or of a job
	// failed alone), timeout, and the keyed limits of the groups (KeyConcurrency, KeyRateLimit).
	JobOptions
}

// Bounds of GroupOptions.
const (
	MaxGroupSize  = 10000
	MaxGroupDelay = 7 * 24 * time.Hour
)

// groupDefaultDelay is how long a group of a name no pool has registered with GroupJob waits after
// its first job: its jobs reach a handler even if the settings never come. A var for tests.
var groupDefaultDelay = 60 * time.Second

// check refuses options out of bounds.
func (o GroupOptions) check() error {
	bad := ""
	switch {
	case o.MaxSize < 0 || o.MaxSize > MaxGroupSize:
		bad = fmt.Sprintf("MaxSize %d: want 1 to %d, or 0 for none", o.MaxSize, MaxGroupSize)
	case o.MaxDelay != 0 && (o.MaxDelay < time.Second || o.MaxDelay > MaxGroupDelay):
		bad = fmt.Sprintf("MaxDelay %v: want 1s to %v, or 0 for none", o.MaxDelay, MaxGroupDelay)
	case o.Grace != 0 && (o.Grace < time.Second || o.Grace > MaxGroupDelay):
		bad = fmt.Sprintf("Grace %v: want 1s to %v, or 0 for none", o.Grace, MaxGroupDelay)
	case o.MaxSize == 0 && o.MaxDelay == 0 && o.Grace == 0:
		bad = "none of MaxSize, MaxDelay and Grace is set: the group would never be flushed"
	}
	if bad != "" {
		return fmt.Errorf("%w: %s", ErrMalformedGroup, bad)
	}
	return nil
}

// checkGroupEnqueue refuses a group key no key could be, and options a grouped job cannot have.
func checkGroupEnqueue(opts EnqueueOptions, scheduled bool) error {
	bad := ""
	switch {
	case opts.Key != "":
		bad = "a grouped job's key is its group; it cannot be given a Key"
	case scheduled || !opts.At.IsZero():
		bad = "a grouped job runs when its group is flushed, not At"
	case opts.Unique || opts.UniqueBy != nil:
		bad = "a grouped job cannot be Unique"
	case len(opts.After) > 0 || len(opts.AfterBatches) > 0 || opts.Track:
		bad = "a grouped job cannot have dependencies or a record"
	case opts.Debounce != nil:
		bad = "a grouped job cannot be debounced"
	}
	if bad != "" {
		return fmt.Errorf("%w: %s", ErrMalformedGroup, bad)
	}
	if err := checkKey(opts.Group); err != nil {
		return fmt.Errorf("%w: %w", ErrMalformedGroup, err)
	}
	return nil
}

// seconds rounds a duration up to whole seconds, the unit groups are timed in.
func seconds(d time.Duration) int64 { return int64((d + time.Second - 1) / time.Second) }

// enqueueGrouped is the step of a grouped job: into its group, which a full size flushes at once.
func (e *Enqueuer) enqueueGrouped(job *Job, mark *rdb.JobIDMark) (*Job, int64, error) {
	raw, err := job.serialize()
	if err != nil {
		return nil, 0, err
	}
	p := pendingPushes.Get().(*pendingPush)
	p.Push = rdb.Push{Name: job.Name, Payload: raw, Group: job.Group, GroupDefaultDelay: seconds(groupDefaultDelay)}
	e.writeScripted(p, mark)
	err = p.Err
	p.Push = rdb.Push{}
	pendingPushes.Put(p)
	if err != nil {
		return nil, 0, err
	}
	return job, 0, nil
}

// GroupError is what a group's handler returns to report outcomes per job: the jobs of the call
// named in Failed (by job ID) failed with their error, each on its own: it goes to the retry set
// (its Fails counted, after the name's backoff) or, at its last attempt or with FailNow, to the
// dead set (dropped with SkipDead). The call's other jobs succeeded, and the call counts as done. A
// job retried alone comes back as a call of one job. Any other error fails the whole call.
type GroupError struct {
	Failed map[string]error
}

func (e *GroupError) Error() string {
	ids := make([]string, 0, len(e.Failed))
	for id := range e.Failed {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	var b strings.Builder
	fmt.Fprintf(&b, "%d jobs of the call failed", len(ids))
	for i, id := range ids {
		if i == 3 {
			b.WriteString(", ...")
			break
		}
		fmt.Fprintf(&b, "; %s: %v", id, e.Failed[id])
	}
	return b.String()
}

// groupOutcomeTimeout bounds the write of the outcomes of single jobs.
const groupOutcomeTimeout = 10 * time.Second

// GroupJob registers fn as the handler of name's grouped jobs (EnqueueOptions.Group): each call
// receives up to opts.MaxSize jobs of one group, oldest first. fn is func([]*Job) error or
// func(context.Context, []*Job) error; a job of the name that was not enqueued into a group (or a
// job of a group retried alone, see GroupError) comes as a call of one job. The pool writes the
// settings to Redis when it starts (or at once on a started pool), so every enqueuer and pool of the
// namespace flushes by them; a name's groups wait 60 s after their first job until some pool has
// registered it. It panics on options out of bounds (ErrMalformedGroup), on another form of fn, and
// where JobWithOptions panics.
func (wp *WorkerPool) GroupJob(name string, opts GroupOptions, fn interface{}) *WorkerPool {
	if err := opts.check(); err != nil {
		panic(fmt.Sprintf("work: GroupJob(%q): %v", name, err))
	}
	var handle func(ctx context.Context, jobs []*Job) error
	switch f := fn.(type) {
	case func([]*Job) error:
		handle = func(_ context.Context, jobs []*Job) error { return f(jobs) }
	case func(context.Context, []*Job) error:
		handle = f
	default:
		panic(fmt.Sprintf("work: GroupJob(%q): handler has type %T; valid forms are func([]*work.Job) error and func(context.Context, []*work.Job) error", name, fn))
	}
	jobOpts := opts.JobOptions
	if jobOpts.MaxFails == 0 {
		jobOpts.MaxFails = defaultMaxFails
	}
	conf := rdb.GroupConf(int64(opts.MaxSize), seconds(opts.MaxDelay), seconds(opts.Grace))
	call := func(ctx context.Context, job *Job) error {
		jobs, err := callJobs(job)
		if err != nil {
			return FailNow(err)
		}
		err = handle(ctx, jobs)
		var ge *GroupError
		if !errors.As(err, &ge) {
			return err
		}
		outs, err := singleOutcomes(jobOpts, job, jobs, ge)
		if err != nil {
			return err
		}
		wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), groupOutcomeTimeout)
		defer cancel()
		if err := wp.store.WriteGroupOutcomes(wctx, outs); err != nil {
			return fmt.Errorf("work: writing the outcomes of single jobs of the call: %w", err)
		}
		return nil
	}
	return wp.register(name, opts.JobOptions, call, conf)
}

// callJobs returns the jobs a call carries: the jobs of its args for a call made by a flush (its
// Group is set), else the job itself.
func callJobs(job *Job) ([]*Job, error) {
	if job.Group == "" {
		return []*Job{job}, nil
	}
	var raws []json.RawMessage
	if job.raw != nil {
		var call struct {
			Args struct {
				Jobs []json.RawMessage `json:"jobs"`
			} `json:"args"`
		}
		if err := json.Unmarshal(job.raw, &call); err != nil {
			return nil, fmt.Errorf("the call's jobs cannot be read: %w", err)
		}
		raws = call.Args.Jobs
	} else {
		// A job not fetched from Redis (built by a test, say): its decoded args.
		list, _ := job.Args["jobs"].([]interface{})
		for _, v := range list {
			b, err := json.Marshal(v)
			if err != nil {
				return nil, fmt.Errorf("the call's jobs cannot be read: %w", err)
			}
			raws = append(raws, b)
		}
	}
	if len(raws) == 0 {
		return nil, errors.New("a call of a group holds no jobs")
	}
	jobs := make([]*Job, len(raws))
	for i, r := range raws {
		j := &Job{}
		if err := j.UnmarshalJSON(r); err != nil {
			return nil, fmt.Errorf("job %d of the call cannot be read: %w", i+1, err)
		}
		jobs[i] = j
	}
	return jobs, nil
}

// singleOutcomes decides where each job named in ge goes, as decideOutcome does for a job. A job
// retried alone waits as a keyed job of its group, without its group field: it is a call of one. A
// failed job that cannot be encoded again (its handler put a value JSON cannot hold in its args)
// fails the whole call, which is retried as a call, so that the job is never lost.
func singleOutcomes(opts JobOptions, call *Job, jobs []*Job, ge *GroupError) ([]rdb.GroupOutcome, error) {
	now := nowEpochSeconds()
	backoff := backoffOf(&jobType{JobOptions: opts})
	var outs []rdb.GroupOutcome
	for _, j := range jobs {
		err, ok := ge.Failed[j.ID]
		if !ok || err == nil {
			continue
		}
		if j.Group != "" {
			j.Key, j.Group = j.Group, ""
		} else if j.Key == "" {
			j.Key = call.Key
		}
		j.LastErr, j.FailedAt = errorText(err), now
		j.Fails++
		var failNow *FailNowError
		dead := errors.As(err, &failNow) || j.Fails >= int64(opts.MaxFails)
		if dead && opts.SkipDead {
			continue
		}
		score := now
		if !dead {
			score = now + backoff(j)
		}
		payload, err := j.serialize()
		if err != nil {
			return nil, fmt.Errorf("work: job %s of the call failed and cannot be encoded again: %w", j.ID, err)
		}
		outs = append(outs, rdb.GroupOutcome{Dead: dead, Score: score, Payload: payload})
	}
	return outs, nil
}

// GroupInfo is a group with jobs waiting (Client.Groups).
type GroupInfo struct {
	Name  string `json:"name"`
	Group string `json:"group"`
	// Size is how many jobs wait in the group.
	Size int64 `json:"size"`
	// Oldest is when its oldest job arrived (the server's clock, to the millisecond).
	Oldest time.Time `json:"oldest"`
	// NextFlush is when the group is flushed by time (to the second); zero when only its size
	// flushes it (a name whose GroupOptions set MaxSize alone).
	NextFlush time.Time `json:"next_flush"`
}

// Groups lists the groups of the job name that have jobs waiting (of every name when name is ""),
// the soonest to be flushed first. It reads the whole index of groups with jobs waiting.
func (c *Client) Groups(name string) ([]*GroupInfo, error) {
	groups, err := c.store.Groups(context.Background(), name)
	if err != nil {
		return nil, err
	}
	out := make([]*GroupInfo, 0, len(groups))
	for _, g := range groups {
		gi := &GroupInfo{Name: g.Name, Group: g.Group, Size: g.Size}
		if g.OldestMs > 0 {
			gi.Oldest = time.UnixMilli(g.OldestMs)
		}
		if g.Due >= 0 {
			gi.NextFlush = time.Unix(g.Due, 0)
		}
		out = append(out, gi)
	}
	return out, nil
}
