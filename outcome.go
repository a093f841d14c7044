package work

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/workqueue/work/internal/rdb"
)

// This file owns the last step of a job's run: what its result means (done, retry, dead, snooze,
// cancelled) and the finishOp that records it.

// FailNowError is the error a handler returns (through FailNow) to send its job straight to the dead
// set without further attempts, or to drop it when the job's SkipDead option is set.
type FailNowError struct{ Err error }

func (e *FailNowError) Error() string { return e.Err.Error() }
func (e *FailNowError) Unwrap() error { return e.Err }

// FailNow wraps err so that the job fails for good: no retry, whatever MaxFails says. The job's err
// field holds err's text.
//
//	if errors.Is(err, errAccountClosed) {
//		return work.FailNow(err)
//	}
func FailNow(err error) error {
	if err == nil {
		err = errors.New("failed")
	}
	return &FailNowError{Err: err}
}

// SnoozeError is the error a handler returns (through Snooze) to run its job again later without
// counting a failure.
type SnoozeError struct{ Delay time.Duration }

func (e *SnoozeError) Error() string { return fmt.Sprintf("snoozed for %v", e.Delay) }

// Snooze tells the pool to run the job again once d has passed (at the next whole second after it)
// without counting a failure: the job goes to the scheduled set with its Fails unchanged. Use it when a resource is
// busy or a rate limit of a third party is hit.
func Snooze(d time.Duration) error { return &SnoozeError{Delay: d} }

// cancelledErrText is the err a cancelled job is recorded with (ErrJobCancelled).
const cancelledErrText = "cancelled"

// PanicPolicy says what a pool does with a job whose handler or middleware panicked.
type PanicPolicy int

const (
	// PanicFails counts a panic as a failure, like a returned error (the default, and gocraft's).
	PanicFails PanicPolicy = iota
	// PanicRetries retries the job after its backoff without counting a failure.
	PanicRetries
	// PanicKills sends the job straight to the dead set (or drops it with SkipDead).
	PanicKills
)

// Result is what became of a job after a run.
type Result int

const (
	ResultDone    Result = iota // succeeded: removed
	ResultRetry                 // failed: in the retry set
	ResultDead                  // failed for good: in the dead set
	ResultDropped               // failed for good with SkipDead: removed
	ResultSnoozed               // snoozed: in the scheduled set, no failure counted
)

func (r Result) String() string {
	switch r {
	case ResultDone:
		return "done"
	case ResultRetry:
		return "retry"
	case ResultDead:
		return "dead"
	case ResultDropped:
		return "dropped"
	case ResultSnoozed:
		return "snoozed"
	}
	return fmt.Sprintf("Result(%d)", int(r))
}

// JobOutcome is what WorkerPoolOptions.OnOutcome receives after each run of a job.
type JobOutcome struct {
	Job       *Job          // the job as recorded: Fails, LastErr and FailedAt updated on a failure
	Result    Result        // where the job went
	Err       error         // what the handler (or middleware) returned; nil when it succeeded
	Panicked  bool          // Err is a recovered panic
	Cancelled bool          // Client.CancelJob cancelled it
	Duration  time.Duration // how long the middleware and handler ran
}

// resultOf tells where a finishOp sends its job.
func resultOf(op rdb.FinishOp) Result {
	switch op.Kind {
	case rdb.OpAck:
		return ResultDone
	case rdb.OpDrop:
		return ResultDropped
	case rdb.OpDead:
		return ResultDead
	case rdb.OpSnooze:
		return ResultSnoozed
	}
	return ResultRetry
}

// runResult is how a job's run ended.
type runResult struct {
	err       error
	panicked  bool
	cancelled bool // Client.CancelJob cancelled it
}

// outcomeOp decides where a finished job goes and returns the finishOp that records it, with the
// workflow state the job's end changes (the worker adds the unique lock to release, see
// worker.uniqueKey).
func outcomeOp(jt *jobType, policy PanicPolicy, job *Job, res runResult) rdb.FinishOp {
	op := decideOutcome(jt, policy, job, res)
	if job.Batch != "" || job.Tracked || jt.KeepFinished > 0 || (jt.UniqueUntilDone && job.Unique) {
		op.Ext = &rdb.FinishExt{Id: job.ID, Batch: job.Batch, Tracked: job.Tracked, Err: job.LastErr,
			Attempts: job.Fails, Keep: int64((jt.KeepFinished + time.Second - 1) / time.Second)}
		if op.Kind == rdb.OpAck {
			op.Ext.Result = job.result
			op.Ext.Attempts++ // the successful one
			op.Ext.Err = ""
		}
	}
	return op
}

// decideOutcome decides where a finished job goes.
func decideOutcome(jt *jobType, policy PanicPolicy, job *Job, res runResult) rdb.FinishOp {
	if res.err == nil {
		return rdb.FinishOp{Kind: rdb.OpAck, Q: job.q.args, Entry: job.rawArg, Ref: job}
	}
	now := nowEpochSeconds()
	var snooze *SnoozeError
	if !res.panicked && errors.As(res.err, &snooze) {
		// Scores are whole seconds: round up, so the job never runs before its delay is over.
		at := time.Now().Add(max(snooze.Delay, 0)).UnixNano()
		return zaddOp(job, rdb.OpSnooze, (at+int64(time.Second)-1)/int64(time.Second))
	}
	final := false
	var failNow *FailNowError
	switch {
	case res.cancelled:
		final, res.err = true, ErrJobCancelled
	case res.panicked && policy == PanicKills:
		final = true
	case !res.panicked && errors.As(res.err, &failNow):
		final = true
	}
	job.LastErr = errorText(res.err)
	if res.cancelled {
		// The dead set has always said "cancelled"; the sentinel's text carries the library's prefix.
		job.LastErr = cancelledErrText
	}
	job.FailedAt = now
	if res.panicked && policy == PanicRetries {
		return zaddOp(job, rdb.OpRetry, now+backoffOf(jt)(job))
	}
	job.Fails++
	if final || job.Fails >= int64(jt.MaxFails) {
		if jt.SkipDead {
			return rdb.FinishOp{Kind: rdb.OpDrop, Q: job.q.args, Entry: job.rawArg, Ref: job}
		}
		return zaddOp(job, rdb.OpDead, now)
	}
	return zaddOp(job, rdb.OpRetry, now+backoffOf(jt)(job))
}

func backoffOf(jt *jobType) BackoffCalculator {
	if jt.Backoff != nil {
		return jt.Backoff
	}
	return defaultBackoffCalculator
}

// zaddOp moves a fetched job to the retry, dead or scheduled set under its re-encoded payload.
func zaddOp(job *Job, kind rdb.OpKind, score int64) rdb.FinishOp {
	// A keyed job of a name that keeps its keys in order holds its key's slot while it waits for
	// its retry (the exchange leaves the slot taken; see JobOptions.KeyRetryInOrder).
	job.KeyHold = kind == rdb.OpRetry && job.q != nil && job.q.keyed && job.q.jt.KeyRetryInOrder
	payload, err := job.serialize()
	if err != nil {
		// Args that cannot be encoded came from a decoded payload, so this cannot happen; keep the
		// original bytes rather than lose the job.
		payload = job.raw
	}
	return rdb.FinishOp{Kind: kind, Q: job.q.args, Entry: job.rawArg, Ref: job, Score: score, Payload: payload}
}

// deadLetterOp sends a fetched payload that cannot be run to the dead set, with the reason and the
// original bytes (in Raw), under the name of the queue it came from.
func deadLetterOp(job *Job, reason error) rdb.FinishOp {
	now := nowEpochSeconds()
	return rdb.FinishOp{Kind: rdb.OpDead, Q: job.q.args, Entry: job.rawArg, Ref: job, Score: now, Payload: deadLetterRecord(job.q.name, job.raw, reason, now)}
}

// deadLetterRecord is the dead-set member that stands for a payload that cannot be run: a job record
// under the name of the queue it came from (empty when not known), with the reason and the original
// bytes.
func deadLetterRecord(queue string, raw []byte, reason error, now int64) []byte {
	rec := &Job{Name: queue, ID: makeIdentifier(), EnqueuedAt: now, Fails: 1, LastErr: reason.Error(),
		FailedAt: now, Raw: raw}
	payload, _ := rec.serialize()
	return payload
}

// defaultBackoffCalculator is gocraft's: fails^4 + 15 + rand(30)*(fails+1) seconds.
func defaultBackoffCalculator(job *Job) int64 {
	fails := job.Fails
	return (fails * fails * fails * fails) + 15 + (rand.Int64N(30) * (fails + 1))
}

// isCancelled reports whether ctx was cancelled by Client.CancelJob.
func isCancelled(ctx context.Context) bool { return errors.Is(context.Cause(ctx), ErrJobCancelled) }
