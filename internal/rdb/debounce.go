package rdb

// Debounced jobs: a burst of enqueues of one job name and debounce ID becomes one pending job, held
// in the burst's hash (lua/debounce.lua); an index of the pending bursts by run time is a due source
// of the requeuer, which moves each burst's job into the scheduled set when it is due
// (lua/debounce_due.lua).

import (
	"context"
	"fmt"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Debounce is the hash of one burst; Debounces the index of bursts, scored by run time. The scripts
// that read bursts named by the index build a burst's key from debouncePrefix as Debounce does.
func (k Keyspace) Debounce(name, id string) string {
	return k.debouncePrefix() + name + ":{" + id + "}"
}
func (k Keyspace) Debounces() string      { return k.P + "debounces" }
func (k Keyspace) debouncePrefix() string { return k.P + "debounce:" }

// debounceMember is a burst's member in the index.
func debounceMember(name, id string) string { return name + "\n" + id }

// DebounceResult is what an enqueue of a burst did.
type DebounceResult struct {
	State   string // "new", "replaced" or "kept"
	Payload []byte // the pending job, when kept
}

// debounceArgs are debounceScript's arguments for the debounced pushes ps.
func (s *Store) debounceArgs(ps ...*Push) []interface{} {
	args := make([]interface{}, 0, 1+3+len(ps)+1+5*len(ps))
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
		args = append(args, p.Payload, d.WindowMs, d.MaxWaitMs, keep, debounceMember(p.Name, d.ID))
	}
	return args
}

// DebounceReply reads a debounced push's reply (Push.Reply: its one value of the script's reply).
func DebounceReply(reply interface{}) (DebounceResult, error) {
	if v, ok := reply.([]interface{}); ok && len(v) == 1 {
		reply = v[0]
	}
	switch v := reply.(type) {
	case int64:
		switch v {
		case 1:
			return DebounceResult{State: "new"}, nil
		case 2:
			return DebounceResult{State: "replaced"}, nil
		}
	case []byte:
		return DebounceResult{State: "kept", Payload: v}, nil
	case redis.Error:
		return DebounceResult{}, v
	}
	return DebounceResult{}, redis.Error("work: debounce: unexpected reply")
}

// PendingBurst is a burst whose job waits in its hash: when it began (Unix ms), the second it
// runs, its window and maximum wait (ms).
type PendingBurst struct {
	Name, ID                   string
	Payload                    []byte
	FirstMs, RunAt             int64
	WindowMs, MaxWaitMs, Count int64
}

// burstFields are the fields of a burst's hash read for a PendingBurst, in readBursts' order.
var burstFields = []interface{}{"pending", "first_ms", "run_at", "window_ms", "max_wait_ms", "count"}

// readBursts reads the hashes of the bursts whose index members are given, in one round trip: the
// bursts that hold a job, and the members whose burst holds none (it is over) or that name no
// burst.
func (s *Store) readBursts(c redis.Conn, members []string) (pending []PendingBurst, over []interface{}, err error) {
	bursts := make([]PendingBurst, 0, len(members))
	for _, m := range members {
		name, id, ok := strings.Cut(m, "\n")
		if !ok {
			over = append(over, m)
			continue
		}
		bursts = append(bursts, PendingBurst{Name: name, ID: id})
		if err := c.Send("HMGET", append([]interface{}{s.Ks.Debounce(name, id)}, burstFields...)...); err != nil {
			return nil, nil, err
		}
	}
	if len(bursts) == 0 {
		return nil, over, nil
	}
	replies, err := redis.Values(c.Do(""))
	if err != nil {
		return nil, nil, err
	}
	for i, b := range bursts {
		// A key of another type in a burst's place holds no job: the requeuer passes it over too.
		v, err := redis.Values(replies[i], nil)
		if err != nil || len(v) != len(burstFields) || v[0] == nil {
			over = append(over, debounceMember(b.Name, b.ID))
			continue
		}
		b.Payload, _ = redis.Bytes(v[0], nil)
		n := [5]*int64{&b.FirstMs, &b.RunAt, &b.WindowMs, &b.MaxWaitMs, &b.Count}
		for j, p := range n {
			*p, _ = redis.Int64(v[j+1], nil)
		}
		pending = append(pending, b)
	}
	return pending, over, nil
}

// PendingBursts reads the index of bursts and each burst's hash, and drops from the index the
// bursts that are over. At most limit, the soonest to run first. Two round trips whatever the count
// (the index, the hashes), and one more to drop the bursts that are over.
func (s *Store) PendingBursts(ctx context.Context, limit int) ([]PendingBurst, error) {
	var out []PendingBurst
	err := s.do(ctx, func(c redis.Conn) error {
		members, err := redis.Strings(c.Do("ZRANGE", s.Ks.Debounces(), 0, limit-1))
		if err != nil {
			return wrongType(err)
		}
		var over []interface{}
		if out, over, err = s.readBursts(c, members); err != nil {
			return err
		}
		if len(over) > 0 {
			_, err = c.Do("ZREM", append([]interface{}{s.Ks.Debounces()}, over...)...)
		}
		return err
	})
	return out, err
}

// EachPendingBurst calls fn with the pending bursts, a chunk of the index at a time in no order,
// until fn returns false or the index ends: for a search, which must see every burst however many.
func (s *Store) EachPendingBurst(ctx context.Context, fn func([]PendingBurst) bool) error {
	var findErr error
	err := s.ScanSet(ctx, Debounces, "*", func(members []Zmember) bool {
		names := make([]string, len(members))
		for i, m := range members {
			names[i] = string(m.Member)
		}
		var bursts []PendingBurst
		findErr = s.do(ctx, func(c redis.Conn) error {
			var err error
			bursts, _, err = s.readBursts(c, names)
			return err
		})
		return findErr == nil && fn(bursts)
	})
	if err == nil {
		err = findErr
	}
	return err
}

// EndBursts moves the pending jobs of the bursts named by members of the index into the scheduled
// set (see lua/debounce_due.lua): those that are due, or all of them at once (now, given as the run
// time) when atOnce is set; with want set, only a burst still holding that payload. It returns how
// many jobs it moved, and the server's clock (epoch seconds), the run time of a job moved at once.
func (s *Store) EndBursts(ctx context.Context, members [][]byte, atOnce bool, want []byte) (moved, now int64, err error) {
	if len(members) == 0 {
		return 0, 0, nil
	}
	mode := "due"
	if atOnce {
		mode = "now"
	}
	args := make([]interface{}, 0, 5+len(members))
	args = append(args, s.Ks.Debounces(), s.Ks.Scheduled(), s.Ks.debouncePrefix(), mode, want)
	for _, m := range members {
		args = append(args, m)
	}
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Int64s(debounceDueScript.Do(c, args...))
		if err != nil {
			return wrongType(err)
		}
		if len(r) != 2 {
			return fmt.Errorf("work: debounce_due: unexpected reply of %d elements", len(r))
		}
		moved, now = r[0], r[1]
		return nil
	})
	return moved, now, err
}

// EndBurst moves the pending job of the burst of name and id into the scheduled set at once, if the
// burst still holds payload, and reports whether it did and the job's score there (the server's
// clock).
func (s *Store) EndBurst(ctx context.Context, name, id string, payload []byte) (bool, int64, error) {
	n, at, err := s.EndBursts(ctx, [][]byte{[]byte(debounceMember(name, id))}, true, payload)
	return n == 1, at, err
}

// EditBurst replaces the pending job of the burst of name and id, if it is still old, with payload
// due at runAt; with payload nil it deletes the job, which ends the burst. It reports whether it
// edited.
func (s *Store) EditBurst(ctx context.Context, name, id string, old, payload []byte, runAt int64) (bool, error) {
	op := "set"
	if payload == nil {
		op = "delete"
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(debounceEditScript.Do(c, s.Ks.Debounce(name, id), s.Ks.Debounces(), old, op,
			payload, runAt, debounceMember(name, id), s.Ks.DueChannel()))
		return wrongType(err)
	})
	return n == 1, err
}

// Reschedule replaces member of the scheduled or retry set (at) with payload at score, if it is
// still there. It reports whether it replaced.
func (s *Store) Reschedule(ctx context.Context, at Place, member []byte, score int64, payload []byte) (bool, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(rescheduleScript.Do(c, s.Ks.place(at), member, score, payload, s.Ks.DueChannel()))
		return wrongType(err)
	})
	return n == 1, err
}
