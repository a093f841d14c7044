package rdb

// Keyed jobs: their keys, and the store methods that move them. The
// scripts are lua/enqueue_keyed.lua and lua/keyed_*.lua, on the helpers of lua/lib/keyed.lua, whose
// header describes the state.

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Keys of keyed jobs: every one of a job name's starts with <ns>:keyed:<name>:, and a key's own ones
// hold it between braces (which keys may not contain), so that no two names or keys share one.
func (k Keyspace) KeyedWakeChannel() string        { return k.P + "wake:keyed" }
func (k Keyspace) Keyed(name string) string        { return k.P + "keyed:" + name + ":" }
func (k Keyspace) KeyedReady(name string) string   { return k.Keyed(name) + "ready" }
func (k Keyspace) KeyedWaiting(name string) string { return k.Keyed(name) + "waiting" }
func (k Keyspace) keyedRunning(name string) string { return k.Keyed(name) + "running" }
func (k Keyspace) keyedDelayed(name string) string { return k.Keyed(name) + "delayed" }
func (k Keyspace) keyedConf(name string) string    { return k.Keyed(name) + "conf" }
func (k Keyspace) keyedMeta(name string) string    { return k.Keyed(name) + "meta" }
func (k Keyspace) keyedLane(name string) string    { return k.Keyed(name) + "lane" }
func (k Keyspace) KeyedQueue(name, key string) string {
	return k.Keyed(name) + "{" + key + "}"
}
func (k Keyspace) KeyedInProgress(name, poolID string) string {
	return k.Keyed(name) + poolID + ":inprogress"
}

// Scripts of keyed jobs; each file's header documents its KEYS, ARGV and reply.
var (
	// enqueueKeyedScript queues keyed jobs, all or none: lua/enqueue_keyed.lua.
	enqueueKeyedScript = loadScript("enqueue_keyed")
	// keyedControlScript pauses, resumes and sets the overrides of one key: lua/keyed_control.lua.
	keyedControlScript = loadScript("keyed_control")
)

// KeyedGroup is the jobs of one job name and key in an enqueue.
type KeyedGroup struct {
	Name, Key string
	Payloads  []interface{}
}

// keyedEnqueueArgs appends enqueueKeyedScript's arguments (after its key count) for groups.
func (s *Store) keyedEnqueueArgs(args []interface{}, groups []KeyedGroup) []interface{} {
	args = append(args, s.Ks.KnownJobs(), s.Ks.WakeChannel(), s.Ks.P, len(groups))
	for _, g := range groups {
		args = append(args, g.Name, g.Key, len(g.Payloads))
	}
	for _, g := range groups {
		args = append(args, g.Payloads...)
	}
	return args
}

// EnqueueKeyed queues the jobs of groups at once, all or none (see enqueueKeyedScript).
func (s *Store) EnqueueKeyed(ctx context.Context, w ReplicaWait, groups []KeyedGroup) error {
	args := s.keyedEnqueueArgs(nil, groups)
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := enqueueKeyedScript.Do(c, args...)
		return keyedError(err, groups)
	})
}

// keyedError turns the script's refusal of a key past its cap into an error wrapping ErrKeyFull.
func keyedError(err error, groups []KeyedGroup) error {
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
		TruncateKey(grp.Key), grp.Name, limit)
}

// keyedPushArgs are enqueueKeyedScript's arguments for the one job of p.
func (s *Store) keyedPushArgs(p *Push) []interface{} {
	return []interface{}{s.Ks.KnownJobs(), s.Ks.WakeChannel(), s.Ks.P, 1, p.Name, p.Key, 1, p.Payload}
}

// keyedPushError is keyedError for the one job of p.
func keyedPushError(err error, p *Push) error {
	if err == nil {
		return nil
	}
	return keyedError(err, []KeyedGroup{{Name: p.Name, Key: p.Key}})
}

// KeyControl runs keyedControlScript for one key: op is pause, unpause, set (with the four override
// values, "" for none) or clear.
func (s *Store) KeyControl(ctx context.Context, name, key, op string, vals [4]string) error {
	args := []interface{}{s.Ks.keyedConf(name), s.Ks.Keyed(name), key, name, s.Ks.WakeChannel(), op}
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

// KeyState is what Redis holds of one key: its counts and its conf fields.
type KeyState struct {
	Key              string
	Waiting, Running int64
	Conf             [5]string // p, c, r, w, m
}

// keyConfFields are the conf hash fields of a key, in keyState.conf's order.
func keyConfFields(key string) []interface{} {
	return []interface{}{"p:" + key, "c:" + key, "r:" + key, "w:" + key, "m:" + key}
}

// runningByKey returns how many jobs of each key of each of names run: the running hash where
// meta's counts field keeps it, else the keys of the entries in the pools' keyed in-progress lists
// (lib/keyed.lua, keyedCounting). A key of another type reads as empty. Two round trips at most.
func (s *Store) runningByKey(c redis.Conn, names []string) ([]map[string]int64, error) {
	for _, name := range names {
		c.Send("HGET", s.Ks.keyedMeta(name), "counts")
		c.Send("HGETALL", s.Ks.keyedRunning(name))
	}
	c.Send("SMEMBERS", s.Ks.WorkerPools())
	r, err := redis.Values(c.Do(""))
	if err != nil {
		return nil, err
	}
	if len(r) != 2*len(names)+1 {
		return nil, fmt.Errorf("work: running keys: unexpected reply of %d elements", len(r))
	}
	out := make([]map[string]int64, len(names))
	var listed []int // the names whose counts are not kept
	for i := range names {
		out[i] = map[string]int64{}
		if mode, _ := redis.String(r[2*i], nil); mode == "0" {
			listed = append(listed, i)
			continue
		}
		kv, _ := redis.Strings(r[2*i+1], nil)
		for j := 0; j+1 < len(kv); j += 2 {
			// A field that is not a number reads as 0, the others as they are.
			out[i][kv[j]], _ = strconv.ParseInt(kv[j+1], 10, 64)
		}
	}
	pools, _ := redis.Strings(r[len(r)-1], nil)
	if len(listed) == 0 || len(pools) == 0 {
		return out, nil
	}
	for _, i := range listed {
		for _, id := range pools {
			c.Send("LRANGE", s.Ks.KeyedInProgress(names[i], id), 0, -1)
		}
	}
	if r, err = redis.Values(c.Do("")); err != nil {
		return nil, err
	}
	if len(r) != len(listed)*len(pools) {
		return nil, fmt.Errorf("work: running keys: unexpected reply of %d elements", len(r))
	}
	for j, i := range listed {
		for q := range pools {
			entries, _ := redis.Values(r[j*len(pools)+q], nil)
			for _, e := range entries {
				if key := KeyedEntryKey(e); key != nil {
					out[i][string(key)]++
				}
			}
		}
	}
	return out, nil
}

// KeyStates reads the state of the given keys of a name in two round trips (three when its
// running counts are not kept: runningByKey).
func (s *Store) KeyStates(ctx context.Context, name string, keys []string) ([]KeyState, error) {
	out := make([]KeyState, len(keys))
	err := s.do(ctx, func(c redis.Conn) error {
		running, err := s.runningByKey(c, []string{name})
		if err != nil {
			return err
		}
		for _, key := range keys {
			c.Send("LLEN", s.Ks.KeyedQueue(name, key))
			c.Send("HGET", s.Ks.keyedLane(name), key)
			c.Send("HMGET", append([]interface{}{s.Ks.keyedConf(name)}, keyConfFields(key)...)...)
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
			st.Key = key
			// A key of another type reads as empty: the listing goes on.
			st.Waiting, _ = redis.Int64(r[3*i], nil)
			st.Waiting += laneJobs(r[3*i+1])
			st.Running = running[0][key]
			conf, _ := redis.Strings(r[3*i+2], nil)
			copy(st.Conf[:], conf)
		}
		return nil
	})
	return out, err
}

// KeysByBacklog returns keys start..stop (0-based, inclusive) of a name's keys with jobs waiting,
// busiest first, how many keys have jobs waiting, and the keys with jobs running but none waiting
// (a small set: at most the jobs in flight), sorted.
func (s *Store) KeysByBacklog(ctx context.Context, name string, start, stop int64) (keys []string, waitingKeys int64, runningOnly []string, err error) {
	var lane map[string]int64
	err = s.do(ctx, func(c redis.Conn) error {
		if lane, err = s.laneBacklogs(c, name); err != nil {
			return err
		}
		if len(lane) > 0 {
			// Keys in the lane have no waiting entry: every key is read and ranked here.
			keys, waitingKeys, err = s.rankBacklogs(c, name, lane, start, stop)
			if err != nil {
				return err
			}
		} else {
			c.Send("ZREVRANGE", s.Ks.KeyedWaiting(name), start, stop)
			c.Send("ZCARD", s.Ks.KeyedWaiting(name))
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
		}
		counts, err := s.runningByKey(c, []string{name})
		if err != nil {
			return err
		}
		var running []string
		for k, n := range counts[0] {
			if n > 0 && lane[k] == 0 {
				running = append(running, k)
			}
		}
		if len(running) == 0 {
			return nil
		}
		for _, k := range running {
			c.Send("ZSCORE", s.Ks.KeyedWaiting(name), k)
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
	Waiting, WaitingKeys       int64
	Running, RunningKeys       int64
	Largest                    int64
	LargestKey                 string
	PausedKeys, OverriddenKeys int64
}

// KeyedSummaries reads the keyed state of the given job names, two round trips in all, whatever the
// number of keys in the lane.
func (s *Store) KeyedSummaries(ctx context.Context, names []string) ([]keyedSummary, error) {
	out := make([]keyedSummary, len(names))
	err := s.do(ctx, func(c redis.Conn) error {
		running, err := s.runningByKey(c, names)
		if err != nil {
			return err
		}
		for _, name := range names {
			c.Send("HGET", s.Ks.keyedMeta(name), "waiting")
			c.Send("ZCARD", s.Ks.KeyedWaiting(name))
			c.Send("ZREVRANGE", s.Ks.KeyedWaiting(name), 0, 0, "WITHSCORES")
			c.Send("HKEYS", s.Ks.keyedConf(name))
			// A key has one job in the lane at most: the keys there count as many jobs, and one of
			// them stands for the largest backlog when no queue holds more.
			c.Send("HLEN", s.Ks.keyedLane(name))
			c.Send("HSCAN", s.Ks.keyedLane(name), 0, "COUNT", 1)
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		if len(r) != 6*len(names) {
			return fmt.Errorf("work: key stats: unexpected reply of %d elements", len(r))
		}
		for i := range names {
			o := &out[i]
			// Keys of another type read as empty.
			o.Waiting, _ = redis.Int64(r[6*i], nil)
			o.WaitingKeys, _ = redis.Int64(r[6*i+1], nil)
			for _, v := range running[i] {
				if v > 0 {
					o.RunningKeys++
					o.Running += v
				}
			}
			if top, _ := redis.Strings(r[6*i+2], nil); len(top) == 2 {
				o.LargestKey = top[0]
				o.Largest, _ = strconv.ParseInt(top[1], 10, 64)
			}
			inLane, _ := redis.Int64(r[6*i+4], nil)
			o.WaitingKeys += inLane
			if o.Largest == 0 && inLane > 0 {
				// One step of HSCAN may come back empty: the backlog is known all the same.
				o.Largest = 1
				if sc, _ := redis.Values(r[6*i+5], nil); len(sc) == 2 {
					if kv, _ := redis.Strings(sc[1], nil); len(kv) >= 2 {
						o.LargestKey = kv[0]
					}
				}
			}
			fields, _ := redis.Strings(r[6*i+3], nil)
			overridden := map[string]bool{}
			for _, f := range fields {
				if strings.HasPrefix(f, "p:") {
					o.PausedKeys++
				} else if len(f) > 2 && f[1] == ':' {
					overridden[f[2:]] = true
				}
			}
			o.OverriddenKeys = int64(len(overridden))
		}
		return nil
	})
	return out, err
}

// KeyedNames returns the known job names that have keyed state (a meta hash): those with keyed jobs
// now or before.
func (s *Store) KeyedNames(ctx context.Context) ([]string, error) {
	names, err := s.KnownJobNames(ctx)
	if err != nil || len(names) == 0 {
		return nil, err
	}
	var out []string
	err = s.do(ctx, func(c redis.Conn) error {
		for _, name := range names {
			c.Send("EXISTS", s.Ks.keyedMeta(name))
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

// KeyDefaults are a job name's per-key settings, as the pool's JobOptions give them.
type KeyDefaults struct {
	Limit       uint      // KeyConcurrency; 0: none
	Rate        RateLimit // KeyRateLimit
	HoldOnRetry bool      // KeyRetryInOrder
}

// NewKeyedQueueArgs encodes the keyed jobs of a name of poolID for exchanges: a group of kind 'k',
// whose keys are the name's ready keys and the pool's keyed in-progress list in
// place of a queue's jobs list and in-progress list, then the name's own paused flag and limits
// (which hold over its keyed jobs too), and whose fields add the keyed prefix and key defaults.
func (s *Store) NewKeyedQueueArgs(name, poolID string, limited bool, rl RateLimit, d KeyDefaults) *QueueArgs {
	q := s.NewQueueArgs(name, poolID, limited, rl)
	q.keyed = true
	q.Keys[0], q.Keys[1] = s.Ks.KeyedReady(name), s.Ks.KeyedInProgress(name, poolID)
	hold := "0"
	if d.HoldOnRetry {
		hold = "1"
	}
	q.extra = []interface{}{s.Ks.Keyed(name), d.Limit, d.Rate.Jobs, d.Rate.PeriodMs, hold, s.Ks.WorkerPools()}
	return q
}

// KeyedQueueSuffix makes the id of a name's keyed jobs among a pool's queues (keyedQueueID); no pool
// serves both a name and that name followed by it.
const KeyedQueueSuffix = "\x00keyed"

func KeyedQueueID(name string) string { return name + KeyedQueueSuffix }

// TruncateKey shortens a key for an error message.
func TruncateKey(key string) string {
	if len(key) <= 64 {
		return key
	}
	return key[:64] + "..."
}

// KeyedEntryKey returns the key of a keyed job's in-progress entry, which is the key whose queue the
// job was fetched from, a line feed, then the job's payload: nil when entry holds no line feed.
func KeyedEntryKey(entry interface{}) []byte {
	key, _ := SplitKeyedEntry(entry)
	return key
}

// SplitKeyedEntry splits a keyed job's in-progress entry (see KeyedEntryKey) into its key and the
// job's payload; an entry without a line feed is all payload.
func SplitKeyedEntry(entry interface{}) (key, payload []byte) {
	b, _ := entry.([]byte)
	if i := bytes.IndexByte(b, '\n'); i > 0 {
		return b[:i], b[i+1:]
	}
	return nil, b
}

// laneJobs reads a key's lane field (the score of its job in the lane, lib/keyed.lua): its jobs in
// the lane, 1 or 0.
func laneJobs(v interface{}) int64 {
	if _, ok := v.([]byte); ok {
		return 1
	}
	return 0
}

// laneBacklogs reads a name's lane hash with HSCAN, rdb.ChunkSize fields a step: each key with a job
// in the lane, and 1 for it. A hash of another type reads as empty.
func (s *Store) laneBacklogs(c redis.Conn, name string) (map[string]int64, error) {
	out := map[string]int64{}
	cursor := "0"
	for {
		r, err := redis.Values(c.Do("HSCAN", s.Ks.keyedLane(name), cursor, "COUNT", ChunkSize))
		if err != nil {
			if errors.Is(wrongType(err), ErrWrongType) {
				return map[string]int64{}, nil
			}
			return nil, err
		}
		if len(r) != 2 {
			return nil, fmt.Errorf("work: lane: unexpected reply of %d elements", len(r))
		}
		cursor, _ = redis.String(r[0], nil)
		kv, _ := redis.Values(r[1], nil)
		for i := 0; i+1 < len(kv); i += 2 {
			key, _ := redis.String(kv[i], nil)
			out[key] = laneJobs(kv[i+1])
		}
		if cursor == "0" {
			return out, nil
		}
	}
}

// rankBacklogs ranks a name's keys by the jobs they have waiting, queue and lane together, busiest
// first (ties in reverse key order, as ZREVRANGE gives them), and returns ranks start..stop
// (inclusive; negative counts from the end, as in ZREVRANGE) and the number of keys ranked.
func (s *Store) rankBacklogs(c redis.Conn, name string, lane map[string]int64, start, stop int64) ([]string, int64, error) {
	all := make(map[string]int64, len(lane))
	for k, n := range lane {
		all[k] = n
	}
	kv, err := redis.Strings(c.Do("ZRANGE", s.Ks.KeyedWaiting(name), 0, -1, "WITHSCORES"))
	if err != nil && !errors.Is(wrongType(err), ErrWrongType) {
		return nil, 0, err
	}
	for i := 0; i+1 < len(kv); i += 2 {
		n, _ := strconv.ParseFloat(kv[i+1], 64)
		all[kv[i]] += int64(n)
	}
	keys := make([]string, 0, len(all))
	for k := range all {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if all[keys[i]] != all[keys[j]] {
			return all[keys[i]] > all[keys[j]]
		}
		return keys[i] > keys[j]
	})
	total := int64(len(keys))
	if start < 0 {
		start += total
	}
	if stop < 0 {
		stop += total
	}
	start = max(start, 0)
	stop = min(stop, total-1)
	if start > stop {
		return []string{}, total, nil
	}
	return keys[start : stop+1], total, nil
}
