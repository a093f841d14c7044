package webui

import (
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// The periodic job that seedSchedules makes a live pool declare, and its ID among the schedules.
const (
	periodicSpec = "0 0 * * * *"
	periodicID   = "periodic:cleanup:" + periodicSpec
)

// seedSchedules stores four schedules: report:acme (Mondays at 9:00 in Berlin, keyed, with args and
// jitter), report:globex (paused), digest (run-latest) and broken (a record another program wrote);
// and makes a live pool declare the periodic job cleanup.
func (f *fixture) seedSchedules() *work.Client {
	t := f.t
	client := work.NewClient(f.ns, f.pool)
	err := client.SetSchedules([]work.Schedule{
		{ID: "report:acme", Spec: "0 0 9 * * MON", Location: "Europe/Berlin", JobName: "report", Key: "acme",
			Args: map[string]interface{}{"customer": "acme"}, Jitter: 30 * time.Second},
		{ID: "report:globex", Spec: "@every 1h", JobName: "report", Key: "globex"},
		{ID: "digest", Spec: "0 30 2 * * *", JobName: "digest", Missed: work.MissedRunLatest},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := client.PauseSchedule("report:globex"); err != nil {
		t.Fatal(err)
	}
	rdo(t, f.pool, "HSET", f.key("schedules"), "broken", "garbage")
	rdo(t, f.pool, "SADD", f.key("worker_pools"), "pool1")
	rdo(t, f.pool, "HSET", f.key("worker_pools:pool1"), "heartbeat_at", f.now, "started_at", f.now-300,
		"periodic_jobs", fmt.Sprintf(`[{"job_name":"cleanup","spec":%q}]`, periodicSpec))
	return client
}

// longArgs make a schedule's record longer than Redis keeps in a hash's compact encoding.
var longArgs = map[string]interface{}{"note": strings.Repeat("x", 80)}

// scheduleJSON is the answer of GET /schedule.
type scheduleJSON struct {
	work.ScheduleInfo
	NextTicks []int64 `json:"next_ticks"`
}

// scheduleIDs lists the IDs of schedules, sorted.
func scheduleIDs(list []*work.ScheduleInfo) string {
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	sort.Strings(ids)
	return strings.Join(ids, ",")
}

func TestScheduleEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	var page work.SchedulePage
	raw := f.get("/schedules").Body.String()
	decode(t, f.get("/schedules"), 200, &page)
	if page.Stored != 0 || len(page.Schedules) != 0 || page.Next != "" || !strings.Contains(raw, `"schedules": []`) {
		t.Errorf("/schedules of a namespace without schedules: %s", raw)
	}
	client := f.seedSchedules()

	decode(t, f.get("/schedules"), 200, &page)
	if page.Stored != 4 || len(page.Schedules) != 5 || scheduleIDs(page.Schedules) != "broken,digest,"+periodicID+",report:acme,report:globex" {
		t.Fatalf("/schedules: %s", f.get("/schedules").Body)
	}
	if p := page.Schedules[0]; p.ID != periodicID || !p.Periodic || p.JobName != "cleanup" || strings.Join(p.WorkerPoolIDs, ",") != "pool1" {
		t.Errorf("the periodic job, first: %+v", p)
	}
	for _, s := range page.Schedules {
		if (s.ID == "broken") != (s.Damaged != "") || (s.ID == "report:globex") != s.Paused {
			t.Errorf("/schedules: %s is %+v", s.ID, s)
		}
	}
	decode(t, f.get("/schedules?prefix=report:"), 200, &page)
	if scheduleIDs(page.Schedules) != "report:acme,report:globex" || page.Stored != 4 {
		t.Errorf("/schedules?prefix=report: %s", f.get("/schedules?prefix=report:").Body)
	}
	decode(t, f.get("/schedules?prefix=periodic:&count=5"), 200, &page)
	if scheduleIDs(page.Schedules) != periodicID {
		t.Errorf("/schedules?prefix=periodic: lists %s", scheduleIDs(page.Schedules))
	}
	decode(t, f.get("/schedules?stored_only=1"), 200, &page)
	if scheduleIDs(page.Schedules) != "broken,digest,report:acme,report:globex" {
		t.Errorf("/schedules?stored_only=1 lists %s", scheduleIDs(page.Schedules))
	}

	// One schedule, with its next ticks: Mondays at 9:00 in Berlin.
	var one scheduleJSON
	decode(t, f.get("/schedule?id=report:acme"), 200, &one)
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	if one.Key != "acme" || one.Location != "Europe/Berlin" || one.Args["customer"] != "acme" || one.Jitter != 30*time.Second ||
		len(one.NextTicks) != 5 || one.NextTicks[0] != one.NextTick || one.NextRun < one.NextTick || one.NextRun >= one.NextTick+30 {
		t.Fatalf("/schedule?id=report:acme: %s", f.get("/schedule?id=report:acme").Body)
	}
	for i, tick := range one.NextTicks {
		lt := time.Unix(tick, 0).In(berlin)
		if lt.Weekday() != time.Monday || lt.Hour() != 9 || lt.Minute() != 0 || lt.Second() != 0 || (i > 0 && tick <= one.NextTicks[i-1]) {
			t.Errorf("next tick %d is %v", i, lt)
		}
	}
	for id, want := range map[string]string{"report:globex": `"paused": true`, "broken": `"damaged": "`} {
		body := f.get("/schedule?id=" + url.QueryEscape(id)).Body.String()
		if !strings.Contains(body, want) || !strings.Contains(body, `"next_ticks": []`) {
			t.Errorf("/schedule?id=%s: %s", id, body)
		}
	}
	decode(t, f.get("/schedule?id="+url.QueryEscape(periodicID)), 200, &one)
	if !one.Periodic || len(one.NextTicks) != 5 || one.NextTicks[1]-one.NextTicks[0] != 3600 {
		t.Errorf("/schedule of the periodic job: %+v", one)
	}

	// The actions, with the ID in the query or in a form body.
	get := func(id string) *work.ScheduleInfo {
		t.Helper()
		in, err := client.Schedule(id)
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	var status map[string]interface{}
	decode(t, f.post("/pause_schedule?id=report:acme"), 200, &status)
	if status["status"] != "ok" || !get("report:acme").Paused {
		t.Errorf("pause_schedule: %v, schedule %+v", status, get("report:acme"))
	}
	decode(t, f.do("POST", "/resume_schedule", strings.NewReader("id=report%3Aacme"), nil), 200, &status)
	if get("report:acme").Paused {
		t.Error("resume_schedule left the schedule paused")
	}
	var run struct {
		Status string    `json:"status"`
		Job    *work.Job `json:"job"`
	}
	decode(t, f.post("/run_schedule?id=report:acme"), 200, &run)
	if run.Status != "ok" || run.Job == nil || run.Job.ScheduleID != "report:acme" || run.Job.Key != "acme" || run.Job.Name != "report" ||
		run.Job.Args["customer"] != "acme" || run.Job.Tick == 0 {
		t.Errorf("run_schedule: %+v", run.Job)
	}
	if k, err := client.Key("report", "acme"); err != nil || k.Waiting != 1 {
		t.Errorf("after run_schedule the key acme has %+v, %v; want its job waiting", k, err)
	}
	if in := get("report:acme"); in.LastTick != 0 {
		t.Errorf("run_schedule changed the schedule's own ticks: %+v", in)
	}

	// set_schedule reads its fields with the library's parsers.
	var set struct {
		Status   string             `json:"status"`
		Schedule *work.ScheduleInfo `json:"schedule"`
	}
	decode(t, f.post("/set_schedule?id=new&spec=0+0+9+*+*+*&location=Asia/Tokyo&job=report&key=k1&jitter=1m&missed=run-latest&args="+
		url.QueryEscape(`{"n": 12345678901234567890}`)), 200, &set)
	want := work.Schedule{ID: "new", Spec: "0 0 9 * * *", Location: "Asia/Tokyo", JobName: "report", Key: "k1", Jitter: time.Minute,
		Missed: work.MissedRunLatest}
	s := set.Schedule
	if set.Status != "ok" || s == nil || s.ID != want.ID || s.Spec != want.Spec || s.Location != want.Location || s.JobName != want.JobName ||
		s.Key != want.Key || s.Jitter != want.Jitter || s.Missed != want.Missed || fmt.Sprint(get("new").Args["n"]) != "12345678901234567890" {
		t.Errorf("set_schedule: %+v", s)
	}
	decode(t, f.do("POST", "/set_schedule", strings.NewReader("id=new&spec=%40daily&job=digest"), nil), 200, &set)
	if in := get("new"); in.Spec != "@daily" || in.JobName != "digest" || in.Key != "" || in.Args != nil || in.Missed != work.MissedSkip {
		t.Errorf("set_schedule again: %+v", in)
	}
	decode(t, f.post("/delete_schedule?id=new"), 200, &status)
	wantError(t, f.get("/schedule?id=new"), http.StatusNotFound)
	decode(t, f.post("/delete_schedule?id=broken"), 200, &status)
	decode(t, f.get("/schedules?stored_only=1"), 200, &page)
	if scheduleIDs(page.Schedules) != "digest,report:acme,report:globex" || page.Stored != 3 {
		t.Errorf("after the deletes: %s", f.get("/schedules?stored_only=1").Body)
	}
}

func TestScheduleEndpointsPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	client := work.NewClient(f.ns, f.pool)
	// More schedules, and longer records, than Redis keeps in a hash's compact encoding (512 entries
	// and 64 bytes by default), so that a scan takes pages.
	var list []work.Schedule
	want := map[string]bool{}
	for i := 0; i < 600; i++ {
		id := fmt.Sprintf("tenant:%03d", i)
		list = append(list, work.Schedule{ID: id, Spec: "@daily", JobName: "report", Key: id, Args: longArgs})
		want[id] = true
	}
	if err := client.SetSchedules(list); err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	cursor, pages := "", 0
	for {
		var page work.SchedulePage
		decode(t, f.get("/schedules?count=50&stored_only=1&cursor="+cursor), 200, &page)
		for _, s := range page.Schedules {
			seen[s.ID] = true
		}
		if pages++; page.Next == "" || pages > 300 {
			break
		}
		cursor = page.Next
	}
	if len(seen) != len(want) || pages < 2 {
		t.Errorf("walking /schedules saw %d of %d schedules in %d pages", len(seen), len(want), pages)
	}
}

func TestScheduleEndpointsRefuseBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	client := f.seedSchedules()
	// A keyed schedule whose key is full.
	if err := client.SetSchedule(work.Schedule{ID: "full", Spec: "@daily", JobName: "report", Key: "busy"}); err != nil {
		t.Fatal(err)
	}
	if err := client.SetKeyLimits("report", "busy", work.KeyLimits{MaxWaiting: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := work.NewEnqueuer(f.ns, f.pool).EnqueueWith("report", nil, work.EnqueueOptions{Key: "busy"}); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("s", work.MaxScheduleIDLen+1)
	set := "/set_schedule?id=x&spec=%40daily&job=report"
	f.wantErrors([]errorCase{
		{"GET", "/schedule", 400},
		{"GET", "/schedule?id=", 400},
		{"GET", "/schedule?id=a%00b", 400},
		{"GET", "/schedule?id=" + long, 400},
		{"GET", "/schedule?id=nope", 404},
		{"GET", "/schedule?id=periodic:nope", 404},
		{"GET", "/schedule/x?id=digest", 404},
		{"GET", "/schedules?cursor=x", 400},
		{"GET", "/schedules?cursor=-1", 400},
		{"GET", "/schedules?count=0", 400},
		{"GET", "/schedules?count=lots", 400},
		{"GET", "/schedules?count=10001", 400},
		{"GET", "/schedules?stored_only=maybe", 400},
		{"GET", "/schedules?prefix=%01", 400},
		{"GET", "/schedules/extra", 404},
		{"POST", "/schedules", 405},
		{"POST", "/schedule?id=digest", 405},
		{"GET", "/pause_schedule?id=digest", 405},
		{"POST", "/pause_schedule", 400},
		{"POST", "/pause_schedule/digest", 404},
		{"POST", "/pause_schedule?id=%7F", 400},
		{"POST", "/pause_schedule?id=nope", 404},
		{"POST", "/resume_schedule?id=nope", 404},
		{"POST", "/delete_schedule?id=nope", 404},
		{"POST", "/run_schedule?id=nope", 404},
		{"POST", "/pause_schedule?id=" + url.QueryEscape(periodicID), 404},
		{"POST", "/pause_schedule?id=broken", 409},
		{"POST", "/resume_schedule?id=broken", 409},
		{"POST", "/run_schedule?id=broken", 409},
		{"POST", "/run_schedule?id=full", 409},
		{"POST", "/set_schedule?spec=%40daily&job=report", 400},
		{"POST", strings.Replace(set, "%40daily", "every+day", 1), 400},
		{"POST", strings.Replace(set, "%40daily", "TZ%3DUTC+%40daily", 1), 400},
		{"POST", set + "&location=Mars/Olympus", 400},
		{"POST", set + "&location=Local", 400},
		{"POST", strings.Replace(set, "job=report", "job=", 1), 400},
		{"POST", strings.Replace(set, "job=report", "job=x:lock", 1), 400},
		{"POST", set + "&key=%7Bx%7D", 400},
		{"POST", set + "&args=%5B1%5D", 400},
		{"POST", set + "&args=nope", 400},
		{"POST", set + "&jitter=soon", 400},
		{"POST", set + "&jitter=48h", 400},
		{"POST", set + "&jitter=-1s", 400},
		{"POST", set + "&missed=maybe", 400},
		{"POST", "/set_schedule/x?id=x&spec=%40daily&job=report", 404},
	})
	for target, want := range map[string]string{
		"/schedule?id=a%00b":                             "malformed schedule",
		"/schedule?id=nope":                              "schedule not found",
		"/run_schedule?id=broken":                        "damaged schedule record",
		"/run_schedule?id=full":                          "too many jobs of the key waiting",
		set + "&location=Mars/Olympus":                   "unknown time zone",
		strings.Replace(set, "%40daily", "every+day", 1): "malformed spec",
		set + "&args=%5B1%5D":                            "malformed args",
		set + "&key=%7Bx%7D":                             "malformed key",
		set + "&jitter=soon":                             "bad jitter",
		set + "&missed=maybe":                            "missed policy",
	} {
		method := "GET"
		if !strings.HasPrefix(target, "/schedule?") {
			method = "POST"
		}
		if body := f.do(method, target, nil, nil).Body.String(); !strings.Contains(body, want) {
			t.Errorf("%s %s: %s, want %q", method, target, body, want)
		}
	}
	// Nothing was changed by the refused requests.
	var page work.SchedulePage
	decode(t, f.get("/schedules?stored_only=1"), 200, &page)
	if scheduleIDs(page.Schedules) != "broken,digest,full,report:acme,report:globex" {
		t.Errorf("after the refused requests: %s", scheduleIDs(page.Schedules))
	}
	for _, s := range page.Schedules {
		if s.Paused != (s.ID == "report:globex") || s.LastTick != 0 {
			t.Errorf("after the refused requests: %+v", s)
		}
	}
	if k, err := client.Key("report", "busy"); err != nil || k.Waiting != 1 {
		t.Errorf("the full key after the refused run: %+v, %v", k, err)
	}

	// The schedules' hash, overwritten by another program with another type.
	g := newFixture(t, Options{})
	rdo(t, g.pool, "SET", g.key("schedules"), "garbage")
	g.wantErrors([]errorCase{
		{"GET", "/schedules", 409},
		{"GET", "/schedule?id=a", 409},
		{"POST", "/pause_schedule?id=a", 409},
		{"POST", "/run_schedule?id=a", 409},
	})
	if body := g.get("/schedules").Body.String(); !strings.Contains(body, "another Redis type") {
		t.Errorf("overwritten schedules: %s", body)
	}
}

func TestSchedulesPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	check := func(page string, status int, want ...string) string {
		t.Helper()
		rec := f.get(page)
		body := rec.Body.String()
		if rec.Code != status || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %q, want %d html\n%s", page, rec.Code, rec.Header().Get("Content-Type"), status, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", page, w)
			}
		}
		if regexp.MustCompile(`<script>|style=|onclick=|onsubmit=`).MatchString(body) {
			t.Errorf("%s holds inline script or style", page)
		}
		return body
	}
	check("/ui/schedules", 200, `id="schedules-empty"`, "No schedule: none is stored", `href="schedules" class="active"`,
		`<span class="count" id="total" title="Schedules stored">0</span>`)
	check("/ui/", 200, `<a href="schedules">Schedules</a>`)
	client := f.seedSchedules()

	// The list: the periodic job first, then the schedules by ID, each with its actions.
	body := check("/ui/schedules", 200, `title="Schedules stored">4<`, `<tr data-id="report:globex" class="paused">`,
		`href="schedules?id=report%3Aacme">report:acme</a>`, `<span class="mono">0 0 9 * * MON</span> <span class="hint">Europe/Berlin</span>`,
		`<a href="keys?name=report&amp;q=acme">acme</a>`, `badge bad">damaged</span> <span class="hint" title="starts`,
		`title="Declared in code by WorkerPool.PeriodicallyEnqueue">in code</span>`, `<span class="hint">set in code</span>`,
		`data-op="pause_schedule" data-id="report:acme"`, `data-op="run_schedule" data-id="report:acme"`,
		`data-op="delete_schedule" data-id="report:acme"`, `data-op="resume_schedule" data-id="report:globex"`,
		`<input type="hidden" name="back" value="schedules">`)
	var order []string
	for _, m := range regexp.MustCompile(`<tr data-id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
		order = append(order, m[1])
	}
	if strings.Join(order, ",") != periodicID+",broken,digest,report:acme,report:globex" {
		t.Errorf("the list shows %q", order)
	}
	row := func(id string) string {
		m := regexp.MustCompile(`(?s)<tr data-id="` + regexp.QuoteMeta(id) + `".*?</tr>`).FindString(body)
		if m == "" {
			t.Fatalf("no row of %s", id)
		}
		return m
	}
	if r := row("broken"); strings.Contains(r, "pause_schedule") || strings.Contains(r, "run_schedule") || !strings.Contains(r, "delete_schedule") {
		t.Errorf("a damaged schedule offers other actions than delete:\n%s", r)
	}
	if r := row(periodicID); strings.Contains(r, `name="op"`) {
		t.Errorf("a periodic job declared in code offers actions:\n%s", r)
	}
	acme, err := client.Schedule("report:acme")
	if err != nil {
		t.Fatal(err)
	}
	if r := row("report:acme"); !strings.Contains(r, `datetime="`+time.Unix(acme.NextRun, 0).UTC().Format(time.RFC3339)+`"`) {
		t.Errorf("report:acme's next run is not %d:\n%s", acme.NextRun, r)
	}

	// One schedule: its definition, state and next ticks, in UTC and in its zone.
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	next := time.Unix(acme.NextTick, 0)
	body = check("/ui/schedules?id=report%3Aacme", 200, `<title>Schedule report:acme · work`, `id="schedule-id">report:acme<`,
		`id="schedule-zone">Europe/Berlin<`, `id="schedule-job">report<`, `<a class="mono" href="keys?name=report&amp;q=acme">acme</a>`,
		"&#34;customer&#34;: &#34;acme&#34;", `id="schedule-jitter">30s `, `id="schedule-missed">skip `, `badge ok">active<`,
		`<th>In Europe/Berlin</th>`, "<td>"+next.In(berlin).Format("2006-01-02 15:04:05 MST")+"</td>",
		`<input type="hidden" name="back" value="schedules?id=report%3Aacme">`, `data-op="pause_schedule"`, `href="schedules">All schedules`,
		`href="schedules" class="active"`)
	if n := strings.Count(regexp.MustCompile(`(?s)<table class="data" id="schedule-ticks">.*?</table>`).FindString(body), "<tr>"); n != 6 {
		t.Errorf("the view lists %d ticks, want 5 (and a header)", n-1)
	}
	check("/ui/schedules?id=report%3Aglobex", 200, `badge warn">paused<`, "none of its ticks is enqueued until it is resumed", `data-op="resume_schedule"`)
	check("/ui/schedules?id=digest", 200, `id="schedule-missed">run-latest `, `id="schedule-zone">UTC<`, `id="schedule-key"><span class="hint">none`)
	body = check("/ui/schedules?id=broken", 200, `badge bad">damaged<`, `id="schedule-damaged">starts`, `data-op="delete_schedule"`)
	if strings.Contains(body, "pause_schedule") || strings.Contains(body, "schedule-ticks") {
		t.Error("the view of a damaged schedule offers pause or ticks")
	}
	body = check("/ui/schedules?id="+url.QueryEscape(periodicID), 200, "A periodic job declared in code", `id="schedule-pools">pool1<`,
		"Computed from this server's clock")
	if strings.Contains(body, `name="op"`) {
		t.Error("the view of a periodic job offers actions")
	}

	// Search: the IDs that start with the text, the exact one first.
	body = check("/ui/schedules?q=report%3A", 200, `value="report:"`, `href="schedules">All schedules`)
	if got := regexp.MustCompile(`<tr data-id="([^"]+)"`).FindAllStringSubmatch(body, -1); len(got) != 2 {
		t.Errorf("q=report: lists %q", got)
	}
	check("/ui/schedules?q=nobody", 200, `id="schedules-empty"`, "No schedule's ID starts with")

	// Pages: more schedules than a page holds, walked by their Next links; each listed once (a scan
	// returns an element twice only when the hash shrinks meanwhile). Their long records keep the
	// hash out of Redis's compact encoding, which a scan reads whole.
	more := []work.Schedule{{ID: "bulk:1", Spec: "@daily", JobName: "report"}}
	for i := 0; i < 200; i++ {
		more = append(more, work.Schedule{ID: fmt.Sprintf("bulk:%03d", i), Spec: "@daily", JobName: "report", Args: longArgs})
	}
	if err := client.SetSchedules(more); err != nil {
		t.Fatal(err)
	}
	walk := func(start string) (map[string]int, int) {
		t.Helper()
		seen, pages := map[string]int{}, 0
		for u := start; u != "" && pages < 100; pages++ {
			body := check(u, 200)
			for _, m := range regexp.MustCompile(`<tr data-id="([^"]+)"`).FindAllStringSubmatch(body, -1) {
				seen[m[1]]++
			}
			u = ""
			if m := regexp.MustCompile(`<a href="([^"]+)" rel="next" id="next-page">`).FindStringSubmatch(body); m != nil {
				u = "/ui/" + strings.ReplaceAll(m[1], "&amp;", "&")
				if !strings.Contains(body, `rel="first"`) && pages > 0 {
					t.Errorf("page %d of %s has no link to the first", pages+1, start)
				}
			}
		}
		return seen, pages
	}
	once := func(what string, seen map[string]int, want int) {
		t.Helper()
		for id, n := range seen {
			if n != 1 {
				t.Errorf("%s lists %s %d times", what, id, n)
			}
		}
		if len(seen) != want {
			t.Errorf("%s lists %d rows, want %d", what, len(seen), want)
		}
	}
	seen, pages := walk("/ui/schedules")
	once("the list", seen, 206)
	if seen[periodicID] != 1 || pages < 2 {
		t.Errorf("walking the list took %d pages; the periodic job showed %d times", pages, seen[periodicID])
	}
	seen, _ = walk("/ui/schedules?q=bulk%3A1")
	once("q=bulk:1", seen, 101)
	for id := range seen {
		if !strings.HasPrefix(id, "bulk:1") {
			t.Errorf("q=bulk:1 lists %s", id)
		}
	}
	body = check("/ui/schedules?q=bulk%3A1", 200)
	if m := regexp.MustCompile(`<tr data-id="([^"]+)"`).FindStringSubmatch(body); m == nil || m[1] != "bulk:1" {
		t.Errorf("the exact ID is not first: %v", m)
	}

	// Bad parameters get a 4xx page.
	for target, status := range map[string]int{
		"/ui/schedules?id=nope": 404, "/ui/schedules?id=": 400, "/ui/schedules?id=a%00": 400, "/ui/schedules?q=%01": 400,
		"/ui/schedules?cursor=x": 400, "/ui/schedules?q=" + strings.Repeat("q", 201): 400,
	} {
		check(target, status)
	}
	check("/ui/schedules?id=nope", 404, "No schedule has the ID nope")
	rdo(t, f.pool, "DEL", f.key("schedules"))
	rdo(t, f.pool, "SET", f.key("schedules"), "garbage")
	check("/ui/schedules", 409, "another Redis type")
}

func TestScheduleFormActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	client := f.seedSchedules()
	act := func(vals url.Values, wantLocation string) {
		t.Helper()
		rec := f.form(vals, nil)
		if rec.Code != 303 || rec.Header().Get("Location") != wantLocation {
			t.Fatalf("%v: %d %q, want 303 to %q", vals, rec.Code, rec.Header().Get("Location"), wantLocation)
		}
	}
	paused := func(id string) bool {
		t.Helper()
		in, err := client.Schedule(id)
		if err != nil {
			t.Fatal(err)
		}
		return in.Paused
	}
	back := "schedules?id=report%3Aacme"
	act(url.Values{"op": {"pause_schedule"}, "id": {"report:acme"}, "back": {back}}, back+"&done=schedule_paused")
	if !paused("report:acme") {
		t.Error("not paused")
	}
	act(url.Values{"op": {"resume_schedule"}, "id": {"report:acme"}, "back": {"schedules?q=report"}}, "schedules?q=report&done=schedule_resumed")
	if paused("report:acme") {
		t.Error("not resumed")
	}
	act(url.Values{"op": {"run_schedule"}, "id": {"report:globex"}, "back": {back}}, back+"&done=schedule_run")
	if k, err := client.Key("report", "globex"); err != nil || k.Waiting != 1 {
		t.Errorf("run now of a paused schedule: key %+v, %v", k, err)
	}
	act(url.Values{"op": {"delete_schedule"}, "id": {"digest"}, "back": {"schedules"}}, "schedules?done=schedule_deleted")
	if _, err := client.Schedule("digest"); err == nil {
		t.Error("not deleted")
	}
	// The list's cursor survives as the return address.
	act(url.Values{"op": {"pause_schedule"}, "id": {"report:acme"}, "back": {"schedules?cursor=17&evil=1"}}, "schedules?cursor=17&done=schedule_paused")

	// What cannot be done says why.
	act(url.Values{"op": {"pause_schedule"}, "id": {"digest"}, "back": {"schedules"}}, "schedules?fail=schedule_gone")
	act(url.Values{"op": {"run_schedule"}, "id": {periodicID}, "back": {"schedules"}}, "schedules?fail=schedule_gone")
	act(url.Values{"op": {"resume_schedule"}, "id": {"broken"}, "back": {"schedules"}}, "schedules?fail=schedule_damaged")
	act(url.Values{"op": {"run_schedule"}, "id": {"broken"}, "back": {"schedules"}}, "schedules?fail=schedule_damaged")
	act(url.Values{"op": {"pause_schedule"}, "back": {"schedules"}}, "schedules?fail=bad")
	act(url.Values{"op": {"pause_schedule"}, "id": {"a\x01b"}, "back": {"schedules"}}, "schedules?fail=bad")
	if err := client.SetKeyLimits("report", "globex", work.KeyLimits{MaxWaiting: 1}); err != nil {
		t.Fatal(err)
	}
	act(url.Values{"op": {"run_schedule"}, "id": {"report:globex"}, "back": {"schedules"}}, "schedules?fail=key_full")
	act(url.Values{"op": {"delete_schedule"}, "id": {"broken"}, "back": {"schedules"}}, "schedules?done=schedule_deleted")
	g := newFixture(t, Options{})
	rdo(t, g.pool, "SET", g.key("schedules"), "garbage")
	if rec := g.form(url.Values{"op": {"pause_schedule"}, "id": {"a"}, "back": {"schedules"}}, nil); rec.Header().Get("Location") != "schedules?fail=schedules_unreadable" {
		t.Errorf("an action on overwritten schedules: %d %q", rec.Code, rec.Header().Get("Location"))
	}

	// The flashes read.
	for q, want := range map[string]string{
		"done=schedule_paused": "The schedule is paused", "done=schedule_run": "The schedule&#39;s job is enqueued.",
		"done=schedule_deleted": "its jobs already enqueued stay", "fail=schedule_gone": "no schedule has this ID",
		"fail=schedule_damaged": "cannot be read", "fail=key_full": "KeyMaxWaiting", "fail=schedules_unreadable": "holds another type",
	} {
		if body := f.get("/ui/schedules?" + q).Body.String(); !strings.Contains(body, want) {
			t.Errorf("flash of %s lacks %q", q, want)
		}
	}
}

func TestSchedulesPagesReadOnlyAndEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true})
	evilID, evilKey, evilName := `<img src=x onerror=alert(1)>"'`, `<b>key</b>`, `<b>name</b>`
	client := work.NewClient(f.ns, f.pool)
	if err := client.SetSchedule(work.Schedule{ID: evilID, Spec: "@daily", JobName: evilName, Key: evilKey,
		Args: map[string]interface{}{"html": "<script>alert(1)</script>"}}); err != nil {
		t.Fatal(err)
	}
	rdo(t, f.pool, "HSET", f.key("schedules"), "<b>broken</b>", "<img src=x onerror=alert(2)>")
	bad := regexp.MustCompile(`<img|<b>|<script>alert`)
	for _, page := range []string{"/ui/schedules", "/ui/schedules?id=" + url.QueryEscape(evilID), "/ui/schedules?id=" + url.QueryEscape("<b>broken</b>"),
		"/ui/schedules?q=" + url.QueryEscape(evilID)} {
		rec := f.get(page)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Errorf("%s: %d", page, rec.Code)
		}
		if m := bad.FindString(body); m != "" {
			t.Errorf("%s holds unescaped data %q", page, m)
		}
		if strings.Contains(body, `name="op"`) || !strings.Contains(body, "read-only") {
			t.Errorf("%s: a read-only page shows actions", page)
		}
		if !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;&#34;&#39;") && !strings.Contains(body, "&lt;b&gt;broken&lt;/b&gt;") {
			t.Errorf("%s does not show the ID as text", page)
		}
	}
	for _, target := range []string{"/pause_schedule?id=a", "/resume_schedule?id=a", "/delete_schedule?id=a", "/run_schedule?id=a",
		"/set_schedule?id=a&spec=%40daily&job=x"} {
		wantError(t, f.post(target), http.StatusForbidden)
	}
	if rec := f.form(url.Values{"op": {"delete_schedule"}, "id": {evilID}}, nil); rec.Code != http.StatusForbidden {
		t.Errorf("read-only form: %d", rec.Code)
	}
	if _, err := client.Schedule(evilID); err != nil {
		t.Errorf("a read-only server deleted a schedule: %v", err)
	}
	if _, err := client.Schedule("a"); err == nil {
		t.Error("a read-only server set a schedule")
	}
	// Reading works: the JSON is escaped.
	if b := f.get("/schedules").Body.String(); strings.Contains(b, "<img") || !strings.Contains(b, `"stored": 2`) {
		t.Errorf("/schedules: %s", b)
	}
}
