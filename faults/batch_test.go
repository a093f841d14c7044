package faults

import (
	"fmt"
	"math/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Batches keep their promise under repeated SIGKILLs of the worker processes: every batch completes,
// its OnComplete callback is enqueued exactly once, its OnSuccess exactly once when no member died and
// never otherwise, and its counts match what happened to its members. Members are killed mid-run, run
// again, retried and sent to the dead set meanwhile.
func TestBatchCallbacksFireOnceUnderRepeatedSIGKILL(t *testing.T) {
	skipIfShort(t)
	const batches, workers = 6, 4
	perBatch := jobsPerScenario(20000) / batches
	srv := startRedis(t, "always")
	pool := newPool(srv.addr, 0)
	t.Cleanup(func() { pool.Close() })
	const ns, ledger = "fb", "ledger"
	in := &inspector{t: t, pool: pool, ns: ns, ledger: ledger}
	fl := newFleet(t, "-redis", srv.addr, "-ns", ns, "-ledger", ledger, "-concurrency", "8",
		"-heartbeat", "1s", "-dead-pool", "3s", "-max-fails", "2", "-backoff", "1",
		"-names", "fa,fb,fc", "-callbacks", "on_complete,on_success")
	for i := 0; i < workers; i++ {
		fl.spawnRegistered(in)
	}

	// Members: most quick, a few slow (so kills find them running), some failing their first
	// attempt, and in half the batches one that always fails (so that batch has a dead member).
	rng := rand.New(rand.NewSource(42))
	e := work.NewEnqueuer(ns, pool)
	type planned struct {
		id   string
		dead bool
	}
	var plan []planned
	start := time.Now()
	for b := 0; b < batches; b++ {
		jobs := make([]work.BatchJob, perBatch)
		withDead := b%2 == 1
		for i := range jobs {
			args := work.Q{"k": fmt.Sprintf("b%d-%d", b, i), "ms": float64(rng.Intn(5))}
			switch {
			case rng.Intn(200) == 0:
				args["ms"] = float64(300 + rng.Intn(700))
			case rng.Intn(50) == 0:
				args["fail"] = "first"
			}
			if withDead && i == perBatch/2 {
				args["fail"] = "always"
			}
			jobs[i] = work.BatchJob{Name: []string{"fa", "fb", "fc"}[i%3], Args: args}
		}
		bt, err := e.NewBatch(work.BatchOptions{Description: fmt.Sprintf("batch %d", b),
			OnComplete: &work.BatchCallback{Name: "on_complete"}, OnSuccess: &work.BatchCallback{Name: "on_success"}})
		if err != nil {
			t.Fatal(err)
		}
		// Added in chunks while the workers already run, then closed.
		for i := 0; i < len(jobs); i += 500 {
			if _, err := bt.Add(jobs[i:min(i+500, len(jobs))]...); err != nil {
				t.Fatal(err)
			}
		}
		if err := bt.Close(); err != nil {
			t.Fatal(err)
		}
		plan = append(plan, planned{id: bt.ID, dead: withDead})
	}
	t.Logf("%d batches of %d members enqueued in %v", batches, perBatch, time.Since(start).Round(time.Millisecond))

	client := work.NewClient(ns, pool)
	complete := func() bool {
		for _, p := range plan {
			st, err := client.BatchStatus(p.id)
			if err != nil || st.State != "complete" {
				return false
			}
		}
		return true
	}
	kills := 0
	finished := func() int64 { return in.int("SCARD", ledger+":done") + in.int("ZCARD", in.key("dead")) }
	stall := newStallGuard(30 * time.Second)
	for !complete() {
		if stall.stalled(finished()) {
			t.Fatalf("batches not complete after %d kills, and no member finished for 30s:\n%s", kills, in.stallReport(fl))
		}
		time.Sleep(time.Duration(400+rng.Intn(800)) * time.Millisecond)
		if kills < 30 && !complete() {
			if p := fl.random(); p != nil {
				fl.sigkill(p)
				kills++
				fl.spawnRegistered(in)
			}
		}
	}
	// Let the callbacks run, and give a second firing, if there were one, the time to show.
	want := int64(0)
	for _, p := range plan {
		want++
		if !p.dead {
			want++
		}
	}
	stall = newStallGuard(30 * time.Second)
	for n := in.int("SCARD", ledger+":callback_jobs"); n < want && !stall.stalled(n); n = in.int("SCARD", ledger+":callback_jobs") {
		time.Sleep(100 * time.Millisecond)
	}
	time.Sleep(stretch(5 * time.Second))
	fl.stopAll(15 * time.Second)
	fl.checkLogs()

	fired, err := redis.Strings(in.do("SMEMBERS", ledger+":callback_jobs"))
	if err != nil {
		t.Fatal(err)
	}
	firedBy := map[string]int{}
	for _, f := range fired {
		parts := strings.SplitN(f, "|", 3)
		firedBy[parts[0]+"|"+parts[1]]++
	}
	runs, err := redis.StringMap(in.do("HGETALL", ledger+":callback_runs"))
	if err != nil {
		t.Fatal(err)
	}
	totalRuns := 0
	for _, r := range runs {
		n, _ := strconv.Atoi(r)
		totalRuns += n
	}
	members, dead := 0, 0
	for _, p := range plan {
		st, err := client.BatchStatus(p.id)
		if err != nil {
			t.Fatal(err)
		}
		members += int(st.Total)
		dead += int(st.Dead)
		if st.Total != int64(perBatch) || st.Pending != 0 || st.Done+st.Dead != st.Total || st.Damaged {
			t.Errorf("batch %s: %+v", p.id, st)
		}
		wantDead := int64(0)
		if p.dead {
			wantDead = 1
		}
		if st.Dead != wantDead {
			t.Errorf("batch %s: %d dead members, want %d", p.id, st.Dead, wantDead)
		}
		if n := firedBy[p.id+"|on_complete"]; n != 1 {
			t.Errorf("batch %s: on_complete enqueued %d times, want once", p.id, n)
		}
		wantSuccess := 1
		if p.dead {
			wantSuccess = 0
		}
		if n := firedBy[p.id+"|on_success"]; n != wantSuccess {
			t.Errorf("batch %s: on_success enqueued %d times, want %d", p.id, n, wantSuccess)
		}
	}
	memberRuns := in.int("HLEN", ledger+":runs")
	t.Logf("batches %d, members %d (dead %d), member runs %d, SIGKILLs %d, callbacks enqueued %d, callback runs %d",
		batches, members, dead, memberRuns, kills, len(fired), totalRuns)
}
