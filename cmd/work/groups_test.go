package main

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// group enqueues n jobs of name into group g.
func (e *env) group(name, g string, n int) {
	e.t.Helper()
	enq := work.NewEnqueuer(e.ns, e.pool)
	for i := 1; i <= n; i++ {
		if _, err := enq.EnqueueWith(name, work.Q{"v": i}, work.EnqueueOptions{Group: g}); err != nil {
			e.t.Fatal(err)
		}
	}
}

// registerGroups writes the group settings of a pool that registers name with opts, as its start
// does, and stops it: its groups then wait by those settings, and nothing flushes them.
func (e *env) registerGroups(name string, opts work.GroupOptions) {
	e.t.Helper()
	wp := work.NewWorkerPool(struct{}{}, 1, e.ns, e.pool).GroupJob(name, opts, func([]*work.Job) error { return nil })
	wp.Start()
	wp.Stop()
}

func TestGroupsListsWaitingGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "groups").want(t, 0, "no group has jobs waiting")
	e.run(nil, "groups", "--json").want(t, 0, "[]")

	e.registerGroups("digest", work.GroupOptions{MaxSize: 100, MaxDelay: time.Hour})
	e.registerGroups("bulk", work.GroupOptions{MaxSize: 50})
	e.group("bulk", "tenant-1", 2)
	e.group("digest", "user-1", 3)
	e.group("digest", "user-2", 1)

	r := e.run(nil, "groups")
	r.want(t, 0, "JOB ", " GROUP ", " WAITING ", " OLDEST ", " NEXT FLUSH (UTC) ", " FLUSH\n", "6 jobs waiting in 3 groups\n")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 5 || !strings.HasPrefix(lines[1], "digest ") || !strings.HasPrefix(lines[3], "bulk ") {
		t.Fatalf("want the digest groups first, then the size-only bulk group:\n%s", r.stdout)
	}
	user1 := lines[1]
	if !strings.Contains(user1, " user-1 ") {
		user1 = lines[2]
	}
	if !strings.Contains(user1, " 3 ") || !regexp.MustCompile(` \ds ago `).MatchString(user1) ||
		!regexp.MustCompile(` in (59m\d+s|1h)$`).MatchString(user1) {
		t.Errorf("the user-1 line: %s", user1)
	}
	if !regexp.MustCompile(` 2 +\ds ago +- +when full$`).MatchString(lines[3]) {
		t.Errorf("the bulk line: %s", lines[3])
	}

	e.run(nil, "groups", "bulk").want(t, 0, "tenant-1", "2 jobs waiting in 1 group\n")
	e.run(nil, "groups", "nosuch").want(t, 0, "no group has jobs waiting")
	e.run(nil, "groups", "a", "b").want(t, 2)

	var gs []work.GroupInfo
	decodeJSON(t, e.run(nil, "groups", "digest", "--json"), &gs)
	if len(gs) != 2 || gs[0].Name != "digest" || gs[0].Oldest.IsZero() || gs[0].NextFlush.IsZero() {
		t.Errorf("groups digest --json: %+v", gs)
	}
	decodeJSON(t, e.run(nil, "groups", "--json"), &gs)
	if len(gs) != 3 || gs[2].Name != "bulk" || gs[2].Size != 2 || !gs[2].NextFlush.IsZero() {
		t.Errorf("groups --json: %+v", gs)
	}
}
