package goredis_test

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
	"github.com/workqueue/work/goredis/internal/redistest"
	"github.com/workqueue/work/goredis/sharded"
)

// TestCluster runs on a Redis Cluster of three masters, each with a replica, built from six
// redis-server processes with `redis-cli --cluster create`.
func TestCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a six-node Redis Cluster")
	}
	cl := redistest.StartCluster(t, 3, 1)
	client := cl.Client(t, 3)

	t.Run("ConnSemantics", func(t *testing.T) {
		checkConnSemantics(t, goredis.NewBackend(client), newNamespace("conn", true))
		checkConnSemantics(t, goredis.NewBackend(cl.Client(t, 2)), newNamespace("conn2", true))
	})
	t.Run("Suite", func(t *testing.T) {
		runSuite(t, &suiteEnv{client: client, hashTag: true, mode: "cluster", addrs: cl.Addrs(), volume: 6000})
	})
	t.Run("WaitReplicasCountsTheMastersReplica", func(t *testing.T) {
		ns := newNamespace("wait", true)
		e := goredis.NewEnqueuer(ns, client)
		e.WaitReplicas, e.WaitTimeout = 1, 2*time.Second
		if _, err := e.Enqueue("x", nil); err != nil {
			t.Fatalf("enqueue with WAIT 1: %v", err)
		}
		if _, err := e.EnqueueBatch([]work.BatchJob{{Name: "x"}, {Name: "y"}}); err != nil {
			t.Fatalf("batch with WAIT 1: %v", err)
		}
		if _, err := e.EnqueueIn("x", 60, nil); err != nil {
			t.Fatalf("scheduled with WAIT 1: %v", err)
		}
		if _, err := e.EnqueueUnique("x", work.Q{"u": 1}); err != nil {
			t.Fatalf("unique with WAIT 1: %v", err)
		}
		e.WaitReplicas, e.WaitTimeout = 2, 200*time.Millisecond // each master has one replica
		if _, err := e.Enqueue("x", nil); !errors.Is(err, work.ErrNotReplicated) {
			t.Fatalf("enqueue with WAIT 2: %v, want ErrNotReplicated", err)
		}
	})
	t.Run("NamespaceWithoutHashTagFailsLoudly", func(t *testing.T) {
		// Without a hash tag the keys of a namespace spread over slots; multi-key scripts fail.
		e := goredis.NewEnqueuer(newNamespace("notag", false), client)
		_, err := e.EnqueueUnique("x", work.Q{"a": 1})
		if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
			t.Fatalf("unique enqueue without a hash tag: %v, want a CROSSSLOT error", err)
		}
	})
	t.Run("Sharded", func(t *testing.T) { testShardedOnCluster(t, cl) })
	t.Run("MasterFailover", func(t *testing.T) { testClusterFailover(t, cl) })
}

// testShardedOnCluster runs a sharded namespace whose shards sit on every master.
func testShardedOnCluster(t *testing.T, cl *redistest.Cluster) {
	client := cl.Client(t, 3)
	const shards = 6
	ns := fmt.Sprintf("shardapp%d", nsCounter.Add(1))
	masters := map[string][]int{}
	for i := 0; i < shards; i++ {
		m := cl.MasterOf(t, sharded.ShardNamespace(ns, i, shards))
		masters[m.Addr] = append(masters[m.Addr], i)
	}
	t.Logf("shards by master: %v", masters)
	if len(masters) < 2 {
		t.Fatalf("the %d shards all landed on one master", shards)
	}
	names := make([]string, 12)
	for i := range names {
		names[i] = fmt.Sprintf("job%02d", i)
	}
	var mu sync.Mutex
	seen := map[string]int{}
	var running, peak atomic.Int64
	var tickIDs sync.Map
	wp := sharded.NewWorkerPool(tctx{}, 24, ns, shards, client, fastOpts)
	for _, n := range names {
		wp.Job(n, func(j *work.Job) error {
			mu.Lock()
			seen[j.ArgString("k")]++
			mu.Unlock()
			return nil
		})
	}
	wp.JobWithOptions("limited", work.JobOptions{MaxConcurrency: 1}, func(j *work.Job) error {
		n := running.Add(1)
		if n > peak.Load() {
			peak.Store(n)
		}
		time.Sleep(20 * time.Millisecond)
		running.Add(-1)
		return nil
	})
	wp.JobWithOptions("fails", work.JobOptions{MaxFails: 1}, func(j *work.Job) error { return errors.New("no") })
	wp.PeriodicallyEnqueue("* * * * * *", "tick")
	wp.Job("tick", func(j *work.Job) error { tickIDs.Store(j.ID, true); return nil })
	// The unique pair goes in before the pool starts: once it runs, a worker could start the first
	// job (releasing its lock) before the second enqueue, which would then be accepted.
	e := sharded.NewEnqueuer(ns, shards, client)
	if j, err := e.EnqueueUnique("job00", work.Q{"k": "u"}); err != nil || j == nil {
		t.Fatalf("unique: %v %v", j, err)
	}
	if j, err := e.EnqueueUnique("job00", work.Q{"k": "u"}); err != nil || j != nil {
		t.Fatalf("duplicate unique: %v %v", j, err)
	}
	wp.Start()
	defer wp.Stop()
	if got := len(wp.Pools()); got < 2 {
		t.Fatalf("%d shard pools", got)
	}

	const total = 3000
	batch := make([]work.BatchJob, 0, 100)
	for i := 0; i < total; i++ {
		batch = append(batch, work.BatchJob{Name: names[i%len(names)], Args: work.Q{"k": fmt.Sprint(i)}})
		if len(batch) == cap(batch) {
			if _, err := e.EnqueueBatch(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	for i := 0; i < 6; i++ {
		if _, err := e.Enqueue("limited", nil); err != nil {
			t.Fatal(err)
		}
	}
	for i := 0; i < 3; i++ {
		if _, err := e.Enqueue("fails", work.Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	c := sharded.NewClient(ns, shards, client)
	eventually(t, 60*time.Second, "every job to run and the failing ones to die", func() bool {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		_, dead, err := c.DeadJobs(1)
		return n == total+1 && err == nil && dead == 3
	})
	wp.Drain()
	mu.Lock()
	for k, n := range seen {
		if n != 1 {
			t.Errorf("job %s ran %d times", k, n)
		}
	}
	mu.Unlock()
	if p := peak.Load(); p != 1 {
		t.Errorf("MaxConcurrency 1: peak %d", p)
	}
	eventually(t, 10*time.Second, "two periodic ticks", func() bool {
		n := 0
		tickIDs.Range(func(_, _ interface{}) bool { n++; return true })
		return n >= 2
	})
	qs, err := c.Queues()
	if err != nil {
		t.Fatal(err)
	}
	if len(qs) != len(names)+3 {
		t.Errorf("sharded Queues: %d queues, want %d", len(qs), len(names)+3)
	}
	for _, q := range qs {
		if q.Count != 0 {
			t.Errorf("queue %s: %d left", q.JobName, q.Count)
		}
	}
	dead, n, err := c.DeadJobs(1)
	if err != nil || n != 3 || len(dead) != 3 {
		t.Fatalf("sharded DeadJobs: %d %d %v", len(dead), n, err)
	}
	if err := c.DeleteDeadJob(dead[0].DiedAt, dead[0].ID); err != nil {
		t.Errorf("DeleteDeadJob: %v", err)
	}
	if sum, err := c.Summary(); err != nil || sum.Dead != 2 {
		t.Errorf("Summary: %+v %v", sum, err)
	}
	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil || len(hbs) != len(wp.Pools()) {
		t.Errorf("heartbeats: %d for %d shard pools (%v)", len(hbs), len(wp.Pools()), err)
	}
}

// testClusterFailover kills the master that serves a namespace while a pool runs on it and an
// enqueuer (WaitReplicas 1) keeps enqueueing, and checks the pool goes on by itself once the replica
// has taken over, and that every job acknowledged with WAIT runs.
func testClusterFailover(t *testing.T, cl *redistest.Cluster) {
	client := cl.Client(t, 3)
	ns := newNamespace("failover", true)
	master := cl.MasterOf(t, ns)
	var mu sync.Mutex
	ran := map[string]time.Time{}  // job key -> first run
	sent := map[string]time.Time{} // job key -> when its enqueue began
	acked := map[string]bool{}     // job keys whose enqueue succeeded
	wp := goredis.NewWorkerPool(tctx{}, 5, ns, client, fastOpts)
	wp.Job("j", func(j *work.Job) error {
		mu.Lock()
		if _, ok := ran[j.ArgString("k")]; !ok {
			ran[j.ArgString("k")] = time.Now()
		}
		mu.Unlock()
		return nil
	})
	wp.Start()
	defer wp.Stop()
	e := goredis.NewEnqueuer(ns, client)
	e.WaitReplicas, e.WaitTimeout = 1, time.Second
	stop := make(chan struct{})
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			k := fmt.Sprint(i)
			mu.Lock()
			sent[k] = time.Now()
			mu.Unlock()
			if _, err := e.Enqueue("j", work.Q{"k": k}); err == nil {
				mu.Lock()
				acked[k] = true
				mu.Unlock()
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	defer func() {
		select {
		case <-stop:
		default:
			close(stop)
		}
		<-loopDone
	}()
	time.Sleep(time.Second)
	master.Kill()
	killed := time.Now()
	var firstAfter time.Time
	eventually(t, 40*time.Second, "a job enqueued after the kill to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for k, at := range ran {
			if sent[k].After(killed) && (firstAfter.IsZero() || at.Before(firstAfter)) {
				firstAfter = at
			}
		}
		return !firstAfter.IsZero()
	})
	t.Logf("cluster master killed: jobs enqueued after the kill run again %.1fs later", firstAfter.Sub(killed).Seconds())
	time.Sleep(500 * time.Millisecond)
	close(stop)
	<-loopDone
	eventually(t, 20*time.Second, "every job acknowledged with WAIT 1 to run", func() bool {
		mu.Lock()
		defer mu.Unlock()
		for k := range acked {
			if _, ok := ran[k]; !ok {
				return false
			}
		}
		return true
	})
	mu.Lock()
	t.Logf("%d enqueues acknowledged with WAIT 1, %d attempted; all acknowledged ones ran", len(acked), len(sent))
	mu.Unlock()
}
