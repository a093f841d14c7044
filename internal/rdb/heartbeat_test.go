package rdb

import (
	"context"
	"slices"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// While the registered pools stay the same, a heartbeat looks at the pools that follow its own in
// the order of their IDs (after the last, the first) until WatchedPeers of them look alive: every
// dead or late one before those is reported, none after. A heartbeat whose digest is not the pools'
// looks at every pool.
func TestHeartbeatLooksAtThePoolsAfterItUntilTwoLookAlive(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-ring"), PoolBackend(pool))
	clock, err := redis.Int64s(rdo(t, pool, "TIME"), nil)
	if err != nil {
		t.Fatal(err)
	}
	now := clock[0]
	// The other pools' heartbeats: seconds old (dead after 10, late after 2).
	age := map[string]int64{"a": 100, "b": 0, "d": 0, "e": 100, "f": 100, "h": 0, "i": 0}
	write := func() {
		for id, a := range age {
			rdo(t, pool, "HSET", s.Ks.Heartbeat(id), "heartbeat_at", now-a, "job_names", "x", "dead_after", 10)
			rdo(t, pool, "SADD", s.Ks.WorkerPools(), id)
		}
	}
	write()
	beat := func(self string, members string) HeartbeatResult {
		t.Helper()
		hb := &PoolHeartbeat{PoolID: self, StartedAt: 1, Concurrency: 1, Host: "h", Pid: 1, Registered: true,
			Members: members}
		res, err := s.Heartbeat(context.Background(), hb, nil, 10, 2, false)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	stale := func(res HeartbeatResult) []string {
		var ids []string
		for _, sp := range res.Stale {
			ids = append(ids, sp.Id)
		}
		slices.Sort(ids)
		return ids
	}
	check := func(what string, res HeartbeatResult, want ...string) {
		t.Helper()
		if got := stale(res); !slices.Equal(got, want) {
			t.Errorf("%s: reported %v, want %v", what, got, want)
		}
	}

	full := beat("c", "")
	check("a look at every pool", full, "a", "e", "f")
	if full.Members == "" {
		t.Fatal("no digest of the pools")
	}
	// c: d (alive), e and f (dead), h (alive, the second): a is not looked at.
	check("c's look", beat("c", full.Members), "e", "f")
	// h: i (alive), a (dead, after the last the first), b (alive).
	check("h's look", beat("h", full.Members), "a")
	// A late pool does not count as alive: c looks on past d to h, then i.
	age["d"] = 5
	write()
	res := beat("c", full.Members)
	check("c's look past a late pool", res, "e", "f")
	if res.LateAt != now-5 {
		t.Errorf("late at %d, want %d", res.LateAt, now-5)
	}
	age["i"] = 100
	write()
	// ... and on past i, now dead, and a, to b.
	check("c's look past a late pool and dead ones", beat("c", full.Members), "a", "e", "f", "i")
	// Another pool registered: the digest changes, and the heartbeat looks at every pool.
	rdo(t, pool, "SADD", s.Ks.WorkerPools(), "g")
	res = beat("c", full.Members)
	if res.Members == full.Members {
		t.Error("the digest did not change with the pools")
	}
	check("a look after a pool registered", res, "a", "e", "f", "g", "i")
}

// An idle pool's heartbeat declares it idle, with its longer dead-after limit; a busy one's declares
// it busy, with its DeadPoolTimeout. A heartbeat says whether a live-looking pool it looked at is not
// idle (one that declares nothing, of gocraft/work, counts as busy); a dead one is reported instead.
func TestHeartbeatDeclaresIdleAndSaysWhetherAWatchedPoolIsBusy(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-idle"), PoolBackend(pool))
	beat := func(self string, idleDeadAfter int64) HeartbeatResult {
		t.Helper()
		hb := &PoolHeartbeat{PoolID: self, StartedAt: 1, Concurrency: 1, Host: "h", Pid: 1, IdleDeadAfter: idleDeadAfter}
		res, err := s.Heartbeat(context.Background(), hb, nil, 6, 3, false)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	declared := func(id string) []string {
		t.Helper()
		v, err := redis.Strings(rdo(t, pool, "HMGET", s.Ks.Heartbeat(id), "idle", "dead_after"), nil)
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	beat("a", 9)
	if got := declared("a"); !slices.Equal(got, []string{"1", "9"}) {
		t.Errorf("an idle beat wrote idle, dead_after %v, want [1 9]", got)
	}
	// b looks at a, idle.
	if res := beat("b", 0); res.Watch {
		t.Error("a heartbeat that looked at an idle pool only says one is busy")
	}
	if got := declared("b"); !slices.Equal(got, []string{"0", "6"}) {
		t.Errorf("a busy beat wrote idle, dead_after %v, want [0 6]", got)
	}
	// a looks at b, busy.
	if res := beat("a", 9); !res.Watch {
		t.Error("a heartbeat that looked at a busy pool does not say so")
	}
	// b's hash without its idle field: a pool of gocraft/work or of an earlier version.
	rdo(t, pool, "HDEL", s.Ks.Heartbeat("b"), "idle")
	if res := beat("a", 9); !res.Watch {
		t.Error("a pool that declares nothing does not count as busy")
	}
	// b dead: reported stale, not watched.
	rdo(t, pool, "HSET", s.Ks.Heartbeat("b"), "heartbeat_at", 1, "idle", "0")
	res := beat("a", 9)
	if res.Watch || len(res.Stale) != 1 || res.Stale[0].Id != "b" {
		t.Errorf("with b dead: watch %v, stale %v; want false, [b]", res.Watch, res.Stale)
	}
}
