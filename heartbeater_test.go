package work

import (
	"context"
	"log/slog"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/rdb"
)

// declared reads what a pool's heartbeat declares: idle ("1", "0", or "" for none) and dead_after.
func declared(t *testing.T, pool *redis.Pool, ns, id string) (idle, deadAfter string) {
	t.Helper()
	v, err := redis.Strings(rdo(t, pool, "HMGET", rdb.NewKeyspace(ns).Heartbeat(id), "idle", "dead_after"), nil)
	if err != nil {
		t.Fatal(err)
	}
	return v[0], v[1]
}

// A pool alone with nothing to do declares itself idle, with a dead-after limit longer by what its
// slower beat adds (5s instead of 2s: 9s for DeadPoolTimeout 6s). While it holds a job it declares
// itself busy, with its DeadPoolTimeout.
func TestIdlePoolDeclaresALongerLimitUntilItHoldsAJob(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	gate := newBhvGate()
	wp := NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{})
	wp.Job("a", func(*Job) error { gate.Wait(); return nil })
	bhvStart(t, wp)
	t.Cleanup(gate.Open)
	eventually(t, 30*time.Second, "the pool to declare itself idle", func() bool {
		idle, deadAfter := declared(t, pool, ns, wp.workerPoolID)
		return idle == "1" && deadAfter == "9"
	})
	if _, err := NewEnqueuer(ns, pool).Enqueue("a", nil); err != nil {
		t.Fatal(err)
	}
	eventually(t, 30*time.Second, "the pool holding a job to declare itself busy", func() bool {
		idle, deadAfter := declared(t, pool, ns, wp.workerPoolID)
		return idle == "0" && deadAfter == "6"
	})
	gate.Open()
	eventually(t, 60*time.Second, "the pool to declare itself idle again", func() bool {
		idle, _ := declared(t, pool, ns, wp.workerPoolID)
		return idle == "1"
	})
}

// An idle pool beats every HeartbeatInterval, not more slowly, while a pool it watches is busy (or
// declares nothing, as a gocraft/work pool): should that pool die, its jobs wait for this one's beat.
// Two idle pools that watch each other both beat slowly.
func TestIdlePoolWatchingABusyPoolBeatsOften(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ks := rdb.NewKeyspace(ns)
	wp := NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{})
	wp.Job("a", func(*Job) error { return nil })
	bhvStart(t, wp)
	slow := wp.reg.run.heartbeater.slow.Load
	eventually(t, 30*time.Second, "the pool to beat slowly", slow)
	// A peer that heartbeats as long as the test runs, declaring idle as the test says.
	peerIdle := make(chan string, 1)
	peerIdle <- "0"
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	t.Cleanup(func() { cancel(); <-done })
	go func() {
		defer close(done)
		idle := ""
		for {
			select {
			case idle = <-peerIdle:
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
			args := []interface{}{ks.Heartbeat("peer"), "heartbeat_at", time.Now().Unix(), "job_names", "a", "dead_after", 6}
			if idle != "" {
				args = append(args, "idle", idle)
			}
			c := pool.Get()
			c.Do("HSET", args...)
			if idle == "" {
				c.Do("HDEL", ks.Heartbeat("peer"), "idle")
			}
			c.Do("SADD", ks.WorkerPools(), "peer")
			c.Close()
		}
	}()
	eventually(t, 30*time.Second, "the pool to see its busy peer", func() bool { return !slow() })
	if idle, _ := declared(t, pool, ns, wp.workerPoolID); idle != "1" {
		t.Errorf("the pool that holds no job declares idle %q beside a busy peer, want 1", idle)
	}
	peerIdle <- "1"
	eventually(t, 30*time.Second, "the pool to beat slowly beside its idle peer", slow)
	peerIdle <- ""
	eventually(t, 30*time.Second, "the pool to see a peer that declares nothing", func() bool { return !slow() })

	// A second pool: each reads the other's heartbeat, idle.
	cancel()
	<-done
	rdo(t, pool, "SREM", ks.WorkerPools(), "peer")
	rdo(t, pool, "DEL", ks.Heartbeat("peer"))
	wp2 := NewWorkerPoolWithOptions(bhvCtx{}, 2, ns, pool, WorkerPoolOptions{})
	wp2.Job("a", func(*Job) error { return nil })
	bhvStart(t, wp2)
	eventually(t, 30*time.Second, "two idle pools to beat slowly", func() bool {
		return slow() && wp2.reg.run.heartbeater.slow.Load()
	})
}

// After a heartbeat that declared the pool idle, taking a job asks for the next heartbeat at once,
// whichever comes first of the take and the heartbeat's look at what the pool holds.
func TestAnIdlePoolThatTakesAJobAsksForAHeartbeat(t *testing.T) {
	for _, takeFirst := range []bool{false, true} {
		l := newLease(6 * time.Second)
		out := newOutcomeQueue(slog.Default(), nil)
		h := &heartbeater{heartbeaterParams: heartbeaterParams{interval: 2 * time.Second, lease: l,
			holding: func() bool { return out.heldCount() > 0 || out.heldSinceSweep() }},
			idleEvery: 5 * time.Second, beats: 2}
		take := func() { out.hold(&Job{}); l.holding() } // as a fetch or a hand-off does
		if takeFirst {
			take() // before the beat: the beat sees it
			if h.idleNow() {
				t.Error("a beat after a take since the last one declared the pool idle")
			}
			continue
		}
		if !h.idleNow() {
			t.Fatal("a pool that took nothing was not idle")
		}
		take()
		select {
		case <-l.busy:
		default:
			t.Error("a take after an idle beat did not ask for a heartbeat")
		}
		if h.idleNow() {
			t.Error("the beat asked for declared the pool idle")
		}
	}
}

// A beat that follows an idle pool's longer wait reaps nothing: the wait could hide a stall of Redis
// in which live pools missed their beats. The next, a HeartbeatInterval later, does.
func TestReaperWaitsAnIntervalAfterAnIdleBeat(t *testing.T) {
	r := newReaper(reaperParams{interval: 2 * time.Second, deadPoolTimeout: 6 * time.Second})
	r.lastBeat, r.healthySince = 1000, 900
	r.observe(context.Background(), 1005, nil, true)
	if r.healthySince != 1005 {
		t.Errorf("healthy since %d after an idle beat, want 1005", r.healthySince)
	}
	r.observe(context.Background(), 1007, nil, false)
	if r.healthySince != 1005 {
		t.Errorf("healthy since %d after the next beat, want 1005", r.healthySince)
	}
}
