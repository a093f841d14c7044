package work

// Hostile input: bytes and keys that other programs (or bugs, or attackers with write access to Redis)
// may leave in any structure of the layout. For each one the pool must keep running and process good
// jobs enqueued after it; the bad entry must end somewhere inspectable (the dead set with its reason
// and its original bytes in Job.Raw, or left where it is and visible to the Client) and never block a
// queue or a set; the lock counters must end at 0; and no Client method may panic.

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"reflect"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

type hstCtx struct{}

// hstBuffer collects a pool's log output.
type hstBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (h *hstBuffer) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.Write(p)
}

func (h *hstBuffer) String() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.b.String()
}

// hstRig is one hostile test's namespace, pool, enqueuer, client and worker pool.
type hstRig struct {
	t      *testing.T
	pool   *redis.Pool
	ns     string
	ks     rdb.Keyspace
	log    *hstBuffer
	enq    *Enqueuer
	client *Client
	names  []string // job names the worker pool serves
	wp     *WorkerPool

	mu   sync.Mutex
	runs map[string]int  // job ID -> handler runs
	seen map[string]*Job // job ID -> the job as the handler saw it

	planted map[string]bool // lock_info fields the test wrote itself (left alone by finalChecks)

	gate    chan struct{} // a job whose args say "gate": true waits for it to close
	running chan string   // gated jobs report their ID here when they start
}

func newHstRig(t *testing.T) *hstRig {
	t.Helper()
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	return &hstRig{t: t, pool: pool, ns: ns, ks: rdb.NewKeyspace(ns), log: &hstBuffer{},
		enq: NewEnqueuer(ns, pool), client: NewClient(ns, pool),
		runs: map[string]int{}, seen: map[string]*Job{},
		gate: make(chan struct{}), running: make(chan string, 16)}
}

// start starts a worker pool serving names (1 s heartbeats, 3 s dead-pool timeout). A job whose args
// say "fail": true fails.
func (r *hstRig) start(opts JobOptions, names ...string) {
	r.t.Helper()
	r.names = names
	wp := NewWorkerPoolWithOptions(hstCtx{}, 4, r.ns, r.pool, WorkerPoolOptions{
		Logger:            slog.New(slog.NewTextHandler(r.log, &slog.HandlerOptions{Level: slog.LevelDebug})),
		HeartbeatInterval: time.Second,
		DeadPoolTimeout:   3 * time.Second,
	})
	for _, name := range names {
		wp.JobWithOptions(name, opts, func(j *Job) error {
			r.mu.Lock()
			r.runs[j.ID]++
			r.seen[j.ID] = j
			r.mu.Unlock()
			if j.Args["gate"] == true {
				r.running <- j.ID
				<-r.gate
			}
			if j.Args["fail"] == true {
				return errors.New("told to fail")
			}
			return nil
		})
	}
	wp.Start()
	r.wp = wp
	r.t.Cleanup(func() { r.stop() })
}

// stop stops the worker pool (once).
func (r *hstRig) stop() {
	r.t.Helper()
	if r.wp == nil {
		return
	}
	wp := r.wp
	r.wp = nil
	done := make(chan struct{})
	go func() { defer close(done); wp.Stop() }()
	hstWait(r.t, "Stop", done)
}

// hstWait waits until done is closed. A call that has not returned after 30s is noted in the log and
// waited for: on a loaded machine a call that reads hostile payloads can take that long, and one that
// never returns is ended by go test's -timeout, whose goroutine dump shows where it hangs.
func hstWait(t testing.TB, what string, done <-chan struct{}) {
	t.Helper()
	select {
	case <-done:
		return
	case <-time.After(30 * time.Second):
		t.Logf("%s has not returned after 30s; waiting for it", what)
	}
	<-done
}

func (r *hstRig) ran(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.runs[id]
}

func (r *hstRig) waitRan(id string, within time.Duration) bool {
	deadline := time.Now().Add(within)
	for r.ran(id) == 0 {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
	return true
}

func (r *hstRig) do(cmd string, args ...interface{}) (interface{}, error) {
	c := r.pool.Get()
	defer c.Close()
	return c.Do(cmd, args...)
}

func (r *hstRig) must(cmd string, args ...interface{}) interface{} {
	r.t.Helper()
	v, err := r.do(cmd, args...)
	if err != nil {
		r.t.Fatalf("%s %q: %v", cmd, hstShort(args), err)
	}
	return v
}

// hstShort renders command arguments for a message, cutting long ones.
func hstShort(args []interface{}) string {
	var parts []string
	for _, a := range args {
		s := fmt.Sprint(a)
		if b, ok := a.([]byte); ok {
			s = string(b)
		}
		if len(s) > 60 {
			s = s[:60] + fmt.Sprintf("...(%d bytes)", len(s))
		}
		parts = append(parts, strconv.Quote(s))
	}
	return strings.Join(parts, " ")
}

// hstRunWithin bounds the wait for a job that must run. It only ends a hung test: a wait returns as
// soon as the job ran, and a loaded machine with the race detector runs these tests several times
// slower than an idle one.
const hstRunWithin = time.Minute

// good enqueues, for every job name of the pool, one job now and one due at once through the
// scheduled set, and fails the test unless every one runs.
func (r *hstRig) good(what string) {
	r.t.Helper()
	type pending struct{ name, id, how string }
	var ps []pending
	for _, name := range r.names {
		j, err := r.enq.Enqueue(name, Q{"good": what})
		if err != nil {
			r.t.Errorf("%s: Enqueue(%q) of a good job: %v", what, name, err)
		} else {
			ps = append(ps, pending{name, j.ID, "Enqueue"})
		}
		sj, err := r.enq.EnqueueIn(name, 0, Q{"good": what, "scheduled": true})
		if err != nil {
			r.t.Errorf("%s: EnqueueIn(%q) of a good job: %v", what, name, err)
		} else {
			ps = append(ps, pending{name, sj.ID, "EnqueueIn"})
		}
	}
	deadline := time.Now().Add(hstRunWithin)
	for _, p := range ps {
		if !r.waitRan(p.id, time.Until(deadline)) {
			r.t.Errorf("%s: a good job enqueued afterwards (%s %q) did not run", what, p.how, p.name)
		}
	}
}

// settle waits until the pool has nothing in flight (so what is still queued stays queued).
func (r *hstRig) settle() {
	r.t.Helper()
	if r.wp == nil {
		return
	}
	done := make(chan struct{})
	go func() { defer close(done); r.wp.Drain() }()
	select {
	case <-done:
	case <-time.After(2 * time.Minute): // ends a Drain that would never return, however slow the machine
		r.t.Errorf("Drain did not return within 2 minutes")
		r.stop()
		<-done
	}
}

// deadRecords returns the members of the dead set, decoded leniently.
func (r *hstRig) deadRecords() []*Job {
	r.t.Helper()
	members, err := redis.ByteSlices(r.do("ZRANGE", r.ks.Dead(), 0, -1))
	if err != nil {
		r.t.Fatalf("ZRANGE dead: %v", err)
	}
	out := make([]*Job, 0, len(members))
	for _, m := range members {
		var j Job
		if err := json.Unmarshal(m, &j); err != nil {
			j = Job{Raw: m, LastErr: "(dead member is not JSON)"}
		}
		out = append(out, &j)
	}
	return out
}

// deadWithRaw returns the dead record holding exactly raw, or nil.
func (r *hstRig) deadWithRaw(raw []byte) *Job {
	for _, j := range r.deadRecords() {
		if bytes.Equal(j.Raw, raw) {
			return j
		}
	}
	return nil
}

// finalChecks stops the pool and checks what must hold afterwards: no in-progress list left (unless
// allowed), every lock counter of names at 0 and no lock_info entry.
func (r *hstRig) finalChecks(names ...string) {
	r.t.Helper()
	r.stop()
	keys, err := redis.Strings(r.do("KEYS", r.ks.JobsPrefix()+"*:inprogress"))
	if err != nil {
		r.t.Errorf("KEYS: %v", err)
	}
	for _, k := range keys {
		n, _ := redis.Strings(r.do("LRANGE", k, 0, 5))
		r.t.Errorf("in-progress list %s left behind after Stop, holding %q", k, n)
	}
	for _, name := range append(append([]string{}, r.names...), names...) {
		v, err := redis.String(r.do("GET", r.ks.Lock(name)))
		if err == nil && v != "0" {
			r.t.Errorf("lock of %q ends at %q, want 0", name, v)
		} else if err != nil && err != redis.ErrNil {
			r.t.Errorf("lock of %q: %v", name, err)
		}
		if h, err := redis.StringMap(r.do("HGETALL", r.ks.LockInfo(name))); err == nil {
			for f := range r.planted {
				delete(h, f)
			}
			if len(h) > 0 {
				r.t.Errorf("lock_info of %q ends as %v, want empty", name, h)
			}
		}
	}
}

// clientSweep calls every exported method of Client with arguments taken from what is in the
// namespace (job IDs, scores, names) and with edge values, and fails the test on a panic or a call that
// does not return within 30 s. Methods that pause queues are left out (they would stop the pool on
// purpose); with mutate false, so is every method that changes the namespace.
func (r *hstRig) clientSweep(mutate bool) {
	r.t.Helper()
	ids := []string{"", "x"}
	scores := []int64{0, -1, math.MaxInt64, math.MinInt64}
	names := []string{"", "nobody"}
	for _, set := range []string{r.ks.Scheduled(), r.ks.Retry(), r.ks.Dead()} {
		vals, _ := redis.Values(r.do("ZRANGE", set, 0, 20, "WITHSCORES"))
		for i := 0; i+1 < len(vals); i += 2 {
			m, _ := redis.Bytes(vals[i], nil)
			j, _ := decodeMember(m)
			ids = append(ids, j.ID)
			if sc, err := rdb.ParseScore(vals[i+1]); err == nil {
				scores = append(scores, sc)
			}
		}
	}
	known, _ := redis.Strings(r.do("SMEMBERS", r.ks.KnownJobs()))
	names = append(names, known...)
	strs := append(append([]string{}, ids...), names...)
	strs = append(strs, "queued", "scheduled", "retry", "dead", "in_progress", "*")
	times := []time.Time{{}, time.Now().Add(-time.Hour), time.Now(), time.Unix(1<<40, 0)}
	uints := []uint64{1, 0, 2, math.MaxUint32, math.MaxUint64}

	readOnly := func(name string) bool {
		for _, p := range []string{"Worker", "Queue", "Scheduled", "Retry", "Dead", "Find", "Search", "Summary", "Namespace", "JobStats"} {
			if strings.HasPrefix(name, p) && !strings.HasPrefix(name, "RetryDead") && !strings.HasPrefix(name, "DeadJobsTrimmed") {
				return true
			}
		}
		return false
	}
	cv := reflect.ValueOf(r.client)
	ct := cv.Type()
	for i := 0; i < ct.NumMethod(); i++ {
		m := ct.Method(i)
		if strings.HasPrefix(m.Name, "Pause") || (!mutate && !readOnly(m.Name)) {
			continue
		}
		mt := m.Type // receiver first
		combos := 6
		for c := 0; c < combos; c++ {
			args := make([]reflect.Value, 0, mt.NumIn()-1)
			for p := 1; p < mt.NumIn(); p++ {
				pt := mt.In(p)
				k := c + p // vary each parameter differently
				switch {
				case pt == reflect.TypeOf((*context.Context)(nil)).Elem():
					// A call that waits (WaitJob) gives up soon.
					ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
					defer cancel()
					args = append(args, reflect.ValueOf(ctx))
				case pt == reflect.TypeOf(time.Time{}):
					args = append(args, reflect.ValueOf(times[k%len(times)]))
				case pt.Kind() == reflect.String:
					args = append(args, reflect.ValueOf(strs[k%len(strs)]).Convert(pt))
				case pt.Kind() == reflect.Int64 || pt.Kind() == reflect.Int:
					args = append(args, reflect.ValueOf(scores[k%len(scores)]).Convert(pt))
				case pt.Kind() == reflect.Uint || pt.Kind() == reflect.Uint64 || pt.Kind() == reflect.Uint32:
					u := uints[k%len(uints)]
					if pt.Kind() == reflect.Uint32 {
						u = uint64(uint32(u))
					}
					args = append(args, reflect.ValueOf(u).Convert(pt))
				default:
					args = append(args, reflect.Zero(pt))
				}
			}
			r.callClient(m.Name, cv.Method(i), args)
		}
	}
}

func (r *hstRig) callClient(name string, fn reflect.Value, args []reflect.Value) {
	r.t.Helper()
	done := make(chan struct{})
	var panicked interface{}
	var stack []byte
	// Described before the call: formatting a context while the call uses it would race.
	what := fmt.Sprintf("Client.%s%v", name, hstArgs(args))
	go func() {
		defer close(done)
		defer func() {
			if p := recover(); p != nil {
				panicked, stack = p, debug.Stack()
			}
		}()
		fn.Call(args)
	}()
	hstWait(r.t, what, done)
	if panicked != nil {
		r.t.Errorf("%s panicked: %v\n%s", what, panicked, stack)
	}
}

func hstArgs(args []reflect.Value) string {
	var s []string
	for _, a := range args {
		if _, ok := a.Interface().(context.Context); ok {
			s = append(s, "ctx") // its internals change under a running call
			continue
		}
		s = append(s, fmt.Sprintf("%#v", a.Interface()))
	}
	return "(" + strings.Join(s, ", ") + ")"
}

// hstPayload is a payload pushed by hand, with what must become of it.
type hstPayload struct {
	label string
	raw   []byte
	want  string // "run": the handler runs it; "dead": dead-lettered with its bytes; "either": one of those
	id    string // for "run": the ID the handler must see
}

func hstJSON(format string, args ...interface{}) []byte { return []byte(fmt.Sprintf(format, args...)) }

// hstPayloads is the catalogue of payloads for a job named name.
func hstPayloads(name string) []hstPayload {
	big := strings.Repeat("x", 10<<20)
	var wide bytes.Buffer
	wide.WriteString(`{"name":"` + name + `","id":"wide-args","t":1,"args":{`)
	for i := 0; i < 100000; i++ {
		if i > 0 {
			wide.WriteByte(',')
		}
		fmt.Fprintf(&wide, `"k%d":%d`, i, i)
	}
	wide.WriteString(`}}`)
	deep := strings.Repeat(`{"a":`, 20000) + "1" + strings.Repeat("}", 20000)
	return []hstPayload{
		{label: "truncated JSON", raw: hstJSON(`{"name":%q,"id":"trunc",`, name), want: "dead"},
		{label: "not JSON", raw: []byte("not json at all"), want: "dead"},
		{label: "empty", raw: []byte(""), want: "dead"},
		{label: "JSON null", raw: []byte("null"), want: "dead"},
		{label: "JSON array", raw: []byte(`[1,2,3]`), want: "dead"},
		{label: "JSON string", raw: []byte(`"job"`), want: "dead"},
		{label: "empty object", raw: []byte(`{}`), want: "dead"},
		{label: "args a string", raw: hstJSON(`{"name":%q,"id":"args-string","t":1,"args":"a string"}`, name), want: "dead"},
		{label: "args an array", raw: hstJSON(`{"name":%q,"id":"args-array","t":1,"args":[1,2]}`, name), want: "dead"},
		{label: "id a number", raw: hstJSON(`{"name":%q,"id":12345,"t":1,"args":{}}`, name), want: "dead"},
		{label: "name missing", raw: []byte(`{"id":"no-name","t":1,"args":{}}`), want: "dead"},
		{label: "name a number", raw: []byte(`{"name":7,"id":"name-number","t":1,"args":{}}`), want: "dead"},
		{label: "t a string", raw: hstJSON(`{"name":%q,"id":"t-string","t":"yesterday","args":{}}`, name), want: "dead"},
		{label: "fails a string", raw: hstJSON(`{"name":%q,"id":"fails-string","t":1,"fails":"many","args":{}}`, name), want: "dead"},
		{label: "unique a string", raw: hstJSON(`{"name":%q,"id":"unique-string","t":1,"unique":"yes","args":{}}`, name), want: "dead"},
		{label: "another job's name", raw: []byte(`{"name":"nobody-serves-this","id":"other-name","t":1,"args":{}}`), want: "dead"},
		{label: "trailing garbage", raw: hstJSON(`{"name":%q,"id":"trailing","t":1,"args":{}} garbage`, name), want: "dead"},
		{label: "two objects", raw: hstJSON(`{"name":%q,"id":"two-a","t":1}{"name":%q,"id":"two-b","t":1}`, name, name), want: "dead"},
		{label: "non-UTF-8 bytes outside strings", raw: []byte("\xff\xfe\xfd{\"name\":\"" + name + "\"}"), want: "dead"},
		{label: "raw NUL bytes", raw: []byte("\x00{\"name\":\"" + name + "\",\"id\":\"nul-raw\"}\x00"), want: "dead"},
		{label: "raw NUL inside a string literal", raw: []byte(`{"name":"` + name + `","id":"nul-lit","t":1,"args":{"s":"a` + "\x00" + `b"}}`), want: "dead"},
		{label: "nesting 20000 deep", raw: hstJSON(`{"name":%q,"id":"deep","t":1,"args":{"d":%s}}`, name, deep), want: "dead"},
		{label: "10 MB of garbage", raw: []byte("{" + big), want: "dead"},
		{label: "t beyond int64", raw: hstJSON(`{"name":%q,"id":"t-huge","t":1e300,"args":{}}`, name), want: "dead"},
		{label: "t a fraction", raw: hstJSON(`{"name":%q,"id":"t-frac","t":1700000000.5,"args":{}}`, name), want: "either"},

		{label: "non-UTF-8 bytes inside a string", raw: []byte(`{"name":"` + name + `","id":"latin1","t":1,"args":{"s":"caf` + "\xe9" + `"}}`), want: "run", id: "latin1"},
		{label: "escaped NUL in args", raw: hstJSON(`{"name":%q,"id":"nul-esc","t":1,"args":{"s":"a\u0000b"}}`, name), want: "run", id: "nul-esc"},
		{label: "10 MB argument", raw: hstJSON(`{"name":%q,"id":"big-valid","t":1,"args":{"blob":%q}}`, name, big), want: "run", id: "big-valid"},
		{label: "100k argument keys", raw: wide.Bytes(), want: "run", id: "wide-args"},
		{label: "t = -1", raw: hstJSON(`{"name":%q,"id":"t-neg","t":-1,"args":{}}`, name), want: "run", id: "t-neg"},
		{label: "t = 1e18", raw: hstJSON(`{"name":%q,"id":"t-far","t":1000000000000000000,"args":{}}`, name), want: "run", id: "t-far"},
		{label: "fails negative", raw: hstJSON(`{"name":%q,"id":"fails-neg","t":1,"fails":-5,"failed_at":-1,"args":{}}`, name), want: "run", id: "fails-neg"},
		{label: "args null", raw: hstJSON(`{"name":%q,"id":"args-null","t":1,"args":null}`, name), want: "run", id: "args-null"},
		{label: "unknown fields", raw: hstJSON(`{"name":%q,"id":"extra","t":1,"args":{},"priority":"high","x":[1,{}]}`, name), want: "run", id: "extra"},
		{label: "id with odd characters", raw: hstJSON(`{"name":%q,"id":"a:b{c} d\n*?[","t":1,"args":{}}`, name), want: "run", id: "a:b{c} d\n*?["},
		{label: "empty id", raw: hstJSON(`{"name":%q,"id":"","t":2,"args":{"empty-id":true}}`, name), want: "run", id: ""},
		{label: "unique_key of another job name", raw: hstJSON(`{"name":%q,"id":"uk-other","t":1,"unique":true,"unique_key":"nowhere","args":{}}`, name), want: "run", id: "uk-other"},
	}
}

// TestHostileQueuePayloads pushes every payload of the catalogue onto a queue (before the pool starts,
// so the Client sees them first), then checks where each one ended.
func TestHostileQueuePayloads(t *testing.T) {
	r := newHstRig(t)
	const name = "q"
	payloads := hstPayloads(name)
	r.must("SADD", r.ks.KnownJobs(), name)
	for _, p := range payloads {
		r.must("LPUSH", r.ks.Jobs(name), p.raw)
	}
	// A queue no pool serves, and one no one registered: left where they are.
	r.must("SADD", r.ks.KnownJobs(), "nobody-serves-this")
	r.must("LPUSH", r.ks.Jobs("nobody-serves-this"), `{"name":"nobody-serves-this","id":"orphan-queue","t":1,"args":{}}`)
	r.must("LPUSH", r.ks.Jobs("unregistered"), `{"name":"unregistered","id":"unregistered","t":1,"args":{}}`)

	// The Client reads a queue whose oldest payloads are garbage.
	qs, err := r.client.Queues()
	if err != nil {
		t.Errorf("Queues: %v", err)
	}
	for _, q := range qs {
		if q.JobName == name && q.Count != int64(len(payloads)) {
			t.Errorf("Queues: %q count %d, want %d", name, q.Count, len(payloads))
		}
	}
	r.clientSweep(false)

	r.start(JobOptions{MaxConcurrency: 2}, name)
	deadline := time.Now().Add(hstRunWithin)
	for _, p := range payloads {
		switch p.want {
		case "run":
			if !r.waitRan(p.id, time.Until(deadline)) {
				t.Errorf("%s: the job did not run (payload %q)", p.label, hstShort([]interface{}{p.raw}))
			}
		}
	}
	r.good("after bad payloads")
	r.settle()
	if n, _ := redis.Int(r.do("LLEN", r.ks.Jobs(name))); n != 0 {
		t.Errorf("queue %q still holds %d payloads: a bad one blocks it", name, n)
	}
	deadByRaw := map[string]*Job{}
	for _, j := range r.deadRecords() {
		deadByRaw[string(j.Raw)] = j
	}
	for _, p := range payloads {
		d := deadByRaw[string(p.raw)]
		if len(p.raw) == 0 {
			d = r.deadWithRaw(p.raw) // an empty payload: Raw is empty in the record too
		}
		switch p.want {
		case "dead":
			if d == nil {
				t.Errorf("%s: not in the dead set with its original bytes (payload %s)", p.label, hstShort([]interface{}{p.raw}))
				continue
			}
			if d.LastErr == "" || d.Name != name {
				t.Errorf("%s: dead record has err %q and name %q; want a reason and the queue's name", p.label, d.LastErr, d.Name)
			}
		case "either":
			var id string
			var j struct {
				ID string `json:"id"`
			}
			json.Unmarshal(p.raw, &j)
			id = j.ID
			switch {
			case d != nil:
				t.Logf("%s: dead-lettered: %s", p.label, d.LastErr)
			case r.ran(id) > 0:
				t.Logf("%s: ran", p.label)
			default:
				t.Errorf("%s: neither ran nor dead-lettered", p.label)
			}
		case "run":
			if d != nil {
				t.Errorf("%s: dead-lettered (%s) although it is a valid job", p.label, d.LastErr)
			}
		}
	}
	// Checks on what the handler saw.
	r.mu.Lock()
	if j := r.seen["big-valid"]; j != nil && len(j.ArgString("blob")) != 10<<20 {
		t.Errorf("10 MB argument: the handler saw %d bytes", len(j.ArgString("blob")))
	}
	if j := r.seen["wide-args"]; j != nil && len(j.Args) != 100000 {
		t.Errorf("100k argument keys: the handler saw %d keys", len(j.Args))
	}
	if j := r.seen["nul-esc"]; j != nil && j.ArgString("s") != "a\x00b" {
		t.Errorf("escaped NUL: the handler saw %q", j.ArgString("s"))
	}
	for id, n := range r.runs {
		if n != 1 {
			t.Errorf("job %q ran %d times", id, n)
		}
	}
	r.mu.Unlock()
	for _, q := range []string{"nobody-serves-this", "unregistered"} {
		if n, _ := redis.Int(r.do("LLEN", r.ks.Jobs(q))); n != 1 {
			t.Errorf("queue %q that no pool serves holds %d jobs, want its 1 left untouched", q, n)
		}
	}
	qs, err = r.client.Queues()
	if err != nil {
		t.Errorf("Queues: %v", err)
	}
	listed := false
	for _, q := range qs {
		listed = listed || (q.JobName == "nobody-serves-this" && q.Count == 1)
	}
	if !listed {
		t.Errorf("Queues does not report the job waiting in a queue no pool serves: %+v", qs)
	}
	r.clientSweep(true)
	r.finalChecks()
}

// TestHostileScheduledAndRetryMembers puts payloads of the catalogue, and good jobs, in the scheduled
// and retry sets under ordinary and absurd scores.
func TestHostileScheduledAndRetryMembers(t *testing.T) {
	for _, set := range []string{"scheduled", "retry"} {
		set := set
		t.Run(set, func(t *testing.T) {
			r := newHstRig(t)
			const name = "s"
			key := r.ks.Scheduled()
			if set == "retry" {
				key = r.ks.Retry()
			}
			now := time.Now().Unix()
			type member struct {
				label string
				raw   []byte
				score string
				want  string // "dead", "run", "stay" (not due), "moved" (to the queue of its name)
				id    string
			}
			var ms []member
			for i, p := range hstPayloads(name) {
				if p.want == "either" || strings.HasPrefix(p.label, "10 MB") || p.label == "100k argument keys" {
					continue // the queue test covers those; keep the sets quick
				}
				score := []string{"-1", strconv.FormatInt(now-5, 10), "-inf", "0"}[i%4]
				want := "dead"
				if p.want == "run" {
					want = "run"
				}
				if p.label == "another job's name" {
					want = "moved" // a due job of a name this pool does not serve goes to its own queue
				}
				ms = append(ms, member{p.label, p.raw, score, want, p.id})
			}
			for _, sc := range []string{"+inf", "1e18", strconv.FormatInt(now+3600, 10)} {
				ms = append(ms, member{"good job scored " + sc, hstJSON(`{"name":%q,"id":"later-%s","t":1,"args":{}}`, name, sc), sc, "stay", ""})
			}
			ms = append(ms, member{"bad job scored +inf", []byte("garbage never due"), "+inf", "stay", ""})
			ms = append(ms, member{"good job scored 1.5 (fraction)", hstJSON(`{"name":%q,"id":"frac-score","t":1,"args":{}}`, name), "1.5", "run", "frac-score"})
			ms = append(ms, member{"retried job with history", hstJSON(`{"name":%q,"id":"history","t":1,"fails":2,"err":"boom","failed_at":5,"args":{}}`, name), "1", "run", "history"})
			for _, m := range ms {
				r.must("ZADD", key, m.score, m.raw)
			}
			r.clientSweep(false)
			r.start(JobOptions{MaxFails: 10}, name)
			for _, m := range ms {
				if m.want == "run" && !r.waitRan(m.id, hstRunWithin) {
					t.Errorf("%s (score %s): did not run", m.label, m.score)
				}
			}
			r.good("after bad " + set + " members")
			r.settle()
			for _, m := range ms {
				score, err := r.do("ZSCORE", key, m.raw)
				inSet := err == nil && score != nil
				switch m.want {
				case "stay":
					if !inSet {
						t.Errorf("%s: not due, but gone from the %s set", m.label, set)
					}
				case "dead":
					if inSet {
						t.Errorf("%s (score %s): still in the %s set", m.label, m.score, set)
					} else if d := r.deadWithRaw(m.raw); d == nil {
						t.Errorf("%s (score %s): gone from the %s set, not in the dead set with its bytes", m.label, m.score, set)
					}
				case "moved":
					if inSet {
						t.Errorf("%s: still in the %s set", m.label, set)
					}
					if n, _ := redis.Int(r.do("LLEN", r.ks.Jobs("nobody-serves-this"))); n != 1 {
						t.Errorf("%s: its queue holds %d jobs, want 1", m.label, n)
					}
				case "run":
					if inSet {
						t.Errorf("%s: still in the %s set after it ran", m.label, set)
					}
				}
			}
			r.mu.Lock()
			if j := r.seen["history"]; j != nil && (j.Fails != 2 || j.LastErr != "boom") {
				t.Errorf("retried job: the handler saw fails %d err %q", j.Fails, j.LastErr)
			}
			r.mu.Unlock()
			// The Client lists the absurd scores without panicking.
			if set == "scheduled" {
				jobs, total, err := r.client.ScheduledJobs(1)
				if err != nil || total < 4 || len(jobs) == 0 {
					t.Errorf("ScheduledJobs: %d jobs, total %d, err %v", len(jobs), total, err)
				}
			} else {
				jobs, total, err := r.client.RetryJobs(1)
				if err != nil || total < 4 || len(jobs) == 0 {
					t.Errorf("RetryJobs: %d jobs, total %d, err %v", len(jobs), total, err)
				}
			}
			r.clientSweep(true)
			r.finalChecks("nobody-serves-this")
		})
	}
}

// TestHostileDeadMembers fills the dead set with members the library never writes and uses every
// Client method on it. With "+inf" one member is scored +inf (another program's "never expires").
func TestHostileDeadMembers(t *testing.T) {
	for _, withInf := range []bool{false, true} {
		withInf := withInf
		t.Run(map[bool]string{false: "ordinary_scores", true: "one_member_scored_+inf"}[withInf], func(t *testing.T) {
			r := newHstRig(t)
			const name = "d"
			r.start(JobOptions{}, name)
			now := time.Now().Unix()
			job := func(id string) string { return fmt.Sprintf(`{"name":"d","id":%q,"t":1,"args":{}}`, id) }
			good := hstJSON(`{"name":%q,"id":"dead-good","t":1,"fails":4,"err":"x","failed_at":%d,"args":{"n":12345678901234567890}}`, name, now)
			members := map[string]string{ // member -> score
				string(good): strconv.FormatInt(now, 10),
				"garbage":    "1",
				`{"name":"d","id":"dead-args-string","t":1,"args":"s"}`:                                                 "2",
				`{"name":"d","id":"dead-raw-bad","t":1,"raw_payload":"not base64!"}`:                                    "3",
				`{"id":"dead-no-name","t":1,"raw_payload":"` + base64.StdEncoding.EncodeToString([]byte("orig")) + `"}`: "4",
				job("dead-neg"):       "-1",
				job("dead-far"):       "1e18",
				job("dead-minus-inf"): "-inf",
				`{"name":"nobody-serves-this","id":"dead-other","t":1,"args":{}}`: "5",
			}
			retried := []string{"dead-neg", "dead-far", "dead-minus-inf"}
			if withInf {
				members[job("dead-inf")] = "+inf"
				retried = append(retried, "dead-inf")
			}
			for m, sc := range members {
				r.must("ZADD", r.ks.Dead(), sc, m)
			}
			jobs, total, err := r.client.DeadJobs(1)
			if err != nil || total != int64(len(members)) || len(jobs) != len(members) {
				t.Errorf("DeadJobs: %d jobs, total %d, err %v; want %d", len(jobs), total, err, len(members))
			}
			for _, j := range jobs {
				if j.ID == "dead-good" {
					if err := r.client.RetryDeadJob(j.DiedAt, j.ID); err != nil {
						t.Errorf("RetryDeadJob of a good dead job: %v", err)
					}
				}
			}
			if !r.waitRan("dead-good", hstRunWithin) {
				t.Errorf("a retried dead job did not run")
			} else {
				r.mu.Lock()
				j := r.seen["dead-good"]
				if n, ok := j.Args["n"].(json.Number); !ok || n.String() != "12345678901234567890" {
					t.Errorf("a retried dead job lost the exact value of its big integer: %#v", j.Args["n"])
				}
				r.mu.Unlock()
			}
			// RetryAllDeadJobs must get to every decodable member whatever the scores.
			if err := r.client.RetryAllDeadJobs(); err != nil {
				t.Errorf("RetryAllDeadJobs: %v", err)
			}
			for _, id := range retried {
				if !r.waitRan(id, hstRunWithin) {
					t.Errorf("RetryAllDeadJobs did not retry the decodable dead job %q (score %s)", id, members[job(id)])
				}
			}
			if n, _ := redis.Int(r.do("LLEN", r.ks.Jobs("nobody-serves-this"))); n != 1 {
				t.Errorf("RetryAllDeadJobs did not move the dead job of a name no pool serves to its queue")
			}
			left, _, err := r.client.DeadJobs(1)
			if err != nil {
				t.Errorf("DeadJobs: %v", err)
			}
			for _, j := range left {
				t.Logf("left in the dead set after RetryAllDeadJobs: died_at %d id %q err %q raw %q", j.DiedAt, j.ID, j.LastErr, j.Raw)
			}
			r.good("after a hostile dead set")
			r.clientSweep(true)
			if err := r.client.DeleteAllDeadJobs(); err != nil {
				t.Errorf("DeleteAllDeadJobs: %v", err)
			}
			if n, _ := redis.Int(r.do("ZCARD", r.ks.Dead())); n != 0 {
				t.Errorf("DeleteAllDeadJobs left %d members", n)
			}
			r.finalChecks("nobody-serves-this")
		})
	}
}

// TestHostileUniqueLocks puts garbage in unique locks and crafted unique keys in payloads.
func TestHostileUniqueLocks(t *testing.T) {
	r := newHstRig(t)
	const name = "u"
	// A ByKey lock holding garbage for a job that is queued: the job runs with its own args.
	key, _ := r.ks.Unique(name, map[string]interface{}{"k": 1})
	payload := hstJSON(`{"name":%q,"id":"bykey-garbage","t":1,"args":{"own":true},"unique":true,"unique_key":%q}`, name, key)
	r.must("SET", key, "garbage that is not a job")
	r.must("LPUSH", r.ks.Jobs(name), payload)
	// A lock holding another job's payload.
	key2, _ := r.ks.Unique(name, map[string]interface{}{"k": 2})
	r.must("SET", key2, `{"name":"other","id":"x","t":1,"args":{"stolen":true}}`)
	r.must("LPUSH", r.ks.Jobs(name), hstJSON(`{"name":%q,"id":"bykey-other","t":1,"args":{"own":true},"unique":true,"unique_key":%q}`, name, key2))
	// A lock of the wrong type (a list where a string belongs).
	key3, _ := r.ks.Unique(name, map[string]interface{}{"k": 3})
	r.must("RPUSH", key3, "a", "b")
	r.must("LPUSH", r.ks.Jobs(name), hstJSON(`{"name":%q,"id":"bykey-list","t":1,"args":{"k":3},"unique":true,"unique_key":%q}`, name, key3))

	// A payload whose unique_key names a key that is not a unique lock: a queue of other jobs (inside
	// the namespace) and a key of another application (outside it). Starting the job must not delete
	// either.
	victimQueue := r.ks.Jobs("victim")
	for i := 0; i < 3; i++ {
		r.must("LPUSH", victimQueue, fmt.Sprintf(`{"name":"victim","id":"victim-%d","t":1,"args":{}}`, i))
	}
	outside := r.ns + "-other-app-data"
	r.must("SET", outside, "precious")
	t.Cleanup(func() { r.do("DEL", outside) })
	r.must("LPUSH", r.ks.Jobs(name), hstJSON(`{"name":%q,"id":"uk-queue","t":1,"args":{},"unique":true,"unique_key":%q}`, name, victimQueue))
	r.must("LPUSH", r.ks.Jobs(name), hstJSON(`{"name":%q,"id":"uk-outside","t":1,"args":{},"unique":true,"unique_key":%q}`, name, outside))

	r.start(JobOptions{}, name)
	for _, id := range []string{"bykey-garbage", "bykey-other", "bykey-list", "uk-queue", "uk-outside"} {
		if !r.waitRan(id, hstRunWithin) {
			t.Errorf("unique job %q did not run", id)
		}
	}
	r.mu.Lock()
	for _, id := range []string{"bykey-garbage", "bykey-other"} {
		if j := r.seen[id]; j != nil && (j.Args["own"] != true || j.Args["stolen"] != nil) {
			t.Errorf("%s: the handler saw args %v, want its own", id, j.Args)
		}
	}
	r.mu.Unlock()
	if n, _ := redis.Int(r.do("LLEN", victimQueue)); n != 3 {
		t.Errorf("a payload whose unique_key names the queue %q: starting it left %d of the 3 jobs in that queue", victimQueue, n)
	}
	if v, _ := redis.String(r.do("GET", outside)); v != "precious" {
		t.Errorf("a payload whose unique_key names %q (outside the namespace): starting it deleted that key", outside)
	}
	// Deleting a scheduled job frees its unique lock: only a unique lock, never the key a crafted
	// unique_key names.
	victim2 := r.ks.Jobs("victim2")
	r.must("LPUSH", victim2, `{"name":"victim2","id":"victim2-0","t":1,"args":{}}`)
	r.must("ZADD", r.ks.Scheduled(), 4102444800, hstJSON(`{"name":%q,"id":"sched-uk-queue","t":1,"args":{},"unique":true,"unique_key":%q}`, name, victim2))
	if err := r.client.DeleteScheduledJob(4102444800, "sched-uk-queue"); err != nil {
		t.Errorf("DeleteScheduledJob: %v", err)
	}
	if n, _ := redis.Int(r.do("LLEN", victim2)); n != 1 {
		t.Errorf("DeleteScheduledJob of a job whose unique_key names the queue %q deleted that queue and its job", victim2)
	}
	// Unique enqueues next to the broken locks return data or an error, never panic.
	if _, err := r.enq.EnqueueUnique(name, map[string]interface{}{"k": 3}); err != nil {
		t.Logf("EnqueueUnique next to a lock of the wrong type: %v", err)
	}
	if _, err := r.enq.EnqueueUniqueByKey(name, Q{"a": 1}, map[string]interface{}{"k": 1}); err != nil {
		t.Logf("EnqueueUniqueByKey next to a garbage lock: %v", err)
	}
	r.good("after broken unique locks")
	r.clientSweep(true)
	r.finalChecks()
}
