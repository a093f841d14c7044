package work

import (
	"fmt"
	"sync"
	"testing"
	"time"
)

func bhvReady(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func TestPrioritySamplerPutsEachQueueFirstInProportionToItsPriority(t *testing.T) {
	t.Parallel()
	s := newPrioritySampler(map[string]uint{"low": 100, "high": 900}, false)
	ready := bhvReady("low", "high")
	const draws = 20000
	first := map[string]int{}
	for i := 0; i < draws; i++ {
		order := s.order(ready, nil)
		if len(order) != 2 || order[0] == order[1] {
			t.Fatalf("order %v: want both ready queues once", order)
		}
		first[order[0]]++
	}
	// Expected shares 10% and 90%; the standard deviation over 20000 draws is about 0.2%.
	if share := float64(first["low"]) / draws; share < 0.08 || share > 0.12 {
		t.Errorf("priority 100 of 1000 came first %.1f%% of the time, want about 10%%", 100*share)
	}
	if share := float64(first["high"]) / draws; share < 0.88 || share > 0.92 {
		t.Errorf("priority 900 of 1000 came first %.1f%% of the time, want about 90%%", 100*share)
	}
}

func TestPrioritySamplerWithThreeQueues(t *testing.T) {
	t.Parallel()
	prio := map[string]uint{"a": 1, "b": 2, "c": 7}
	s := newPrioritySampler(prio, false)
	ready := bhvReady("a", "b", "c")
	const draws = 20000
	first := map[string]int{}
	for i := 0; i < draws; i++ {
		first[s.order(ready, nil)[0]]++
	}
	for name, p := range prio {
		want := float64(p) / 10
		if got := float64(first[name]) / draws; got < want-0.025 || got > want+0.025 {
			t.Errorf("%s (priority %d of 10) came first %.1f%% of the time, want about %.0f%%", name, p, 100*got, 100*want)
		}
	}
}

func TestPrioritySamplerOrdersOnlyReadyQueues(t *testing.T) {
	t.Parallel()
	s := newPrioritySampler(map[string]uint{"a": 5, "b": 5, "c": 5}, false)
	for i := 0; i < 100; i++ {
		order := s.order(bhvReady("a", "c"), nil)
		if len(order) != 2 || order[0] == "b" || order[1] == "b" || order[0] == order[1] {
			t.Fatalf("order %v of ready a and c", order)
		}
	}
	if order := s.order(map[string]bool{}, nil); len(order) != 0 {
		t.Errorf("no ready queue gave %v", order)
	}
	// A name without a priority counts as priority 1.
	if order := s.order(bhvReady("unknown"), nil); len(order) != 1 || order[0] != "unknown" {
		t.Errorf("order %v", order)
	}
}

func TestPrioritySamplerReturnsAtMostSixteenCandidates(t *testing.T) {
	t.Parallel()
	prio := map[string]uint{}
	var names []string
	for i := 0; i < 40; i++ {
		name := fmt.Sprintf("q%02d", i)
		prio[name] = 1
		if i < 5 {
			prio[name] = 100000
		}
		names = append(names, name)
	}
	s := newPrioritySampler(prio, false)
	ready := bhvReady(names...)
	for i := 0; i < 1000; i++ {
		order := s.order(ready, nil)
		if len(order) != 16 {
			t.Fatalf("%d candidates, want 16", len(order))
		}
		seen := map[string]bool{}
		for _, n := range order {
			if seen[n] || !ready[n] {
				t.Fatalf("order %v repeats a name or names one that is not ready", order)
			}
			seen[n] = true
		}
		for j := 0; j < 5; j++ {
			if name := fmt.Sprintf("q%02d", j); !seen[name] {
				t.Fatalf("priority-100000 queue %s left out of %v", name, order)
			}
		}
	}
}

func TestHighPriorityQueueIsMostlyServedFirst(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	e := NewEnqueuer(ns, pool)
	const perQueue = 200
	for i := 0; i < perQueue; i++ {
		if _, err := e.Enqueue("lo", nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.Enqueue("hi", nil); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var order []string
	record := func(j *Job) error {
		mu.Lock()
		order = append(order, j.Name)
		mu.Unlock()
		return nil
	}
	wp := bhvStart(t, NewWorkerPool(bhvCtx{}, 1, ns, pool).
		JobWithOptions("lo", JobOptions{Priority: 100}, record).
		JobWithOptions("hi", JobOptions{Priority: 900}, record))
	eventually(t, 30*time.Second, "every job run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(order) == 2*perQueue
	})
	wp.Drain()
	mu.Lock()
	defer mu.Unlock()
	hi := 0
	const head = 100 // both queues are still full for the first 100 runs
	for _, n := range order[:head] {
		if n == "hi" {
			hi++
		}
	}
	// About 90 expected; the spread from batching and sampling is a few jobs.
	if hi < 70 {
		t.Errorf("the priority-900 queue had %d of the first %d runs, want most (about 90)", hi, head)
	}
	t.Logf("hi had %d of the first %d runs", hi, head)
}

// A fetch of many jobs splits them by priority, so batching keeps the proportions: priority 900 next
// to 100 gets about 90% of every batch.
func TestPrioritySamplerSharesSplitABatchByPriority(t *testing.T) {
	t.Parallel()
	s := newPrioritySampler(map[string]uint{"hi": 900, "lo": 100}, false)
	hi, total := 0, 0
	for i := 0; i < 200; i++ {
		shares := s.shares([]string{"lo", "hi"}, 50, nil)
		if shares[0]+shares[1] != 50 {
			t.Fatalf("shares %v do not add up to 50", shares)
		}
		hi += shares[1]
		total += 50
	}
	if frac := float64(hi) / float64(total); frac < 0.87 || frac > 0.93 {
		t.Errorf("priority 900 of 1000 got %.3f of the jobs, want about 0.9", frac)
	}
	strict := newPrioritySampler(map[string]uint{"hi": 900, "lo": 100}, true)
	if shares := strict.shares([]string{"hi", "lo"}, 50, nil); shares[0] != 50 || shares[1] != 0 {
		t.Errorf("strict shares %v, want all to the first", shares)
	}
}
