package faults

import (
	"encoding/json"
	"fmt"
	"math/rand"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// Schedules fire each tick exactly once while worker processes are SIGKILLed during the bursts of
// ticks and redis-server is SIGKILLed (appendfsync always) during one and restarted from its
// append-only file. Thousands of schedules tick together every 20 seconds; their jobs go to a job
// name no pool serves, so that at the end the queue holds every job any pool enqueued. Every tick
// from the first to the last must be there once: none lost (a pool killed holding a claim delays
// its schedules by the lease, well within the 20 seconds), none twice (a commit applies only if its
// claim's token still stands on the bucket, whoever committed first, before or after a restart).
func TestScheduleTicksOnceUnderSIGKILL(t *testing.T) {
	skipIfShort(t)
	const (
		ns, ledger = "fs", "ledger"
		workers    = 3
		every      = 20 // seconds between ticks
	)
	schedules := jobsPerScenario(20000) / 4
	bursts := 3
	if soak() {
		bursts = 8
	}
	srv := startRedis(t, "always")
	pool := newPool(srv.addr, 0)
	t.Cleanup(func() { pool.Close() })
	in := &inspector{t: t, pool: pool, ns: ns, ledger: ledger}
	fl := newFleet(t, "-redis", srv.addr, "-ns", ns, "-ledger", ledger, "-names", "fa", "-concurrency", "2",
		"-heartbeat", "1s", "-dead-pool", "3s", "-log", "error")
	for range workers {
		fl.spawnRegistered(in)
	}

	// The schedules, set twice as two deploys would (the second changes nothing), with the missed-tick
	// policy that enqueues a late tick however late, so that every tick is owed a job.
	list := make([]work.Schedule, schedules)
	for i := range list {
		list[i] = work.Schedule{ID: fmt.Sprintf("tenant-%05d", i), Spec: fmt.Sprintf("*/%d * * * * *", every), JobName: "st",
			Args: work.Q{"i": i}, Missed: work.MissedRunLatest}
	}
	client := work.NewClient(ns, pool)
	setAt := time.Now().Unix()
	for range 2 {
		if err := client.SetSchedules(list); err != nil {
			t.Fatal(err)
		}
	}
	first, err := client.Schedule(list[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d schedules set; first tick %s", schedules, time.Unix(first.NextTick, 0).Format(time.TimeOnly))

	// At each tick, 100-600 ms into its burst, SIGKILL a worker (two at the second burst) and start
	// others; at the third, SIGKILL redis-server too and restart it from its AOF a second later.
	rng := rand.New(rand.NewSource(time.Now().UnixNano()))
	tick := first.NextTick
	for b := 0; b < bursts; b++ {
		at := time.Unix(tick+int64(b*every), 0).Add(time.Duration(100+rng.Intn(500)) * time.Millisecond)
		time.Sleep(time.Until(at))
		victims := 1
		if b == 1 {
			victims = 2
		}
		for range victims {
			if p := fl.random(); p != nil {
				fl.sigkill(p)
				t.Logf("burst %d: SIGKILL worker %d", b, p.pid)
			}
		}
		if b == 2 {
			srv.kill(syscall.SIGKILL)
			t.Logf("burst %d: SIGKILL redis-server", b)
			time.Sleep(time.Second)
			srv.start()
			t.Logf("redis-server restarted from its AOF")
		}
		for len(fl.live()) < workers {
			fl.spawnRegistered(in)
		}
	}
	last := tick + int64((bursts-1)*every)

	// Wait for the last burst to be enqueued whole: a killed claim holds its schedules for the lease
	// (10 s), and the pools look at least every heartbeat.
	byTick := func() (map[string]map[int64]int, int) {
		raw, err := redis.ByteSlices(in.do("LRANGE", in.key("jobs", "st"), 0, -1))
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]map[int64]int{}
		for _, r := range raw {
			var j struct {
				ScheduleID string `json:"schedule_id"`
				Tick       int64  `json:"tick"`
			}
			if err := json.Unmarshal(r, &j); err != nil {
				t.Fatalf("job %q: %v", r, err)
			}
			if got[j.ScheduleID] == nil {
				got[j.ScheduleID] = map[int64]int{}
			}
			got[j.ScheduleID][j.Tick]++
		}
		return got, len(raw)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		got, _ := byTick()
		n := 0
		for _, ticks := range got {
			if ticks[last] > 0 {
				n++
			}
		}
		if n == schedules || time.Now().After(deadline) {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Stop the schedules before counting, so that no later tick is half enqueued.
	for _, s := range list {
		if err := client.DeleteSchedule(s.ID); err != nil {
			t.Fatal(err)
		}
	}
	got, total := byTick()
	lost, twice := 0, 0
	var examples []string
	for _, s := range list {
		for tk := tick; tk <= last; tk += every {
			switch n := got[s.ID][tk]; {
			case n == 0:
				lost++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%s@%d lost", s.ID, tk))
				}
			case n > 1:
				twice++
				if len(examples) < 5 {
					examples = append(examples, fmt.Sprintf("%s@%d enqueued %d times", s.ID, tk, n))
				}
			}
		}
		for tk, n := range got[s.ID] {
			// A tick due between the set and the read of the first tick (the set ran into a tick's
			// second) fires too, once; one after the last may have begun before the deletes.
			early := tk >= setAt && tk < tick && n == 1
			if (tk < tick || tk > last) && tk != last+every && !early {
				t.Errorf("%s: a job for tick %d, outside the bursts (%d times)", s.ID, tk, n)
			}
		}
	}
	t.Logf("%d jobs for %d schedules x %d bursts; lost %d, enqueued twice %d", total, schedules, bursts, lost, twice)
	if lost > 0 || twice > 0 {
		sort.Strings(examples)
		t.Errorf("ticks lost %d, enqueued more than once %d; e.g. %q", lost, twice, examples)
	}
}
