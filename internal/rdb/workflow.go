package rdb

// Workflow state: opening, filling and closing batches, enqueueing jobs that wait for others, and
// reading batches, job records and the records of a job's dependencies. The job ends that update
// this state go through the exchange (store.go); the scripts are lua/batch.lua,
// lua/enqueue_after.lua, lua/dependency_results.lua and lua/lib/workflow.lua.

import (
	"context"
	"fmt"

	"github.com/gomodule/redigo/redis"
)

// Batch runs batchScript for batch id: steps as it takes them, open what opening writes, and the
// payloads of the members to add, in groups by job name and key.
func (s *Store) Batch(ctx context.Context, w ReplicaWait, id, steps string, open BatchOpen, groups []KeyedGroup) error {
	args := make([]interface{}, 0, 3+len(groups)+12+3*len(groups))
	args = append(args, 3+len(groups), s.Ks.Batch(id), s.Ks.batches(), s.Ks.KnownJobs())
	for _, g := range groups {
		if g.Key != "" {
			args = append(args, s.Ks.KeyedQueue(g.Name, g.Key))
		} else {
			args = append(args, s.Ks.Jobs(g.Name))
		}
	}
	args = append(args, steps, s.Ks.P, s.Ks.WakeChannel(), id, open.Description, open.Keep,
		open.OnComplete, open.OnCompleteName, open.OnSuccess, open.OnSuccessName)
	for _, g := range groups {
		args = append(args, g.Name, g.Key, len(g.Payloads))
	}
	for _, g := range groups {
		args = append(args, g.Payloads...)
	}
	return batchError(s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := batchScript.Do(c, args...)
		return keyedError(err, groups)
	}))
}

// AfterJob is a job for EnqueueAfter: its ID, name and payload, what becomes of it when a dependency
// dies, how long its record is kept, and what it waits for.
type AfterJob struct {
	ID, Name      string
	Payload       []byte
	RunIfDepFails bool // run when a dependency dies, rather than die with it
	Keep          int64
	Key           string // a keyed job's key
	Deps          []Dep
}

// Dep is a dependency: a job or a batch, by ID.
type Dep struct {
	batch bool
	id    string
}

// JobDep is a dependency on the job with the ID.
func JobDep(id string) Dep { return Dep{id: id} }

// BatchDep is a dependency on the batch with the ID.
func BatchDep(id string) Dep { return Dep{batch: true, id: id} }

// arg is d as the scripts take it: "j:<job ID>" or "b:<batch ID>".
func (d Dep) arg() string {
	if d.batch {
		return "b:" + d.id
	}
	return "j:" + d.id
}

// EnqueueAfter runs enqueueAfterScript; it returns each job's state (queued, waiting or dead).
// With m non-nil it is idempotent by m.ID (ErrJobIDTaken, see EnqueueOneWithID).
func (s *Store) EnqueueAfter(ctx context.Context, w ReplicaWait, jobs []AfterJob, m *JobIDMark) ([]string, error) {
	args := []interface{}{1, s.Ks.KnownJobs(), s.Ks.P, s.Ks.WakeChannel(), len(jobs)}
	for _, j := range jobs {
		policy := "dead"
		if j.RunIfDepFails {
			policy = "run"
		}
		args = append(args, j.ID, j.Name, j.Payload, j.Keep, policy, j.Key, len(j.Deps))
		for _, d := range j.Deps {
			args = append(args, d.arg())
		}
	}
	var states []string
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		var err error
		if m != nil {
			states, err = redis.Strings(enqueueAfterWithID.Do(c, s.withJobID(-1, args, *m)...))
			return jobIDError(err)
		}
		states, err = redis.Strings(enqueueAfterScript.Do(c, args...))
		return err
	})
	return states, dependencyError(err)
}

// BatchStatus reads a batch's hash; nil when there is none.
func (s *Store) BatchStatus(ctx context.Context, id string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.Ks.Batch(id)))
		return err
	})
	if len(h) == 0 {
		h = nil
	}
	return h, err
}

// BatchIDs lists batch IDs from the index, newest first: start..stop (0-based, inclusive), and the
// index's size.
func (s *Store) BatchIDs(ctx context.Context, start, stop int64) ([]string, int64, error) {
	var ids []string
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		c.Send("ZREVRANGE", s.Ks.batches(), start, stop)
		c.Send("ZCARD", s.Ks.batches())
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

// ForgetBatches removes batch IDs (whose status expired) from the index.
func (s *Store) ForgetBatches(ctx context.Context, ids []string) error {
	return s.do(ctx, func(c redis.Conn) error {
		for _, key := range []string{s.Ks.batches(), s.Ks.BatchesExpiry()} {
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

// TrimBatches drops up to budget due batches from the index (see trimBatchesScript), then checks up
// to walk entries from rank walkFrom for batches gone another way; it returns how many it removed
// and the rank to walk from next.
func (s *Store) TrimBatches(ctx context.Context, budget, walk int, walkFrom int64) (removed, next int64, err error) {
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Int64s(trimBatchesScript.Do(c, s.Ks.batches(), s.Ks.BatchesExpiry(), budget, walk, walkFrom, s.Ks.Batch("")))
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

// JobRecord reads a job's record; nil when there is none.
func (s *Store) JobRecord(ctx context.Context, id string) (map[string]string, error) {
	var h map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		h, err = redis.StringMap(c.Do("HGETALL", s.Ks.JobRecord(id)))
		return err
	})
	if len(h) == 0 {
		h = nil
	}
	return h, err
}

// DependencyResults reads the records of the jobs that job id waited for (lua/dependency_results.lua):
// their IDs, in the order given at enqueue, each with its record's fields (none when it expired).
func (s *Store) DependencyResults(ctx context.Context, id string) ([]string, []map[string]string, error) {
	var ids []string
	var recs []map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(dependencyResultsScript.Do(c, s.Ks.JobRecord(id), s.Ks.P))
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

// BatchOpen is what opening a batch writes.
type BatchOpen struct {
	Description                   string
	Keep                          int64
	OnComplete, OnSuccess         []byte // callback payload heads
	OnCompleteName, OnSuccessName string
}

// BatchCounterUnit is 2^26: a batch's counter c holds pending + batchCounterUnit*dead (WK in the scripts).
const BatchCounterUnit = 1 << 26
