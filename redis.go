package work

// This file and its companions are the one place that knows Redis: the key names of the documented
// layout, the Lua scripts that move a job from one state to the next (lua/, one file per script,
// loaded by redis_scripts.go), and the store type whose methods the rest of the package calls
// (redis_workflow.go holds those of batches, dependencies and job records, redis_admin.go those of
// Client; backend.go the connection they all go through). No other file builds a key or sends a
// command.
//
// Every script touches only keys of one namespace, so a namespace written with a hash tag ("{app}")
// keeps every script on one Redis Cluster slot. Scripts never re-encode job JSON: payload bytes are
// copied as opaque strings, and any new payload (a retry, a dead-letter record) is encoded in Go.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// redisNamespacePrefix returns the key prefix of a namespace: the namespace plus ":" unless it already
// ends in ":"; the empty namespace has no prefix.
func redisNamespacePrefix(namespace string) string {
	if namespace != "" && !strings.HasSuffix(namespace, ":") {
		return namespace + ":"
	}
	return namespace
}

// keyspace builds the key names of one namespace (compat layout, byte for byte).
type keyspace struct{ p string }

func newKeyspace(namespace string) keyspace { return keyspace{p: redisNamespacePrefix(namespace)} }

func (k keyspace) jobsPrefix() string        { return k.p + "jobs:" }
func (k keyspace) jobs(name string) string   { return k.p + "jobs:" + name }
func (k keyspace) paused(name string) string { return k.jobs(name) + ":paused" }
func (k keyspace) lock(name string) string   { return k.jobs(name) + ":lock" }
func (k keyspace) lockInfo(name string) string {
	return k.jobs(name) + ":lock_info"
}
func (k keyspace) maxConcurrency(name string) string { return k.jobs(name) + ":max_concurrency" }
func (k keyspace) rate(name string) string           { return k.jobs(name) + ":rate" }
func (k keyspace) deadTrimmed() string               { return k.p + "dead_trimmed" }
func (k keyspace) inProgress(name, poolID string) string {
	return k.jobs(name) + ":" + poolID + ":inprogress"
}
func (k keyspace) scheduled() string               { return k.p + "scheduled" }
func (k keyspace) retry() string                   { return k.p + "retry" }
func (k keyspace) dead() string                    { return k.p + "dead" }
func (k keyspace) knownJobs() string               { return k.p + "known_jobs" }
func (k keyspace) workerPools() string             { return k.p + "worker_pools" }
func (k keyspace) heartbeat(poolID string) string  { return k.p + "worker_pools:" + poolID }
func (k keyspace) worker(workerID string) string   { return k.p + "worker:" + workerID }
func (k keyspace) lastPeriodicEnqueue() string     { return k.p + "last_periodic_enqueue" }
func (k keyspace) wakeChannel() string             { return k.p + "wake" }
func (k keyspace) cancelChannel() string           { return k.p + "cancel" }
func (k keyspace) dueChannel() string              { return k.p + "due" }
func (k keyspace) uniquePrefix(name string) string { return k.p + "unique:" + name + ":" }

// Workflow state (batch.go, chain.go): a batch's hash and the list of jobs waiting for it, the index
// of batches, and a job's record and the list of jobs waiting for it.
func (k keyspace) batch(id string) string     { return k.p + "batch:" + id }
func (k keyspace) batches() string            { return k.p + "batches" }
func (k keyspace) batchesExpiry() string      { return k.p + "batches_expiry" }
func (k keyspace) jobRecord(id string) string { return k.p + "job:" + id }

// stats is the hash of a job name's processed and failed counts on one UTC day (days since the
// epoch): fields "p:<epoch minute>" and "f:<epoch minute>".
func (k keyspace) stats(name string, day int64) string {
	return k.p + "stats:" + name + ":" + strconv.FormatInt(day, 10)
}

// statsTTLSeconds bounds how long per-minute counts are kept.
const statsTTLSeconds = 8 * 86400

// unique returns the unique-lock key of a job name and its args (or key map): the prefix, then the
// output of json.Encoder (sorted keys, HTML-escaped, trailing newline), nothing at all for nil args.
func (k keyspace) unique(name string, args map[string]interface{}) (string, error) {
	var buf bytes.Buffer
	buf.WriteString(k.uniquePrefix(name))
	if args != nil {
		if err := json.NewEncoder(&buf).Encode(args); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}

// uniqueTTLSeconds is how long a unique lock lives when no worker picks its job up.
const uniqueTTLSeconds = 86400

// store is the package's Redis layer: one method per state transition or read, each one round trip
// unless it says otherwise.
type store struct {
	backend Backend
	ks      keyspace
	errs    atomic.Uint64 // failed calls: one may have been applied with its reply lost

	// boxed holds script arguments used on every exchange, converted to interface{} once.
	boxed struct{ retry, dead, scheduled, wake interface{} }
	// sweepFence is how long after the server's clock was read a sweep may still run (see sweep).
	sweepFence time.Duration
}

func newStore(namespace string, b Backend) *store {
	s := &store{backend: b, ks: newKeyspace(namespace), sweepFence: 250 * time.Millisecond}
	s.boxed.retry, s.boxed.dead, s.boxed.scheduled = s.ks.retry(), s.ks.dead(), s.ks.scheduled()
	s.boxed.wake = s.ks.wakeChannel()
	return s
}

// replicaWait asks a write to wait until that many replicas acknowledged it (Redis WAIT); zero: no wait.
type replicaWait struct {
	replicas  int
	timeoutMs int64
}

// ErrNotReplicated is returned by an enqueue made with Enqueuer.WaitReplicas when fewer replicas than
// asked acknowledged the write within Enqueuer.WaitTimeout. The job is on the primary, and it may or
// may not survive a failover that happens before it reaches a replica.
var ErrNotReplicated = errors.New("work: the job was not acknowledged by enough replicas")

// doWrite runs a write like do, then, with w set, waits on the same connection for the replicas.
func (s *store) doWrite(ctx context.Context, w replicaWait, fn func(c redis.Conn) error) error {
	return s.do(ctx, func(c redis.Conn) error {
		if err := fn(c); err != nil {
			return err
		}
		if w.replicas <= 0 {
			return nil
		}
		n, err := redis.Int(c.Do("WAIT", w.replicas, w.timeoutMs))
		if err != nil {
			return err
		}
		if n < w.replicas {
			return fmt.Errorf("%w: %d of %d", ErrNotReplicated, n, w.replicas)
		}
		return nil
	})
}

// do runs fn on a connection and closes it.
func (s *store) do(ctx context.Context, fn func(c redis.Conn) error) error {
	c, err := s.backend.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	err = fn(c)
	if err != nil {
		s.errs.Add(1)
	}
	return err
}

// push is one job of an enqueueMany call: its queue, payload and what to send with it, then the
// outcome (the error of this job's push and, for an unkeyed job, the queue's length after it).
type push struct {
	name     string
	key      string // a keyed job's key: the push runs enqueueKeyedScript
	payload  []byte
	addKnown bool // register the job name in known_jobs too
	publish  bool // send the wake-up with the push (the caller expects the queue to be empty, or nearly)

	n   int64
	err error
}

// enqueueMany pushes payloads onto their queues in one pipelined round trip, registering job names
// and waking idle pools: a push that finds its queue empty and did not send its wake-up along sends
// it in a second round trip, shared by all such pushes. Each push gets its own outcome; an error of
// the connection (or of the replicas' wait) is every push's.
func (s *store) enqueueMany(ctx context.Context, w replicaWait, pushes []*push) {
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		for _, p := range pushes {
			if p.key != "" {
				// The script registers the name and wakes pools itself.
				enqueueKeyedScript.SendHash(c, s.keyedPushArgs(p)...)
				continue
			}
			if p.addKnown {
				c.Send("SADD", s.ks.knownJobs(), p.name)
			}
			c.Send("LPUSH", s.ks.jobs(p.name), p.payload)
			if p.publish {
				c.Send("PUBLISH", s.ks.wakeChannel(), p.name)
			}
		}
		if err := c.Flush(); err != nil {
			return err
		}
		if len(pushes) > 1 {
			// Calls come concurrently: while Redis answers, let the runnable goroutines (callers
			// making their next jobs) run, so that the reply is more often waiting when this one
			// reads it, which saves parking and waking for it.
			runtime.Gosched()
		}
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		at, late := 0, 0
		var noScript []*push
		for _, p := range pushes {
			if p.addKnown && p.key == "" {
				at++
			}
			if at >= len(r) {
				return fmt.Errorf("work: enqueue: unexpected reply of %d elements", len(r))
			}
			p.n, p.err = redis.Int64(r[at], nil)
			at++
			if p.key != "" {
				if re, ok := p.err.(redis.Error); ok && strings.HasPrefix(string(re), "NOSCRIPT") {
					noScript = append(noScript, p)
				} else {
					p.err = keyedPushError(p.err, p)
				}
				continue
			}
			if p.publish {
				at++
			} else if p.err == nil && p.n == 1 {
				c.Send("PUBLISH", s.ks.wakeChannel(), p.name)
				late++
			}
		}
		if late > 0 {
			// The jobs are queued whatever this reply says: without the wake-up, a pool's next look
			// finds them.
			_, _ = c.Do("")
		}
		for _, p := range noScript {
			// The server did not know the script yet (the first keyed push since it started): Do
			// loads it.
			p.n, p.err = redis.Int64(enqueueKeyedScript.Do(c, s.keyedPushArgs(p)...))
			p.err = keyedPushError(p.err, p)
		}
		return nil
	})
	if err != nil {
		for _, p := range pushes {
			if p.err == nil {
				p.err = err
			}
		}
	}
}

// enqueueBatch pushes payloads onto their queues atomically, in one round trip: every queue key is
// checked first, so the batch is either queued whole or refused; one LPUSH per job name, in the
// given order, and a wake-up per job name.
func (s *store) enqueueBatch(ctx context.Context, w replicaWait, names []string, payloads map[string][]interface{}, addKnown []string) error {
	args := make([]interface{}, 0, 3+2*len(names))
	args = append(args, 1+len(names), s.ks.knownJobs())
	for _, name := range names {
		args = append(args, s.ks.jobs(name))
	}
	args = append(args, s.ks.wakeChannel())
	for _, name := range names {
		args = append(args, name, len(payloads[name]))
	}
	for _, name := range names {
		args = append(args, payloads[name]...)
	}
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		_, err := enqueueBatchScript.Do(c, args...)
		return err
	})
}

// schedule adds a payload to the scheduled set, and tells idle pools when it is due (they would
// otherwise learn it at their next look, seconds later).
func (s *store) schedule(ctx context.Context, w replicaWait, name string, runAt int64, payload []byte, addKnown bool) error {
	return s.doWrite(ctx, w, func(c redis.Conn) error {
		if addKnown {
			c.Send("SADD", s.ks.knownJobs(), name)
		}
		c.Send("ZADD", s.ks.scheduled(), runAt, payload)
		c.Send("PUBLISH", s.ks.dueChannel(), runAt)
		r, err := redis.Values(c.Do(""))
		if err != nil {
			return err
		}
		for _, v := range r {
			if e, ok := v.(redis.Error); ok {
				return e
			}
		}
		return nil
	})
}

// enqueueUnique enqueues (runAt 0) or schedules a unique job. It reports whether the job was added.
func (s *store) enqueueUnique(ctx context.Context, w replicaWait, name, key, uniqueKey string, payload, lockValue []byte, runAt int64, ttl int64) (bool, error) {
	dest, score := s.ks.jobs(name), ""
	if key != "" {
		dest = s.ks.keyedQueue(name, key)
	}
	if runAt != 0 {
		dest, score = s.ks.scheduled(), strconv.FormatInt(runAt, 10)
	}
	var res string
	err := s.doWrite(ctx, w, func(c redis.Conn) error {
		var err error
		res, err = redis.String(enqueueUniqueScript.Do(c, dest, uniqueKey, s.ks.knownJobs(),
			payload, lockValue, score, name, s.ks.wakeChannel(), ttl, s.ks.dueChannel(), key, s.ks.keyed(name)))
		return keyedError(err, []keyedGroup{{name: name, key: key}})
	})
	return res == "ok", err
}

// rateLimit is a queue's limit on jobs started per period, across all pools.
type rateLimit struct {
	jobs     uint
	periodMs int64
}

// queueArgs are one of a pool's queues as exchangeScript takes it: its keys, name and settings,
// boxed once per pool run so that a round trip allocates nothing per queue.
type queueArgs struct {
	keyed   bool          // the group is a name's keyed jobs (kind 'k' in exchangeScript)
	extra   []interface{} // the fields of a keyed group after the rate limit
	name    string
	keys    [7]interface{} // jobs, in-progress, paused, lock, lock_info, max_concurrency, rate
	nameArg interface{}
	limited interface{} // "1" when the pool counts the queue against its MaxConcurrency
	rate    [2]interface{}

	statsDay int64  // the day statsKey is for
	statsKey string // the stats hash of statsDay
}

// newQueueArgs encodes a queue of poolID for exchanges.
func (s *store) newQueueArgs(name, poolID string, limited bool, rl rateLimit) *queueArgs {
	q := &queueArgs{name: name, nameArg: name, limited: "0", rate: [2]interface{}{0, 0}}
	q.keys = [7]interface{}{s.ks.jobs(name), s.ks.inProgress(name, poolID), s.ks.paused(name),
		s.ks.lock(name), s.ks.lockInfo(name), s.ks.maxConcurrency(name), s.ks.rate(name)}
	if limited {
		q.limited = "1"
	}
	if rl.jobs > 0 && rl.periodMs > 0 {
		q.rate = [2]interface{}{rl.jobs, rl.periodMs}
	}
	return q
}

// opKind is what a finishOp does with its job.
type opKind uint8

const (
	opAck     opKind = iota // done: removed
	opDrop                  // failed for good with SkipDead: removed
	opRetry                 // to the retry set
	opDead                  // to the dead set
	opSnooze                // to the scheduled set
	opRequeue               // back to the fetch end of its queue, nothing counted
)

// plainAck reports whether o is an acknowledgement with nothing else to update: those go in groups.
func (o *finishOp) plainAck() bool { return (o.kind == opAck || o.kind == opDrop) && o.ext == nil }

// opCodes are exchangeScript's op codes, by opKind.
var opCodes = [...]interface{}{opAck: "A", opDrop: "A", opRetry: "R", opDead: "D", opSnooze: "S", opRequeue: "Q"}

// finishOp is one job's end of hold.
type finishOp struct {
	kind    opKind
	q       *queueArgs
	job     *Job       // the fetched job (its in-progress payload is job.rawArg)
	score   int64      // retry, dead, snooze: the member's score
	payload []byte     // retry, dead, snooze: the member
	ext     *finishExt // workflow state to update with it; nil for most jobs
}

// finishExt is what a job's end changes besides its queue: its batch, its record, the jobs waiting
// for it and its unique lock (exchangeScript's X op).
type finishExt struct {
	id        string
	batch     string
	keep      int64 // seconds to keep the job's record; 0: none unless tracked
	tracked   bool
	uniqueKey string // deleted when the job ends for good ("" none)
	err       string
	result    []byte
	attempts  int64
}

// xCodes are exchangeScript's kinds for its X op, by opKind.
var xCodes = [...]interface{}{opAck: "A", opDrop: "F", opRetry: "R", opDead: "D", opSnooze: "S", opRequeue: "Q"}

// statsAdd is a count to add to a per-minute stats field.
type statsAdd struct {
	key   string
	field string
	count int64
}

// fetchShare asks an exchange for share jobs from a queue.
type fetchShare struct {
	q     *queueArgs
	share int
}

// exchange is one exchangeScript call: built by the pool's loop, which reuses it from call to call.
type exchange struct {
	fetch []fetchShare // candidates, in the order to try them
	ops   []finishOp
	stats []statsAdd

	groups  []*queueArgs
	kindBuf []byte
	args    []interface{}
	acks    [][]int // per group: the indexes in ops of its acks
	order   []int   // the index in ops of each outcome of the reply, in order

	// The reply.
	done   string        // per op of ops, see exchangeScript
	status []interface{} // per group
	counts []interface{} // per group
	jobs   []interface{} // payloads ([]byte), grouped by group in order
}

func (x *exchange) reset() {
	x.fetch, x.ops, x.stats, x.groups = x.fetch[:0], x.ops[:0], x.stats[:0], x.groups[:0]
	x.done, x.status, x.counts, x.jobs = "", nil, nil, nil
}

// group returns q's group index (1-based), adding it (with no share) if it is not in yet. A queue
// is one group whatever args stand for it: a job name registered again on a started pool has new
// args, while the outcomes of jobs fetched before carry the old ones.
func (x *exchange) group(q *queueArgs) int {
	for i, g := range x.groups {
		if g == q || g.name == q.name && g.keyed == q.keyed {
			return i + 1
		}
	}
	x.groups = append(x.groups, q)
	return len(x.groups)
}

// kinds returns exchangeScript's kinds argument for x's groups: "" when every group is a queue, else
// a character per group.
func (x *exchange) kinds() interface{} {
	keyed := false
	for _, q := range x.groups {
		keyed = keyed || q.keyed
	}
	if !keyed {
		return boxedNoKinds
	}
	b := x.kindBuf[:0]
	for _, q := range x.groups {
		if q.keyed {
			b = append(b, 'k')
		} else {
			b = append(b, 'q')
		}
	}
	x.kindBuf = b
	return b
}

// boxedNoKinds is the kinds of an exchange whose groups are all queues.
var boxedNoKinds interface{} = ""

// boxedNoShare marks a queue that takes part in an exchange for its outcomes only.
var boxedNoShare interface{} = -1

// runExchange runs x: it records x.ops and x.stats and fetches what x.fetch asks, filling x's reply.
func (s *store) runExchange(ctx context.Context, poolID interface{}, x *exchange) error {
	for _, f := range x.fetch {
		x.group(f.q)
	}
	cands := len(x.groups)
	// Acks go first, grouped by queue; the other ops after them in their order. x.order records the
	// op of each outcome the reply reports, in that order.
	x.order = x.order[:0]
	for i := range x.ops {
		o := &x.ops[i]
		g := x.group(o.q)
		for len(x.acks) < g {
			x.acks = append(x.acks, nil)
		}
		if o.plainAck() {
			x.acks[g-1] = append(x.acks[g-1], i)
		}
	}
	args := x.args[:0]
	args = append(args, 3+7*len(x.groups), s.boxed.retry, s.boxed.dead, s.boxed.scheduled)
	for _, q := range x.groups {
		args = append(args, q.keys[:]...)
	}
	args = append(args, poolID, s.boxed.wake, len(x.groups), x.kinds())
	for i, q := range x.groups {
		var share interface{} = boxedNoShare
		if i < cands {
			share = x.fetch[i].share
		}
		args = append(args, q.nameArg, q.limited, share, q.rate[0], q.rate[1])
		args = append(args, q.extra...)
	}
	for g, acks := range x.acks {
		if len(acks) == 0 {
			continue
		}
		if x.groups[g].keyed {
			args = x.keyedAcks(args, g, acks)
		} else {
			args = append(args, "A", g+1, len(acks))
			for _, i := range acks {
				args = append(args, x.ops[i].job.rawArg)
			}
		}
		x.order = append(x.order, acks...)
		x.acks[g] = acks[:0]
	}
	for i := range x.ops {
		o := &x.ops[i]
		if !o.plainAck() {
			x.order = append(x.order, i)
		}
		switch {
		case o.plainAck():
		case o.ext != nil:
			e := o.ext
			tracked := "0"
			if e.tracked {
				tracked = "1"
			}
			args = append(args, "X", x.group(o.q), xCodes[o.kind], o.job.rawArg, o.score, o.payload, s.ks.p,
				e.id, e.batch, e.keep, tracked, e.uniqueKey, e.err, e.result, e.attempts)
		case o.kind == opRequeue:
			args = append(args, "Q", x.group(o.q), o.job.rawArg)
		default:
			args = append(args, opCodes[o.kind], x.group(o.q), o.job.rawArg, o.score, o.payload)
		}
	}
	for i := 0; i < len(x.stats); {
		j := i
		for j < len(x.stats) && x.stats[j].key == x.stats[i].key {
			j++
		}
		args = append(args, "T", x.stats[i].key, statsTTLSeconds, j-i)
		for _, st := range x.stats[i:j] {
			args = append(args, st.field, st.count)
		}
		i = j
	}
	x.args = args[:0]
	defer clear(args) // let the payloads go
	return s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(exchangeScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) != 4 {
			return fmt.Errorf("work: exchange: unexpected reply of %d elements", len(r))
		}
		done, _ := r[0].([]byte)
		x.done = string(done)
		x.status, _ = r[1].([]interface{})
		x.counts, _ = r[2].([]interface{})
		x.jobs, _ = r[3].([]interface{})
		if len(x.status) != len(x.groups) || len(x.counts) != len(x.groups) {
			return fmt.Errorf("work: exchange: reply for %d queues, asked %d", len(x.status), len(x.groups))
		}
		return nil
	})
}

// sweep puts back the in-progress entries this pool does not hold (see sweepScript); held maps the
// id of each of its queues (a job name, or keyedQueueID of it) to the entries the pool holds in the
// queue's in-progress list.
func (s *store) sweep(ctx context.Context, poolID string, names []string, held map[string][][]byte) (int64, error) {
	args := make([]interface{}, 0, 1+8*len(names)+2+6*len(names))
	args = append(args, 8*len(names))
	for _, name := range names {
		args = append(args, s.ks.inProgress(name, poolID), s.ks.jobs(name), s.ks.lock(name), s.ks.lockInfo(name))
		args = append(args, s.ks.keyedInProgress(name, poolID), s.ks.keyedReady(name), s.ks.lock(name), s.ks.lockInfo(name))
	}
	args = append(args, poolID, s.ks.wakeChannel(), 0)
	deadlineAt := len(args) - 1
	for _, name := range names {
		args = append(args, name, "", len(held[name]))
		for _, p := range held[name] {
			args = append(args, p)
		}
		id := keyedQueueID(name)
		args = append(args, name, s.ks.keyed(name), len(held[id]))
		for _, p := range held[id] {
			args = append(args, p)
		}
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		// The held set is the pool's now. A sweep that Redis ran late (its call timed out while
		// Redis was frozen, and the pool fetched again on another connection meanwhile) would put
		// back jobs the pool runs, so the script runs only within sweepFence of the server's clock
		// read just before, on the same connection; a sweep skipped is made again later.
		t, err := redis.Int64s(c.Do("TIME"))
		if err != nil {
			return err
		}
		if len(t) != 2 {
			return fmt.Errorf("work: TIME answered %v", t)
		}
		args[deadlineAt] = t[0]*1000 + t[1]/1000 + s.sweepFence.Milliseconds()
		n, err = redis.Int64(sweepScript.Do(c, args...))
		return err
	})
	return max(n, 0), err
}

// claimUnique releases unique locks (see claimUniqueScript).
func (s *store) claimUnique(ctx context.Context, keys []string, keep bool) ([][]byte, error) {
	args := make([]interface{}, 0, len(keys)+2)
	args = append(args, len(keys))
	for _, k := range keys {
		args = append(args, k)
	}
	if keep {
		args = append(args, "keep")
	}
	var vals [][]byte
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		vals, err = redis.ByteSlices(claimUniqueScript.Do(c, args...))
		return err
	})
	return vals, err
}

// poolHeartbeat is what a pool publishes about itself (compat: the worker_pools:<id> hash).
type poolHeartbeat struct {
	poolID         string
	startedAt      int64
	jobNames       []string // sorted
	maxConcurrency []uint   // of each job name
	concurrency    uint
	workerIDs      []string // sorted
	host           string
	pid            int
	periodicJobs   string // JSON list of {job_name, spec}; "" when none
}

// stalePool is a pool whose heartbeat is older than the dead-after limit.
type stalePool struct {
	id       string
	jobNames []string // nil when its heartbeat hash is gone
}

// heartbeatResult is what a heartbeat learnt about the namespace's pools and waiting jobs.
type heartbeatResult struct {
	now    int64       // the server's clock, epoch seconds
	lateAt int64       // the earliest heartbeat of a late (not yet dead) pool; 0: none
	stale  []stalePool // pools past the dead-after limit
	scan   scanResult
}

// heartbeat writes this pool's heartbeat, squares the concurrency counters of the job names at the
// given indexes of hb.jobNames (every lock recomputed with fullReconcile), reports on the other
// pools and looks for waiting jobs.
func (s *store) heartbeat(ctx context.Context, hb *poolHeartbeat, reconcile []int, deadAfterSeconds, lateAfterSeconds int64, fullReconcile bool) (heartbeatResult, error) {
	scanEnd := 2 + scanSets + scanKeysPerName*len(hb.jobNames)
	args := make([]interface{}, 0, 1+scanEnd+5*len(reconcile)+14+len(reconcile))
	args = append(args, scanEnd+5*len(reconcile), s.ks.workerPools(), s.ks.heartbeat(hb.poolID))
	args = s.scanArgs(args, hb.jobNames)
	for _, i := range reconcile {
		name := hb.jobNames[i]
		args = append(args, s.ks.inProgress(name, hb.poolID), s.ks.keyedInProgress(name, hb.poolID), s.ks.lock(name),
			s.ks.lockInfo(name), s.ks.maxConcurrency(name))
	}
	args = append(args, hb.poolID, hb.startedAt, strings.Join(hb.jobNames, ","), hb.concurrency,
		strings.Join(hb.workerIDs, ","), hb.host, hb.pid, deadAfterSeconds, s.ks.heartbeat(""), lateAfterSeconds, fullReconcile,
		s.ks.jobsPrefix(), scanEnd, hb.periodicJobs)
	for _, i := range reconcile {
		args = append(args, hb.maxConcurrency[i])
	}
	var res heartbeatResult
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(heartbeatScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) < 3 || len(r)%2 != 1 {
			return fmt.Errorf("work: heartbeat: unexpected reply of %d elements", len(r))
		}
		if res.now, err = redis.Int64(r[0], nil); err != nil {
			return err
		}
		if res.lateAt, err = redis.Int64(r[1], nil); err != nil {
			return err
		}
		if res.scan, err = parseScan(r[2], hb.jobNames); err != nil {
			return err
		}
		for i := 3; i+1 < len(r); i += 2 {
			id, _ := redis.String(r[i], nil)
			names, _ := redis.String(r[i+1], nil)
			sp := stalePool{id: id}
			if names != "" {
				sp.jobNames = strings.Split(names, ",")
			}
			res.stale = append(res.stale, sp)
		}
		return nil
	})
	return res, err
}

// reap requeues a dead pool's in-progress jobs of the given job names. It returns the number of jobs
// requeued, or -1 when the pool is alive after all.
func (s *store) reap(ctx context.Context, poolID string, jobNames []string, deadAfterSeconds int64) (int64, error) {
	args := make([]interface{}, 0, 3+5*len(jobNames)+4+2*len(jobNames))
	args = append(args, 2+5*len(jobNames), s.ks.workerPools(), s.ks.heartbeat(poolID))
	for _, name := range jobNames {
		args = append(args, s.ks.jobs(name), s.ks.inProgress(name, poolID), s.ks.lock(name), s.ks.lockInfo(name),
			s.ks.keyedInProgress(name, poolID))
	}
	args = append(args, poolID, deadAfterSeconds, s.ks.wakeChannel())
	for _, name := range jobNames {
		args = append(args, name, s.ks.keyed(name))
	}
	args = append(args, s.ks.p)
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(reapScript.Do(c, args...))
		return err
	})
	return n, err
}

// knownJobNames returns the members of known_jobs.
func (s *store) knownJobNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		names, err = redis.Strings(c.Do("SMEMBERS", s.ks.knownJobs()))
		return err
	})
	return names, err
}

// due lists up to limit due members of each of the given sets, with the server's clock, and the
// milliseconds until the next member after those is due (-1: none).
func (s *store) due(ctx context.Context, sets []string, limit int) (int64, [][][]byte, int64, error) {
	args := make([]interface{}, 0, 2+len(sets))
	args = append(args, len(sets))
	for _, k := range sets {
		args = append(args, k)
	}
	args = append(args, limit)
	var now, nextIn int64
	var members [][][]byte
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(dueScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) != len(sets)+2 {
			return fmt.Errorf("work: due: unexpected reply of %d elements", len(r))
		}
		if now, err = redis.Int64(r[0], nil); err != nil {
			return err
		}
		if nextIn, err = redis.Int64(r[len(r)-1], nil); err != nil {
			return err
		}
		for _, v := range r[1 : len(r)-1] {
			m, err := redis.ByteSlices(v, nil)
			if err != nil {
				return err
			}
			members = append(members, m)
		}
		return nil
	})
	return now, members, nextIn, err
}

// enqueueDue moves set members onto the queues of the given names (see enqueueDueScript).
// keys[i] is the key of member i ("" for none), holds[i] whether it holds its key's slot.
func (s *store) enqueueDue(ctx context.Context, set string, members [][]byte, names, keys []string, holds []bool) (int64, error) {
	args := make([]interface{}, 0, 3+5*len(members))
	args = append(args, 1+len(members), set)
	for i, name := range names {
		if keys[i] != "" {
			args = append(args, s.ks.keyedQueue(name, keys[i]))
		} else {
			args = append(args, s.ks.jobs(name))
		}
	}
	args = append(args, s.ks.wakeChannel(), s.ks.p)
	for i, m := range members {
		hold := "0"
		if holds[i] && keys[i] != "" {
			hold = "1"
		}
		args = append(args, m, names[i], keys[i], hold)
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(enqueueDueScript.Do(c, args...))
		return err
	})
	return n, err
}

// zsetMove moves one member between sorted sets under a new payload (see zsetMoveScript).
func (s *store) zsetMove(ctx context.Context, from, to string, member []byte, score int64, payload []byte) (bool, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(zsetMoveScript.Do(c, from, to, member, score, payload))
		return err
	})
	return n == 1, err
}

// schedulePeriodic adds periodic jobs (see schedulePeriodicScript).
func (s *store) schedulePeriodic(ctx context.Context, scores []int64, payloads [][]byte) (int64, error) {
	args := make([]interface{}, 0, 2+2*len(scores))
	args = append(args, s.ks.scheduled(), s.ks.lastPeriodicEnqueue())
	for i := range scores {
		args = append(args, scores[i], payloads[i])
	}
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(schedulePeriodicScript.Do(c, args...))
		return err
	})
	return n, err
}

// registerPool writes, at pool start, the names the pool serves, their MaxConcurrency and their
// KeyMaxWaiting (which enqueuers read from the name's keyed meta hash; 0 removes it).
func (s *store) registerPool(ctx context.Context, names []string, maxConcurrency, keyMaxWaiting []uint) error {
	return s.do(ctx, func(c redis.Conn) error {
		for i, name := range names {
			c.Send("SADD", s.ks.knownJobs(), name)
			c.Send("SET", s.ks.maxConcurrency(name), maxConcurrency[i])
			if keyMaxWaiting[i] > 0 {
				c.Send("HSET", s.ks.keyedMeta(name), "max_waiting", keyMaxWaiting[i])
			} else {
				c.Send("HDEL", s.ks.keyedMeta(name), "max_waiting")
			}
		}
		_, err := c.Do("")
		return err
	})
}

// scanResult is what a look at the namespace found (see lua/lib/scan.lua).
type scanResult struct {
	dueIn    int64    // whole seconds until the earliest member of a timed set is due, less one; -1: none
	nonEmpty []string // the ids of the queues looked at that hold jobs (a job name, or keyedQueueID of it)
}

// scanSets is how many timed sets scan reads (scheduled, retry, batches_expiry), and
// scanKeysPerName how many keys per job name: its queue, and its keyed jobs' ready and delayed keys.
const (
	scanSets        = 3
	scanKeysPerName = 3
)

// scanArgs appends the keys scan (lua/lib/scan.lua) reads for the given job names.
func (s *store) scanArgs(args []interface{}, names []string) []interface{} {
	args = append(args, s.ks.scheduled(), s.ks.retry(), s.ks.batchesExpiry())
	for _, name := range names {
		args = append(args, s.ks.jobs(name), s.ks.keyedReady(name), s.ks.keyedDelayed(name))
	}
	return args
}

func parseScan(v interface{}, names []string) (scanResult, error) {
	r, err := redis.Int64s(v, nil)
	if err != nil {
		return scanResult{}, err
	}
	if len(r) == 0 {
		return scanResult{}, fmt.Errorf("work: scan: empty reply")
	}
	res := scanResult{dueIn: r[0]}
	for _, i := range r[1:] {
		if i >= 1 && i <= int64(scanKeysPerName*len(names)) {
			name := names[(i-1)/scanKeysPerName]
			if (i-1)%scanKeysPerName != 0 {
				name = keyedQueueID(name)
			}
			if n := len(res.nonEmpty); n == 0 || res.nonEmpty[n-1] != name {
				res.nonEmpty = append(res.nonEmpty, name)
			}
		}
	}
	return res, nil
}

// poll looks for waiting jobs: due scheduled or retry jobs and which of the named queues hold jobs.
func (s *store) poll(ctx context.Context, names []string) (scanResult, error) {
	args := s.scanArgs(append(make([]interface{}, 0, 1+scanSets+scanKeysPerName*len(names)), scanSets+scanKeysPerName*len(names)), names)
	var res scanResult
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := pollScript.Do(c, args...)
		if err != nil {
			return err
		}
		res, err = parseScan(r, names)
		return err
	})
	return res, err
}

// publishCancel asks every pool to cancel the job with the given ID; it returns how many pools heard.
func (s *store) publishCancel(ctx context.Context, jobID string) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("PUBLISH", s.ks.cancelChannel(), jobID))
		return err
	})
	return n, err
}

// trimDead trims the dead set (see trimDeadScript).
func (s *store) trimDead(ctx context.Context, keep, minDiedAt int64, budget int) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(trimDeadScript.Do(c, s.ks.dead(), s.ks.deadTrimmed(), keep, minDiedAt, budget))
		return err
	})
	return n, err
}

// deadTrimmedCount reads the dead_trimmed counter.
func (s *store) deadTrimmedCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("GET", s.ks.deadTrimmed()))
		if err == redis.ErrNil {
			n, err = 0, nil
		}
		return err
	})
	return n, err
}
