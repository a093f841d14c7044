package work

import (
	"context"
	"fmt"
	"math/rand/v2"
	"runtime/debug"
	"sync"
	"time"
)

// worker runs jobs handed to it by the fetcher, one at a time, and hands each outcome to the acker.
type worker struct {
	id    string
	r     *poolRun
	state *workerState
}

func newWorker(r *poolRun) *worker {
	id := makeIdentifier()
	return &worker{id: id, r: r, state: &workerState{workerID: id}}
}

func (w *worker) loop(wg *sync.WaitGroup) {
	defer wg.Done()
	for job := range w.r.fetcher.jobs {
		w.process(job)
	}
}

// current returns the job the worker is running, or nil.
func (w *worker) current() *Job { return w.state.currentJob() }

func (w *worker) process(job *Job) {
	r := w.r
	jt := r.jobTypes[job.Name]
	if job.Unique && job.Fails == 0 {
		// Only a first attempt holds the lock: by a retry it may belong to a later identical job.
		w.claimUnique(job)
	}
	job.observer = w.state
	w.state.start(job)
	start := time.Now()
	err := w.runJob(jt, job)
	w.state.done()
	job.observer = nil
	// Submit the outcome before returning the token, so a Drain never sees the pool idle with an
	// outcome not yet handed over.
	if err == nil {
		r.acker.submit(finishOp{op: "ack", outcome: 'p', name: job.Name, raw: job.raw})
	} else {
		r.wp.logger.Warn("work: job failed", "job_name", job.Name, "job_id", job.ID, "attempt", job.Fails+1,
			"duration", time.Since(start), "err", err)
		r.acker.submit(failureOp(r.wp.store.ks, jt, job, err))
	}
	r.fetcher.release(1)
}

// claimUnique releases a unique job's lock as it starts, so an identical job may be enqueued while it
// runs; a ByKey job takes the latest args stored in the lock by duplicate enqueues.
func (w *worker) claimUnique(job *Job) {
	ks := w.r.wp.store.ks
	key := job.UniqueKey
	if key == "" {
		key, _ = ks.unique(job.Name, job.Args)
	}
	vals, err := w.r.wp.store.claimUnique(w.r.ctx, []string{key})
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

// runJob runs the middleware chain and the handler, turning a panic into an error (its text is
// fmt.Sprintf("%v", value)) and logging its stack.
func (w *worker) runJob(jt *jobType, job *Job) (err error) {
	ctx := w.r.jobCtx
	if jt.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, jt.Timeout)
		defer cancel()
	}
	defer func() {
		if p := recover(); p != nil {
			err = panicError{value: p}
			w.r.wp.logger.Error("work: job panicked", "job_name", job.Name, "job_id", job.ID,
				"panic", err.Error(), "stack", string(debug.Stack()))
		}
	}()
	wp := w.r.wp
	err = runChain(wp.contextType, wp.needsCtx, wp.middleware, jt.handler, ctx, job)
	if err == nil && jt.Timeout > 0 && ctx.Err() == context.DeadlineExceeded {
		err = context.DeadlineExceeded
	}
	return err
}

// panicError is the failure a recovered panic becomes.
type panicError struct{ value interface{} }

func (p panicError) Error() string { return fmt.Sprintf("%v", p.value) }

// failureOp records a failure on the job (Fails, LastErr, FailedAt) and returns where it goes next:
// the retry set while attempts remain, else the dead set (or nowhere with SkipDead).
func failureOp(ks keyspace, jt *jobType, job *Job, runErr error) finishOp {
	now := nowEpochSeconds()
	job.Fails++
	job.LastErr = runErr.Error()
	job.FailedAt = now
	if job.Fails >= int64(jt.MaxFails) {
		if jt.SkipDead {
			return finishOp{op: "ack", outcome: 'f', name: job.Name, raw: job.raw}
		}
		return zaddOp(job, ks.dead(), now)
	}
	backoff := defaultBackoffCalculator
	if jt.Backoff != nil {
		backoff = jt.Backoff
	}
	return zaddOp(job, ks.retry(), now+backoff(job))
}

// zaddOp moves a fetched job to a sorted set under its re-encoded payload.
func zaddOp(job *Job, set string, score int64) finishOp {
	payload, err := job.serialize()
	if err != nil {
		// Args that cannot be encoded came from a decoded payload, so this cannot happen; keep the
		// original bytes rather than lose the job.
		payload = job.raw
	}
	return finishOp{op: "zadd", outcome: 'f', name: job.Name, raw: job.raw, dest: set, score: score, payload: payload}
}

// deadLetterOp sends a payload that cannot be run to the dead set, with the reason and the original
// bytes (in Raw), under the name of the queue it came from.
func deadLetterOp(ks keyspace, queue string, raw []byte, reason error) finishOp {
	now := nowEpochSeconds()
	rec := &Job{Name: queue, ID: makeIdentifier(), EnqueuedAt: now, Fails: 1, LastErr: reason.Error(),
		FailedAt: now, Raw: raw}
	payload, _ := rec.serialize()
	return finishOp{op: "zadd", outcome: 'f', name: queue, raw: raw, dest: ks.dead(), score: now, payload: payload}
}

// defaultBackoffCalculator is gocraft's: fails^4 + 15 + rand(30)*(fails+1) seconds.
func defaultBackoffCalculator(job *Job) int64 {
	fails := job.Fails
	return (fails * fails * fails * fails) + 15 + (rand.Int64N(30) * (fails + 1))
}
