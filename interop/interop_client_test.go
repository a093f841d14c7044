package interop

// Interop beyond the jobs' own traffic: each library's Client reading and administering the
// namespaces the other writes, and periodic jobs declared by pools of both.

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gocraft "github.com/gocraft/work"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// gocraft/work's Client reads a namespace run by a work pool, and work's Client reads one run by
// a gocraft/work pool: heartbeats, busy workers, queues, scheduled and dead jobs.
func TestClientsReadEachOthersNamespaces(t *testing.T) {
	t.Parallel()
	host, _ := os.Hostname()

	t.Run("gocraft client, work pool", func(t *testing.T) {
		t.Parallel()
		pool := newTestPool(t)
		ns := newTestNamespace(t, pool)
		we := work.NewEnqueuer(ns, pool)
		release := make(chan struct{})
		var once sync.Once
		wp := work.NewWorkerPool(workCtx{}, 2, ns, pool)
		wp.Job("a", func(j *work.Job) error {
			j.Checkin("halfway")
			<-release
			return nil
		})
		var bRuns atomic.Int64
		wp.JobWithOptions("b", work.JobOptions{MaxFails: 1}, func(*work.Job) error {
			bRuns.Add(1)
			return errors.New("b failed")
		})
		wp.Start()
		defer wp.Stop()
		defer once.Do(func() { close(release) })

		ja, err := we.Enqueue("a", work.Q{"x": "y"})
		if err != nil {
			t.Fatal(err)
		}
		jb, err := we.Enqueue("b", work.Q{"n": 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ { // no pool serves "c"
			if _, err := we.Enqueue("c", nil); err != nil {
				t.Fatal(err)
			}
		}
		sj, err := we.EnqueueIn("c", 3600, work.Q{"later": true})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 10*time.Second, "b to die", func() bool { return rInt(t, pool, "ZCARD", ns+":dead") == 1 })
		poolIDs := rStrings(t, pool, "SMEMBERS", ns+":worker_pools")
		if len(poolIDs) != 1 {
			t.Fatalf("worker_pools: %v", poolIDs)
		}

		gc := gocraft.NewClient(ns, pool)
		hbs, err := gc.WorkerPoolHeartbeats()
		if err != nil {
			t.Fatal(err)
		}
		if len(hbs) != 1 {
			t.Fatalf("heartbeats: %d, want 1", len(hbs))
		}
		hb := hbs[0]
		if hb.WorkerPoolID != poolIDs[0] || strings.Join(hb.JobNames, ",") != "a,b" || hb.Concurrency != 2 ||
			len(hb.WorkerIDs) != 2 || hb.Pid != os.Getpid() || hb.Host != host || hb.StartedAt == 0 || hb.HeartbeatAt < hb.StartedAt {
			t.Errorf("heartbeat as gocraft/work reads it: %+v", hb)
		}

		eventually(t, 10*time.Second, "gocraft/work's Client to see the busy worker and its checkin", func() bool {
			obs, err := gc.WorkerObservations()
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) != 2 {
				t.Fatalf("observations: %d, want 2", len(obs))
			}
			for _, o := range obs {
				if o.IsBusy && o.JobName == "a" && o.JobID == ja.ID && o.ArgsJSON == `{"x":"y"}` &&
					o.Checkin == "halfway" && o.CheckinAt > 0 && o.StartedAt > 0 {
					return true
				}
			}
			return false
		})

		queues, err := gc.Queues()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		var names []string
		for _, q := range queues {
			got[q.JobName] = q.Count
			names = append(names, q.JobName)
			if q.Latency < 0 {
				t.Errorf("queue %s latency %d", q.JobName, q.Latency)
			}
		}
		if strings.Join(names, ",") != "a,b,c" || got["c"] != 3 || got["a"] != 0 || got["b"] != 0 {
			t.Errorf("queues as gocraft/work reads them: %v (order %v)", got, names)
		}

		scheduled, count, err := gc.ScheduledJobs(1)
		if err != nil || count != 1 || len(scheduled) != 1 || scheduled[0].ID != sj.ID || scheduled[0].RunAt != sj.RunAt {
			t.Errorf("scheduled jobs as gocraft/work reads them: %v, %d, %v", scheduled, count, err)
		}

		dead, count, err := gc.DeadJobs(1)
		if err != nil || count != 1 || len(dead) != 1 {
			t.Fatalf("dead jobs as gocraft/work reads them: %v, %d, %v", dead, count, err)
		}
		d := dead[0]
		if d.ID != jb.ID || d.Name != "b" || d.Fails != 1 || d.LastErr != "b failed" || d.FailedAt == 0 || d.DiedAt == 0 || d.ArgInt64("n") != 1 {
			t.Errorf("dead job as gocraft/work reads it: %+v %+v", d, d.Job)
		}
		// gocraft/work's Client can retry it: the work pool runs it again.
		if err := gc.RetryDeadJob(d.DiedAt, d.ID); err != nil {
			t.Fatalf("gocraft/work RetryDeadJob: %v", err)
		}
		eventually(t, 10*time.Second, "the work pool to run the job gocraft/work's Client retried", func() bool { return bRuns.Load() == 2 })
		once.Do(func() { close(release) })
	})

	t.Run("work client, gocraft pool", func(t *testing.T) {
		t.Parallel()
		pool := newTestPool(t)
		ns := newTestNamespace(t, pool)
		ge := gocraft.NewEnqueuer(ns, pool)
		release := make(chan struct{})
		var once sync.Once
		gp := gocraft.NewWorkerPool(gocraftCtx{}, 2, ns, pool)
		gp.Job("a", func(j *gocraft.Job) error {
			j.Checkin("halfway")
			<-release
			return nil
		})
		var bRuns atomic.Int64
		gp.JobWithOptions("b", gocraft.JobOptions{MaxFails: 1}, func(*gocraft.Job) error {
			bRuns.Add(1)
			return errors.New("b failed")
		})
		gp.Start()
		defer gp.Stop()
		defer once.Do(func() { close(release) })

		ja, err := ge.Enqueue("a", gocraft.Q{"x": "y"})
		if err != nil {
			t.Fatal(err)
		}
		jb, err := ge.Enqueue("b", gocraft.Q{"n": 1})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 3; i++ {
			if _, err := ge.Enqueue("c", nil); err != nil {
				t.Fatal(err)
			}
		}
		sj, err := ge.EnqueueIn("c", 3600, gocraft.Q{"later": true})
		if err != nil {
			t.Fatal(err)
		}
		eventually(t, 15*time.Second, "b to die", func() bool { return rInt(t, pool, "ZCARD", ns+":dead") == 1 })
		var poolIDs []string
		eventually(t, 10*time.Second, "the gocraft/work pool to register", func() bool {
			poolIDs = rStrings(t, pool, "SMEMBERS", ns+":worker_pools")
			return len(poolIDs) == 1
		})

		wc := work.NewClient(ns, pool)
		hbs, err := wc.WorkerPoolHeartbeats()
		if err != nil {
			t.Fatal(err)
		}
		if len(hbs) != 1 {
			t.Fatalf("heartbeats: %d, want 1", len(hbs))
		}
		hb := hbs[0]
		if hb.WorkerPoolID != poolIDs[0] || strings.Join(hb.JobNames, ",") != "a,b" || hb.Concurrency != 2 ||
			len(hb.WorkerIDs) != 2 || !sort.StringsAreSorted(hb.WorkerIDs) || hb.Pid != os.Getpid() || hb.Host != host ||
			hb.StartedAt == 0 || hb.HeartbeatAt < hb.StartedAt {
			t.Errorf("heartbeat as work reads it: %+v", hb)
		}

		eventually(t, 10*time.Second, "work's Client to see the busy worker and its checkin", func() bool {
			obs, err := wc.WorkerObservations()
			if err != nil {
				t.Fatal(err)
			}
			if len(obs) != 2 {
				t.Fatalf("observations: %d, want 2", len(obs))
			}
			for _, o := range obs {
				if o.IsBusy && o.JobName == "a" && o.JobID == ja.ID && o.ArgsJSON == `{"x":"y"}` &&
					o.Checkin == "halfway" && o.CheckinAt > 0 && o.StartedAt > 0 {
					return true
				}
			}
			return false
		})

		queues, err := wc.Queues()
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]int64{}
		var names []string
		for _, q := range queues {
			got[q.JobName] = q.Count
			names = append(names, q.JobName)
			if q.Latency < 0 {
				t.Errorf("queue %s latency %d", q.JobName, q.Latency)
			}
		}
		if strings.Join(names, ",") != "a,b,c" || got["c"] != 3 || got["a"] != 0 || got["b"] != 0 {
			t.Errorf("queues as work reads them: %v (order %v)", got, names)
		}

		scheduled, count, err := wc.ScheduledJobs(1)
		if err != nil || count != 1 || len(scheduled) != 1 || scheduled[0].ID != sj.ID || scheduled[0].RunAt != sj.RunAt {
			t.Errorf("scheduled jobs as work reads them: %v, %d, %v", scheduled, count, err)
		}

		dead, count, err := wc.DeadJobs(1)
		if err != nil || count != 1 || len(dead) != 1 {
			t.Fatalf("dead jobs as work reads them: %v, %d, %v", dead, count, err)
		}
		d := dead[0]
		if d.ID != jb.ID || d.Name != "b" || d.Fails != 1 || d.LastErr != "b failed" || d.FailedAt == 0 || d.DiedAt == 0 || d.ArgInt64("n") != 1 {
			t.Errorf("dead job as work reads it: %+v %+v", d, d.Job)
		}
		if err := wc.RetryDeadJob(d.DiedAt, d.ID); err != nil {
			t.Fatalf("work RetryDeadJob: %v", err)
		}
		eventually(t, 15*time.Second, "the gocraft/work pool to run the job work's Client retried", func() bool { return bRuns.Load() == 2 })

		// work's Client deletes a unique scheduled job gocraft/work enqueued, and frees its lock.
		uArgs := gocraft.Q{"k": 1}
		us, err := ge.EnqueueUniqueIn("c", 3600, uArgs)
		if err != nil || us == nil {
			t.Fatalf("gocraft/work EnqueueUniqueIn: %v, %v", us, err)
		}
		if err := wc.DeleteScheduledJob(us.RunAt, us.ID); err != nil {
			t.Fatalf("work DeleteScheduledJob: %v", err)
		}
		if rInt(t, pool, "EXISTS", uniqueKey(t, ns, "c", uArgs)) != 0 {
			t.Errorf("unique lock of the deleted scheduled job still held")
		}
		if again, err := ge.EnqueueUniqueIn("c", 3600, uArgs); err != nil || again == nil {
			t.Errorf("gocraft/work EnqueueUniqueIn after the delete: %v, %v; want a job", again, err)
		}
		once.Do(func() { close(release) })
	})
}

// scheduled returns the scheduled set: member -> score.
func scheduled(t *testing.T, pool *redis.Pool, ns string) map[string]int64 {
	t.Helper()
	vals, err := redis.Values(rdo(t, pool, "ZRANGE", ns+":scheduled", 0, -1, "WITHSCORES"), nil)
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]int64, len(vals)/2)
	for i := 0; i+1 < len(vals); i += 2 {
		member, _ := redis.String(vals[i], nil)
		score, err := redis.Int64(vals[i+1], nil)
		if err != nil {
			t.Fatal(err)
		}
		m[member] = score
	}
	return m
}

func maxScore(m map[string]int64) int64 {
	var max int64
	for _, s := range m {
		if s > max {
			max = s
		}
	}
	return max
}

// A gocraft/work pool and a work pool that register the same periodic job (six-field spec) on one
// namespace write byte-identical scheduled members, so each tick is scheduled, and run, once.
func TestPeriodicJobsOfBothLibrariesRunOncePerTick(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	const spec = "*/2 * * * * *" // robfig/cron v1 (gocraft/work) and v3 (work) agree on six fields
	rec := &recorder{}
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 2, ns, pool)
	gp.Job("tick", recordGocraft(rec, nil))
	gp.PeriodicallyEnqueue(spec, "tick")
	gp.Start()
	defer gp.Stop()
	var gocraftAt int64
	eventually(t, 10*time.Second, "gocraft/work to schedule the periodic job", func() bool {
		gocraftAt = rInt(t, pool, "GET", ns+":last_periodic_enqueue") // set after its ZADDs
		return gocraftAt > 0
	})
	fromGocraft := scheduled(t, pool, ns)
	if len(fromGocraft) < 100 {
		t.Fatalf("gocraft/work scheduled %d ticks, want the next 4 minutes of them", len(fromGocraft))
	}

	// Start the work pool a tick later, so its horizon ends later and shows when it has written.
	eventually(t, 5*time.Second, "a tick to pass", func() bool { return time.Now().Unix() >= gocraftAt+2 })
	wp := work.NewWorkerPool(workCtx{}, 2, ns, pool)
	wp.Job("tick", recordWork(rec, nil))
	wp.PeriodicallyEnqueue(spec, "tick")
	wp.Start()
	defer wp.Stop()
	eventually(t, 10*time.Second, "work to schedule the periodic job", func() bool {
		return maxScore(scheduled(t, pool, ns)) > maxScore(fromGocraft)
	})
	both := scheduled(t, pool, ns)
	perScore := map[int64][]string{}
	for m, s := range both {
		perScore[s] = append(perScore[s], m)
	}
	for s, ms := range perScore {
		if len(ms) != 1 {
			t.Errorf("tick %d scheduled %d times: %q", s, len(ms), ms)
		}
	}
	now := time.Now().Unix()
	for m, s := range fromGocraft {
		if s > now+1 {
			if _, ok := both[m]; !ok {
				t.Errorf("gocraft/work's member %q (tick %d) is gone: work wrote other bytes for the tick", m, s)
			}
		}
	}

	eventually(t, 20*time.Second, "three ticks to run", func() bool { return len(rec.byID()) >= 3 })
	time.Sleep(1500 * time.Millisecond) // a duplicate of the last tick would run within this
	perPool := map[string]int{}
	for id, rs := range rec.byID() {
		if !strings.HasPrefix(id, "periodic:tick:"+spec+":") {
			t.Errorf("periodic job ID %q", id)
		}
		if len(rs) != 1 {
			t.Errorf("tick %s ran %d times", id, len(rs))
		}
		perPool[rs[0].pool]++
	}
	t.Logf("ticks run per pool: %v", perPool)
}

// PeriodicallyEnqueue takes the spec strings gocraft/work v0.5.1 took and schedules the same runs.
// gocraft/work v0.5.1 parses specs with robfig/cron v1's cron.Parse, whose fields are seconds,
// minutes, hours, day of month, month and an optional day of week: a five-field spec such as
// "0 * * * *" means second 0 of every minute there. The same call must not schedule other times on
// work.
func TestFiveFieldCronSpecSchedulesLikeGocraft(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	nsG := newTestNamespace(t, pool)
	nsW := newTestNamespace(t, pool)
	const spec = "0 * * * *"
	// "marker" has ticks within every horizon, so last_periodic_enqueue shows that a pool has
	// written its periodic jobs (a pool that finds no tick at all writes nothing).
	const markerSpec = "*/30 * * * * *"
	gp := gocraft.NewWorkerPool(gocraftCtx{}, 1, nsG, pool)
	gp.Job("tick", func(*gocraft.Job) error { return nil })
	gp.Job("marker", func(*gocraft.Job) error { return nil })
	gp.PeriodicallyEnqueue(spec, "tick")
	gp.PeriodicallyEnqueue(markerSpec, "marker")
	wp := work.NewWorkerPool(workCtx{}, 1, nsW, pool)
	wp.Job("tick", func(*work.Job) error { return nil })
	wp.Job("marker", func(*work.Job) error { return nil })
	wp.PeriodicallyEnqueue(spec, "tick")
	wp.PeriodicallyEnqueue(markerSpec, "marker")
	gp.Start()
	defer gp.Stop()
	wp.Start()
	defer wp.Stop()
	eventually(t, 10*time.Second, "both pools to schedule the periodic job", func() bool {
		return rInt(t, pool, "EXISTS", nsG+":last_periodic_enqueue") == 1 &&
			rInt(t, pool, "EXISTS", nsW+":last_periodic_enqueue") == 1
	})
	// Compare the ticks both horizons (4 minutes from each pool's start) surely cover.
	from := time.Now().Unix() + 1
	to := from + 180
	ticks := func(ns string) []int64 {
		var out []int64
		for m, s := range scheduled(t, pool, ns) {
			if s > from && s <= to && strings.HasPrefix(m, `{"name":"tick",`) {
				out = append(out, s)
			}
		}
		sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
		return out
	}
	g, w := ticks(nsG), ticks(nsW)
	if fmt.Sprint(g) != fmt.Sprint(w) {
		show := func(ts []int64) []string {
			out := []string{}
			for _, s := range ts {
				out = append(out, time.Unix(s, 0).UTC().Format("15:04:05"))
			}
			return out
		}
		t.Errorf("PeriodicallyEnqueue(%q) schedules, between %s and %s UTC:\n gocraft/work v0.5.1: %v\n work:                %v",
			spec, time.Unix(from, 0).UTC().Format("15:04:05"), time.Unix(to, 0).UTC().Format("15:04:05"), show(g), show(w))
	}
}
