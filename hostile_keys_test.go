package work

// Hostile state outside the job payloads (see hostile_test.go for the rig and the rules every case
// follows): pools' heartbeats, lock counters, orphaned in-progress lists, keys of the wrong type, job
// names that collide with the layout, and misuse of the API.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// TestHostileHeartbeats registers pools that are not what they claim.
func TestHostileHeartbeats(t *testing.T) {
	r := newHstRig(t)
	const name = "h"
	pools := r.ks.WorkerPools()
	job := func(id string) string { return fmt.Sprintf(`{"name":%q,"id":%q,"t":1,"args":{}}`, name, id) }
	// A member with no heartbeat hash, holding a job.
	r.must("SADD", pools, "ghost")
	r.must("LPUSH", r.ks.InProgress(name, "ghost"), job("held-by-ghost"))
	r.must("HSET", r.ks.LockInfo(name), "ghost", 1)
	// A heartbeat hash full of garbage, holding a job.
	r.must("SADD", pools, "garbage")
	r.must("HSET", r.ks.Heartbeat("garbage"), "heartbeat_at", "not a time", "started_at", "-1",
		"job_names", ",,"+name+",{x}, ,", "concurrency", "-5", "worker_ids", "a,,b", "host", "\x00\xff", "pid", "x")
	r.must("LPUSH", r.ks.InProgress(name, "garbage"), job("held-by-garbage"))
	// A long-dead pool whose hash lacks job_names, holding a job.
	r.must("SADD", pools, "nonames")
	r.must("HSET", r.ks.Heartbeat("nonames"), "heartbeat_at", time.Now().Unix()-3600)
	r.must("LPUSH", r.ks.InProgress(name, "nonames"), job("held-by-nonames"))
	// A pool whose heartbeat is at a negative time.
	r.must("SADD", pools, "negative")
	r.must("HSET", r.ks.Heartbeat("negative"), "heartbeat_at", -1, "job_names", name)
	r.must("LPUSH", r.ks.InProgress(name, "negative"), job("held-by-negative"))
	// A pool with an empty ID and one whose ID has odd characters.
	r.must("SADD", pools, "", "odd:{id} *")
	r.must("SET", r.ks.Lock(name), 4)

	hbs, err := r.client.WorkerPoolHeartbeats()
	if err != nil {
		t.Errorf("WorkerPoolHeartbeats: %v", err)
	}
	for _, hb := range hbs {
		t.Logf("heartbeat read: %+v", *hb)
	}
	if _, err := r.client.WorkerObservations(); err != nil {
		t.Errorf("WorkerObservations: %v", err)
	}
	r.clientSweep(false)
	r.start(JobOptions{MaxConcurrency: 1}, name)
	for _, id := range []string{"held-by-ghost", "held-by-garbage", "held-by-nonames", "held-by-negative"} {
		if !r.waitRan(id, hstRunWithin) {
			t.Errorf("the job %q held by a pool that is not alive was not put back and run", id)
		}
	}
	r.good("after hostile heartbeats")
	r.settle()
	members, _ := redis.Strings(r.do("SMEMBERS", pools))
	for _, m := range members {
		if m != r.wp.workerPoolID {
			t.Logf("worker_pools member %q left registered", m)
		}
	}
	r.clientSweep(true)
	r.finalChecks()
}

// TestHostileCounters writes values no pool writes into the concurrency counters of a running pool.
// A garbled value must be treated as a number the pool can live with (and repaired): the queue keeps
// running. A value of the wrong Redis type may hold its queue back (the error is logged), but no job
// may be taken from the queue and left in an in-progress list, and other queues keep running.
func TestHostileCounters(t *testing.T) {
	lock := func(ks rdb.Keyspace, n string) string { return ks.Lock(n) }
	maxc := func(ks rdb.Keyspace, n string) string { return ks.MaxConcurrency(n) }
	info := func(ks rdb.Keyspace, n string) string { return ks.LockInfo(n) }
	cases := []struct {
		label     string
		key       func(ks rdb.Keyspace, name string) string
		cmd       []interface{} // command and arguments after the key
		wrongType bool
	}{
		{"lock not a number", lock, []interface{}{"SET", "abc"}, false},
		{"lock negative", lock, []interface{}{"SET", "-5"}, false},
		{"lock a fraction", lock, []interface{}{"SET", "1.5"}, false},
		{"lock absurd", lock, []interface{}{"SET", "999999999999"}, false},
		{"lock beyond int64", lock, []interface{}{"SET", "99999999999999999999999"}, false},
		{"lock a list", lock, []interface{}{"RPUSH", "x"}, true},
		{"max_concurrency not a number", maxc, []interface{}{"SET", "abc"}, false},
		{"max_concurrency negative", maxc, []interface{}{"SET", "-1"}, false},
		{"max_concurrency a fraction", maxc, []interface{}{"SET", "1.5"}, false},
		{"max_concurrency a hash", maxc, []interface{}{"HSET", "f", "v"}, true},
		{"lock_info field not a number", info, []interface{}{"HSET", "some-pool", "abc"}, false},
		{"lock_info entry of a pool that is not registered", info, []interface{}{"HSET", "gone-pool", "5"}, false},
		{"lock_info a string", info, []interface{}{"SET", "abc"}, true},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(strings.ReplaceAll(tc.label, " ", "_"), func(t *testing.T) {
			r := newHstRig(t)
			const name, other = "c", "other"
			r.start(JobOptions{MaxConcurrency: 2}, name, other)
			// Written while the pool runs (a value present at start is overwritten by its first
			// heartbeat), then jobs arrive.
			key := tc.key(r.ks, name)
			if tc.cmd[0] != "SET" {
				r.must("DEL", key)
			}
			if tc.cmd[0] == "HSET" && tc.key(r.ks, name) == r.ks.LockInfo(name) {
				r.planted = map[string]bool{tc.cmd[1].(string): true}
			}
			r.must(tc.cmd[0].(string), append([]interface{}{key}, tc.cmd[1:]...)...)
			if key == r.ks.LockInfo(name) {
				time.Sleep(1500 * time.Millisecond) // a heartbeat folds lock_info into the lock counter
			}
			var ids []string
			for i := 0; i < 20; i++ {
				j, err := r.enq.Enqueue(name, Q{"i": i})
				if err != nil {
					t.Fatalf("Enqueue: %v", err)
				}
				ids = append(ids, j.ID)
			}
			// A key of the wrong type may hold its queue back: 8s to see it do so. Otherwise every
			// job must run.
			wait := hstRunWithin
			if tc.wrongType {
				wait = 8 * time.Second
			}
			deadline := time.Now().Add(wait)
			missing := 0
			for _, id := range ids {
				if !r.waitRan(id, time.Until(deadline)) {
					missing++
				}
			}
			held, _ := redis.Strings(r.do("LRANGE", r.ks.InProgress(name, r.wp.workerPoolID), 0, -1))
			queued, _ := redis.Int(r.do("LLEN", r.ks.Jobs(name)))
			switch {
			case missing > 0 && !tc.wrongType:
				t.Errorf("%d of 20 jobs did not run; %d still queued, %d in the live pool's in-progress list",
					missing, queued, len(held))
			case missing > 0 && len(held) > 0:
				t.Errorf("%d of 20 jobs did not run within %v: %d were taken from the queue and left in the live pool's in-progress list (%d still queued)",
					missing, wait, len(held), queued)
			case missing > 0:
				t.Logf("%d of 20 jobs held back in their queue while the key has the wrong type", missing)
				if !strings.Contains(r.log.String(), "WRONGTYPE") {
					t.Errorf("the queue is held back but nothing about it was logged")
				}
			}
			r.names = []string{other}
			r.good("after " + tc.label)
			r.names = []string{name, other}
			r.clientSweep(false)
			if tc.wrongType {
				r.must("DEL", key) // so that finalChecks reads the counters
			}
			r.finalChecks()
		})
	}
}

// TestHostileOrphanedInProgressList leaves what a pool that stopped without putting its jobs back
// would leave: an in-progress list and a lock_info entry of a pool that is no longer registered.
// The jobs must run again and the queue's MaxConcurrency must not stay used up by them.
func TestHostileOrphanedInProgressList(t *testing.T) {
	r := newHstRig(t)
	const name = "o"
	for i := 0; i < 2; i++ {
		r.must("LPUSH", r.ks.InProgress(name, "stopped-pool"), fmt.Sprintf(`{"name":"o","id":"orphan-%d","t":1,"args":{}}`, i))
	}
	r.must("HSET", r.ks.LockInfo(name), "stopped-pool", 2)
	r.must("SET", r.ks.Lock(name), 2)
	r.must("SADD", r.ks.KnownJobs(), name)
	r.start(JobOptions{MaxConcurrency: 2}, name)
	r.good("next to an orphaned in-progress list")
	for i := 0; i < 2; i++ {
		if !r.waitRan(fmt.Sprintf("orphan-%d", i), hstRunWithin) {
			t.Errorf("job orphan-%d, left in the in-progress list of a pool that is gone, never ran", i)
		}
	}
	r.finalChecks()
}

// TestHostileWrongTypes puts a value of the wrong Redis type at each key of the layout that a pool
// uses, and checks that the damage stays with that key: errors are returned or logged, good jobs of
// other names still run, and no job is dropped.
func TestHostileWrongTypes(t *testing.T) {
	type tcase struct {
		label string
		key   func(ks rdb.Keyspace) string
		check func(r *hstRig)
	}
	const bad, ok = "bad", "ok"
	cases := []tcase{
		{"queue a string", func(ks rdb.Keyspace) string { return ks.Jobs(bad) }, func(r *hstRig) {
			if _, err := r.enq.Enqueue(bad, nil); err == nil {
				r.t.Errorf("Enqueue onto a queue key holding a string returned no error")
			}
			if _, err := r.enq.EnqueueBatch([]BatchJob{{Name: bad}, {Name: ok}}); err == nil {
				r.t.Errorf("EnqueueBatch with a job for a queue key holding a string returned no error: that job was not queued")
			}
		}},
		{"scheduled a string", func(ks rdb.Keyspace) string { return ks.Scheduled() }, func(r *hstRig) {
			if _, err := r.enq.EnqueueIn(ok, 1, nil); err == nil {
				r.t.Errorf("EnqueueIn with a scheduled key holding a string returned no error")
			}
		}},
		{"retry a string", func(ks rdb.Keyspace) string { return ks.Retry() }, func(r *hstRig) {
			// A job running when the retry key turns into a string fails: it must not vanish.
			r.must("DEL", r.ks.Retry())
			j, err := r.enq.Enqueue(ok, Q{"fail": true, "gate": true})
			if err != nil {
				r.t.Fatal(err)
			}
			select {
			case <-r.running:
			case <-time.After(10 * time.Second):
				r.t.Fatal("the gated job did not start")
			}
			r.must("SET", r.ks.Retry(), "wrong type")
			close(r.gate)
			time.Sleep(500 * time.Millisecond) // its outcome is written
			hstExpectSomewhere(r, j.ID, "a job that failed while the retry key held a string")
		}},
		{"dead a string", func(ks rdb.Keyspace) string { return ks.Dead() }, func(r *hstRig) {
			j, err := r.enq.Enqueue(bad, Q{"fail": true})
			if err != nil {
				r.t.Fatal(err)
			}
			r.waitRan(j.ID, hstRunWithin)
			r.must("LPUSH", r.ks.Jobs(bad), "malformed payload")
			r.settle()
			hstExpectSomewhere(r, j.ID, "a job that died while the dead key held a string")
			hstExpectSomewhere(r, "malformed payload", "a malformed payload dead-lettered while the dead key held a string")
		}},
		{"known_jobs a string", func(ks rdb.Keyspace) string { return ks.KnownJobs() }, nil},
		{"worker_pools a string", func(ks rdb.Keyspace) string { return ks.WorkerPools() }, nil},
		{"another pool's heartbeat a string", func(ks rdb.Keyspace) string { return ks.Heartbeat("wrong-type") }, func(r *hstRig) {
			// A crashed pool next to it must still be reaped.
			r.must("SADD", r.ks.WorkerPools(), "wrong-type", "crashed")
			r.must("HSET", r.ks.Heartbeat("crashed"), "heartbeat_at", time.Now().Unix()-60, "job_names", ok)
			r.must("LPUSH", r.ks.InProgress(ok, "crashed"), `{"name":"ok","id":"held-by-crashed","t":1,"args":{}}`)
			if !r.waitRan("held-by-crashed", hstRunWithin) {
				r.t.Errorf("a crashed pool's job was not put back while another pool's heartbeat key held a string")
			}
		}},
		{"paused flag a list", func(ks rdb.Keyspace) string { return ks.Paused(bad) }, nil},
		{"unique lock a hash", func(ks rdb.Keyspace) string { k, _ := ks.Unique(bad, nil); return k }, func(r *hstRig) {
			if j, err := r.enq.EnqueueUnique(bad, nil); err == nil && j != nil {
				r.t.Logf("EnqueueUnique next to a hash at its lock key enqueued the job")
			}
		}},
		{"stats a string", func(ks rdb.Keyspace) string { return ks.Stats(bad, time.Now().Unix()/86400) }, nil},
		{"last_periodic_enqueue a list", func(ks rdb.Keyspace) string { return ks.LastPeriodicEnqueue() }, nil},
		{"wake channel name taken by a list", func(ks rdb.Keyspace) string { return ks.WakeChannel() }, nil},
	}
	for _, tc := range cases {
		tc := tc
		t.Run(strings.ReplaceAll(tc.label, " ", "_"), func(t *testing.T) {
			r := newHstRig(t)
			key := tc.key(r.ks)
			switch {
			case strings.Contains(tc.label, "a string"):
				r.must("SET", key, "wrong type")
			case strings.Contains(tc.label, "a list"):
				r.must("RPUSH", key, "wrong", "type")
			case strings.Contains(tc.label, "a hash"):
				r.must("HSET", key, "wrong", "type")
			}
			maxFails := uint(1)
			if tc.label == "retry a string" {
				maxFails = 2 // a first failure goes to the retry set
			}
			r.start(JobOptions{MaxFails: maxFails}, bad, ok)
			if tc.check != nil {
				tc.check(r)
			}
			// Jobs of the other name run, also those that go through the scheduled set, and Drain
			// returns.
			r.names = []string{ok}
			if tc.label != "scheduled a string" {
				r.good("with " + tc.label)
			} else if j, err := r.enq.Enqueue(ok, nil); err != nil || !r.waitRan(j.ID, hstRunWithin) {
				t.Errorf("with %s: a good job did not run (%v)", tc.label, err)
			}
			r.settle()
			r.clientSweep(false)
			r.names = []string{bad, ok}
			r.finalChecks()
			// The wrong-typed value is left where it was, for someone to look at (a few keys are
			// overwritten by design: counters and the periodic marker).
			if typ, _ := redis.String(r.do("TYPE", key)); typ == "none" && !strings.HasPrefix(tc.label, "last_periodic") &&
				!strings.HasPrefix(tc.label, "unique") && !strings.HasPrefix(tc.label, "another pool") {
				t.Logf("%s: the key was deleted", tc.label)
			}
		})
	}
}

// hstExpectSomewhere fails the test unless a job ID (or a payload) is found in a queue, an in-progress
// list, the scheduled, retry or dead sets, or as the Raw of a dead record.
func hstExpectSomewhere(r *hstRig, idOrPayload, what string) {
	r.t.Helper()
	var keys []string
	lists, _ := redis.Strings(r.do("KEYS", r.ks.JobsPrefix()+"*"))
	for _, k := range lists {
		if typ, _ := redis.String(r.do("TYPE", k)); typ == "list" {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		vals, _ := redis.ByteSlices(r.do("LRANGE", k, 0, -1))
		for _, v := range vals {
			if bytes.Contains(v, []byte(idOrPayload)) {
				return
			}
		}
	}
	for _, set := range []string{r.ks.Scheduled(), r.ks.Retry(), r.ks.Dead()} {
		if typ, _ := redis.String(r.do("TYPE", set)); typ != "zset" {
			continue
		}
		vals, _ := redis.ByteSlices(r.do("ZRANGE", set, 0, -1))
		for _, v := range vals {
			if bytes.Contains(v, []byte(idOrPayload)) {
				return
			}
			var j Job
			if json.Unmarshal(v, &j) == nil && bytes.Contains(j.Raw, []byte(idOrPayload)) {
				return
			}
		}
	}
	r.t.Errorf("%s: LOST: %q is nowhere in the namespace", what, idOrPayload)
}

// TestHostileOddJobNames runs jobs whose names hold characters that mean something to Redis or to the
// layout.
func TestHostileOddJobNames(t *testing.T) {
	r := newHstRig(t)
	names := []string{"a:b", "{tag}", "x}y{", "with space", "tab\tand\nnewline", "ünïcödé", "*?[glob]",
		strings.Repeat("n", 4096), "trailing:"}
	r.start(JobOptions{MaxConcurrency: 3}, names...)
	r.good("odd names")
	qs, err := r.client.Queues()
	if err != nil {
		t.Errorf("Queues: %v", err)
	}
	listed := map[string]bool{}
	for _, q := range qs {
		listed[q.JobName] = true
	}
	for _, n := range names {
		if !listed[n] {
			t.Errorf("Queues does not list %q", n)
		}
	}
	r.clientSweep(true)
	r.finalChecks()
}

// TestHostileJobNamesCollidingWithLayoutKeys serves a job name next to names that end like the keys
// derived from it: gocraft's layout puts "<ns>:jobs:c:lock" both at the lock counter of "c" and at the
// queue of "c:lock" (likewise ":lock_info", ":max_concurrency", ":paused"). Such a name must either be
// refused (Enqueue returns an error and registering it panics, at the call site) or work: its jobs,
// enqueued before any pool runs (so their queues exist) and while one runs, all run once, and nothing
// is overwritten.
func TestHostileJobNamesCollidingWithLayoutKeys(t *testing.T) {
	r := newHstRig(t)
	colliding := []string{"c:lock", "c:lock_info", "c:max_concurrency", "c:paused"}
	names := []string{"c"}
	for _, n := range colliding {
		_, enqErr := NewEnqueuer(r.ns+"-probe", r.pool).Enqueue(n, nil)
		p := hstRecover(func() { NewWorkerPool(hstCtx{}, 1, r.ns, r.pool).Job(n, func(*Job) error { return nil }) })
		switch {
		case p != nil && enqErr != nil:
			t.Logf("%q refused: Enqueue: %v; Job: %v", n, enqErr, p)
		case p != nil:
			t.Errorf("registering %q panics (%v) but Enqueue accepts it: its jobs could never run", n, p)
		case enqErr != nil:
			t.Errorf("Enqueue(%q) fails (%v) but a pool registers it", n, enqErr)
		default:
			names = append(names, n)
		}
	}
	hstDeleteNamespace(r, r.ns+"-probe")
	var ids []string // "<name> <id>"
	enqueue := func(round int) {
		for _, n := range names {
			j, err := r.enq.Enqueue(n, Q{"round": round})
			if err != nil {
				t.Errorf("round %d: Enqueue(%q): %v", round, n, err)
				continue
			}
			ids = append(ids, n+" "+j.ID)
		}
	}
	enqueue(0) // no pool yet: every queue is created as a list
	r.start(JobOptions{}, names...)
	for round := 1; round <= 2; round++ {
		time.Sleep(1200 * time.Millisecond) // let heartbeats run in between
		enqueue(round)
	}
	deadline := time.Now().Add(hstRunWithin)
	for _, s := range ids {
		f := strings.Fields(s)
		name, id := strings.Join(f[:len(f)-1], " "), f[len(f)-1]
		if !r.waitRan(id, time.Until(deadline)) {
			t.Errorf("job %s of %q, whose Enqueue returned no error, never ran", id, name)
			hstExpectSomewhere(r, id, fmt.Sprintf("job %s of %q", id, name))
		}
	}
	r.finalChecks()
}

// hstDeleteNamespace deletes the keys of a namespace a test used besides its own.
func hstDeleteNamespace(r *hstRig, ns string) {
	keys, _ := redis.Strings(r.do("KEYS", rdb.RedisNamespacePrefix(ns)+"*"))
	for _, k := range keys {
		r.do("DEL", k)
	}
}

// TestHostileAPIMisuse: every misuse gets a clear error or a documented panic at the call site, and
// nothing hangs.
func TestHostileAPIMisuse(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	mustPanic := func(what, mention string, fn func()) {
		t.Helper()
		p := hstRecover(fn)
		if p == nil {
			t.Errorf("%s: no panic", what)
		} else if !strings.Contains(fmt.Sprint(p), mention) {
			t.Errorf("%s: panic %q does not mention %q", what, p, mention)
		}
	}
	returns := func(what string, fn func()) {
		t.Helper()
		done := make(chan struct{})
		go func() { defer close(done); fn() }()
		hstWait(t, what, done)
	}
	mustPanic("NewEnqueuer(nil pool)", "nil", func() { NewEnqueuer(ns, nil) })
	mustPanic("NewWorkerPool(nil pool)", "nil", func() { NewWorkerPool(hstCtx{}, 1, ns, nil) })
	mustPanic("NewWorkerPool(ctx not a struct)", "struct", func() { NewWorkerPool(42, 1, ns, pool) })
	mustPanic("NewWorkerPool(nil ctx)", "struct", func() { NewWorkerPool(nil, 1, ns, pool) })

	e := NewEnqueuer(ns, pool)
	emptyName := map[string]func() error{
		"Enqueue":              func() error { _, err := e.Enqueue("", nil); return err },
		"EnqueueIn":            func() error { _, err := e.EnqueueIn("", 1, nil); return err },
		"EnqueueUnique":        func() error { _, err := e.EnqueueUnique("", nil); return err },
		"EnqueueUniqueIn":      func() error { _, err := e.EnqueueUniqueIn("", 1, nil); return err },
		"EnqueueUniqueByKey":   func() error { _, err := e.EnqueueUniqueByKey("", nil, Q{"k": 1}); return err },
		"EnqueueUniqueInByKey": func() error { _, err := e.EnqueueUniqueInByKey("", 1, nil, Q{"k": 1}); return err },
		"EnqueueBatch":         func() error { _, err := e.EnqueueBatch([]BatchJob{{Name: "ok"}, {Name: ""}}); return err },
	}
	for what, fn := range emptyName {
		var err error
		if p := hstRecover(func() { err = fn() }); p != nil {
			t.Errorf("%s with an empty job name panicked: %v", what, p)
		} else if err == nil || !strings.Contains(err.Error(), "empty") {
			t.Errorf("%s with an empty job name: err %v, want one saying the name is empty", what, err)
		}
	}
	if n, _ := redis.Int(rdo(t, pool, "LLEN", ns+":jobs:ok"), nil); n != 0 {
		t.Errorf("EnqueueBatch with an empty name queued %d jobs", n)
	}
	// Args that cannot be encoded: an error, not a panic, and nothing queued.
	for what, args := range map[string]Q{
		"a channel": {"c": make(chan int)}, "a func": {"f": func() {}}, "NaN": {"n": math.NaN()}, "+Inf": {"i": math.Inf(1)},
	} {
		var err error
		if p := hstRecover(func() { _, err = e.Enqueue("args", args) }); p != nil {
			t.Errorf("Enqueue with %s in args panicked: %v", what, p)
		} else if err == nil {
			t.Errorf("Enqueue with %s in args: no error", what)
		}
		if p := hstRecover(func() { _, err = e.EnqueueUnique("args", args) }); p != nil {
			t.Errorf("EnqueueUnique with %s in args panicked: %v", what, p)
		} else if err == nil {
			t.Errorf("EnqueueUnique with %s in args: no error", what)
		}
	}
	if n, _ := redis.Int(rdo(t, pool, "LLEN", ns+":jobs:args"), nil); n != 0 {
		t.Errorf("%d jobs with unencodable args were queued", n)
	}

	wp := NewWorkerPool(hstCtx{}, 2, ns, pool)
	mustPanic("Job with an empty name", "empty", func() { wp.Job("", func(*Job) error { return nil }) })
	mustPanic("JobWithOptions with an empty name", "empty", func() { wp.JobWithOptions("", JobOptions{}, func(*Job) error { return nil }) })
	mustPanic("PeriodicallyEnqueue with an empty name", "empty", func() { wp.PeriodicallyEnqueue("* * * * *", "") })
	for _, spec := range []string{"", "not a spec", "* * *", "61 * * * * *", "* * * * * * * *", "@every", "@every x"} {
		spec := spec
		if p := hstRecover(func() { wp.PeriodicallyEnqueue(spec, "periodic") }); p == nil {
			t.Errorf("PeriodicallyEnqueue(%q): no panic for an invalid cron spec", spec)
		}
	}
	returns("Drain before Start", wp.Drain)
	returns("Stop before Start", wp.Stop)
	returns("StopContext(cancelled) before Start", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		if err := wp.StopContext(ctx); err != nil {
			t.Errorf("StopContext before Start: %v", err)
		}
	})
	wp.Job("ok", func(*Job) error { return nil })
	returns("Start", wp.Start)
	// Registrations on a started pool are served (registry_test.go); bad ones still panic.
	mustPanic("Job with an empty name after Start", "empty", func() { wp.Job("", func(*Job) error { return nil }) })
	if p := hstRecover(func() { wp.Middleware(func(*Job) error { return nil }) }); p == nil {
		t.Errorf("Middleware of a wrong form after Start: no panic")
	}
	if p := hstRecover(func() { wp.PeriodicallyEnqueue("not a spec", "ok") }); p == nil {
		t.Errorf("PeriodicallyEnqueue with a bad spec after Start: no panic")
	}
	returns("Start twice", wp.Start)
	returns("Drain", wp.Drain)
	returns("StopContext with a cancelled context", func() {
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		wp.StopContext(ctx)
	})
	returns("Stop twice", wp.Stop)
	returns("Drain after Stop", wp.Drain)

	// A pool with no job at all starts, drains and stops.
	empty := NewWorkerPool(hstCtx{}, 1, ns, pool)
	returns("Start of a pool without jobs", empty.Start)
	returns("Drain of a pool without jobs", empty.Drain)
	returns("Stop of a pool without jobs", empty.Stop)

	// The Client with absurd arguments.
	c := NewClient(ns, pool)
	for _, page := range []uint{0, 1, math.MaxUint32, math.MaxUint} {
		if p := hstRecover(func() { c.DeadJobs(page); c.RetryJobs(page); c.ScheduledJobs(page) }); p != nil {
			t.Errorf("Client pages(%d) panicked: %v", page, p)
		}
	}
	for _, fn := range []func() error{
		func() error { return c.DeleteDeadJob(math.MinInt64, "") },
		func() error { return c.RetryDeadJob(math.MaxInt64, "x") },
		func() error { return c.DeleteScheduledJob(-1, "x") },
		func() error { return c.DeleteRetryJob(0, "") },
	} {
		var err error
		if p := hstRecover(func() { err = fn() }); p != nil {
			t.Errorf("Client delete/retry of nothing panicked: %v", p)
		} else if err == nil {
			t.Errorf("Client delete/retry of nothing: no error")
		}
	}
	if err := c.PauseQueue(""); err == nil {
		t.Errorf("PauseQueue(\"\"): no error")
	}
}

func hstRecover(fn func()) (p interface{}) {
	defer func() { p = recover() }()
	fn()
	return nil
}
