package goredis_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
	"github.com/workqueue/work/goredis/internal/redistest"
)

// TestSentinelFailover runs a pool and four enqueuers on a Sentinel-managed primary (one replica,
// three sentinels), kills the primary with SIGKILL mid-run and measures: how long until jobs flow
// again, whether every job acknowledged with WaitReplicas=1 survives (runs, or waits in its queue),
// and, in a second run without WAIT, how many acknowledged jobs were lost with the primary. Half the
// jobs go to a queue no pool serves, so that a job lost in replication shows there even when the pool
// had already run it from the old primary.
func TestSentinelFailover(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers and sentinels, and waits for a failover")
	}
	t.Run("WaitReplicas1", func(t *testing.T) {
		if r := runFailover(t, 1, false); r.lost+r.parkedLost > 0 {
			t.Errorf("%d jobs acknowledged with WAIT 1 were lost", r.lost+r.parkedLost)
		}
	})
	t.Run("NoWait", func(t *testing.T) { runFailover(t, 0, false) })
}

// TestSentinelFailoverReplicaBehind is TestSentinelFailover with the replica behind when the primary
// dies: the replica is frozen (SIGSTOP) and the primary drops its link (CLIENT KILL TYPE replica)
// 300 ms before the kill, so the writes of those 300 ms never reach the replica that is then
// promoted. Without WAIT they are acknowledged and lost; with WaitReplicas 1 they fail with
// ErrNotReplicated instead.
func TestSentinelFailoverReplicaBehind(t *testing.T) {
	if testing.Short() {
		t.Skip("starts redis-servers and sentinels, and waits for a failover")
	}
	t.Run("WaitReplicas1", func(t *testing.T) {
		if r := runFailover(t, 1, true); r.lost+r.parkedLost > 0 {
			t.Errorf("%d jobs acknowledged with WAIT 1 were lost", r.lost+r.parkedLost)
		}
	})
	t.Run("NoWait", func(t *testing.T) { runFailover(t, 0, true) })
}

type failoverReport struct {
	attempted, acked, notReplicated, failed int
	lost, stranded, duplicates              int
	parkedAcked, parkedLost                 int
	phantom                                 int
	enqueueBack, processingBack             time.Duration
}

func runFailover(t *testing.T, waitReplicas int, replicaBehind bool) failoverReport {
	st := redistest.StartSentinel(t)
	client := redis.NewFailoverClient(&redis.FailoverOptions{
		MasterName:    redistest.MasterName,
		SentinelAddrs: st.SentinelAddrs(),
		DialTimeout:   500 * time.Millisecond,
	})
	t.Cleanup(func() { client.Close() })
	ns := newNamespace("failover", false)

	var mu sync.Mutex
	ran := map[string]time.Time{} // job key -> first run
	runs := map[string]int{}
	sent := map[string]time.Time{}  // job key -> when its enqueue began
	acked := map[string]time.Time{} // job key -> when its enqueue succeeded
	ids := map[string]string{}      // job key -> job ID
	var rep failoverReport
	errSamples := map[string]int{}

	wp := goredis.NewWorkerPool(tctx{}, 10, ns, client, fastOpts)
	wp.Job("j", func(j *work.Job) error {
		k := j.ArgString("k")
		mu.Lock()
		if _, ok := ran[k]; !ok {
			ran[k] = time.Now()
		}
		runs[k]++
		mu.Unlock()
		return nil
	})
	wp.Start()
	defer wp.Stop()

	e := goredis.NewEnqueuer(ns, client)
	e.WaitReplicas, e.WaitTimeout = waitReplicas, 500*time.Millisecond
	stop := make(chan struct{})
	loopDone := make(chan struct{})
	const enqueuers = 4
	var wg sync.WaitGroup
	var next int64
	for w := 0; w < enqueuers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				mu.Lock()
				// Every other job goes to a queue no pool serves: what is missing from it after the
				// failover was lost in replication, whatever the pool had consumed.
				name, k := "j", fmt.Sprint(next)
				if next%2 == 1 {
					name, k = "parked", "p"+k
				}
				next++
				sent[k] = time.Now()
				mu.Unlock()
				job, err := e.Enqueue(name, work.Q{"k": k})
				mu.Lock()
				rep.attempted++
				switch {
				case err == nil:
					acked[k], ids[k] = time.Now(), job.ID
				case errors.Is(err, work.ErrNotReplicated):
					rep.notReplicated++
				default:
					rep.failed++
					if len(errSamples) < 50 {
						errSamples[err.Error()]++
					}
				}
				mu.Unlock()
				time.Sleep(time.Millisecond)
			}
		}()
	}
	go func() { wg.Wait(); close(loopDone) }()
	stopLoop := func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-loopDone
	}
	defer stopLoop()

	time.Sleep(1500 * time.Millisecond)
	if replicaBehind {
		// Freeze the replica so that it cannot reconnect, and cut its link: what the primary
		// takes from now on never reaches it.
		st.Replica.Pause()
		if _, err := st.Primary.Do("CLIENT", "KILL", "TYPE", "replica"); err != nil {
			t.Fatal(err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	st.Primary.Kill()
	if replicaBehind {
		st.Replica.Resume()
	}
	killed := time.Now()
	eventually(t, 45*time.Second, "a job enqueued after the kill to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		var first time.Time
		for k, at := range ran {
			if sent[k].After(killed) && (first.IsZero() || at.Before(first)) {
				first = at
			}
		}
		if first.IsZero() {
			return false
		}
		rep.processingBack = first.Sub(killed)
		return true
	})
	time.Sleep(time.Second) // enqueue on the new primary for a while
	stopLoop()

	// Let the pool finish what is queued, then count.
	cl := goredis.NewClient(ns, client)
	eventually(t, 20*time.Second, "the queue to empty", func() bool {
		qs, err := cl.QueueStats()
		for _, q := range qs {
			if q.JobName == "j" {
				return err == nil && q.Count == 0
			}
		}
		return false
	})
	wp.Drain()
	// After a drain the pool holds nothing; entries left in its in-progress list are jobs whose
	// fetch reached the replica but whose acknowledgement did not: they already ran.
	if hbs, err := cl.WorkerPoolHeartbeats(); err == nil && len(hbs) == 1 {
		rep.phantom = int(client.LLen(context.Background(), ns+":jobs:j:"+hbs[0].WorkerPoolID+":inprogress").Val())
	}
	mu.Lock()
	defer mu.Unlock()
	parked := map[string]bool{}
	raw, err := client.LRange(context.Background(), ns+":jobs:parked", 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range raw {
		var j work.Job
		if json.Unmarshal([]byte(r), &j) == nil {
			parked[j.ArgString("k")] = true
		}
	}
	var lostKeys []string
	for k := range acked {
		if strings.HasPrefix(k, "p") {
			rep.parkedAcked++
			if !parked[k] {
				rep.parkedLost++
				lostKeys = append(lostKeys, k)
			}
			continue
		}
		if _, ok := ran[k]; !ok {
			lostKeys = append(lostKeys, k)
		}
	}
	sort.Strings(lostKeys)
	for _, k := range lostKeys {
		if strings.HasPrefix(k, "p") {
			continue
		}
		// A job that exists somewhere (an in-progress list, say) is stranded, not lost.
		if loc, err := cl.FindJob(ids[k]); err == nil && loc != nil {
			rep.stranded++
			t.Logf("job %s (%s) did not run but is in Redis: %+v", k, ids[k], loc)
		} else {
			rep.lost++
		}
	}
	for _, n := range runs {
		if n > 1 {
			rep.duplicates++
		}
	}
	rep.acked = len(acked)
	for k, at := range acked {
		if sent[k].After(killed) && (rep.enqueueBack == 0 || at.Sub(killed) < rep.enqueueBack) {
			rep.enqueueBack = at.Sub(killed)
		}
	}
	if len(lostKeys) > 10 {
		lostKeys = append(lostKeys[:10], "...")
	}
	back := "never (the new primary has no replica to acknowledge WAIT)"
	if rep.enqueueBack > 0 {
		back = fmt.Sprintf("after %.1fs", rep.enqueueBack.Seconds())
	}
	t.Logf("enqueue errors during the failover: %v", errSamples)
	t.Logf("WaitReplicas=%d, replica behind=%v: %d enqueues attempted, %d acknowledged, %d ErrNotReplicated, %d other errors; "+
		"after SIGKILL of the primary: acknowledged enqueues again %s, jobs run again after %.1fs; "+
		"acknowledged jobs lost: %d of the served queue and %d of %d in the parked queue (%v), stranded: %d; jobs run more than once: %d; entries left in the drained pool's in-progress list: %d",
		waitReplicas, replicaBehind, rep.attempted, rep.acked, rep.notReplicated, rep.failed,
		back, rep.processingBack.Seconds(), rep.lost, rep.parkedLost, rep.parkedAcked, lostKeys, rep.stranded, rep.duplicates, rep.phantom)
	return rep
}
