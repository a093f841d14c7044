package goredis_test

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
	"github.com/workqueue/work/goredis/internal/redistest"
	"github.com/workqueue/work/goredis/sharded"
)

// TestClusterThroughput measures how fast one process drains a sharded namespace of no-op jobs on
// Redis Cluster with 1, 2 and 3 masters, next to one plain server (through go-redis and through
// redigo). It only runs with GOREDIS_BENCH=1, without the race detector for meaningful numbers:
//
//	GOREDIS_BENCH=1 go test -run TestClusterThroughput -v -timeout 30m .
//
// GOREDIS_BENCH_JOBS (default 100000), GOREDIS_BENCH_CONCURRENCY (50), GOREDIS_BENCH_SHARDS (6) and
// GOREDIS_BENCH_RUNS (5) change the load. Jobs are enqueued first (EnqueueBatch, 1000 a call), then
// one sharded pool processes them. Each run reports both rates and the CPU the Go process, the
// redis-servers and every other process of the machine used while processing, which tells what
// bounds the rate on the machine at hand; the median leaves out runs that other processes disturbed.
func TestClusterThroughput(t *testing.T) {
	if os.Getenv("GOREDIS_BENCH") == "" {
		t.Skip("set GOREDIS_BENCH=1 to run the throughput measurement")
	}
	jobs := envInt("GOREDIS_BENCH_JOBS", 100000)
	concurrency := envInt("GOREDIS_BENCH_CONCURRENCY", 50)
	shards := envInt("GOREDIS_BENCH_SHARDS", 6)
	runs := envInt("GOREDIS_BENCH_RUNS", 5)
	ns, names := benchLayout(shards, 12)
	t.Logf("%d no-op jobs over %d job names, %d shards, concurrency %d, GOMAXPROCS %d, %d CPUs",
		jobs, len(names), shards, concurrency, runtime.GOMAXPROCS(0), runtime.NumCPU())

	t.Run("single-server-redigo", func(t *testing.T) {
		s := redistest.StartServer(t)
		pool := &redigo.Pool{MaxIdle: 64, Dial: func() (redigo.Conn, error) { return redigo.Dial("tcp", s.Addr) }}
		defer pool.Close()
		repeatThroughput(t, runs, work.PoolBackend(pool), ns, shards, names, jobs, concurrency, []*redistest.Server{s})
	})
	t.Run("single-server-goredis", func(t *testing.T) {
		s := redistest.StartServer(t)
		c := redis.NewClient(&redis.Options{Addr: s.Addr})
		defer c.Close()
		repeatThroughput(t, runs, goredis.NewBackend(c), ns, shards, names, jobs, concurrency, []*redistest.Server{s})
	})
	for _, masters := range []int{1, 2, 3} {
		t.Run(fmt.Sprintf("cluster-%d-masters", masters), func(t *testing.T) {
			cl := redistest.StartCluster(t, masters, 0)
			c := cl.Client(t, 3)
			place := map[int][]int{}
			for i := 0; i < shards; i++ {
				m := cl.MasterOf(t, sharded.ShardNamespace(ns, i, shards))
				place[m.Port] = append(place[m.Port], i)
			}
			t.Logf("shards by master port: %v", place)
			repeatThroughput(t, runs, goredis.NewBackend(c), ns, shards, names, jobs, concurrency, cl.Masters)
		})
	}
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// benchLayout picks a namespace whose shards spread evenly over 2 and over 3 masters (with slots
// split evenly, as redistest does), and job names that spread evenly over the shards.
func benchLayout(shards, nameCount int) (string, []string) {
	ns := "bench"
	for i := 0; i < 10000; i++ {
		cand := fmt.Sprintf("bench%d", i)
		if even(cand, shards, 2) && even(cand, shards, 3) {
			ns = cand
			break
		}
	}
	per := map[int]int{}
	var names []string
	for i := 0; len(names) < nameCount && i < 100000; i++ {
		n := fmt.Sprintf("job%d", i)
		s := sharded.ShardOf(n, shards)
		if per[s] < (nameCount+shards-1)/shards {
			per[s]++
			names = append(names, n)
		}
	}
	return ns, names
}

func even(ns string, shards, masters int) bool {
	count := make([]int, masters)
	for i := 0; i < shards; i++ {
		slot := sharded.ShardSlot(ns, i, shards)
		count[slot*masters/16384]++
	}
	for _, c := range count {
		if c < shards/masters || c > (shards+masters-1)/masters {
			return false
		}
	}
	return true
}

// repeatThroughput measures runs times on the same namespace (another name would move the shards'
// slots; each run drains what it enqueued) and reports the median processing rate.
// Runs during which other processes of the machine used more than quietOthers cores are left out of
// the median, as long as some run was quiet.
func repeatThroughput(t *testing.T, runs int, b work.Backend, ns string, shards int, names []string, jobs, concurrency int, servers []*redistest.Server) {
	const quietOthers = 0.2
	var quiet, all []float64
	for r := 0; r < runs; r++ {
		rate, others := runThroughput(t, b, ns, shards, names, jobs, concurrency, servers)
		all = append(all, rate)
		if others <= quietOthers {
			quiet = append(quiet, rate)
		}
	}
	rates, which := quiet, "quiet"
	if len(quiet) == 0 {
		rates, which = all, "all (none was quiet)"
	}
	sort.Float64s(rates)
	t.Logf("median process rate: %.0f jobs/s (%d %s runs of %d)", rates[len(rates)/2], len(rates), which, runs)
}

// runThroughput returns the processing rate, and the cores that other processes of the machine used
// meanwhile.
func runThroughput(t *testing.T, b work.Backend, ns string, shards int, names []string, jobs, concurrency int, servers []*redistest.Server) (float64, float64) {
	e := sharded.NewEnqueuerWithBackend(ns, shards, b)
	start := time.Now()
	batch := make([]work.BatchJob, 0, 1000)
	for i := 0; i < jobs; i++ {
		batch = append(batch, work.BatchJob{Name: names[i%len(names)], Args: work.Q{"i": i}})
		if len(batch) == cap(batch) || i == jobs-1 {
			if _, err := e.EnqueueBatch(batch); err != nil {
				t.Fatal(err)
			}
			batch = batch[:0]
		}
	}
	enqueueRate := float64(jobs) / time.Since(start).Seconds()

	var done atomic.Int64
	wp := sharded.NewWorkerPoolWithBackend(tctx{}, uint(concurrency), ns, shards, b, work.WorkerPoolOptions{})
	for _, n := range names {
		wp.Job(n, func(*work.Job) error { done.Add(1); return nil })
	}
	serverCPU := func() time.Duration {
		var d time.Duration
		for _, s := range servers {
			d += redistest.ProcessCPU(s.Pid())
		}
		return d
	}
	cpu0, srv0, all0 := selfCPU(), serverCPU(), machineBusy()
	start = time.Now()
	wp.Start()
	deadline := time.Now().Add(10 * time.Minute)
	for done.Load() < int64(jobs) {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d jobs ran", done.Load(), jobs)
		}
		time.Sleep(10 * time.Millisecond)
	}
	elapsed := time.Since(start)
	cpu, srv, all := selfCPU()-cpu0, serverCPU()-srv0, machineBusy()-all0
	wp.Stop()
	rate := float64(jobs) / elapsed.Seconds()
	cores := func(d time.Duration) float64 { return d.Seconds() / elapsed.Seconds() }
	others := max(cores(all)-cores(cpu)-cores(srv), 0)
	t.Logf("enqueue %.0f jobs/s; process %.0f jobs/s (%d jobs in %.2fs); CPU while processing, in cores: Go process %.2f, redis-server(s) %.2f, other processes %.2f",
		enqueueRate, rate, jobs, elapsed.Seconds(), cores(cpu), cores(srv), others)
	return rate, others
}

// machineBusy returns the CPU time all processes of the machine have used (the busy fields of
// /proc/stat's cpu line); zero where /proc is not available. Minus the Go process and the servers,
// it shows whether something else competed for the cores during a measurement.
func machineBusy() time.Duration {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0
	}
	line, _, _ := strings.Cut(string(b), "\n")
	f := strings.Fields(line)
	var busy int64
	for i, v := range f[1:] {
		if i == 3 || i == 4 { // idle, iowait
			continue
		}
		n, _ := strconv.ParseInt(v, 10, 64)
		busy += n
	}
	return time.Duration(busy) * time.Second / 100
}

func selfCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
