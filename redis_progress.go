package work

// The store's methods for what running jobs are doing (observer.go, job_progress.go): the worker
// observations, the running state and progress of jobs with a record; and the channel on which the
// ends of jobs with a record are announced (client_wait.go). The script is lua/running.lua; the
// announcement rides the scripts that finalize a record (lua/lib/workflow.lua).

import (
	"context"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// endedChannel carries the ID of every job with a record that ends (done, dead, dropped, deleted),
// published by the script that writes the end into the record.
func (k keyspace) endedChannel() string { return k.p + "ended" }

// runningScript writes the running state and progress of jobs with a record: lua/running.lua.
var runningScript = loadScript("running")

// observation is the worker:<id> hash of a busy worker, and what goes to its job's record.
type observation struct {
	workerID  string
	busy      bool
	jobName   string
	jobID     string
	startedAt int64
	args      []byte
	checkin   string
	checkinAt int64
	progress  *Progress      // nil: none reported
	record    *runningRecord // nil: the job has no record
}

// writeObservations records busy workers (EX 86400) and deletes idle ones, and writes the running
// state of the jobs with a record (see lua/running.lua): one round trip.
func (s *store) writeObservations(ctx context.Context, poolID string, obs []observation) error {
	var running []interface{}
	nrec := 0
	for i := range obs {
		if o := &obs[i]; o.busy && o.record != nil {
			nrec++
		}
	}
	if nrec > 0 {
		running = make([]interface{}, 0, 1+2*nrec+2+8*nrec)
		running = append(running, 2*nrec)
		for i := range obs {
			if o := &obs[i]; o.busy && o.record != nil {
				running = append(running, s.ks.jobRecord(o.jobID), o.record.inProgress)
			}
		}
		running = append(running, poolID, s.ks.p)
		for i := range obs {
			o := &obs[i]
			if !o.busy || o.record == nil {
				continue
			}
			frac, msg, at := "", "", int64(0)
			if p := o.progress; p != nil {
				frac, msg, at = formatFraction(p.Fraction), p.Message, p.At
			}
			running = append(running, o.record.entry, o.jobName, o.record.attempt, o.startedAt, o.record.keep, frac, msg, at)
		}
	}
	return s.do(ctx, func(c redis.Conn) error {
		for i := range obs {
			o := &obs[i]
			key := s.ks.worker(o.workerID)
			if !o.busy {
				c.Send("DEL", key)
				continue
			}
			c.Send("DEL", key)
			args := []interface{}{key, "job_name", o.jobName, "job_id", o.jobID, "started_at", o.startedAt, "args", o.args}
			if o.checkin != "" && o.checkinAt != 0 { // an empty message is no check-in to gocraft/work either
				args = append(args, "checkin", o.checkin, "checkin_at", o.checkinAt)
			}
			if p := o.progress; p != nil {
				args = append(args, "progress", formatFraction(p.Fraction), "progress_msg", p.Message, "progress_at", p.At)
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
