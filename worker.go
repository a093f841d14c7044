package work

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// worker runs jobs handed to it by the fetcher, one at a time, and hands each outcome to the acker.
type worker struct {
	id    string
	r     *poolRun
	state *workerState
}

func newWorker(r *poolRun) *worker {
	id := makeIdentifier()
	return &worker{id: id, r: r, state: &workerState{workerID: id, store: r.wp.store}}
}

func (w *worker) loop(wg *sync.WaitGroup) {
	defer wg.Done()
	for job := range w.r.fetcher.jobs {
		w.r.fetcher.taken.Add(1)
		w.process(job)
	}
}

// current returns the job the worker is running, or nil.
func (w *worker) current() *Job { return w.state.currentJob() }

func (w *worker) process(job *Job) {
	r := w.r
	if err := decodeFetched(job, job.q.name); err != nil {
		r.wp.logger.Error("work: payload sent to the dead set", "job_name", job.q.name, "err", err)
		r.acker.submit(deadLetterOp(job, err))
		return
	}
	jt := job.q.jt
	// The middleware and options registered when the job starts apply to it.
	set := r.jobs()
	if job.Unique && job.Fails == 0 {
		// Only a first attempt holds the lock: by a retry it may belong to a later identical job.
		w.claimUnique(job)
	}
	job.observer = w.state
	// A context of its own only when a function of the chain receives it or the job has a timeout:
	// otherwise nothing could see it, and a cancel is recorded in the worker's state instead.
	ctx, cancel := r.jobCtx, context.CancelCauseFunc(nil)
	if set.contextual(jt) {
		ctx, cancel = context.WithCancelCause(r.jobCtx)
	}
	w.state.start(job, cancel)
	start := time.Now()
	res := w.runJob(ctx, set, jt, job)
	r.fetcher.ran(time.Since(start))
	cancelled := w.state.done()
	res.cancelled = res.err != nil && (cancelled || (cancel != nil && isCancelled(ctx)))
	if cancel != nil {
		cancel(nil)
	}
	job.observer = nil
	if res.err != nil {
		r.wp.logger.Warn("work: job failed", "job_name", job.Name, "job_id", job.ID, "attempt", job.Fails+1,
			"duration", time.Since(start), "err", errorText(res.err))
	}
	op := w.safeOutcome(jt, job, res)
	if op.Ext != nil && jt.UniqueUntilDone && job.Unique {
		op.Ext.UniqueKey = w.uniqueKey(job) // held since the start: released as the job ends
	}
	if r.abandoned.Load() {
		r.fetcher.finished()
		return
	}
	r.acker.submit(op)
	if hook := r.wp.opts.OnOutcome; hook != nil {
		w.report(hook, JobOutcome{Job: job, Result: resultOf(op), Err: res.err,
			Panicked: res.panicked, Cancelled: res.cancelled, Duration: time.Since(start)})
	}
}

// report calls the OnOutcome hook, recovering a panic in it.
func (w *worker) report(hook func(JobOutcome), o JobOutcome) {
	defer func() {
		if p := recover(); p != nil {
			w.r.wp.logger.Error("work: OnOutcome panicked", "job_name", o.Job.Name, "job_id", o.Job.ID,
				"panic", fmt.Sprintf("%v", p), "stack", string(debug.Stack()))
		}
	}()
	hook(o)
}

// safeOutcome decides the job's outcome, which runs user code too (an error's Error method, a
// Backoff): if that panics, the job is retried with the default backoff rather than the process
// crashing.
func (w *worker) safeOutcome(jt *jobType, job *Job, res runResult) (op rdb.FinishOp) {
	defer func() {
		if p := recover(); p != nil {
			w.r.wp.logger.Error("work: deciding a job's outcome panicked", "job_name", job.Name, "job_id", job.ID,
				"panic", fmt.Sprintf("%v", p), "stack", string(debug.Stack()))
			safe := *jt
			safe.Backoff = nil
			op = outcomeOp(&safe, w.r.wp.opts.PanicPolicy, job,
				runResult{err: panicError{value: p}, panicked: true})
		}
	}()
	return outcomeOp(jt, w.r.wp.opts.PanicPolicy, job, res)
}

// claimUnique releases a unique job's lock as it starts, so an identical job may be enqueued while it
// runs; a ByKey job takes the latest args stored in the lock by duplicate enqueues.
func (w *worker) claimUnique(job *Job) {
	key := w.uniqueKey(job)
	vals, err := w.r.wp.store.ClaimUnique(w.r.ctx, []string{key}, job.q.jt.UniqueUntilDone)
	if err != nil {
		// The lock expires on its own; the job still runs.
		w.r.wp.logger.Error("work: releasing a unique lock", "job_name", job.Name, "job_id", job.ID, "err", err)
		return
	}
	if len(vals) != 1 || len(vals[0]) == 0 || string(vals[0]) == "1" {
		return
	}
	if latest, err := decodeJob(vals[0]); err == nil && latest.Name == job.Name {
		job.Args = latest.Args
	}
}

// uniqueKey returns the unique lock of a job. The payload names its lock; only a unique-lock key of
// this job name is trusted, so a crafted payload cannot make the worker delete another key.
func (w *worker) uniqueKey(job *Job) string {
	if w.r.wp.store.IsUniqueLockOf(job.Name, job.UniqueKey) {
		return job.UniqueKey
	}
	lock, _ := w.r.wp.store.UniqueLock(job.Name, job.Args, job.Key)
	return lock
}

// runJob runs the middleware chain and the handler, turning a panic into an error (its text is
// fmt.Sprintf("%v", value)) and logging its stack.
func (w *worker) runJob(ctx context.Context, set *jobSet, jt *jobType, job *Job) (res runResult) {
	if jt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, jt.Timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			res = runResult{err: panicError{value: p}, panicked: true}
			w.r.wp.logger.Error("work: job panicked", "job_name", job.Name, "job_id", job.ID,
				"panic", res.err.Error(), "stack", string(debug.Stack()))
		}
	}()
	res.err = runChain(w.r.wp.contextType, set.needsCtx, set.middleware, jt.handler, ctx, job)
	if res.err == nil && jt.Timeout > 0 && ctx.Err() == context.DeadlineExceeded {
		res.err = context.DeadlineExceeded
	}
	return res
}

// cancelJob cancels the context of the job with the given ID if one of the pool's workers runs it.
func (r *poolRun) cancelJob(jobID string) bool {
	found := false
	for _, w := range r.workers {
		if w.state.cancelIfRunning(jobID) {
			found = true
		}
	}
	return found
}

// errorText is err.Error(), or a description when Error itself panics (a typed nil, say).
func errorText(err error) (s string) {
	defer func() {
		if p := recover(); p != nil {
			s = fmt.Sprintf("%T whose Error method panicked: %v", err, p)
		}
	}()
	return err.Error()
}

// panicError is the failure a recovered panic becomes.
type panicError struct{ value interface{} }

func (p panicError) Error() string { return fmt.Sprintf("%v", p.value) }
