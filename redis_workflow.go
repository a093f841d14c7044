package work

// The store's methods for workflow state (batch.go, chain.go): opening, filling and closing
// batches, enqueueing jobs that wait for others, and reading batches and job records. The job ends
// that update this state go through the exchange (redis.go); the scripts are lua/batch.lua,
// lua/enqueue_after.lua and lua/lib/workflow.lua.

import (
	"context"

	"github.com/gomodule/redigo/redis"
)

// batch runs batchScript for batch id: steps as it takes them, open what opening writes, and the
// payloads of the members to add, by job name in the order of names.
func (s *store) batch(ctx context.Context, w replicaWait, id, steps string, open batchOpen, names []string, payloads map[string][]interface{}) error {
	args := make([]interface{}, 0, 3+len(names)+12+2*len(names))
	args = append(args, 3+len(names), s.ks.batch(id), s.ks.batches(), s.ks.knownJobs())
	for _, name := range names {
		args = append(args, s.ks.jobs(name))
	}
	args = append(args, steps, s.ks.p, s.ks.wakeChannel(), id, open.description, open.keep,
		open.onComplete, open.onCompleteName, open.onSuccess, open.onSuccessName)
	for _, name := range names {
		args = append(args, name, len(payloads[name]))
	}
	for _, name := range names {
		args = append(args, payloads[name]...)
	}
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := batchScript.Do(c, args...)
		return err
	})
}

// afterJob is a job for enqueueAfter: its ID, name and payload, what becomes of it when a dependency
// dies, how long its record is kept, and what it waits for ("j:<job ID>" or "b:<batch ID>").
type afterJob struct {
	id, name string
	payload  []byte
	policy   string // "dead" or "run"
	keep     int64
	deps     []string
}

// enqueueAfter runs enqueueAfterScript; it returns each job's state (queued, waiting or dead).
func (s *store) enqueueAfter(ctx context.Context, w replicaWait, jobs []afterJob) ([]string, error) {
	args := []interface{}{1, s.ks.knownJobs(), s.ks.p, s.ks.wakeChannel(), len(jobs)}
	for _, j := range jobs {
		args = append(args, j.id, j.name, j.payload, j.keep, j.policy, len(j.deps))
		for _, d := range j.deps {
			args = append(args, d)
		}
	}
	var states []string
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		var err error
		states, err = redis.Strings(enqueueAfterScript.Do(c, args...))
		return err
	})
	return states, err
}

// batchStatus reads a batch's hash; nil when there is none.
func (s *store) batchStatus(ctx context.Context, id string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.ks.batch(id)))
		return err
	})
	if len(h) == 0 {
		h = nil
	}
	return h, err
}

// batchIDs lists batch IDs from the index, newest first: start..stop (0-based, inclusive), and the
// index's size.
func (s *store) batchIDs(ctx context.Context, start, stop int64) ([]string, int64, error) {
	var ids []string
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		c.Send("ZREVRANGE", s.ks.batches(), start, stop)
		c.Send("ZCARD", s.ks.batches())
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if ids, err = redis.Strings(r[0], nil); err != nil {
			return err
		}
		n, err = redis.Int64(r[1], nil)
		return err
	})
	return ids, n, err
}

// forgetBatches removes batch IDs (whose status expired) from the index.
func (s *store) forgetBatches(ctx context.Context, ids []string) error {
	return s.do(ctx, func(c redis.Conn) error {
		args := []interface{}{s.ks.batches()}
		for _, id := range ids {
			args = append(args, id)
		}
		_, err := c.Do("ZREM", args...)
		return err
	})
}

// jobRecord reads a job's record; nil when there is none.
func (s *store) jobRecord(ctx context.Context, id string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.ks.jobRecord(id)))
		return err
	})
	if len(h) == 0 {
		h = nil
	}
	return h, err
}
