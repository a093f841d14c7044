package work

import (
	"fmt"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

func TestNewEnqueuerPanicsOnNilPool(t *testing.T) {
	t.Parallel()
	bhvPanicMessage(t, "NewEnqueuer(nil pool)", func() { NewEnqueuer("ns", nil) })
}

func TestEnqueueWritesTheCompatPayloadOntoItsQueue(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	before := time.Now().Unix()
	job, err := e.Enqueue("send", Q{"b": 1, "a": "x", "html": "<p>&"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	if !bhvHexID.MatchString(job.ID) {
		t.Errorf("ID %q is not 24 lowercase hex chars", job.ID)
	}
	if job.Name != "send" || job.EnqueuedAt < before || job.EnqueuedAt > after {
		t.Errorf("returned job %+v", job)
	}
	list := rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", "send"), 0, -1)
	want := fmt.Sprintf(`{"name":"send","id":"%s","t":%d,"args":{"a":"x","b":1,"html":"\u003cp\u003e\u0026"}}`,
		job.ID, job.EnqueuedAt)
	if len(list) != 1 || list[0] != want {
		t.Fatalf("queue holds %q, want [%s]", list, want)
	}
	// The next job goes to the enqueue end (LPUSH); workers fetch from the other end.
	second, err := e.Enqueue("send", Q{"n": 2})
	if err != nil {
		t.Fatal(err)
	}
	if second.ID == job.ID {
		t.Error("two jobs got the same ID")
	}
	head, _ := redis.String(rdo(t, pool, "LINDEX", bhvKey(ns, "jobs", "send"), 0), nil)
	tail, _ := redis.String(rdo(t, pool, "LINDEX", bhvKey(ns, "jobs", "send"), -1), nil)
	if !strings.Contains(head, second.ID) || tail != want {
		t.Errorf("queue order: head %s tail %s; want the newest at the head", head, tail)
	}
	if n := rInt(t, pool, "SISMEMBER", bhvKey(ns, "known_jobs"), "send"); n != 1 {
		t.Error("send is not in known_jobs")
	}
}

func TestEnqueueNilArgsWritesArgsNull(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	job, err := NewEnqueuer(ns, pool).Enqueue("bare", nil)
	if err != nil {
		t.Fatal(err)
	}
	got, _ := redis.String(rdo(t, pool, "LINDEX", bhvKey(ns, "jobs", "bare"), 0), nil)
	if want := fmt.Sprintf(`{"name":"bare","id":"%s","t":%d,"args":null}`, job.ID, job.EnqueuedAt); got != want {
		t.Errorf("payload %s, want %s", got, want)
	}
}

func TestEnqueueRejectsAnEmptyJobName(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	check := func(what string, isNil bool, err error) {
		t.Helper()
		if err == nil || !isNil {
			t.Errorf("%s with an empty job name: err %v, nil result %v; want an error and no job", what, err, isNil)
		}
	}
	j1, err := e.Enqueue("", Q{"a": 1})
	check("Enqueue", j1 == nil, err)
	j2, err := e.EnqueueIn("", 10, Q{"a": 1})
	check("EnqueueIn", j2 == nil, err)
	j3, err := e.EnqueueUnique("", Q{"a": 1})
	check("EnqueueUnique", j3 == nil, err)
	j4, err := e.EnqueueUniqueIn("", 10, Q{"a": 1})
	check("EnqueueUniqueIn", j4 == nil, err)
	j5, err := e.EnqueueUniqueByKey("", Q{"a": 1}, Q{"k": 1})
	check("EnqueueUniqueByKey", j5 == nil, err)
	j6, err := e.EnqueueUniqueInByKey("", 10, Q{"a": 1}, Q{"k": 1})
	check("EnqueueUniqueInByKey", j6 == nil, err)
	if keys := rStrings(t, pool, "KEYS", ns+":*"); len(keys) != 0 {
		t.Errorf("an empty job name wrote %v", keys)
	}
}

func TestEveryEnqueueVariantRegistersTheJobName(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	calls := map[string]func() error{
		"enqueue":      func() error { _, err := e.Enqueue("enqueue", nil); return err },
		"in":           func() error { _, err := e.EnqueueIn("in", 100, nil); return err },
		"unique":       func() error { _, err := e.EnqueueUnique("unique", nil); return err },
		"unique-in":    func() error { _, err := e.EnqueueUniqueIn("unique-in", 100, nil); return err },
		"by-key":       func() error { _, err := e.EnqueueUniqueByKey("by-key", nil, Q{"k": 1}); return err },
		"by-key-in":    func() error { _, err := e.EnqueueUniqueInByKey("by-key-in", 100, nil, Q{"k": 1}); return err },
		"enqueue-dup":  func() error { _, err := e.Enqueue("enqueue", nil); return err },
		"unique-dup-1": func() error { _, err := e.EnqueueUnique("unique", nil); return err },
	}
	for name, call := range calls {
		if err := call(); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	for _, name := range []string{"enqueue", "in", "unique", "unique-in", "by-key", "by-key-in"} {
		if rInt(t, pool, "SISMEMBER", bhvKey(ns, "known_jobs"), name) != 1 {
			t.Errorf("%s missing from known_jobs", name)
		}
	}
	if n := rInt(t, pool, "SCARD", bhvKey(ns, "known_jobs")); n != 6 {
		t.Errorf("known_jobs holds %d names, want 6", n)
	}
}

// A push that finds the queue empty always wakes the pools. The next push of that name sends its
// wake-up in the same round trip, in case the queue is empty again (workers keeping up), and so does
// the push after one that found a single job waiting; once a push finds more, pushes send none until
// the queue is found (nearly) empty again.
func TestEnqueuePublishesAWakeUpWhenTheQueueWasEmptyAndNoneWhileABacklogBuilds(t *testing.T) {
	t.Parallel()
	pool, writes := newCountingPool(t)
	ns := newTestNamespace(t, pool)
	psc := redis.PubSubConn{Conn: pool.Get()}
	defer psc.Close()
	if err := psc.Subscribe(bhvKey(ns, "wake")); err != nil {
		t.Fatal(err)
	}
	if _, ok := psc.ReceiveWithTimeout(5 * time.Second).(redis.Subscription); !ok {
		t.Fatal("no subscription confirmation")
	}
	next := func() string {
		t.Helper()
		switch m := psc.ReceiveWithTimeout(5 * time.Second).(type) {
		case redis.Message:
			return string(m.Data)
		default:
			t.Fatalf("waiting for a wake-up message: got %#v", m)
		}
		return ""
	}
	e := NewEnqueuer(ns, pool)
	for _, name := range []string{"x", "x", "x", "x", "y"} {
		if _, err := e.Enqueue(name, nil); err != nil {
			t.Fatal(err)
		}
	}
	for i, want := range []string{"x", "x", "x", "y"} {
		if got := next(); got != want {
			t.Errorf("wake-up %d: %q, want %q (the fourth push of x, onto two waiting jobs, sends none)", i+1, got, want)
		}
	}

	// Workers one job behind: the push after one that found a job waiting sends its wake-up along, so
	// when the queue is empty again it takes one round trip, not a second one for the wake-up.
	for _, waiting := range []int{0, 1} {
		rdo(t, pool, "DEL", bhvKey(ns, "jobs", "z"))
		for i := 0; i < waiting; i++ {
			rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "z"), "{}") // a job the workers have not taken yet
		}
		if _, err := e.Enqueue("z", nil); err != nil {
			t.Fatal(err)
		}
		if got := next(); got != "z" {
			t.Fatalf("wake-up %q, want z", got)
		}
	}
	rdo(t, pool, "DEL", bhvKey(ns, "jobs", "z")) // the workers took both
	before := writes.Load()
	if _, err := e.Enqueue("z", nil); err != nil {
		t.Fatal(err)
	}
	if n := writes.Load() - before; n != 1 {
		t.Errorf("the push onto the emptied queue took %d round trips, want 1 (its wake-up sent along)", n)
	}
	if got := next(); got != "z" {
		t.Errorf("wake-up %q, want z", got)
	}
}

func TestEnqueueInSchedulesAtRunAtAndRunsOnceDue(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	before := time.Now().Unix()
	far, err := e.EnqueueIn("later", 300, Q{"w": "far"})
	if err != nil {
		t.Fatal(err)
	}
	after := time.Now().Unix()
	if far.RunAt < before+300 || far.RunAt > after+300 || far.Job == nil || far.Name != "later" {
		t.Errorf("EnqueueIn returned %+v", far)
	}
	members := bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	want := fmt.Sprintf(`{"name":"later","id":"%s","t":%d,"args":{"w":"far"}}`, far.ID, far.EnqueuedAt)
	if len(members) != 1 || members[0].Raw != want || members[0].Score != far.RunAt {
		t.Fatalf("scheduled set %+v, want %s at %d", members, want, far.RunAt)
	}
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "jobs", "later")); n != 0 {
		t.Error("a scheduled job went onto its queue at once")
	}

	got := make(chan *Job, 2)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("later", func(j *Job) error { got <- j; return nil }))
	soon, err := e.EnqueueIn("later", 1, Q{"w": "soon"})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case j := <-got:
		if j.ID != soon.ID || j.ArgString("w") != "soon" {
			t.Errorf("ran %+v, want the job due in 1s", j)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the scheduled job did not run once due")
	}
	members = bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	if len(members) != 1 || members[0].Raw != want {
		t.Errorf("scheduled set %+v: want only the far job left", members)
	}
	select {
	case j := <-got:
		t.Errorf("a second run: %+v", j)
	default:
	}
}

func TestEnqueueUniqueDuplicateReturnsNilAndHoldsOneLock(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	job, err := e.EnqueueUnique("u", Q{"b": 2, "a": "<1>"})
	if err != nil || job == nil {
		t.Fatalf("first EnqueueUnique: %v, %v", job, err)
	}
	dup, err := e.EnqueueUnique("u", Q{"a": "<1>", "b": 2})
	if dup != nil || err != nil {
		t.Fatalf("duplicate EnqueueUnique = (%v, %v), want (nil, nil)", dup, err)
	}
	other, err := e.EnqueueUnique("u", Q{"a": "<1>", "b": 3})
	if other == nil || err != nil {
		t.Fatalf("EnqueueUnique with other args = (%v, %v), want a job", other, err)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "u")); n != 2 {
		t.Errorf("queue holds %d jobs, want 2", n)
	}
	key := ns + `:unique:u:{"a":"\u003c1\u003e","b":2}` + "\n"
	if v, _ := redis.String(rdo(t, pool, "GET", key), nil); v != "1" {
		t.Errorf("unique lock %q holds %q, want \"1\"", key, v)
	}
	if ttl := rInt(t, pool, "TTL", key); ttl < 86300 || ttl > 86400 {
		t.Errorf("unique lock TTL %d, want about 86400", ttl)
	}
	tail, _ := redis.String(rdo(t, pool, "LINDEX", bhvKey(ns, "jobs", "u"), -1), nil)
	stored := bhvDecode(t, tail)
	if stored.ID != job.ID || !stored.Unique || stored.UniqueKey != key {
		t.Errorf("stored unique job %s: want unique true and unique_key %q", tail, key)
	}
	if !job.Unique || job.UniqueKey != key {
		t.Errorf("returned job %+v lacks its unique fields", job)
	}
	if n := len(rStrings(t, pool, "KEYS", ns+":unique:*")); n != 2 {
		t.Errorf("%d unique locks, want 2", n)
	}
}

func TestEnqueueUniqueWithNilArgsLocksOnTheNameAlone(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	if j, err := e.EnqueueUnique("bare", nil); j == nil || err != nil {
		t.Fatalf("first: %v %v", j, err)
	}
	if j, err := e.EnqueueUnique("bare", nil); j != nil || err != nil {
		t.Fatalf("duplicate = (%v, %v), want (nil, nil)", j, err)
	}
	if n := rInt(t, pool, "EXISTS", ns+":unique:bare:"); n != 1 {
		t.Errorf("no unique lock at %q; keys: %q", ns+":unique:bare:", rStrings(t, pool, "KEYS", ns+":unique:*"))
	}
}

func TestEnqueueUniqueDuplicateRefreshesTheLockTTL(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	if _, err := e.EnqueueUnique("u", Q{"a": 1}); err != nil {
		t.Fatal(err)
	}
	key := ns + `:unique:u:{"a":1}` + "\n"
	rdo(t, pool, "EXPIRE", key, 100)
	if j, err := e.EnqueueUnique("u", Q{"a": 1}); j != nil || err != nil {
		t.Fatalf("duplicate = (%v, %v)", j, err)
	}
	if ttl := rInt(t, pool, "TTL", key); ttl < 86300 {
		t.Errorf("TTL after a duplicate is %d, want it refreshed to about 86400", ttl)
	}
}

func TestEnqueueUniqueInDuplicateReturnsNilAndSharesTheLockWithEnqueueUnique(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	before := time.Now().Unix()
	sj, err := e.EnqueueUniqueIn("u", 600, Q{"a": 1})
	if err != nil || sj == nil {
		t.Fatalf("first EnqueueUniqueIn: %v %v", sj, err)
	}
	if sj.RunAt < before+600 || sj.RunAt > time.Now().Unix()+600 || !sj.Unique {
		t.Errorf("returned %+v", sj)
	}
	if dup, err := e.EnqueueUniqueIn("u", 600, Q{"a": 1}); dup != nil || err != nil {
		t.Errorf("duplicate EnqueueUniqueIn = (%v, %v), want (nil, nil)", dup, err)
	}
	if dup, err := e.EnqueueUnique("u", Q{"a": 1}); dup != nil || err != nil {
		t.Errorf("EnqueueUnique of a scheduled unique job = (%v, %v), want (nil, nil)", dup, err)
	}
	members := bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	if len(members) != 1 || members[0].Score != sj.RunAt || bhvDecode(t, members[0].Raw).ID != sj.ID {
		t.Errorf("scheduled set %+v, want the one job at %d", members, sj.RunAt)
	}
	if n := rInt(t, pool, "EXISTS", bhvKey(ns, "jobs", "u")); n != 0 {
		t.Error("the duplicate went onto the queue")
	}
	key := ns + `:unique:u:{"a":1}` + "\n"
	if ttl := rInt(t, pool, "TTL", key); ttl < 86300 || ttl > 86400 {
		t.Errorf("unique lock TTL %d, want about 86400", ttl)
	}
}

func TestEnqueueUniqueByKeyDuplicateRunsOnceWithTheLatestArgs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	first, err := e.EnqueueUniqueByKey("bk", Q{"v": 1, "k": "a"}, Q{"k": "a"})
	if err != nil || first == nil {
		t.Fatalf("first: %v %v", first, err)
	}
	for v := 2; v <= 3; v++ {
		if dup, err := e.EnqueueUniqueByKey("bk", Q{"v": v, "k": "a"}, Q{"k": "a"}); dup != nil || err != nil {
			t.Fatalf("duplicate %d = (%v, %v), want (nil, nil)", v, dup, err)
		}
	}
	if other, err := e.EnqueueUniqueByKey("bk", Q{"v": 9, "k": "b"}, Q{"k": "b"}); other == nil || err != nil {
		t.Fatalf("another key = (%v, %v), want a job", other, err)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "bk")); n != 2 {
		t.Fatalf("queue holds %d jobs, want 2", n)
	}
	key := ns + `:unique:bk:{"k":"a"}` + "\n"
	lock, _ := redis.String(rdo(t, pool, "GET", key), nil)
	if latest := bhvDecode(t, lock); latest.Name != "bk" || latest.ArgInt64("v") != 3 {
		t.Errorf("ByKey lock holds %q, want the latest job (v=3)", lock)
	}
	if ttl := rInt(t, pool, "TTL", key); ttl < 86300 || ttl > 86400 {
		t.Errorf("unique lock TTL %d, want about 86400", ttl)
	}
	if stored := bhvDecode(t, rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", "bk"), -1, -1)[0]); stored.UniqueKey != key {
		t.Errorf("stored unique_key %q, want %q", stored.UniqueKey, key)
	}

	var mu sync.Mutex
	ran := map[string][]int64{}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("bk", func(j *Job) error {
		mu.Lock()
		ran[j.ArgString("k")] = append(ran[j.ArgString("k")], j.ArgInt64("v"))
		mu.Unlock()
		return nil
	}))
	wp.Drain()
	mu.Lock()
	if fmt.Sprint(ran["a"]) != "[3]" || fmt.Sprint(ran["b"]) != "[9]" {
		t.Errorf("runs %v, want a once with v=3 and b once with v=9", ran)
	}
	mu.Unlock()
	if n := rInt(t, pool, "EXISTS", key); n != 0 {
		t.Error("the unique lock outlived the job's start")
	}
	bhvEventuallyReleased(t, pool, ns, "bk", wp.workerPoolID)
}

func TestEnqueueUniqueInByKeyDuplicateRunsOnceDueWithTheLatestArgs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	first, err := e.EnqueueUniqueInByKey("bki", 1, Q{"v": 1}, Q{"k": "a"})
	if err != nil || first == nil || first.RunAt == 0 {
		t.Fatalf("first: %+v %v", first, err)
	}
	if dup, err := e.EnqueueUniqueInByKey("bki", 1, Q{"v": 2}, Q{"k": "a"}); dup != nil || err != nil {
		t.Fatalf("duplicate = (%v, %v), want (nil, nil)", dup, err)
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 1 {
		t.Fatalf("scheduled set holds %d jobs, want 1", n)
	}
	key := ns + `:unique:bki:{"k":"a"}` + "\n"
	if ttl := rInt(t, pool, "TTL", key); ttl < 86300 || ttl > 86400 {
		t.Errorf("unique lock TTL %d, want about 86400", ttl)
	}
	var runs atomic.Int64
	got := make(chan int64, 4)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("bki", func(j *Job) error {
		runs.Add(1)
		got <- j.ArgInt64("v")
		return nil
	}))
	select {
	case v := <-got:
		if v != 2 {
			t.Errorf("ran with v=%d, want the latest args (2)", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the scheduled ByKey job did not run")
	}
	eventually(t, 10*time.Second, "the unique lock released", func() bool { return rInt(t, pool, "EXISTS", key) == 0 })
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")); n != 0 {
		t.Errorf("scheduled set holds %d jobs", n)
	}
	if n := runs.Load(); n != 1 {
		t.Errorf("ran %d times", n)
	}
}

func TestUniqueLockIsReleasedWhenAWorkerPicksTheJobUp(t *testing.T) {
	t.Parallel()
	variants := []struct {
		name    string
		key     string // after "<ns>:unique:u:"
		enqueue func(e *Enqueuer) (bool, error)
	}{
		{"EnqueueUnique", `{"a":1}` + "\n", func(e *Enqueuer) (bool, error) {
			j, err := e.EnqueueUnique("u", Q{"a": 1})
			return j != nil, err
		}},
		{"EnqueueUniqueIn", `{"a":1}` + "\n", func(e *Enqueuer) (bool, error) {
			j, err := e.EnqueueUniqueIn("u", 0, Q{"a": 1})
			return j != nil, err
		}},
		{"EnqueueUniqueByKey", `{"k":1}` + "\n", func(e *Enqueuer) (bool, error) {
			j, err := e.EnqueueUniqueByKey("u", Q{"a": 1}, Q{"k": 1})
			return j != nil, err
		}},
		{"EnqueueUniqueInByKey", `{"k":1}` + "\n", func(e *Enqueuer) (bool, error) {
			j, err := e.EnqueueUniqueInByKey("u", 0, Q{"a": 1}, Q{"k": 1})
			return j != nil, err
		}},
	}
	for _, v := range variants {
		v := v
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			pool := newTestPool(t)
			ns := newTestNamespace(t, pool)
			gate := newBhvGate()
			started := make(chan struct{}, 2)
			var runs atomic.Int64
			e := NewEnqueuer(ns, pool)
			if ok, err := v.enqueue(e); !ok || err != nil {
				t.Fatalf("first enqueue: %v %v", ok, err)
			}
			if ok, err := v.enqueue(e); ok || err != nil {
				t.Fatalf("duplicate before the job started: enqueued=%v err=%v", ok, err)
			}
			wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).Job("u", func(*Job) error {
				runs.Add(1)
				started <- struct{}{}
				gate.Wait()
				return nil
			}))
			t.Cleanup(gate.Open)
			key := ns + ":unique:u:" + v.key
			bhvWait(t, started, "the job to start")
			if n := rInt(t, pool, "EXISTS", key); n != 0 {
				t.Errorf("the unique lock %q is still held while the job runs", key)
			}
			if ok, err := v.enqueue(e); !ok || err != nil {
				t.Fatalf("identical job while the first runs: enqueued=%v err=%v, want it enqueued", ok, err)
			}
			bhvWait(t, started, "the second job to start")
			gate.Open()
			wp.Drain()
			if n := runs.Load(); n != 2 {
				t.Errorf("ran %d times, want 2", n)
			}
			bhvEventuallyReleased(t, pool, ns, "u", wp.workerPoolID)
		})
	}
}

func TestUniqueJobsDoNotStallAMaxConcurrencyQueue(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	var runs atomic.Int64
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 3, ns, pool).
		JobWithOptions("mcu", JobOptions{MaxConcurrency: 1}, func(*Job) error { runs.Add(1); return nil }))
	want := int64(0)
	for i := 0; i < 10; i++ {
		if j, err := e.EnqueueUniqueByKey("mcu", Q{"v": i}, Q{"k": i}); err != nil || j == nil {
			t.Fatal(j, err)
		}
		if j, err := e.EnqueueUnique("mcu", Q{"u": i}); err != nil || j == nil {
			t.Fatal(j, err)
		}
		want += 2
	}
	eventually(t, 15*time.Second, "every unique job run", func() bool { return runs.Load() == want })
	wp.Drain()
	bhvEventuallyReleased(t, pool, ns, "mcu", wp.workerPoolID)
	if keys := rStrings(t, pool, "KEYS", ns+":unique:*"); len(keys) != 0 {
		t.Errorf("unique locks left: %q", keys)
	}
}

func TestLargeIntegersAndEmptyArraysSurviveTheQueueAndARetry(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	got := make(chan *Job, 2)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("big",
		JobOptions{Backoff: func(*Job) int64 { return 3600 }},
		func(j *Job) error { got <- j; return fmt.Errorf("fail once") }))
	// Pushed by hand so that the bytes are exactly these.
	payload := `{"name":"big","id":"b1","t":1,"args":{"id":1152921504606846977,"list":[],"obj":{}}}`
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "big"), payload)
	var j *Job
	select {
	case j = <-got:
	case <-time.After(15 * time.Second):
		t.Fatal("job not run")
	}
	if j.ArgInt64("id") != 1152921504606846977 || j.ArgError() != nil {
		t.Errorf("the handler read id %d (%v)", j.ArgInt64("id"), j.ArgError())
	}
	eventually(t, 10*time.Second, "the job in the retry set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) == 1
	})
	m := bhvZRange(t, pool, bhvKey(ns, "retry"))[0].Raw
	if !strings.Contains(m, `"args":{"id":1152921504606846977,"list":[],"obj":{}}`) {
		t.Errorf("retry payload %s changed the args", m)
	}
}

// bhvMakeRetryDue moves every member of the retry set to now, so the requeuer picks them up at once.
func bhvMakeRetryDue(t *testing.T, pool *redis.Pool, ns string) {
	t.Helper()
	now := time.Now().Unix()
	for _, m := range bhvZRange(t, pool, bhvKey(ns, "retry")) {
		rdo(t, pool, "ZADD", bhvKey(ns, "retry"), "XX", now-1, m.Raw)
	}
}

func TestRetryOfAUniqueJobDoesNotReleaseTheLockOfALaterIdenticalJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	first, err := e.EnqueueUnique("u", Q{"a": 1})
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	runs := make(chan *Job, 4)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("u", JobOptions{Backoff: func(*Job) int64 { return 3600 }},
		func(j *Job) error {
			runs <- j
			if j.ID == first.ID && j.Fails == 0 {
				return fmt.Errorf("first attempt fails")
			}
			return nil
		}))
	eventually(t, 10*time.Second, "the first job in the retry set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) == 1
	})
	<-runs
	// The lock was released when the first job started: an identical job may be scheduled now, and it
	// holds the lock while it waits.
	later, err := e.EnqueueUniqueIn("u", 3600, Q{"a": 1})
	if err != nil || later == nil {
		t.Fatalf("identical job after the first started: %v %v", later, err)
	}
	key := ns + `:unique:u:{"a":1}` + "\n"
	bhvMakeRetryDue(t, pool, ns)
	select {
	case j := <-runs:
		if j.ID != first.ID || j.Fails != 1 {
			t.Fatalf("ran %+v, want the retry of the first job", j)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the retry did not run")
	}
	if n := rInt(t, pool, "EXISTS", key); n != 1 {
		t.Errorf("the retry of the first job released the unique lock of the scheduled identical job")
	}
	if dup, err := e.EnqueueUnique("u", Q{"a": 1}); dup != nil || err != nil {
		t.Errorf("EnqueueUnique while an identical job is scheduled enqueued a duplicate (job %v, err %v), want (nil, nil)",
			dup != nil, err)
	}
}

func TestRetryOfAByKeyJobRunsWithItsOwnArgs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	first, err := e.EnqueueUniqueByKey("bk", Q{"v": 1}, Q{"key": 1})
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	runs := make(chan *Job, 4)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("bk", JobOptions{Backoff: func(*Job) int64 { return 3600 }},
		func(j *Job) error {
			runs <- j
			if j.ID == first.ID && j.Fails == 0 {
				return fmt.Errorf("first attempt fails")
			}
			return nil
		}))
	eventually(t, 10*time.Second, "the first job in the retry set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "retry")) == 1
	})
	<-runs
	later, err := e.EnqueueUniqueInByKey("bk", 3600, Q{"v": 2}, Q{"key": 1})
	if err != nil || later == nil {
		t.Fatalf("ByKey job after the first started: %v %v", later, err)
	}
	bhvMakeRetryDue(t, pool, ns)
	select {
	case j := <-runs:
		if j.ID != first.ID || j.Fails != 1 {
			t.Fatalf("ran %+v, want the retry of the first job", j)
		}
		if v := j.ArgInt64("v"); v != 1 {
			t.Errorf("the retry of the first job ran with v=%d, the args of the later scheduled job; want its own v=1", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the retry did not run")
	}
	key := ns + `:unique:bk:{"key":1}` + "\n"
	if n := rInt(t, pool, "EXISTS", key); n != 1 {
		t.Errorf("the retry of the first job took the lock of the scheduled ByKey job")
	}
}

func TestEnqueueRejectsArgsThatCannotBeEncoded(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	bad := Q{"ch": make(chan int)}
	if j, err := e.Enqueue("x", bad); err == nil || j != nil {
		t.Errorf("Enqueue = (%v, %v), want an error", j, err)
	}
	if j, err := e.EnqueueIn("x", 10, bad); err == nil || j != nil {
		t.Errorf("EnqueueIn = (%v, %v), want an error", j, err)
	}
	if j, err := e.EnqueueUnique("x", bad); err == nil || j != nil {
		t.Errorf("EnqueueUnique = (%v, %v), want an error", j, err)
	}
	if j, err := e.EnqueueUniqueByKey("x", Q{"a": 1}, bad); err == nil || j != nil {
		t.Errorf("EnqueueUniqueByKey with an unencodable key = (%v, %v), want an error", j, err)
	}
	for _, k := range []string{bhvKey(ns, "jobs", "x"), bhvKey(ns, "scheduled")} {
		if n := rInt(t, pool, "EXISTS", k); n != 0 {
			t.Errorf("%s written for unencodable args", k)
		}
	}
	// The enqueuer still works, and registers the name.
	if _, err := e.Enqueue("x", Q{"a": 1}); err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "SISMEMBER", bhvKey(ns, "known_jobs"), "x"); n != 1 {
		t.Error("x not in known_jobs")
	}
}

func TestDeadByKeyJobRetriedByTheClientKeepsItsArgsAndTheLaterJobsLock(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	first, err := e.EnqueueUniqueByKey("bk", Q{"v": 1}, Q{"key": 1})
	if err != nil || first == nil {
		t.Fatal(first, err)
	}
	runs := make(chan *Job, 4)
	var attempts atomic.Int64
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).JobWithOptions("bk", JobOptions{MaxFails: 1},
		func(j *Job) error {
			runs <- j
			if attempts.Add(1) == 1 {
				return fmt.Errorf("first attempt fails")
			}
			return nil
		}))
	eventually(t, 10*time.Second, "the first job in the dead set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "dead")) == 1
	})
	<-runs
	later, err := e.EnqueueUniqueInByKey("bk", 3600, Q{"v": 2}, Q{"key": 1})
	if err != nil || later == nil {
		t.Fatalf("ByKey job after the first started: %v %v", later, err)
	}
	dead := bhvZRange(t, pool, bhvKey(ns, "dead"))[0]
	if err := NewClient(ns, pool).RetryDeadJob(dead.Score, first.ID); err != nil {
		t.Fatal(err)
	}
	select {
	case j := <-runs:
		if j.ID != first.ID {
			t.Fatalf("ran %+v, want the retried dead job", j)
		}
		if v := j.ArgInt64("v"); v != 1 {
			t.Errorf("the retried dead job ran with v=%d, the args of the later scheduled job; want its own v=1", v)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the retried dead job did not run")
	}
	key := ns + `:unique:bk:{"key":1}` + "\n"
	if n := rInt(t, pool, "EXISTS", key); n != 1 {
		t.Errorf("the retried dead job took the unique lock of the scheduled ByKey job")
	}
}

// Concurrent Enqueue calls share round trips, and each still gets its own job or its own error: a
// queue key of the wrong type fails only the calls for that queue.
func TestConcurrentEnqueuesShareRoundTripsAndKeepTheirOwnOutcomes(t *testing.T) {
	t.Parallel()
	pool, rt := newCountingPool(t)
	ns := newTestNamespace(t, pool)
	rdo(t, pool, "SET", bhvKey(ns, "jobs", "broken"), "not a list")
	e := NewEnqueuer(ns, pool)
	const goroutines, each = 50, 100
	names := []string{"a", "b", "c", "broken"}
	var mu sync.Mutex
	ids := map[string]map[string]bool{}
	failed := map[string]int{}
	rt0 := rt.Load()
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < each; i++ {
				name := names[(g+i)%len(names)]
				job, err := e.Enqueue(name, Q{"g": g, "i": i})
				mu.Lock()
				if err != nil {
					failed[name]++
				} else {
					if ids[name] == nil {
						ids[name] = map[string]bool{}
					}
					if job.Name != name || job.Args["g"] != g || job.Args["i"] != i || ids[name][job.ID] {
						t.Errorf("Enqueue(%q, g=%d i=%d) returned %+v", name, g, i, job)
					}
					ids[name][job.ID] = true
				}
				mu.Unlock()
			}
		}(g)
	}
	wg.Wait()
	trips := rt.Load() - rt0
	if failed["broken"] != goroutines*each/len(names) {
		t.Errorf("%d enqueues onto the broken queue failed, want all %d", failed["broken"], goroutines*each/len(names))
	}
	for _, name := range names[:3] {
		if failed[name] != 0 {
			t.Errorf("%d enqueues of %q failed", failed[name], name)
		}
		queued := map[string]bool{}
		for _, raw := range rStrings(t, pool, "LRANGE", bhvKey(ns, "jobs", name), 0, -1) {
			queued[bhvDecode(t, raw).ID] = true
		}
		if len(queued) != len(ids[name]) {
			t.Errorf("queue %q holds %d jobs, %d enqueues succeeded", name, len(queued), len(ids[name]))
		}
		for id := range ids[name] {
			if !queued[id] {
				t.Errorf("job %s of %q was acknowledged but is not queued", id, name)
			}
		}
	}
	// Without sharing every call is a round trip of its own.
	if trips >= goroutines*each {
		t.Errorf("%d round trips for %d concurrent enqueues: none shared", trips, goroutines*each)
	}
	t.Logf("%d round trips for %d enqueues from %d goroutines", trips, goroutines*each, goroutines)
}

// heldConn holds up a write for which hold reports true (it says so once for the write it wants)
// until release is closed, telling held first.
type heldConn struct {
	net.Conn
	hold    func(b []byte) bool
	held    chan<- struct{}
	release <-chan struct{}
}

func (c heldConn) Write(b []byte) (int, error) {
	if c.hold(b) {
		c.held <- struct{}{}
		<-c.release
	}
	return c.Conn.Write(b)
}

func TestEnoughWaitingEnqueuesWriteWhileAnEarlierWriteIsHeldUp(t *testing.T) {
	t.Parallel()
	var hold atomic.Bool // the first write after hold is set is held up
	held, release := make(chan struct{}, 1), make(chan struct{})
	pool := wrappedPool(t, 10, func(c net.Conn) net.Conn {
		return heldConn{Conn: c, hold: func([]byte) bool { return hold.CompareAndSwap(true, false) }, held: held, release: release}
	})
	ns := newTestNamespace(t, newTestPool(t))
	e := NewEnqueuer(ns, pool)
	for _, name := range []string{"first", "later"} { // known_jobs written: one command per job from here
		if _, err := e.Enqueue(name, nil); err != nil {
			t.Fatal(err)
		}
	}

	hold.Store(true)
	firstDone := make(chan error, 1)
	go func() {
		_, err := e.Enqueue("first", nil)
		firstDone <- err
	}()
	<-held // the first call's write is on its way to Redis, and stays there

	laterDone := make(chan error, secondWriteAt)
	for i := 0; i < secondWriteAt; i++ {
		go func() {
			_, err := e.Enqueue("later", Q{"i": i})
			laterDone <- err
		}()
	}
	for i := 0; i < secondWriteAt; i++ {
		select {
		case err := <-laterDone:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(10 * time.Second):
			close(release)
			t.Fatalf("%d of %d calls returned while an earlier write was held up: they waited for it", i, secondWriteAt)
		}
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "later")); n != 1+secondWriteAt {
		t.Errorf("the later queue holds %d jobs, want %d", n, 1+secondWriteAt)
	}
	close(release)
	if err := <-firstDone; err != nil {
		t.Fatal(err)
	}
	if n := rInt(t, pool, "LLEN", bhvKey(ns, "jobs", "first")); n != 2 {
		t.Errorf("the first queue holds %d jobs, want 2", n)
	}
}
