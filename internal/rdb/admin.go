package rdb

// The Client's side of the store: reads for monitoring and the repairs of the scheduled, retry and
// dead sets and of the queues.

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Zmember is one member of a sorted set with its score (epoch seconds in every set of the layout).
type Zmember struct {
	Member []byte
	Score  int64
}

// ParseScore reads a sorted-set score as whole seconds; scores written by other programs may carry a
// fraction, which is dropped, and scores beyond the int64 range (+inf and -inf included) read as its
// ends. See scoreBounds for finding such members again.
func ParseScore(v interface{}) (int64, error) {
	s, err := redis.String(v, nil)
	if err != nil {
		return 0, err
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil && !errors.Is(err, strconv.ErrRange) {
		return 0, fmt.Errorf("work: bad score %q: %w", s, err)
	}
	switch {
	case f != f:
		return 0, fmt.Errorf("work: bad score %q", s)
	case f >= math.MaxInt64:
		return math.MaxInt64, nil
	case f <= math.MinInt64:
		return math.MinInt64, nil
	}
	return int64(f), nil
}

// ScoreBounds returns the ZRANGEBYSCORE bounds of the members whose score parseScore reads as
// score: [score, score+1) for positive scores, (score-1, score] for negative ones, (-1, 1) for 0,
// exactly score where a float64 has no fractions, and up to +inf (down to -inf) at the int64 range's
// ends.
func ScoreBounds(score int64) (min, max string) {
	n := strconv.FormatInt(score, 10)
	const exact = 1 << 53
	switch {
	case score == math.MaxInt64:
		return n, "+inf"
	case score == math.MinInt64:
		return "-inf", n
	case score >= exact || score <= -exact:
		return n, n
	case score > 0:
		return n, "(" + strconv.FormatInt(score+1, 10)
	case score < 0:
		return "(" + strconv.FormatInt(score-1, 10), n
	}
	return "(-1", "(1"
}

// ZsetMaxBound returns the highest score of a sorted set as Redis writes it ("inf" included), to
// use as a ZRANGEBYSCORE bound; ok is false when the set is empty.
func (s *Store) ZsetMaxBound(ctx context.Context, at Place) (bound string, ok bool, err error) {
	key := s.key(at)
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Strings(c.Do("ZRANGE", key, -1, -1, "WITHSCORES"))
		if err != nil || len(r) != 2 {
			return err
		}
		bound, ok = r[1], true
		return nil
	})
	return bound, ok, err
}

// parseWithScores turns a WITHSCORES reply into members.
func parseWithScores(reply interface{}) ([]Zmember, error) {
	vals, err := redis.Values(reply, nil)
	if err != nil {
		return nil, err
	}
	if len(vals)%2 != 0 {
		return nil, fmt.Errorf("work: WITHSCORES reply of odd length %d", len(vals))
	}
	out := make([]Zmember, 0, len(vals)/2)
	for i := 0; i < len(vals); i += 2 {
		m, err := redis.Bytes(vals[i], nil)
		if err != nil {
			return nil, err
		}
		sc, err := ParseScore(vals[i+1])
		if err != nil {
			return nil, err
		}
		out = append(out, Zmember{Member: m, Score: sc})
	}
	return out, nil
}

// ZsetPage returns members start..stop (by rank, inclusive) of a sorted set in score order, and the
// set's size, in one round trip.
func (s *Store) ZsetPage(ctx context.Context, at Place, start, stop int64) ([]Zmember, int64, error) {
	key := s.key(at)
	var page []Zmember
	var total int64
	err := s.do(ctx, func(c redis.Conn) error {
		c.Send("ZRANGE", key, start, stop, "WITHSCORES")
		c.Send("ZCARD", key)
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != 2 {
			return fmt.Errorf("work: zset page: unexpected reply of %d elements", len(r))
		}
		if page, err = parseWithScores(r[0]); err != nil {
			return err
		}
		total, err = redis.Int64(r[1], nil)
		return err
	})
	return page, total, err
}

// ZsetByScore returns up to count members of a sorted set with min <= score <= max (Redis score
// bounds such as "-inf" or "(5" are accepted), skipping the first offset, in score order.
func (s *Store) ZsetByScore(ctx context.Context, at Place, min, max interface{}, offset, count int) ([]Zmember, error) {
	key := s.key(at)
	var out []Zmember
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := c.Do("ZRANGEBYSCORE", key, min, max, "WITHSCORES", "LIMIT", offset, count)
		if err != nil {
			return err
		}
		out, err = parseWithScores(r)
		return err
	})
	return out, err
}

// memberArgs are the script arguments of a member deletion: the key, the unique lock when there is one,
// then the member.
func memberArgs(key string, member []byte, lockKey string) []interface{} {
	if lockKey != "" {
		return []interface{}{2, key, lockKey, member}
	}
	return []interface{}{1, key, member}
}

// RemovedJob is what removing a job by hand changes besides its set or queue: its batch, its record
// and, for a job that holds its key's slot (key set), that slot.
type RemovedJob struct {
	Id, Name, Batch string
	Key             string // the key whose slot the job holds, "" when it holds none
	Tracked         bool
}

// withWorkflow appends to memberArgs what removedByHand (lua/lib/removedbyhand.lua) needs for a job
// removed by hand: j describes the job (nil when it could not be decoded), pending whether it had not
// ended yet.
func (s *Store) withWorkflow(args []interface{}, j *RemovedJob, pending bool) []interface{} {
	hold := j != nil && pending && j.Key != ""
	if j == nil || (j.Batch == "" && !j.Tracked && !hold) {
		return args
	}
	tracked, p := "0", "0"
	if j.Tracked {
		tracked = "1"
	}
	if pending {
		p = "1"
	}
	args = append(args, s.Ks.P, s.Ks.WakeChannel(), j.Id, j.Batch, tracked, p)
	if hold {
		// The job holds its key's slot: the slot is freed with it.
		args = append(args, s.Ks.Keyed(j.Name), j.Key)
	}
	return args
}

// DeleteMember removes one member of a sorted set, and with it the unique lock lockKey unless that is
// "" (see deleteMemberScript). It reports whether the member was removed.
func (s *Store) DeleteMember(ctx context.Context, at Place, member []byte, lockKey string, j *RemovedJob) (bool, error) {
	key := s.key(at)
	args := s.withWorkflow(memberArgs(key, member, lockKey), j, at != Dead)
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(deleteMemberScript.Do(c, args...))
		return err
	})
	return n == 1, err
}

// RequeueOp is one member to move from a sorted set onto its job's queue under a new payload.
type RequeueOp struct {
	Member  []byte // exact bytes in the set
	Payload []byte // what to push
	Name    string // the job name: its queue, and the wake-up message
	Key     string // a keyed job's key: its key's queue is the one
	Hold    bool   // the job holds its key's slot (a retry of KeyRetryInOrder): to the front, freeing it
}

// RequeueMembers moves members of a sorted set onto their queues (see requeueMembersScript), in one
// round trip, and returns how many were still there to move.
func (s *Store) RequeueMembers(ctx context.Context, at Place, ops []RequeueOp) (int64, error) {
	set := s.key(at)
	if len(ops) == 0 {
		return 0, nil
	}
	args := make([]interface{}, 0, 4+6*len(ops))
	args = append(args, 1+len(ops), set)
	for i := range ops {
		if ops[i].Key != "" {
			args = append(args, s.Ks.KeyedQueue(ops[i].Name, ops[i].Key))
		} else {
			args = append(args, s.Ks.Jobs(ops[i].Name))
		}
	}
	args = append(args, s.Ks.WakeChannel(), s.Ks.P)
	for i := range ops {
		hold := "0"
		if ops[i].Hold && ops[i].Key != "" {
			hold = "1"
		}
		args = append(args, ops[i].Member, ops[i].Payload, ops[i].Name, ops[i].Key, hold)
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(requeueMembersScript.Do(c, args...))
		return err
	})
	return n, err
}

// Unlink deletes a key without blocking the server while a large value is freed.
func (s *Store) Unlink(ctx context.Context, at Place) error {
	key := s.key(at)
	return s.do(ctx, func(c redis.Conn) error {
		_, err := c.Do("UNLINK", key)
		return err
	})
}

// SetPaused pauses or unpauses a queue; unpausing wakes idle pools so they fetch at once.
func (s *Store) SetPaused(ctx context.Context, name string, paused bool) error {
	return s.do(ctx, func(c redis.Conn) error {
		if paused {
			_, err := c.Do("SET", s.Ks.Paused(name), "1")
			return err
		}
		c.Send("DEL", s.Ks.Paused(name))
		c.Send("PUBLISH", s.Ks.WakeChannel(), name)
		c.Send("PUBLISH", s.Ks.KeyedWakeChannel(), name) // the pause held its keyed jobs too
		_, err := c.Do("")
		return err
	})
}

// queueStat is one known job name with its queue length and its oldest payload (nil when empty).
type queueStat struct {
	Name   string
	Count  int64
	Oldest []byte
}

// QueueStats lists every known job name with its queue's length and oldest job: two round trips
// whatever the number of queues.
func (s *Store) QueueStats(ctx context.Context) ([]queueStat, error) {
	var out []queueStat
	err := s.do(ctx, func(c redis.Conn) error {
		names, err := redis.Strings(c.Do("SMEMBERS", s.Ks.KnownJobs()))
		if err != nil || len(names) == 0 {
			return err
		}
		for _, name := range names {
			c.Send("LLEN", s.Ks.Jobs(name))
			c.Send("LINDEX", s.Ks.Jobs(name), -1)
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != 2*len(names) {
			return fmt.Errorf("work: queue stats: unexpected reply of %d elements", len(r))
		}
		out = make([]queueStat, len(names))
		for i, name := range names {
			// A queue key of the wrong type reads as empty rather than failing every other queue.
			out[i].Name = name
			out[i].Count, _ = redis.Int64(r[2*i], nil)
			out[i].Oldest, _ = redis.Bytes(r[2*i+1], nil)
		}
		return nil
	})
	return out, err
}

// PoolHashes returns the IDs in the worker_pools set and each one's heartbeat hash (empty when the
// hash is missing): two round trips whatever the number of pools.
func (s *Store) PoolHashes(ctx context.Context) ([]string, []map[string]string, error) {
	var ids []string
	var hashes []map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		if ids, err = redis.Strings(c.Do("SMEMBERS", s.Ks.WorkerPools())); err != nil || len(ids) == 0 {
			return err
		}
		hashes, err = s.hashes(c, ids, s.Ks.Heartbeat)
		return err
	})
	return ids, hashes, err
}

// WorkerHashes returns the observation hash of each worker (empty when the worker is idle), in one
// round trip.
func (s *Store) WorkerHashes(ctx context.Context, workerIDs []string) ([]map[string]string, error) {
	if len(workerIDs) == 0 {
		return nil, nil
	}
	var hashes []map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		hashes, err = s.hashes(c, workerIDs, s.Ks.Worker)
		return err
	})
	return hashes, err
}

// hashes pipelines HGETALL of key(id) for each id.
func (s *Store) hashes(c redis.Conn, ids []string, key func(string) string) ([]map[string]string, error) {
	for _, id := range ids {
		c.Send("HGETALL", key(id))
	}
	r, err := redis.Values(c.Do(""))
	if err != nil {
		return nil, err
	}
	if len(r) != len(ids) {
		return nil, fmt.Errorf("work: HGETALL: unexpected reply of %d elements", len(r))
	}
	out := make([]map[string]string, len(ids))
	for i := range r {
		// A key of the wrong type reads as missing: one broken key must not hide all the others.
		out[i], _ = redis.StringMap(r[i], nil)
	}
	return out, nil
}

// ListRange returns the members start..stop (inclusive, by index) of a list.
func (s *Store) ListRange(ctx context.Context, at Place, start, stop int64) ([][]byte, error) {
	key := s.key(at)
	var out [][]byte
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		out, err = redis.ByteSlices(c.Do("LRANGE", key, start, stop))
		return err
	})
	return out, err
}

// ListLengths returns the length of each list, in one round trip; a key of another type reads as 0.
func (s *Store) ListLengths(ctx context.Context, at []Place) ([]int64, error) {
	keys := make([]string, len(at))
	for i, p := range at {
		keys[i] = s.key(p)
	}
	if len(keys) == 0 {
		return nil, nil
	}
	out := make([]int64, len(keys))
	err := s.do(ctx, func(c redis.Conn) error {
		for _, k := range keys {
			c.Send("LLEN", k)
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != len(keys) {
			return fmt.Errorf("work: LLEN: unexpected reply of %d elements", len(r))
		}
		for i := range r {
			out[i], _ = redis.Int64(r[i], nil)
		}
		return nil
	})
	return out, err
}

// Zscan runs one ZSCAN step: the next cursor ("0" when done) and the members it returned (possibly
// some already returned by an earlier step).
func (s *Store) Zscan(ctx context.Context, at Place, cursor, match string, count int) (string, []Zmember, error) {
	key := s.key(at)
	var next string
	var members []Zmember
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(c.Do("ZSCAN", key, cursor, "MATCH", match, "COUNT", count))
		if err != nil {
			return err
		}
		if len(r) != 2 {
			return fmt.Errorf("work: ZSCAN: unexpected reply of %d elements", len(r))
		}
		if next, err = redis.String(r[0], nil); err != nil {
			return err
		}
		members, err = parseWithScores(r[1])
		return err
	})
	return next, members, err
}

// PoolIDs returns the members of the worker_pools set.
func (s *Store) PoolIDs(ctx context.Context) ([]string, error) {
	var ids []string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		ids, err = redis.Strings(c.Do("SMEMBERS", s.Ks.WorkerPools()))
		return err
	})
	return ids, err
}

// DeleteListMember removes every copy of member from a list, and with it the unique lock lockKey
// unless that is "" (see deleteListMemberScript). It returns the number of copies removed.
func (s *Store) DeleteListMember(ctx context.Context, at Place, member []byte, lockKey string, j *RemovedJob) (int64, error) {
	key := s.key(at)
	args := s.withWorkflow(memberArgs(key, member, lockKey), j, true)
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(deleteListMemberScript.Do(c, args...))
		return err
	})
	return n, err
}

// ZremMembers removes the given exact members from a sorted set (members already gone are skipped by
// ZREM itself) and returns how many it removed.
func (s *Store) ZremMembers(ctx context.Context, at Place, members [][]byte) (int64, error) {
	key := s.key(at)
	if len(members) == 0 {
		return 0, nil
	}
	args := make([]interface{}, 0, 1+len(members))
	args = append(args, key)
	for _, m := range members {
		args = append(args, m)
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("ZREM", args...))
		return err
	})
	return n, err
}

// SetSizes returns the sizes of the scheduled, retry and dead sets and of the index of pending
// debounced bursts, in one round trip.
func (s *Store) SetSizes(ctx context.Context) (scheduled, retry, dead, bursts int64, err error) {
	err = s.do(ctx, func(c redis.Conn) error {
		for _, k := range []string{s.Ks.Scheduled(), s.Ks.Retry(), s.Ks.Dead(), s.Ks.Debounces()} {
			c.Send("ZCARD", k)
		}
		r, err := redis.Int64s(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != 4 {
			return fmt.Errorf("work: ZCARD: unexpected reply of %d elements", len(r))
		}
		scheduled, retry, dead, bursts = r[0], r[1], r[2], r[3]
		return nil
	})
	return scheduled, retry, dead, bursts, err
}

// queueDetail is one known job name with its queue length, oldest payload (nil when empty), paused
// flag, jobs in flight and MaxConcurrency.
type queueDetail struct {
	queueStat
	Paused         bool
	InFlight       int64
	MaxConcurrency int64
	Keyed          int64 // keyed jobs waiting
}

// QueueDetails lists every known job name with the state of its queue, in three round trips
// whatever the number of queues. Jobs in flight are the lock counter of a limited queue (the number
// its MaxConcurrency gates), and otherwise the length of the in-progress lists of the pools that
// serve it (pools count only the jobs of limited queues).
func (s *Store) QueueDetails(ctx context.Context) ([]queueDetail, error) {
	var out []queueDetail
	err := s.do(ctx, func(c redis.Conn) error {
		c.Send("SMEMBERS", s.Ks.KnownJobs())
		c.Send("SMEMBERS", s.Ks.WorkerPools())
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		names, err := redis.Strings(r[0], nil)
		if err != nil || len(names) == 0 {
			return err
		}
		pools, _ := redis.Strings(r[1], nil)
		for _, id := range pools {
			c.Send("HGET", s.Ks.Heartbeat(id), "job_names")
		}
		serving := make(map[string][]string) // job name -> pools that serve it
		if len(pools) > 0 {
			hbs, err := redis.Values(c.Do(""))
			if err != nil {
				return err
			}
			for i, v := range hbs {
				if list, err := redis.String(v, nil); err == nil && i < len(pools) {
					for _, name := range strings.Split(list, ",") {
						serving[name] = append(serving[name], pools[i])
					}
				}
			}
		}
		const perName = 6
		for _, name := range names {
			c.Send("LLEN", s.Ks.Jobs(name))
			c.Send("LINDEX", s.Ks.Jobs(name), -1)
			c.Send("EXISTS", s.Ks.Paused(name))
			c.Send("GET", s.Ks.Lock(name))
			c.Send("GET", s.Ks.MaxConcurrency(name))
			c.Send("HGET", s.Ks.keyedMeta(name), "waiting")
			for _, id := range serving[name] {
				c.Send("LLEN", s.Ks.InProgress(name, id))
				c.Send("LLEN", s.Ks.KeyedInProgress(name, id))
			}
		}
		r, err = redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		out = make([]queueDetail, len(names))
		at := 0
		for i, name := range names {
			inProgress := 2 * len(serving[name])
			if len(r) < at+perName+inProgress {
				return fmt.Errorf("work: queue details: unexpected reply of %d elements", len(r))
			}
			// A key of the wrong type or a garbled counter reads as zero rather than failing every
			// other queue.
			v := r[at : at+perName]
			d := &out[i]
			d.Name = name
			d.Count, _ = redis.Int64(v[0], nil)
			d.Oldest, _ = redis.Bytes(v[1], nil)
			n, _ := redis.Int64(v[2], nil)
			d.Paused = n > 0
			d.MaxConcurrency = parseInt64Reply(v[4])
			d.Keyed = max(parseInt64Reply(v[5]), 0)
			if d.MaxConcurrency > 0 {
				d.InFlight = parseInt64Reply(v[3])
			} else {
				for _, l := range r[at+perName : at+perName+inProgress] {
					n, _ := redis.Int64(l, nil)
					d.InFlight += n
				}
			}
			at += perName + inProgress
		}
		return nil
	})
	return out, err
}

// parseInt64Reply reads a string reply holding an integer; nil or garbage reads as 0.
func parseInt64Reply(v interface{}) int64 {
	s, err := redis.String(v, nil)
	if err != nil {
		return 0
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		// Other writers may store a float ("3.0"); keep its integer part.
		f, ferr := strconv.ParseFloat(s, 64)
		if ferr != nil {
			return 0
		}
		return int64(f)
	}
	return n
}

// StatsCounts reads the per-minute processed and failed counts of each job name for the epoch
// minutes from..to (inclusive) from the stats hashes, in one round trip. processed[i][m-from] is the
// count of names[i] in minute m.
func (s *Store) StatsCounts(ctx context.Context, names []string, from, to int64) (processed, failed [][]int64, err error) {
	n := to - from + 1
	if len(names) == 0 || n <= 0 {
		return nil, nil, nil
	}
	type span struct{ first, last int64 } // minutes of one day's hash
	var spans []span
	for m := from; m <= to; {
		day := m * 60 / 86400
		last := (day+1)*86400/60 - 1
		if last > to {
			last = to
		}
		spans = append(spans, span{m, last})
		m = last + 1
	}
	processed = make([][]int64, len(names))
	failed = make([][]int64, len(names))
	err = s.do(ctx, func(c redis.Conn) error {
		for _, name := range names {
			for _, sp := range spans {
				args := make([]interface{}, 0, 1+2*(sp.last-sp.first+1))
				args = append(args, s.Ks.Stats(name, sp.first*60/86400))
				for m := sp.first; m <= sp.last; m++ {
					ms := strconv.FormatInt(m, 10)
					args = append(args, "p:"+ms, "f:"+ms)
				}
				c.Send("HMGET", args...)
			}
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != len(names)*len(spans) {
			return fmt.Errorf("work: stats: unexpected reply of %d elements", len(r))
		}
		for i := range names {
			processed[i] = make([]int64, n)
			failed[i] = make([]int64, n)
			for k, sp := range spans {
				// A hash of the wrong type reads as no counts.
				vals, _ := redis.Values(r[i*len(spans)+k], nil)
				for j := 0; j+1 < len(vals) && sp.first+int64(j/2) <= sp.last; j += 2 {
					at := sp.first + int64(j/2) - from
					processed[i][at] = parseInt64Reply(vals[j])
					failed[i][at] = parseInt64Reply(vals[j+1])
				}
			}
		}
		return nil
	})
	return processed, failed, err
}
