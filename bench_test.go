package work

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
	"github.com/workqueue/work/internal/redistest"
)

// Benchmarks of the library's hot paths against the test redis-server. They report, besides time:
// jobs/s, client round trips per job (counted on the connections), and Redis commands and server CPU
// per job (from INFO deltas; run them alone, as other clients of the server would count too).
//
//	go test -run '^$' -bench . -benchtime 20000x

// countingNetConn counts round trips as writes on the socket: redigo buffers a command or a pipeline
// and writes it with one Flush.
type countingNetConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingNetConn) Write(p []byte) (int, error) {
	c.n.Add(1)
	return c.Conn.Write(p)
}

func newCountingPool(tb testing.TB) (*redis.Pool, *atomic.Int64) {
	n := new(atomic.Int64)
	pool := wrappedPool(tb, 100, func(c net.Conn) net.Conn { return countingNetConn{Conn: c, n: n} })
	return pool, n
}

// seedJobs pushes n no-op jobs spread over the given names, pipelined.
func seedJobs(tb testing.TB, pool *redis.Pool, ns string, names []string, n int) {
	ks := rdb.NewKeyspace(ns)
	c := pool.Get()
	defer c.Close()
	for i := 0; i < n; i++ {
		name := names[i%len(names)]
		raw, _ := newJob(name, nil).serialize()
		c.Send("LPUSH", ks.Jobs(name), raw)
		if i%1000 == 999 {
			if _, err := c.Do(""); err != nil {
				tb.Fatal(err)
			}
		}
	}
	if _, err := c.Do(""); err != nil {
		tb.Fatal(err)
	}
}

type benchCtx struct{}

// BenchmarkProcessNoopJobs is gocraft's burn-down: no-op jobs over 5 names, drained by one pool.
func BenchmarkProcessNoopJobs(b *testing.B) {
	for _, conc := range []uint{10, 50} {
		b.Run(fmt.Sprintf("concurrency=%d", conc), func(b *testing.B) {
			pool, rt := newCountingPool(b)
			ns := newTestNamespace(b, pool)
			names := []string{"a", "b", "c", "d", "e"}
			seedJobs(b, pool, ns, names, b.N)
			var done atomic.Int64
			wp := NewWorkerPool(benchCtx{}, conc, ns, pool)
			for _, name := range names {
				wp.Job(name, func(*Job) error { done.Add(1); return nil })
			}
			burnDown(b, pool, rt, wp, &done)
		})
	}
}

// burnDown starts wp, whose handlers count the jobs they run in done, times it until it has run b.N
// jobs (already queued), and reports jobs/s, round trips, Redis commands and Redis CPU per job.
func burnDown(b *testing.B, pool *redis.Pool, rt *atomic.Int64, wp *WorkerPool, done *atomic.Int64) {
	cmds0, cpu0 := redistest.ServerStats(b, pool)
	rt0 := rt.Load()
	b.ResetTimer()
	start := time.Now()
	wp.Start()
	for done.Load() < int64(b.N) {
		time.Sleep(time.Millisecond)
	}
	elapsed := time.Since(start)
	b.StopTimer()
	wp.Drain()
	rts := rt.Load() - rt0
	wp.Stop()
	cmds1, cpu1 := redistest.ServerStats(b, pool)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "jobs/s")
	b.ReportMetric(float64(rts)/float64(b.N), "roundtrips/job")
	b.ReportMetric(float64(cmds1-cmds0-2)/float64(b.N), "rediscmds/job")
	b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "redis-µs/job")
}

// BenchmarkEnqueue measures single Enqueue calls.
func BenchmarkEnqueue(b *testing.B) {
	pool, rt := newCountingPool(b)
	ns := newTestNamespace(b, pool)
	e := NewEnqueuer(ns, pool)
	args := Q{"addr": "test@example.com", "n": 1}
	rt0 := rt.Load()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := e.Enqueue("x", args); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(rt.Load()-rt0)/float64(b.N), "roundtrips/job")
}

// BenchmarkEnqueueExpectingEmpty measures single Enqueue calls that expect their queue empty, as at a
// steady load a pool keeps up with: each runs the hand-off script (no pool waits here, so each job
// goes to the queue).
func BenchmarkEnqueueExpectingEmpty(b *testing.B) {
	pool := newTestPool(b)
	ns := newTestNamespace(b, pool)
	e := NewEnqueuer(ns, pool)
	args := Q{"addr": "test@example.com", "n": 1}
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		expect := new(atomic.Bool)
		expect.Store(true)
		e.drained.Store("x", expect)
		if _, err := e.Enqueue("x", args); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIdlePickup measures enqueue-to-start latency on an idle pool, one job at a time.
func BenchmarkIdlePickup(b *testing.B) {
	pool := newTestPool(b)
	ns := newTestNamespace(b, pool)
	startedAt := make(chan time.Time, 1)
	wp := NewWorkerPool(benchCtx{}, 10, ns, pool)
	wp.Job("ping", func(*Job) error { startedAt <- time.Now(); return nil })
	wp.Start()
	defer wp.Stop()
	e := NewEnqueuer(ns, pool)
	if _, err := e.Enqueue("ping", nil); err != nil { // warm up: subscribed and idle
		b.Fatal(err)
	}
	<-startedAt
	lat := make([]time.Duration, 0, b.N)
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		time.Sleep(2 * time.Millisecond) // let the pool go idle again
		t0 := time.Now()
		if _, err := e.Enqueue("ping", nil); err != nil {
			b.Fatal(err)
		}
		lat = append(lat, (<-startedAt).Sub(t0))
	}
	b.StopTimer()
	sort.Slice(lat, func(i, j int) bool { return lat[i] < lat[j] })
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds())/1000, "p50-ms")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds())/1000, "p99-ms")
}

// BenchmarkIdlePoolRedisLoad measures the commands an idle pool of 100 workers sends per second.
// Run it with -benchtime 1x; it watches the pool for 20 seconds.
func BenchmarkIdlePoolRedisLoad(b *testing.B) {
	pool, rt := newCountingPool(b)
	ns := newTestNamespace(b, pool)
	wp := NewWorkerPool(benchCtx{}, 100, ns, pool)
	for i := 0; i < 5; i++ {
		wp.Job(fmt.Sprintf("job%d", i), func(*Job) error { return nil })
	}
	wp.Start()
	time.Sleep(3 * time.Second) // past the start-up and the first idle backoffs
	rt0 := rt.Load()
	const watch = 20 * time.Second
	time.Sleep(watch)
	n := rt.Load() - rt0
	wp.Stop()
	b.ReportMetric(float64(n)/watch.Seconds(), "commands/s")
}

// BenchmarkEnqueueBatch measures EnqueueBatch with 1000 jobs per call; ns/op is per job.
func BenchmarkEnqueueBatch(b *testing.B) {
	pool, rt := newCountingPool(b)
	ns := newTestNamespace(b, pool)
	e := NewEnqueuer(ns, pool)
	batch := make([]BatchJob, 1000)
	for i := range batch {
		batch[i] = BatchJob{Name: "x", Args: Q{"n": i}}
	}
	rt0 := rt.Load()
	b.ResetTimer()
	for done := 0; done < b.N; done += len(batch) {
		if _, err := e.EnqueueBatch(batch); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
	b.ReportMetric(float64(rt.Load()-rt0)/float64(b.N), "roundtrips/job")
}

// BenchmarkJobCodec measures a job's encoding (as Enqueue does it) and its decoding (as a worker pool
// does it on fetch), without Redis.
func BenchmarkJobCodec(b *testing.B) {
	j := newJob("send_email", Q{"addr": "test@example.com", "n": 1})
	raw, err := j.serialize()
	if err != nil {
		b.Fatal(err)
	}
	b.Run("serialize", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := j.serialize(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) {
		b.ReportAllocs()
		for i := 0; i < b.N; i++ {
			if _, err := decodeJob(raw); err != nil {
				b.Fatal(err)
			}
		}
	})
	nj := newJob("send_email", Q{"to": []interface{}{"a@example.com", "b@example.com"}, "opts": Q{"retry": true, "n": 3}})
	nested, err := nj.serialize()
	if err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name string
		raw  []byte
	}{{"decode fetched", raw}, {"decode fetched nested", nested}} {
		b.Run(c.name, func(b *testing.B) { // a worker's decoder
			b.ReportAllocs()
			q := &queue{name: "send_email"}
			for i := 0; i < b.N; i++ {
				j := Job{raw: c.raw, q: q}
				if err := decodeFetched(&j, q.name); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkEnqueueConcurrent measures single Enqueue calls from many goroutines (GOMAXPROCS x the
// -cpu value... see -benchtime): concurrent calls share round trips.
func BenchmarkEnqueueConcurrent(b *testing.B) {
	for _, g := range []int{4, 10, 50} {
		b.Run(fmt.Sprintf("goroutines=%d", g), func(b *testing.B) {
			pool, rt := newCountingPool(b)
			ns := newTestNamespace(b, pool)
			e := NewEnqueuer(ns, pool)
			args := Q{"addr": "test@example.com", "n": 1}
			rt0 := rt.Load()
			b.ReportAllocs()
			b.ResetTimer()
			callsFrom(b, g, func(int64) error {
				_, err := e.Enqueue("x", args)
				return err
			})
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric(float64(rt.Load()-rt0)/float64(b.N), "roundtrips/job")
		})
	}
}

// callsFrom makes b.N calls of call (numbered from 1) from goroutines goroutines, and returns when
// they are done; a call that fails fails the benchmark and ends its goroutine.
func callsFrom(b *testing.B, goroutines int, call func(i int64) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for k := 0; k < goroutines; k++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				if err := call(i); err != nil {
					b.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
}

// BenchmarkBatchCreate compares creating one batch of b.N members, added 1,000 per call, with
// EnqueueBatch calls of the same size (the rate a batch's creation must keep half of).
func BenchmarkBatchCreate(b *testing.B) {
	for _, mode := range []string{"EnqueueBatch", "Batch.Add"} {
		b.Run(mode, func(b *testing.B) {
			pool, _ := newCountingPool(b)
			ns := newTestNamespace(b, pool)
			e := NewEnqueuer(ns, pool)
			chunk := make([]BatchJob, 1000)
			for i := range chunk {
				chunk[i] = BatchJob{Name: "member", Args: Q{"i": i}}
			}
			b.ResetTimer()
			var bt *Batch
			if mode == "Batch.Add" {
				var err error
				if bt, err = e.NewBatch(BatchOptions{OnComplete: &BatchCallback{Name: "done"}}); err != nil {
					b.Fatal(err)
				}
			}
			for done := 0; done < b.N; done += len(chunk) {
				jobs := chunk[:min(len(chunk), b.N-done)]
				var err error
				if bt != nil {
					_, err = bt.Add(jobs...)
				} else {
					_, err = e.EnqueueBatch(jobs)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			if bt != nil {
				if err := bt.Close(); err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
		})
	}
}

// BenchmarkBatchCompletes runs a batch of b.N no-op members to completion on a pool of 50 workers
// and reports the callback runs (1), the batch hash's memory and the members per second. Run it with
// -benchtime 1000000x for a batch of a million members.
func BenchmarkBatchCompletes(b *testing.B) {
	pool, _ := newCountingPool(b)
	ns := newTestNamespace(b, pool)
	e := NewEnqueuer(ns, pool)
	var callbacks, ran atomic.Int64
	done := make(chan struct{})
	wp := NewWorkerPool(benchCtx{}, 50, ns, pool).
		Job("member", func(*Job) error { ran.Add(1); return nil }).
		Job("done", func(*Job) error {
			if callbacks.Add(1) == 1 {
				close(done)
			}
			return nil
		})
	bt, err := e.NewBatch(BatchOptions{OnComplete: &BatchCallback{Name: "done"}})
	if err != nil {
		b.Fatal(err)
	}
	chunk := make([]BatchJob, 1000)
	for i := range chunk {
		chunk[i] = BatchJob{Name: "member"}
	}
	for added := 0; added < b.N; added += len(chunk) {
		if _, err := bt.Add(chunk[:min(len(chunk), b.N-added)]...); err != nil {
			b.Fatal(err)
		}
	}
	if err := bt.Close(); err != nil {
		b.Fatal(err)
	}
	c := pool.Get()
	hashBytes, _ := redis.Int64(c.Do("MEMORY", "USAGE", rdb.NewKeyspace(ns).Batch(bt.ID)))
	c.Close()
	b.ResetTimer()
	wp.Start()
	<-done
	b.StopTimer()
	wp.Drain()
	wp.Stop()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "members/s")
	b.ReportMetric(float64(callbacks.Load()), "callback-runs")
	b.ReportMetric(float64(hashBytes), "batch-hash-bytes")
	if ran.Load() < int64(b.N) {
		b.Errorf("%d members ran, want %d", ran.Load(), b.N)
	}
}

// BenchmarkProcessKeyedJobs burns down no-op keyed jobs of 5 names, spread round-robin over keys,
// with one pool of 50 workers: beside BenchmarkProcessNoopJobs, what serving keys in turn costs.
func BenchmarkProcessKeyedJobs(b *testing.B) {
	for _, tc := range []struct {
		keys  int
		limit uint
	}{{10, 0}, {100000, 0}, {10000, 1}} {
		b.Run(fmt.Sprintf("keys=%d/limit=%d", tc.keys, tc.limit), func(b *testing.B) {
			pool, rt := newCountingPool(b)
			ns := newTestNamespace(b, pool)
			names := []string{"a", "b", "c", "d", "e"}
			e := NewEnqueuer(ns, pool)
			batch := make([]BatchJob, 0, 1000)
			for i := 0; i < b.N; i++ {
				batch = append(batch, BatchJob{Name: names[i%len(names)], Key: strconv.Itoa(i % tc.keys)})
				if len(batch) == cap(batch) || i == b.N-1 {
					if _, err := e.EnqueueBatch(batch); err != nil {
						b.Fatal(err)
					}
					batch = batch[:0]
				}
			}
			var done atomic.Int64
			wp := NewWorkerPool(benchCtx{}, 50, ns, pool)
			for _, name := range names {
				wp.JobWithOptions(name, JobOptions{KeyConcurrency: tc.limit}, func(*Job) error { done.Add(1); return nil })
			}
			burnDown(b, pool, rt, wp, &done)
		})
	}
}

// BenchmarkEnqueueDebounced compares debounced Enqueue calls (1,000 bursts, one minute windows, the
// latest args kept) with plain ones, both from 10 goroutines: the benches groups workload's shape,
// small enough to profile (-cpuprofile) or to read the server's share (Redis µs/job).
func BenchmarkEnqueueDebounced(b *testing.B) {
	for _, mode := range []string{"plain", "debounced"} {
		b.Run(mode, func(b *testing.B) {
			pool, _ := newCountingPool(b)
			ns := newTestNamespace(b, pool)
			e := NewEnqueuer(ns, pool)
			args := Q{"addr": "test@example.com", "n": 1}
			ids := make([]string, 1000)
			for i := range ids {
				ids[i] = "d" + strconv.Itoa(i)
			}
			_, cpu0 := redistest.ServerStats(b, pool)
			b.ReportAllocs()
			b.ResetTimer()
			callsFrom(b, 10, func(i int64) error {
				var err error
				if mode == "plain" {
					_, err = e.Enqueue("x", args)
				} else {
					_, err = e.EnqueueWith("x", args, EnqueueOptions{
						Debounce: &Debounce{ID: ids[i%int64(len(ids))], Window: time.Minute}})
				}
				return err
			})
			b.StopTimer()
			_, cpu1 := redistest.ServerStats(b, pool)
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "jobs/s")
			b.ReportMetric((cpu1-cpu0)*1e6/float64(b.N), "redis-µs/job")
		})
	}
}

// BenchmarkFireKeyedTicks fires WORK_BENCH_TICKS (default 100,000) schedules due at one second, a
// key each as per-customer schedules have, with one firing loop and no pool: an op is one such
// second. It reports Redis CPU per tick; between ops the name's keyed state is dropped, as pools
// would take the jobs. With WORK_CALLGRIND_PID (benches/callgrind/fire.sh), it zeroes callgrind's
// counts of that server before the first firing and dumps them after the last.
func BenchmarkFireKeyedTicks(b *testing.B) {
	ticks := 100000
	if n, err := strconv.Atoi(os.Getenv("WORK_BENCH_TICKS")); err == nil && n > 0 {
		ticks = n
	}
	pool := newTestPool(b)
	ns := newTestNamespace(b, pool)
	c := NewClient(ns, pool)
	st := rdb.NewStore(ns, PoolBackend(pool))
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	loc, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		b.Fatal(err)
	}
	base := time.Now().Add(time.Hour).Truncate(time.Minute)
	// set sets n schedules of job digest due at the minute m after base, the first of them first.
	set := func(m, first, n int) time.Time {
		tick := base.Add(time.Duration(m) * time.Minute).In(loc)
		spec := fmt.Sprintf("%d %d %d * * %s", tick.Second(), tick.Minute(), tick.Hour(),
			strings.ToUpper(tick.Weekday().String()[:3]))
		list := make([]Schedule, 0, 10000)
		for i := first; i < first+n; i++ {
			id := strconv.Itoa(1000000 + i)
			list = append(list, Schedule{ID: "customer-" + id, Spec: spec, Location: "Europe/Berlin",
				JobName: "digest", Args: Q{"customer_id": 1000000 + i}, Key: id})
			if len(list) == cap(list) || i == first+n-1 {
				if err := c.setSchedules(list, tick.Add(-time.Minute)); err != nil {
					b.Fatal(err)
				}
				list = list[:0]
			}
		}
		return tick
	}
	fire := func(tick time.Time) {
		for {
			n, _, err := fireSchedules(context.Background(), st, tick.Unix(), logger)
			if err != nil {
				b.Fatal(err)
			}
			if n == 0 {
				return
			}
		}
	}
	drop := func() {
		p := st.Ks.Keyed("digest")
		rdo(b, pool, "DEL", p+"ready", p+"lane", p+"meta")
	}
	fire(set(0, 0, 10)) // loads the scripts
	drop()
	var cpu float64
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		tick := set(i+1, (i+1)*ticks, ticks)
		_, cpu0 := redistest.ServerStats(b, pool)
		if i == 0 {
			redistest.Callgrind(b, "-z")
		}
		b.StartTimer()
		fire(tick)
		b.StopTimer()
		if i == b.N-1 {
			redistest.Callgrind(b, "-d")
		}
		_, cpu1 := redistest.ServerStats(b, pool)
		cpu += cpu1 - cpu0
		drop()
		b.StartTimer()
	}
	b.ReportMetric(cpu*1e6/float64(b.N*ticks), "redis-µs/tick")
	b.ReportMetric(float64(b.N*ticks)/b.Elapsed().Seconds(), "ticks/s")
}
