// Package sharded spreads the job names of one logical namespace over several work namespaces, the
// shards, so that on Redis Cluster the work of one application can use several masters.
//
// A work namespace must live in one cluster slot, because every script of the work package touches
// several of its keys; with a hash tag ("{app}") it does, and so one namespace is served by one
// master. Shard i of namespace "app" is a namespace of its own, "{app.<i>-<xy>}" (see
// ShardNamespace): each shard has its own hash tag, chosen so that the shards hash to slots spread
// evenly over the slot space, and so over the masters. A job name always goes to the same shard, ShardOf(name, n): FNV-1a of
// the name modulo the number of shards. Everything about a job name therefore stays in one namespace,
// and every guarantee of the work package holds per job name: MaxConcurrency, unique jobs, periodic
// jobs, rate limits, pausing, retries and the dead set.
//
// What is given up: priorities compare only job names of the same shard (each shard's pool samples
// its own queues); EnqueueBatch is atomic per shard, not across shards; a worker pool runs one
// work.WorkerPool per shard that has job names, and splits its concurrency among them; the Client
// merges per-shard answers, so a listing across shards is not one snapshot. Every process must use
// the same namespace and number of shards: changing the number of shards moves job names to other
// shards, and jobs waiting in the old ones are then only served by pools that still use the old
// layout.
package sharded

import (
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
)

// ShardNamespace returns the work namespace of shard i of shards: "{namespace.<i>-<xy>}", where
// <i> is i zero-padded to the width of shards-1 and <xy> two letters chosen so that the shards'
// hash slots spread evenly over the slot space whatever the namespace (see ShardSlot). The namespace
// may not contain braces: each shard's namespace is a hash tag of its own.
func ShardNamespace(namespace string, i, shards int) string {
	return "{" + namespace + "." + shardTag(i, shards) + "}"
}

// ShardSlot returns the Redis Cluster hash slot of shard i of shards: every key of the shard is in it.
func ShardSlot(namespace string, i, shards int) int {
	return int(crc16(namespace+"."+shardTag(i, shards)) % 16384)
}

// shardTag is the part of shard i's hash tag after the namespace. CRC16, which places keys on slots,
// is linear: for tags of equal length, slot(namespace.tag) = c(namespace) XOR crc16(tag) (on the
// slot's 14 bits). So choosing the tags alone fixes how the shards spread: the two letters make the
// top six bits of crc16(tag) the bit-reversed shard index, so that for any namespace the first k
// shards fall evenly into the halves, quarters, eighths... of the slot space, which are the masters
// of a cluster of 2, 4, 8... masters with equal slot ranges. Plain indexes would not spread: with
// "{ns.0}" ... "{ns.5}", two masters always get four shards and two, whatever ns is.
func shardTag(i, shards int) string {
	width := len(strconv.Itoa(max(shards-1, 0)))
	base := fmt.Sprintf("%0*d-", width, i)
	want := bitReverse6(i % 64)
	for a := byte('a'); a <= 'z'; a++ {
		for b := byte('a'); b <= 'z'; b++ {
			t := base + string([]byte{a, b})
			if int(crc16(t)%16384)>>8 == want {
				return t
			}
		}
	}
	return base + "aa" // not reached: each class has about ten of the 676 candidates
}

func bitReverse6(x int) int {
	r := 0
	for k := 0; k < 6; k++ {
		r = r<<1 | (x>>k)&1
	}
	return r
}

// crc16 is CRC16-XMODEM, the checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for b := 0; b < 8; b++ {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

// ShardOf returns the shard of a job name among n: FNV-1a (32 bits) of the name, modulo n.
func ShardOf(jobName string, n int) int {
	h := fnv.New32a()
	h.Write([]byte(jobName))
	return int(h.Sum32() % uint32(n))
}

func check(namespace string, shards int) {
	if shards < 1 {
		panic(fmt.Sprintf("sharded: %d shards; at least 1 is needed", shards))
	}
	if strings.ContainsAny(namespace, "{}") {
		panic(fmt.Sprintf("sharded: namespace %q contains a brace; each shard adds its own hash tag", namespace))
	}
}

// Enqueuer enqueues each job into the shard of its name. It is safe for concurrent use.
type Enqueuer struct {
	namespace string
	shards    []*work.Enqueuer
}

// NewEnqueuer returns an Enqueuer for namespace split into shards, on a go-redis client.
func NewEnqueuer(namespace string, shards int, client redis.UniversalClient) *Enqueuer {
	return NewEnqueuerWithBackend(namespace, shards, goredis.NewBackend(client))
}

// NewEnqueuerWithBackend returns an Enqueuer for namespace split into shards, on any work.Backend.
func NewEnqueuerWithBackend(namespace string, shards int, b work.Backend) *Enqueuer {
	check(namespace, shards)
	e := &Enqueuer{namespace: namespace}
	for i := 0; i < shards; i++ {
		e.shards = append(e.shards, work.NewEnqueuerWithBackend(ShardNamespace(namespace, i, shards), b))
	}
	return e
}

// Configure calls fn on every shard's work.Enqueuer, to set its exported fields (WaitReplicas,
// WaitTimeout, UniqueTTL). Call it before the Enqueuer is used.
func (e *Enqueuer) Configure(fn func(*work.Enqueuer)) *Enqueuer {
	for _, s := range e.shards {
		fn(s)
	}
	return e
}

// For returns the work.Enqueuer of jobName's shard.
func (e *Enqueuer) For(jobName string) *work.Enqueuer {
	return e.shards[ShardOf(jobName, len(e.shards))]
}

// Enqueue enqueues a job into its shard (see work.Enqueuer.Enqueue).
func (e *Enqueuer) Enqueue(jobName string, args map[string]interface{}) (*work.Job, error) {
	return e.For(jobName).Enqueue(jobName, args)
}

// EnqueueIn schedules a job in its shard (see work.Enqueuer.EnqueueIn).
func (e *Enqueuer) EnqueueIn(jobName string, secondsFromNow int64, args map[string]interface{}) (*work.ScheduledJob, error) {
	return e.For(jobName).EnqueueIn(jobName, secondsFromNow, args)
}

// EnqueueAt schedules a job in its shard (see work.Enqueuer.EnqueueAt).
func (e *Enqueuer) EnqueueAt(jobName string, t time.Time, args map[string]interface{}) (*work.ScheduledJob, error) {
	return e.For(jobName).EnqueueAt(jobName, t, args)
}

// EnqueueUnique enqueues a unique job into its shard (see work.Enqueuer.EnqueueUnique).
func (e *Enqueuer) EnqueueUnique(jobName string, args map[string]interface{}) (*work.Job, error) {
	return e.For(jobName).EnqueueUnique(jobName, args)
}

// EnqueueUniqueIn schedules a unique job in its shard (see work.Enqueuer.EnqueueUniqueIn).
func (e *Enqueuer) EnqueueUniqueIn(jobName string, secondsFromNow int64, args map[string]interface{}) (*work.ScheduledJob, error) {
	return e.For(jobName).EnqueueUniqueIn(jobName, secondsFromNow, args)
}

// EnqueueUniqueByKey enqueues a job unique by keyMap into its shard (see work.Enqueuer).
func (e *Enqueuer) EnqueueUniqueByKey(jobName string, args, keyMap map[string]interface{}) (*work.Job, error) {
	return e.For(jobName).EnqueueUniqueByKey(jobName, args, keyMap)
}

// EnqueueUniqueInByKey schedules a job unique by keyMap in its shard (see work.Enqueuer).
func (e *Enqueuer) EnqueueUniqueInByKey(jobName string, secondsFromNow int64, args, keyMap map[string]interface{}) (*work.ScheduledJob, error) {
	return e.For(jobName).EnqueueUniqueInByKey(jobName, secondsFromNow, args, keyMap)
}

// EnqueueBatch enqueues jobs with one EnqueueBatch per shard, the shards concurrently. Each shard's
// part is atomic; on an error, the parts of other shards may have been enqueued. It returns the jobs
// in the order given (nil entries for a failed shard) and the first error.
func (e *Enqueuer) EnqueueBatch(jobs []work.BatchJob) ([]*work.Job, error) {
	idx := make([][]int, len(e.shards))
	for i, j := range jobs {
		s := ShardOf(j.Name, len(e.shards))
		idx[s] = append(idx[s], i)
	}
	out := make([]*work.Job, len(jobs))
	errs := make([]error, len(e.shards))
	var wg sync.WaitGroup
	for s, is := range idx {
		if len(is) == 0 {
			continue
		}
		wg.Add(1)
		go func(s int, is []int) {
			defer wg.Done()
			part := make([]work.BatchJob, len(is))
			for k, i := range is {
				part[k] = jobs[i]
			}
			res, err := e.shards[s].EnqueueBatch(part)
			if err != nil {
				errs[s] = err
				return
			}
			for k, i := range is {
				out[i] = res[k]
			}
		}(s, is)
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return out, err
		}
	}
	return out, nil
}

// WorkerPool runs the jobs of a sharded namespace: one work.WorkerPool per shard that has a
// registered job name or a periodic job, each registering only the job names of its shard. Its
// methods fan out to those pools. The concurrency is split among the shard pools in proportion to
// their number of job names, each getting at least one worker.
type WorkerPool struct {
	namespace   string
	shards      int
	concurrency uint
	ctx         interface{}
	backend     work.Backend
	opts        work.WorkerPoolOptions

	mu         sync.Mutex
	validator  *work.WorkerPool // checks registrations as they are made; never started
	middleware []interface{}
	jobs       []jobReg
	periodic   []periodicReg
	pools      map[int]*work.WorkerPool // built at the first Start
}

type jobReg struct {
	name string
	opts work.JobOptions
	fn   interface{}
}

type periodicReg struct{ spec, name string }

// NewWorkerPool returns a WorkerPool for namespace split into shards, on a go-redis client; ctx,
// concurrency and opts are as in work.NewWorkerPoolWithOptions.
func NewWorkerPool(ctx interface{}, concurrency uint, namespace string, shards int, client redis.UniversalClient, opts work.WorkerPoolOptions) *WorkerPool {
	return NewWorkerPoolWithBackend(ctx, concurrency, namespace, shards, goredis.NewBackend(client), opts)
}

// NewWorkerPoolWithBackend is NewWorkerPool on any work.Backend.
func NewWorkerPoolWithBackend(ctx interface{}, concurrency uint, namespace string, shards int, b work.Backend, opts work.WorkerPoolOptions) *WorkerPool {
	check(namespace, shards)
	return &WorkerPool{
		namespace: namespace, shards: shards, concurrency: concurrency, ctx: ctx, backend: b, opts: opts,
		// Panics on a bad context, concurrency or backend, as work.NewWorkerPool does.
		validator: work.NewWorkerPoolWithBackend(ctx, concurrency, ShardNamespace(namespace, 0, shards), b, opts),
	}
}

func (wp *WorkerPool) mustNotBeStarted(what string) {
	if wp.pools != nil {
		panic("sharded: " + what + " called after Start")
	}
}

// Middleware adds middleware to every shard's pool (see work.WorkerPool.Middleware).
func (wp *WorkerPool) Middleware(fn interface{}) *WorkerPool {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	wp.mustNotBeStarted("Middleware")
	wp.validator.Middleware(fn)
	wp.middleware = append(wp.middleware, fn)
	return wp
}

// Job registers a handler in the pool of name's shard (see work.WorkerPool.Job).
func (wp *WorkerPool) Job(name string, fn interface{}) *WorkerPool {
	return wp.JobWithOptions(name, work.JobOptions{}, fn)
}

// JobWithOptions registers a handler with options in the pool of name's shard.
func (wp *WorkerPool) JobWithOptions(name string, opts work.JobOptions, fn interface{}) *WorkerPool {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	wp.mustNotBeStarted("JobWithOptions")
	wp.validator.JobWithOptions(name, opts, fn)
	wp.jobs = append(wp.jobs, jobReg{name, opts, fn})
	return wp
}

// PeriodicallyEnqueue enqueues jobName on a cron schedule, into its shard (see
// work.WorkerPool.PeriodicallyEnqueue).
func (wp *WorkerPool) PeriodicallyEnqueue(spec, jobName string) *WorkerPool {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	wp.mustNotBeStarted("PeriodicallyEnqueue")
	wp.validator.PeriodicallyEnqueue(spec, jobName)
	wp.periodic = append(wp.periodic, periodicReg{spec, jobName})
	return wp
}

// build makes the shard pools, once.
func (wp *WorkerPool) build() {
	names := make(map[int]map[string]bool)
	for _, j := range wp.jobs {
		s := ShardOf(j.name, wp.shards)
		if names[s] == nil {
			names[s] = map[string]bool{}
		}
		names[s][j.name] = true
	}
	active := map[int]bool{}
	for s := range names {
		active[s] = true
	}
	for _, p := range wp.periodic {
		active[ShardOf(p.name, wp.shards)] = true
	}
	conc := SplitConcurrency(wp.concurrency, wp.shards, func(s int) int { return len(names[s]) })
	wp.pools = make(map[int]*work.WorkerPool, len(active))
	for s := range active {
		c := conc[s]
		if c == 0 {
			c = 1
		}
		p := work.NewWorkerPoolWithBackend(wp.ctx, c, ShardNamespace(wp.namespace, s, wp.shards), wp.backend, wp.opts)
		for _, m := range wp.middleware {
			p.Middleware(m)
		}
		wp.pools[s] = p
	}
	for _, j := range wp.jobs {
		wp.pools[ShardOf(j.name, wp.shards)].JobWithOptions(j.name, j.opts, j.fn)
	}
	for _, p := range wp.periodic {
		wp.pools[ShardOf(p.name, wp.shards)].PeriodicallyEnqueue(p.spec, p.name)
	}
}

// SplitConcurrency divides concurrency among shards in proportion to weight(shard), largest
// remainders first; a shard of positive weight gets at least 1, a shard of weight 0 gets 0.
func SplitConcurrency(concurrency uint, shards int, weight func(shard int) int) []uint {
	out := make([]uint, shards)
	total := 0
	for s := 0; s < shards; s++ {
		total += weight(s)
	}
	if total == 0 {
		return out
	}
	c, given := int(concurrency), 0
	type rem struct{ s, r int }
	var rems []rem
	for s := 0; s < shards; s++ {
		w := weight(s)
		if w == 0 {
			continue
		}
		q := c * w / total
		out[s] = uint(q)
		given += q
		rems = append(rems, rem{s, c * w % total})
	}
	sort.SliceStable(rems, func(i, j int) bool { return rems[i].r > rems[j].r })
	for i := 0; given < c && i < len(rems); i++ {
		out[rems[i].s]++
		given++
	}
	for s := 0; s < shards; s++ {
		if weight(s) > 0 && out[s] == 0 {
			out[s] = 1
		}
	}
	return out
}

// Pools returns the shard pools by shard index, once the pool has started.
func (wp *WorkerPool) Pools() map[int]*work.WorkerPool {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	out := make(map[int]*work.WorkerPool, len(wp.pools))
	for s, p := range wp.pools {
		out[s] = p
	}
	return out
}

// each runs fn on every shard pool concurrently and waits.
func (wp *WorkerPool) each(fn func(*work.WorkerPool)) {
	wp.mu.Lock()
	pools := make([]*work.WorkerPool, 0, len(wp.pools))
	for _, p := range wp.pools {
		pools = append(pools, p)
	}
	wp.mu.Unlock()
	var wg sync.WaitGroup
	for _, p := range pools {
		wg.Add(1)
		go func(p *work.WorkerPool) { defer wg.Done(); fn(p) }(p)
	}
	wg.Wait()
}

// Start builds the shard pools (at the first call) and starts them.
func (wp *WorkerPool) Start() {
	wp.mu.Lock()
	if wp.pools == nil {
		wp.build()
	}
	wp.mu.Unlock()
	wp.each((*work.WorkerPool).Start)
}

// Stop stops every shard pool (see work.WorkerPool.Stop).
func (wp *WorkerPool) Stop() { wp.each((*work.WorkerPool).Stop) }

// StopContext stops every shard pool with a deadline (see work.WorkerPool.StopContext); it returns
// the first error.
func (wp *WorkerPool) StopContext(ctx context.Context) error {
	var mu sync.Mutex
	var first error
	wp.each(func(p *work.WorkerPool) {
		if err := p.StopContext(ctx); err != nil {
			mu.Lock()
			if first == nil {
				first = err
			}
			mu.Unlock()
		}
	})
	return first
}

// Drain waits until every shard pool has drained its queues (see work.WorkerPool.Drain).
func (wp *WorkerPool) Drain() { wp.each((*work.WorkerPool).Drain) }
