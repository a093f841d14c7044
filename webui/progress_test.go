package webui

import (
	"strings"
	"testing"

	"github.com/workqueue/work"
)

// pageHas fetches a page and checks that it holds every string of want.
func (f *fixture) pageHas(target string, want ...string) string {
	f.t.Helper()
	rec := f.get(target)
	if rec.Code != 200 {
		f.t.Fatalf("%s: %d %s", target, rec.Code, rec.Body)
	}
	body := rec.Body.String()
	for _, w := range want {
		if !strings.Contains(body, w) {
			f.t.Errorf("%s lacks %q", target, w)
		}
	}
	return body
}

func TestRunningJobWithProgressOnTheJobAndWorkersPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seed()
	// A tracked job that runs in pool1's worker w2, 42% through, as the pool writes it.
	rdo(t, f.pool, "HSET", f.key("job:run1"), "name", "export", "state", "running", "enqueued_at", f.now-60,
		"started_at", f.now-30, "attempt", 2, "attempts", 1, "pool", "pool1",
		"progress", "0.42", "progress_msg", "table <users>", "progress_at", f.now-1)
	rdo(t, f.pool, "HSET", f.key("worker:w2"), "job_name", "export", "job_id", "run1", "started_at", f.now-30,
		"args", `{}`, "progress", "0.42", "progress_msg", "table <users>", "progress_at", f.now-1)

	f.pageHas("/ui/job?id=run1", `id="record-state">running<`, `id="record-running"`, `attempt 2 in pool`,
		`id="record-progress"`, `data-fraction="0.42"`, `width="42.00"`, `>42%<`, `table &lt;users&gt;`, `id="record-started"`)
	body := f.pageHas("/ui/workers", `data-col="progress"`, `data-fraction="0.42"`, `>42%<`)
	// The other busy worker reported no progress.
	if i := strings.Index(body, `<tr data-job="busy1">`); i < 0 || !strings.Contains(body[i:], `data-col="progress"><span class="hint">-</span>`) {
		t.Errorf("the worker without progress: %q", body)
	}

	var busy []*work.WorkerObservation
	decode(t, f.get("/busy_workers"), 200, &busy)
	var seen bool
	for _, ob := range busy {
		if ob.JobID == "run1" {
			seen = ob.Progress != nil && ob.Progress.Fraction == 0.42 && ob.Progress.Message == "table <users>"
		}
	}
	if !seen {
		t.Errorf("/busy_workers: %+v", busy)
	}
	var a jobAnswer
	decode(t, f.get("/job?id=run1"), 200, &a)
	if a.Record == nil || a.Record.State != "running" || a.Record.Attempt != 2 || a.Record.Progress == nil || a.Record.Progress.Fraction != 0.42 {
		t.Errorf("/job: %+v", a.Record)
	}
}

func TestKeyedJobsCountAsQueued(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	e := work.NewEnqueuer(f.ns, f.pool)
	for i := 0; i < 3; i++ {
		if _, err := e.EnqueueWith("sync", work.Q{"i": i}, work.EnqueueOptions{Key: "tenant-1"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Enqueue("sync", nil); err != nil {
		t.Fatal(err)
	}
	f.pageHas("/ui/", `id="stat-queued">4<`, `id="stat-keyed">3<`, `id="nav-queued">4<`,
		`data-col="count" title="1 in the name's queue, 3 in its keys' queues">4<`)
	var sum work.Summary
	decode(t, f.get("/summary"), 200, &sum)
	if sum.Queued != 4 || sum.Keyed != 3 {
		t.Errorf("/summary: %+v", sum)
	}
}

func TestBatchPageLeadsToItsDeadMembers(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	b, _, members := batchFixtureJobs(t, f)
	f.pageHas("/ui/batches/"+b.ID, `id="batch-dead-link" href="../dead?q=`+b.ID+`"`)
	// The link lists the dead member, and only it.
	dead := f.pageHas("/ui/dead?q="+b.ID, members[2].ID)
	for _, m := range []*work.Job{members[0], members[1], members[3]} {
		if strings.Contains(dead, m.ID) {
			t.Errorf("the dead list of the batch shows member %s", m.ID)
		}
	}
	// Another batch's dead jobs are not there.
	rdo(t, f.pool, "ZADD", f.key("dead"), f.now, jobJSON(t, &work.Job{Name: "resize", ID: "other", Batch: "another-batch"}))
	if strings.Contains(f.pageHas("/ui/dead?q="+b.ID), `"other"`) {
		t.Error("the dead list of the batch shows another batch's job")
	}
}
