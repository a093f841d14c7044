package rdb

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// keyedHelpers returns the text of lua/lib/keychecks.lua and lua/lib/keyed.lua, in that order, for
// a test script to call the keyed helpers after it.
func keyedHelpers(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, helper := range []string{"keychecks", "keyed"} {
		_, text, err := readLua("lua/lib/" + helper + ".lua")
		if err != nil {
			t.Fatal(err)
		}
		b.WriteString(text + "\n")
	}
	return b.String()
}

// keyedDriver runs keyedTake or keyedReleaseMany (lua/lib/keyed.lua) on the keyed state of job name
// "a" under ARGV[1] (the namespace's prefix), with the defaults of a name whose pools set
// KeyConcurrency 1: ARGV[2] "take", ARGV[3] jobs wanted, returning the entries taken; or ARGV[2]
// "release" and the entries whose jobs ended from ARGV[3] on.
const keyedDriver = `
local p = ARGV[1]
local k = keyedKeys(p .. 'keyed:a:')
local d = {limit = 1, rateJobs = 0, ratePeriod = 0, hold = false, pools = p .. 'worker_pools'}
local inprogress = k.p .. 'pool:inprogress'
if ARGV[2] == 'take' then
  local out = {}
  local got = keyedTake(k, tonumber(ARGV[3]), inprogress, d, function() return 0 end, out)
  if not got then return redis.error_reply('the take failed') end
  return out
end
local ended = {}
for i = 3, #ARGV do
  redis.call('lrem', inprogress, '-1', ARGV[i])
  local K = keyedSplit(ARGV[i])
  ended[K] = (ended[K] or 0) + 1
end
keyedReleaseMany(k, ended, d, 'a', p .. 'wake')
return {}
`

// A take whose keys may each run one job (KeyConcurrency 1, no overrides, no rate) goes through a
// round of its own; it must leave Redis as the general round does. Two namespaces get the same
// keyed state, one of them also an override of a key no take reaches (an override sends every take
// of the name the general way); they take and release in the same steps, and after each step
// their keyed states must be the same. The state holds keys of several jobs and of one, keys at
// their limit, a key with an old score, one whose queue is gone, one whose queue holds another
// type, a running count that is not a number and one below 0.
func TestKeyedTakeOfOneJobAKeyMatchesTheGeneralRound(t *testing.T) {
	pool := newTestPool(t)
	keyed := keyedHelpers(t)
	script := redis.NewScript(0, keyed+keyedDriver)
	one := redistest.Namespace(t, pool, "onetake") + ":"
	general := redistest.Namespace(t, pool, "onetake") + ":"
	for _, p := range []string{one, general} {
		fillOneJobAKeyState(t, pool, p+"keyed:a:")
	}
	redistest.Do(t, pool, "HSET", general+"keyed:a:conf", "w:no-such-key", "2")

	taken := takeInSteps(t, pool, script, one, general, 40)
	if taken < 40 {
		t.Fatalf("%d jobs taken in all, want 40 at least", taken)
	}
}

// runDriver runs script, a driver as keyedDriver, on the keyed state under prefix p, and returns
// the entries it answers.
func runDriver(t *testing.T, pool *redis.Pool, script *redis.Script, p string, args ...interface{}) []string {
	t.Helper()
	conn := pool.Get()
	defer conn.Close()
	out, err := redis.Strings(script.Do(conn, append([]interface{}{p}, args...)...))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// takeInSteps runs the same steps on the keyed states under prefixes a and b with script (a driver
// as keyedDriver): every third step releases the older half of the jobs taken, the others take 3 to
// 9 jobs. It fails when a take gives the two different jobs or their states differ after a step, and
// returns the jobs taken.
func takeInSteps(t *testing.T, pool *redis.Pool, script *redis.Script, a, b string, steps int) int {
	t.Helper()
	var held []string // the entries taken and not yet released (the same in both)
	taken := 0
	for step := 0; step < steps; step++ {
		if step%3 == 2 && len(held) > 0 {
			// Release the older half of what runs, so that keys get turns again.
			end := held[:(len(held)+1)/2]
			args := []interface{}{"release"}
			for _, e := range end {
				args = append(args, e)
			}
			runDriver(t, pool, script, a, args...)
			runDriver(t, pool, script, b, args...)
			held = append([]string(nil), held[len(end):]...)
		} else {
			n := 3 + step%7
			ga, gb := runDriver(t, pool, script, a, "take", n), runDriver(t, pool, script, b, "take", n)
			if strings.Join(ga, "|") != strings.Join(gb, "|") {
				t.Fatalf("step %d: the take of %d gave %q, the general round %q", step, n, ga, gb)
			}
			held = append(held, ga...)
			taken += len(ga)
		}
		if sa, sb := keyedStateDump(t, pool, a), keyedStateDump(t, pool, b); sa != sb {
			t.Fatalf("step %d: the keyed state after the take's own round:\n%s\n"+
				"after the general round:\n%s", step, sa, sb)
		}
	}
	return taken
}

// A take that cannot write its in-progress list (another type there) puts every job it popped
// back and every key it served back in ready, with its count as before: the round of one job a
// key must leave Redis as the general round does, and every key must be in ready.
func TestKeyedTakeIntoAnInProgressOfAnotherTypePutsKeysBack(t *testing.T) {
	pool := newTestPool(t)
	script := redis.NewScript(0, keyedHelpers(t)+keyedDriver)
	one := redistest.Namespace(t, pool, "onefail") + ":"
	general := redistest.Namespace(t, pool, "onefail") + ":"
	for _, p := range []string{one, general} {
		k := p + "keyed:a:"
		for i, key := range []string{"a", "b", "c"} {
			redistest.Do(t, pool, "LPUSH", k+"{"+key+"}", key+"1")
			redistest.Do(t, pool, "ZADD", k+"ready", i+1, key)
			redistest.Do(t, pool, "ZADD", k+"waiting", 1, key)
		}
		redistest.Do(t, pool, "HSET", k+"meta", "vt", "1", "waiting", "3", "counts", "1", "limits", "1")
		redistest.Do(t, pool, "SET", k+"pool:inprogress", "another type")
	}
	redistest.Do(t, pool, "HSET", general+"keyed:a:conf", "w:no-such-key", "2")
	for _, p := range []string{one, general} {
		conn := pool.Get()
		_, err := script.Do(conn, p, "take", 5)
		conn.Close()
		if err == nil || !strings.Contains(err.Error(), "the take failed") {
			t.Fatalf("%s: the take into an in-progress list of another type gave %v, want it to fail", p, err)
		}
		if ready := redistest.Strings(t, pool, "ZRANGE", p+"keyed:a:ready", 0, -1); strings.Join(ready, " ") != "a b c" {
			t.Fatalf("%s: ready holds %q after the failed take, want a b c", p, ready)
		}
	}
	if sa, sb := keyedStateDump(t, pool, one), keyedStateDump(t, pool, general); sa != sb {
		t.Fatalf("the keyed state after the failed round of one job a key:\n%s\nafter the general round:\n%s", sa, sb)
	}
}

// fillOneJobAKeyState writes the keyed state of TestKeyedTakeOfOneJobAKeyMatchesTheGeneralRound
// under prefix p (<ns>:keyed:a:).
func fillOneJobAKeyState(t *testing.T, pool *redis.Pool, p string) {
	t.Helper()
	conn := pool.Get()
	defer conn.Close()
	waiting := 0
	push := func(key string, jobs int) {
		for j := 0; j < jobs; j++ {
			job := fmt.Sprintf(`{"name":"a","id":"%s-%d","t":1,"key":"%s"}`, key, j, key)
			conn.Send("LPUSH", p+"{"+key+"}", job)
		}
		if jobs > 0 {
			conn.Send("ZADD", p+"waiting", jobs, key)
		}
		waiting += jobs
	}
	for i := 0; i < 24; i++ {
		key := fmt.Sprintf("k%02d", i)
		push(key, 1+i%4) // one job to four
		score := 5 + float64(i)/4
		if i == 3 {
			score = 1 // behind the current turn: taken as at it
		}
		conn.Send("ZADD", p+"ready", score, key)
	}
	for i, key := range []string{"limited1", "limited2", "limited3"} {
		push(key, 2)
		conn.Send("ZADD", p+"ready", 6+i, key)
		conn.Send("HSET", p+"running", key, "1") // at its limit: left out until a release
	}
	// A count below 0 sends the round that reads it, and the take's next ones, the general way:
	// the keys the take's earlier rounds served then go into the general round's tables.
	push("negative", 3)
	conn.Send("ZADD", p+"ready", 8, "negative")
	conn.Send("HSET", p+"running", "negative", "-1")
	push("notanumber", 2)
	conn.Send("ZADD", p+"ready", 6.5, "notanumber")
	conn.Send("HSET", p+"running", "notanumber", "x")
	conn.Send("ZADD", p+"ready", 5.5, "gone") // its queue is gone
	conn.Send("ZADD", p+"waiting", 1, "gone")
	conn.Send("SET", p+"{wrongtype}", "a string")
	conn.Send("ZADD", p+"ready", 7.5, "wrongtype")
	conn.Send("HSET", p+"meta", "vt", "5", "waiting", waiting, "counts", "1", "limits", "1")
	if _, err := conn.Do(""); err != nil {
		t.Fatal(err)
	}
}

// keyedStateDump returns every key of job name "a"'s keyed state under prefix p but its overrides,
// without p, with its contents in a stable order.
func keyedStateDump(t *testing.T, pool *redis.Pool, p string) string {
	t.Helper()
	keys := redistest.Strings(t, pool, "KEYS", p+"keyed:a:*")
	sort.Strings(keys)
	var b strings.Builder
	for _, key := range keys {
		if key == p+"keyed:a:conf" {
			continue // the general round's namespace has one
		}
		var v []string
		switch typ, _ := redis.String(redistest.Do(t, pool, "TYPE", key), nil); typ {
		case "zset":
			v = redistest.Strings(t, pool, "ZRANGE", key, 0, -1, "WITHSCORES")
		case "hash":
			v = redistest.Strings(t, pool, "HGETALL", key)
			pairs := make([]string, 0, len(v)/2)
			for i := 0; i+1 < len(v); i += 2 {
				pairs = append(pairs, v[i]+"="+v[i+1])
			}
			sort.Strings(pairs)
			v = pairs
		case "list":
			v = redistest.Strings(t, pool, "LRANGE", key, 0, -1)
		default:
			v = []string{typ}
		}
		fmt.Fprintf(&b, "%s: %s\n", strings.TrimPrefix(key, p), strings.Join(v, " "))
	}
	return b.String()
}

// keyedCount reads a running count as tonumber does, 0 for none or for text that is not a number,
// also when it reads the same text again (from its cache).
func TestKeyedCountReadsCountsAsNumbers(t *testing.T) {
	pool := newTestPool(t)
	keyed := keyedHelpers(t)
	body := `return {keyedCount(nil), keyedCount('3'), keyedCount('x'), keyedCount('3'), keyedCount('x'),
  keyedCount('-1'), keyedCount('12'), keyedCount('')}`
	got, err := redis.Ints(redistest.Do(t, pool, "EVAL", keyed+body, 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	want := []int{0, 3, 0, 3, 0, -1, 12, 0}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("keyedCount gave %v, want %v", got, want)
	}
}
