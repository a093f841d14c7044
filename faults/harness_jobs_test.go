package faults

// The jobs side of the fault scenarios' machinery (harness_test.go has the processes): the jobs
// and the load generator, looking at Redis, and the final accounting.

import (
	"encoding/json"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// ---------------------------------------------------------------------------------------------------
// the jobs

// Job names served by the worker program.
var jobNames = []string{"fa", "fb", "fc"}

type enqKind int

const (
	kindEnqueue enqKind = iota
	kindBatch
	kindIn
	kindUnique
	kindUniqueIn
	kindByKey
	kindByKeyIn
)

// specKeyRE matches a spec's key, quoted as in a job's JSON (planJobs makes the keys).
var specKeyRE = regexp.MustCompile(`"j[0-9]{7}"`)

// jobSpec is one job of a scenario: its tracking key (args "k", unique across the run), its name,
// how it is enqueued, how long it works and whether it fails.
type jobSpec struct {
	k    string
	name string
	kind enqKind
	in   int64  // seconds ahead, scheduled kinds
	ms   int    // handler work
	fail string // "", "first" or "always"
}

func (s *jobSpec) args() map[string]interface{} {
	a := map[string]interface{}{"k": s.k, "ms": s.ms}
	if s.fail != "" {
		a["fail"] = s.fail
	}
	return a
}

// expectedRuns is how many handler runs the job takes when nothing goes wrong.
func (s *jobSpec) expectedRuns(maxFails int) int {
	switch s.fail {
	case "first":
		return 2
	case "always":
		return maxFails
	}
	return 1
}

// planJobs makes n job specs: a mix of names, enqueue kinds (some scheduled 1-4 s ahead, some unique),
// short and a few long handlers, 4% failing their first attempt and 0.5% failing every attempt.
func planJobs(n int, longFrac float64, seed int64) []jobSpec {
	rng := rand.New(rand.NewSource(seed))
	specs := make([]jobSpec, n)
	for i := range specs {
		s := &specs[i]
		s.k = fmt.Sprintf("j%07d", i)
		switch r := rng.Float64(); {
		case r < 0.5:
			s.name = "fa"
		case r < 0.8:
			s.name = "fb"
		default:
			s.name = "fc"
		}
		switch r := rng.Float64(); {
		case r < 0.58:
			s.kind = kindEnqueue
		case r < 0.75:
			s.kind = kindBatch
		case r < 0.85:
			s.kind, s.in = kindIn, 1+rng.Int63n(4)
		case r < 0.91:
			s.kind = kindUnique
		case r < 0.94:
			s.kind, s.in = kindUniqueIn, 1+rng.Int63n(3)
		case r < 0.97:
			s.kind = kindByKey
		default:
			s.kind, s.in = kindByKeyIn, 1+rng.Int63n(3)
		}
		switch r := rng.Float64(); {
		case r < longFrac:
			s.ms = 300 + rng.Intn(1200)
		case r < longFrac+0.05:
			s.ms = 5 + rng.Intn(45)
		default:
			s.ms = rng.Intn(3)
		}
		switch r := rng.Float64(); {
		case r < 0.005:
			s.fail = "always"
		case r < 0.045:
			s.fail = "first"
		}
	}
	return specs
}

// enqResult is what one Enqueue* call returned for a spec.
type enqResult struct {
	done  bool
	err   error
	ackAt time.Time // when the call returned
}

// loader enqueues the specs at a steady pace over a window, from several goroutines, recording each
// call's outcome.
type loader struct {
	specs   []jobSpec
	results []enqResult
	calls   atomic.Int64
	errs    atomic.Int64
	done    chan struct{}
}

// startLoader enqueues specs over window with conc goroutines.
func startLoader(ns string, pool *redis.Pool, specs []jobSpec, window time.Duration, conc int) *loader {
	l := &loader{specs: specs, results: make([]enqResult, len(specs)), done: make(chan struct{})}
	e := work.NewEnqueuer(ns, pool)
	// Work items: one spec, or a run of batch specs (up to 20) enqueued in one call.
	type item struct{ from, to int }
	var items []item
	for i := 0; i < len(specs); {
		j := i + 1
		if specs[i].kind == kindBatch {
			for j < len(specs) && j-i < 20 && specs[j].kind == kindBatch {
				j++
			}
		}
		items = append(items, item{i, j})
		i = j
	}
	ch := make(chan item, 256)
	go func() { // pace: item i is released at start + i*window/len(items)
		start := time.Now()
		for i, it := range items {
			if d := time.Until(start.Add(time.Duration(int64(window) * int64(i) / int64(len(items))))); d > 0 {
				time.Sleep(d)
			}
			ch <- it
		}
		close(ch)
	}()
	var wg sync.WaitGroup
	for g := 0; g < conc; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for it := range ch {
				l.enqueue(e, it.from, it.to)
			}
		}()
	}
	go func() { wg.Wait(); close(l.done) }()
	return l
}

func (l *loader) enqueue(e *work.Enqueuer, from, to int) {
	l.calls.Add(1)
	s := &l.specs[from]
	var err error
	switch s.kind {
	case kindBatch:
		batch := make([]work.BatchJob, 0, to-from)
		for i := from; i < to; i++ {
			batch = append(batch, work.BatchJob{Name: l.specs[i].name, Args: l.specs[i].args()})
		}
		_, err = e.EnqueueBatch(batch)
	case kindEnqueue:
		_, err = e.Enqueue(s.name, s.args())
	case kindIn:
		_, err = e.EnqueueIn(s.name, s.in, s.args())
	case kindUnique:
		var j *work.Job
		if j, err = e.EnqueueUnique(s.name, s.args()); err == nil && j == nil {
			err = errors.New("EnqueueUnique: unexpected duplicate")
		}
	case kindUniqueIn:
		var j *work.ScheduledJob
		if j, err = e.EnqueueUniqueIn(s.name, s.in, s.args()); err == nil && j == nil {
			err = errors.New("EnqueueUniqueIn: unexpected duplicate")
		}
	case kindByKey:
		var j *work.Job
		if j, err = e.EnqueueUniqueByKey(s.name, s.args(), map[string]interface{}{"k": s.k}); err == nil && j == nil {
			err = errors.New("EnqueueUniqueByKey: unexpected duplicate")
		}
	case kindByKeyIn:
		var j *work.ScheduledJob
		if j, err = e.EnqueueUniqueInByKey(s.name, s.in, s.args(), map[string]interface{}{"k": s.k}); err == nil && j == nil {
			err = errors.New("EnqueueUniqueInByKey: unexpected duplicate")
		}
	}
	if err != nil {
		l.errs.Add(1)
	}
	now := time.Now()
	for i := from; i < to; i++ {
		l.results[i] = enqResult{done: true, err: err, ackAt: now}
	}
}

func (l *loader) wait() { <-l.done }

// accepted returns the indexes of the specs whose Enqueue call returned no error.
func (l *loader) accepted() []int {
	var out []int
	for i, r := range l.results {
		if r.done && r.err == nil {
			out = append(out, i)
		}
	}
	return out
}

// ---------------------------------------------------------------------------------------------------
// looking at Redis

// inspector reads a scenario's Redis: the namespace's structures and the workers' ledger.
type inspector struct {
	t      testing.TB
	pool   *redis.Pool
	ns     string
	ledger string
}

func (in *inspector) key(parts ...string) string { return in.ns + ":" + strings.Join(parts, ":") }

// do runs a command, retrying for a while when Redis is unreachable (it may be restarting).
func (in *inspector) do(cmd string, args ...interface{}) (interface{}, error) {
	var err error
	for attempt := 0; attempt < 100; attempt++ {
		c := in.pool.Get()
		var r interface{}
		r, err = c.Do(cmd, args...)
		c.Close()
		if err == nil {
			return r, nil
		}
		if _, ok := err.(redis.Error); ok {
			return nil, err
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil, err
}

func (in *inspector) strings(cmd string, args ...interface{}) []string {
	in.t.Helper()
	s, err := redis.Strings(in.do(cmd, args...))
	if err != nil {
		in.t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return s
}

func (in *inspector) int(cmd string, args ...interface{}) int64 {
	in.t.Helper()
	n, err := redis.Int64(in.do(cmd, args...))
	if err != nil && err != redis.ErrNil {
		in.t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return n
}

// scan returns the keys matching a pattern.
func (in *inspector) scan(match string) []string {
	in.t.Helper()
	var out []string
	cursor := "0"
	for {
		r, err := redis.Values(in.do("SCAN", cursor, "MATCH", match, "COUNT", 1000))
		if err != nil {
			in.t.Fatalf("SCAN %s: %v", match, err)
		}
		cursor, _ = redis.String(r[0], nil)
		keys, _ := redis.Strings(r[1], nil)
		out = append(out, keys...)
		if cursor == "0" {
			sort.Strings(out)
			return out
		}
	}
}

// trackingKey extracts args.k from a job payload (or from the original payload of a dead record of
// an undecodable one).
func trackingKey(payload string) string {
	var j work.Job
	if err := json.Unmarshal([]byte(payload), &j); err != nil {
		return ""
	}
	if k, ok := j.Args["k"].(string); ok {
		return k
	}
	if len(j.Raw) > 0 {
		return trackingKey(string(j.Raw))
	}
	return ""
}

// pools returns the registered pool IDs with their pid and heartbeat age (seconds, server clock).
type poolInfo struct {
	id  string
	pid int
	age int64
}

func (in *inspector) pools() []poolInfo {
	in.t.Helper()
	now := in.serverTime()
	var out []poolInfo
	for _, id := range in.strings("SMEMBERS", in.key("worker_pools")) {
		h, _ := redis.StringMap(in.do("HGETALL", in.key("worker_pools", id)))
		pid, _ := strconv.Atoi(h["pid"])
		at, err := strconv.ParseInt(h["heartbeat_at"], 10, 64)
		age := int64(-1)
		if err == nil {
			age = now - at
		}
		out = append(out, poolInfo{id: id, pid: pid, age: age})
	}
	return out
}

func (in *inspector) serverTime() int64 {
	in.t.Helper()
	r := in.strings("TIME")
	n, _ := strconv.ParseInt(r[0], 10, 64)
	return n
}

// poolOfPid returns the pool ID a worker process registered, "" when none yet.
func (in *inspector) poolOfPid(pid int) string {
	for _, p := range in.pools() {
		if p.pid == pid {
			return p.id
		}
	}
	return ""
}

// inProgress returns, per in-progress list, its pool ID and length.
func (in *inspector) inProgress() map[string]int64 {
	in.t.Helper()
	out := map[string]int64{}
	for _, k := range in.scan(in.key("jobs", "*", "inprogress")) {
		out[k] = in.int("LLEN", k)
	}
	return out
}

// heldBy returns how many jobs sit in the in-progress lists of one pool.
func (in *inspector) heldBy(poolID string) int64 {
	in.t.Helper()
	var n int64
	for k, c := range in.inProgress() {
		if strings.HasSuffix(k, ":"+poolID+":inprogress") {
			n += c
		}
	}
	return n
}

// heldTotal returns how many jobs sit in all in-progress lists.
func (in *inspector) heldTotal() int64 {
	var n int64
	for _, c := range in.inProgress() {
		n += c
	}
	return n
}

// ---------------------------------------------------------------------------------------------------
// accounting

// tally is the outcome of one scenario.
type tally struct {
	name       string
	enqueued   int // Enqueue calls that returned nil (jobs)
	enqErrs    int // jobs whose Enqueue call returned an error
	errButRan  int // of those, jobs that ran anyway (the command took effect, the reply was lost)
	completed  int
	dead       int // jobs meant to die that are in the dead set
	lost       int
	stuck      int
	dups       int // handler runs beyond the expected ones
	inFlight   int64
	faults     int
	recovery   time.Duration // from the last fault until every job was done; -1: never
	notes      []string
	residue    []string // keys or counters left behind
	badDead    int      // jobs in the dead set that were not meant to die
	elsewhere  map[string]int
	lostKeys   []string
	lostIdx    []int
	stuckKeys  []string
	stuckInfo  []string // "<key>: job <ID> in <list>"
	held       []string // unfinished at the deadline, in an in-progress list while the workers ran
	unfinished int      // accepted jobs neither completed nor dead when the scenario ended
}

// ledger is the workers' bookkeeping, read back.
type ledgerView struct {
	done map[string]bool
	runs map[string]int
}

func (in *inspector) readLedger() ledgerView {
	in.t.Helper()
	v := ledgerView{done: map[string]bool{}, runs: map[string]int{}}
	for _, k := range in.strings("SMEMBERS", in.ledger+":done") {
		v.done[k] = true
	}
	for _, f := range in.strings("HKEYS", in.ledger+":runs") {
		if i := strings.IndexByte(f, '|'); i > 0 {
			v.runs[f[:i]]++
		}
	}
	return v
}

// deadKeys returns the tracking keys of the members of the dead set.
func (in *inspector) deadKeys() map[string]bool {
	in.t.Helper()
	out := map[string]bool{}
	for _, m := range in.strings("ZRANGE", in.key("dead"), 0, -1) {
		out[trackingKey(m)] = true
	}
	return out
}

// progress reports how many accepted jobs are finished (completed, or dead when meant to die).
func (in *inspector) progress(specs []jobSpec, accepted []int) (finished int) {
	in.t.Helper()
	done := map[string]bool{}
	for _, k := range in.strings("SMEMBERS", in.ledger+":done") {
		done[k] = true
	}
	var dead map[string]bool
	for _, i := range accepted {
		s := &specs[i]
		if s.fail == "always" {
			if dead == nil {
				dead = in.deadKeys()
			}
			if dead[s.k] {
				finished++
			}
		} else if done[s.k] {
			finished++
		}
	}
	return finished
}

// stallGuard ends a wait for jobs that are stuck, not one for jobs that are slow: a loaded machine
// slows the jobs down but does not stop them, so what it watches is a count of finished jobs, and the
// wait gives up only once that count has not grown for limit.
type stallGuard struct {
	limit time.Duration
	last  int64
	since time.Time
}

func newStallGuard(limit time.Duration) *stallGuard {
	return &stallGuard{limit: limit, last: -1, since: time.Now()}
}

// stalled takes the count now and reports whether it has not grown for longer than the limit.
func (g *stallGuard) stalled(n int64) bool {
	if n > g.last {
		g.last, g.since = n, time.Now()
		return false
	}
	return time.Since(g.since) > g.limit
}

// waitFinished polls until every accepted job is finished, or until no job has finished for stall;
// it returns when they all were (zero time: never).
func (in *inspector) waitFinished(specs []jobSpec, accepted []int, stall time.Duration) time.Time {
	in.t.Helper()
	want := len(accepted)
	quick := func() int64 { // an upper bound, cheap
		return in.int("SCARD", in.ledger+":done") + in.int("ZCARD", in.key("dead"))
	}
	g := newStallGuard(stall)
	for n := quick(); !g.stalled(n); n = quick() {
		if n >= int64(want) && in.progress(specs, accepted) == want {
			return time.Now()
		}
		time.Sleep(100 * time.Millisecond)
	}
	if in.progress(specs, accepted) == want {
		return time.Now()
	}
	return time.Time{}
}

// heldUnfinished returns the accepted jobs that are not finished yet and sit in an in-progress list
// (while the workers still run: jobs a pool holds but does not run), as "<key>: job <ID> in <list>".
func (in *inspector) heldUnfinished(specs []jobSpec, accepted []int) []string {
	in.t.Helper()
	lv := in.readLedger()
	dead := in.deadKeys()
	held := map[string]string{}
	for k := range in.inProgress() {
		for _, m := range in.strings("LRANGE", k, 0, -1) {
			var j work.Job
			json.Unmarshal([]byte(m), &j)
			held[trackingKey(m)] = j.ID + " in " + k
		}
	}
	var out []string
	for _, i := range accepted {
		s := &specs[i]
		if (s.fail == "always" && dead[s.k]) || (s.fail != "always" && lv.done[s.k]) {
			continue
		}
		if h, ok := held[s.k]; ok {
			out = append(out, s.k+": job "+h)
		}
	}
	return out
}

// account classifies every job of a scenario once the workers have stopped.
func (in *inspector) account(tl *tally, specs []jobSpec, l *loader, maxFails int) {
	in.t.Helper()
	lv := in.readLedger()
	dead := in.deadKeys()
	// Where every payload in Redis sits.
	where := map[string]string{}
	for _, name := range jobNames {
		for _, m := range in.strings("LRANGE", in.key("jobs", name), 0, -1) {
			where[trackingKey(m)] = "queued"
		}
	}
	for _, set := range []string{"scheduled", "retry"} {
		for _, m := range in.strings("ZRANGE", in.key(set), 0, -1) {
			where[trackingKey(m)] = set
		}
	}
	held := map[string]string{} // tracking key -> "<job ID> in <in-progress list>"
	for k := range in.inProgress() {
		for _, m := range in.strings("LRANGE", k, 0, -1) {
			tk := trackingKey(m)
			where[tk] = "inprogress"
			var j work.Job
			json.Unmarshal([]byte(m), &j)
			held[tk] = j.ID + " in " + k
		}
	}
	tl.elsewhere = map[string]int{}
	for i, s := range specs {
		r := l.results[i]
		if !r.done {
			continue
		}
		ran := lv.runs[s.k] > 0 || lv.done[s.k]
		if r.err != nil {
			tl.enqErrs++
			if ran || where[s.k] != "" || dead[s.k] {
				tl.errButRan++
			}
			continue
		}
		tl.enqueued++
		if extra := lv.runs[s.k] - s.expectedRuns(maxFails); extra > 0 {
			tl.dups += extra
		}
		switch {
		case s.fail == "always" && dead[s.k]:
			tl.dead++
			continue
		case s.fail != "always" && lv.done[s.k]:
			tl.completed++
			if dead[s.k] {
				tl.badDead++
			}
			continue
		case dead[s.k]:
			tl.badDead++
			continue
		}
		tl.unfinished++
		switch w := where[s.k]; w {
		case "":
			tl.lost++
			tl.lostKeys = append(tl.lostKeys, s.k)
			tl.lostIdx = append(tl.lostIdx, i)
		case "inprogress":
			tl.stuck++
			tl.stuckKeys = append(tl.stuckKeys, s.k)
			tl.stuckInfo = append(tl.stuckInfo, s.k+": job "+held[s.k])
		default:
			tl.elsewhere[w]++
		}
	}
}

// residue lists what must be gone once every worker has stopped: in-progress lists, registered
// pools, non-zero lock counters and lock_info entries.
func (in *inspector) residue() []string {
	in.t.Helper()
	var out []string
	for k, n := range in.inProgress() {
		out = append(out, fmt.Sprintf("%s holds %d", k, n))
	}
	if n := in.int("SCARD", in.key("worker_pools")); n != 0 {
		out = append(out, fmt.Sprintf("%d pools still registered", n))
	}
	for _, name := range jobNames {
		v, err := redis.String(in.do("GET", in.key("jobs", name, "lock")))
		if err == nil && v != "0" {
			out = append(out, fmt.Sprintf("%s = %s", in.key("jobs", name, "lock"), v))
		}
		h, _ := redis.StringMap(in.do("HGETALL", in.key("jobs", name, "lock_info")))
		for pool, c := range h {
			if c != "0" {
				out = append(out, fmt.Sprintf("%s[%s] = %s", in.key("jobs", name, "lock_info"), pool, c))
			}
		}
	}
	sort.Strings(out)
	return out
}

// stallReport describes, for a test that saw no progress, what the namespace holds (each key's type
// and size, at most 60 keys) and the last lines of every live worker's log, so that a stall in CI
// can be told apart from a slow machine.
func (in *inspector) stallReport(fl *fleet) string {
	in.t.Helper()
	var b strings.Builder
	keys, err := redis.Strings(in.do("KEYS", in.ns+":*"))
	if err != nil {
		return err.Error()
	}
	sort.Strings(keys)
	for i, k := range keys {
		if i == 60 {
			fmt.Fprintf(&b, "... %d keys more\n", len(keys)-60)
			break
		}
		fmt.Fprintf(&b, "%s: %s\n", k, describeKey(in, k))
	}
	for _, p := range fl.live() {
		log, _ := os.ReadFile(p.log)
		fmt.Fprintf(&b, "worker %d (pool %s) log (last lines):\n%s\n", p.pid, p.poolID, tail(log, 8))
	}
	return b.String()
}
