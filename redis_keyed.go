package work

// The Redis side of keyed jobs (keyed.go): their keys, and the store methods that move them. The
// scripts are lua/enqueue_keyed.lua and lua/keyed_*.lua, on the helpers of lua/lib/keyed.lua, whose
// header describes the state.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Keys of keyed jobs: every one of a job name's starts with <ns>:keyed:<name>:, and a key's own ones
// hold it between braces (which keys may not contain), so that no two names or keys share one.
func (k keyspace) keyedWakeChannel() string        { return k.p + "wake:keyed" }
func (k keyspace) keyed(name string) string        { return k.p + "keyed:" + name + ":" }
func (k keyspace) keyedReady(name string) string   { return k.keyed(name) + "ready" }
func (k keyspace) keyedWaiting(name string) string { return k.keyed(name) + "waiting" }
func (k keyspace) keyedRunning(name string) string { return k.keyed(name) + "running" }
func (k keyspace) keyedDelayed(name string) string { return k.keyed(name) + "delayed" }
func (k keyspace) keyedConf(name string) string    { return k.keyed(name) + "conf" }
func (k keyspace) keyedMeta(name string) string    { return k.keyed(name) + "meta" }
func (k keyspace) keyedQueue(name, key string) string {
	return k.keyed(name) + "{" + key + "}"
}
func (k keyspace) keyedInProgress(name, poolID string) string {
	return k.keyed(name) + poolID + ":inprogress"
}

// Scripts of keyed jobs; each file's header documents its KEYS, ARGV and reply.
var (
	// enqueueKeyedScript queues keyed jobs, all or none: lua/enqueue_keyed.lua.
	enqueueKeyedScript = loadScript("enqueue_keyed")
	// keyedControlScript pauses, resumes and sets the overrides of one key: lua/keyed_control.lua.
	keyedControlScript = loadScript("keyed_control")
)

// keyedGroup is the jobs of one job name and key in an enqueue.
type keyedGroup struct {
	name, key string
	payloads  []interface{}
}

// keyedEnqueueArgs appends enqueueKeyedScript's arguments (after its key count) for groups.
func (s *store) keyedEnqueueArgs(args []interface{}, groups []keyedGroup) []interface{} {
	args = append(args, s.ks.knownJobs(), s.ks.wakeChannel(), s.ks.p, len(groups))
	for _, g := range groups {
		args = append(args, g.name, g.key, len(g.payloads))
	}
	for _, g := range groups {
		args = append(args, g.payloads...)
	}
	return args
}

// enqueueKeyed queues the jobs of groups at once, all or none (see enqueueKeyedScript).
func (s *store) enqueueKeyed(ctx context.Context, w replicaWait, groups []keyedGroup) error {
	args := s.keyedEnqueueArgs(nil, groups)
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := enqueueKeyedScript.Do(c, args...)
		return keyedError(err, groups)
	})
}

// keyedError turns the script's refusal of a key past its cap into an error wrapping ErrKeyFull.
func keyedError(err error, groups []keyedGroup) error {
	var re redis.Error
	if !errors.As(err, &re) || !strings.HasPrefix(string(re), "WORKKEY full ") {
		return err
	}
	f := strings.Fields(string(re))
	if len(f) != 4 {
		return err
	}
	limit, _ := strconv.Atoi(f[2])
	g, _ := strconv.Atoi(f[3])
	if g < 1 || g > len(groups) {
		return fmt.Errorf("%w (at most %d)", ErrKeyFull, limit)
	}
	grp := groups[g-1]
	return fmt.Errorf("%w: key %q of job %q may have %d waiting; nothing was enqueued", ErrKeyFull,
		truncateKey(grp.key), grp.name, limit)
}

// keyedPushArgs are enqueueKeyedScript's arguments for the one job of p.
func (s *store) keyedPushArgs(p *push) []interface{} {
	return []interface{}{s.ks.knownJobs(), s.ks.wakeChannel(), s.ks.p, 1, p.name, p.key, 1, p.payload}
}

// keyedPushError is keyedError for the one job of p.
func keyedPushError(err error, p *push) error {
	if err == nil {
		return nil
	}
	return keyedError(err, []keyedGroup{{name: p.name, key: p.key}})
}

// keyControl runs keyedControlScript for one key: op is pause, unpause, set (with the four override
// values, "" for none) or clear.
func (s *store) keyControl(ctx context.Context, name, key, op string, vals [4]string) error {
	args := []interface{}{s.ks.keyedConf(name), s.ks.keyed(name), key, name, s.ks.wakeChannel(), op}
	if op == "set" {
		for _, v := range vals {
			args = append(args, v)
		}
	}
	return s.do(ctx, func(c redis.Conn) error {
		_, err := keyedControlScript.Do(c, args...)
		return err
	})
}

// keyState is what Redis holds of one key: its counts and its conf fields.
type keyState struct {
	key              string
	waiting, running int64
	conf             [5]string // p, c, r, w, m
}

// keyConfFields are the conf hash fields of a key, in keyState.conf's order.
func keyConfFields(key string) []interface{} {
	return []interface{}{"p:" + key, "c:" + key, "r:" + key, "w:" + key, "m:" + key}
}

// keyStates reads the state of the given keys of a name in one round trip.
func (s *store) keyStates(ctx context.Context, name string, keys []string) ([]keyState, error) {
	out := make([]keyState, len(keys))
	err := s.do(ctx, func(c redis.Conn) error {
		for _, key := range keys {
			c.Send("LLEN", s.ks.keyedQueue(name, key))
			c.Send("HGET", s.ks.keyedRunning(name), key)
			c.Send("HMGET", append([]interface{}{s.ks.keyedConf(name)}, keyConfFields(key)...)...)
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != 3*len(keys) {
			return fmt.Errorf("work: keys: unexpected reply of %d elements", len(r))
		}
		for i, key := range keys {
			st := &out[i]
			st.key = key
			// A key of another type reads as empty: the listing goes on.
			st.waiting, _ = redis.Int64(r[3*i], nil)
			st.running, _ = redis.Int64(r[3*i+1], nil)
			conf, _ := redis.Strings(r[3*i+2], nil)
			copy(st.conf[:], conf)
		}
		return nil
	})
	return out, err
}

// keysByBacklog returns keys start..stop (0-based, inclusive) of a name's keys with jobs waiting,
// busiest first, how many keys have jobs waiting, and the keys with jobs running but none waiting
// (a small set: at most the jobs in flight), sorted.
func (s *store) keysByBacklog(ctx context.Context, name string, start, stop int64) (keys []string, waitingKeys int64, runningOnly []string, err error) {
	err = s.do(ctx, func(c redis.Conn) error {
		c.Send("ZREVRANGE", s.ks.keyedWaiting(name), start, stop)
		c.Send("ZCARD", s.ks.keyedWaiting(name))
		c.Send("HKEYS", s.ks.keyedRunning(name))
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if keys, err = redis.Strings(r[0], nil); err != nil {
			return err
		}
		if waitingKeys, err = redis.Int64(r[1], nil); err != nil {
			return err
		}
		running, err := redis.Strings(r[2], nil)
		if err != nil || len(running) == 0 {
			return err
		}
		for _, k := range running {
			c.Send("ZSCORE", s.ks.keyedWaiting(name), k)
		}
		scores, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		for i, k := range running {
			if i < len(scores) && scores[i] == nil {
				runningOnly = append(runningOnly, k)
			}
		}
		return nil
	})
	sort.Strings(runningOnly)
	return keys, waitingKeys, runningOnly, err
}

// keyedSummary is what Redis holds of a name's keyed jobs as a whole.
type keyedSummary struct {
	waiting, waitingKeys       int64
	running, runningKeys       int64
	largest                    int64
	largestKey                 string
	pausedKeys, overriddenKeys int64
}

// keyedSummaries reads the keyed state of the given job names, two round trips in all.
func (s *store) keyedSummaries(ctx context.Context, names []string) ([]keyedSummary, error) {
	out := make([]keyedSummary, len(names))
	err := s.do(ctx, func(c redis.Conn) error {
		for _, name := range names {
			c.Send("HGET", s.ks.keyedMeta(name), "waiting")
			c.Send("ZCARD", s.ks.keyedWaiting(name))
			c.Send("HVALS", s.ks.keyedRunning(name))
			c.Send("ZREVRANGE", s.ks.keyedWaiting(name), 0, 0, "WITHSCORES")
			c.Send("HKEYS", s.ks.keyedConf(name))
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != 5*len(names) {
			return fmt.Errorf("work: key stats: unexpected reply of %d elements", len(r))
		}
		for i := range names {
			o := &out[i]
			// Keys of another type read as empty.
			o.waiting, _ = redis.Int64(r[5*i], nil)
			o.waitingKeys, _ = redis.Int64(r[5*i+1], nil)
			vals, _ := redis.Int64s(r[5*i+2], nil)
			o.runningKeys = int64(len(vals))
			for _, v := range vals {
				o.running += v
			}
			if top, _ := redis.Strings(r[5*i+3], nil); len(top) == 2 {
				o.largestKey = top[0]
				o.largest = parseInt64(top[1])
			}
			fields, _ := redis.Strings(r[5*i+4], nil)
			overridden := map[string]bool{}
			for _, f := range fields {
				if strings.HasPrefix(f, "p:") {
					o.pausedKeys++
				} else if len(f) > 2 && f[1] == ':' {
					overridden[f[2:]] = true
				}
			}
			o.overriddenKeys = int64(len(overridden))
		}
		return nil
	})
	return out, err
}

// keyedNames returns the known job names that have keyed state (a meta hash): those with keyed jobs
// now or before.
func (s *store) keyedNames(ctx context.Context) ([]string, error) {
	names, err := s.knownJobNames(ctx)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	var out []string
	err = s.do(ctx, func(c redis.Conn) error {
		for _, name := range names {
			c.Send("EXISTS", s.ks.keyedMeta(name))
		}
		r, err := redis.Int64s(c.Do(""))
		if err != nil {
			return err
		}
		for i, name := range names {
			if i < len(r) && r[i] == 1 {
				out = append(out, name)
			}
		}
		return nil
	})
	sort.Strings(out)
	return out, err
}

// keyDefaults are a job name's per-key settings, as the pool's JobOptions give them.
type keyDefaults struct {
	limit       uint      // KeyConcurrency; 0: none
	rate        rateLimit // KeyRateLimit
	holdOnRetry bool      // KeyRetryInOrder
}

// newKeyedQueueArgs encodes the keyed jobs of a name of poolID for exchanges: a group of kind 'k',
// whose keys are the name's ready keys and the pool's keyed in-progress list in
// place of a queue's jobs list and in-progress list, then the name's own paused flag and limits
// (which hold over its keyed jobs too), and whose fields add the keyed prefix and key defaults.
func (s *store) newKeyedQueueArgs(name, poolID string, limited bool, rl rateLimit, d keyDefaults) *queueArgs {
	q := s.newQueueArgs(name, poolID, limited, rl)
	q.keyed = true
	q.keys[0], q.keys[1] = s.ks.keyedReady(name), s.ks.keyedInProgress(name, poolID)
	hold := "0"
	if d.holdOnRetry {
		hold = "1"
	}
	q.extra = []interface{}{s.ks.keyed(name), d.limit, d.rate.jobs, d.rate.periodMs, hold}
	return q
}

// keyedAcks appends exchangeScript's K op for the acknowledgements of keyed group g (acks: their
// indexes in x.ops), key by key, so that the script counts each key's freed slots once; it sorts
// acks into that order, which is the order of their outcomes in the reply.
func (x *exchange) keyedAcks(args []interface{}, g int, acks []int) []interface{} {
	slices.SortStableFunc(acks, func(a, b int) int { return bytes.Compare(x.ops[a].job.fetchedKey(), x.ops[b].job.fetchedKey()) })
	keys := 0
	for i, a := range acks {
		if i == 0 || !bytes.Equal(x.ops[a].job.fetchedKey(), x.ops[acks[i-1]].job.fetchedKey()) {
			keys++
		}
	}
	args = append(args, "K", g+1, keys)
	for i := 0; i < len(acks); {
		key := x.ops[acks[i]].job.fetchedKey()
		j := i
		for j < len(acks) && bytes.Equal(x.ops[acks[j]].job.fetchedKey(), key) {
			j++
		}
		args = append(args, key, j-i)
		for _, a := range acks[i:j] {
			args = append(args, x.ops[a].job.rawArg)
		}
		i = j
	}
	return args
}
