package webui

import (
	"bytes"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"path"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// The fuzz targets below run as ordinary tests on their seeds (f.Add and testdata/fuzz/<Name>/), and
// explore further with go test -fuzz.

// fuzzGetPaths are the GET endpoints FuzzWebUIParams chooses from, by the index it is given.
var fuzzGetPaths = []string{
	"/queues", "/worker_pools", "/busy_workers", "/retry_jobs", "/scheduled_jobs", "/dead_jobs",
	"/queue_stats", "/summary", "/stats", "/job",
	"/ui/", "/ui/queues", "/ui/workers", "/ui/scheduled", "/ui/retry", "/ui/dead", "/ui/job", "/ui",
	"/periodic_jobs", "/ui/periodic",
	"/batches", "/batch/", "/ui/batches", "/ui/batches/",
	"/key_stats", "/keys/", "/key/", "/ui/keys",
	"/schedules", "/schedule", "/ui/schedules",
	"/backlogs",
	"/groups", "/ui/groups",
}

// layoutScript is the one script element of every page: the UI's own, loaded from a file, relative
// to the page at target (one "../" per directory below ui/).
func layoutScript(target string) string {
	rest, _ := strings.CutPrefix(target, "/ui/")
	return `<script src="` + strings.Repeat("../", strings.Count(rest, "/")) + `static/app.js" defer></script>`
}

// FuzzWebUIParams serves GET requests with arbitrary query strings (page, q, id, minutes, name, done,
// n, fail, ...) and path suffixes on every endpoint, against a namespace holding jobs whose names,
// IDs and arguments are HTML: never a 5xx; a JSON answer is valid JSON; a page holds no script
// element but the UI's own, and no javascript: link; a redirect stays on the UI.
func FuzzWebUIParams(f *testing.F) {
	for i := range fuzzGetPaths {
		f.Add(uint8(i), "", "")
		f.Add(uint8(i), "", "page=2&q=send&id=dead1&minutes=5&name=report")
	}
	for _, q := range []string{
		"page=0", "page=-1", "page=1073741824", "page=1073741825", "page=18446744073709551616", "page=%zz",
		"page=1&page=x", "q=%3Cscript%3Ealert(1)%3C%2Fscript%3E", "q=<script>", "q=charge_card", "q=+",
		"id=%00", "id=periodic:tick:*+*+*+*+*+*:1", "minutes=0", "minutes=11520", "minutes=11521",
		"minutes=-1", "minutes=1&name=%3Cscript%3E", "done=retried_name&n=-9223372036854775808",
		"done=<script>&fail=<script>", "q=%FF%FE", "id=\x00", ";;&&==",
	} {
		f.Add(uint8(5), "", q)  // /dead_jobs
		f.Add(uint8(15), "", q) // /ui/dead
		f.Add(uint8(16), "", q) // /ui/job
	}
	f.Add(uint8(8), "", "minutes=60&name=charge_card")
	f.Add(uint8(9), "", "id=retry1")
	f.Add(uint8(16), "", "id="+url.QueryEscape(fuzzEvil))
	f.Add(uint8(10), "static/style.css", "")
	f.Add(uint8(10), "action", "")
	f.Add(uint8(10), "<script>", "")
	f.Add(uint8(0), "/x", "")
	for _, id := range []string{fuzzBatchID, fuzzGarbledBatchID, fuzzWrongTypeBatchID, "nope", "a/b", "..", "%3Cscript%3E", "<script>", "\x00"} {
		f.Add(uint8(21), id, "") // /batch/
		f.Add(uint8(23), id, "") // /ui/batches/
	}
	f.Add(uint8(20), "", "page=2")
	f.Add(uint8(22), "", "page=0")
	f.Add(uint8(9), "", "id="+fuzzTrackedID)
	f.Add(uint8(16), "", "id="+fuzzTrackedID)
	for _, name := range []string{"", "sync", `<b>name</b>`, fuzzBrokenKeyedName, "sync:lock", "a/b"} {
		f.Add(uint8(25), name, "page=2") // /keys/
		f.Add(uint8(26), name, "key="+url.QueryEscape(fuzzEvil))
		f.Add(uint8(27), "", "name="+url.QueryEscape(name)+"&q=acme") // /ui/keys
		f.Add(uint8(27), "", "name="+url.QueryEscape(name)+"&page=0")
	}
	for _, q := range []string{"key=acme", "key=%7B", "key=" + strings.Repeat("k", 201), "key=%00", "key=%FF", ""} {
		f.Add(uint8(26), "sync", q)
		f.Add(uint8(27), "", "name=sync&"+strings.Replace(q, "key=", "q=", 1))
	}
	f.Add(uint8(24), "", "")
	f.Add(uint8(24), "x", "")
	for _, q := range []string{
		"", "id=report%3Aacme", "id=" + url.QueryEscape(fuzzEvil), "id=" + fuzzDamagedSchedule, "id=" + url.QueryEscape(fuzzPeriodicID),
		"id=", "id=%00", "id=nope", "q=report", "q=" + url.QueryEscape(fuzzEvil), "q=%01", "q=report&cursor=5", "cursor=x",
		"cursor=18446744073709551616", "cursor=0", "count=0", "count=10000", "prefix=%3Cb%3E", "prefix=%00", "stored_only=x",
		"stored_only=1&count=1", "done=schedule_run&fail=key_full",
	} {
		f.Add(uint8(28), "", strings.Replace(q, "q=", "prefix=", 1)) // /schedules
		f.Add(uint8(29), "", q)                                      // /schedule
		f.Add(uint8(30), "", q)                                      // /ui/schedules
	}
	f.Add(uint8(29), "/x", "id=report%3Aacme")

	srv := newFuzzServer(f)
	h := srv.Handler()
	f.Fuzz(func(t *testing.T, which uint8, suffix, rawQuery string) {
		if len(suffix)+len(rawQuery) > 4096 {
			t.Skip("longer than a URL a browser sends")
		}
		p := fuzzGetPaths[int(which)%len(fuzzGetPaths)] + suffix
		req := httptest.NewRequest("GET", "/", nil)
		// Set the URL directly: any bytes reach the handler, as a lenient proxy could pass them.
		req.URL = &url.URL{Path: p, RawQuery: rawQuery}
		req.RequestURI = req.URL.RequestURI()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		checkFuzzAnswer(t, p, rawQuery, rec)
	})
}

// fuzzEvil is job data that breaks a page that does not escape it.
const fuzzEvil = `<script>alert("x")</script>`

// The batches of the fuzz server: one sound, one whose hash holds values no writer of the library
// wrote, one whose key holds a string; and a job with a record.
const (
	fuzzBatchID          = "batch-1"
	fuzzGarbledBatchID   = "batch-garbled"
	fuzzWrongTypeBatchID = "batch-string"
	fuzzTrackedID        = "tracked-1"
	fuzzBrokenKeyedName  = "broken"
	fuzzDamagedSchedule  = "damaged"
	fuzzPeriodicID       = "periodic:report:0 0 * * * *"
)

// newFuzzServer serves a namespace with a job in every state, worker data, and HTML in names, IDs,
// arguments and errors.
func newFuzzServer(tb testing.TB) *Server {
	tb.Helper()
	pool := newTestPool(tb)
	ns := newTestNamespace(tb, pool)
	key := func(k string) string { return ns + ":" + k }
	now := time.Now().Unix()
	evilJob := &work.Job{Name: `<b>name</b>`, ID: `id"><img src=x onerror=alert(1)>` + fuzzEvil, EnqueuedAt: now,
		Args: work.Q{"html": fuzzEvil}, Fails: 1, LastErr: `<iframe src="javascript:alert(1)">`, FailedAt: now}
	rdo(tb, pool, "SADD", key("known_jobs"), "charge_card", "report", evilJob.Name)
	rdo(tb, pool, "LPUSH", key("jobs:"+evilJob.Name), jobJSON(tb, evilJob))
	rdo(tb, pool, "LPUSH", key("jobs:report"), "not a job")
	rdo(tb, pool, "ZADD", key("scheduled"), now+3600, jobJSON(tb, &work.Job{Name: "report", ID: "periodic:report:0 * * * * *:1", EnqueuedAt: now}))
	rdo(tb, pool, "ZADD", key("retry"), now+60, jobJSON(tb, &work.Job{Name: "charge_card", ID: "retry1", EnqueuedAt: now, Args: work.Q{"amount": 5}, Fails: 1, LastErr: "declined"}))
	rdo(tb, pool, "ZADD", key("retry"), now+61, jobJSON(tb, evilJob))
	rdo(tb, pool, "ZADD", key("dead"), now-50, jobJSON(tb, &work.Job{Name: "charge_card", ID: "dead1", EnqueuedAt: now, Fails: 4, LastErr: "down"}))
	rdo(tb, pool, "ZADD", key("dead"), now-40, jobJSON(tb, evilJob))
	rdo(tb, pool, "ZADD", key("dead"), now-30, "\xff not JSON <script>")
	rdo(tb, pool, "SADD", key("worker_pools"), "<pool>")
	rdo(tb, pool, "HSET", key("worker_pools:<pool>"), "heartbeat_at", now, "started_at", now-300, "job_names", evilJob.Name,
		"concurrency", 1, "worker_ids", "<w>", "host", "<h>", "pid", 1)
	rdo(tb, pool, "HSET", key("worker:<w>"), "job_name", evilJob.Name, "job_id", "<id>", "started_at", now-3, "args", fuzzEvil,
		"checkin", fuzzEvil, "checkin_at", now)
	rdo(tb, pool, "HSET", key("batch:"+fuzzBatchID), "state", "closed", "description", fuzzEvil, "total", 3, "c", 1+(1<<26),
		"failed", 2, "created_at", now, "on_complete_name", evilJob.Name, "on_success_name", "<ok>")
	rdo(tb, pool, "HSET", key("batch:"+fuzzGarbledBatchID), "state", fuzzEvil, "total", "x", "c", "-1", "description", "<b>")
	rdo(tb, pool, "ZADD", key("batches"), now, fuzzBatchID, now-1, fuzzGarbledBatchID)
	rdo(tb, pool, "SET", key("batch:"+fuzzWrongTypeBatchID), fuzzEvil) // not in the index: the list stays readable
	rdo(tb, pool, "HSET", key("job:"+fuzzTrackedID), "name", evilJob.Name, "state", "done", "attempts", 1, "err", fuzzEvil,
		"result", fuzzEvil, "batch", `"><img src=x>`, "pool", "<pool>")
	// Keyed jobs of the evil name, one with an evil key, and a name whose keyed state another program
	// overwrote.
	e := work.NewEnqueuer(ns, pool)
	for _, k := range []string{fuzzEvil, "acme", "acme"} {
		if _, err := e.EnqueueWith(evilJob.Name, nil, work.EnqueueOptions{Key: k}); err != nil {
			tb.Fatal(err)
		}
		if _, err := e.EnqueueWith("sync", nil, work.EnqueueOptions{Key: k}); err != nil {
			tb.Fatal(err)
		}
	}
	// Backlogs: a source named with HTML, and a report another program wrote.
	if err := e.ReportBacklog(fuzzEvil, 3, time.Now().Add(-time.Hour)); err != nil {
		tb.Fatal(err)
	}
	rdo(tb, pool, "HSET", key("backlogs"), "<junk>", fuzzEvil)
	// A group whose job name and key are HTML.
	if _, err := e.EnqueueWith(evilJob.Name, work.Q{"html": fuzzEvil}, work.EnqueueOptions{Group: fuzzEvil}); err != nil {
		tb.Fatal(err)
	}
	rdo(tb, pool, "SADD", key("known_jobs"), fuzzBrokenKeyedName)
	rdo(tb, pool, "HSET", key("keyed:"+fuzzBrokenKeyedName+":meta"), "waiting", 1)
	rdo(tb, pool, "SET", key("keyed:"+fuzzBrokenKeyedName+":waiting"), fuzzEvil)
	// Schedules: one keyed with HTML in its args, one whose ID, job name and key are HTML, a record
	// another program wrote, and periodic jobs declared in code, one with HTML for a spec.
	err := work.NewClient(ns, pool).SetSchedules([]work.Schedule{
		{ID: "report:acme", Spec: "0 0 9 * * MON", Location: "Europe/Berlin", JobName: "report", Key: "acme", Args: work.Q{"html": fuzzEvil}},
		{ID: fuzzEvil, Spec: "@daily", JobName: evilJob.Name, Key: fuzzEvil, Jitter: time.Minute},
	})
	if err != nil {
		tb.Fatal(err)
	}
	rdo(tb, pool, "HSET", key("schedules"), fuzzDamagedSchedule, fuzzEvil)
	rdo(tb, pool, "HSET", key("worker_pools:<pool>"), "periodic_jobs",
		`[{"job_name":"report","spec":"0 0 * * * *"},{"job_name":"<b>name</b>","spec":"<b>bad</b>"}]`)
	return NewServer(ns, pool, "")
}

// checkFuzzAnswer checks an answer to GET target?rawQuery.
func checkFuzzAnswer(t *testing.T, target, rawQuery string, rec *httptest.ResponseRecorder) {
	t.Helper()
	body := rec.Body.String()
	if rec.Code >= 500 {
		t.Fatalf("GET %q ? %q: %d %s", target, rawQuery, rec.Code, body)
	}
	if rec.Code >= 300 && rec.Code < 400 {
		loc := rec.Header().Get("Location")
		if u, err := url.Parse(loc); loc == "" || err != nil || u.Scheme != "" || u.Host != "" || strings.HasPrefix(loc, "/") {
			t.Fatalf("GET %q ? %q: redirect to %q, not a page of the UI", target, rawQuery, loc)
		}
		return
	}
	ct := rec.Header().Get("Content-Type")
	switch {
	case strings.HasPrefix(ct, "application/json"):
		if !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("GET %q ? %q: %d, invalid JSON %q", target, rawQuery, rec.Code, body)
		}
		// Clients may insert it in a page: encoding/json escapes "<", so no tag survives.
		if strings.Contains(body, "<") {
			t.Fatalf("GET %q ? %q: JSON with a raw <: %s", target, rawQuery, body)
		}
	case strings.HasPrefix(ct, "text/html"):
		lower := strings.ToLower(body)
		if strings.Count(lower, "<script") != 1 || !strings.Contains(body, layoutScript(target)) {
			t.Fatalf("GET %q ? %q: a script element besides the UI's own:\n%s", target, rawQuery, body)
		}
		// The seeded job data and the fuzzed parameters come out escaped, as text.
		for _, bad := range []string{"<iframe", "<img", "<b>", `href="javascript:`, `src="javascript:`, `action="javascript:`} {
			if strings.Contains(lower, bad) {
				t.Fatalf("GET %q ? %q: unescaped %s in:\n%s", target, rawQuery, bad, body)
			}
		}
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest && rec.Code != http.StatusNotFound && rec.Code != http.StatusConflict {
			t.Fatalf("GET %q ? %q: page with status %d", target, rawQuery, rec.Code)
		}
	case target == "/ui/static/style.css" || target == "/ui/static/app.js":
	default:
		t.Fatalf("GET %q ? %q: %d with content type %q: %q", target, rawQuery, rec.Code, ct, bytes.TrimSpace(rec.Body.Bytes()))
	}
}

// uiPages are the pages a form may send the browser back to.
var uiPages = map[string]bool{"./": true, "queues": true, "workers": true, "scheduled": true, "retry": true, "dead": true, "job": true,
	"keys": true, "schedules": true}

// FuzzWebUIParsers feeds one text to the parsers of the UI's parameters, which need no Redis:
// scoreAndID (the "<died_at>/<job id>" of the actions' paths) splits exactly there, or is the
// caller's error; safeBack (a form's return address) and selfURL always give a page of the UI, keep
// only its own parameters, and the action's redirect built on them stays under ui/; parsePage
// accepts exactly the numbers from 0 to maxPage; flashOf shows only its own messages.
func FuzzWebUIParsers(f *testing.F) {
	for _, s := range []string{
		"", "5/abc", "-5/a/b/c", "+5/x", "5/", "/x", "x/y", "9223372036854775808/x", "1e3/x", "5",
		"dead?q=a&page=2", "./?q=x&done=retried", "https://evil.example/", "//evil.example/x", "/etc/passwd",
		"../queues", "javascript:alert(1)", "job?id=%2F%2Fevil", "queues#frag", "dead?q=%ZZ", "\\\\evil.example",
		"page=3", "page=0", "page=-1", "page=1073741825", "page= 1", "done=retried_name&n=1",
		"done=deleted_name&n=9223372036854775808", "fail=gone", "fail=<script>",
	} {
		f.Add(s)
	}
	base, _ := url.Parse("https://ui.example/admin/jobs/ui/action")
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > 4096 {
			t.Skip("longer than a URL a browser sends")
		}
		score, id, err := scoreAndID(s)
		if err != nil {
			var br badRequest
			if !errors.As(err, &br) || score != 0 || id != "" {
				t.Fatalf("scoreAndID(%q) = %d, %q, %v", s, score, id, err)
			}
		} else if sc, rest, _ := strings.Cut(s, "/"); id == "" || rest != id || !sameInt(sc, score) {
			t.Fatalf("scoreAndID(%q) = %d, %q", s, score, id)
		}

		back := safeBack(s)
		checkUIPage(t, "safeBack("+strconv.Quote(s)+")", back, base, false)
		if again := safeBack(back); again != back {
			t.Fatalf("safeBack(%q) = %q, but safeBack(%q) = %q", s, back, back, again)
		}
		q, _ := url.ParseQuery(s)
		for name := range uiPages {
			if name == "./" {
				name = ""
			}
			checkUIPage(t, "selfURL", selfURL(name, q), base, false)
		}

		req := httptest.NewRequest("GET", "/", nil)
		req.URL = &url.URL{Path: "/dead_jobs", RawQuery: s}
		page, err := parsePage(req)
		v := req.URL.Query().Get("page")
		n, perr := strconv.ParseUint(v, 10, 64)
		switch {
		case v == "" && (err != nil || page != 1):
			t.Fatalf("parsePage without a page: %d, %v", page, err)
		case v != "" && (perr != nil || n > maxPage) != (err != nil):
			t.Fatalf("parsePage(%q) = %d, %v", v, page, err)
		case v != "" && err == nil && uint64(page) != n:
			t.Fatalf("parsePage(%q) = %d", v, page)
		}

		flash, failure := flashOf(q)
		if failure != "" && failure != failureMessages[q.Get("fail")] {
			t.Fatalf("flashOf(%q): failure %q", s, failure)
		}
		if msg, ok := flashMessages[q.Get("done")]; ok {
			if head, _, _ := strings.Cut(msg, "%d"); !strings.HasPrefix(flash, head) {
				t.Fatalf("flashOf(%q): flash %q", s, flash)
			}
		} else if flash != "" {
			t.Fatalf("flashOf(%q): flash %q for an unknown outcome", s, flash)
		}
	})
}

// sameInt reports whether the decimal text s is the number n, as strconv.ParseInt reads it.
func sameInt(s string, n int64) bool {
	m, err := strconv.ParseInt(s, 10, 64)
	return err == nil && m == n
}

// checkUIPage checks that u is a page of the UI, relative to ui/, with only the UI's parameters (and
// an action's outcome, when it is a redirect already), and that the redirect an action builds on it
// stays under ui/ on the same host, base being the action's address.
func checkUIPage(t *testing.T, what, u string, base *url.URL, redirect bool) {
	t.Helper()
	p, err := url.Parse(u)
	if err != nil || p.Scheme != "" || p.Host != "" || p.User != nil || p.Opaque != "" || p.Fragment != "" {
		t.Fatalf("%s = %q, not a relative address (%v)", what, u, err)
	}
	if page := p.Path; !uiPages[page] && !(page == "" && strings.HasPrefix(u, "./")) {
		t.Fatalf("%s = %q, not a page of the UI", what, u)
	}
	for k := range p.Query() {
		switch k {
		case "name", "page", "q", "id", "cursor":
		case "done", "n", "fail":
			if redirect {
				continue
			}
			fallthrough
		default:
			t.Fatalf("%s = %q keeps the parameter %q", what, u, k)
		}
	}
	loc := p
	if !redirect {
		sep := "?"
		if strings.Contains(u, "?") {
			sep = "&"
		}
		if loc, err = url.Parse(u + sep + "done=deleted"); err != nil || loc.Query().Get("done") != "deleted" {
			t.Fatalf("%s = %q: the redirect %q reads as %v (%v)", what, u, u+sep+"done=deleted", loc, err)
		}
	}
	if r := base.ResolveReference(loc); r.Host != base.Host || !strings.HasPrefix(r.Path, path.Dir(base.Path)+"/") {
		t.Fatalf("%s = %q: the redirect leads to %v", what, u, r)
	}
}

// fuzzPostPaths are the actions FuzzWebUIActions chooses from, by the index it is given: the JSON
// API's, whose parameters are in the path, and the UI's form.
var fuzzPostPaths = []string{
	"/delete_dead_job/", "/retry_dead_job/", "/retry_dead_job_type/", "/pause_queue/", "/unpause_queue/",
	"/cancel_job/", "/ui/action",
	"/pause_key/", "/unpause_key/", "/set_key_limits/", "/clear_key_limits/",
	"/pause_schedule", "/resume_schedule", "/delete_schedule", "/run_schedule", "/set_schedule",
}

// FuzzWebUIActions posts actions with arbitrary path parameters (died_at, job IDs and names), query
// parameters (a key and its overrides, a schedule's ID and definition) and form fields (op, score,
// id, name, key, the overrides, back), the form with the server's token, against a namespace
// holding jobs and schedules: never a 5xx, and no action that fails on Redis; a JSON answer is valid JSON; a form
// sends the browser back to a page of the UI.
func FuzzWebUIActions(f *testing.F) {
	for _, s := range []struct {
		which      uint8
		rest, form string
	}{
		{0, "100/dead1", ""}, {0, "-9223372036854775808/x", ""}, {0, "x/dead1", ""}, {0, "5", ""}, {0, "5/", ""},
		{1, "100/periodic:report:0 * * * * *:1", ""}, {1, "9223372036854775807/a/b", ""}, {2, "charge_card", ""},
		{2, "<b>name</b>", ""}, {3, "send_email", ""}, {3, "a/b", ""}, {4, "", ""}, {5, "busy1", ""}, {5, "<id>", ""},
		{6, "", "op=retry_dead&score=100&id=dead1&back=dead"}, {6, "", "op=delete_retry&score=x&id=retry1&back=retry%3Fpage%3D2"},
		{6, "", "op=run_scheduled&score=-1&id=&back=https://evil.example/"}, {6, "", "op=delete_queued&name=%3Cb%3Ename%3C%2Fb%3E&id=x"},
		{6, "", "op=retry_dead_name&name=charge_card&back=dead%3Fq%3Dcharge"}, {6, "", "op=pause&name=x&back=//evil"},
		{6, "", "op=resume&name=x"}, {6, "", "op=cancel&id=%3Cid%3E"}, {6, "", "op=nope"}, {6, "", "%zz"},
		{6, "", "op=delete_dead_name&name=report&back=javascript:alert(1)"},
		{6, "", "op=pause_key&name=%3Cb%3Ename%3C%2Fb%3E&key=acme&back=keys%3Fname%3Dx"},
		{6, "", "op=set_key_limits&name=sync&key=acme&weight=99999&rate=1/0s&back=keys"},
		{6, "", "op=set_key_limits&name=sync&key=acme&concurrency=none&rate=5/s&weight=3&max_waiting=-1"},
		{6, "", "op=clear_key_limits&name=" + fuzzBrokenKeyedName + "&key=a"}, {6, "", "op=resume_key&name=&key="},
		{6, "", "op=pause_key&name=sync:rate&key=%7B%7D"},
		{7, "<b>name</b>", "key=acme"}, {7, "sync", ""}, {8, fuzzBrokenKeyedName, "key=x"}, {8, "", "key=x"},
		{9, "sync", "key=a&rate=10/1m&weight=2"}, {9, "sync", "key=%7B&concurrency=-9"}, {9, "sync", "key=a&rate=1/9999999999h"},
		{10, "sync:lock", "key=a"}, {10, "a/b", "key=" + url.QueryEscape(fuzzEvil)},
		{11, "", "id=report%3Aacme"}, {12, "", "id=report%3Aacme"}, {11, "", "id=" + fuzzDamagedSchedule}, {12, "", "id=" + fuzzDamagedSchedule},
		{11, "/x", "id=report%3Aacme"}, {11, "", "id=%00"}, {11, "", ""}, {11, "", "id=" + url.QueryEscape(fuzzPeriodicID)},
		{14, "", "id=report%3Aacme"}, {14, "", "id=" + url.QueryEscape(fuzzEvil)}, {14, "", "id=" + fuzzDamagedSchedule}, {14, "", "id=nope"},
		{13, "", "id=nope"}, {13, "", "id=" + fuzzDamagedSchedule},
		{15, "", "id=new&spec=%40every+1m&job=report&location=Asia%2FTokyo&args=%7B%22a%22%3A1%7D&key=k&jitter=30s&missed=run-latest"},
		{15, "", "id=new&spec=bad&job=report"}, {15, "", "id=new&spec=%40daily&job=x%3Alock"}, {15, "", "id=new&spec=%40daily&job=r&jitter=-5s"},
		{15, "", "id=new&spec=%40daily&job=r&location=Local"}, {15, "", "id=new&spec=%40daily&job=r&args=%5B%5D&key=%7B"},
		{6, "", "op=pause_schedule&id=report%3Aacme&back=schedules%3Fid%3Dreport%253Aacme"},
		{6, "", "op=run_schedule&id=" + fuzzDamagedSchedule + "&back=schedules%3Fcursor%3D5%26q%3Dr"},
		{6, "", "op=resume_schedule&id=%00&back=schedules"}, {6, "", "op=delete_schedule&id=&back=schedules"},
		{6, "", "op=run_schedule&id=" + url.QueryEscape(fuzzPeriodicID)},
	} {
		f.Add(s.which, s.rest, s.form)
	}
	srv := newFuzzServer(f)
	h := srv.Handler()
	base, _ := url.Parse("https://ui.example/admin/jobs/ui/action")
	f.Fuzz(func(t *testing.T, which uint8, rest, form string) {
		if len(rest)+len(form) > 4096 {
			t.Skip("longer than a form of the UI")
		}
		p := fuzzPostPaths[int(which)%len(fuzzPostPaths)]
		var req *http.Request
		if p == "/ui/action" {
			vals, _ := url.ParseQuery(form)
			if op := vals.Get("op"); op == "retry_all_dead" || op == "delete_all_dead" {
				t.Skip("takes no parameter, and would empty the dead set the other inputs meet")
			}
			req = httptest.NewRequest("POST", "/", strings.NewReader(form+"&csrf="+srv.csrf))
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.URL = &url.URL{Path: p}
		} else {
			// The key endpoints read their key and overrides from the query.
			req = httptest.NewRequest("POST", "/", nil)
			req.URL = &url.URL{Path: p + rest, RawQuery: form}
		}
		req.RequestURI = req.URL.RequestURI()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		body := rec.Body.String()
		if rec.Code >= 500 {
			t.Fatalf("POST %q %q: %d %s", req.URL.Path, form, rec.Code, body)
		}
		if p == "/ui/action" && rec.Code == http.StatusSeeOther {
			loc := rec.Header().Get("Location")
			checkUIPage(t, "the action's redirect", loc, base, true)
			if u, _ := url.Parse(loc); u.Query().Get("fail") == "error" {
				t.Fatalf("POST /ui/action %q: the action failed on Redis (%s)", form, loc)
			}
			return
		}
		if ct := rec.Header().Get("Content-Type"); !strings.HasPrefix(ct, "application/json") || !json.Valid(rec.Body.Bytes()) {
			t.Fatalf("POST %q %q: %d, %q, not JSON: %q", req.URL.Path, form, rec.Code, ct, body)
		}
	})
}
