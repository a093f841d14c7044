package rdb

// The store's core: the keyspace of a namespace, the Store type, and the transitions of a job's
// life from its fetch to its outcome (the exchange), the heartbeat and the reaper; enqueues are in
// enqueue.go.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// RedisNamespacePrefix returns the key prefix of a namespace: the namespace plus ":" unless it already
// ends in ":"; the empty namespace has no prefix.
func RedisNamespacePrefix(namespace string) string {
	if namespace != "" && !strings.HasSuffix(namespace, ":") {
		return namespace + ":"
	}
	return namespace
}

// Keyspace builds the key names of one namespace (compat layout, byte for byte).
type Keyspace struct{ P string }

func NewKeyspace(namespace string) Keyspace { return Keyspace{P: RedisNamespacePrefix(namespace)} }

func (k Keyspace) JobsPrefix() string        { return k.P + "jobs:" }
func (k Keyspace) Jobs(name string) string   { return k.P + "jobs:" + name }
func (k Keyspace) Paused(name string) string { return k.Jobs(name) + ":paused" }
func (k Keyspace) Lock(name string) string   { return k.Jobs(name) + ":lock" }
func (k Keyspace) LockInfo(name string) string {
	return k.Jobs(name) + ":lock_info"
}
func (k Keyspace) MaxConcurrency(name string) string { return k.Jobs(name) + ":max_concurrency" }
func (k Keyspace) Rate(name string) string           { return k.Jobs(name) + ":rate" }
func (k Keyspace) deadTrimmed() string               { return k.P + "dead_trimmed" }
func (k Keyspace) InProgress(name, poolID string) string {
	return k.Jobs(name) + ":" + poolID + ":inprogress"
}
func (k Keyspace) Scheduled() string              { return k.P + "scheduled" }
func (k Keyspace) Retry() string                  { return k.P + "retry" }
func (k Keyspace) Dead() string                   { return k.P + "dead" }
func (k Keyspace) KnownJobs() string              { return k.P + "known_jobs" }
func (k Keyspace) WorkerPools() string            { return k.P + "worker_pools" }
func (k Keyspace) Heartbeat(poolID string) string { return k.P + "worker_pools:" + poolID }
func (k Keyspace) Worker(workerID string) string  { return k.P + "worker:" + workerID }
func (k Keyspace) LastPeriodicEnqueue() string    { return k.P + "last_periodic_enqueue" }
func (k Keyspace) WakeChannel() string            { return k.P + "wake" }
func (k Keyspace) IdlePools(name string) string   { return k.P + "idle_pools:" + name }
func (k Keyspace) HandOffChannel(poolID string) string {
	return k.P + "handoff:" + poolID
}
func (k Keyspace) HandOffs(poolID string) string    { return k.P + "handoffs:" + poolID }
func (k Keyspace) QuietWrites(poolID string) string { return k.P + "quiet:" + poolID }
func (k Keyspace) CancelChannel() string            { return k.P + "cancel" }
func (k Keyspace) DueChannel() string               { return k.P + "due" }
func (k Keyspace) UniquePrefix(name string) string  { return k.P + "unique:" + name + ":" }

// Workflow state: Batch is a batch's hash (and, with a suffix, the list of jobs waiting for it),
// Batches the index of batches, BatchesExpiry when their entries expire, and JobRecord a job's
// record (and, with a suffix, the list of jobs waiting for it).
func (k Keyspace) Batch(id string) string     { return k.P + "batch:" + id }
func (k Keyspace) batches() string            { return k.P + "batches" }
func (k Keyspace) BatchesExpiry() string      { return k.P + "batches_expiry" }
func (k Keyspace) JobRecord(id string) string { return k.P + "job:" + id }

// Stats is the hash of a job name's processed and failed counts on one UTC day (days since the
// epoch): fields "p:<epoch minute>" and "f:<epoch minute>".
func (k Keyspace) Stats(name string, day int64) string {
	return k.P + "stats:" + name + ":" + strconv.FormatInt(day, 10)
}

// reservedSuffixes end the names of a queue's other keys (<ns>:jobs:<name>:lock and so on), so a job
// name ending in one would share its queue key with another job's counter.
var reservedSuffixes = []string{":lock", ":lock_info", ":max_concurrency", ":paused", ":rate"}

// ReservedNameSuffix returns the suffix of the layout's keys that the job name ends in ("" for
// none): such a name's queue would be another job's key.
func ReservedNameSuffix(name string) string {
	for _, suf := range reservedSuffixes {
		if strings.HasSuffix(name, suf) {
			return suf
		}
	}
	return ""
}

// StatsTTLSeconds bounds how long per-minute counts are kept.
const StatsTTLSeconds = 8 * 86400

// Unique returns the unique-lock key of a job name and its args (or key map): the prefix, then the
// output of json.Encoder (sorted keys, HTML-escaped, trailing newline), nothing at all for nil args.
func (k Keyspace) Unique(name string, args map[string]interface{}) (string, error) {
	var buf bytes.Buffer
	buf.WriteString(k.UniquePrefix(name))
	if args != nil {
		if err := json.NewEncoder(&buf).Encode(args); err != nil {
			return "", err
		}
	}
	return buf.String(), nil
}

// UniqueTTLSeconds is how long a unique lock lives when no worker picks its job up.
const UniqueTTLSeconds = 86400

// Store is the package's Redis layer: one method per state transition or read, each one round trip
// unless it says otherwise.
type Store struct {
	Backend Backend
	Ks      Keyspace
	Errs    atomic.Uint64 // failed calls: one may have been applied with its reply lost

	// boxed holds script arguments used on every exchange, converted to interface{} once.
	boxed struct{ retry, dead, scheduled, wake, prefix interface{} }
	// handOffKeys holds, by job name, the keys and the name a push that expects its queue empty
	// passes hand_off.lua, boxed once (*[7]interface{}): such a push runs the script every time.
	handOffKeys sync.Map
	// SweepFence is how long after the server's clock was read a sweep may still run (see sweep).
	SweepFence time.Duration
}

func NewStore(namespace string, b Backend) *Store {
	s := &Store{Backend: b, Ks: NewKeyspace(namespace), SweepFence: 250 * time.Millisecond}
	s.boxed.retry, s.boxed.dead, s.boxed.scheduled = s.Ks.Retry(), s.Ks.Dead(), s.Ks.Scheduled()
	s.boxed.wake, s.boxed.prefix = s.Ks.WakeChannel(), s.Ks.P
	return s
}

// ReplicaWait asks a write to wait until that many replicas acknowledged it (Redis WAIT); zero: no wait.
type ReplicaWait struct {
	Replicas  int
	TimeoutMs int64
}

// doWrite runs a write like do, then, with w set, waits on the same connection for the replicas.
func (s *Store) doWrite(ctx context.Context, w ReplicaWait, fn func(c redis.Conn) error) error {
	return s.do(ctx, func(c redis.Conn) error {
		if err := fn(c); err != nil {
			return err
		}
		if w.Replicas <= 0 {
			return nil
		}
		n, err := redis.Int(c.Do("WAIT", w.Replicas, w.TimeoutMs))
		if err != nil {
			return err
		}
		if n < w.Replicas {
			return fmt.Errorf("%w: %d of %d", ErrNotReplicated, n, w.Replicas)
		}
		return nil
	})
}

// do runs fn on a connection and closes it.
func (s *Store) do(ctx context.Context, fn func(c redis.Conn) error) error {
	c, err := s.Backend.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	err = fn(c)
	if err != nil {
		s.Errs.Add(1)
	}
	return wrongType(err)
}

// RateLimit is a queue's limit on jobs started per period, across all pools.
type RateLimit struct {
	Jobs     uint
	PeriodMs int64
}

// QueueArgs are one of a pool's queues as exchangeScript takes it: its keys, name and settings,
// boxed once per pool run so that a round trip allocates nothing per queue.
type QueueArgs struct {
	keyed   bool          // the group is a name's keyed jobs (kind 'k' in exchangeScript)
	extra   []interface{} // the fields of a keyed group after the rate limit
	Name    string
	Keys    [7]interface{} // jobs, in-progress, paused, lock, lock_info, max_concurrency, rate
	nameArg interface{}
	limited interface{} // "1" when the pool counts the queue against its MaxConcurrency
	rate    [2]interface{}

	StatsDay int64  // the day statsKey is for
	StatsKey string // the stats hash of statsDay

	// Backlog says that the pool's last fetch from the queue left jobs in it: a write of outcomes
	// alone then does not register the pool for hand-offs of it (a push to a queue that holds jobs
	// hands nothing off), which spares a command a write under a backlog.
	Backlog atomic.Bool
}

// NewQueueArgs encodes a queue of poolID for exchanges.
func (s *Store) NewQueueArgs(name, poolID string, limited bool, rl RateLimit) *QueueArgs {
	q := &QueueArgs{Name: name, nameArg: name, limited: boxedWaits, rate: [2]interface{}{0, 0}}
	q.Keys = [7]interface{}{s.Ks.Jobs(name), s.Ks.InProgress(name, poolID), s.Ks.Paused(name),
		s.Ks.Lock(name), s.Ks.LockInfo(name), s.Ks.MaxConcurrency(name), s.Ks.Rate(name)}
	if limited {
		q.limited = "1"
	}
	if rl.Jobs > 0 && rl.PeriodMs > 0 {
		q.rate = [2]interface{}{rl.Jobs, rl.PeriodMs}
		if !limited {
			q.limited = "0"
		}
	}
	return q
}

// OpKind is what a finishOp does with its job.
type OpKind uint8

const (
	OpAck     OpKind = iota // done: removed
	OpDrop                  // failed for good with SkipDead: removed
	OpRetry                 // to the retry set
	OpDead                  // to the dead set
	OpSnooze                // to the scheduled set
	OpRequeue               // back to the fetch end of its queue, nothing counted
)

// plainAck reports whether o is an acknowledgement with nothing else to update: those go in groups.
func (o *FinishOp) plainAck() bool { return (o.Kind == OpAck || o.Kind == OpDrop) && o.Ext == nil }

// opCodes are exchangeScript's op codes, by opKind.
var opCodes = [...]interface{}{OpAck: "A", OpDrop: "A", OpRetry: "R", OpDead: "D", OpSnooze: "S", OpRequeue: "Q"}

// FinishOp is one job's end of hold.
type FinishOp struct {
	Kind    OpKind
	Q       *QueueArgs
	Entry   interface{} // the job's in-progress entry, as the fetch reply held it
	Ref     interface{} // the caller's handle of the job, carried along untouched
	Score   int64       // retry, dead, snooze: the member's score
	Payload []byte      // retry, dead, snooze: the member
	Ext     *FinishExt  // workflow state to update with it; nil for most jobs
}

// FinishExt is what a job's end changes besides its queue: its batch, its record, the jobs waiting
// for it and its unique lock (exchangeScript's X op).
type FinishExt struct {
	Id        string
	Batch     string
	Keep      int64 // seconds to keep the job's record; 0: none unless tracked
	Tracked   bool
	UniqueKey string // deleted when the job ends for good ("" none)
	Err       string
	Result    []byte
	Attempts  int64
}

// xCodes are exchangeScript's kinds for its X op, by opKind.
var xCodes = [...]interface{}{OpAck: "A", OpDrop: "F", OpRetry: "R", OpDead: "D", OpSnooze: "S", OpRequeue: "Q"}

// StatsAdd is a count to add to a per-minute stats field.
type StatsAdd struct {
	Key   string
	Field string
	Count int64
}

// FetchShare asks an exchange for share jobs from a queue.
type FetchShare struct {
	Q     *QueueArgs
	Share int
}

// Exchange is one exchangeScript call: built by the pool's loop, which reuses it from call to call.
type Exchange struct {
	Fetch []FetchShare // candidates, in the order to try them
	Ops   []FinishOp
	Stats []StatsAdd
	// NoWait keeps the call from registering the pool for hand-offs (the pool stops).
	NoWait bool
	// HandedIn is the hand-offs the pool has read; the reply's Handed those made to it so far.
	HandedIn int64
	// Room is how many more jobs the pool would hold than it holds (read after HandedIn): while
	// the hand-offs made to it stay below HandedIn plus Room, less the jobs the call fetches, a
	// hand-off leaves the pool waiting for more (exchange.lua, hand_off.lua). With 0 the pool
	// waits for one hand-off a registration.
	Room int
	// Count, set by SendQuiet, names the counter of the pool's quiet writes (see QuietConn).
	Count interface{}

	groups  []*QueueArgs
	kindBuf []byte
	args    []interface{}
	acks    [][]int // per group: the indexes in ops of its acks
	Order   []int   // the index in ops of each outcome of the reply, in order

	// The reply.
	Done   string        // per op of ops, see exchangeScript
	Handed int64         // the hand-offs made to the pool so far (0 when none of its queues takes them)
	Status []interface{} // per group
	Counts []interface{} // per group
	Jobs   []interface{} // payloads ([]byte), grouped by group in order
}

func (x *Exchange) Reset() {
	x.Fetch, x.Ops, x.Stats, x.groups = x.Fetch[:0], x.Ops[:0], x.Stats[:0], x.groups[:0]
	x.Done, x.Status, x.Counts, x.Jobs, x.Count = "", nil, nil, nil, nil
	x.HandedIn, x.Room = 0, 0
}

// group returns q's group index (1-based), adding it (with no share) if it is not in yet. A queue
// is one group whatever args stand for it: a job name registered again on a started pool has new
// args, while the outcomes of jobs fetched before carry the old ones.
func (x *Exchange) group(q *QueueArgs) int {
	for i, g := range x.groups {
		if g == q || g.Name == q.Name && g.keyed == q.keyed {
			return i + 1
		}
	}
	x.groups = append(x.groups, q)
	return len(x.groups)
}

// kinds returns exchangeScript's kinds argument for x's groups: "" when every group is a queue, else
// a character per group.
func (x *Exchange) kinds() interface{} {
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

// boxedWaits marks a queue whose pool waits for hand-offs of its jobs when it has none (a queue with
// neither MaxConcurrency nor rate limit), boxedNoWait the same queue when the pool stops.
var boxedWaits, boxedNoWait interface{} = "h", "0"

// boxedNoKinds is the kinds of an exchange whose groups are all queues.
var boxedNoKinds interface{} = ""

// boxedNoShare marks a queue that takes part in an exchange for its outcomes only.
var boxedNoShare interface{} = -1

// RunExchange runs x: it records x.ops and x.stats and fetches what x.fetch asks, filling x's reply.
func (s *Store) RunExchange(ctx context.Context, poolID interface{}, x *Exchange) error {
	args := s.exchangeArgs(poolID, x)
	defer clear(args) // let the payloads go
	return s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(exchangeScript.Do(c, args...))
		if err != nil {
			return err
		}
		// One flat array: done, a status and a count per group, the hand-offs made, then the jobs.
		g := len(x.groups)
		if len(r) < 2+2*g {
			return fmt.Errorf("work: exchange: reply of %d elements for %d queues", len(r), g)
		}
		done, _ := r[0].([]byte)
		x.Done = string(done)
		x.Handed, _ = r[1+2*g].(int64)
		x.Status, x.Counts, x.Jobs = r[1:1+g:1+g], r[1+g:1+2*g:1+2*g], r[2+2*g:]
		return nil
	})
}

// exchangeArgs returns exchangeScript's arguments for x, its keys' count first, in x's buffer; x.Order
// is set. The caller clears them once sent.
func (s *Store) exchangeArgs(poolID interface{}, x *Exchange) []interface{} {
	for _, f := range x.Fetch {
		x.group(f.Q)
	}
	cands := len(x.groups)
	// Acks go first, grouped by queue; the other ops after them in their order. x.order records the
	// op of each outcome the reply reports, in that order.
	x.Order = x.Order[:0]
	for i := range x.Ops {
		o := &x.Ops[i]
		g := x.group(o.Q)
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
		args = append(args, q.Keys[:]...)
	}
	args = append(args, poolID, s.boxed.wake, len(x.groups), x.kinds(), x.HandedIn, x.Room)
	for i, q := range x.groups {
		var share interface{} = boxedNoShare
		if i < cands {
			share = x.Fetch[i].Share
		}
		limited := q.limited
		if limited == boxedWaits && (x.NoWait || (i >= cands && q.Backlog.Load())) {
			limited = boxedNoWait
		}
		args = append(args, q.nameArg, limited, share, q.rate[0], q.rate[1])
		args = append(args, q.extra...)
	}
	for g, acks := range x.acks {
		if len(acks) == 0 {
			continue
		}
		args = append(args, "A", g+1, len(acks))
		for _, i := range acks {
			args = append(args, x.Ops[i].Entry)
		}
		x.Order = append(x.Order, acks...)
		x.acks[g] = acks[:0]
	}
	for i := range x.Ops {
		o := &x.Ops[i]
		if !o.plainAck() {
			x.Order = append(x.Order, i)
		}
		switch {
		case o.plainAck():
		case o.Ext != nil:
			e := o.Ext
			tracked := "0"
			if e.Tracked {
				tracked = "1"
			}
			args = append(args, "X", x.group(o.Q), xCodes[o.Kind], o.Entry, o.Score, o.Payload, s.Ks.P,
				e.Id, e.Batch, e.Keep, tracked, e.UniqueKey, e.Err, e.Result, e.Attempts)
		case o.Kind == OpRequeue:
			args = append(args, "Q", x.group(o.Q), o.Entry)
		default:
			args = append(args, opCodes[o.Kind], x.group(o.Q), o.Entry, o.Score, o.Payload)
		}
	}
	for i := 0; i < len(x.Stats); {
		j := i
		for j < len(x.Stats) && x.Stats[j].Key == x.Stats[i].Key {
			j++
		}
		args = append(args, "T", x.Stats[i].Key, StatsTTLSeconds, j-i)
		for _, st := range x.Stats[i:j] {
			args = append(args, st.Field, st.Count)
		}
		i = j
	}
	if x.Count != nil {
		args = append(args, "C", x.Count)
	}
	x.args = args[:0]
	return args
}

// Sweep puts back the in-progress entries this pool does not hold (see sweepScript); held maps the
// id of each of its queues (a job name, or keyedQueueID of it) to the entries the pool holds in the
// queue's in-progress list. It returns how many it put back and, when it ran, the count of
// hand-offs made to the pool by then (-1 when it did not run).
func (s *Store) Sweep(ctx context.Context, poolID string, names []string, held map[string][][]byte) (int64, int64, error) {
	args := make([]interface{}, 0, 2+8*len(names)+2+6*len(names))
	args = append(args, 1+8*len(names), s.Ks.HandOffs(poolID))
	for _, name := range names {
		args = append(args, s.Ks.InProgress(name, poolID), s.Ks.Jobs(name), s.Ks.Lock(name), s.Ks.LockInfo(name))
		args = append(args, s.Ks.KeyedInProgress(name, poolID), s.Ks.KeyedReady(name), s.Ks.Lock(name), s.Ks.LockInfo(name))
	}
	args = append(args, poolID, s.Ks.WakeChannel(), 0)
	deadlineAt := len(args) - 1
	for _, name := range names {
		args = append(args, name, "", len(held[name]))
		for _, p := range held[name] {
			args = append(args, p)
		}
		id := KeyedQueueID(name)
		args = append(args, name, s.Ks.Keyed(name), len(held[id]))
		for _, p := range held[id] {
			args = append(args, p)
		}
	}
	var n, handed int64 = 0, -1
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
		args[deadlineAt] = t[0]*1000 + t[1]/1000 + s.SweepFence.Milliseconds()
		r, err := redis.Int64s(sweepScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) != 2 {
			return fmt.Errorf("work: sweep: reply of %d elements", len(r))
		}
		if n = r[0]; n >= 0 {
			handed = r[1]
		}
		return nil
	})
	return max(n, 0), handed, err
}

// ClaimUnique releases unique locks (see claimUniqueScript).
func (s *Store) ClaimUnique(ctx context.Context, keys []string, keep bool) ([][]byte, error) {
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

// PoolHeartbeat is what a pool publishes about itself (compat: the worker_pools:<id> hash).
type PoolHeartbeat struct {
	PoolID         string
	StartedAt      int64
	JobNames       []string // sorted
	MaxConcurrency []uint   // of each job name
	Concurrency    uint
	WorkerIDs      []string // sorted
	Host           string
	Pid            int
	PeriodicJobs   string // JSON list of {job_name, spec}; "" when none

	// Process identifies the pool's process so that a pool on the same machine can tell it is gone
	// ("" when unknown: nothing is written); Machine is the prefix of Process that every process of
	// the machine and PID namespace shares ("" when unknown: no peer is reported).
	Process, Machine string
	// Registered says the pool's heartbeat was written before: a missing hash then means it was reaped.
	Registered bool
	// Epoch is how many times the pool found itself reaped. The heartbeat hash holds it (one more
	// when this beat finds the pool reaped), and each hand-off carries the value it found there, so
	// that the pool can tell a job handed to it before it was reaped (and put back by the reaper).
	Epoch uint64
	// Members is the digest of the registered pools' IDs the pool's last heartbeat returned ("":
	// none): while the pools stay the same, a heartbeat looks at a few of them only.
	Members string
	// IdleDeadAfter, when positive, says the pool holds no job: the heartbeat declares it idle, with
	// this dead-after limit in seconds (longer than its DeadPoolTimeout, as it beats less often).
	IdleDeadAfter int64
}

// LegacyDeadAfterSeconds is the least dead-after limit applied to a pool whose heartbeat declares
// none (a gocraft/work pool, or one of an earlier version of this library, heartbeating every 5s).
const LegacyDeadAfterSeconds = 10

// WatchedPeers is how many live-looking pools a heartbeat looks at, among those that follow its own
// in the order of pool IDs, besides the dead and late ones before them (heartbeat.lua).
const WatchedPeers = 2

// StalePool is a pool whose heartbeat is older than the dead-after limit, or a live-looking pool of
// this machine (Process set) whose process the caller may find gone.
type StalePool struct {
	Id       string
	JobNames []string // nil when its heartbeat hash is gone
	Process  string   // for a pool of this machine: its process field; "" for a stale pool
}

// HeartbeatResult is what a heartbeat learnt about the namespace's pools and waiting jobs.
type HeartbeatResult struct {
	Now    int64       // the server's clock, epoch seconds
	LateAt int64       // the earliest heartbeat of a late (not yet dead) pool; 0: none
	Reaped bool        // the pool's heartbeat was gone: a reaper took its jobs back
	Stale  []StalePool // pools past the dead-after limit
	Peers  []StalePool // live-looking pools of this machine and PID namespace among those looked at
	Scan   ScanResult
	// Members is the digest of the registered pools' IDs. When it is not hb.Members, the heartbeat
	// looked at every pool (Peers lists every live-looking one of this machine).
	Members string
	// Watch says that a live-looking pool looked at is not idle: it may hold jobs, whose recovery
	// waits for a beat of this pool if it dies.
	Watch bool
}

// Heartbeat writes this pool's heartbeat, squares the concurrency counters of the job names at the
// given indexes of hb.jobNames (every lock recomputed with fullReconcile), reports on the other
// pools and looks for waiting jobs.
func (s *Store) Heartbeat(ctx context.Context, hb *PoolHeartbeat, reconcile []int, deadAfterSeconds, lateAfterSeconds int64, fullReconcile bool) (HeartbeatResult, error) {
	scanEnd := 2 + scanSets + scanKeysPerName*len(hb.JobNames)
	args := make([]interface{}, 0, 1+scanEnd+5*len(reconcile)+20+len(reconcile))
	args = append(args, scanEnd+5*len(reconcile), s.Ks.WorkerPools(), s.Ks.Heartbeat(hb.PoolID))
	args = s.scanArgs(args, hb.JobNames)
	for _, i := range reconcile {
		name := hb.JobNames[i]
		args = append(args, s.Ks.InProgress(name, hb.PoolID), s.Ks.KeyedInProgress(name, hb.PoolID), s.Ks.Lock(name),
			s.Ks.LockInfo(name), s.Ks.MaxConcurrency(name))
	}
	args = append(args, hb.PoolID, hb.StartedAt, strings.Join(hb.JobNames, ","), hb.Concurrency,
		strings.Join(hb.WorkerIDs, ","), hb.Host, hb.Pid, deadAfterSeconds, s.Ks.Heartbeat(""), lateAfterSeconds, fullReconcile,
		s.Ks.JobsPrefix(), scanEnd, hb.PeriodicJobs, hb.Process, hb.Registered, hb.Machine, hb.Epoch, hb.Members)
	if hb.IdleDeadAfter > 0 {
		args = append(args, hb.IdleDeadAfter)
	} else {
		args = append(args, "")
	}
	for _, i := range reconcile {
		args = append(args, hb.MaxConcurrency[i])
	}
	var res HeartbeatResult
	err := s.do(ctx, func(c redis.Conn) error {
		r, err := redis.Values(heartbeatScript.Do(c, args...))
		if err != nil {
			return err
		}
		if len(r) < 6 || (len(r)-6)%3 != 0 {
			return fmt.Errorf("work: heartbeat: unexpected reply of %d elements", len(r))
		}
		if res.Now, err = redis.Int64(r[0], nil); err != nil {
			return err
		}
		if res.LateAt, err = redis.Int64(r[1], nil); err != nil {
			return err
		}
		if res.Scan, err = parseScan(r[2], hb.JobNames); err != nil {
			return err
		}
		reaped, _ := redis.Int64(r[3], nil)
		res.Reaped = reaped == 1
		res.Members, _ = redis.String(r[4], nil)
		watch, _ := redis.Int64(r[5], nil)
		res.Watch = watch == 1
		for i := 6; i+2 < len(r); i += 3 {
			id, _ := redis.String(r[i], nil)
			names, _ := redis.String(r[i+1], nil)
			process, _ := redis.String(r[i+2], nil)
			sp := StalePool{Id: id, Process: process}
			if names != "" {
				sp.JobNames = strings.Split(names, ",")
			}
			if process == "" {
				res.Stale = append(res.Stale, sp)
			} else {
				res.Peers = append(res.Peers, sp)
			}
		}
		return nil
	})
	return res, err
}

// Reap requeues a dead pool's in-progress jobs of the given job names. It returns the number of jobs
// requeued, or -1 when the pool is alive after all. A negative deadAfterSeconds reaps whatever the
// heartbeat says: the caller knows the pool is gone.
func (s *Store) Reap(ctx context.Context, poolID string, jobNames []string, deadAfterSeconds int64) (int64, error) {
	args := make([]interface{}, 0, 3+5*len(jobNames)+4+2*len(jobNames))
	args = append(args, 2+5*len(jobNames), s.Ks.WorkerPools(), s.Ks.Heartbeat(poolID))
	for _, name := range jobNames {
		args = append(args, s.Ks.Jobs(name), s.Ks.InProgress(name, poolID), s.Ks.Lock(name), s.Ks.LockInfo(name),
			s.Ks.KeyedInProgress(name, poolID))
	}
	args = append(args, poolID, deadAfterSeconds, s.Ks.WakeChannel())
	for _, name := range jobNames {
		args = append(args, name, s.Ks.Keyed(name))
	}
	args = append(args, s.Ks.P)
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(reapScript.Do(c, args...))
		return err
	})
	return n, err
}

// KnownJobNames returns the members of known_jobs.
func (s *Store) KnownJobNames(ctx context.Context) ([]string, error) {
	var names []string
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		names, err = redis.Strings(c.Do("SMEMBERS", s.Ks.KnownJobs()))
		return err
	})
	return names, err
}

// Due lists up to limit due members of each of the given sets, with the server's clock, and the
// milliseconds until the next member after those is due (-1: none).
func (s *Store) Due(ctx context.Context, at []Place, limit int) (int64, [][][]byte, int64, error) {
	sets := make([]string, len(at))
	for i, p := range at {
		sets[i] = s.key(p)
	}
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

// EnqueueDue moves set members onto the queues of the given names (see enqueueDueScript).
// keys[i] is the key of member i ("" for none), holds[i] whether it holds its key's slot.
func (s *Store) EnqueueDue(ctx context.Context, at Place, members [][]byte, names, keys []string, holds []bool) (int64, error) {
	set := s.key(at)
	args := make([]interface{}, 0, 3+5*len(members))
	args = append(args, 1+len(members), set)
	for i, name := range names {
		if keys[i] != "" {
			args = append(args, s.Ks.KeyedQueue(name, keys[i]))
		} else {
			args = append(args, s.Ks.Jobs(name))
		}
	}
	args = append(args, s.Ks.WakeChannel(), s.Ks.P)
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

// ZsetMove moves one member between sorted sets under a new payload (see zsetMoveScript).
func (s *Store) ZsetMove(ctx context.Context, fromAt, toAt Place, member []byte, score int64, payload []byte) (bool, error) {
	from, to := s.key(fromAt), s.key(toAt)
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(zsetMoveScript.Do(c, from, to, member, score, payload))
		return err
	})
	return n == 1, err
}

// SchedulePeriodic adds periodic jobs (see schedulePeriodicScript).
func (s *Store) SchedulePeriodic(ctx context.Context, scores []int64, payloads [][]byte) (int64, error) {
	args := make([]interface{}, 0, 2+2*len(scores))
	args = append(args, s.Ks.Scheduled(), s.Ks.LastPeriodicEnqueue())
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

// RegisterPool writes, at pool start, the names the pool serves, their MaxConcurrency, their
// KeyMaxWaiting (which enqueuers read from the name's keyed meta hash; 0 removes it), whether they
// limit their keys (meta's limits field, which sends enqueued jobs to their keys' queues rather
// than the lane: lib/keyed.lua) and their group settings (GroupConf, which enqueuers and flushes read
// from the group conf hash; "" removes them).
func (s *Store) RegisterPool(ctx context.Context, names []string, maxConcurrency, keyMaxWaiting []uint, keyLimited []bool, groupConf []string) error {
	return s.do(ctx, func(c redis.Conn) error {
		// Group settings that change (a deploy with another MaxDelay, or the first pool of a name
		// whose groups waited without settings) apply to the groups waiting already: see regroup.
		var changed []string
		for i, name := range names {
			if groupConf[i] == "" {
				continue
			}
			old, err := redis.String(c.Do("HGET", s.Ks.GroupConf(), name))
			if err != nil && err != redis.ErrNil {
				return err
			}
			if old != groupConf[i] {
				changed = append(changed, name)
			}
		}
		for i, name := range names {
			c.Send("SADD", s.Ks.KnownJobs(), name)
			c.Send("SET", s.Ks.MaxConcurrency(name), maxConcurrency[i])
			if keyMaxWaiting[i] > 0 {
				c.Send("HSET", s.Ks.keyedMeta(name), "max_waiting", keyMaxWaiting[i])
			} else {
				c.Send("HDEL", s.Ks.keyedMeta(name), "max_waiting")
			}
			if keyLimited[i] {
				c.Send("HSET", s.Ks.keyedMeta(name), "limits", "1")
			} else {
				c.Send("HDEL", s.Ks.keyedMeta(name), "limits")
			}
			if groupConf[i] != "" {
				c.Send("HSET", s.Ks.GroupConf(), name, groupConf[i])
			} else {
				c.Send("HDEL", s.Ks.GroupConf(), name)
			}
		}
		if _, err := c.Do(""); err != nil {
			return err
		}
		for _, name := range changed {
			if err := s.regroup(c, name); err != nil {
				return err
			}
		}
		return nil
	})
}

// regroup makes the waiting groups of name due now in the due index, so that the next flush pass
// recomputes their due times under the name's new settings (it flushes only the groups that are due
// under them, and indexes the others again). An enqueue does not recompute a group's due time unless
// the group's oldest or newest job changes it, so without this a group indexed under the old
// settings would wait for its old time.
func (s *Store) regroup(c redis.Conn, name string) error {
	now, err := redis.Int64s(c.Do("TIME"))
	if err != nil || len(now) != 2 {
		return fmt.Errorf("work: regroup %s: TIME: %v", name, err)
	}
	match := strings.NewReplacer("*", "\\*", "?", "\\?", "[", "\\[", "]", "\\]", "\\", "\\\\").Replace(name) + "\n*"
	cursor := "0"
	for {
		r, err := redis.Values(c.Do("ZSCAN", s.Ks.GroupsDue(), cursor, "MATCH", match, "COUNT", 1000))
		if err != nil || len(r) != 2 {
			return wrongType(err)
		}
		cursor, _ = redis.String(r[0], nil)
		members, _ := redis.Strings(r[1], nil)
		args := []interface{}{s.Ks.GroupsDue(), "XX"}
		for i := 0; i+1 < len(members); i += 2 {
			args = append(args, now[0], members[i])
		}
		if len(args) > 2 {
			if _, err := c.Do("ZADD", args...); err != nil {
				return err
			}
			if _, err := c.Do("PUBLISH", s.Ks.DueChannel(), now[0]); err != nil {
				return err
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

// ScanResult is what a look at the namespace found (see lua/lib/scan.lua).
type ScanResult struct {
	DueIn    int64    // whole seconds until the earliest member of a timed set is due, less one; -1: none
	NonEmpty []string // the ids of the queues looked at that hold jobs (a job name, or keyedQueueID of it)
}

// scanSets is how many timed sets scan reads (scheduled, retry, batches_expiry, groups_due,
// debounces), and scanKeysPerName how many keys per job name: its queue, and its keyed jobs' ready
// and delayed keys.
const (
	scanSets        = 5
	scanKeysPerName = 3
)

// scanArgs appends the keys scan (lua/lib/scan.lua) reads for the given job names.
func (s *Store) scanArgs(args []interface{}, names []string) []interface{} {
	args = append(args, s.Ks.Scheduled(), s.Ks.Retry(), s.Ks.BatchesExpiry(), s.Ks.GroupsDue(), s.Ks.Debounces())
	for _, name := range names {
		args = append(args, s.Ks.Jobs(name), s.Ks.KeyedReady(name), s.Ks.keyedDelayed(name))
	}
	return args
}

func parseScan(v interface{}, names []string) (ScanResult, error) {
	r, err := redis.Int64s(v, nil)
	if err != nil {
		return ScanResult{}, err
	}
	if len(r) == 0 {
		return ScanResult{}, fmt.Errorf("work: scan: empty reply")
	}
	res := ScanResult{DueIn: r[0]}
	for _, i := range r[1:] {
		if i >= 1 && i <= int64(scanKeysPerName*len(names)) {
			name := names[(i-1)/scanKeysPerName]
			if (i-1)%scanKeysPerName != 0 {
				name = KeyedQueueID(name)
			}
			if n := len(res.NonEmpty); n == 0 || res.NonEmpty[n-1] != name {
				res.NonEmpty = append(res.NonEmpty, name)
			}
		}
	}
	return res, nil
}

// Poll looks for waiting jobs: due scheduled or retry jobs and which of the named queues hold jobs.
func (s *Store) Poll(ctx context.Context, names []string) (ScanResult, error) {
	args := s.scanArgs(append(make([]interface{}, 0, 1+scanSets+scanKeysPerName*len(names)), scanSets+scanKeysPerName*len(names)), names)
	var res ScanResult
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

// PublishCancel asks every pool to cancel the job with the given ID; it returns how many pools heard.
func (s *Store) PublishCancel(ctx context.Context, jobID string) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("PUBLISH", s.Ks.CancelChannel(), jobID))
		return err
	})
	return n, err
}

// TrimDead trims the dead set (see trimDeadScript).
func (s *Store) TrimDead(ctx context.Context, keep, minDiedAt int64, budget int) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(trimDeadScript.Do(c, s.Ks.Dead(), s.Ks.deadTrimmed(), keep, minDiedAt, budget))
		return err
	})
	return n, err
}

// DeadTrimmedCount reads the dead_trimmed counter.
func (s *Store) DeadTrimmedCount(ctx context.Context) (int64, error) {
	var n int64
	err := s.do(ctx, func(c redis.Conn) error {
		var err error
		n, err = redis.Int64(c.Do("GET", s.Ks.deadTrimmed()))
		if err == redis.ErrNil {
			n, err = 0, nil
		}
		return err
	})
	return n, err
}
