package work

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestBadCronSpecPanics(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	for _, spec := range []string{"", "bad", "* * *", "61 * * * * *", "* * * * * * * *", "@every", "@every banana", "@sometimes"} {
		bhvPanicMessage(t, fmt.Sprintf("PeriodicallyEnqueue(%q)", spec), func() { wp.PeriodicallyEnqueue(spec, "x") })
	}
}

func TestCronSpecsWithFiveOrSixFieldsAndDescriptorsAreAccepted(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	wp := NewWorkerPool(bhvCtx{}, 1, "ns", pool)
	for _, spec := range []string{"* * * * *", "*/5 * * * *", "0 0 * * 1-5", "* * * * * *", "30 */2 * * * *",
		"@every 1m", "@every 90s", "@hourly", "@daily"} {
		wp.PeriodicallyEnqueue(spec, "x") // must not panic
	}
}

func TestPeriodicJobFromTwoPoolsIsScheduledAndRunOncePerTick(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	const spec = "* * * * * *"
	var mu sync.Mutex
	runs := map[string]int{}      // job ID -> runs
	epochOf := map[string]int64{} // job ID -> t
	handler := func(j *Job) error {
		mu.Lock()
		runs[j.ID]++
		epochOf[j.ID] = j.EnqueuedAt
		mu.Unlock()
		if j.Args != nil {
			t.Errorf("periodic job has args %v", j.Args)
		}
		return nil
	}
	p1 := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).PeriodicallyEnqueue(spec, "tick").Job("tick", handler))
	p2 := bhvStart(t, NewWorkerPool(bhvCtx{}, 2, ns, pool).PeriodicallyEnqueue(spec, "tick").Job("tick", handler))

	eventually(t, 10*time.Second, "periodic jobs in the scheduled set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")) >= 200
	})
	members := bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	perScore := map[int64]int{}
	for _, m := range members {
		perScore[m.Score]++
		want := fmt.Sprintf(`{"name":"tick","id":"periodic:tick:%s:%d","t":%d,"args":null}`, spec, m.Score, m.Score)
		if m.Raw != want {
			t.Errorf("scheduled member %s, want %s", m.Raw, want)
		}
	}
	for score, n := range perScore {
		if n != 1 {
			t.Errorf("%d members for the tick at %d, want 1", n, score)
		}
	}
	if v := rInt(t, pool, "GET", bhvKey(ns, "last_periodic_enqueue")); v == 0 {
		t.Error("last_periodic_enqueue not set")
	}

	eventually(t, 20*time.Second, "three ticks run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(runs) >= 3
	})
	p1.Stop()
	p2.Stop()
	mu.Lock()
	defer mu.Unlock()
	for id, n := range runs {
		if n != 1 {
			t.Errorf("tick %s ran %d times, want once", id, n)
		}
		parts := strings.Split(id, ":")
		epoch, err := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if !strings.HasPrefix(id, "periodic:tick:"+spec+":") || err != nil || epoch != epochOf[id] {
			t.Errorf("ran job ID %q with t %d, want periodic:tick:<spec>:<t>", id, epochOf[id])
		}
	}
	// A tick that ran is no longer scheduled.
	remaining := map[string]bool{}
	for _, m := range bhvZRange(t, pool, bhvKey(ns, "scheduled")) {
		remaining[bhvDecode(t, m.Raw).ID] = true
	}
	for id := range runs {
		if remaining[id] {
			t.Errorf("tick %s ran and is still scheduled", id)
		}
	}
	t.Logf("%d ticks ran", len(runs))
}

// A five-field spec is read as gocraft/work read it (robfig/cron v1's default parser): seconds first,
// day of week optional. "0 * * * *" is second 0 of every minute.
func TestFiveFieldSpecIsReadSecondsFirstLikeGocraft(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	const spec = "0 * * * *"
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).PeriodicallyEnqueue(spec, "minute").Job("minute", bhvNoop))
	eventually(t, 10*time.Second, "periodic jobs in the scheduled set", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")) > 0
	})
	members := bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	if len(members) < 3 || len(members) > 5 {
		t.Errorf("%d ticks scheduled ahead, want about 4 (one a minute for the coming minutes)", len(members))
	}
	for _, m := range members {
		if m.Score%60 != 0 {
			t.Errorf("tick at %d is not on a minute", m.Score)
		}
		want := fmt.Sprintf(`{"name":"minute","id":"periodic:minute:%s:%d","t":%d,"args":null}`, spec, m.Score, m.Score)
		if m.Raw != want {
			t.Errorf("member %s, want %s", m.Raw, want)
		}
	}
}

// bhvScores returns the scores of members.
func bhvScores(members []bhvMember) []int64 {
	scores := make([]int64, len(members))
	for i, m := range members {
		scores[i] = m.Score
	}
	return scores
}

// bhvGaps returns the differences between consecutive scores of the scheduled set.
func bhvGaps(members []bhvMember) []int64 {
	scores := bhvScores(members)
	sort.Slice(scores, func(i, j int) bool { return scores[i] < scores[j] })
	var gaps []int64
	for i := 1; i < len(scores); i++ {
		gaps = append(gaps, scores[i]-scores[i-1])
	}
	return gaps
}

func TestEveryDescriptorFromTwoPoolsEnqueuesEachTickOnce(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	const spec = "@every 1m"
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).PeriodicallyEnqueue(spec, "ev").Job("ev", bhvNoop))
	eventually(t, 10*time.Second, "the first pool's ticks", func() bool {
		return rInt(t, pool, "ZCARD", bhvKey(ns, "scheduled")) > 0
	})
	first := time.Now().Unix()
	eventually(t, 5*time.Second, "the next second", func() bool { return time.Now().Unix() > first })
	// A second pool of the same namespace, started a moment later, registers the same spec.
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).PeriodicallyEnqueue(spec, "ev").Job("ev", bhvNoop))
	eventually(t, 10*time.Second, "the second pool's last_periodic_enqueue", func() bool {
		return rInt(t, pool, "GET", bhvKey(ns, "last_periodic_enqueue")) > first
	})
	members := bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	for _, g := range bhvGaps(members) {
		if g < 60 {
			t.Errorf("ticks of %q are %ds apart: the two pools scheduled different ticks (scores %v)", spec, g, bhvScores(members))
			break
		}
	}
}

func TestEveryDescriptorKeepsItsIntervalAcrossSchedulingRounds(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPool(bhvCtx{}, 1, ns, pool).PeriodicallyEnqueue("@every 1m", "ev").Job("ev", bhvNoop)
	// One pool's periodic enqueuer, driven by hand through two of its rounds: rounds come about a
	// minute apart, with jitter.
	r := newPoolRun(wp)
	defer r.cancel()
	defer r.jobCancel()
	now := time.Now()
	r.periodic.enqueue(now)
	r.periodic.enqueue(now.Add(65 * time.Second))
	members := bhvZRange(t, pool, bhvKey(ns, "scheduled"))
	for _, g := range bhvGaps(members) {
		if g < 60 {
			t.Errorf("ticks of @every 1m are %ds apart after a second scheduling round (scores %v)", g, bhvScores(members))
			break
		}
	}
}

func TestPeriodicJobHandledOnlyByAnotherPoolRunsThere(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	// Pool a schedules "b" but does not handle it; pool b handles it but schedules nothing.
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).PeriodicallyEnqueue("* * * * * *", "b").Job("a", bhvNoop))
	got := make(chan *Job, 16)
	bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).Job("b", func(j *Job) error { got <- j; return nil }))
	select {
	case j := <-got:
		if !strings.HasPrefix(j.ID, "periodic:b:* * * * * *:") || j.Args != nil {
			t.Errorf("ran %+v", j)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("the periodic job did not run in the pool that handles it")
	}
	if n := rInt(t, pool, "ZCARD", bhvKey(ns, "dead")); n != 0 {
		t.Errorf("dead set holds %d jobs", n)
	}
}
