package webui

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// blockingPool starts a worker pool whose "long" jobs run until their context is cancelled (or the
// test ends); each job's ID arrives on started when it starts, and its context's cause is kept in
// causes.
func blockingPool(t *testing.T, f *fixture, concurrency uint) (started chan string, causes *atomic.Value) {
	t.Helper()
	started = make(chan string, 10)
	causes = &atomic.Value{}
	release := make(chan struct{})
	wp := work.NewWorkerPool(struct{}{}, concurrency, f.ns, f.pool)
	wp.JobWithOptions("long", work.JobOptions{MaxFails: 5}, func(ctx context.Context, j *work.Job) error {
		started <- j.ID
		select {
		case <-ctx.Done():
			causes.Store(j.ID + ": " + fmt.Sprint(context.Cause(ctx)))
			return ctx.Err()
		case <-release:
			return errors.New("never cancelled")
		}
	})
	wp.Start()
	t.Cleanup(func() {
		close(release) // so that Stop does not wait for a job a failed test left running
		wp.Stop()
	})
	return started, causes
}

// deadErr returns the error a dead job died with, "" while it is not dead.
func deadErr(t *testing.T, f *fixture, id string) string {
	t.Helper()
	loc, err := work.NewClient(f.ns, f.pool).FindJob(id)
	if err != nil || loc.State != work.JobStateDead {
		return ""
	}
	return loc.Job.LastErr
}

func TestCancelJobEndpointCancelsARunningJob(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	started, causes := blockingPool(t, f, 2)
	e := work.NewEnqueuer(f.ns, f.pool)
	first, err := e.Enqueue("long", nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := e.Enqueue("long", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	<-started

	// The JSON endpoint: the pool subscribes when it starts, so the first requests may find no
	// listener; once one hears, the job's context is cancelled and it dies as "cancelled".
	var ans struct {
		Status string `json:"status"`
		JobID  string `json:"job_id"`
		Pools  int64  `json:"pools"`
	}
	eventually(t, 10*time.Second, "a pool to hear the cancel", func() bool {
		decode(t, f.post("/cancel_job/"+url.PathEscape(first.ID)), 200, &ans)
		return ans.Pools >= 1
	})
	if ans.Status != "ok" || ans.JobID != first.ID || ans.Pools != 1 {
		t.Errorf("answer %+v, want ok, the job's ID and 1 pool", ans)
	}
	eventually(t, 10*time.Second, "the cancelled job in the dead set", func() bool { return deadErr(t, f, first.ID) != "" })
	if got := deadErr(t, f, first.ID); got != "cancelled" {
		t.Errorf("dead job's error %q, want cancelled", got)
	}
	if c, _ := causes.Load().(string); c != first.ID+": "+work.ErrJobCancelled.Error() {
		t.Errorf("context cause %q, want ErrJobCancelled", c)
	}
	// A job that is no longer running is not cancelled again: 409. The endpoint goes by what workers
	// publish they run, up to a second late (later on a busy machine): once its worker shows it gone.
	eventually(t, 10*time.Second, "the cancelled job gone from its worker's observation", func() bool {
		obs, err := work.NewClient(f.ns, f.pool).WorkerObservations()
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range obs {
			if o.IsBusy && o.JobID == first.ID {
				return false
			}
		}
		return true
	})
	wantError(t, f.post("/cancel_job/"+first.ID), http.StatusConflict)

	// The pool listens now. Requests that must not act are refused before they reach it: cross-site
	// (JSON endpoint and form), a form without the server's token, unauthenticated, read-only.
	secondPath := "/cancel_job/" + second.ID
	for _, hdr := range []map[string]string{{"Origin": "https://evil.example"}, {"Sec-Fetch-Site": "cross-site"}} {
		wantError(t, f.do("POST", secondPath, nil, hdr), http.StatusForbidden)
		if rec := f.form(url.Values{"op": {"cancel"}, "id": {second.ID}}, hdr); rec.Code != http.StatusForbidden {
			t.Errorf("cross-site form with %v: %d, want 403", hdr, rec.Code)
		}
	}
	for _, tok := range []string{"", "0123", strings.Repeat("a", 64)} {
		rec := f.form(url.Values{"op": {"cancel"}, "id": {second.ID}, "csrf": {tok}}, map[string]string{"Sec-Fetch-Site": "same-origin"})
		if rec.Code != http.StatusForbidden {
			t.Errorf("form with token %q: %d, want 403", tok, rec.Code)
		}
	}
	authed := &fixture{t: t, pool: f.pool, ns: f.ns, srv: NewServerWithOptions(f.ns, f.pool, "", Options{BearerToken: "tok"})}
	wantError(t, authed.post(secondPath), http.StatusUnauthorized)
	wantError(t, authed.do("POST", secondPath, nil, map[string]string{"Authorization": "Bearer wrong"}), http.StatusUnauthorized)
	// With the token the request passes (the first job is dead by now: 409).
	wantError(t, authed.do("POST", "/cancel_job/"+first.ID, nil, map[string]string{"Authorization": "Bearer tok"}), http.StatusConflict)
	readOnly := &fixture{t: t, pool: f.pool, ns: f.ns, srv: NewServerWithOptions(f.ns, f.pool, "", Options{ReadOnly: true})}
	wantError(t, readOnly.post(secondPath), http.StatusForbidden)
	wantError(t, f.do("GET", secondPath, nil, nil), http.StatusMethodNotAllowed)
	time.Sleep(200 * time.Millisecond)
	if loc, err := work.NewClient(f.ns, f.pool).FindJob(second.ID); err != nil || loc.State != work.JobStateInProgress {
		t.Fatalf("a refused request stopped the job: %+v, %v", loc, err)
	}

	// The job page offers the cancel, and its form (with the token, as a same-origin browser sends
	// it) cancels the job and comes back to the page with the outcome.
	body := f.get("/ui/job?id=" + second.ID).Body.String()
	if !strings.Contains(body, `data-op="cancel"`) {
		t.Errorf("the running job's page has no cancel button")
	}
	// Workers publish what they run up to a second late.
	eventually(t, 10*time.Second, "a cancel button on the busy workers list", func() bool {
		return strings.Contains(f.get("/ui/workers").Body.String(), fmt.Sprintf(`data-op="cancel" data-id="%s"`, second.ID))
	})
	back := "job?id=" + second.ID
	rec := f.form(url.Values{"op": {"cancel"}, "id": {second.ID}, "back": {back}},
		map[string]string{"Sec-Fetch-Site": "same-origin", "Origin": "http://example.com"})
	if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != back+"&done=cancel_sent&n=1" {
		t.Fatalf("cancel form: %d %q", rec.Code, rec.Header().Get("Location"))
	}
	if page := f.get("/ui/" + rec.Header().Get("Location")).Body.String(); !strings.Contains(page, "Cancel requested: 1 worker pool heard it") {
		t.Error("no flash message after the cancel")
	}
	eventually(t, 10*time.Second, "the second job in the dead set", func() bool { return deadErr(t, f, second.ID) == "cancelled" })
	// A dead job's page offers no cancel.
	if strings.Contains(f.get("/ui/job?id="+second.ID).Body.String(), `data-op="cancel"`) {
		t.Error("a dead job's page offers a cancel")
	}
}

func TestCancelJobEndpointRefusesWhatItCannotCancel(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	var queued work.Job
	if err := json.Unmarshal([]byte(rStrings(t, f.pool, "LRANGE", f.key("jobs:send_email"), 0, 0)[0]), &queued); err != nil {
		t.Fatal(err)
	}
	queuedID := queued.ID
	for _, tc := range []struct {
		method, target string
		status         int
	}{
		{"POST", "/cancel_job", http.StatusBadRequest},
		{"POST", "/cancel_job/", http.StatusBadRequest},
		{"POST", "/cancel_job/nope", http.StatusNotFound},
		{"POST", "/cancel_job/" + url.PathEscape(`<script>"x"/y`), http.StatusNotFound},
		{"POST", "/cancel_job/%00", http.StatusNotFound},
		{"POST", "/cancel_job/dead1", http.StatusConflict},
		{"POST", "/cancel_job/retry1", http.StatusConflict},
		{"POST", "/cancel_job/sched1", http.StatusConflict},
		{"POST", "/cancel_job/" + queuedID, http.StatusConflict},
		{"GET", "/cancel_job/busy1", http.StatusMethodNotAllowed},
		{"PUT", "/cancel_job/busy1", http.StatusMethodNotAllowed},
	} {
		rec := f.do(tc.method, tc.target, nil, nil)
		if rec.Code != tc.status {
			t.Errorf("%s %s: %d, want %d (%s)", tc.method, tc.target, rec.Code, tc.status, rec.Body)
			continue
		}
		wantError(t, rec, tc.status)
	}
	// A job held by a pool that does not listen (the seeded one has no process behind it): the
	// request is sent and nobody hears it.
	var ans struct {
		Status string `json:"status"`
		Pools  int64  `json:"pools"`
	}
	decode(t, f.post("/cancel_job/busy1"), 200, &ans)
	if ans.Status != "ok" || ans.Pools != 0 {
		t.Errorf("answer %+v, want ok and 0 pools", ans)
	}
	// The form says the same things, on the page it came from.
	for _, tc := range []struct {
		id, want string
	}{
		{"", "workers?fail=bad"},
		{"nope", "workers?fail=gone"},
		{"dead1", "workers?fail=not_running"},
		{"busy1", "workers?done=cancel_none"},
	} {
		rec := f.form(url.Values{"op": {"cancel"}, "id": {tc.id}, "back": {"workers"}}, nil)
		if rec.Code != http.StatusSeeOther || rec.Header().Get("Location") != tc.want {
			t.Errorf("cancel form for %q: %d %q, want %q", tc.id, rec.Code, rec.Header().Get("Location"), tc.want)
		}
	}
	for query, want := range map[string]string{
		"fail=not_running":     "only a running job can be cancelled",
		"done=cancel_none":     "No worker pool heard the cancel request",
		"done=cancel_sent&n=2": "Cancel requested: 2 worker pools heard it",
	} {
		if body := f.get("/ui/workers?" + query).Body.String(); !strings.Contains(body, want) {
			t.Errorf("workers?%s lacks %q", query, want)
		}
	}
	// The seeded busy worker has its cancel button, except in read-only mode.
	if body := f.get("/ui/workers").Body.String(); !strings.Contains(body, `data-op="cancel" data-id="busy1"`) {
		t.Error("no cancel button on the busy worker")
	}
	ro := &fixture{t: t, pool: f.pool, ns: f.ns, srv: NewServerWithOptions(f.ns, f.pool, "", Options{ReadOnly: true})}
	for _, page := range []string{"/ui/workers", "/ui/job?id=busy1"} {
		if body := ro.get(page).Body.String(); strings.Contains(body, `data-op="cancel"`) {
			t.Errorf("read-only %s offers a cancel", page)
		}
	}
}

func TestPeriodicJobsEndpointAndPage(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})

	// No pool: an empty list, and a page that says why.
	rec := f.get("/periodic_jobs")
	var empty []*work.PeriodicJob
	decode(t, rec, 200, &empty)
	if strings.TrimSpace(rec.Body.String()) != "[]" {
		t.Errorf("no periodic job: %s, want []", rec.Body)
	}
	page := f.get("/ui/periodic")
	if page.Code != 200 || !strings.Contains(page.Body.String(), `id="periodic-empty"`) || !strings.Contains(page.Body.String(), "gocraft/work") {
		t.Errorf("empty periodic page: %d %s", page.Code, page.Body)
	}

	wp := work.NewWorkerPool(struct{}{}, 1, f.ns, f.pool)
	wp.Job("hourly_report", func(*work.Job) error { return nil })
	wp.PeriodicallyEnqueue("0 0 * * * *", "hourly_report")
	wp.Start()
	defer wp.Stop()
	var pools []*work.WorkerPoolHeartbeat
	eventually(t, 10*time.Second, "the pool's heartbeat", func() bool {
		decode(t, f.get("/worker_pools"), 200, &pools)
		return len(pools) == 1
	})
	poolID := pools[0].WorkerPoolID

	var pjs []*work.PeriodicJob
	decode(t, f.get("/periodic_jobs"), 200, &pjs)
	now := time.Now().Unix()
	if len(pjs) != 1 {
		t.Fatalf("/periodic_jobs: %+v", pjs)
	}
	pj := pjs[0]
	if pj.JobName != "hourly_report" || pj.Spec != "0 0 * * * *" || len(pj.WorkerPoolIDs) != 1 || pj.WorkerPoolIDs[0] != poolID {
		t.Errorf("/periodic_jobs: %+v", pj)
	}
	if next := time.Unix(pj.NextRunAt, 0); next.Minute() != 0 || next.Second() != 0 || pj.NextRunAt < now-5 || pj.NextRunAt > now+3600 {
		t.Errorf("next run %d: want the next full hour after %d", pj.NextRunAt, now)
	}
	for _, field := range []string{`"job_name"`, `"spec"`, `"next_run_at"`, `"worker_pool_ids"`} {
		if !strings.Contains(f.get("/periodic_jobs").Body.String(), field) {
			t.Errorf("/periodic_jobs lacks %s", field)
		}
	}
	wantError(t, f.post("/periodic_jobs"), http.StatusMethodNotAllowed)

	body := f.get("/ui/periodic").Body.String()
	for _, want := range []string{
		`<a href="periodic" class="active" aria-current="page">Periodic</a>`,
		`data-job="hourly_report"`, "0 0 * * * *", poolID,
		fmt.Sprintf(`datetime="%s"`, time.Unix(pj.NextRunAt, 0).UTC().Format(time.RFC3339)),
		time.Unix(pj.NextRunAt, 0).UTC().Format("2006-01-02 15:04:05 UTC"), "(in ", `data-refresh="5"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("the periodic page lacks %q", want)
		}
	}
	// The other pages link to it.
	if !strings.Contains(f.get("/ui/").Body.String(), `<a href="periodic">Periodic</a>`) {
		t.Error("the nav has no link to the periodic page")
	}
}

func TestPeriodicPageEscapesWhatPoolsDeclare(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	// A heartbeat written by hand: its job names and specs are data, shown as text.
	rdo(t, f.pool, "SADD", f.key("worker_pools"), "<pool>")
	rdo(t, f.pool, "HSET", f.key("worker_pools:<pool>"), "heartbeat_at", time.Now().Unix(),
		"periodic_jobs", `[{"job_name":"<script>alert(1)</script>","spec":"<b>bad</b>"}]`)
	body := f.get("/ui/periodic").Body.String()
	for _, bad := range []string{"<script>alert", "<b>bad", "<pool>"} {
		if strings.Contains(body, bad) {
			t.Errorf("the periodic page holds unescaped %q", bad)
		}
	}
	if !strings.Contains(body, "&lt;script&gt;alert(1)&lt;/script&gt;") || !strings.Contains(body, "unknown: the spec cannot be read") {
		t.Errorf("the periodic page does not show the declared job as text:\n%s", body)
	}
	var pjs []*work.PeriodicJob
	decode(t, f.get("/periodic_jobs"), 200, &pjs)
	if len(pjs) != 1 || pjs[0].NextRunAt != 0 {
		t.Errorf("/periodic_jobs: %+v", pjs)
	}
	if strings.Contains(f.get("/periodic_jobs").Body.String(), "<") {
		t.Error("the JSON answer holds a raw <")
	}
}
