package webui

import (
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// batchFixture makes a batch of 5 members and a real worker pool that serves 3 of them: 2 succeed
// and 1 dies at its first failure; the 2 others wait in a queue no pool serves. Its callbacks have
// not fired. Members of "resize" keep a record once they end, with a result.
func batchFixture(t *testing.T, f *fixture) (*work.Batch, *work.BatchStatus) {
	b, st, _ := batchFixtureJobs(t, f)
	return b, st
}

// batchFixtureJobs is batchFixture, returning the members too, in order: 3 resize jobs (the third
// dies), 2 archive jobs.
func batchFixtureJobs(t *testing.T, f *fixture) (*work.Batch, *work.BatchStatus, []*work.Job) {
	t.Helper()
	e := work.NewEnqueuer(f.ns, f.pool)
	b, jobs, err := e.EnqueueInBatch(work.BatchOptions{
		Description: `thumbnails <b>for</b> "album" 7`,
		OnComplete:  &work.BatchCallback{Name: "album_done"},
		OnSuccess:   &work.BatchCallback{Name: "album_ok"},
	}, []work.BatchJob{
		{Name: "resize", Args: work.Q{"n": 1}},
		{Name: "resize", Args: work.Q{"n": 2}},
		{Name: "resize", Args: work.Q{"n": 3, "fail": true}},
		{Name: "archive", Args: work.Q{"n": 4}},
		{Name: "archive", Args: work.Q{"n": 5}},
	})
	if err != nil {
		t.Fatal(err)
	}
	wp := work.NewWorkerPool(struct{}{}, 2, f.ns, f.pool)
	wp.JobWithOptions("resize", work.JobOptions{MaxFails: 1, KeepFinished: time.Hour}, func(j *work.Job) error {
		if j.ArgBool("fail") {
			return errors.New("image <corrupt>")
		}
		return j.SetResult(map[string]interface{}{"width": 640, "n": j.ArgInt64("n")})
	})
	wp.Start()
	t.Cleanup(wp.Stop)
	client := work.NewClient(f.ns, f.pool)
	var st *work.BatchStatus
	eventually(t, 20*time.Second, "the served members to end", func() bool {
		st, err = client.BatchStatus(b.ID)
		if err != nil {
			t.Fatal(err)
		}
		return st.Done == 2 && st.Dead == 1
	})
	wp.Drain()
	return b, st, jobs
}

func TestBatchEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	b, st := batchFixture(t, f)
	if st.State != "closed" || st.Total != 5 || st.Pending != 2 || st.Failed != 1 {
		t.Fatalf("fixture batch: %+v", st)
	}

	var got work.BatchStatus
	decode(t, f.get("/batch/"+b.ID), 200, &got)
	if got != *st {
		t.Errorf("/batch/%s: %+v, want %+v", b.ID, got, *st)
	}
	raw := f.get("/batch/" + b.ID).Body.String()
	for _, field := range []string{`"id"`, `"state": "closed"`, `"total": 5`, `"pending": 2`, `"done": 2`, `"dead": 1`,
		`"failed": 1`, `"on_complete": "album_done"`, `"on_success": "album_ok"`, `"created_at"`} {
		if !strings.Contains(raw, field) {
			t.Errorf("/batch lacks %s: %s", field, raw)
		}
	}

	// A second batch. (The list is newest first to the second: these two may share theirs.)
	e := work.NewEnqueuer(f.ns, f.pool)
	b2, _, err := e.EnqueueInBatch(work.BatchOptions{Description: "second"}, []work.BatchJob{{Name: "archive"}})
	if err != nil {
		t.Fatal(err)
	}
	var page struct {
		Count   int64               `json:"count"`
		Batches []*work.BatchStatus `json:"batches"`
	}
	decode(t, f.get("/batches"), 200, &page)
	byID := map[string]*work.BatchStatus{}
	for _, s := range page.Batches {
		byID[s.ID] = s
	}
	if page.Count != 2 || len(byID) != 2 || byID[b.ID] == nil || *byID[b.ID] != *st || byID[b2.ID] == nil || byID[b2.ID].Description != "second" {
		t.Errorf("/batches: %s", f.get("/batches").Body)
	}
	decode(t, f.get("/batches?page=2"), 200, &page)
	if page.Count != 2 || page.Batches == nil || len(page.Batches) != 0 {
		t.Errorf("/batches?page=2: %s", f.get("/batches?page=2").Body)
	}
	if body := f.get("/batches?page=2").Body.String(); !strings.Contains(body, `"batches": []`) {
		t.Errorf("an empty page is not an empty list: %s", body)
	}

	// 25 more batches make two pages of 20.
	for i := 0; i < 25; i++ {
		if _, _, err := e.EnqueueInBatch(work.BatchOptions{Description: fmt.Sprint("bulk ", i)}, []work.BatchJob{{Name: "archive"}}); err != nil {
			t.Fatal(err)
		}
	}
	seen := map[string]bool{}
	for p, want := range []int{20, 7} {
		decode(t, f.get(fmt.Sprintf("/batches?page=%d", p+1)), 200, &page)
		if page.Count != 27 || len(page.Batches) != want {
			t.Errorf("/batches?page=%d of 27: count %d, %d batches", p+1, page.Count, len(page.Batches))
		}
		for _, s := range page.Batches {
			seen[s.ID] = true
		}
	}
	if len(seen) != 27 || !seen[b.ID] || !seen[b2.ID] {
		t.Errorf("the two pages hold %d batches, want the 27", len(seen))
	}
}

func TestBatchEndpointsRefuseBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.wantErrors([]errorCase{
		{"GET", "/batch", 400},
		{"GET", "/batch/", 400},
		{"GET", "/batch/%3Cscript%3E", 400},
		{"GET", "/batch/a%20b", 400},
		{"GET", "/batch/a/b", 400},
		{"GET", "/batch/" + strings.Repeat("a", 65), 400},
		{"GET", "/batch/caf%C3%A9", 400},
		{"GET", "/batch/" + strings.Repeat("a", 64), 404},
		{"GET", "/batch/unknown", 404},
		{"GET", "/batches?page=x", 400},
		{"GET", "/batches?page=-1", 400},
		{"GET", "/batches/extra", 404},
		{"POST", "/batch/unknown", 405},
		{"POST", "/batches", 405},
	})
	if body := f.get("/batch/nope").Body.String(); !strings.Contains(body, "batch not found") {
		t.Errorf("unknown batch: %s", body)
	}
	if body := f.get("/batch/a%20b").Body.String(); !strings.Contains(body, "malformed batch id") {
		t.Errorf("malformed batch id: %s", body)
	}
	for _, tc := range []struct {
		target string
		status int
		want   string
	}{
		{"/ui/batches/nope", 404, "No batch has the ID nope"},
		{"/ui/batches/a%20b", 400, "malformed batch id"},
		{"/ui/batches/a/b", 400, "malformed batch id"},
		{"/ui/batches?page=x", 400, "bad page"},
		{"/ui/batches?page=3", 200, "No batches on this page"},
		{"/ui/batches", 200, "No batches:"},
	} {
		rec := f.get(tc.target)
		if rec.Code != tc.status || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("GET %s: %d %q, want %d html with %q:\n%s", tc.target, rec.Code, rec.Header().Get("Content-Type"), tc.status, tc.want, rec.Body)
		}
	}
	// ui/batches/ is the list.
	if rec := f.get("/ui/batches/"); rec.Code != http.StatusFound || rec.Header().Get("Location") != "../batches" {
		t.Errorf("GET /ui/batches/: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
}

// TestBatchIDRuleMatchesTheLibrarys keeps the UI's check of batch and record IDs in step with the
// library's: an ID the UI refuses as malformed is one the client refuses too, and one it lets through
// reaches Redis (and is not found).
func TestBatchIDRuleMatchesTheLibrarys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, id := range []string{"a", "A-b_c.9", strings.Repeat("z", 64), strings.Repeat("z", 65), "", "a b", "a/b",
		"a:b", "é", "<x>", "a\n", "..", "a*"} {
		_, err := f.srv.client.BatchStatus(id)
		libOK := errors.Is(err, work.ErrBatchNotFound)
		if !libOK && err == nil {
			t.Fatalf("BatchStatus(%q) found a batch", id)
		}
		uiOK := checkBatchID(id) == nil
		if uiOK != libOK {
			t.Errorf("ID %q: the UI accepts it %v, the library's BatchStatus %v (%v)", id, uiOK, libOK, err)
		}
		_, err = f.srv.client.JobRecord(id)
		if recOK := errors.Is(err, work.ErrNoRecord); recOK != (work.CheckID(id) == nil) {
			t.Errorf("ID %q: the UI looks for its record %v, the library's JobRecord %v (%v)", id, !recOK, recOK, err)
		}
	}
}

func TestDamagedBatchesGetAClearAnswer(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	e := work.NewEnqueuer(f.ns, f.pool)
	b, _, err := e.EnqueueInBatch(work.BatchOptions{Description: "to overwrite"}, []work.BatchJob{{Name: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	// Another program overwrites the batch's hash with a string.
	rdo(t, f.pool, "DEL", f.key("batch:"+b.ID))
	rdo(t, f.pool, "SET", f.key("batch:"+b.ID), "garbage")
	rec := f.get("/batch/" + b.ID)
	wantError(t, rec, http.StatusConflict)
	if !strings.Contains(rec.Body.String(), "another Redis type") || !strings.Contains(rec.Body.String(), b.ID) {
		t.Errorf("overwritten batch: %s", rec.Body)
	}
	rec = f.get("/ui/batches/" + b.ID)
	if rec.Code != http.StatusConflict || !strings.Contains(rec.Body.String(), "another Redis type") ||
		!strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
		t.Errorf("page of an overwritten batch: %d\n%s", rec.Code, rec.Body)
	}
	// The list still reads, with the batch flagged as damaged.
	var list struct {
		Count   int64               `json:"count"`
		Batches []*work.BatchStatus `json:"batches"`
	}
	decode(t, f.get("/batches"), 200, &list)
	if len(list.Batches) != 1 || list.Batches[0].ID != b.ID || !list.Batches[0].Damaged {
		t.Errorf("list holding an overwritten batch: %+v", list)
	}
	if rec = f.get("/ui/batches"); rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), b.ID) {
		t.Errorf("page listing an overwritten batch: %d\n%s", rec.Code, rec.Body)
	}

	// A hash with values no writer of the library wrote reads, flagged as damaged.
	rdo(t, f.pool, "DEL", f.key("batch:"+b.ID))
	rdo(t, f.pool, "HSET", f.key("batch:"+b.ID), "state", "exploded", "total", "many", "c", "-4", "created_at", 1700000000)
	var st work.BatchStatus
	decode(t, f.get("/batch/"+b.ID), 200, &st)
	if !st.Damaged || st.State != "exploded" {
		t.Errorf("garbled batch: %+v", st)
	}
	rec = f.get("/ui/batches/" + b.ID)
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `id="batch-damaged"`) {
		t.Errorf("page of a garbled batch: %d\n%s", rec.Code, rec.Body)
	}
	rec = f.get("/ui/batches")
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), ">damaged</span>") {
		t.Errorf("list holding a garbled batch: %d\n%s", rec.Code, rec.Body)
	}
}

// barWidths reads the widths of the done, dead and pending parts of the first progress bar in a
// page.
var barRE = regexp.MustCompile(`(?s)<svg class="progress".*?data-done="(\d+)" data-dead="(\d+)" data-pending="(\d+)">.*?` +
	`class="seg-done" x="0" y="0" width="([0-9.]+)".*?class="seg-dead" x="([0-9.]+)" y="0" width="([0-9.]+)"`)

func TestBatchPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	b, st := batchFixture(t, f)

	rec := f.get("/ui/batches/" + b.ID)
	if rec.Code != 200 {
		t.Fatalf("batch page: %d %s", rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, want := range []string{
		`<title>Batch ` + b.ID + ` · work`,
		`href="../static/style.css"`, `src="../static/app.js"`, `href="../batches" class="active" aria-current="page">Batches`,
		`href="../dead"`, `id="batch-state">closed<`, `id="batch-done">2<`, `id="batch-dead">1<`, `id="batch-pending">2<`,
		`id="batch-total">5<`, `id="batch-percent">60<`, `thumbnails &lt;b&gt;for&lt;/b&gt; &#34;album&#34; 7`,
		`On complete: <span class="mono">album_done</span>`, `On success: <span class="mono">album_ok</span>`,
		`will not fire</span> <span class="hint">(a member died)`, `not fired yet</span> <span class="hint">(it fires once every member has ended)`,
		`aria-label="2 done, 1 dead, 2 pending"`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("batch page lacks %q", want)
		}
	}
	m := barRE.FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("no progress bar in:\n%s", body)
	}
	if m[1] != fmt.Sprint(st.Done) || m[2] != fmt.Sprint(st.Dead) || m[3] != fmt.Sprint(st.Pending) ||
		m[4] != "40.00" || m[5] != "40.00" || m[6] != "20.00" {
		t.Errorf("bar %q, want 2 done (40%%), 1 dead (20%% from 40%%), 2 pending", m[1:])
	}

	rec = f.get("/ui/batches")
	body = rec.Body.String()
	if rec.Code != 200 {
		t.Fatalf("batches page: %d", rec.Code)
	}
	for _, want := range []string{`<tr data-batch="` + b.ID + `">`, `href="batches/` + b.ID + `"`, `data-col="done">2<`,
		`data-col="dead">1<`, `data-col="pending">2<`, `data-col="total">5<`, `>60%<`, `href="static/style.css"`, `Page 1 of 1`} {
		if !strings.Contains(body, want) {
			t.Errorf("batches page lacks %q", want)
		}
	}
	if m := barRE.FindStringSubmatch(body); m == nil || m[4] != "40.00" {
		t.Errorf("batches page bar: %q", m)
	}
	// Every page's navigation leads to the batches.
	if body := f.get("/ui/queues").Body.String(); !strings.Contains(body, `<a href="batches">Batches</a>`) {
		t.Error("the navigation lacks the batches page")
	}

	// Once the last members end, the batch completes and its callbacks show as fired.
	wp := work.NewWorkerPool(struct{}{}, 2, f.ns, f.pool)
	wp.Job("archive", func(*work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	client := work.NewClient(f.ns, f.pool)
	eventually(t, 20*time.Second, "the batch to complete", func() bool {
		st, err := client.BatchStatus(b.ID)
		if err != nil {
			t.Fatal(err)
		}
		return st.State == "complete"
	})
	body = f.get("/ui/batches/" + b.ID).Body.String()
	for _, want := range []string{`id="batch-state">complete<`, `id="batch-percent">100<`, `<span class="badge ok">fired</span>`, "(a member died)"} {
		if !strings.Contains(body, want) {
			t.Errorf("completed batch page lacks %q", want)
		}
	}
	if strings.Contains(body, "not fired yet") {
		t.Error("a completed batch's callback shows as not yet fired")
	}
}

func TestNewProgressNeverOverflows(t *testing.T) {
	for _, tc := range []struct {
		st                  work.BatchStatus
		done, dead, pending string
		percent             int64
	}{
		{work.BatchStatus{}, "0", "0", "0", 0},
		{work.BatchStatus{Total: 3, Pending: 3}, "0.00", "0.00", "100.00", 0},
		{work.BatchStatus{Total: 3, Done: 1, Dead: 1, Pending: 1}, "33.33", "33.33", "33.33", 66},
		{work.BatchStatus{Total: 4, Done: 4}, "100.00", "0.00", "0.00", 100},
		// Damaged counts: the bar is over the parts, whatever the total says.
		{work.BatchStatus{Total: 1, Done: 3, Dead: 1, Damaged: true}, "75.00", "25.00", "0.00", 100},
		{work.BatchStatus{Total: 9, Done: -2, Dead: 1, Damaged: true}, "0.00", "100.00", "0.00", 100},
	} {
		p := newProgress(&tc.st)
		if p.DoneW != tc.done || p.DeadW != tc.dead || p.PendW != tc.pending || p.Percent != tc.percent {
			t.Errorf("%+v: %+v", tc.st, p)
		}
	}
}
