package work

// What a running job is doing: the progress its handler reports (Job.SetProgress), and the running
// state of jobs that have a record. Both ride the observer's writes (observer.go), at most one a
// second per worker, in the round trip that also writes the worker observations; the record's part
// is lua/running.lua.

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/workqueue/work/internal/rdb"
)

// Progress is how far a running job got, as its handler last reported it with Job.SetProgress.
type Progress struct {
	// Fraction is from 0 (nothing done yet) to 1 (all done).
	Fraction float64 `json:"fraction"`
	// Message says what the job is doing; at most MaxProgressMessage bytes.
	Message string `json:"message,omitempty"`
	// At is when the handler reported it, epoch seconds of the pool's clock.
	At int64 `json:"at"`
}

// Percent is Fraction in whole percent, rounded down: 0 to 100.
func (p *Progress) Percent() int { return int(math.Floor(p.Fraction*100 + 1e-9)) }

// MaxProgressMessage bounds the message of Job.SetProgress, in bytes: a longer one is cut.
const MaxProgressMessage = 200

// SetProgress reports how far the running job got: fraction from 0 to 1 (for a percent, pass
// percent/100) and a short message, shown in the web UI's job and workers pages, by `work job`, in
// Client.WorkerObservations and, for a job with a record (a tracked job, or one of a name that keeps
// records: JobOptions.KeepFinished), in Client.JobRecord.
//
// It only changes the worker's state in memory: the pool writes the latest progress of each worker
// to Redis at most once a second, in the round trip that writes the worker observations, so a
// handler may call it in a tight loop. A later call replaces the progress. The progress of a job
// with a record stays in the record after the job ends.
//
// Bad input never fails the job: a fraction below 0 or above 1 (infinities included) is clamped
// and reported with an error wrapping ErrBadProgress; a NaN changes nothing and gets such an error.
// A message is cut to MaxProgressMessage bytes, invalid UTF-8 and control characters replaced.
// Outside a worker pool (a handler called by a test, say) it checks its input and records nothing.
func (j *Job) SetProgress(fraction float64, msg string) error {
	f, m, err := normalizeProgress(fraction, msg)
	if f < 0 {
		return err
	}
	if w := j.observer; w != nil {
		w.setProgress(f, m)
	}
	return err
}

// normalizeProgress checks SetProgress's input: it returns the fraction to record (-1 for none:
// NaN), clamped to 0..1, the message made safe to show, and an error for a fraction it changed or
// refused.
func normalizeProgress(fraction float64, msg string) (float64, string, error) {
	var err error
	switch {
	case math.IsNaN(fraction):
		return -1, "", fmt.Errorf("%w: the fraction is NaN; nothing recorded", ErrBadProgress)
	case fraction < 0:
		err = fmt.Errorf("%w: fraction %v is below 0; recorded as 0", ErrBadProgress, fraction)
		fraction = 0
	case fraction > 1:
		err = fmt.Errorf("%w: fraction %v is above 1 (for a percent, pass percent/100); recorded as 1", ErrBadProgress, fraction)
		fraction = 1
	}
	// Four decimals are plenty for a bar, and read back exactly.
	fraction = math.Round(fraction*1e4) / 1e4
	return fraction, cleanProgressMessage(msg), err
}

// cleanProgressMessage makes a message safe to store and to show in a terminal: valid UTF-8,
// control characters as spaces, at most MaxProgressMessage bytes (cut at a character boundary).
func cleanProgressMessage(msg string) string {
	if len(msg) > 4*MaxProgressMessage {
		msg = msg[:4*MaxProgressMessage] // no need to look at the rest
	}
	msg = strings.ToValidUTF8(msg, "\uFFFD")
	msg = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) || r == '\u2028' || r == '\u2029' {
			return ' '
		}
		return r
	}, msg)
	if len(msg) > MaxProgressMessage {
		cut := MaxProgressMessage
		for cut > 0 && !utf8.RuneStart(msg[cut]) {
			cut--
		}
		msg = msg[:cut]
	}
	return msg
}

// parseProgress reads a progress from the fields of a record or a worker observation, which another
// program may have written: nil when there is none or its fraction is not a number; a fraction
// outside 0..1 is clamped and the message made safe, as SetProgress does.
func parseProgress(fraction, msg, at string) *Progress {
	if fraction == "" {
		return nil
	}
	f, err := strconv.ParseFloat(fraction, 64)
	if err != nil || math.IsNaN(f) {
		return nil
	}
	f = max(0, min(f, 1))
	return &Progress{Fraction: f, Message: cleanProgressMessage(msg), At: parseInt64(at)}
}

// hasRecord reports whether a job of jt has a record that its running state and progress go to.
func hasRecord(job *Job, jt *jobType) bool { return job.Tracked || (jt != nil && jt.KeepFinished > 0) }

// newRunningRecord describes the record of a job a worker starts, or returns nil when it has none.
func newRunningRecord(job *Job) *rdb.RunningRecord {
	if job.q == nil || job.q.args == nil || !hasRecord(job, job.q.jt) {
		return nil
	}
	var keep int64
	if jt := job.q.jt; jt != nil {
		keep = int64((jt.KeepFinished + time.Second - 1) / time.Second)
	}
	return &rdb.RunningRecord{InProgress: job.q.args.Keys[1], Entry: job.rawArg, Attempt: job.Fails + 1, Keep: keep}
}

// abandonOp puts a job whose run a stop abandoned (its deadline passed) back at the front of its
// queue; a job with a record is written queued again there, rather than left running.
func abandonOp(j *Job) rdb.FinishOp {
	op := rdb.FinishOp{Kind: rdb.OpRequeue, Q: j.q.args, Entry: j.rawArg, Ref: j}
	if hasRecord(j, j.q.jt) {
		op.Ext = &rdb.FinishExt{Id: j.ID, Batch: j.Batch, Tracked: j.Tracked, Err: j.LastErr, Attempts: j.Fails}
		if jt := j.q.jt; jt != nil {
			op.Ext.Keep = int64((jt.KeepFinished + time.Second - 1) / time.Second)
		}
	}
	return op
}
