package rdb

import (
	"fmt"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// freeDriver is keyedDriver for a name whose keys have no limit (KeyConcurrency 0).
var freeDriver = strings.Replace(keyedDriver, "limit = 1,", "limit = 0,", 1)

// A take's first round over n queue keys or more of a name without limits gives one job a key and
// reads what each has left from the waiting index; it must leave Redis as the general round does.
// Two namespaces get the same keyed state, one of them also an override of a key no take reaches
// (which sends every take the general way); they take and release in the same steps, and after
// each step their keyed states must be the same. The state holds keys of one to four jobs, a key
// with an old score, one whose queue is gone, one whose queue holds another type, one the waiting
// index does not list, and a lane job, which sends the round it is in the general way.
func TestKeyedTakeOfFreeKeysOneJobEachMatchesTheGeneralRound(t *testing.T) {
	pool := newTestPool(t)
	script := redis.NewScript(0, keyedHelpers(t)+freeDriver)
	free := redistest.Namespace(t, pool, "freetake") + ":"
	general := redistest.Namespace(t, pool, "freetake") + ":"
	var jobs int
	for _, p := range []string{free, general} {
		jobs = fillFreeKeysState(t, pool, p+"keyed:a:")
	}
	redistest.Do(t, pool, "HSET", general+"keyed:a:conf", "w:no-such-key", "2")

	// Enough steps that every job is taken: the keys have four jobs at most.
	taken := takeInSteps(t, pool, script, free, general, 40)
	if taken != jobs {
		t.Fatalf("%d jobs taken in all, want every one of the state's %d", taken, jobs)
	}
}

// fillFreeKeysState writes the keyed state of TestKeyedTakeOfFreeKeysOneJobEachMatchesTheGeneralRound
// under prefix p (<ns>:keyed:a:), and returns the number of its jobs.
func fillFreeKeysState(t *testing.T, pool *redis.Pool, p string) int {
	t.Helper()
	conn := pool.Get()
	defer conn.Close()
	waiting := 0
	push := func(key string, jobs int, listed bool) {
		for j := 0; j < jobs; j++ {
			job := fmt.Sprintf(`{"name":"a","id":"%s-%d","t":1,"key":"%s"}`, key, j, key)
			conn.Send("LPUSH", p+"{"+key+"}", job)
		}
		if listed {
			conn.Send("ZADD", p+"waiting", jobs, key)
		}
		waiting += jobs
	}
	for i := 0; i < 22; i++ {
		key := fmt.Sprintf("k%02d", i)
		push(key, 1+i%4, true) // one job to four
		score := 5 + float64(i)/4
		if i == 3 {
			score = 1 // behind the current turn: taken as at it
		}
		conn.Send("ZADD", p+"ready", score, key)
	}
	push("unlisted", 3, false) // its backlog comes from its queue's length
	conn.Send("ZADD", p+"ready", 6.1, "unlisted")
	conn.Send("ZADD", p+"ready", 5.5, "gone") // its queue is gone
	conn.Send("ZADD", p+"waiting", 1, "gone")
	conn.Send("SET", p+"{wrongtype}", "a string")
	conn.Send("ZADD", p+"ready", 7.5, "wrongtype")
	conn.Send("ZADD", p+"waiting", 2, "wrongtype")
	// A lane job among the keys: the round that pops it goes the general way.
	lane := `solo` + "\n" + `{"name":"a","id":"solo-0","t":1,"key":"solo"}`
	conn.Send("ZADD", p+"ready", "6.000001", lane)
	conn.Send("HSET", p+"lane", "solo", "6.000001")
	waiting++
	push("late", 2, true) // scored far ahead of the turn: brought back to it
	conn.Send("ZADD", p+"ready", 5e13, "late")
	conn.Send("HSET", p+"meta", "vt", "5", "waiting", waiting, "counts", "0")
	if _, err := conn.Do(""); err != nil {
		t.Fatal(err)
	}
	return waiting
}

// The first round over free keys believes the waiting index: a key whose count there is too high
// (a job deleted from its queue by hand) goes back in ready with a count one lower, and its next
// turn, which finds its queue empty, drops it from ready and from the index. A key the index counts
// too low is asked its queue's length once the count says it is drained, and keeps its turns while
// it has jobs.
func TestKeyedTakeOfFreeKeysReadsBacklogsFromTheWaitingIndex(t *testing.T) {
	pool := newTestPool(t)
	script := redis.NewScript(0, keyedHelpers(t)+freeDriver)
	p := redistest.Namespace(t, pool, "freeindex") + ":"
	k := p + "keyed:a:"
	jobs := map[string]int{"high": 1, "low": 3, "x1": 2, "x2": 2}
	counts := map[string]int{"high": 5, "low": 1, "x1": 2, "x2": 2}
	for i, key := range []string{"high", "low", "x1", "x2"} {
		for j := 0; j < jobs[key]; j++ {
			redistest.Do(t, pool, "LPUSH", k+"{"+key+"}", fmt.Sprintf(`{"name":"a","id":"%s-%d","t":1,"key":"%s"}`, key, j, key))
		}
		redistest.Do(t, pool, "ZADD", k+"ready", i, key)
		redistest.Do(t, pool, "ZADD", k+"waiting", counts[key], key)
	}
	redistest.Do(t, pool, "HSET", k+"meta", "vt", "0", "waiting", "8", "counts", "0")
	score := func(set, key string) string {
		t.Helper()
		v, err := redis.String(redistest.Do(t, pool, "ZSCORE", k+set, key), nil)
		if err == redis.ErrNil {
			return "none"
		}
		if err != nil {
			t.Fatal(err)
		}
		return v
	}

	if got := runDriver(t, pool, script, p, "take", 4); len(got) != 4 {
		t.Fatalf("the first take gave %q, want one job of each of the four keys", got)
	}
	if r, w := score("ready", "high"), score("waiting", "high"); r != "1" || w != "4" {
		t.Fatalf("after the first take the key counted too high is in ready at %s with %s waiting, want 1 and 4 (its count, not its queue, decided)", r, w)
	}
	if r, w := score("ready", "low"), score("waiting", "low"); r != "2" || w != "2" {
		t.Fatalf("after the first take the key counted too low is in ready at %s with %s waiting, want 2 and 2 (its queue's length)", r, w)
	}
	// A take of one job pops high first (the earliest turn): its queue is empty, so the take's
	// next round pops low.
	got := runDriver(t, pool, script, p, "take", 1)
	if len(got) != 1 || !strings.HasPrefix(got[0], "low\n") {
		t.Fatalf("the second take gave %q, want one job of low", got)
	}
	if r, w := score("ready", "high"), score("waiting", "high"); r != "none" || w != "none" {
		t.Fatalf("after its empty turn the key counted too high is in ready at %s and the index at %s, want in neither", r, w)
	}
	if r, w := score("ready", "low"), score("waiting", "low"); r == "none" || w != "1" {
		t.Fatalf("after the second take low (one job left) is in ready at %s with %s waiting, want in ready with 1", r, w)
	}
}
