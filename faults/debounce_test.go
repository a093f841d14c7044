package faults

import (
	"fmt"
	"math/rand"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// Bursts of debounced enqueues run once each, with their last args, while worker processes are
// SIGKILLed and redis-server is SIGKILLed (appendfsync always) once and restarted from its AOF. Each
// burst's enqueues come within a span shorter than its window, so that a burst is one run by
// construction (no gap between enqueues reaches the window, and the maximum wait is past the span); a job carries its burst and its sequence number in its tracking key ("<burst>#<n>"),
// so the workers' ledger says which version of each burst ran. None may be lost, none may run in
// two versions, and the version that ran must be the last enqueued. How late each burst's first run
// started past its maximum wait is reported: a SIGKILLed worker's job waits for the dead-pool
// timeout, and a Redis restart holds everything up, so only a gross bound is asserted.
func TestDebouncedBurstsRunOnceUnderSIGKILL(t *testing.T) {
	skipIfShort(t)
	const (
		ns, ledger = "fd", "ledger"
		workers    = 3
		span       = 2 * time.Second // a burst's enqueues, so no gap between two reaches the window
		window     = 3 * time.Second
		maxWait    = 6 * time.Second
	)
	bursts := jobsPerScenario(20000) / 20
	srv := startRedis(t, "always")
	pool := newPool(srv.addr, 0)
	t.Cleanup(func() { pool.Close() })
	in := &inspector{t: t, pool: pool, ns: ns, ledger: ledger}
	fl := newFleet(t, "-redis", srv.addr, "-ns", ns, "-ledger", ledger, "-names", "fd", "-concurrency", "8",
		"-heartbeat", "1s", "-dead-pool", "3s", "-log", "error")
	for range workers {
		fl.spawnRegistered(in)
	}

	// Producers: each burst gets 2 to 10 enqueues spread over the span, the bursts starting over 6 s.
	enq := work.NewEnqueuer(ns, pool)
	type burstLog struct {
		mu        sync.Mutex
		first     time.Time
		last      int         // the highest sequence number accepted
		at        []time.Time // when each accepted enqueue was sent
		uncertain map[int]bool
	}
	logs := make([]*burstLog, bursts)
	var wg sync.WaitGroup
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	start := time.Now()
	for b := range bursts {
		logs[b] = &burstLog{uncertain: map[int]bool{}}
		n := 2 + rng.Intn(9)
		offset := time.Duration(rng.Int63n(int64(6 * time.Second)))
		steps := make([]time.Duration, n)
		for i := range steps {
			steps[i] = offset + time.Duration(rng.Int63n(int64(span)))
		}
		sort.Slice(steps, func(i, j int) bool { return steps[i] < steps[j] })
		wg.Add(1)
		go func(b int, steps []time.Duration) {
			defer wg.Done()
			l := logs[b]
			for i, at := range steps {
				time.Sleep(time.Until(start.Add(at)))
				k := fmt.Sprintf("b%05d#%d", b, i)
				for attempt := 0; ; attempt++ {
					t0 := time.Now()
					_, err := enq.EnqueueWith("fd", work.Q{"k": k}, work.EnqueueOptions{
						Debounce: &work.Debounce{ID: fmt.Sprintf("b%05d", b), Window: window, MaxWait: maxWait}})
					l.mu.Lock()
					if err == nil {
						if l.first.IsZero() {
							l.first = t0
						}
						l.last = i
						l.at = append(l.at, t0)
						delete(l.uncertain, i)
						l.mu.Unlock()
						break
					}
					// A failed call may have taken effect (the reply was lost): that version may
					// be the one that runs. Try again while Redis is down, as a producer would.
					l.uncertain[i] = true
					l.mu.Unlock()
					if attempt > 100 {
						return
					}
					time.Sleep(100 * time.Millisecond)
				}
			}
		}(b, steps)
	}

	// Faults while the bursts come and run: SIGKILL a worker every 1.5-2.5 s, and redis-server once.
	faultsUntil := start.Add(6*time.Second + span + maxWait)
	killedRedis := false
	for time.Now().Before(faultsUntil) {
		time.Sleep(1500*time.Millisecond + time.Duration(rng.Intn(1000))*time.Millisecond)
		if p := fl.random(); p != nil {
			fl.sigkill(p)
		}
		if !killedRedis && time.Since(start) > 5*time.Second {
			srv.kill(syscall.SIGKILL)
			time.Sleep(time.Second)
			srv.start()
			killedRedis = true
			t.Logf("redis-server SIGKILLed and restarted from its AOF")
		}
		for len(fl.live()) < workers {
			fl.spawnRegistered(in)
		}
	}
	wg.Wait()

	// Every burst done once, in one version.
	deadline := time.Now().Add(stretch(90 * time.Second))
	var done map[string][]int
	for {
		v := in.readLedger()
		done = map[string][]int{}
		for k := range v.done {
			b, seq, ok := strings.Cut(k, "#")
			if !ok {
				t.Fatalf("a done key %q of no burst", k)
			}
			n, _ := strconv.Atoi(seq)
			done[b] = append(done[b], n)
		}
		if len(done) >= bursts || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	fl.stopAll(10 * time.Second)

	// The first start of each burst's run, against its first enqueue plus the maximum wait.
	firstStart := map[string]int64{}
	runs := in.strings("HGETALL", ledger+":runs")
	for i := 0; i+1 < len(runs); i += 2 {
		b, _, _ := strings.Cut(runs[i], "#")
		parts := strings.Split(runs[i+1], "|")
		at, _ := strconv.ParseInt(parts[len(parts)-1], 10, 64)
		if s, ok := firstStart[b]; !ok || at < s {
			firstStart[b] = at
		}
	}
	// A burst is one run when no gap between its enqueues reached the window; the outage can stretch
	// a gap past it, and then the burst is rightly two. The gaps are measured between the accepted
	// enqueues, a subset of those that took effect, so a burst judged whole is whole.
	lost, versions, stale, split := 0, 0, 0, 0
	var late []time.Duration
	var examples []string
	for b, l := range logs {
		id := fmt.Sprintf("b%05d", b)
		got := done[id]
		whole := true
		for i := 1; i < len(l.at); i++ {
			if l.at[i].Sub(l.at[i-1]) >= window-200*time.Millisecond {
				whole = false
			}
		}
		if !whole {
			split++
		}
		ranLast := false
		for _, v := range got {
			if v == l.last || (v > l.last && l.uncertain[v]) {
				ranLast = true
			}
		}
		switch {
		case len(got) == 0:
			lost++
			examples = append(examples, id+" never ran")
		case len(got) > 1 && whole:
			versions++
			examples = append(examples, fmt.Sprintf("%s ran in versions %v", id, got))
		case !ranLast:
			stale++
			examples = append(examples, fmt.Sprintf("%s ran versions %v, not the last accepted (%d)", id, got, l.last))
		}
		if s, ok := firstStart[id]; ok && !l.first.IsZero() {
			late = append(late, time.Unix(0, s).Sub(l.first.Add(maxWait)))
		}
	}
	sort.Slice(late, func(i, j int) bool { return late[i] < late[j] })
	if len(late) > 0 {
		t.Logf("%d bursts (%d split by the outage); lost %d, whole bursts run in two versions %d, last version not run %d; first run past first enqueue + MaxWait: p50 %v, p99 %v, max %v",
			bursts, split, lost, versions, stale, late[len(late)/2], late[len(late)*99/100], late[len(late)-1])
	}
	if lost+versions+stale > 0 {
		sort.Strings(examples)
		t.Errorf("lost %d, two versions %d, stale version %d; e.g. %q", lost, versions, stale, examples[:min(5, len(examples))])
	}
	if len(late) > 0 && late[len(late)-1] > stretch(5*time.Second) {
		t.Errorf("a burst first ran %v past its maximum wait", late[len(late)-1])
	}
}
