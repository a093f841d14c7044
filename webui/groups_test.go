package webui

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// group enqueues n jobs of name into group g.
func (f *fixture) group(name, g string, n int) {
	f.t.Helper()
	e := work.NewEnqueuer(f.ns, f.pool)
	for i := 1; i <= n; i++ {
		if _, err := e.EnqueueWith(name, work.Q{"v": i}, work.EnqueueOptions{Group: g}); err != nil {
			f.t.Fatal(err)
		}
	}
}

// registerGroups writes the group settings of a pool that registers name with opts, as its start
// does, and stops it: its groups then wait by those settings, and nothing flushes them.
func (f *fixture) registerGroups(name string, opts work.GroupOptions) {
	f.t.Helper()
	wp := work.NewWorkerPool(struct{}{}, 1, f.ns, f.pool).GroupJob(name, opts, func([]*work.Job) error { return nil })
	wp.Start()
	wp.Stop()
}

// The Groups page lists the groups with jobs waiting, linked from the navigation, the soonest to be
// flushed first, a group only its size flushes last as "when full"; GET /groups answers them, of
// one name with ?name=.
func TestGroupsPageAndAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	body := f.pageHas("/ui/groups", "No group has jobs waiting", `href="groups" class="active" aria-current="page">Groups<`)
	if strings.Contains(body, `id="groups"`) {
		t.Error("an empty list shows a table")
	}
	if b := f.get("/groups").Body.String(); strings.TrimSpace(b) != "[]" {
		t.Errorf("GET /groups with no group: %s", b)
	}
	f.pageHas("/ui/", `<a href="groups">Groups</a>`)

	f.registerGroups("digest", work.GroupOptions{MaxSize: 100, MaxDelay: time.Hour})
	f.registerGroups("bulk", work.GroupOptions{MaxSize: 50})
	f.group("bulk", "tenant-1", 2) // flushed only when full
	f.group("digest", "user-1", 3)
	f.group("digest", "<b>user-2</b>", 1)
	// A name no pool registered waits the library's default delay: sooner than the hour.
	f.group("notify", "u", 1)

	body = f.pageHas("/ui/groups", `id="groups"`, `<span class="count" id="total">4</span>`, "7 jobs waiting in groups")
	if strings.Contains(body, "<b>user-2</b>") {
		t.Error("the page holds an unescaped group key")
	}
	row := func(group string) string {
		t.Helper()
		i := strings.Index(body, `data-group="`+group+`"`)
		if i < 0 {
			t.Fatalf("no row for %s: %s", group, body)
		}
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	r := row("digest/user-1")
	for _, want := range []string{`data-col="name">digest<`, `data-col="group">user-1<`, `data-col="size">3<`} {
		if !strings.Contains(r, want) {
			t.Errorf("the digest group's row lacks %q: %s", want, r)
		}
	}
	if !regexp.MustCompile(`data-col="oldest"><time [^>]+>\ds ago<`).MatchString(r) {
		t.Errorf("the digest group's row does not say its oldest job came seconds ago: %s", r)
	}
	if !regexp.MustCompile(`>in (59m \d+s|1h 0m)<`).MatchString(r) {
		t.Errorf("the digest group's row does not say it is flushed in an hour: %s", r)
	}
	if b := row("bulk/tenant-1"); !strings.Contains(b, `data-col="next-flush"><span class="hint">when full<`) || !strings.Contains(b, `data-col="size">2<`) {
		t.Errorf("the size-only group's row: %s", b)
	}
	order := []int{strings.Index(body, `data-group="notify/u"`), strings.Index(body, `data-group="digest/user-1"`),
		strings.Index(body, `data-group="bulk/tenant-1"`)}
	if order[0] > order[1] || order[1] > order[2] {
		t.Errorf("the groups are not listed by next flush, size-only last: %v", order)
	}

	var groups []work.GroupInfo
	decode(t, f.get("/groups"), 200, &groups)
	if len(groups) != 4 || groups[0].Name != "notify" || groups[3].Name != "bulk" || !groups[3].NextFlush.IsZero() {
		t.Errorf("GET /groups: %+v", groups)
	}
	decode(t, f.get("/groups?name=digest"), 200, &groups)
	if len(groups) != 2 || groups[0].Name != "digest" || groups[1].Name != "digest" {
		t.Fatalf("GET /groups?name=digest: %+v", groups)
	}
	for _, g := range groups {
		if g.Group == "user-1" && (g.Size != 3 || g.Oldest.IsZero() || time.Until(g.NextFlush) < 58*time.Minute) {
			t.Errorf("GET /groups?name=digest, user-1: %+v", g)
		}
	}
	if b := f.get("/groups?name=nosuch").Body.String(); strings.TrimSpace(b) != "[]" {
		t.Errorf("GET /groups?name=nosuch: %s", b)
	}
}
