package rdb

// What running jobs are doing: the worker observations, the running state and progress of jobs with
// a record; and the channel on which the ends of jobs with a record are announced. The script is
// lua/running.lua; the announcement rides the scripts that finalize a record (lua/lib/workflow.lua).

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// EndedChannel carries the ID of every job with a record that ends (done, dead, dropped, deleted),
// published by the script that writes the end into the record.
func (k Keyspace) EndedChannel() string { return k.P + "ended" }

// ProgressNote is a job's progress as a worker's hash and its record store it (see Progress).
type ProgressNote struct {
	Fraction float64
	Message  string
	At       int64 // epoch seconds
}

// runningScript writes the running state and progress of jobs with a record: lua/running.lua.
var runningScript = loadScript("running")

// Observation is the worker:<id> hash of a busy worker, and what goes to its job's record.
type Observation struct {
	WorkerID  string
	Busy      bool
	JobName   string
	JobID     string
	StartedAt int64
	Args      []byte
	Checkin   string
	CheckinAt int64
	Progress  *ProgressNote  // nil: none reported
	Record    *RunningRecord // nil: the job has no record
}

// WriteObservations records busy workers (EX 86400) and deletes idle ones, and writes the running
// state of the jobs with a record (see lua/running.lua): one round trip.
func (s *Store) WriteObservations(ctx context.Context, poolID string, obs []Observation) error {
	var running []interface{}
	nrec := 0
	for i := range obs {
		if o := &obs[i]; o.Busy && o.Record != nil {
			nrec++
		}
	}
	if nrec > 0 {
		running = make([]interface{}, 0, 1+2*nrec+2+8*nrec)
		running = append(running, 2*nrec)
		for i := range obs {
			if o := &obs[i]; o.Busy && o.Record != nil {
				running = append(running, s.Ks.JobRecord(o.JobID), o.Record.InProgress)
			}
		}
		running = append(running, poolID, s.Ks.P)
		for i := range obs {
			o := &obs[i]
			if !o.Busy || o.Record == nil {
				continue
			}
			frac, msg, at := "", "", int64(0)
			if p := o.Progress; p != nil {
				frac, msg, at = FormatFraction(p.Fraction), p.Message, p.At
			}
			running = append(running, o.Record.Entry, o.JobName, o.Record.Attempt, o.StartedAt, o.Record.Keep, frac, msg, at)
		}
	}
	return s.do(ctx, func(c redis.Conn) error {
		for i := range obs {
			o := &obs[i]
			key := s.Ks.Worker(o.WorkerID)
			if !o.Busy {
				c.Send("DEL", key)
				continue
			}
			c.Send("DEL", key)
			args := []interface{}{key, "job_name", o.JobName, "job_id", o.JobID, "started_at", o.StartedAt, "args", o.Args}
			if o.Checkin != "" && o.CheckinAt != 0 { // an empty message is no check-in to gocraft/work either
				args = append(args, "checkin", o.Checkin, "checkin_at", o.CheckinAt)
			}
			if p := o.Progress; p != nil {
				args = append(args, "progress", FormatFraction(p.Fraction), "progress_msg", p.Message, "progress_at", p.At)
			}
			c.Send("HSET", args...)
			c.Send("EXPIRE", key, 86400)
		}
		if running != nil {
			runningScript.SendHash(c, running...)
		}
		r, err := redis.Values(c.Do(""))
		if err != nil || running == nil {
			return err
		}
		if len(r) == 0 {
			return fmt.Errorf("work: observations: empty reply")
		}
		if re, ok := r[len(r)-1].(redis.Error); ok {
			if !strings.HasPrefix(string(re), "NOSCRIPT") {
				return re
			}
			// The server did not know the script yet: Do loads it.
			_, err = runningScript.Do(c, running...)
		}
		return err
	})
}

// FormatFraction is a fraction as it is stored: the shortest decimal that reads back as itself.
func FormatFraction(f float64) string { return strconv.FormatFloat(f, 'f', -1, 64) }

// RunningRecord is what the observer writes to the record of a running job that has one (see
// lua/running.lua): where the pool holds the job, so that the write applies only while the attempt
// still runs, and the attempt.
type RunningRecord struct {
	InProgress interface{} // the in-progress list holding the job (its queue's args)
	Entry      interface{} // the job's entry in it
	Attempt    int64       // 1 for the first attempt
	Keep       int64       // seconds; a record the write creates lives at least this long
}
