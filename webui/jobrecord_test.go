package webui

import (
	"encoding/json"
	"net/url"
	"strings"
	"testing"

	"github.com/workqueue/work"
)

// jobAnswer is GET /job's answer: the location's fields and the record.
type jobAnswer struct {
	State       string          `json:"state"`
	Job         *work.Job       `json:"job"`
	Record      *work.JobRecord `json:"record"`
	RecordError string          `json:"record_error"`
}

func TestJobRecordsOnTheJobPageAndAPI(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	b, _, members := batchFixtureJobs(t, f)
	done, died, pending := members[0], members[2], members[3]
	e := work.NewEnqueuer(f.ns, f.pool)
	waiting, err := e.EnqueueWith("notify", work.Q{"to": "ops"}, work.EnqueueOptions{AfterBatches: []string{b.ID}})
	if err != nil {
		t.Fatal(err)
	}
	tracked, err := e.EnqueueWith("ping", nil, work.EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	broken, err := e.EnqueueWith("ping", nil, work.EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	// Another program overwrites one record with a string.
	rdo(t, f.pool, "DEL", f.key("job:"+broken.ID))
	rdo(t, f.pool, "SET", f.key("job:"+broken.ID), "garbage")
	const periodicID = "periodic:report:0 * * * * *:1"
	rdo(t, f.pool, "ZADD", f.key("scheduled"), f.now+60, jobJSON(t, &work.Job{Name: "report", ID: periodicID, EnqueuedAt: f.now}))

	get := func(id string) jobAnswer {
		t.Helper()
		var a jobAnswer
		decode(t, f.get("/job?id="+url.QueryEscape(id)), 200, &a)
		return a
	}
	page := func(id string, want ...string) string {
		t.Helper()
		rec := f.get("/ui/job?id=" + url.QueryEscape(id))
		if rec.Code != 200 {
			t.Fatalf("job page of %s: %d %s", id, rec.Code, rec.Body)
		}
		body := rec.Body.String()
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("job page of %s lacks %q", id, w)
			}
		}
		return body
	}

	// A member that succeeded is in no queue: its record tells all.
	a := get(done.ID)
	if a.State != "" || a.Job != nil || a.Record == nil || a.Record.State != "done" || a.Record.Batch != b.ID ||
		a.Record.Attempts != 1 || a.Record.FinishedAt == 0 || a.Record.Pool == "" {
		t.Errorf("/job of a done member: %+v %+v", a, a.Record)
	}
	var result map[string]int
	if err := json.Unmarshal(a.Record.Result, &result); err != nil || result["width"] != 640 || result["n"] != 1 {
		t.Errorf("result %s (%v)", a.Record.Result, err)
	}
	body := page(done.ID, `id="record-only"`, `id="record-state">done<`, `id="record-attempts">1<`, `&#34;width&#34;: 640`,
		`id="record-batch" href="batches/`+b.ID+`"`, "in no queue or set any more")
	if strings.Contains(body, `id="job-state"`) {
		t.Error("a done job shows a location")
	}

	// A member that died: its record, and its place in the dead set with the buttons.
	a = get(died.ID)
	if a.State != "dead" || a.Job == nil || a.Job.Batch != b.ID || a.Record == nil || a.Record.State != "dead" || a.Record.Err != "image <corrupt>" {
		t.Errorf("/job of a dead member: %+v %+v", a, a.Record)
	}
	// One state (the record's) and one count of attempts; the place says where the job is.
	body = page(died.ID, `id="job-where">in the dead set<`, `id="record-state">dead<`, `id="record-err">image &lt;corrupt&gt;<`,
		`value="retry_dead"`, `id="job-batch" href="batches/`+b.ID+`"`)
	if strings.Contains(body, `id="record-only"`) {
		t.Error("a dead job's record shows as all there is")
	}
	if strings.Contains(body, `id="job-state"`) || strings.Contains(body, "Attempts failed") {
		t.Error("a job with a record shows a second state or count of attempts")
	}

	// A pending member without a record: its place, and a link to its batch.
	a = get(pending.ID)
	if a.State != "queued" || a.Job.Batch != b.ID || a.Record != nil {
		t.Errorf("/job of a pending member: %+v", a)
	}
	body = page(pending.ID, `id="job-state">queued<`, `id="job-batch" href="batches/`+b.ID+`"`)
	if strings.Contains(body, `id="job-record"`) {
		t.Error("a job without a record shows one")
	}

	// A job waiting for the batch lives in its record only.
	a = get(waiting.ID)
	if a.State != "" || a.Record == nil || a.Record.State != "waiting" || a.Record.WaitingFor != 1 || a.Record.Name != "notify" {
		t.Errorf("/job of a waiting job: %+v %+v", a, a.Record)
	}
	page(waiting.ID, `id="record-state">waiting<`, "for 1 dependency<", "waits for its dependencies")

	// A tracked job in its queue: both.
	a = get(tracked.ID)
	if a.State != "queued" || a.Record == nil || a.Record.State != "queued" {
		t.Errorf("/job of a tracked job: %+v %+v", a, a.Record)
	}
	page(tracked.ID, `id="job-where">in its queue<`, `id="record-state">queued<`, `value="delete_queued"`)

	// A record overwritten with another type: the job still shows, with a note.
	a = get(broken.ID)
	if a.State != "queued" || a.Record != nil || !strings.Contains(a.RecordError, "another Redis type") {
		t.Errorf("/job of a job with an overwritten record: %+v", a)
	}
	page(broken.ID, `id="job-state">queued<`, `id="record-error"`)

	// An ID no record can have is only looked for in the queues and sets.
	if a = get(periodicID); a.State != "scheduled" || a.Record != nil {
		t.Errorf("/job of a periodic job: %+v", a)
	}
	page(periodicID, `id="job-state">scheduled<`)
	wantError(t, f.get("/job?id=nope"), 404)
	if rec := f.get("/ui/job?id=nope"); rec.Code != 404 {
		t.Errorf("job page of an unknown job: %d", rec.Code)
	}
}
