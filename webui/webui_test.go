package webui

import (
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

func TestJSONEndpointsAnswerAsGocraftWork(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()

	var queues []*work.Queue
	decode(t, f.get("/queues"), 200, &queues)
	if len(queues) != 3 || queues[2].JobName != "send_email" || queues[2].Count != 2 || queues[0].JobName != "charge_card" {
		t.Errorf("/queues: %s", f.get("/queues").Body)
	}
	// The exact field names of gocraft/work's answers.
	raw := f.get("/queues").Body.String()
	for _, field := range []string{`"job_name"`, `"count"`, `"latency"`} {
		if !strings.Contains(raw, field) {
			t.Errorf("/queues lacks %s: %s", field, raw)
		}
	}

	var pools []*work.WorkerPoolHeartbeat
	decode(t, f.get("/worker_pools"), 200, &pools)
	if len(pools) != 1 || pools[0].WorkerPoolID != "pool1" || pools[0].Pid != 4242 || len(pools[0].WorkerIDs) != 2 {
		t.Errorf("/worker_pools: %+v", pools)
	}

	var busy []*work.WorkerObservation
	decode(t, f.get("/busy_workers"), 200, &busy)
	if len(busy) != 1 || busy[0].WorkerID != "w1" || !busy[0].IsBusy || busy[0].Checkin != "halfway" {
		t.Errorf("/busy_workers: %+v", busy)
	}

	// The pages decode into mirrors of the gocraft/work types, which hold the documented fields.
	type listed struct {
		RetryAt int64  `json:"retry_at"`
		RunAt   int64  `json:"run_at"`
		DiedAt  int64  `json:"died_at"`
		Name    string `json:"name"`
		ID      string `json:"id"`
	}
	var retry struct {
		Count int64     `json:"count"`
		Jobs  []*listed `json:"jobs"`
	}
	decode(t, f.get("/retry_jobs?page=1"), 200, &retry)
	if retry.Count != 1 || len(retry.Jobs) != 1 || retry.Jobs[0].ID != "retry1" || retry.Jobs[0].RetryAt != f.now+60 {
		t.Errorf("/retry_jobs: %s", f.get("/retry_jobs").Body)
	}
	var sched struct {
		Count int64     `json:"count"`
		Jobs  []*listed `json:"jobs"`
	}
	decode(t, f.get("/scheduled_jobs"), 200, &sched)
	if sched.Count != 1 || sched.Jobs[0].RunAt != f.now+3600 || sched.Jobs[0].Name != "report" {
		t.Errorf("/scheduled_jobs: %s", f.get("/scheduled_jobs").Body)
	}
	var dead struct {
		Count int64     `json:"count"`
		Jobs  []*listed `json:"jobs"`
	}
	decode(t, f.get("/dead_jobs?page=0"), 200, &dead)
	if dead.Count != 2 || len(dead.Jobs) != 2 || dead.Jobs[0].ID != "dead1" || dead.Jobs[0].DiedAt != f.now-50 {
		t.Errorf("/dead_jobs: %s", f.get("/dead_jobs").Body)
	}
	if !strings.Contains(f.get("/dead_jobs").Body.String(), `"died_at"`) {
		t.Error("/dead_jobs lacks died_at")
	}
	decode(t, f.get("/dead_jobs?page=2"), 200, &dead)
	if dead.Count != 2 || len(dead.Jobs) != 0 {
		t.Errorf("/dead_jobs?page=2: %+v", dead)
	}

	var qs []*work.QueueStat
	decode(t, f.get("/queue_stats"), 200, &qs)
	if len(qs) != 3 || qs[2].Count != 2 {
		t.Errorf("/queue_stats: %+v", qs)
	}
	var sum work.Summary
	decode(t, f.get("/summary"), 200, &sum)
	// pool1 holds one send_email job in its in-progress list (its busy worker runs it).
	if sum != (work.Summary{Queues: 3, Queued: 2, InFlight: 1, Scheduled: 1, Retry: 1, Dead: 2}) {
		t.Errorf("/summary: %+v", sum)
	}
	var pts []work.StatPoint
	decode(t, f.get("/stats?minutes=10"), 200, &pts)
	if len(pts) != 10 {
		t.Errorf("/stats: %d points", len(pts))
	}
	decode(t, f.get("/stats?name=send_email"), 200, &pts)
	if len(pts) != 60 {
		t.Errorf("/stats?name=: %d points", len(pts))
	}
	var loc work.JobLocation
	decode(t, f.get("/job?id=retry1"), 200, &loc)
	if loc.State != work.JobStateRetry || loc.Job.ID != "retry1" {
		t.Errorf("/job: %+v", loc)
	}
}

func TestPostEndpointsAct(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	var status map[string]string

	decode(t, f.post(fmt.Sprintf("/retry_dead_job/%d/dead1", f.now-50)), 200, &status)
	if status["status"] != "ok" {
		t.Errorf("status %v", status)
	}
	if q := rStrings(t, f.pool, "LRANGE", f.key("jobs:charge_card"), 0, -1); len(q) != 1 || !strings.Contains(q[0], `"id":"dead1"`) {
		t.Errorf("charge_card queue after retry: %q", q)
	}
	wantError(t, f.post(fmt.Sprintf("/retry_dead_job/%d/dead1", f.now-50)), 404)

	decode(t, f.post(fmt.Sprintf("/delete_dead_job/%d/dead2", f.now-40)), 200, &status)
	if n := rInt(t, f.pool, "ZCARD", f.key("dead")); n != 0 {
		t.Errorf("dead set holds %d", n)
	}
	wantError(t, f.post(fmt.Sprintf("/delete_dead_job/%d/dead2", f.now-40)), 404)

	// A periodic job's ID holds slashes and spaces.
	id := "periodic:report:*/5 * * * *:1700000000"
	rdo(t, f.pool, "ZADD", f.key("dead"), 77, jobJSON(t, &work.Job{Name: "report", ID: id, EnqueuedAt: 1}))
	decode(t, f.post("/delete_dead_job/77/"+url.PathEscape(id)), 200, &status)

	for i := 0; i < 3; i++ {
		rdo(t, f.pool, "ZADD", f.key("dead"), i, jobJSON(t, &work.Job{Name: []string{"a", "b", "a"}[i], ID: fmt.Sprint("x", i), EnqueuedAt: 1}))
	}
	decode(t, f.post("/retry_dead_job_type/a"), 200, &status)
	if rInt(t, f.pool, "LLEN", f.key("jobs:a")) != 2 || rInt(t, f.pool, "ZCARD", f.key("dead")) != 1 {
		t.Error("retry_dead_job_type moved the wrong jobs")
	}
	decode(t, f.post("/retry_all_dead_jobs"), 200, &status)
	if rInt(t, f.pool, "LLEN", f.key("jobs:b")) != 1 || rInt(t, f.pool, "ZCARD", f.key("dead")) != 0 {
		t.Error("retry_all_dead_jobs left jobs")
	}
	rdo(t, f.pool, "ZADD", f.key("dead"), 1, "x", 2, "y")
	decode(t, f.post("/delete_all_dead_jobs"), 200, &status)
	if rInt(t, f.pool, "EXISTS", f.key("dead")) != 0 {
		t.Error("delete_all_dead_jobs left jobs")
	}
	decode(t, f.post("/pause_queue/send_email"), 200, &status)
	if rInt(t, f.pool, "EXISTS", f.key("jobs:send_email:paused")) != 1 {
		t.Error("pause_queue did not pause")
	}
	decode(t, f.post("/unpause_queue/send_email"), 200, &status)
	if rInt(t, f.pool, "EXISTS", f.key("jobs:send_email:paused")) != 0 {
		t.Error("unpause_queue did not resume")
	}
}

func TestBadParametersGetA4xxWithAJSONError(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	f.wantErrors([]errorCase{
		{"GET", "/dead_jobs?page=abc", 400},
		{"GET", "/dead_jobs?page=-1", 400},
		{"GET", "/retry_jobs?page=99999999999999999999", 400},
		{"GET", "/scheduled_jobs?page=1.5", 400},
		{"GET", "/stats?minutes=0", 400},
		{"GET", "/stats?minutes=lots", 400},
		{"GET", "/job", 400},
		{"GET", "/job?id=nope", 404},
		{"POST", "/retry_dead_job/abc/dead1", 400},
		{"POST", "/retry_dead_job/-5/dead1", 404},
		{"POST", "/retry_dead_job/12", 400},
		{"POST", "/retry_dead_job/12/", 400},
		{"POST", "/retry_dead_job", 400},
		{"POST", "/delete_dead_job/1e3/dead1", 400},
		{"POST", "/delete_dead_job/12/nope", 404},
		{"POST", "/retry_dead_job/12/nope", 404},
		{"POST", "/retry_dead_job_type", 400},
		{"POST", "/pause_queue", 400},
		{"POST", "/delete_all_dead_jobs/extra", 404},
		{"GET", "/retry_dead_job/1/dead1", 405},
		{"POST", "/queues", 405},
		{"DELETE", "/dead_jobs", 405},
		{"GET", "/nothing/here", 404},
		{"GET", "/ui/action", 405},
		{"POST", "/ui/action", 403}, // no form token
	})
	// Pages answer bad parameters with a 4xx page.
	for _, tc := range []struct {
		target string
		status int
	}{{"/ui/dead?page=x", 400}, {"/ui/job", 400}, {"/ui/job?id=nope", 404}, {"/ui/nope", 404}} {
		if rec := f.get(tc.target); rec.Code != tc.status || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
			t.Errorf("GET %s: status %d %q, want %d html", tc.target, rec.Code, rec.Header().Get("Content-Type"), tc.status)
		}
	}
	// An unknown action, an action missing its fields.
	if rec := f.form(url.Values{"op": {"explode"}}, nil); rec.Code != 400 {
		t.Errorf("unknown action: %d", rec.Code)
	}
	rec := f.form(url.Values{"op": {"retry_dead"}, "back": {"dead"}}, nil)
	if rec.Code != 303 || rec.Header().Get("Location") != "dead?fail=bad" {
		t.Errorf("action without its fields: %d %q", rec.Code, rec.Header().Get("Location"))
	}
}

func TestAuthentication(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts Options
		ok   []func(*http.Request)
		bad  []func(*http.Request)
	}{
		{
			name: "basic",
			opts: Options{BasicAuthUser: "admin", BasicAuthPassword: "s3cret"},
			ok:   []func(*http.Request){func(r *http.Request) { r.SetBasicAuth("admin", "s3cret") }},
			bad: []func(*http.Request){
				func(r *http.Request) {},
				func(r *http.Request) { r.SetBasicAuth("admin", "wrong") },
				func(r *http.Request) { r.SetBasicAuth("other", "s3cret") },
				func(r *http.Request) { r.Header.Set("Authorization", "Bearer s3cret") },
			},
		},
		{
			name: "token",
			opts: Options{BearerToken: "tok-123"},
			ok: []func(*http.Request){
				func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-123") },
				func(r *http.Request) { r.Header.Set("Authorization", "bearer tok-123") },
				func(r *http.Request) { r.SetBasicAuth("anyone", "tok-123") },
			},
			bad: []func(*http.Request){
				func(r *http.Request) {},
				func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok-1234") },
				func(r *http.Request) { r.SetBasicAuth("tok-123", "") },
			},
		},
		{
			name: "both",
			opts: Options{BasicAuthUser: "admin", BasicAuthPassword: "pw", BearerToken: "tok"},
			ok: []func(*http.Request){
				func(r *http.Request) { r.SetBasicAuth("admin", "pw") },
				func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") },
			},
			bad: []func(*http.Request){func(r *http.Request) { r.SetBasicAuth("admin", "tok2") }},
		},
	} {
		tc := tc
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.opts)
			for _, target := range []string{"/queues", "/ui/", "/ui/static/app.js", "/"} {
				for i, set := range tc.ok {
					req := httptest.NewRequest("GET", target, nil)
					set(req)
					rec := httptest.NewRecorder()
					f.srv.Handler().ServeHTTP(rec, req)
					if rec.Code == 401 {
						t.Errorf("%s with good credentials %d: 401", target, i)
					}
				}
				for i, set := range tc.bad {
					req := httptest.NewRequest("GET", target, nil)
					set(req)
					rec := httptest.NewRecorder()
					f.srv.Handler().ServeHTTP(rec, req)
					if rec.Code != 401 {
						t.Errorf("%s with bad credentials %d: status %d, want 401", target, i, rec.Code)
						continue
					}
					wantError(t, rec, 401)
					if !strings.Contains(strings.Join(rec.Header().Values("WWW-Authenticate"), ","), "Basic") {
						t.Errorf("401 without a Basic challenge: %v", rec.Header())
					}
				}
			}
			// Actions need authentication too.
			req := httptest.NewRequest("POST", "/delete_all_dead_jobs", nil)
			rec := httptest.NewRecorder()
			f.srv.Handler().ServeHTTP(rec, req)
			if rec.Code != 401 {
				t.Errorf("unauthenticated action: %d", rec.Code)
			}
		})
	}
}

func TestCrossSiteRequestsAreRefused(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	host := "example.com" // httptest.NewRequest's Host
	refused := []map[string]string{
		{"Origin": "https://evil.example"},
		{"Origin": "null"},
		{"Sec-Fetch-Site": "cross-site"},
		{"Sec-Fetch-Site": "same-site"},
		{"Sec-Fetch-Site": "cross-site", "Origin": "http://" + host},
		{"Origin": "http://" + host + ".evil.example"},
	}
	for _, hdr := range refused {
		rec := f.do("POST", "/delete_all_dead_jobs", nil, hdr)
		if rec.Code != 403 {
			t.Errorf("POST with %v: status %d, want 403", hdr, rec.Code)
		} else {
			wantError(t, rec, 403)
		}
		rec = f.form(url.Values{"op": {"delete_all_dead"}}, hdr)
		if rec.Code != 403 {
			t.Errorf("form with %v: status %d, want 403", hdr, rec.Code)
		}
	}
	if n := rInt(t, f.pool, "ZCARD", f.key("dead")); n != 2 {
		t.Fatalf("a refused request deleted dead jobs: %d left", n)
	}
	// The form token is needed on top of the origin, and must be the server's.
	for _, tok := range []string{"", "0123", strings.Repeat("a", 64)} {
		rec := f.form(url.Values{"op": {"delete_all_dead"}, "csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
		if rec.Code != 403 {
			t.Errorf("form with token %q: status %d, want 403", tok, rec.Code)
		}
	}
	if n := rInt(t, f.pool, "ZCARD", f.key("dead")); n != 2 {
		t.Fatalf("a form without the right token deleted dead jobs: %d left", n)
	}
	// Same-origin browser requests and non-browser clients pass.
	for _, hdr := range []map[string]string{
		{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host},
		{"Origin": "http://" + host},
		{"Sec-Fetch-Site": "same-origin"},
		nil,
	} {
		rec := f.do("POST", "/pause_queue/send_email", nil, hdr)
		if rec.Code != 200 {
			t.Errorf("POST with %v: status %d, want 200", hdr, rec.Code)
		}
	}
	rec := f.form(url.Values{"op": {"delete_all_dead"}, "back": {"dead"}}, map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://" + host})
	if rec.Code != 303 || rec.Header().Get("Location") != "dead?done=deleted_all" {
		t.Errorf("good form: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	// A trusted origin (a proxy in front) passes.
	f2 := newFixture(t, Options{TrustedOrigins: []string{"https://ops.example.org"}})
	if rec := f2.do("POST", "/retry_all_dead_jobs", nil, map[string]string{"Origin": "https://ops.example.org"}); rec.Code != 200 {
		t.Errorf("trusted origin: %d", rec.Code)
	}
}

func TestReadOnlyRefusesActionsAndHidesButtons(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true})
	f.seed()
	for _, target := range []string{"/delete_all_dead_jobs", "/retry_all_dead_jobs", fmt.Sprintf("/retry_dead_job/%d/dead1", f.now-50), "/pause_queue/send_email"} {
		wantError(t, f.post(target), 403)
	}
	if rec := f.form(url.Values{"op": {"delete_all_dead"}}, nil); rec.Code != 403 {
		t.Errorf("read-only form: %d", rec.Code)
	}
	if n := rInt(t, f.pool, "ZCARD", f.key("dead")); n != 2 {
		t.Fatalf("read-only server changed the dead set: %d", n)
	}
	for _, page := range []string{"/ui/", "/ui/queues", "/ui/dead", "/ui/retry", "/ui/scheduled", "/ui/job?id=dead1"} {
		body := f.get(page).Body.String()
		if strings.Contains(body, `name="op"`) || !strings.Contains(body, "read-only") {
			t.Errorf("%s: read-only page shows actions or no read-only badge", page)
		}
	}
	// Reading still works.
	var sum work.Summary
	decode(t, f.get("/summary"), 200, &sum)
}

func TestJobDataIsEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	evil := `<script>alert("x")</script>`
	job := &work.Job{Name: `<b>name</b>`, ID: `id"><img src=x onerror=alert(1)>`, EnqueuedAt: 1,
		Args: work.Q{"html": evil}, Fails: 1, LastErr: `<iframe src="javascript:alert(1)">`, FailedAt: 2}
	rdo(t, f.pool, "ZADD", f.key("dead"), 5, jobJSON(t, job))
	rdo(t, f.pool, "ZADD", f.key("retry"), 5, jobJSON(t, job))
	rdo(t, f.pool, "SADD", f.key("known_jobs"), `<b>name</b>`)
	rdo(t, f.pool, "LPUSH", f.key("jobs:<b>name</b>"), jobJSON(t, job))
	rdo(t, f.pool, "SADD", f.key("worker_pools"), `<pool>`)
	rdo(t, f.pool, "HSET", f.key("worker_pools:<pool>"), "heartbeat_at", 1, "worker_ids", "<w>", "host", "<h>", "job_names", "<b>name</b>")
	rdo(t, f.pool, "HSET", f.key("worker:<w>"), "job_name", "<b>name</b>", "job_id", "<id>", "started_at", 1, "args", evil, "checkin", evil, "checkin_at", 1)
	bad := regexp.MustCompile(`<script>alert|<img src=x|<iframe|<b>name|<pool>|<w>|<h>|<id>`)
	for _, page := range []string{"/ui/", "/ui/queues", "/ui/workers", "/ui/dead", "/ui/retry", "/ui/dead?q=name",
		"/ui/job?id=" + url.QueryEscape(job.ID), "/ui/job?id=" + url.QueryEscape(evil)} {
		rec := f.get(page)
		body := rec.Body.String()
		if m := bad.FindString(body); m != "" {
			t.Errorf("%s holds unescaped job data %q", page, m)
		}
		if rec.Code == 200 && page != "/ui/" && page != "/ui/queues" && !strings.Contains(body, "&lt;") {
			t.Errorf("%s shows no escaped data", page)
		}
	}
	body := f.get("/ui/dead").Body.String()
	if !strings.Contains(body, `&lt;script&gt;alert(\&#34;x\&#34;)&lt;/script&gt;`) {
		t.Errorf("the script arg is not shown as text: %s", body)
	}
	// JSON answers are JSON-escaped.
	if b := f.get("/dead_jobs").Body.String(); strings.Contains(b, "<script>") {
		t.Errorf("JSON holds raw HTML: %s", b)
	}
}

func TestSecurityHeadersOnEveryAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{BasicAuthUser: "u", BasicAuthPassword: "p"})
	for _, tc := range []struct {
		target string
		auth   bool
	}{{"/ui/", true}, {"/queues", true}, {"/ui/static/style.css", true}, {"/nope", true}, {"/queues", false}} {
		req := httptest.NewRequest("GET", tc.target, nil)
		if tc.auth {
			req.SetBasicAuth("u", "p")
		}
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		h := rec.Header()
		csp := h.Get("Content-Security-Policy")
		if !strings.Contains(csp, "frame-ancestors 'none'") || !strings.Contains(csp, "script-src 'self'") || strings.Contains(csp, "unsafe-inline") {
			t.Errorf("%s: CSP %q", tc.target, csp)
		}
		if h.Get("X-Content-Type-Options") != "nosniff" || h.Get("X-Frame-Options") != "DENY" || h.Get("Referrer-Policy") != "no-referrer" {
			t.Errorf("%s: headers %v", tc.target, h)
		}
	}
	// No inline script or style in the pages, which the CSP would block.
	f2 := newFixture(t, Options{})
	f2.seed()
	for _, page := range []string{"/ui/", "/ui/queues", "/ui/workers", "/ui/dead", "/ui/job?id=dead1"} {
		body := f2.get(page).Body.String()
		if regexp.MustCompile(`<script>|<script [^>]*>[^<]|style=|<style|onclick=|onsubmit=`).MatchString(body) {
			t.Errorf("%s holds inline script or style", page)
		}
	}
	if ct := f2.get("/ui/static/app.js").Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("app.js content type %q", ct)
	}
}

func TestAllowedHosts(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{AllowedHosts: []string{"localhost", "127.0.0.1", "::1"}})
	for host, want := range map[string]int{"localhost:5040": 200, "127.0.0.1:5040": 200, "[::1]:5040": 200, "LOCALHOST": 200,
		"evil.example:5040": 403, "127.0.0.1.nip.io": 403} {
		req := httptest.NewRequest("GET", "/queues", nil)
		req.Host = host
		rec := httptest.NewRecorder()
		f.srv.Handler().ServeHTTP(rec, req)
		if rec.Code != want {
			t.Errorf("Host %s: status %d, want %d", host, rec.Code, want)
		}
	}
}

// links lists the href, src and action attributes of a page.
var linkRE = regexp.MustCompile(`(?:href|src|action)="([^"]*)"`)

func TestMountedUnderAPathPrefix(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	b, _, err := work.NewEnqueuer(f.ns, f.pool).EnqueueInBatch(work.BatchOptions{}, []work.BatchJob{{Name: "send_email"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := work.NewEnqueuer(f.ns, f.pool).EnqueueWith("report", nil, work.EnqueueOptions{Key: "acme/eu west"}); err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("/admin/jobs/", http.StripPrefix("/admin/jobs", f.srv.Handler()))
	mux.Handle("/admin/jobs", http.StripPrefix("/admin/jobs", f.srv.Handler()))
	ts := httptest.NewServer(mux)
	defer ts.Close()
	client := ts.Client()

	// Both entry points land on the overview under the prefix.
	for _, entry := range []string{"/admin/jobs", "/admin/jobs/", "/admin/jobs/ui"} {
		resp, err := client.Get(ts.URL + entry)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != 200 || resp.Request.URL.Path != "/admin/jobs/ui/" {
			t.Errorf("GET %s ended at %s (%d), want /admin/jobs/ui/", entry, resp.Request.URL.Path, resp.StatusCode)
		}
	}
	// Every link of every page is relative and leads somewhere under the prefix that answers.
	seen := map[string]bool{}
	queue := []string{ts.URL + "/admin/jobs/ui/"}
	for len(queue) > 0 && len(seen) < 60 {
		page := queue[0]
		queue = queue[1:]
		if seen[page] {
			continue
		}
		seen[page] = true
		resp, err := client.Get(page)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("GET %s: %d", page, resp.StatusCode)
			continue
		}
		if !strings.Contains(resp.Header.Get("Content-Type"), "text/html") {
			continue
		}
		base, _ := url.Parse(page)
		for _, m := range linkRE.FindAllStringSubmatch(string(body), -1) {
			link := html.UnescapeString(m[1])
			if strings.HasPrefix(link, "data:") {
				continue
			}
			if strings.HasPrefix(link, "/") || strings.Contains(link, "://") {
				t.Errorf("%s links to %q: not relative", page, link)
				continue
			}
			u := base.ResolveReference(&url.URL{Path: strings.SplitN(link, "?", 2)[0], RawQuery: func() string {
				if _, q, ok := strings.Cut(link, "?"); ok {
					return q
				}
				return ""
			}()})
			if !strings.HasPrefix(u.Path, "/admin/jobs/ui/") {
				t.Errorf("%s links to %q, outside the prefix", page, u.Path)
			}
			if u.Path != "/admin/jobs/ui/action" {
				queue = append(queue, u.String())
			}
		}
	}
	if !seen[ts.URL+"/admin/jobs/ui/dead"] || !seen[ts.URL+"/admin/jobs/ui/job?id=dead1"] || !seen[ts.URL+"/admin/jobs/ui/static/app.js"] ||
		!seen[ts.URL+"/admin/jobs/ui/batches/"+b.ID] || !seen[ts.URL+"/admin/jobs/ui/batches"] ||
		!seen[ts.URL+"/admin/jobs/ui/keys?name=report"] || !seen[ts.URL+"/admin/jobs/ui/keys?name=report&q=acme%2Feu+west"] {
		t.Errorf("the crawl missed pages: %v", seen)
	}
	// An action through the prefix returns to the page under the prefix.
	vals := url.Values{"csrf": {f.srv.csrf}, "op": {"retry_dead"}, "score": {fmt.Sprint(f.now - 50)}, "id": {"dead1"}, "back": {"dead?page=1"}}
	resp, err := client.PostForm(ts.URL+"/admin/jobs/ui/action", vals)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.Request.URL.Path != "/admin/jobs/ui/dead" || resp.Request.URL.Query().Get("done") != "retried" {
		t.Errorf("after the action: %s", resp.Request.URL)
	}
	if !strings.Contains(string(body), "The job is back in its queue.") {
		t.Error("no flash message after the action")
	}
	// The JSON API works under the prefix too.
	resp, err = client.Get(ts.URL + "/admin/jobs/dead_jobs")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Errorf("JSON under the prefix: %d", resp.StatusCode)
	}
}

func TestPagesShowTheNamespace(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	rdo(t, f.pool, "SET", f.key("jobs:charge_card:paused"), "1")
	rdo(t, f.pool, "SET", f.key("jobs:send_email:lock"), "1")
	rdo(t, f.pool, "SET", f.key("jobs:send_email:max_concurrency"), "3")
	m := time.Now().Unix() / 60
	rdo(t, f.pool, "HSET", fmt.Sprintf("%s:stats:send_email:%d", f.ns, m/1440), fmt.Sprintf("p:%d", m), 12, fmt.Sprintf("f:%d", m), 3)

	check := func(page string, want ...string) {
		t.Helper()
		rec := f.get(page)
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", page, rec.Code, rec.Body)
		}
		body := rec.Body.String()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", page, w)
			}
		}
	}
	check("/ui/", `id="stat-queued">2<`, `id="stat-dead">2<`, `id="stat-retry">1<`, `id="stat-scheduled">1<`,
		`id="stat-processed">12<`, `id="stat-failed">3<`, `id="stat-busy">1/2<`, `class="bar-p"`, `class="bar-f"`,
		`data-queue="send_email"`, `data-refresh="5"`)
	check("/ui/queues", `data-queue="charge_card" class="paused"`, `1 / 3`, `<meter`, `value="resume"`, `value="pause"`)
	check("/ui/workers", `pool1`, `web-1`, `4242`, `halfway`, `job?id=busy1`, `1 idle`)
	check("/ui/dead", `data-id="dead1"`, `gateway down`, `value="retry_dead"`, `value="retry_all_dead"`, `Page 1 of 1`)
	check("/ui/dead?q=charge_card", `data-id="dead1"`, `Retry all charge_card`)
	check("/ui/dead?q=DEAD2", `data-id="dead2"`, `matching`)
	check("/ui/retry", `data-id="retry1"`, `card declined`, `value="run_retry"`)
	check("/ui/scheduled", `data-id="sched1"`, `value="run_scheduled"`, `monday`)
	check("/ui/job?id=busy1", `id="job-state">in_progress<`, `pool1`, `x@example.com`)
	check("/ui/job?id=sched1", `id="job-state">scheduled<`, `Runs at`, `value="run_scheduled"`)
	check("/ui/job?id=dead1", `id="job-state">dead<`, `gateway down`, `&#34;amount&#34;: 7`, `value="retry_dead"`)
	if rec := f.get("/ui/job?id=busy1x"); rec.Code != 404 {
		t.Errorf("unknown job: %d", rec.Code)
	}

	// A dead-lettered payload that could not be decoded shows its bytes.
	rec := fmt.Sprintf(`{"name":"report","id":"raw1","t":3,"args":null,"err":"malformed job payload: no name","failed_at":9,"raw_payload":%q}`,
		"eyJicm9rZW4iOnRydWV9") // {"broken":true}
	rdo(t, f.pool, "ZADD", f.key("dead"), 9, rec)
	check("/ui/job?id=raw1", `id="job-raw">{&#34;broken&#34;:true}<`, "malformed job payload")
	check("/ui/dead", "undecodable")

	// Paging: 45 dead jobs make 3 pages.
	for i := 0; i < 42; i++ {
		rdo(t, f.pool, "ZADD", f.key("dead"), 1000+i, jobJSON(t, &work.Job{Name: "bulk", ID: fmt.Sprintf("b%02d", i), EnqueuedAt: 1}))
	}
	check("/ui/dead?page=2", `Page 2 of 3`, `href="dead?page=1"`, `href="dead?page=3"`)
	check("/ui/dead?page=9", `No jobs on this page`)
	check("/ui/dead?q=bulk&page=2", `Page 2 of 3`, `href="dead?page=3&amp;q=bulk"`)
}

func TestFormActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	act := func(vals url.Values, wantLocation string) {
		t.Helper()
		rec := f.form(vals, nil)
		if rec.Code != 303 || rec.Header().Get("Location") != wantLocation {
			t.Fatalf("%v: %d %q, want 303 to %q", vals, rec.Code, rec.Header().Get("Location"), wantLocation)
		}
	}
	act(url.Values{"op": {"pause"}, "name": {"send_email"}, "back": {"queues"}}, "queues?done=paused")
	if rInt(t, f.pool, "EXISTS", f.key("jobs:send_email:paused")) != 1 {
		t.Error("not paused")
	}
	act(url.Values{"op": {"resume"}, "name": {"send_email"}, "back": {"queues"}}, "queues?done=resumed")
	act(url.Values{"op": {"run_scheduled"}, "id": {"sched1"}, "score": {fmt.Sprint(f.now + 3600)}, "back": {"scheduled"}}, "scheduled?done=run")
	act(url.Values{"op": {"run_retry"}, "id": {"retry1"}, "score": {fmt.Sprint(f.now + 60)}, "back": {"retry"}}, "retry?done=run")
	if rInt(t, f.pool, "LLEN", f.key("jobs:report")) != 1 || rInt(t, f.pool, "LLEN", f.key("jobs:charge_card")) != 1 {
		t.Error("run now did not queue the jobs")
	}
	act(url.Values{"op": {"run_retry"}, "id": {"retry1"}, "score": {fmt.Sprint(f.now + 60)}, "back": {"retry"}}, "retry?fail=gone")
	act(url.Values{"op": {"retry_dead"}, "id": {"dead1"}, "score": {fmt.Sprint(f.now - 50)}, "back": {"dead?page=1&q=x"}}, "dead?page=1&q=x&done=retried")
	act(url.Values{"op": {"delete_dead"}, "id": {"dead2"}, "score": {fmt.Sprint(f.now - 40)}, "back": {"job?id=dead2"}}, "job?id=dead2&done=deleted")
	if rInt(t, f.pool, "ZCARD", f.key("dead")) != 0 || rInt(t, f.pool, "LLEN", f.key("jobs:charge_card")) != 2 {
		t.Error("retry/delete dead did not act")
	}
	// Deleting a queued job, from its job page.
	ids := rStrings(t, f.pool, "LRANGE", f.key("jobs:send_email"), 0, -1)
	var j work.Job
	json.Unmarshal([]byte(ids[0]), &j)
	act(url.Values{"op": {"delete_queued"}, "name": {"send_email"}, "id": {j.ID}, "back": {"queues"}}, "queues?done=deleted")
	if rInt(t, f.pool, "LLEN", f.key("jobs:send_email")) != 1 {
		t.Error("delete_queued did not delete")
	}
	for i := 0; i < 3; i++ {
		rdo(t, f.pool, "ZADD", f.key("dead"), i, jobJSON(t, &work.Job{Name: []string{"a", "b", "a"}[i], ID: fmt.Sprint("x", i), EnqueuedAt: 1}))
	}
	act(url.Values{"op": {"delete_dead_name"}, "name": {"a"}, "back": {"dead?q=a"}}, "dead?q=a&done=deleted_name&n=2")
	act(url.Values{"op": {"retry_dead_name"}, "name": {"b"}, "back": {"dead"}}, "dead?done=retried_name&n=1")
	rdo(t, f.pool, "ZADD", f.key("dead"), 1, jobJSON(t, &work.Job{Name: "c", ID: "c1", EnqueuedAt: 1}))
	act(url.Values{"op": {"retry_all_dead"}, "back": {"dead"}}, "dead?done=retried_all")
	rdo(t, f.pool, "ZADD", f.key("dead"), 1, "junk")
	act(url.Values{"op": {"delete_all_dead"}}, "./?done=deleted_all")
	act(url.Values{"op": {"delete_retry"}, "id": {"nope"}, "score": {"5"}, "back": {"retry"}}, "retry?fail=gone")
	act(url.Values{"op": {"delete_scheduled"}, "id": {"nope"}, "score": {"5"}, "back": {"scheduled"}}, "scheduled?fail=gone")
	// The return address stays inside the UI.
	for _, back := range []string{"https://evil.example/", "//evil.example", "/etc/passwd", "../queues", "javascript:alert(1)"} {
		act(url.Values{"op": {"pause"}, "name": {"x"}, "back": {back}}, "./?done=paused")
	}
	// The flash shows once the browser follows the redirect.
	body := f.get("/ui/dead?done=retried_name&n=3").Body.String()
	if !strings.Contains(body, "Retried 3 dead jobs.") {
		t.Error("no flash message")
	}
	if body := f.get("/ui/dead?done=<script>&fail=<b>").Body.String(); strings.Contains(body, `class="flash`) {
		t.Error("unknown flash codes must show nothing")
	}
}

func TestRootRedirectsToTheUI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for target, loc := range map[string]string{"/": "ui/", "/ui": "ui/"} {
		rec := f.get(target)
		if rec.Code != 302 || rec.Header().Get("Location") != loc {
			t.Errorf("GET %s: %d %q", target, rec.Code, rec.Header().Get("Location"))
		}
	}
}

func TestStartServesAndStopStops(t *testing.T) {
	t.Parallel()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	s := NewServer(ns, pool, addr)
	s.Stop() // before Start: nothing
	s.Start()
	s.Start() // twice: nothing
	var resp *http.Response
	for i := 0; i < 100; i++ {
		if resp, err = http.Get("http://" + addr + "/queues"); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || strings.TrimSpace(string(body)) != "[]" {
		t.Errorf("GET /queues: %d %q", resp.StatusCode, body)
	}
	s.Stop()
	s.Stop()
	if _, err := http.Get("http://" + addr + "/queues"); err == nil {
		t.Error("still serving after Stop")
	}
}

// gocraft/work answers /busy_workers with null when no worker is busy.
func TestBusyWorkersOfIdlePoolsIsNull(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	if rec := f.get("/busy_workers"); rec.Code != 200 || strings.TrimSpace(rec.Body.String()) != "null" {
		t.Errorf("/busy_workers: %d %q", rec.Code, rec.Body.String())
	}
}

// gocraft/work's NewServer takes a nil pool; its requests then fail. Here they get a 500 and the
// error.
func TestNewServerOfNilPoolAnswersErrors(t *testing.T) {
	h := NewServer("ns", nil, ":0").Handler()
	for _, p := range []string{"/queues", "/worker_pools", "/busy_workers", "/dead_jobs?page=1"} {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, p, nil))
		if rec.Code != http.StatusInternalServerError || !strings.Contains(rec.Body.String(), `"error"`) {
			t.Errorf("GET %s: %d %q", p, rec.Code, rec.Body.String())
		}
	}
}

func TestDeadRecordsOfUndecodablePayloadsShowTheirBytes(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	// As workers write them now (text, and base64 for bytes that are not UTF-8), and as earlier
	// versions did (base64 in raw_payload).
	rdo(t, f.pool, "ZADD", f.key("dead"),
		10, `{"name":"report","id":"txt","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_text":"{\"to\":\"<é>\", broken"}`,
		11, `{"name":"report","id":"bin","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_base64":"/34="}`,
		12, `{"name":"report","id":"old","t":3,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":"e2Jyb2tlbg=="}`)
	page := func(target string, want ...string) string {
		t.Helper()
		rec := f.get(target)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Fatalf("%s: %d %s", target, rec.Code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q:\n%s", target, w, body)
			}
		}
		return body
	}

	// Pages: text as text, base64 labelled so.
	body := page("/ui/job?id=txt", `<pre id="job-raw">{&#34;to&#34;:&#34;&lt;é&gt;&#34;, broken</pre>`, "this is its text")
	if strings.Contains(body, "base64") {
		t.Errorf("the text is labelled base64:\n%s", body)
	}
	page("/ui/job?id=bin", `<pre id="job-raw">/34=</pre>`, "here they are in base64")
	page("/ui/job?id=old", `<pre id="job-raw">{broken</pre>`, "this is its text")
	body = page("/ui/dead", `undecodable</span> {&#34;to&#34;:&#34;&lt;é&gt;&#34;, broken`, `base64</span> /34=`, `undecodable</span> {broken`)
	if n := strings.Count(body, `>base64</span>`); n != 1 {
		t.Errorf("/ui/dead labels %d rows base64, want 1", n)
	}

	// JSON: as the records keep them now, and each reads back to the same bytes.
	raw := map[string]string{"txt": `{"to":"<é>", broken`, "bin": "\xff~", "old": "{broken"}
	field := map[string]string{
		"txt": `"raw_text": "{\"to\":\"\u003cé\u003e\", broken"`, // JSON answers escape < and >
		"bin": `"raw_base64": "/34="`,
		"old": `"raw_text": "{broken"`,
	}
	for id, want := range raw {
		rec := f.get("/job?id=" + id)
		var loc work.JobLocation
		decode(t, rec, 200, &loc)
		if string(loc.Job.Raw) != want || !strings.Contains(rec.Body.String(), field[id]) || strings.Contains(rec.Body.String(), `"raw_payload"`) {
			t.Errorf("/job?id=%s: Raw %q, want %q; answer %s", id, loc.Job.Raw, want, rec.Body)
		}
	}
	rec := f.get("/dead_jobs")
	var dead struct {
		Jobs []*work.DeadJob `json:"jobs"`
	}
	decode(t, rec, 200, &dead)
	if len(dead.Jobs) != 3 {
		t.Fatalf("/dead_jobs: %s", rec.Body)
	}
	for _, j := range dead.Jobs {
		if string(j.Raw) != raw[j.ID] || !strings.Contains(rec.Body.String(), field[j.ID]) {
			t.Errorf("/dead_jobs: %s reads back Raw %q, want %q; answer %s", j.ID, j.Raw, raw[j.ID], rec.Body)
		}
	}
	if strings.Contains(rec.Body.String(), `"raw_payload"`) {
		t.Errorf("/dead_jobs answers in the form of earlier versions: %s", rec.Body)
	}
}

// The workers page calls a pool stale once its heartbeat is older than the limit the pool declared
// (dead_after), or than the legacy 10 s for a pool that declares none: what its peers go by.
func TestWorkersPageStaleByTheDeclaredLimit(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	rdo(t, f.pool, "SADD", f.key("worker_pools"), "quick", "legacy", "slow")
	rdo(t, f.pool, "HSET", f.key("worker_pools:quick"), "heartbeat_at", f.now-8, "dead_after", 6, "host", "quick-host")
	rdo(t, f.pool, "HSET", f.key("worker_pools:legacy"), "heartbeat_at", f.now-8, "host", "legacy-host")
	rdo(t, f.pool, "HSET", f.key("worker_pools:slow"), "heartbeat_at", f.now-30, "dead_after", 60, "host", "slow-host")
	body := f.get("/ui/workers").Body.String()
	for host, stale := range map[string]bool{"quick-host": true, "legacy-host": false, "slow-host": false} {
		i := strings.Index(body, host)
		if i < 0 {
			t.Fatalf("no row of %s:\n%s", host, body)
		}
		row := body[strings.LastIndex(body[:i], "<tr"):]
		row = row[:strings.Index(row, "</tr>")]
		if got := strings.Contains(row, `class="stale"`); got != stale {
			t.Errorf("pool on %s: stale %v, want %v: %s", host, got, stale, row)
		}
	}
}
