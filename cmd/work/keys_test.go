package main

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// seedKeys enqueues keyed jobs of "sync" that no pool serves, so they stay waiting: 3 of acme, 2 of
// globex, 1 of initech; and marks a job of the key busy as running (as a pool that fetched it
// would), so that busy has a job running and none waiting.
func seedKeys(t *testing.T, e *env) {
	t.Helper()
	enq := work.NewEnqueuer(e.ns, e.pool)
	for key, n := range map[string]int{"acme": 3, "globex": 2, "initech": 1} {
		for i := 0; i < n; i++ {
			if _, err := enq.EnqueueWith("sync", work.Q{"i": i}, work.EnqueueOptions{Key: key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	e.do("HSET", e.key("keyed:sync:running"), "busy", 1)
}

// keysJSON is what `work keys NAME --json` prints.
type keysJSON struct {
	Count int64           `json:"count"`
	Keys  []*work.KeyInfo `json:"keys"`
}

func decodeJSON(t *testing.T, r result, v interface{}) {
	t.Helper()
	r.want(t, 0)
	if err := json.Unmarshal([]byte(r.stdout), v); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, r.stdout)
	}
}

func TestKeysListsAndShowsKeys(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "keys", "stats").want(t, 0, "no keyed jobs: no job name has had a job with a key")
	e.run(nil, "keys", "stats", "--json").want(t, 0, "[]")
	seedKeys(t, e)

	r := e.run(nil, "keys", "sync")
	r.want(t, 0, "KEY      WAITING  RUNNING  STATUS   OVERRIDES\n", "acme     3        0        waiting  -\n",
		"busy     0        1        running  -\n", "page 1 of 1, 4 keys\n")
	if a, g, i, b := strings.Index(r.stdout, "acme"), strings.Index(r.stdout, "globex"), strings.Index(r.stdout, "initech"),
		strings.Index(r.stdout, "busy"); !(a < g && g < i && i < b) {
		t.Errorf("the keys are not busiest first:\n%s", r.stdout)
	}
	var page keysJSON
	decodeJSON(t, e.run(nil, "keys", "sync", "--json"), &page)
	if page.Count != 4 || len(page.Keys) != 4 || page.Keys[0].Key != "acme" || page.Keys[0].Waiting != 3 || page.Keys[3].Running != 1 {
		t.Errorf("keys --json: %+v", page)
	}
	e.run(nil, "keys", "sync", "--page", "2").want(t, 0, "no keys on page 2 (4 in all)")
	decodeJSON(t, e.run(nil, "keys", "sync", "--page", "2", "--json"), &page)
	if page.Count != 4 || page.Keys == nil || len(page.Keys) != 0 {
		t.Errorf("keys --page 2 --json: %+v", page)
	}
	e.run(nil, "keys", "nothing").want(t, 0, "no key of nothing has jobs waiting or running\n")

	e.run(nil, "keys", "sync", "acme").want(t, 0, "JOB          sync\n", "KEY          acme\n", "WAITING      3\n",
		"RUNNING      0\n", "STATUS       waiting\n", "CONCURRENCY  the job name's (JobOptions.KeyConcurrency)\n",
		"RATE LIMIT   the job name's (JobOptions.KeyRateLimit)\n", "WEIGHT       1\n", "MAX WAITING  the job name's (JobOptions.KeyMaxWaiting)\n")
	e.run(nil, "keys", "sync", "nobody").want(t, 0, "STATUS       idle (no job of the key is waiting or running)")
	var k work.KeyInfo
	decodeJSON(t, e.run(nil, "keys", "sync", "busy", "--json"), &k)
	if k.Key != "busy" || k.Running != 1 || k.Waiting != 0 {
		t.Errorf("keys sync busy --json: %+v", k)
	}

	var stats []*work.KeyStat
	decodeJSON(t, e.run(nil, "keys", "stats", "--json"), &stats)
	want := work.KeyStat{JobName: "sync", Waiting: 6, WaitingKeys: 3, Running: 1, RunningKeys: 1, LargestBacklog: 3, LargestBacklogKey: "acme"}
	if len(stats) != 1 || *stats[0] != want {
		t.Errorf("keys stats --json: %s", e.run(nil, "keys", "stats", "--json").stdout)
	}
	e.run(nil, "keys", "stats").want(t, 0, "JOB   WAITING  KEYS WAITING  RUNNING  KEYS RUNNING  LARGEST BACKLOG  PAUSED  OVERRIDDEN\n",
		"sync  6        3             1        1             acme (3)         0       0\n")

	// A job name that is a subcommand's name goes after --.
	enq := work.NewEnqueuer(e.ns, e.pool)
	if _, err := enq.EnqueueWith("stats", nil, work.EnqueueOptions{Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	e.run(nil, "keys", "--", "stats").want(t, 0, "k1   1        0        waiting  -\n", "page 1 of 1, 1 key\n")
	e.run(nil, "keys", "--", "stats", "k1").want(t, 0, "JOB          stats\n")

	// Another program overwrote a key of broken's keyed state.
	e.do("SET", e.key("keyed:broken:waiting"), "garbage")
	r = e.run(nil, "keys", "broken")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "another Redis type") {
		t.Errorf("keys of overwritten keyed state: %q", r.stderr)
	}
}

func TestKeyControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedKeys(t, e)
	c := work.NewClient(e.ns, e.pool)
	key := func() *work.KeyInfo {
		t.Helper()
		k, err := c.Key("sync", "acme")
		if err != nil {
			t.Fatal(err)
		}
		return k
	}

	e.run(nil, "keys", "pause", "sync", "acme").want(t, 0, "paused key acme of sync\n")
	if !key().Paused {
		t.Fatal("not paused")
	}
	e.run(nil, "keys", "sync").want(t, 0, "acme     3        0        paused   -\n")
	e.run(nil, "keys", "sync", "acme").want(t, 0, "STATUS       paused (its jobs wait until it is resumed)\n")
	var res keyResult
	decodeJSON(t, e.run(nil, "keys", "resume", "sync", "acme", "--json"), &res)
	if res != (keyResult{JobName: "sync", Key: "acme", Status: "resumed"}) || key().Paused {
		t.Errorf("keys resume --json: %+v, key %+v", res, key())
	}
	e.run(nil, "keys", "unpause", "sync", "acme").want(t, 0, "resumed key acme of sync\n")

	// set changes the overrides given and keeps the others.
	e.run(nil, "keys", "set", "sync", "acme", "--concurrency", "2", "--rate", "10/1m").want(t, 0,
		"CONCURRENCY  2 (override)\n", "RATE LIMIT   10 per 1m (override)\n", "WEIGHT       1\n")
	var k work.KeyInfo
	decodeJSON(t, e.run(nil, "keys", "set", "sync", "acme", "--weight", "3", "--max-waiting", "none", "--json"), &k)
	want := work.KeyLimits{Concurrency: 2, RateLimit: work.RateLimit{Jobs: 10, Period: time.Minute}, Weight: 3, MaxWaiting: work.KeyNoLimit}
	if k.Limits != want || key().Limits != want {
		t.Errorf("after two sets: %+v, want %+v", k.Limits, want)
	}
	e.run(nil, "keys", "sync").want(t, 0, "concurrency 2, rate 10 per 1m, weight 3, no cap on waiting")
	e.run(nil, "keys", "set", "sync", "acme", "--concurrency", "0", "--rate", "5/500ms", "--max-waiting", "40").want(t, 0,
		"CONCURRENCY  the job name's", "RATE LIMIT   5 per 500ms (override)\n", "WEIGHT       3 (override)\n", "MAX WAITING  40 (override)\n")
	e.run(nil, "keys", "set", "sync", "acme", "--concurrency", "none", "--rate", "2/h").want(t, 0, "CONCURRENCY  no limit (override)\n",
		"RATE LIMIT   2 per 1h (override)\n")
	e.run(nil, "keys", "set", "sync", "acme", "--rate", "3/.5s").want(t, 0, "RATE LIMIT   3 per 500ms (override)\n")
	e.run(nil, "keys", "stats").want(t, 0, "0       1\n")

	e.run(nil, "keys", "clear", "sync", "acme").want(t, 0, "cleared the overrides of key acme of sync: the job name's settings apply\n")
	if l := key().Limits; l != (work.KeyLimits{}) {
		t.Errorf("after clear: %+v", l)
	}
	decodeJSON(t, e.run(nil, "keys", "clear", "sync", "acme", "--json"), &res)
	if res.Status != "cleared" {
		t.Errorf("keys clear --json: %+v", res)
	}
	// A key with no job yet takes overrides ahead of its jobs.
	e.run(nil, "keys", "set", "sync", "newcomer", "--concurrency", "1").want(t, 0, "STATUS       idle", "CONCURRENCY  1 (override)")

	// enqueue --key makes keyed jobs.
	e.run(nil, "enqueue", "sync", "--key", "acme", "--args", `{"n":9}`).want(t, 0, "enqueued sync job ", " of key acme\n")
	e.run(nil, "enqueue", "sync", "--key", "acme", "--in", "1h").want(t, 0, " of key acme to run at ")
	if key().Waiting != 4 {
		t.Errorf("acme has %d jobs waiting after an enqueue --key, want 4", key().Waiting)
	}
}

func TestKeysUsageErrorsExitWith2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{
		{"keys"},
		{"keys", ""},
		{"keys", "sync", ""},
		{"keys", "sync", "a", "b"},
		{"keys", "sync", "a{b}"},
		{"keys", "sync", strings.Repeat("k", 201)},
		{"keys", "sync", "acme", "--page", "2"},
		{"keys", "sync", "--page", "x"},
		{"keys", "pause", "sync"},
		{"keys", "pause", "sync", "a}"},
		{"keys", "resume", "", "acme"},
		{"keys", "clear", "sync"},
		{"keys", "set", "sync", "acme"},
		{"keys", "set", "sync", "acme", "--rate", "10"},
		{"keys", "set", "sync", "acme", "--rate", "0/1m"},
		{"keys", "set", "sync", "acme", "--rate", "10/soon"},
		{"keys", "set", "sync", "acme", "--rate", "10/0s"},
		{"keys", "set", "sync", "acme", "--concurrency", "-2"},
		{"keys", "set", "sync", "acme", "--concurrency", "lots"},
		{"keys", "set", "sync", "acme", "--max-waiting", "1.5"},
		{"keys", "set", "sync", "acme", "--weight", "1001"},
		{"keys", "set", "sync", "acme", "--weight", "-1"},
		{"keys", "set", "sync", "{", "--weight", "2"},
		{"keys", "stats", "extra"},
		{"enqueue", "sync", "--key", "{x}"},
	} {
		r := e.run(nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "work: ") || !strings.Contains(r.stderr, "--help") || r.stdout != "" {
			t.Errorf("work %q: exit %d, stdout %q, stderr %q; want 2 and a message", args, r.code, r.stdout, r.stderr)
		}
	}
	if r := e.run(nil, "keys", "sync", "a{b}"); !strings.HasPrefix(r.stderr, "work: malformed key") {
		t.Errorf("malformed key: %q", r.stderr)
	}
	// Nothing was changed by the refused commands.
	if k, err := work.NewClient(e.ns, e.pool).Key("sync", "acme"); err != nil || k.Paused || k.Limits != (work.KeyLimits{}) || k.Waiting != 0 {
		t.Errorf("after the refused commands: %+v, %v", k, err)
	}
	e.run(nil, "keys", "--help").want(t, 0, "work keys NAME [KEY]", "the largest backlog first", "pause", "resume", "set", "clear", "stats", "work keys -- stats")
	e.run(nil, "keys", "set", "--help").want(t, 0, "--concurrency", "--rate", "--weight", "--max-waiting", "none")
}
