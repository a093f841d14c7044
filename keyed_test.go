package work

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// A keyed job waits in its key's queue, in the documented layout, and its key gets a turn.
func TestKeyedEnqueueWritesTheKeyedLayout(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	limitKeys(t, pool, ns, "mail") // keys' own queues: the lane's layout is the next test's
	for i := 0; i < 3; i++ {
		job, err := e.EnqueueWith("mail", Q{"i": i}, EnqueueOptions{Key: "acme"})
		if err != nil {
			t.Fatal(err)
		}
		if job.Key != "acme" {
			t.Fatalf("job.Key = %q", job.Key)
		}
	}
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "globex:eu"}); err != nil {
		t.Fatal(err)
	}
	p := ns + ":keyed:mail:"
	if n := rInt(t, pool, "LLEN", p+"{acme}"); n != 3 {
		t.Fatalf("acme's queue holds %d jobs, want 3", n)
	}
	if got := rStrings(t, pool, "ZRANGE", p+"ready", 0, -1); len(got) != 2 {
		t.Fatalf("ready keys %v, want acme and globex:eu", got)
	}
	if got := rStrings(t, pool, "ZRANGE", p+"waiting", 0, -1, "WITHSCORES"); strings.Join(got, " ") != "globex:eu 1 acme 3" {
		t.Fatalf("waiting index %v", got)
	}
	if n := rInt(t, pool, "HGET", p+"meta", "waiting"); n != 4 {
		t.Fatalf("meta waiting %d, want 4", n)
	}
	if n := rInt(t, pool, "LLEN", ns+":jobs:mail"); n != 0 {
		t.Fatalf("%d keyed jobs on the name's own queue", n)
	}
	raw := rStrings(t, pool, "LRANGE", p+"{acme}", -1, -1)[0]
	if !strings.HasSuffix(raw, `,"key":"acme"}`) {
		t.Fatalf("payload %s does not end with its key", raw)
	}
}

// A key given one job, without limits, puts it in the lane: a member "<key>\n<payload>" of the
// name's ready set scored by its virtual start, and a lane field holding that score; no queue, no
// waiting entry. Its next job moves it to the key's queue, ahead of the new one. A key with an
// override of its own, a key given many jobs at once, and every key once a pool limits the name's
// keys, queue per key.
func TestKeyedEnqueueWritesTheLane(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	if err := NewClient(ns, pool).SetKeyLimits("mail", "own", KeyLimits{Weight: 2}); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"acme", "globex", "own"} {
		if _, err := e.EnqueueWith("mail", Q{"n": 1}, EnqueueOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.EnqueueBatch([]BatchJob{{Name: "mail", Key: "many"}, {Name: "mail", Key: "many"}}); err != nil {
		t.Fatal(err)
	}
	p := ns + ":keyed:mail:"
	got := rStrings(t, pool, "ZRANGE", p+"ready", 0, -1, "WITHSCORES")
	lane := map[string]string{}
	for i := 0; i+1 < len(got); i += 2 {
		if key, _, ok := strings.Cut(got[i], "\n"); ok {
			lane[key] = got[i+1]
		}
	}
	if len(lane) != 2 || lane["acme"] == "" || lane["globex"] == "" || lane["acme"] == lane["globex"] {
		t.Fatalf("lane jobs in ready %v, want acme's and globex's at scores of their own", got)
	}
	for key, score := range lane {
		// The field is the text the job's score was written from: it reads as the same number.
		f, _ := redis.String(rdo(t, pool, "HGET", p+"lane", key), nil)
		a, err := strconv.ParseFloat(f, 64)
		if b, _ := strconv.ParseFloat(score, 64); err != nil || a != b {
			t.Fatalf("%s's lane field %q, want its job's score %s", key, f, score)
		}
	}
	if n := rInt(t, pool, "EXISTS", p+"{acme}", p+"{globex}"); n != 0 {
		t.Fatalf("%d lane keys have a queue", n)
	}
	if a, b := rInt(t, pool, "LLEN", p+"{own}"), rInt(t, pool, "LLEN", p+"{many}"); a != 1 || b != 2 {
		t.Fatalf("the key with an override has %d jobs in its queue, the key given two %d; want 1 and 2", a, b)
	}
	if got := rStrings(t, pool, "ZRANGE", p+"waiting", 0, -1); strings.Join(got, " ") != "own many" {
		t.Fatalf("waiting index %v, want own and many", got)
	}
	if n := rInt(t, pool, "HGET", p+"meta", "waiting"); n != 5 {
		t.Fatalf("meta waiting %d, want 5", n)
	}
	// acme's next job moves its first to its queue, ahead of it.
	if _, err := e.EnqueueWith("mail", Q{"n": 2}, EnqueueOptions{Key: "acme"}); err != nil {
		t.Fatal(err)
	}
	queued := rStrings(t, pool, "LRANGE", p+"{acme}", 0, -1)
	if len(queued) != 2 || !strings.Contains(queued[1], `"n":1`) || !strings.Contains(queued[0], `"n":2`) {
		t.Fatalf("acme's queue %v, want its first job at the tail, its second at the head", queued)
	}
	if n := rInt(t, pool, "HEXISTS", p+"lane", "acme") + rInt(t, pool, "ZCARD", p+"ready"); n != 4 {
		t.Fatalf("acme still in the lane, or ready holds %d members, want globex's job and 3 keys", n)
	}
	// A pool that limits the name's keys: a new key queues per key.
	limitKeys(t, pool, ns, "mail")
	enqueueKeyed(t, e, "mail", "initech")
	if n := rInt(t, pool, "LLEN", p+"{initech}"); n != 1 {
		t.Fatalf("a new key of a limited name has %d jobs in its queue, want 1", n)
	}
}

func TestKeyedEnqueueRefusesMalformedKeys(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	for _, key := range []string{"a{b", "a}b", "tab\there", "nul\x00", "\xff\xfe", strings.Repeat("k", MaxKeyLen+1), "del\x7f"} {
		if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: key}); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("key %q: %v, want ErrMalformedKey", key, err)
		}
		if _, err := e.EnqueueBatch([]BatchJob{{Name: "mail"}, {Name: "mail", Key: key}}); !errors.Is(err, ErrMalformedKey) {
			t.Errorf("batch with key %q: %v, want ErrMalformedKey", key, err)
		}
	}
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: strings.Repeat("k", MaxKeyLen)}); err != nil {
		t.Errorf("a key of MaxKeyLen bytes: %v", err)
	}
	if keys := rStrings(t, pool, "KEYS", ns+":jobs:*"); len(keys) != 0 {
		t.Errorf("refused enqueues wrote %v", keys)
	}
}

// A batch of keyed and unkeyed jobs is queued whole, or not at all when one key is past its cap.
func TestKeyedBatchIsAtomicAndHonoursTheCap(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	rdo(t, pool, "HSET", ns+":keyed:mail:meta", "max_waiting", 3)
	jobs := []BatchJob{{Name: "mail", Key: "a"}, {Name: "mail"}, {Name: "mail", Key: "b"}, {Name: "mail", Key: "a"}, {Name: "other"}}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	if a, b, plain := rKeyBacklog(t, pool, ns, "mail", "a"), rKeyBacklog(t, pool, ns, "mail", "b"), rInt(t, pool, "LLEN", ns+":jobs:mail"); a != 2 || b != 1 || plain != 1 {
		t.Fatalf("queues a %d, b %d, mail %d; want 2, 1, 1", a, b, plain)
	}
	// Two more of a would leave it with 4 waiting, past its cap of 3: nothing is written.
	_, err := e.EnqueueBatch([]BatchJob{{Name: "mail", Key: "b"}, {Name: "mail", Key: "a"}, {Name: "mail", Key: "a"}, {Name: "mail"}})
	if !errors.Is(err, ErrKeyFull) || !strings.Contains(err.Error(), `key "a"`) {
		t.Fatalf("over the cap: %v, want ErrKeyFull naming key a", err)
	}
	if a, b, plain := rKeyBacklog(t, pool, ns, "mail", "a"), rKeyBacklog(t, pool, ns, "mail", "b"), rInt(t, pool, "LLEN", ns+":jobs:mail"); a != 2 || b != 1 || plain != 1 {
		t.Fatalf("a refused batch changed the queues: a %d, b %d, mail %d", a, b, plain)
	}
	// A single enqueue is refused past the cap too, and a key's override lifts it.
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "a"}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "a"}); !errors.Is(err, ErrKeyFull) {
		t.Fatalf("a fourth job of a: %v, want ErrKeyFull", err)
	}
	rdo(t, pool, "HSET", ns+":keyed:mail:conf", "m:a", -1)
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "a"}); err != nil {
		t.Fatalf("with the cap lifted for a: %v", err)
	}
}

// A scheduled keyed job carries its key into the scheduled set.
func TestKeyedScheduledJobKeepsItsKey(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	job, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "acme", At: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	m := rStrings(t, pool, "ZRANGE", ns+":scheduled", 0, -1)
	if len(m) != 1 || !strings.Contains(m[0], `"key":"acme"`) || job.Key != "acme" {
		t.Fatalf("scheduled %v, job key %q", m, job.Key)
	}
}

// keyedRun records, from inside handlers, how many jobs of each key run at once, and the order in
// which jobs start.
type keyedRun struct {
	mu      sync.Mutex
	now     map[string]int
	max     map[string]int
	order   map[string][]int64 // per key, the "i" arg of its jobs as they start
	keys    []string           // the keys of the jobs as they start
	total   int
	overlap int // the most jobs of all keys running at once
	running int
}

func newKeyedRun() *keyedRun {
	return &keyedRun{now: map[string]int{}, max: map[string]int{}, order: map[string][]int64{}}
}

func (k *keyedRun) handler(d time.Duration) func(*Job) error {
	return func(j *Job) error {
		k.mu.Lock()
		k.now[j.Key]++
		k.running++
		k.max[j.Key] = max(k.max[j.Key], k.now[j.Key])
		k.overlap = max(k.overlap, k.running)
		k.order[j.Key] = append(k.order[j.Key], j.ArgInt64("i"))
		k.keys = append(k.keys, j.Key)
		k.mu.Unlock()
		time.Sleep(d)
		k.mu.Lock()
		k.now[j.Key]--
		k.running--
		k.total++
		k.mu.Unlock()
		return nil
	}
}

// started is the number of jobs that have started.
func (k *keyedRun) started() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return len(k.keys)
}

func (k *keyedRun) done() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.total
}

// Keyed jobs run, each key's one at a time and in order with KeyConcurrency 1, while keys run in
// parallel; once they are done no state of the keys is left in Redis.
func TestKeyedJobsRunWithinTheirKeyConcurrencyInOrder(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	const keys, per = 6, 15
	var jobs []BatchJob
	for i := 0; i < per; i++ {
		for k := 0; k < keys; k++ {
			jobs = append(jobs, BatchJob{Name: "sync", Key: fmt.Sprintf("tenant-%d", k), Args: Q{"i": i}})
		}
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	run := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 20, ns, pool).
		JobWithOptions("sync", JobOptions{KeyConcurrency: 1}, run.handler(2*time.Millisecond)))
	eventually(t, 30*time.Second, "every keyed job to run", func() bool { return run.done() == keys*per })
	run.mu.Lock()
	defer run.mu.Unlock()
	for k := 0; k < keys; k++ {
		key := fmt.Sprintf("tenant-%d", k)
		if run.max[key] != 1 {
			t.Errorf("key %s ran %d jobs at once, want 1", key, run.max[key])
		}
		for i, got := range run.order[key] {
			if got != int64(i) {
				t.Fatalf("key %s ran its jobs in the order %v, want enqueue order", key, run.order[key])
			}
		}
	}
	if run.overlap < 2 {
		t.Errorf("at most %d jobs ran at once over %d keys: keys did not run in parallel", run.overlap, keys)
	}
	waitKeyedStateGone(t, pool, ns, "sync")
}

// waitKeyedStateGone waits until a job name's keyed state is down to what a name with no job waiting
// or running keeps: its meta hash, and its conf hash while keys have overrides.
func waitKeyedStateGone(t *testing.T, pool *redis.Pool, ns, name string) {
	t.Helper()
	var left []string
	eventually(t, 10*time.Second, "the name's keyed state, but its meta and conf hashes, to go", func() bool {
		left = left[:0]
		for _, k := range rStrings(t, pool, "KEYS", ns+":keyed:"+name+":*") {
			if k != ns+":keyed:"+name+":meta" && k != ns+":keyed:"+name+":conf" {
				left = append(left, k)
			}
		}
		return len(left) == 0
	})
}

// A push or a take of many keys leaves the name's ready and waiting sorted sets and its running
// hash in Redis's skiplist and hashtable encodings: as listpacks (up to 128 entries) every member
// read or written would be a scan of the set.
func TestKeyedTakeOfManyKeysLeavesNoListpack(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	const keys = 40 // above the 32 keys a take from which the scripts convert
	started, release := make(chan string, 3*keys), make(chan struct{})
	// Room for two jobs a key: the pool's first fetch, which may split its room between the name's
	// plain queue and its keys, asks its keys for more than 32 jobs, and leaves each key a job. A
	// KeyConcurrency above what runs keeps the running counts (without a limit there are none).
	wp := NewWorkerPool(bhvCtx{}, 2*keys, ns, pool).JobWithOptions("sync", JobOptions{KeyConcurrency: 3}, func(j *Job) error {
		started <- j.Key
		<-release
		return nil
	})
	e := NewEnqueuer(ns, pool)
	limitKeys(t, pool, ns, "sync") // as the pool registers it: the keys' jobs queue per key
	var jobs []BatchJob
	for i := 0; i < 3; i++ { // each key keeps jobs waiting, so that ready and waiting stay
		for k := 0; k < keys; k++ {
			jobs = append(jobs, BatchJob{Name: "sync", Key: fmt.Sprintf("k%02d", k)})
		}
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	encoding := func(part string) string {
		v, err := redis.String(rdo(t, pool, "OBJECT", "ENCODING", ns+":keyed:sync:"+part), nil)
		if err != nil {
			t.Fatalf("OBJECT ENCODING of %s: %v (keys: %v)", part, err, rStrings(t, pool, "KEYS", ns+":keyed:sync:*"))
		}
		return v
	}
	for part, want := range map[string]string{"ready": "skiplist", "waiting": "skiplist"} {
		if enc := encoding(part); enc != want {
			t.Errorf("after a push of %d keys, %s is a %s, want a %s", keys, part, enc, want)
		}
	}
	wp.Start()
	defer wp.Stop()
	free := sync.OnceFunc(func() { close(release) })
	defer free() // before the Stop, which waits for the handlers
	for i := 0; i < keys; i++ {
		select {
		case <-started:
		case <-time.After(time.Minute):
			t.Fatalf("%d of the %d first jobs started", i, keys)
		}
	}
	for part, want := range map[string]string{"ready": "skiplist", "waiting": "skiplist", "running": "hashtable"} {
		if enc := encoding(part); enc != want {
			t.Errorf("with %d keys running, %s is a %s, want a %s", keys, part, enc, want)
		}
	}
	// The take that made running a hashtable left a count of each key running and nothing else.
	if n := rInt(t, pool, "HLEN", ns+":keyed:sync:running"); n != keys {
		t.Errorf("running holds %d fields with %d keys running: %v", n, keys, rStrings(t, pool, "HKEYS", ns+":keyed:sync:running"))
	}
	free()
	waitKeyedStateGone(t, pool, ns, "sync")
}

// A pool's KeyMaxWaiting reaches every enqueuer through Redis; a pool without it lifts it.
func TestKeyMaxWaitingOfThePoolCapsEnqueues(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	c := NewClient(ns, pool)
	if err := c.PauseQueue("mail"); err != nil { // the jobs stay waiting
		t.Fatal(err)
	}
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("mail", JobOptions{KeyMaxWaiting: 2}, func(*Job) error { return nil })
	wp.Start()
	e := NewEnqueuer(ns, pool)
	for i := 0; i < 2; i++ {
		if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	_, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "acme"})
	if !errors.Is(err, ErrKeyFull) || !strings.Contains(err.Error(), `key "acme" of job "mail" may have 2 waiting`) {
		t.Fatalf("a third job of the key: %v", err)
	}
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "other"}); err != nil {
		t.Fatalf("another key: %v", err)
	}
	wp.Stop()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("mail", func(*Job) error { return nil }))
	if _, err := e.EnqueueWith("mail", nil, EnqueueOptions{Key: "acme"}); err != nil {
		t.Fatalf("after a pool without KeyMaxWaiting started: %v", err)
	}
}

// Every way to enqueue carries the key to the handler, and the job runs under its key's limit: a
// chain's keyed step, keyed members of a tracked batch, a unique keyed job (whose lock goes once it
// has run, so the same job enqueues again), a keyed job scheduled for now. Once all have run, no
// keyed state is left.
func TestEveryEnqueueKeepsTheKey(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	run := newKeyedRun()
	bhvStart(t, NewWorkerPool(bhvCtx{}, 8, ns, pool).
		JobWithOptions("sync", JobOptions{KeyConcurrency: 1}, run.handler(time.Millisecond)))

	if _, err := e.EnqueueChain(ChainStep{Name: "sync", Args: Q{"i": 0}, Key: "chain"},
		ChainStep{Name: "sync", Args: Q{"i": 1}, Key: "chain"}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.EnqueueInBatch(BatchOptions{Keep: time.Minute}, []BatchJob{
		{Name: "sync", Args: Q{"i": 0}, Key: "batch"}, {Name: "sync", Args: Q{"i": 1}, Key: "batch"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.EnqueueWith("sync", Q{"i": 0}, EnqueueOptions{Key: "later", At: time.Now()}); err != nil {
		t.Fatal(err)
	}
	unique := func() *Job {
		t.Helper()
		j, err := e.EnqueueWith("sync", Q{"i": 0}, EnqueueOptions{Key: "unique", Unique: true})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	if unique() == nil {
		t.Fatal("the first unique keyed job was refused")
	}
	eventually(t, 20*time.Second, "every job", func() bool { return run.done() == 6 })
	if unique() == nil {
		t.Fatal("a unique keyed job that has run still holds its lock")
	}
	eventually(t, 20*time.Second, "the unique job again", func() bool { return run.done() == 7 })
	run.mu.Lock()
	for key, want := range map[string]string{"chain": "[0 1]", "batch": "[0 1]", "later": "[0]", "unique": "[0 0]"} {
		if got := fmt.Sprint(run.order[key]); got != want {
			t.Errorf("key %s ran %s, want %s", key, got, want)
		}
		if run.max[key] != 1 {
			t.Errorf("key %s ran %d at once, over its KeyConcurrency of 1", key, run.max[key])
		}
	}
	if len(run.order[""]) != 0 {
		t.Errorf("%d jobs ran without their key", len(run.order[""]))
	}
	run.mu.Unlock()
	waitKeyedStateGone(t, pool, ns, "sync")
}

// The lane is fair: a key of one job enqueued behind a key with hundreds in its queue joins at the
// current virtual time and waits for about one of them, not all; and once all ran, no lane state is
// left.
func TestLaneKeyWaitsBehindABigKeyForAboutOneJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	const big = 300
	var jobs []BatchJob
	for i := 0; i < big; i++ {
		jobs = append(jobs, BatchJob{Name: "mail", Key: "big", Args: Q{"i": i}})
	}
	if _, err := e.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	run := newKeyedRun()
	// One worker: jobs start in the order the pool takes them.
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("mail", run.handler(time.Millisecond)))
	eventually(t, 20*time.Second, "the big key's first jobs", func() bool { return run.started() >= 30 })
	smalls := []string{"small-0", "small-1", "small-2", "small-3", "small-4"}
	enqueueKeyed(t, e, "mail", smalls...)
	eventually(t, 20*time.Second, "every job", func() bool { return run.done() == big+len(smalls) })
	run.mu.Lock()
	defer run.mu.Unlock()
	for _, key := range smalls {
		at := slices.Index(run.keys, key)
		// Enqueued after 30 starts at least; a fetch holds a few jobs ahead, and the keys joined at
		// the current virtual time: far from the 300th start of a queue that served in arrival order.
		if at < 0 || at > 120 {
			t.Errorf("key %s started %dth of %d", key, at+1, len(run.keys))
		}
	}
	for i, got := range run.order["big"] {
		if got != int64(i) {
			t.Fatalf("the big key's jobs ran in the order %v, want enqueue order", run.order["big"])
		}
	}
	waitKeyedStateGone(t, pool, ns, "mail")
}

// A lane job held by a pool that is reaped goes back to the front of its key's queue, with a turn,
// and runs again before the key's later job; once all ran, no lane or queue state is left.
func TestReapedLaneJobGoesBackToItsKeyFirst(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	p := ns + ":keyed:mail:"
	if _, err := e.EnqueueWith("mail", Q{"i": 0}, EnqueueOptions{Key: "a"}); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "HEXISTS", p+"lane", "a"); n != 1 {
		t.Fatal("the key's job is not in the lane")
	}
	gate := newBhvGate()
	t.Cleanup(gate.Open)
	started := make(chan struct{}, 3)
	var mu sync.Mutex
	var ran []int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("mail", func(j *Job) error {
		mu.Lock()
		ran = append(ran, j.ArgInt64("i"))
		mu.Unlock()
		started <- struct{}{}
		gate.Wait()
		return nil
	}))
	bhvWait(t, started, "the lane job to start")
	if n := rInt(t, pool, "HEXISTS", p+"lane", "a"); n != 0 {
		t.Fatal("the taken lane job's key keeps its lane field")
	}
	beats, err := NewClient(ns, pool).WorkerPoolHeartbeats()
	if err != nil || len(beats) != 1 {
		t.Fatalf("heartbeats: %v, %v", beats, err)
	}
	s := rdb.NewStore(ns, PoolBackend(pool))
	if n, err := s.Reap(context.Background(), beats[0].WorkerPoolID, []string{"mail"}, -1); err != nil || n != 1 {
		t.Fatalf("reap: %d, %v", n, err)
	}
	if n := rInt(t, pool, "LLEN", p+"{a}"); n != 1 {
		t.Fatalf("the key's queue holds %d jobs after the reap, want the reaped one", n)
	}
	if _, err := e.EnqueueWith("mail", Q{"i": 1}, EnqueueOptions{Key: "a"}); err != nil {
		t.Fatal(err)
	}
	gate.Open()
	eventually(t, 20*time.Second, "the reaped job and the later one", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(ran) == 3
	})
	mu.Lock()
	got := fmt.Sprint(ran)
	mu.Unlock()
	if got != "[0 0 1]" {
		t.Fatalf("the key's jobs ran in the order %s, want the reaped one again before the later one", got)
	}
	waitKeyedStateGone(t, pool, ns, "mail")
}

// Keys of one job each wait in the lane and run in the order they were enqueued, one at a time or
// many a fetch, each exactly once; the takes leave no lane field, ready member or queue behind.
func TestLaneJobsRunOnceInEnqueueOrder(t *testing.T) {
	t.Parallel()
	for _, workers := range []uint{1, 25} {
		t.Run(fmt.Sprint("workers=", workers), func(t *testing.T) {
			t.Parallel()
			pool := newTestPool(t)
			ns := newTestNamespace(t, pool)
			e := NewEnqueuer(ns, pool)
			const keys = 300
			var jobs []BatchJob
			var want []string
			for i := 0; i < keys; i++ {
				key := fmt.Sprint("k", i)
				jobs = append(jobs, BatchJob{Name: "mail", Key: key, Args: Q{"i": i}})
				want = append(want, key)
			}
			if _, err := e.EnqueueBatch(jobs); err != nil {
				t.Fatal(err)
			}
			if n := rInt(t, pool, "HLEN", ns+":keyed:mail:lane"); n != keys {
				t.Fatalf("%d keys in the lane, want %d", n, keys)
			}
			run := newKeyedRun()
			bhvStart(t, NewWorkerPool(bhvCtx{}, workers, ns, pool).Job("mail", run.handler(0)))
			eventually(t, 20*time.Second, "every job", func() bool { return run.done() == keys })
			waitKeyedStateGone(t, pool, ns, "mail")
			run.mu.Lock()
			defer run.mu.Unlock()
			if workers == 1 && !slices.Equal(run.keys, want) {
				t.Fatalf("keys ran in the order %v, want enqueue order", run.keys)
			}
			for _, key := range want {
				if n := len(run.order[key]); n != 1 {
					t.Fatalf("key %s's job ran %d times, want once", key, n)
				}
			}
			if len(run.keys) != keys {
				t.Fatalf("%d jobs ran, want %d", len(run.keys), keys)
			}
		})
	}
}
