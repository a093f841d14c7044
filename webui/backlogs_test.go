package webui

import (
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// reportStale writes a report as a relay that stopped silent ago would have left it (ReportBacklog
// always stamps the present).
func (f *fixture) reportStale(source string, waiting int64, oldest time.Time, silent time.Duration) {
	f.t.Helper()
	at := time.Now().Add(-silent)
	rdo(f.t, f.pool, "HSET", f.key("backlogs"), source,
		fmt.Sprintf(`{"waiting":%d,"oldest_ms":%d,"reported_ms":%d}`, waiting, oldest.UnixMilli(), at.UnixMilli()))
}

// The overview has a Backlogs section only when a relay reports one: its jobs waiting, the age of
// the oldest, when it was reported, and a report no relay renewed for over a minute marked so.
func TestOverviewShowsBacklogs(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	body := f.get("/ui/").Body.String()
	if strings.Contains(body, `id="backlogs"`) || strings.Contains(body, "<h2>Backlogs") {
		t.Errorf("the overview shows a Backlogs section with no backlog reported")
	}

	e := work.NewEnqueuer(f.ns, f.pool)
	if err := e.ReportBacklog("postgres:work_outbox", 42, time.Now().Add(-90*time.Second)); err != nil {
		t.Fatal(err)
	}
	if err := e.ReportBacklog("postgres:empty", 0, time.Time{}); err != nil {
		t.Fatal(err)
	}
	f.reportStale("postgres:gone", 7, time.Now().Add(-10*time.Minute), 5*time.Minute)

	rec := f.get("/ui/")
	if rec.Code != 200 {
		t.Fatalf("overview: %d %s", rec.Code, rec.Body)
	}
	body = rec.Body.String()
	row := func(source string) string {
		t.Helper()
		i := strings.Index(body, `data-source="`+source+`"`)
		if i < 0 {
			t.Fatalf("no row for %s in the overview", source)
		}
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	live := row("postgres:work_outbox")
	for _, want := range []string{`data-col="waiting">42<`, `data-col="oldest">1m 30s<`} {
		if !strings.Contains(live, want) {
			t.Errorf("live source lacks %q: %s", want, live)
		}
	}
	if !regexp.MustCompile(`>\ds ago</time>`).MatchString(live) {
		t.Errorf("live source's report is not seconds ago: %s", live)
	}
	if strings.Contains(live, "stale") || strings.Contains(live, "no relay") {
		t.Errorf("a fresh report is marked stale: %s", live)
	}
	if empty := row("postgres:empty"); !strings.Contains(empty, `data-col="waiting">0<`) || !strings.Contains(empty, `data-col="oldest">-<`) {
		t.Errorf("empty source: %s", empty)
	}
	gone := row("postgres:gone")
	for _, want := range []string{`class="stale"`, `data-col="waiting">7<`, `data-col="oldest">5m 0s<`, "no relay reported for 5m"} {
		if !strings.Contains(gone, want) {
			t.Errorf("stale source lacks %q: %s", want, gone)
		}
	}
	if strings.Index(body, "postgres:empty") > strings.Index(body, "postgres:gone") {
		t.Error("sources are not in order")
	}
}

// GET /backlogs answers the Client's backlogs, [] when none, behind the server's authentication.
func TestBacklogsEndpoint(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if body := strings.TrimSpace(f.get("/backlogs").Body.String()); body != "[]" {
		t.Errorf("/backlogs with none: %s", body)
	}
	oldest := time.Now().Add(-time.Minute).Truncate(time.Millisecond)
	if err := work.NewEnqueuer(f.ns, f.pool).ReportBacklog("postgres:work_outbox", 3, oldest); err != nil {
		t.Fatal(err)
	}
	var bs []*work.Backlog
	decode(t, f.get("/backlogs"), 200, &bs)
	if len(bs) != 1 || bs[0].Source != "postgres:work_outbox" || bs[0].Waiting != 3 || !bs[0].Oldest.Equal(oldest) || time.Since(bs[0].ReportedAt) > time.Minute {
		t.Errorf("/backlogs: %s", f.get("/backlogs").Body)
	}
	raw := f.get("/backlogs").Body.String()
	for _, field := range []string{`"source"`, `"waiting"`, `"oldest"`, `"reported_at"`} {
		if !strings.Contains(raw, field) {
			t.Errorf("/backlogs lacks %s: %s", field, raw)
		}
	}
	f.wantErrors([]errorCase{{"POST", "/backlogs", 405}, {"GET", "/backlogs/x", 404}})

	locked := &fixture{t: t, pool: f.pool, ns: f.ns, srv: NewServerWithOptions(f.ns, f.pool, "", Options{BearerToken: "tok"})}
	if rec := locked.get("/backlogs"); rec.Code != 401 {
		t.Errorf("/backlogs without the token: %d", rec.Code)
	}
	if rec := locked.do("GET", "/backlogs", nil, map[string]string{"Authorization": "Bearer tok"}); rec.Code != 200 {
		t.Errorf("/backlogs with the token: %d %s", rec.Code, rec.Body)
	}
}
