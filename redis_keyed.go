package work

// The Redis side of keyed jobs (keyed.go): their keys, and the store methods that move them. The
// scripts are lua/enqueue_keyed.lua and lua/keyed_*.lua, on the helpers of lua/lib/keyed.lua, whose
// header describes the state.

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/gomodule/redigo/redis"
)

// Keys of keyed jobs: every one of a job name's starts with <ns>:keyed:<name>:, and a key's own ones
// hold it between braces (which keys may not contain), so that no two names or keys share one.
func (k keyspace) keyedPrefix() string             { return k.p + "keyed:" }
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
func (k keyspace) keyedRate(name, key string) string { return k.keyedQueue(name, key) + ":rate" }
func (k keyspace) keyedInProgress(name, poolID string) string {
	return k.keyed(name) + poolID + ":inprogress"
}

// Scripts of keyed jobs; each file's header documents its KEYS, ARGV and reply.
var (
	// enqueueKeyedScript queues keyed jobs, all or none: lua/enqueue_keyed.lua.
	enqueueKeyedScript = loadScript("enqueue_keyed")
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
