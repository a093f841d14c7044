package work

// The Redis side of Client: reads for monitoring and the admin writes on the scheduled, retry and
// dead sets. As in redis.go, scripts copy payloads as opaque strings; any new payload is built in Go.

import (
	"context"
	"fmt"
	"strconv"

	"github.com/gomodule/redigo/redis"
)

// deleteMemberScript removes one member from a sorted set and, only if it was still there, the unique
// lock that guarded it, so a job deleted twice never frees a lock that a newer job holds.
//
//	KEYS[1] sorted set; KEYS[2] (optional) unique lock to delete with it
//	ARGV[1] member
//
// Returns 1 when removed, 0 when the member was gone.
var deleteMemberScript = redis.NewScript(-1, `
if redis.call('zrem', KEYS[1], ARGV[1]) == 1 then
  if KEYS[2] then redis.call('del', KEYS[2]) end
  return 1
end
return 0
`)

// requeueMembersScript moves members of a sorted set onto the back of their queues under new payloads,
// each at most once: a member already removed (by a racing client) is skipped, so nothing runs twice.
// A queue that goes from empty to one job wakes idle pools.
//
//	KEYS[1] the sorted set; KEYS[1+i] the queue list for member i
//	ARGV[1] wake-up channel; ARGV[3i-1], ARGV[3i], ARGV[3i+1]: member i, the payload to push, its job name
//
// Returns the number of members moved.
var requeueMembersScript = redis.NewScript(-1, `
local moved = 0
for i = 2, #KEYS do
  local a = 3 * (i - 1) - 1
  if redis.call('zrem', KEYS[1], ARGV[a]) == 1 then
    if redis.call('lpush', KEYS[i], ARGV[a+1]) == 1 then redis.call('publish', ARGV[1], ARGV[a+2]) end
    moved = moved + 1
  end
end
return moved
`)

// zmember is one member of a sorted set with its score (epoch seconds in every set of the layout).
type zmember struct {
	member []byte
	score  int64
}

// parseScore reads a sorted-set score as whole seconds; scores written by other programs may carry a
// fraction, which is dropped.
func parseScore(v interface{}) (int64, error) {
	s, err := redis.String(v, nil)
	if err != nil {
		return 0, err
	}
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return n, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("work: bad score %q: %w", s, err)
	}
	return int64(f), nil
}

// parseWithScores turns a WITHSCORES reply into members.
func parseWithScores(reply interface{}) ([]zmember, error) {
	vals, err := redis.Values(reply, nil)
	if err != nil {
		return nil, err
	}
	if len(vals)%2 != 0 {
		return nil, fmt.Errorf("work: WITHSCORES reply of odd length %d", len(vals))
	}
	out := make([]zmember, 0, len(vals)/2)
	for i := 0; i < len(vals); i += 2 {
		m, err := redis.Bytes(vals[i], nil)
		if err != nil {
			return nil, err
		}
		sc, err := parseScore(vals[i+1])
		if err != nil {
			return nil, err
		}
		out = append(out, zmember{member: m, score: sc})
	}
	return out, nil
}

// zsetPage returns members start..stop (by rank, inclusive) of a sorted set in score order, and the
// set's size, in one round trip.
func (s *store) zsetPage(ctx context.Context, key string, start, stop int64) ([]zmember, int64, error) {
	var page []zmember
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

// zsetByScore returns up to count members of a sorted set with min <= score <= max (Redis score
// bounds such as "-inf" or "(5" are accepted), skipping the first offset, in score order.
func (s *store) zsetByScore(ctx context.Context, key string, min, max interface{}, offset, count int) ([]zmember, error) {
	var out []zmember
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

// zsetMaxScore returns the highest score in a sorted set; ok is false when the set is empty.
func (s *store) zsetMaxScore(ctx context.Context, key string) (score int64, ok bool, err error) {
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := c.Do("ZRANGE", key, -1, -1, "WITHSCORES")
		if err != nil {
			return err
		}
		m, err := parseWithScores(r)
		if err != nil || len(m) == 0 {
			return err
		}
		score, ok = m[0].score, true
		return nil
	})
	return score, ok, err
}

// deleteMember removes one member of a sorted set, and with it the unique lock lockKey unless that is
// "" (see deleteMemberScript). It reports whether the member was removed.
func (s *store) deleteMember(ctx context.Context, key string, member []byte, lockKey string) (bool, error) {
	args := []interface{}{1, key}
	if lockKey != "" {
		args = []interface{}{2, key, lockKey}
	}
	args = append(args, member)
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(deleteMemberScript.Do(c, args...))
		return err
	})
	return n == 1, err
}

// requeueOp is one member to move from a sorted set onto its job's queue under a new payload.
type requeueOp struct {
	member  []byte // exact bytes in the set
	payload []byte // what to push
	name    string // the job name: its queue, and the wake-up message
}

// requeueMembers moves members of a sorted set onto their queues (see requeueMembersScript), in one
// round trip, and returns how many were still there to move.
func (s *store) requeueMembers(ctx context.Context, set string, ops []requeueOp) (int64, error) {
	if len(ops) == 0 {
		return 0, nil
	}
	args := make([]interface{}, 0, 3+4*len(ops))
	args = append(args, 1+len(ops), set)
	for i := range ops {
		args = append(args, s.ks.jobs(ops[i].name))
	}
	args = append(args, s.ks.wakeChannel())
	for i := range ops {
		args = append(args, ops[i].member, ops[i].payload, ops[i].name)
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(requeueMembersScript.Do(c, args...))
		return err
	})
	return n, err
}

// unlink deletes a key without blocking the server while a large value is freed.
func (s *store) unlink(ctx context.Context, key string) error {
	return s.do(ctx, func(c redis.Conn) error {
		_, err := c.Do("UNLINK", key)
		return err
	})
}

// setPaused pauses or unpauses a queue; unpausing wakes idle pools so they fetch at once.
func (s *store) setPaused(ctx context.Context, name string, paused bool) error {
	return s.do(ctx, func(c redis.Conn) error {
		if paused {
			_, err := c.Do("SET", s.ks.paused(name), "1")
			return err
		}
		c.Send("DEL", s.ks.paused(name))
		c.Send("PUBLISH", s.ks.wakeChannel(), name)
		_, err := c.Do("")
		return err
	})
}

// queueStat is one known job name with its queue length and its oldest payload (nil when empty).
type queueStat struct {
	name   string
	count  int64
	oldest []byte
}

// queueStats lists every known job name with its queue's length and oldest job: two round trips
// whatever the number of queues.
func (s *store) queueStats(ctx context.Context) ([]queueStat, error) {
	var out []queueStat
	err := s.do(ctx, func(c redis.Conn) error {
		names, err := redis.Strings(c.Do("SMEMBERS", s.ks.knownJobs()))
		if err != nil || len(names) == 0 {
			return err
		}
		for _, name := range names {
			c.Send("LLEN", s.ks.jobs(name))
			c.Send("LINDEX", s.ks.jobs(name), -1)
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
			out[i].name = name
			out[i].count, _ = redis.Int64(r[2*i], nil)
			out[i].oldest, _ = redis.Bytes(r[2*i+1], nil)
		}
		return nil
	})
	return out, err
}

// poolHashes returns the IDs in the worker_pools set and each one's heartbeat hash (empty when the
// hash is missing): two round trips whatever the number of pools.
func (s *store) poolHashes(ctx context.Context) ([]string, []map[string]string, error) {
	var ids []string
	var hashes []map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		if ids, err = redis.Strings(c.Do("SMEMBERS", s.ks.workerPools())); err != nil || len(ids) == 0 {
			return err
		}
		hashes, err = s.hashes(c, ids, s.ks.heartbeat)
		return err
	})
	return ids, hashes, err
}

// workerHashes returns the observation hash of each worker (empty when the worker is idle), in one
// round trip.
func (s *store) workerHashes(ctx context.Context, workerIDs []string) ([]map[string]string, error) {
	if len(workerIDs) == 0 {
		return nil, nil
	}
	var hashes []map[string]string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		hashes, err = s.hashes(c, workerIDs, s.ks.worker)
		return err
	})
	return hashes, err
}

// hashes pipelines HGETALL of key(id) for each id.
func (s *store) hashes(c redis.Conn, ids []string, key func(string) string) ([]map[string]string, error) {
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
