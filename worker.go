package work

import (
	"context"
	"fmt"
	"log/slog"
	"reflect"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// worker runs jobs handed to it by the fetcher, one at a time, and hands each outcome to the acker.
type worker struct {
	workerParams
	id    string
	state *workerState
}

// workerParams are what a worker uses: the pool run's context (done when the pool stops), the store
// (its unique locks, and a running job's own reads), the logger, the pool's options that decide and
// report outcomes, the type of the pool's context struct, the job set the pool serves (its
// middleware), the parent of every job's context, where jobs come from (the fetcher) and where
// outcomes go (the acker's submit), and the pool's flag that its stop deadline passed (outcomes of
// running jobs are then dropped).
type workerParams struct {
	ctx         context.Context
	store       *rdb.Store
	logger      *slog.Logger
	panicPolicy PanicPolicy
	onOutcome   func(JobOutcome)
	contextType reflect.Type
	served      func() *jobSet
	jobCtx      context.Context
	source      jobSource
	submit      func(rdb.FinishOp)
	abandoned   *atomic.Bool
}

// jobSource is where a worker takes its jobs and tells how long each ran and when its hold ended:
// the pool's fetcher, which ends the hold on the pool's room.
type jobSource interface {
	// take waits for the next job; false once the source is closed.
	take() (*Job, bool)
	// ran records a handler's run time.
	ran(d time.Duration)
	// finished ends a job's hold without an outcome to write (the pool was abandoned).
	finished()
	// admit reports whether the job may start now (see lease); if not, its hold has ended.
	admit(j *Job) bool
	// current reports whether the job is still the pool's (see lease).
	current(j *Job) bool
	// drop ends the hold of a job that is no longer the pool's, without an outcome.
	drop(j *Job)
}

func newWorker(p workerParams) *worker {
	id := makeIdentifier()
	return &worker{workerParams: p, id: id, state: &workerState{workerID: id, store: p.store}}
}

func (w *worker) loop(wg *sync.WaitGroup) {
	defer wg.Done()
	for {
		job, ok := w.source.take()
		if !ok {
			return
		}
		w.process(job)
	}
}

// current returns the job the worker is running, or nil.
func (w *worker) current() *Job { return w.state.currentJob() }

func (w *worker) process(job *Job) {
	if err := decodeFetched(job, job.q.name); err != nil {
		w.logger.Error("work: payload sent to the dead set", "job_name", job.q.name, "err", err)
		w.submit(deadLetterOp(job, err))
		return
	}
	jt := job.q.jt
	// The middleware and options registered when the job starts apply to it.
	set := w.served()
	if job.Unique && job.Fails == 0 {
		// Only a first attempt holds the lock: by a retry it may belong to a later identical job.
		w.claimUnique(job)
	}
	if !w.source.admit(job) {
		return
	}
	job.observer = w.state
	// A context of its own only when a function of the chain receives it or the job has a timeout:
	// otherwise nothing could see it, and a cancel is recorded in the worker's state instead.
	ctx, cancel := w.jobCtx, context.CancelCauseFunc(nil)
	if set.contextual(jt) {
		ctx, cancel = context.WithCancelCause(w.jobCtx)
	}
	w.state.start(job, cancel)
	start := time.Now()
	res := w.runJob(ctx, set, jt, job)
	w.source.ran(time.Since(start))
	cancelled := w.state.done()
	res.cancelled = res.err != nil && (cancelled || (cancel != nil && isCancelled(ctx)))
	if cancel != nil {
		cancel(nil)
	}
	job.observer = nil
	if res.err != nil {
		w.logger.Warn("work: job failed", "job_name", job.Name, "job_id", job.ID, "attempt", job.Fails+1,
			"duration", time.Since(start), "err", errorText(res.err))
	}
	op := w.safeOutcome(jt, job, res)
	if op.Ext != nil && jt.UniqueUntilDone && job.Unique {
		op.Ext.UniqueKey = w.uniqueKey(job) // held since the start: released as the job ends
	}
	if w.abandoned.Load() {
		w.source.finished()
		return
	}
	if !w.source.current(job) {
		// A reaper put the job back while it ran: its outcome is another run's to write.
		w.source.drop(job)
		return
	}
	w.submit(op)
	if hook := w.onOutcome; hook != nil {
		w.report(hook, JobOutcome{Job: job, Result: resultOf(op), Err: res.err,
			Panicked: res.panicked, Cancelled: res.cancelled, Duration: time.Since(start)})
	}
}

// report calls the OnOutcome hook, recovering a panic in it.
func (w *worker) report(hook func(JobOutcome), o JobOutcome) {
	defer func() {
		if p := recover(); p != nil {
			w.logger.Error("work: OnOutcome panicked", "job_name", o.Job.Name, "job_id", o.Job.ID,
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
			w.logger.Error("work: deciding a job's outcome panicked", "job_name", job.Name, "job_id", job.ID,
				"panic", fmt.Sprintf("%v", p), "stack", string(debug.Stack()))
			safe := *jt
			safe.Backoff = nil
			op = outcomeOp(&safe, w.panicPolicy, job,
				runResult{err: panicError{value: p}, panicked: true})
		}
	}()
	return outcomeOp(jt, w.panicPolicy, job, res)
}

// claimUnique releases a unique job's lock as it starts, so an identical job may be enqueued while it
// runs; a ByKey job takes the latest args stored in the lock by duplicate enqueues.
func (w *worker) claimUnique(job *Job) {
	key := w.uniqueKey(job)
	vals, err := w.store.ClaimUnique(w.ctx, []string{key}, job.q.jt.UniqueUntilDone)
	if err != nil {
		// The lock expires on its own; the job still runs.
		w.logger.Error("work: releasing a unique lock", "job_name", job.Name, "job_id", job.ID, "err", err)
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
	if w.store.IsUniqueLockOf(job.Name, job.UniqueKey) {
		return job.UniqueKey
	}
	lock, _ := w.store.UniqueLock(job.Name, job.Args, job.Key)
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
			w.logger.Error("work: job panicked", "job_name", job.Name, "job_id", job.ID,
				"panic", res.err.Error(), "stack", string(debug.Stack()))
		}
	}()
	res.err = runChain(w.contextType, set.needsCtx, set.middleware, jt.handler, ctx, job)
	if res.err == nil && jt.Timeout > 0 && ctx.Err() == context.DeadlineExceeded {
		res.err = context.DeadlineExceeded
	}
	return res
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
