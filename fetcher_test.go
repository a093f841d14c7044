package work

import (
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// commandCalls sums INFO commandstats calls (script-internal commands included), leaving out the
// test's own INFO and CONFIG calls, and reports the HSET calls apart.
func commandCalls(t *testing.T, pool *redis.Pool) (total, hset int64) {
	t.Helper()
	info, err := redis.String(rdo(t, pool, "INFO", "commandstats"), nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(info, "\n") {
		name, rest, ok := strings.Cut(strings.TrimSpace(line), ":calls=")
		if !ok || strings.HasPrefix(name, "cmdstat_info") || strings.HasPrefix(name, "cmdstat_config") {
			continue
		}
		calls, _, _ := strings.Cut(rest, ",")
		n, _ := strconv.ParseInt(calls, 10, 64)
		total += n
		if name == "cmdstat_hset" {
			hset = n
		}
	}
	return total, hset
}

// An idle pool sends one script per heartbeat and the script runs four commands (TIME, HSET,
// SMEMBERS, EXISTS), whatever its concurrency and number of job names: no per-worker or per-queue
// polling.
func TestIdlePoolCostsFiveCommandsPerHeartbeat(t *testing.T) {
	pool, _ := privateRedis(t)
	ns := newTestNamespace(t, pool)
	wp := NewWorkerPoolWithOptions(bhvCtx{}, 100, ns, pool, WorkerPoolOptions{HeartbeatInterval: time.Second})
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		wp.Job(name, func(*Job) error { return nil })
	}
	bhvStart(t, wp)
	// Let the start-up looks pass: the pool is idle once heartbeats come alone.
	eventually(t, 30*time.Second, "the pool to settle", func() bool {
		rdo(t, pool, "CONFIG", "RESETSTAT")
		time.Sleep(2500 * time.Millisecond)
		total, hset := commandCalls(t, pool)
		return hset >= 1 && total <= 5*hset
	})
	rdo(t, pool, "CONFIG", "RESETSTAT")
	eventually(t, 60*time.Second, "ten heartbeats", func() bool {
		_, hset := commandCalls(t, pool)
		return hset >= 10
	})
	total, hset := commandCalls(t, pool)
	// A look of the fetcher may fall in the window, nothing more.
	if total > 5*hset+2 {
		t.Errorf("idle pool: %d commands over %d heartbeats, want at most 5 per heartbeat", total, hset)
	}
}

// A job pushed onto a queue by another program (no wake-up) is found by the heartbeat's look, even
// when the pool's own looks are a minute apart.
func TestHeartbeatFindsAJobPushedWithoutWakeUp(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	var ran atomic.Int64
	bhvStart(t, NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{
		HeartbeatInterval: time.Second, SleepBackoffs: []int64{60000},
	}).Job("a", func(*Job) error { ran.Add(1); return nil }))
	if _, err := NewEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 10*time.Second, "the enqueued job to run", func() bool { return ran.Load() == 1 })
	rdo(t, pool, "LPUSH", bhvKey(ns, "jobs", "a"), `{"name":"a","id":"pushed1","t":1,"args":null}`)
	eventually(t, 20*time.Second, "the pushed job to run", func() bool { return ran.Load() == 2 })
}
