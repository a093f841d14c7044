package rdb

// Grouped jobs: jobs of a job name and a group key wait in the group's list until a flush makes one
// call job of them (lua/group_add.lua, lua/group_flush.lua, on lua/lib/groups.lua, whose header
// describes the state); a call is a keyed job of the name with the group as its key.

import (
	"context"
	"math"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Keys of grouped jobs. A group's list holds its key between braces (which keys may not contain),
// so that no two names or groups share one.
func (k Keyspace) Group(name, group string) string { return k.P + "group:" + name + ":{" + group + "}" }
func (k Keyspace) GroupConf() string               { return k.P + "group_conf" }
func (k Keyspace) GroupsDue() string               { return k.P + "groups_due" }
func (k Keyspace) GroupSeq() string                { return k.P + "group_seq" }

var (
	// groupAddScript adds jobs to their groups, flushing each when full: lua/group_add.lua.
	groupAddScript = loadScript("group_add")
	// groupFlushScript flushes due groups: lua/group_flush.lua.
	groupFlushScript = loadScript("group_flush")
	// groupOutcomesScript writes the outcomes of single jobs of a call: lua/group_outcomes.lua.
	groupOutcomesScript = loadScript("group_outcomes")
)

// GroupConf is the text a name's group settings are written as in the conf hash: max size, max
// delay and grace in seconds, 0 for not set.
func GroupConf(maxSize, maxDelay, grace int64) string {
	return strconv.FormatInt(maxSize, 10) + " " + strconv.FormatInt(maxDelay, 10) + " " + strconv.FormatInt(grace, 10)
}

// groupAddArgs are groupAddScript's arguments for the grouped pushes ps (the default delay is the
// first push's: an Enqueuer's pushes share it).
func (s *Store) groupAddArgs(ps ...*Push) []interface{} {
	args := make([]interface{}, 0, 1+4+len(ps)+4+3*len(ps))
	args = append(args, 4+len(ps), s.Ks.GroupConf(), s.Ks.GroupsDue(), s.Ks.KnownJobs(), s.Ks.GroupSeq())
	for _, p := range ps {
		args = append(args, s.Ks.Group(p.Name, p.Group))
	}
	args = append(args, s.Ks.P, s.Ks.WakeChannel(), s.Ks.DueChannel(), ps[0].GroupDefaultDelay)
	for _, p := range ps {
		args = append(args, p.Payload, p.Name, p.Group)
	}
	return args
}

// FlushGroups flushes the due groups among members of the due index (see groupFlushScript). It
// returns the calls pushed, the jobs they carry, and the groups left alone for a key of another type.
func (s *Store) FlushGroups(ctx context.Context, members [][]byte, defaultDelay int64) (calls, taken, skipped int64, err error) {
	args := make([]interface{}, 0, 7+len(members))
	args = append(args, s.Ks.GroupsDue(), s.Ks.GroupConf(), s.Ks.GroupSeq(), s.Ks.P, s.Ks.WakeChannel(), s.Ks.DueChannel(), defaultDelay)
	for _, m := range members {
		args = append(args, m)
	}
	err = s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Int64s(groupFlushScript.Do(c, args...))
		if err != nil {
			return wrongType(err)
		}
		if len(r) != 3 {
			return redis.Error("work: group flush: unexpected reply")
		}
		calls, taken, skipped = r[0], r[1], r[2]
		return nil
	})
	return calls, taken, skipped, err
}

// GroupOutcome is where one job of a call goes: the retry set, or the dead set (Dead), at Score.
type GroupOutcome struct {
	Dead    bool
	Score   int64
	Payload []byte
}

// WriteGroupOutcomes writes the outcomes of single jobs of a call (see groupOutcomesScript).
func (s *Store) WriteGroupOutcomes(ctx context.Context, outs []GroupOutcome) error {
	if len(outs) == 0 {
		return nil
	}
	args := make([]interface{}, 0, 2+3*len(outs))
	args = append(args, s.Ks.Retry(), s.Ks.Dead())
	for _, o := range outs {
		kind := "r"
		if o.Dead {
			kind = "d"
		}
		args = append(args, kind, o.Score, o.Payload)
	}
	return s.do(ctx, func(c redis.Conn) error {
		_, err := groupOutcomesScript.Do(c, args...)
		return wrongType(err)
	})
}

// GroupState is a group with jobs waiting: its size, its oldest job's arrival (ms of the server's
// clock; 0 when unreadable) and when it is due (epoch seconds; -1: only a full size flushes it).
type GroupState struct {
	Name, Group string
	Size        int64
	OldestMs    int64
	Due         int64
}

// Groups reads the due index and, for each group of name (of every name when name is ""), the
// length and head of its list.
func (s *Store) Groups(ctx context.Context, name string) ([]GroupState, error) {
	var out []GroupState
	err := s.do(ctx, func(c redis.Conn) error {
		v, err := redis.Strings(c.Do("ZRANGE", s.Ks.GroupsDue(), 0, -1, "WITHSCORES"))
		if err != nil {
			return wrongType(err)
		}
		for i := 0; i+1 < len(v); i += 2 {
			n, g, ok := strings.Cut(v[i], "\n")
			if !ok || (name != "" && n != name) {
				continue
			}
			st := GroupState{Name: n, Group: g, Due: -1}
			if f, err := strconv.ParseFloat(v[i+1], 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
				st.Due = int64(f)
			}
			c.Send("LLEN", s.Ks.Group(n, g))
			c.Send("LINDEX", s.Ks.Group(n, g), 0)
			out = append(out, st)
		}
		if len(out) == 0 {
			return nil
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return wrongType(err)
		}
		for i := range out {
			out[i].Size, _ = redis.Int64(r[2*i], nil)
			head, _ := redis.String(r[2*i+1], nil)
			if ms, _, ok := strings.Cut(head, " "); ok {
				out[i].OldestMs, _ = strconv.ParseInt(ms, 10, 64)
			}
		}
		return nil
	})
	return out, err
}
