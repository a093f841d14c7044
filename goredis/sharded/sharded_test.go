package sharded_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis/internal/redistest"
	"github.com/workqueue/work/goredis/sharded"
)

func TestMain(m *testing.M) {
	if os.Getenv("GOREDIS_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

type tctx struct{}

var fastOpts = work.WorkerPoolOptions{HeartbeatInterval: time.Second, DeadPoolTimeout: 3 * time.Second}

func TestShardNamesAndRouting(t *testing.T) {
	// The tags are fixed: they must never change, or jobs would move between namespaces.
	var tags []string
	for i := 0; i < 6; i++ {
		tags = append(tags, sharded.ShardNamespace("app", i, 6))
	}
	if got := strings.Join(tags, " "); got != "{app.0-dy} {app.1-fz} {app.2-ah} {app.3-bq} {app.4-dh} {app.5-fk}" {
		t.Errorf("ShardNamespace: %s", got)
	}
	if got := sharded.ShardNamespace("app", 7, 12); got[:8] != "{app.07-" {
		t.Errorf("ShardNamespace(app, 7, 12) = %s: the index is padded to the width of 11", got)
	}
	// Whatever the namespace, shards spread evenly over 2 and 4 equal slot ranges.
	for _, ns := range []string{"app", "orders", "x", "billing-eu"} {
		for _, m := range []int{2, 4} {
			count := make([]int, m)
			for i := 0; i < 8; i++ {
				s := sharded.ShardSlot(ns, i, 8)
				if s != redistest.Slot(sharded.ShardNamespace(ns, i, 8)) {
					t.Fatalf("ShardSlot(%s, %d) = %d, CRC16 of the namespace says %d", ns, i, s, redistest.Slot(sharded.ShardNamespace(ns, i, 8)))
				}
				count[s*m/16384]++
			}
			for _, c := range count {
				if c != 8/m {
					t.Errorf("namespace %s: 8 shards over %d masters: %v", ns, m, count)
					break
				}
			}
		}
	}
	// FNV-1a is fixed: these values must never change, or job names would move between shards.
	for name, want := range map[string]int{"send_email": 0, "export": 3, "": 1} {
		if got := sharded.ShardOf(name, 6); got != want {
			t.Errorf("ShardOf(%q, 6) = %d, want %d", name, got, want)
		}
	}
	for i := 0; i < 100; i++ {
		if s := sharded.ShardOf(fmt.Sprint("job", i), 7); s < 0 || s >= 7 {
			t.Fatalf("shard %d out of range", s)
		}
	}
	mustPanic(t, "braces in the namespace", func() { sharded.NewEnqueuerWithBackend("{app}", 2, nil) })
	mustPanic(t, "no shards", func() { sharded.NewEnqueuerWithBackend("app", 0, nil) })
}

func TestSplitConcurrency(t *testing.T) {
	w := func(ws ...int) func(int) int { return func(s int) int { return ws[s] } }
	for _, c := range []struct {
		conc    uint
		weights []int
		want    []uint
	}{
		{50, []int{2, 2, 2, 0, 2, 4}, []uint{9, 8, 8, 0, 8, 17}},
		{10, []int{1, 1, 1}, []uint{4, 3, 3}},
		{2, []int{1, 1, 1, 1}, []uint{1, 1, 1, 1}}, // at least one each
		{7, []int{0, 0}, []uint{0, 0}},
	} {
		got := sharded.SplitConcurrency(c.conc, len(c.weights), w(c.weights...))
		if fmt.Sprint(got) != fmt.Sprint(c.want) {
			t.Errorf("SplitConcurrency(%d, %v) = %v, want %v", c.conc, c.weights, got, c.want)
		}
	}
}

func mustPanic(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if recover() == nil {
			t.Errorf("%s: no panic", what)
		}
	}()
	fn()
}

// TestShardedOnOneServer runs a sharded namespace on one server: the shards are plain namespaces,
// so routing, fan-out and the Client's merging can be checked without a cluster.
func TestShardedOnOneServer(t *testing.T) {
	s := redistest.StartServer(t)
	client := redis.NewClient(&redis.Options{Addr: s.Addr})
	defer client.Close()
	const shards = 4
	ns := fmt.Sprintf("sh%d", os.Getpid())

	wp := sharded.NewWorkerPool(tctx{}, 8, ns, shards, client, fastOpts)
	mustPanic(t, "a bad handler at registration", func() { wp.Job("bad", func(int) {}) })
	mustPanic(t, "a bad cron spec at registration", func() { wp.PeriodicallyEnqueue("nope", "x") })

	var order []string
	var omu sync.Mutex
	wp.Middleware(func(j *work.Job, next work.NextMiddlewareFunc) error {
		omu.Lock()
		order = append(order, "mw:"+j.Name)
		omu.Unlock()
		return next()
	})
	names := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	var mu sync.Mutex
	ran := map[string]int{}
	for _, n := range names {
		wp.Job(n, func(j *work.Job) error {
			mu.Lock()
			ran[j.Name+"/"+j.ArgString("k")]++
			mu.Unlock()
			return nil
		})
	}
	wp.JobWithOptions("doomed", work.JobOptions{MaxFails: 1}, func(j *work.Job) error { return errors.New("no") })
	var ticks atomic.Int64
	wp.PeriodicallyEnqueue("* * * * * *", "tick")
	wp.Job("tick", func(j *work.Job) error { ticks.Add(1); return nil })

	e := sharded.NewEnqueuer(ns, shards, client)
	const per = 50
	var batch []work.BatchJob
	for i := 0; i < per; i++ {
		for _, n := range names {
			batch = append(batch, work.BatchJob{Name: n, Args: work.Q{"k": fmt.Sprint(i)}})
		}
	}
	jobs, err := e.EnqueueBatch(batch)
	if err != nil || len(jobs) != len(batch) {
		t.Fatalf("EnqueueBatch: %d jobs, %v", len(jobs), err)
	}
	for i, j := range jobs {
		if j == nil || j.Name != batch[i].Name {
			t.Fatalf("EnqueueBatch result %d: %+v", i, j)
		}
	}
	// Each job sits in the namespace of its shard.
	for _, n := range names {
		key := sharded.ShardNamespace(ns, sharded.ShardOf(n, shards), shards) + ":jobs:" + n
		if got := client.LLen(context.Background(), key).Val(); got != per {
			t.Errorf("%s holds %d jobs, want %d", key, got, per)
		}
	}
	const dead = 25 // more than a page
	for i := 0; i < dead; i++ {
		if _, err := e.Enqueue("doomed", work.Q{"i": i}); err != nil {
			t.Fatal(err)
		}
	}
	c := sharded.NewClient(ns, shards, client)
	if err := c.PauseQueue("alpha"); err != nil {
		t.Fatal(err)
	}

	wp.Start()
	defer wp.Stop()
	pools := wp.Pools()
	want := map[int]bool{}
	for _, n := range append(names, "doomed", "tick") {
		want[sharded.ShardOf(n, shards)] = true
	}
	if len(pools) != len(want) {
		t.Errorf("%d shard pools, want %d", len(pools), len(want))
	}
	redistest.Eventually(t, 30*time.Second, "every unpaused job to run and the doomed ones to die", func() bool {
		mu.Lock()
		n := len(ran)
		mu.Unlock()
		_, d, err := c.DeadJobs(1)
		return n == per*(len(names)-1) && err == nil && d == dead
	})
	qs, err := c.Queues()
	if err != nil {
		t.Fatal(err)
	}
	var qnames []string
	for _, q := range qs {
		qnames = append(qnames, q.JobName)
		if q.JobName == "alpha" && q.Count != per {
			t.Errorf("paused alpha holds %d, want %d", q.Count, per)
		}
	}
	if !sort.StringsAreSorted(qnames) || len(qnames) != len(names)+2 {
		t.Errorf("merged queues: %v", qnames)
	}
	if err := c.UnpauseQueue("alpha"); err != nil {
		t.Fatal(err)
	}
	wp.Drain()
	mu.Lock()
	if len(ran) != per*len(names) {
		t.Errorf("%d distinct jobs ran, want %d", len(ran), per*len(names))
	}
	for k, n := range ran {
		if n != 1 {
			t.Errorf("%s ran %d times", k, n)
		}
	}
	mu.Unlock()
	omu.Lock()
	if len(order) < per*len(names) || !strings.HasPrefix(order[0], "mw:") {
		t.Errorf("middleware ran %d times", len(order))
	}
	omu.Unlock()

	// Dead jobs: merged pages in died-at order, totals over the shards.
	p1, total, err := c.DeadJobs(1)
	if err != nil || total != dead || len(p1) != 20 {
		t.Fatalf("DeadJobs(1): %d of %d, %v", len(p1), total, err)
	}
	p2, _, err := c.DeadJobs(2)
	if err != nil || len(p2) != dead-20 {
		t.Fatalf("DeadJobs(2): %d, %v", len(p2), err)
	}
	all := append(p1, p2...)
	for i := 1; i < len(all); i++ {
		if all[i].DiedAt < all[i-1].DiedAt {
			t.Fatalf("dead jobs out of order at %d", i)
		}
	}
	if err := c.DeleteDeadJob(all[1].DiedAt, all[1].ID); err != nil {
		t.Errorf("DeleteDeadJob: %v", err)
	}
	if err := c.DeleteDeadJob(all[1].DiedAt, all[1].ID); !errors.Is(err, work.ErrNotDeleted) {
		t.Errorf("DeleteDeadJob of a deleted job: %v", err)
	}
	if err := c.RetryDeadJob(all[1].DiedAt, all[1].ID); !errors.Is(err, work.ErrNotRetried) {
		t.Errorf("RetryDeadJob of a deleted job: %v", err)
	}
	if err := c.RetryDeadJob(all[0].DiedAt, all[0].ID); err != nil {
		t.Errorf("RetryDeadJob: %v", err)
	}
	if loc, err := c.FindJob("nonexistent"); !errors.Is(err, work.ErrJobNotFound) {
		t.Errorf("FindJob: %v %v", loc, err)
	}
	redistest.Eventually(t, 10*time.Second, "periodic ticks", func() bool { return ticks.Load() >= 2 })
	hbs, err := c.WorkerPoolHeartbeats()
	if err != nil || len(hbs) != len(pools) {
		t.Errorf("heartbeats: %d, want %d (%v)", len(hbs), len(pools), err)
	}
	var conc uint
	for _, hb := range hbs {
		conc += hb.Concurrency
	}
	if conc < 8 || conc > 8+uint(len(pools)) {
		t.Errorf("total concurrency over the shard pools: %d, want about 8", conc)
	}
	if err := c.DeleteAllDeadJobs(); err != nil {
		t.Fatal(err)
	}
	if sum, err := c.Summary(); err != nil || sum.Dead != 0 {
		t.Errorf("Summary after DeleteAllDeadJobs: %+v %v", sum, err)
	}
	mustPanic(t, "Job after Start", func() { wp.Job("late", func(*work.Job) error { return nil }) })
	if err := wp.StopContext(context.Background()); err != nil {
		t.Errorf("StopContext: %v", err)
	}
}
