package rdb

// Debounced jobs: a burst of enqueues of one job name and debounce ID becomes one pending job in the
// scheduled set (lua/debounce.lua); the burst's hash says what is pending, and an index lists the
// bursts for the Client.

import (
	"context"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Debounce is the hash of one burst; Debounces the index of bursts, scored by run time.
func (k Keyspace) Debounce(name, id string) string { return k.P + "debounce:" + name + ":{" + id + "}" }
func (k Keyspace) Debounces() string               { return k.P + "debounces" }

// debounceMember is a burst's member in the index.
func debounceMember(name, id string) string { return name + "\n" + id }

// DebounceResult is what an enqueue of a burst did.
type DebounceResult struct {
	State   string // "new", "replaced" or "kept"
	Payload []byte // the pending job
	RunAt   int64
	Count   int64 // enqueues in the burst so far
}

// debounceArgs are debounceScript's arguments for the debounced pushes ps.
func (s *Store) debounceArgs(ps ...*Push) []interface{} {
	args := make([]interface{}, 0, 1+3+len(ps)+1+6*len(ps))
	args = append(args, 3+len(ps), s.Ks.Scheduled(), s.Ks.KnownJobs(), s.Ks.Debounces())
	for _, p := range ps {
		args = append(args, s.Ks.Debounce(p.Name, p.Debounce.ID))
	}
	args = append(args, s.Ks.DueChannel())
	for _, p := range ps {
		d, keep := p.Debounce, ""
		if d.KeepFirst {
			keep = "1"
		}
		args = append(args, p.Payload, d.WindowMs, d.MaxWaitMs, keep, p.Name, debounceMember(p.Name, d.ID))
	}
	return args
}

// DebounceReply reads a debounced push's reply (Push.Reply).
func DebounceReply(reply interface{}) (DebounceResult, error) {
	var r DebounceResult
	v, err := redis.Values(reply, nil)
	if err != nil {
		return r, err
	}
	if len(v) != 4 {
		return r, redis.Error("work: debounce: unexpected reply")
	}
	r.State, _ = redis.String(v[0], nil)
	r.Payload, _ = redis.Bytes(v[1], nil)
	r.RunAt, _ = redis.Int64(v[2], nil)
	r.Count, _ = redis.Int64(v[3], nil)
	return r, nil
}

// PendingBurst is a burst whose job still waits in the scheduled set: when it began (Unix ms), the
// second it runs, its window and maximum wait (ms).
type PendingBurst struct {
	Name, ID                   string
	Payload                    []byte
	FirstMs, RunAt             int64
	WindowMs, MaxWaitMs, Count int64
}

// PendingBursts reads the index of bursts and each burst's hash, and drops from the index the
// bursts that are over (their job left the scheduled set, or the hash expired). At most limit. Three
// round trips whatever the count (the index, the hashes, the pending jobs' scores), and one more to
// drop the bursts that are over.
func (s *Store) PendingBursts(ctx context.Context, limit int) ([]PendingBurst, error) {
	var out []PendingBurst
	err := s.do(ctx, func(c redis.Conn) error {
		members, err := redis.Strings(c.Do("ZRANGE", s.Ks.Debounces(), 0, limit-1))
		if err != nil {
			return wrongType(err)
		}
		var over []interface{}
		var bursts []PendingBurst
		for _, m := range members {
			name, id, ok := strings.Cut(m, "\n")
			if !ok {
				over = append(over, m)
				continue
			}
			bursts = append(bursts, PendingBurst{Name: name, ID: id})
			if err := c.Send("HGETALL", s.Ks.Debounce(name, id)); err != nil {
				return err
			}
		}
		var hashes []interface{}
		if len(bursts) > 0 {
			if hashes, err = redis.Values(c.Do("")); err != nil {
				return err
			}
		}
		var withJob []PendingBurst
		for i, b := range bursts {
			h, err := redis.StringMap(hashes[i], nil)
			if err != nil {
				return wrongType(err)
			}
			if h["member"] == "" {
				over = append(over, debounceMember(b.Name, b.ID))
				continue
			}
			b.Payload = []byte(h["member"])
			b.FirstMs, _ = strconv.ParseInt(h["first_ms"], 10, 64)
			b.RunAt, _ = strconv.ParseInt(h["run_at"], 10, 64)
			b.WindowMs, _ = strconv.ParseInt(h["window_ms"], 10, 64)
			b.MaxWaitMs, _ = strconv.ParseInt(h["max_wait_ms"], 10, 64)
			b.Count, _ = strconv.ParseInt(h["count"], 10, 64)
			withJob = append(withJob, b)
			if err := c.Send("ZSCORE", s.Ks.Scheduled(), b.Payload); err != nil {
				return err
			}
		}
		var scores []interface{}
		if len(withJob) > 0 {
			if scores, err = redis.Values(c.Do("")); err != nil {
				return err
			}
		}
		for i, b := range withJob {
			if scores[i] == nil {
				over = append(over, debounceMember(b.Name, b.ID))
				continue
			}
			out = append(out, b)
		}
		if len(over) > 0 {
			_, err = c.Do("ZREM", append([]interface{}{s.Ks.Debounces()}, over...)...)
		}
		return err
	})
	return out, err
}

// Reschedule replaces member of the scheduled or retry set (at) with payload at score, if it is
// still there; burst names the debounce ID of a job of a burst of name ("" for none), whose pending
// job the replacement stays. It reports whether it replaced.
func (s *Store) Reschedule(ctx context.Context, at Place, member []byte, score int64, payload []byte, name, burst string) (bool, error) {
	set := s.Ks.place(at)
	hash, index, inIndex := set, set, ""
	if burst != "" {
		hash, index, inIndex = s.Ks.Debounce(name, burst), s.Ks.Debounces(), debounceMember(name, burst)
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(rescheduleScript.Do(c, set, hash, index, member, score, payload, inIndex, s.Ks.DueChannel()))
		return wrongType(err)
	})
	return n == 1, err
}
