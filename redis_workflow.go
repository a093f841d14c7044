package work

// The store's methods for workflow state (batch.go, chain.go): opening, filling and closing
// batches, enqueueing jobs that wait for others, and reading batches, job records and the records of
// a job's dependencies (job_results.go). The job ends that update this state go through the
// exchange (redis.go); the scripts are lua/batch.lua, lua/enqueue_after.lua,
// lua/dependency_results.lua and lua/lib/workflow.lua.

import (
	"context"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// batch runs batchScript for batch id: steps as it takes them, open what opening writes, and the
// payloads of the members to add, in groups by job name and key.
func (s *store) batch(ctx context.Context, w replicaWait, id, steps string, open batchOpen, groups []keyedGroup) error {
	args := make([]interface{}, 0, 3+len(groups)+12+3*len(groups))
	args = append(args, 3+len(groups), s.ks.batch(id), s.ks.batches(), s.ks.knownJobs())
	for _, g := range groups {
		if g.key != "" {
			args = append(args, s.ks.keyedQueue(g.name, g.key))
		} else {
			args = append(args, s.ks.jobs(g.name))
		}
	}
	args = append(args, steps, s.ks.p, s.ks.wakeChannel(), id, open.description, open.keep,
		open.onComplete, open.onCompleteName, open.onSuccess, open.onSuccessName)
	for _, g := range groups {
		args = append(args, g.name, g.key, len(g.payloads))
	}
	for _, g := range groups {
		args = append(args, g.payloads...)
	}
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := batchScript.Do(c, args...)
		return keyedError(err, groups)
	})
}

// afterJob is a job for enqueueAfter: its ID, name and payload, what becomes of it when a dependency
// dies, how long its record is kept, and what it waits for ("j:<job ID>" or "b:<batch ID>").
type afterJob struct {
	id, name string
	payload  []byte
	policy   string // "dead" or "run"
	keep     int64
	key      string // a keyed job's key
	deps     []string
}

// enqueueAfter runs enqueueAfterScript; it returns each job's state (queued, waiting or dead).
func (s *store) enqueueAfter(ctx context.Context, w replicaWait, jobs []afterJob) ([]string, error) {
	args := []interface{}{1, s.ks.knownJobs(), s.ks.p, s.ks.wakeChannel(), len(jobs)}
	for _, j := range jobs {
		args = append(args, j.id, j.name, j.payload, j.keep, j.policy, j.key, len(j.deps))
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
		for _, key := range []string{s.ks.batches(), s.ks.batchesExpiry()} {
			args := []interface{}{key}
			for _, id := range ids {
				args = append(args, id)
			}
			c.Send("ZREM", args...)
		}
		_, err := c.Do("")
		return err
	})
}

// trimBatches drops up to budget due batches from the index (see trimBatchesScript), then checks up
// to walk entries from rank walkFrom for batches gone another way; it returns how many it removed
// and the rank to walk from next.
func (s *store) trimBatches(ctx context.Context, budget, walk int, walkFrom int64) (removed, next int64, err error) {
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Int64s(trimBatchesScript.Do(c, s.ks.batches(), s.ks.batchesExpiry(), budget, walk, walkFrom, s.ks.batch("")))
		if err != nil {
			return err
		}
		if len(r) != 2 {
			return fmt.Errorf("work: trim batches: unexpected reply of %d elements", len(r))
		}
		removed, next = r[0], r[1]
		return nil
	})
	return removed, next, err
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

// dependencyResults reads the records of the jobs that job id waited for (lua/dependency_results.lua):
// their IDs, in the order given at enqueue, each with its record's fields (none when it expired).
func (s *store) dependencyResults(ctx context.Context, id string) ([]string, []map[string]string, error) {
	var ids []string
	var recs []map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(dependencyResultsScript.Do(c, s.ks.jobRecord(id), s.ks.p))
		if err != nil {
			return err
		}
		if len(r)%2 != 0 {
			return fmt.Errorf("work: dependency results: unexpected reply of %d elements", len(r))
		}
		for i := 0; i < len(r); i += 2 {
			dep, err := redis.String(r[i], nil)
			if err != nil {
				return err
			}
			h, err := redis.StringMap(r[i+1], nil)
			if err != nil {
				return err
			}
			ids = append(ids, dep)
			recs = append(recs, h)
		}
		return nil
	})
	return ids, recs, err
}

// dependencyResultsScript reads the records of a job's dependencies: lua/dependency_results.lua.
var dependencyResultsScript = loadScript("dependency_results")
