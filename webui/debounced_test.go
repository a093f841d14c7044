package webui

import (
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// debounce enqueues n jobs of one burst, the i-th with args {"v": i}, and returns the pending job.
func (f *fixture) debounce(name, id string, n int, d work.Debounce) *work.Job {
	f.t.Helper()
	e := work.NewEnqueuer(f.ns, f.pool)
	d.ID = id
	var j *work.Job
	for i := 1; i <= n; i++ {
		var err error
		if j, err = e.EnqueueWith(name, work.Q{"v": i, "html": "<script>alert(1)</script>"}, work.EnqueueOptions{Debounce: &d}); err != nil {
			f.t.Fatal(err)
		}
	}
	return j
}

// burst returns the pending burst of a job ID, failing the test when there is none.
func (f *fixture) burst(jobID string) *work.PendingBurst {
	f.t.Helper()
	bs, err := work.NewClient(f.ns, f.pool).PendingBursts()
	if err != nil {
		f.t.Fatal(err)
	}
	for _, b := range bs {
		if b.Job.ID == jobID {
			return b
		}
	}
	f.t.Fatalf("no pending burst has the job %s", jobID)
	return nil
}

// The Debounced page lists the pending bursts, linked from the navigation, with their counts, times,
// window, maximum wait, args (escaped) and a link to their job; GET /debounced answers them.
func TestDebouncedPageAndAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	body := f.pageHas("/ui/debounced", "No burst pending", `href="debounced" class="active" aria-current="page">Debounced<`)
	if strings.Contains(body, `id="debounced"`) {
		t.Error("an empty list shows a table")
	}
	if b := f.get("/debounced").Body.String(); strings.TrimSpace(b) != "[]" {
		t.Errorf("GET /debounced with no burst: %s", b)
	}
	f.pageHas("/ui/", `<a href="debounced">Debounced</a>`)

	doc := f.debounce("reindex", "doc-1", 3, work.Debounce{Window: time.Hour, MaxWait: 2 * time.Hour})
	mail := f.debounce("digest", "user-7", 1, work.Debounce{Window: 30 * time.Second})
	body = f.pageHas("/ui/debounced", `id="debounced"`, `<span class="count" id="total">2</span>`)
	if bad := regexp.MustCompile(`<script>alert`).FindString(body); bad != "" {
		t.Errorf("the page holds unescaped args %q", bad)
	}
	row := func(jobID string) string {
		t.Helper()
		i := strings.Index(body, `data-id="`+jobID+`"`)
		if i < 0 {
			t.Fatalf("no row for %s: %s", jobID, body)
		}
		return body[i : i+strings.Index(body[i:], "</tr>")]
	}
	r := row(doc.ID)
	for _, want := range []string{`data-col="name">reindex<`, `data-col="id">doc-1<`, `data-col="enqueues">3<`,
		`data-col="window">1h<`, `data-col="max-wait">2h<`, `&#34;v&#34;:3`, `href="job?id=` + doc.ID + `"`,
		`name="op" value="reschedule"`, `data-op="run_scheduled"`} {
		if !strings.Contains(r, want) {
			t.Errorf("the burst's row lacks %q: %s", want, r)
		}
	}
	if !regexp.MustCompile(`>in (59m \d+s|1h 0m)<`).MatchString(r) {
		t.Errorf("the burst's row does not say it runs in an hour: %s", r)
	}
	if m := row(mail.ID); !strings.Contains(m, `data-col="max-wait"><span class="hint">none<`) || !strings.Contains(m, `data-col="window">30s<`) {
		t.Errorf("the digest's row: %s", m)
	}
	if strings.Index(body, mail.ID) > strings.Index(body, doc.ID) {
		t.Error("the burst that runs first is not listed first")
	}

	var bursts []struct {
		Name     string    `json:"name"`
		ID       string    `json:"id"`
		Enqueues int64     `json:"enqueues"`
		RunAt    time.Time `json:"run_at"`
		Job      work.Job  `json:"job"`
	}
	decode(t, f.get("/debounced"), 200, &bursts)
	if len(bursts) != 2 || bursts[1].Name != "reindex" || bursts[1].ID != "doc-1" || bursts[1].Enqueues != 3 ||
		bursts[1].Job.ID != doc.ID || bursts[1].Job.ArgInt64("v") != 3 {
		t.Errorf("GET /debounced: %+v", bursts)
	}
}

// The page's forms reschedule a burst's job to a time (UTC) and run it now; the JSON API does the
// same by job ID.
func TestDebouncedActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	j := f.debounce("reindex", "doc-1", 2, work.Debounce{Window: time.Hour})
	act := func(vals url.Values, wantLocation string) {
		t.Helper()
		vals.Set("back", "debounced")
		rec := f.form(vals, nil)
		if rec.Code != 303 || rec.Header().Get("Location") != wantLocation {
			t.Fatalf("%v: %d %q, want 303 to %q", vals, rec.Code, rec.Header().Get("Location"), wantLocation)
		}
	}

	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	act(url.Values{"op": {"reschedule"}, "id": {j.ID}, "at": {at.Format("2006-01-02T15:04:05")}}, "debounced?done=rescheduled")
	if b := f.burst(j.ID); !b.RunAt.Equal(at) || b.Enqueues != 2 {
		t.Errorf("after the form, the burst runs at %v with %d enqueues, want %v and 2", b.RunAt, b.Enqueues, at)
	}
	f.pageHas("/ui/debounced?done=rescheduled", "The job is moved to its new run time.")
	act(url.Values{"op": {"reschedule"}, "id": {j.ID}, "at": {"tomorrow"}}, "debounced?fail=bad")
	act(url.Values{"op": {"reschedule"}, "at": {"2030-01-01T00:00"}}, "debounced?fail=bad")
	act(url.Values{"op": {"reschedule"}, "id": {"nosuchjob"}, "at": {"2030-01-01T00:00"}}, "debounced?fail=gone")

	// The API takes epoch seconds or RFC 3339.
	at = at.Add(time.Hour)
	var ans rescheduleAnswer
	decode(t, f.post("/reschedule_job/"+j.ID+"?at="+strconv.FormatInt(at.Unix(), 10)), 200, &ans)
	if ans.Status != "ok" || ans.JobID != j.ID || !ans.RunAt.Equal(at) {
		t.Errorf("POST /reschedule_job: %+v", ans)
	}
	at = at.Add(time.Hour)
	rec := f.do("POST", "/reschedule_job/"+j.ID, strings.NewReader(url.Values{"at": {at.Format(time.RFC3339)}}.Encode()), nil)
	decode(t, rec, 200, &ans)
	if b := f.burst(j.ID); !b.RunAt.Equal(at) {
		t.Errorf("after POST /reschedule_job, the burst runs at %v, want %v", b.RunAt, at)
	}
	f.wantErrors([]errorCase{
		{"POST", "/reschedule_job/" + j.ID, 400},
		{"POST", "/reschedule_job/" + j.ID + "?at=soon", 400},
		{"POST", "/reschedule_job/?at=1", 400},
		{"POST", "/reschedule_job/nosuchjob?at=1", 404},
		{"GET", "/reschedule_job/" + j.ID + "?at=1", 405},
		{"POST", "/run_scheduled_job/" + j.ID, 400},
		{"POST", "/run_scheduled_job/1/" + j.ID, 404},
	})

	// Run now: the job goes to its queue, and the burst is over.
	act(url.Values{"op": {"run_scheduled"}, "id": {j.ID}, "score": {strconv.FormatInt(at.Unix(), 10)}}, "debounced?done=run")
	if n := rInt(t, f.pool, "LLEN", f.key("jobs:reindex")); n != 1 {
		t.Errorf("%d reindex jobs queued after Run now, want 1", n)
	}
	f.pageHas("/ui/debounced", "No burst pending")

	k := f.debounce("reindex", "doc-2", 1, work.Debounce{Window: time.Hour})
	runAt := f.burst(k.ID).RunAt.Unix()
	decode(t, f.post("/run_scheduled_job/"+strconv.FormatInt(runAt, 10)+"/"+k.ID), 200, &map[string]string{})
	wantError(t, f.post("/run_scheduled_job/"+strconv.FormatInt(runAt, 10)+"/"+k.ID), http.StatusNotFound)
	if n := rInt(t, f.pool, "LLEN", f.key("jobs:reindex")); n != 2 {
		t.Errorf("%d reindex jobs queued after POST /run_scheduled_job, want 2", n)
	}
}

// A read-only server lists the bursts without actions, and refuses them.
func TestDebouncedReadOnly(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true})
	j := f.debounce("reindex", "doc-1", 1, work.Debounce{Window: time.Hour})
	body := f.pageHas("/ui/debounced", `data-id="`+j.ID+`"`, "read-only")
	if strings.Contains(body, `name="op"`) || strings.Contains(body, "Reschedule") {
		t.Errorf("a read-only page shows actions: %s", body)
	}
	runAt := strconv.FormatInt(f.burst(j.ID).RunAt.Unix(), 10)
	for _, target := range []string{"/reschedule_job/" + j.ID + "?at=1", "/run_scheduled_job/" + runAt + "/" + j.ID} {
		wantError(t, f.post(target), http.StatusForbidden)
	}
	if rec := f.form(url.Values{"op": {"reschedule"}, "id": {j.ID}, "at": {"1"}}, nil); rec.Code != http.StatusForbidden {
		t.Errorf("read-only form: %d", rec.Code)
	}
	if b := f.burst(j.ID); b.RunAt.Unix() == 1 {
		t.Error("a read-only server moved the job")
	}
}
