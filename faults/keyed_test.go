package faults

import (
	"fmt"
	"math/rand"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Keyed jobs keep their per-key concurrency limits while worker processes are SIGKILLed again and
// again, with many keys running at their limits: at no moment do more jobs of one key run than the
// key's limit, counting the handlers of a killed process as ended at its kill. Every job runs (at
// least once: a job killed mid-run runs again once its pool is reaped), and once every key has
// drained nothing of the keyed state is left but the keys' overrides.
//
// The handlers record when each run starts and ends (the worker program's -timeline), on the one
// clock of this machine. A recorded run lies within the time its job held its key's slot: the slot is
// taken by the fetch before the handler starts and freed by the acknowledgement after it returns, or
// for a killed process's jobs by a peer's reaper once it finds the process gone, which can be before
// the test's wait for the process returns (a zombie counts as gone) but never before the SIGKILL was
// sent, which is when its unfinished runs are taken to end. So any overlap counted is an overlap of
// slots.
//
// Not covered, by design: a pool frozen (SIGSTOP) for longer than DeadPoolTimeout is reaped while it
// lives, and its handlers, when it wakes, run beside the jobs put back (see the package work
// documentation of DeadPoolTimeout).
func TestKeyedLimitsHoldUnderRepeatedSIGKILL(t *testing.T) {
	skipIfShort(t)
	const (
		ns, ledger  = "fk", "ledger"
		keys        = 200
		workers     = 4   // processes at a time
		concurrency = 160 // per process: four of them have a worker for every slot of every key
		maxKills    = 12
	)
	perPair := max(jobsPerScenario(9600)/(2*keys), 4) // jobs of one key of one job name
	srv := startRedis(t, "everysec")                  // Redis is not killed here
	pool := newPool(srv.addr, 0)
	t.Cleanup(func() { pool.Close() })
	in := &inspector{t: t, pool: pool, ns: ns, ledger: ledger}
	client := work.NewClient(ns, pool)

	// Two job names, KeyConcurrency 1 and 2, and overrides on 60 keys: ka allows 2 to tenants 0-19;
	// kb allows 1 to tenants 20-39 and 3 to tenants 40-59. 620 slots in all.
	names := []string{"ka", "kb"}
	limit := func(name string, i int) int {
		switch {
		case name == "ka" && i < 20:
			return 2
		case name == "ka":
			return 1
		case i >= 20 && i < 40:
			return 1
		case i >= 40 && i < 60:
			return 3
		}
		return 2
	}
	keyOf := func(i int) string { return fmt.Sprintf("tenant-%03d", i) }
	for i := 0; i < 60; i++ {
		for _, name := range names {
			if l := limit(name, i); (name == "ka" && l != 1) || (name == "kb" && l != 2) {
				if err := client.SetKeyLimits(name, keyOf(i), work.KeyLimits{Concurrency: l}); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	fl := newFleet(t, "-redis", srv.addr, "-ns", ns, "-ledger", ledger, "-names", strings.Join(names, ","),
		"-key-concurrency", "ka=1,kb=2", "-concurrency", strconv.Itoa(concurrency),
		"-heartbeat", "1s", "-dead-pool", "3s", "-max-fails", "3", "-backoff", "1", "-timeline")
	for i := 0; i < workers; i++ {
		fl.spawnRegistered(in)
	}

	// The jobs, round robin over the keys so that every key has a backlog from the start: handlers of
	// 200-500 ms, 2% failing their first attempt (a retry goes to the back of its key's queue).
	rng := rand.New(rand.NewSource(20240611))
	type planned struct{ name, key, k string }
	var plan []planned
	var batch []work.BatchJob
	for j := 0; j < perPair; j++ {
		for i := 0; i < keys; i++ {
			for _, name := range names {
				p := planned{name: name, key: keyOf(i), k: fmt.Sprintf("%s|%s|%03d", name, keyOf(i), j)}
				args := work.Q{"k": p.k, "key": p.key, "ms": float64(200 + rng.Intn(300))}
				if rng.Intn(50) == 0 {
					args["fail"] = "first"
				}
				plan = append(plan, p)
				batch = append(batch, work.BatchJob{Name: name, Key: p.key, Args: args})
			}
		}
	}
	start := time.Now()
	e := work.NewEnqueuer(ns, pool)
	for i := 0; i < len(batch); i += 1000 {
		if _, err := e.EnqueueBatch(batch[i:min(i+1000, len(batch))]); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d keyed jobs enqueued (%d keys, %d per key and job name) in %v", len(plan), keys, perPair,
		time.Since(start).Round(time.Millisecond))

	// SIGKILL one pool, every third time two, every 1.5-2.5 s while jobs run, and start as many new
	// ones; note how many keys ran at their limit just before each kill.
	killedAt := map[int]int64{} // pid -> Unix ns, when its SIGKILL was sent
	killedPools := map[string]bool{}
	atLimit := func() (n int) {
		for _, name := range names {
			running, err := redis.IntMap(in.do("HGETALL", in.key("keyed", name, "running")))
			if err != nil {
				t.Fatal(err)
			}
			for i := 0; i < keys; i++ {
				if running[keyOf(i)] >= limit(name, i) {
					n++
				}
			}
		}
		return n
	}
	done := func() bool { return in.int("SCARD", ledger+":done") >= int64(len(plan)) }
	var kills int
	var atKills []string
	deadline := time.Now().Add(stretch(3 * time.Minute))
	for round := 1; kills < stretchN(maxKills) && !done(); round++ {
		time.Sleep(time.Duration(1500+rng.Intn(1000)) * time.Millisecond)
		if time.Now().After(deadline) {
			break
		}
		victims := 1
		if round%3 == 0 {
			victims = 2
		}
		atKills = append(atKills, strconv.Itoa(atLimit()))
		for v := 0; v < victims; v++ {
			p := fl.random()
			if p == nil {
				break
			}
			// A run of the killed process ends when the signal goes: a peer may take its jobs back
			// as soon as the process is a zombie, before the wait for it returns.
			killedAt[p.pid] = fl.sigkill(p).UnixNano()
			killedPools[p.poolID] = true
			kills++
		}
		for v := 0; v < victims; v++ {
			fl.spawnRegistered(in)
		}
	}
	t.Logf("%d SIGKILLs in %v; keys (of job name and key) at their limit just before each round of kills: %s",
		kills, time.Since(start).Round(time.Millisecond), strings.Join(atKills, " "))
	stall := newStallGuard(30 * time.Second)
	for n := in.int("SCARD", ledger+":done"); n < int64(len(plan)) && !stall.stalled(n); n = in.int("SCARD", ledger+":done") {
		time.Sleep(100 * time.Millisecond)
	}
	drained := time.Since(start)
	if !done() {
		t.Errorf("after %v, %d of %d jobs done, none for 30s", drained.Round(time.Millisecond), in.int("SCARD", ledger+":done"), len(plan))
	}
	// The killed pools are reaped before the live ones stop (a pool with nothing held may still be
	// registered), so that the registrations left over are a finding. Reaping takes a few seconds
	// (dead-pool timeout 3s); the deadline only ends a wait that would never end.
	for reaped := time.Now().Add(time.Minute); time.Now().Before(reaped) &&
		in.int("SCARD", in.key("worker_pools")) > int64(len(fl.live())); {
		time.Sleep(100 * time.Millisecond)
	}
	fl.stopAll(15 * time.Second)
	fl.checkLogs()

	// Every job done, with its own key.
	doneSet := map[string]bool{}
	for _, k := range in.strings("SMEMBERS", ledger+":done") {
		doneSet[k] = true
	}
	var missing []string
	for _, p := range plan {
		if !doneSet[p.k] {
			missing = append(missing, p.k)
		}
	}
	if len(missing) > 0 {
		t.Errorf("%d jobs never completed, e.g. %v", len(missing), first(missing, 10))
	}
	if wrong := in.strings("SMEMBERS", ledger+":wrong_key"); len(wrong) > 0 {
		t.Errorf("%d runs saw another key in Job.Key than they were enqueued with, e.g. %v", len(wrong), first(wrong, 5))
	}
	if n := in.int("ZCARD", in.key("dead")); n > 0 {
		t.Errorf("%d jobs in the dead set", n)
	}

	// The runs, each from its start to its end (or the kill of its process), and the most of one key
	// that ever overlapped.
	runs := readRuns(t, in, killedAt)
	type pair struct{ name, key string }
	byPair := map[pair][]keyedRun{}
	for _, r := range runs {
		byPair[pair{r.name, r.key}] = append(byPair[pair{r.name, r.key}], r)
	}
	highest := map[int]int{}    // limit -> highest count seen over the keys with that limit
	reached := map[int][2]int{} // limit -> keys that reached it, keys with it
	killedRuns, unended := 0, 0 // runs cut short by a kill; runs that never ended in a live process
	for _, r := range runs {
		if r.killed {
			killedRuns++
		}
		if r.end == 0 {
			unended++
		}
	}
	if unended > 0 {
		t.Errorf("%d runs in processes that were not killed have no end", unended)
	}
	var over []string
	keyIndex := map[string]int{}
	for i := 0; i < keys; i++ {
		keyIndex[keyOf(i)] = i
	}
	for pr, rs := range byPair {
		i, ok := keyIndex[pr.key]
		if !ok {
			t.Errorf("runs of an unknown key %q", pr.key)
			continue
		}
		l := limit(pr.name, i)
		most, at := mostAtOnce(rs)
		highest[l] = max(highest[l], most)
		c := reached[l]
		c[1]++
		if most >= l {
			c[0]++
		}
		reached[l] = c
		if most > l {
			over = append(over, fmt.Sprintf("%s %s: %d at once (limit %d) at +%v: %s", pr.name, pr.key, most, l,
				time.Duration(at-start.UnixNano()).Round(time.Millisecond), describeOverlap(rs, at, start, killedAt)))
		}
	}
	sort.Strings(over)
	for _, o := range first(over, 10) {
		t.Errorf("limit exceeded: %s", o)
	}
	var limits []int
	for l := range highest {
		limits = append(limits, l)
	}
	sort.Ints(limits)
	var figures []string
	for _, l := range limits {
		figures = append(figures, fmt.Sprintf("limit %d: highest %d (%d of %d keys reached it)", l, highest[l],
			reached[l][0], reached[l][1]))
		if l > 1 && reached[l][0] == 0 {
			t.Errorf("no key with limit %d ever ran %d jobs at once: the test did not put the limit to the test", l, l)
		}
	}
	t.Logf("%d runs of %d jobs (%d cut short by a kill), %d SIGKILLs, drained in %v; %s", len(runs), len(plan),
		killedRuns, kills, drained.Round(time.Millisecond), strings.Join(figures, "; "))

	// Pools reaped: only killed ones.
	reapedRE := regexp.MustCompile(`dead_pool_id=(\S+)`)
	for _, line := range fl.logLines("reaped dead pool") {
		if m := reapedRE.FindStringSubmatch(line); m != nil && !killedPools[m[1]] {
			t.Errorf("a pool that was not killed was reaped: %s", line)
		}
	}

	// Nothing of the keyed state left but the overrides and the meta hash (with no job waiting).
	var left []string
	for _, k := range in.scan(in.key("keyed", "*")) {
		switch {
		case strings.HasSuffix(k, ":conf"):
		case strings.HasSuffix(k, ":meta"):
			if w, _ := redis.String(in.do("HGET", k, "waiting")); w != "0" {
				left = append(left, fmt.Sprintf("%s waiting=%s", k, w))
			}
		default:
			left = append(left, fmt.Sprintf("%s (%s)", k, describeKey(in, k)))
		}
	}
	left = append(left, in.residue()...)
	if len(left) > 0 {
		t.Errorf("left behind after every key drained and every worker stopped: %v", first(left, 20))
	}
	if t.Failed() {
		for _, p := range fl.all() {
			b, _ := os.ReadFile(p.log)
			t.Logf("worker %d (pool %s, killed %v) log (last lines):\n%s", p.pid, p.poolID, p.killed, tail(b, 10))
		}
	}
}

// stretchN scales a count of faults in a soak run.
func stretchN(n int) int {
	if soak() {
		return 5 * n
	}
	return n
}

// keyedRun is one handler run of a keyed job, from the worker program's ledger: start and end in
// Unix ns; end is the kill of its process when it had none (killed), 0 when it has none at all.
type keyedRun struct {
	name, key  string
	pid        int
	start, end int64
	killed     bool
}

// readRuns reads every run from the ledger, ending the unfinished runs of killed processes at their
// kill.
func readRuns(t *testing.T, in *inspector, killedAt map[int]int64) []keyedRun {
	t.Helper()
	ends, err := redis.StringMap(in.do("HGETALL", in.ledger+":ends"))
	if err != nil {
		t.Fatal(err)
	}
	starts, err := redis.StringMap(in.do("HGETALL", in.ledger+":runs"))
	if err != nil {
		t.Fatal(err)
	}
	runs := make([]keyedRun, 0, len(starts))
	for field, v := range starts {
		f := strings.Split(v, "|") // name, key, pid, start
		if len(f) != 4 {
			t.Fatalf("run %s: %q", field, v)
		}
		r := keyedRun{name: f[0], key: f[1]}
		r.pid, _ = strconv.Atoi(f[2])
		r.start, _ = strconv.ParseInt(f[3], 10, 64)
		if e, ok := ends[field]; ok {
			r.end, _ = strconv.ParseInt(e, 10, 64)
		} else if at, ok := killedAt[r.pid]; ok {
			r.end, r.killed = at, true
		}
		runs = append(runs, r)
	}
	return runs
}

// mostAtOnce returns the most runs that overlapped and the first moment they did. A run that ends at
// the very moment another starts does not overlap it; one without an end runs for good.
func mostAtOnce(runs []keyedRun) (most int, at int64) {
	type event struct {
		t int64
		d int
	}
	events := make([]event, 0, 2*len(runs))
	for _, r := range runs {
		end := r.end
		if end == 0 {
			end = 1<<63 - 1
		}
		events = append(events, event{r.start, 1}, event{end, -1})
	}
	sort.Slice(events, func(i, j int) bool {
		if events[i].t != events[j].t {
			return events[i].t < events[j].t
		}
		return events[i].d < events[j].d // ends first
	})
	n := 0
	for _, e := range events {
		n += e.d
		if n > most {
			most, at = n, e.t
		}
	}
	return most, at
}

// describeOverlap lists the runs under way at moment at, relative to start, with their processes.
func describeOverlap(runs []keyedRun, at int64, start time.Time, killedAt map[int]int64) string {
	rel := func(ns int64) string { return time.Duration(ns - start.UnixNano()).Round(time.Millisecond).String() }
	var out []string
	for _, r := range runs {
		if r.start <= at && (r.end == 0 || r.end > at) {
			s := fmt.Sprintf("[pid %d, +%s to ", r.pid, rel(r.start))
			switch {
			case r.end == 0:
				s += "never"
			case r.killed:
				s += "its kill at +" + rel(r.end)
			default:
				s += "+" + rel(r.end)
			}
			if k, ok := killedAt[r.pid]; ok && !r.killed {
				s += ", process killed at +" + rel(k)
			}
			out = append(out, s+"]")
		}
	}
	return strings.Join(out, " ")
}

// describeKey says what a key holds, in short.
func describeKey(in *inspector, key string) string {
	typ, _ := redis.String(in.do("TYPE", key))
	var n int64
	switch typ {
	case "list":
		n = in.int("LLEN", key)
	case "zset":
		n = in.int("ZCARD", key)
	case "hash":
		n = in.int("HLEN", key)
	case "set":
		n = in.int("SCARD", key)
	case "string":
		return "string"
	}
	return fmt.Sprintf("%s of %d", typ, n)
}
