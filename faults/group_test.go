package faults

import (
	"fmt"
	"math/rand"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// A stream of grouped jobs, from several producers into about fifty groups, reaches its handlers
// while worker processes are SIGKILLed every 1.5-3 s and redis-server is SIGKILLed (appendfsync
// always) once and restarted from its AOF. Three job names: "gs" groups are busy and flushed by
// size (25) while the stream lasts, their rest by a 2 s grace; "gd" groups are quiet and flushed
// by a 1 s max delay; "gg" groups by a size of 10, a 2 s max delay or a 1 s grace, whichever comes
// first. The workers' ledger names each call's job, run and members (see the worker program's
// -groups). Every job whose enqueue returned nil must be in a run that returned nil; every job is
// in one call job only (a rerun of a call is the same call); no call mixes groups or exceeds its
// name's max size. A member in two successful runs is the at-least-once of a worker killed after
// its handler returned and before the ack: those are reported, and held to a small bound.
func TestGroupedJobsOnceUnderSIGKILL(t *testing.T) {
	skipIfShort(t)
	const (
		ns, ledger = "fg", "ledger"
		workers    = 3
		producers  = 4
		groups     = 50
	)
	type groupConf struct{ size, delay, grace, weight int }
	confs := map[string]groupConf{"gs": {25, 0, 2, 6}, "gd": {40, 1, 0, 1}, "gg": {10, 2, 1, 2}}
	names := []string{"gs", "gd", "gg"}
	jobs := jobsPerScenario(20000) / 4
	window := stretch(15 * time.Second)

	srv := startRedis(t, "always")
	pool := newPool(srv.addr, 0)
	t.Cleanup(func() { pool.Close() })
	in := &inspector{t: t, pool: pool, ns: ns, ledger: ledger}
	var spec []string
	for _, n := range names {
		c := confs[n]
		spec = append(spec, fmt.Sprintf("%s=%d:%d:%d", n, c.size, c.delay, c.grace))
	}
	fl := newFleet(t, "-redis", srv.addr, "-ns", ns, "-ledger", ledger, "-names", "", "-groups", strings.Join(spec, ","),
		"-concurrency", "4", "-heartbeat", "1s", "-dead-pool", "3s", "-max-fails", "25", "-log", "error")
	for range workers {
		fl.spawnRegistered(in)
	}

	// The plan: group i belongs to names[i%3]; each job picks a group by its name's weight, works
	// 0-2 ms, or 200-800 ms for 2% of them so that kills find calls running.
	type member struct {
		name, group string
		ms          int
	}
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	var pick []int
	for g := range groups {
		for range confs[names[g%3]].weight {
			pick = append(pick, g)
		}
	}
	plan := make([]member, jobs)
	for i := range plan {
		g := pick[rng.Intn(len(pick))]
		plan[i] = member{name: names[g%3], group: fmt.Sprintf("grp%02d", g), ms: rng.Intn(3)}
		if rng.Intn(50) == 0 {
			plan[i].ms = 200 + rng.Intn(600)
		}
	}
	key := func(i int) string { return fmt.Sprintf("m%06d", i) }

	// Producers: job i is sent at start + i*window/jobs. A job whose enqueue failed is not sent again
	// (it may have been added all the same, and then it would be two jobs of one tracking key).
	enq := work.NewEnqueuer(ns, pool)
	accepted := make([]bool, jobs)
	start := time.Now()
	var wg sync.WaitGroup
	for p := range producers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := p; i < jobs; i += producers {
				time.Sleep(time.Until(start.Add(time.Duration(int64(window) * int64(i) / int64(jobs)))))
				_, err := enq.EnqueueWith(plan[i].name, work.Q{"k": key(i), "ms": plan[i].ms},
					work.EnqueueOptions{Group: plan[i].group})
				accepted[i] = err == nil
				if err != nil {
					time.Sleep(100 * time.Millisecond) // Redis is down or restarting
				}
			}
		}()
	}

	// Faults while the stream lasts and its last groups flush.
	kills := 0
	killedRedis := false
	for time.Since(start) < window+3*time.Second {
		time.Sleep(1500*time.Millisecond + time.Duration(rng.Intn(1500))*time.Millisecond)
		if p := fl.random(); p != nil {
			fl.sigkill(p)
			kills++
		}
		if !killedRedis && time.Since(start) > 6*time.Second {
			srv.kill(syscall.SIGKILL)
			time.Sleep(time.Second)
			srv.start()
			killedRedis = true
		}
		for len(fl.live()) < workers {
			fl.spawnRegistered(in)
		}
	}
	wg.Wait()
	var want []int
	for i, ok := range accepted {
		if ok {
			want = append(want, i)
		}
	}

	// Wait until every accepted job is in a successful run.
	type run struct {
		call, name, group string
		members           []string
		ok                bool
	}
	var runs []run
	lostKeys := func() []string {
		okRuns := map[string]bool{}
		for _, r := range in.strings("SMEMBERS", ledger+":calls_ok") {
			okRuns[r] = true
		}
		runs = runs[:0]
		v := in.strings("HGETALL", ledger+":calls")
		for i := 0; i+1 < len(v); i += 2 {
			f := strings.SplitN(v[i+1], "|", 4)
			if len(f) != 4 {
				t.Fatalf("a calls entry %q of another form", v[i+1])
			}
			call, _, _ := strings.Cut(v[i], "|")
			runs = append(runs, run{call: call, name: f[0], group: f[1], members: strings.Split(f[3], ","), ok: okRuns[v[i]]})
		}
		done := map[string]bool{}
		for _, r := range runs {
			if r.ok {
				for _, k := range r.members {
					done[k] = true
				}
			}
		}
		var lost []string
		for _, i := range want {
			if !done[key(i)] {
				lost = append(lost, key(i))
			}
		}
		return lost
	}
	deadline := time.Now().Add(stretch(40 * time.Second))
	lost := lostKeys()
	for len(lost) > 0 && time.Now().Before(deadline) {
		time.Sleep(500 * time.Millisecond)
		lost = lostKeys()
	}
	fl.stopAll(10 * time.Second)
	fl.checkLogs()

	// The accounting, over every run recorded.
	okRuns := map[string]int{}              // member -> successful runs
	callsOf := map[string]map[string]bool{} // member -> call jobs it was in
	calls := map[string]bool{}
	var mixed, oversize []string
	maxSize, okCount, sentAnyway := 0, 0, 0
	for _, r := range runs {
		calls[r.call] = true
		maxSize = max(maxSize, len(r.members))
		if c, ok := confs[r.name]; !ok || len(r.members) > c.size {
			oversize = append(oversize, fmt.Sprintf("call %s of %s: %d jobs", r.call, r.name, len(r.members)))
		}
		if r.ok {
			okCount++
		}
		for _, k := range r.members {
			var i int
			if _, err := fmt.Sscanf(k, "m%06d", &i); err != nil || i >= jobs {
				mixed = append(mixed, fmt.Sprintf("call %s holds %q, no job of the plan", r.call, k))
				continue
			}
			if plan[i].name != r.name || plan[i].group != r.group {
				mixed = append(mixed, fmt.Sprintf("call %s of %s/%s holds %s of %s/%s", r.call, r.name, r.group, k, plan[i].name, plan[i].group))
			}
			if callsOf[k] == nil {
				callsOf[k] = map[string]bool{}
			}
			callsOf[k][r.call] = true
			if r.ok {
				okRuns[k]++
			}
		}
	}
	dupRuns, inTwoCalls := 0, 0
	var twoCalls []string
	for k, n := range okRuns {
		if n > 1 {
			dupRuns++
		}
		if len(callsOf[k]) > 1 {
			inTwoCalls++
			twoCalls = append(twoCalls, k)
		}
	}
	for i, ok := range accepted {
		if !ok && okRuns[key(i)] > 0 {
			sentAnyway++
		}
	}
	t.Logf("%d jobs (%d accepted, %d refused of which %d ran anyway), %d groups, %d calls (%d runs, %d successful), %d worker SIGKILLs + 1 redis-server; lost %d, members in >1 successful run %d, in >1 call %d; max call size %d",
		jobs, len(want), jobs-len(want), sentAnyway, groups, len(calls), len(runs), okCount, kills, len(lost), dupRuns, inTwoCalls, maxSize)
	if len(lost) > 0 {
		t.Errorf("%d accepted jobs in no successful call, e.g. %q", len(lost), lost[:min(5, len(lost))])
	}
	if len(mixed) > 0 {
		t.Errorf("%d members in a call of another group, e.g. %q", len(mixed), mixed[:min(5, len(mixed))])
	}
	if len(oversize) > 0 {
		t.Errorf("%d calls over their name's MaxSize, e.g. %q", len(oversize), oversize[:min(5, len(oversize))])
	}
	if inTwoCalls > 0 {
		sort.Strings(twoCalls)
		t.Errorf("%d jobs in more than one call job, e.g. %q", inTwoCalls, twoCalls[:min(5, len(twoCalls))])
	}
	if dupRuns*100 > len(want) {
		t.Errorf("%d of %d jobs in more than one successful run, over 1%%", dupRuns, len(want))
	}
	if len(want) < jobs/2 {
		t.Errorf("only %d of %d enqueues accepted", len(want), jobs)
	}
}
