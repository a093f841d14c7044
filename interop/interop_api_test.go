package interop

// The same calls made on gocraft/work v0.5.1 and on work, answers compared: the API's edges (odd
// inputs, zero values, registration checks, argument accessors, JSON of the exported types) as
// well as the bytes both write to Redis. Where work answers otherwise on purpose, the case says so
// and docs/migrating-from-gocraft.md lists it.

import (
	"encoding/json"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	gocraft "github.com/gocraft/work"
	"github.com/workqueue/work"
)

// panics reports whether fn panics.
func panics(fn func()) (p bool) {
	defer func() { p = recover() != nil }()
	fn()
	return false
}

// withoutIDAndTime decodes a job payload with its id and t replaced, for comparing payloads of jobs
// enqueued apart.
func withoutIDAndTime(t *testing.T, raw string) map[string]interface{} {
	t.Helper()
	var m map[string]interface{}
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		t.Fatalf("payload %q: %v", raw, err)
	}
	m["id"], m["t"] = "ID", 0
	return m
}

// Both libraries write the same payload bytes for the same args (but for the ID and the time), and
// use the same unique-lock key: a unique job enqueued by either is a duplicate for the other.
func TestSameCallsWriteTheSameJobs(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ge, we := gocraft.NewEnqueuer(ns, pool), work.NewEnqueuer(ns, pool)
	for i, args := range []map[string]interface{}{
		nil,
		{},
		{"a": 1, "b": "<&>", "c": []interface{}{1, "x"}, "d": map[string]interface{}{"z": 1, "a": nil}},
		{"big": int64(1) << 60, "f": 1.5, "u": "é\u2028", "t": true},
	} {
		gj, err := ge.Enqueue("p", args)
		if err != nil {
			t.Fatal(err)
		}
		wj, err := we.Enqueue("p", args)
		if err != nil {
			t.Fatal(err)
		}
		if len(wj.ID) != 24 || strings.Trim(wj.ID, "0123456789abcdef") != "" || len(gj.ID) != len(wj.ID) {
			t.Errorf("IDs %q (gocraft) and %q (work): want 24 lowercase hex characters", gj.ID, wj.ID)
		}
		q := rStrings(t, pool, "LRANGE", ns+":jobs:p", 0, -1) // work's job first: LPUSH
		rdo(t, pool, "DEL", ns+":jobs:p")
		if g, w := withoutIDAndTime(t, q[1]), withoutIDAndTime(t, q[0]); !reflect.DeepEqual(g, w) {
			t.Errorf("args %d: payloads differ:\n gocraft %s\n work    %s", i, q[1], q[0])
		}
		if strings.Replace(q[1], gj.ID, "", 1) != strings.Replace(strings.Replace(q[0], wj.ID, "", 1),
			fmt.Sprintf(`"t":%d`, wj.EnqueuedAt), fmt.Sprintf(`"t":%d`, gj.EnqueuedAt), 1) {
			t.Errorf("args %d: payload bytes differ:\n gocraft %s\n work    %s", i, q[1], q[0])
		}

		if j, err := ge.EnqueueUnique("u", args); err != nil || j == nil {
			t.Fatalf("gocraft EnqueueUnique: %v, %v", j, err)
		}
		if j, err := we.EnqueueUnique("u", args); err != nil || j != nil {
			t.Errorf("args %d: work's EnqueueUnique after gocraft/work's: %v, %v; want a duplicate", i, j, err)
		}
		if sj, err := we.EnqueueUniqueIn("u", 60, args); err != nil || sj != nil {
			t.Errorf("args %d: work's EnqueueUniqueIn after gocraft/work's: %v, %v; want a duplicate", i, sj, err)
		}
		for _, k := range keysMatching(t, pool, ns+":unique:*") {
			rdo(t, pool, "DEL", k)
		}
		rdo(t, pool, "DEL", ns+":jobs:u", ns+":scheduled")
		if j, err := we.EnqueueUnique("u", args); err != nil || j == nil {
			t.Fatalf("work EnqueueUnique: %v, %v", j, err)
		}
		if j, err := ge.EnqueueUnique("u", args); err != nil || j != nil {
			t.Errorf("args %d: gocraft/work's EnqueueUnique after work's: %v, %v; want a duplicate", i, j, err)
		}
		for _, k := range keysMatching(t, pool, ns+":unique:*") {
			rdo(t, pool, "DEL", k)
		}
		rdo(t, pool, "DEL", ns+":jobs:u")
	}

	// A past EnqueueIn is scheduled in the past by both; args that JSON cannot hold fail alike.
	gs, err := ge.EnqueueIn("s", -3, nil)
	if err != nil {
		t.Fatal(err)
	}
	ws, err := we.EnqueueIn("s", -3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gs.RunAt-gs.EnqueuedAt != -3 || ws.RunAt-ws.EnqueuedAt != -3 {
		t.Errorf("EnqueueIn(-3): gocraft runs at t%+d, work at t%+d", gs.RunAt-gs.EnqueuedAt, ws.RunAt-ws.EnqueuedAt)
	}
	bad := map[string]interface{}{"c": make(chan int)}
	_, gerr := ge.Enqueue("x", bad)
	_, werr := we.Enqueue("x", bad)
	if reflect.TypeOf(gerr) != reflect.TypeOf(werr) || gerr == nil {
		t.Errorf("Enqueue of args JSON cannot hold: gocraft %T %v, work %T %v", gerr, gerr, werr, werr)
	}
}

// The exported types encode to the same JSON, HTML-escaped or not, indented or not, and each
// library decodes the other's.
func TestSameJSONOfTheExportedTypes(t *testing.T) {
	t.Parallel()
	gj := &gocraft.Job{Name: "n<>", ID: "i&", EnqueuedAt: 5, Args: map[string]interface{}{"a": "<b>", "n": 1.5},
		Unique: true, Fails: 2, LastErr: "e<", FailedAt: 9}
	wj := &work.Job{Name: "n<>", ID: "i&", EnqueuedAt: 5, Args: map[string]interface{}{"a": "<b>", "n": 1.5},
		Unique: true, Fails: 2, LastErr: "e<", FailedAt: 9}
	for i, pair := range [][2]interface{}{
		{gj, wj},
		{gocraft.Job{}, work.Job{}},
		{gocraft.RetryJob{RetryAt: 7, Job: gj}, work.RetryJob{RetryAt: 7, Job: wj}},
		{&gocraft.ScheduledJob{RunAt: 7, Job: gj}, &work.ScheduledJob{RunAt: 7, Job: wj}},
		{[]*gocraft.DeadJob{{DiedAt: 7, Job: gj}}, []*work.DeadJob{{DiedAt: 7, Job: wj}}},
		{gocraft.DeadJob{DiedAt: 7}, work.DeadJob{DiedAt: 7}},
		{gocraft.WorkerPoolHeartbeat{WorkerPoolID: "p", StartedAt: 1, HeartbeatAt: 2, JobNames: []string{"a"},
			Concurrency: 3, Host: "h", Pid: 4, WorkerIDs: []string{"w"}},
			work.WorkerPoolHeartbeat{WorkerPoolID: "p", StartedAt: 1, HeartbeatAt: 2, JobNames: []string{"a"},
				Concurrency: 3, Host: "h", Pid: 4, WorkerIDs: []string{"w"}}},
		{gocraft.WorkerObservation{WorkerID: "w", IsBusy: true, JobName: "n", JobID: "i", StartedAt: 1,
			ArgsJSON: "{}", Checkin: "c", CheckinAt: 2},
			work.WorkerObservation{WorkerID: "w", IsBusy: true, JobName: "n", JobID: "i", StartedAt: 1,
				ArgsJSON: "{}", Checkin: "c", CheckinAt: 2}},
		{gocraft.Queue{JobName: "q", Count: 1, Latency: 2}, work.Queue{JobName: "q", Count: 1, Latency: 2}},
	} {
		for _, enc := range []struct {
			name string
			fn   func(interface{}) string
		}{
			{"json.Marshal", func(v interface{}) string { b, _ := json.Marshal(v); return string(b) }},
			{"json.MarshalIndent", func(v interface{}) string { b, _ := json.MarshalIndent(v, "", "\t"); return string(b) }},
			{"an Encoder without HTML escaping", func(v interface{}) string {
				var sb strings.Builder
				e := json.NewEncoder(&sb)
				e.SetEscapeHTML(false)
				_ = e.Encode(v)
				return sb.String()
			}},
		} {
			if g, w := enc.fn(pair[0]), enc.fn(pair[1]); g != w {
				t.Errorf("%d, %s:\n gocraft %s\n work    %s", i, enc.name, g, w)
			}
		}
	}
	b, _ := json.Marshal(gocraft.RetryJob{RetryAt: 7, Job: gj})
	var wr work.RetryJob
	if err := json.Unmarshal(b, &wr); err != nil || wr.RetryAt != 7 || wr.Job == nil || wr.Job.LastErr != "e<" || wr.Job.Fails != 2 {
		t.Errorf("work decoding gocraft/work's RetryJob: %v, %+v", err, wr)
	}
	b, _ = json.Marshal(work.DeadJob{DiedAt: 7, Job: wj})
	var gd gocraft.DeadJob
	if err := json.Unmarshal(b, &gd); err != nil || gd.DiedAt != 7 || gd.Job == nil || gd.Job.Name != "n<>" {
		t.Errorf("gocraft/work decoding work's DeadJob: %v, %+v", err, gd)
	}
}

// Registration accepts and refuses the same handlers, middleware, options and cron specs. work
// takes more: the forms with a context.Context, a middleware whose next parameter is an unnamed
// func() error, and specs with a TZ= or CRON_TZ= prefix.
func TestSameRegistrationChecks(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	type otherCtx struct{}
	gp := func() *gocraft.WorkerPool { return gocraft.NewWorkerPool(gocraftCtx{}, 1, ns, pool) }
	wp := func() *work.WorkerPool { return work.NewWorkerPool(workCtx{}, 1, ns, pool) }
	same := func(what string, g, w func()) {
		t.Helper()
		if gp, wp := panics(g), panics(w); gp != wp {
			t.Errorf("%s: gocraft/work panics %v, work panics %v", what, gp, wp)
		}
	}

	handlers := []struct {
		name string
		g, w interface{}
	}{
		{"func(*Job) error", func(*gocraft.Job) error { return nil }, func(*work.Job) error { return nil }},
		{"GenericHandler", gocraft.GenericHandler(func(*gocraft.Job) error { return nil }),
			work.GenericHandler(func(*work.Job) error { return nil })},
		{"func(*Ctx, *Job) error", func(*gocraftCtx, *gocraft.Job) error { return nil },
			func(*workCtx, *work.Job) error { return nil }},
		{"func(*Job)", func(*gocraft.Job) {}, func(*work.Job) {}},
		{"func(Ctx, *Job) error", func(gocraftCtx, *gocraft.Job) error { return nil },
			func(workCtx, *work.Job) error { return nil }},
		{"func(*OtherCtx, *Job) error", func(*otherCtx, *gocraft.Job) error { return nil },
			func(*otherCtx, *work.Job) error { return nil }},
		{"func(*Ctx, *Job, int) error", func(*gocraftCtx, *gocraft.Job, int) error { return nil },
			func(*workCtx, *work.Job, int) error { return nil }},
		{"nil", nil, nil},
		{"a string", "handler", "handler"},
	}
	for _, h := range handlers {
		same("Job with "+h.name, func() { gp().Job("x", h.g) }, func() { wp().Job("x", h.w) })
	}
	middleware := []struct {
		name string
		g, w interface{}
	}{
		{"func(*Job, NextMiddlewareFunc) error", func(*gocraft.Job, gocraft.NextMiddlewareFunc) error { return nil },
			func(*work.Job, work.NextMiddlewareFunc) error { return nil }},
		{"GenericMiddlewareHandler",
			gocraft.GenericMiddlewareHandler(func(*gocraft.Job, gocraft.NextMiddlewareFunc) error { return nil }),
			work.GenericMiddlewareHandler(func(*work.Job, work.NextMiddlewareFunc) error { return nil })},
		{"func(*Ctx, *Job, NextMiddlewareFunc) error",
			func(*gocraftCtx, *gocraft.Job, gocraft.NextMiddlewareFunc) error { return nil },
			func(*workCtx, *work.Job, work.NextMiddlewareFunc) error { return nil }},
		{"func(*Job) error", func(*gocraft.Job) error { return nil }, func(*work.Job) error { return nil }},
		{"nil", nil, nil},
	}
	for _, m := range middleware {
		same("Middleware with "+m.name, func() { gp().Middleware(m.g) }, func() { wp().Middleware(m.w) })
	}
	for _, prio := range []uint{0, 1, 100000, 100001} {
		same(fmt.Sprintf("Priority %d", prio),
			func() {
				gp().JobWithOptions("x", gocraft.JobOptions{Priority: prio}, func(*gocraft.Job) error { return nil })
			},
			func() {
				wp().JobWithOptions("x", work.JobOptions{Priority: prio}, func(*work.Job) error { return nil })
			})
	}
	for _, ctx := range []struct {
		name string
		g, w interface{}
	}{{"a struct", gocraftCtx{}, workCtx{}}, {"a pointer", &gocraftCtx{}, &workCtx{}}, {"nil", nil, nil}, {"an int", 1, 1}} {
		same("NewWorkerPool with "+ctx.name+" as context",
			func() { gocraft.NewWorkerPool(ctx.g, 1, ns, pool) }, func() { work.NewWorkerPool(ctx.w, 1, ns, pool) })
	}
	same("NewWorkerPool with a nil pool", func() { gocraft.NewWorkerPool(gocraftCtx{}, 1, ns, nil) },
		func() { work.NewWorkerPool(workCtx{}, 1, ns, nil) })
	same("NewEnqueuer with a nil pool", func() { gocraft.NewEnqueuer(ns, nil) }, func() { work.NewEnqueuer(ns, nil) })
	same("NewClient with a nil pool", func() { gocraft.NewClient(ns, nil) }, func() { work.NewClient(ns, nil) })
	same("NewWorkerPool with concurrency 0", func() { gocraft.NewWorkerPool(gocraftCtx{}, 0, ns, pool) },
		func() { work.NewWorkerPool(workCtx{}, 0, ns, pool) })

	for _, spec := range []string{"@every 1m", "@every 1m30s", "@every 0s", "@hourly", "@midnight", "@reboot",
		"0 0 * * * *", "0 * * * *", "*/5 * * * * *", "1-5/2 * * * *", "0 0 12 * * ?", "0 0 0 1 JAN *",
		"0 0 0 * * MON-FRI", "  0 0 * * * *", "", "* * * * * * *", "60 * * * * *", "0 0 * * * 7",
		"0 0 0 L * *", "0 0 0 1W * *", "not a spec"} {
		same(fmt.Sprintf("PeriodicallyEnqueue(%q)", spec), func() { gp().PeriodicallyEnqueue(spec, "x") },
			func() { wp().PeriodicallyEnqueue(spec, "x") })
	}
}

// The argument accessors return the same values and the same errors. work reads more: a
// json.Number, and integral floats between 9,007,199,254,740,892 (gocraft/work's limit, a typo of
// 2^53) and 2^53.
func TestSameArgumentAccessors(t *testing.T) {
	t.Parallel()
	values := []interface{}{nil, "s", "", "7", true, false, 0, -3, int8(-8), int64(math.MaxInt64), int64(math.MinInt64),
		uint(3), uint64(math.MaxInt64), uint64(math.MaxUint64), float32(2.5), float32(3), 1.0, -2.0, 0.5, 1e300,
		9007199254740892.0, -9007199254740892.0, math.NaN(), math.Inf(1), math.Inf(-1), []interface{}{1},
		map[string]interface{}{"a": 1}}
	for _, v := range values {
		args := map[string]interface{}{"k": v}
		type answer struct {
			s   string
			i   int64
			f   float64
			b   bool
			err []string
		}
		var g, w answer
		for _, key := range []string{"k", "missing"} {
			gj, wj := &gocraft.Job{Args: args}, &work.Job{Args: args}
			g.s, w.s = gj.ArgString(key), wj.ArgString(key)
			g.err, w.err = append(g.err, fmt.Sprint(gj.ArgError())), append(w.err, fmt.Sprint(wj.ArgError()))
			gj, wj = &gocraft.Job{Args: args}, &work.Job{Args: args}
			g.i, w.i = gj.ArgInt64(key), wj.ArgInt64(key)
			g.err, w.err = append(g.err, fmt.Sprint(gj.ArgError())), append(w.err, fmt.Sprint(wj.ArgError()))
			gj, wj = &gocraft.Job{Args: args}, &work.Job{Args: args}
			g.f, w.f = gj.ArgFloat64(key), wj.ArgFloat64(key)
			g.err, w.err = append(g.err, fmt.Sprint(gj.ArgError())), append(w.err, fmt.Sprint(wj.ArgError()))
			gj, wj = &gocraft.Job{Args: args}, &work.Job{Args: args}
			g.b, w.b = gj.ArgBool(key), wj.ArgBool(key)
			g.err, w.err = append(g.err, fmt.Sprint(gj.ArgError())), append(w.err, fmt.Sprint(wj.ArgError()))
		}
		if fmt.Sprint(g) != fmt.Sprint(w) {
			t.Errorf("args %T(%v):\n gocraft %+v\n work    %+v", v, v, g, w)
		}
	}
	// An error stays until the next one, in both.
	gj, wj := &gocraft.Job{Args: map[string]interface{}{"a": "x"}}, &work.Job{Args: map[string]interface{}{"a": "x"}}
	gj.ArgInt64("a")
	wj.ArgInt64("a")
	gj.ArgString("a")
	wj.ArgString("a")
	if fmt.Sprint(gj.ArgError()) != fmt.Sprint(wj.ArgError()) || wj.ArgError() == nil {
		t.Errorf("ArgError after a failed then a good read: gocraft %v, work %v", gj.ArgError(), wj.ArgError())
	}
	// Checkin outside a worker does nothing in both.
	if panics(func() { (&gocraft.Job{}).Checkin("x") }) || panics(func() { (&work.Job{}).Checkin("x") }) {
		t.Error("Checkin outside a worker panicked")
	}
}

// Pools of concurrency 0 heartbeat alike, and zero WorkerPools' Stop and Drain do nothing in both.
func TestSameEdgesOfWorkerPools(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 0, ns, pool)
	gp.Job("z", func(*gocraft.Job) error { return nil })
	wp := work.NewWorkerPool(workCtx{}, 0, ns, pool)
	wp.Job("z", func(*work.Job) error { return nil })
	gp.Start()
	defer gp.Stop()
	wp.Start()
	defer wp.Stop()
	var ids []string
	eventually(t, 10*time.Second, "both heartbeats", func() bool {
		ids = rStrings(t, pool, "SMEMBERS", ns+":worker_pools")
		return len(ids) == 2
	})
	sort.Strings(ids)
	var hbs []map[string]string
	added := 0
	for _, id := range ids {
		h := rStringMap(t, pool, "HGETALL", ns+":worker_pools:"+id)
		delete(h, "heartbeat_at")
		delete(h, "started_at")
		// The fields this library adds: its dead-pool timeout, whether it is idle, its lease epoch
		// (with epoch_seen), the hand-offs it has room for once it waits for some and, where /proc
		// tells, its process.
		if h["dead_after"] != "" && h["idle"] != "" && h["epoch"] == "0" {
			added++
		}
		delete(h, "dead_after")
		delete(h, "idle")
		delete(h, "epoch")
		delete(h, "epoch_seen")
		delete(h, "handoff_to")
		delete(h, "process")
		hbs = append(hbs, h)
	}
	if added != 1 {
		t.Errorf("%d heartbeats declare dead_after, idle and epoch 0, want 1 (work's)", added)
	}
	if !reflect.DeepEqual(hbs[0], hbs[1]) || hbs[0]["concurrency"] != "0" || hbs[0]["worker_ids"] != "" {
		t.Errorf("heartbeats of pools of concurrency 0 differ or are wrong: %v", hbs)
	}
	gp.Drain()
	wp.Drain()

	var gz gocraft.WorkerPool
	var wz work.WorkerPool
	if panics(gz.Stop) || panics(gz.Drain) || panics(wz.Stop) || panics(wz.Drain) {
		t.Error("Stop or Drain of a zero WorkerPool panicked")
	}
}
