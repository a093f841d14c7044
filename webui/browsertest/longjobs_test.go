package browsertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/workqueue/work"
	"github.com/workqueue/work/webui"
)

// drawnFraction is the share of a job's progress bar that is drawn done.
func (p *tab) drawnFraction(sel string) float64 {
	p.t.Helper()
	var f float64
	p.eval(fmt.Sprintf(`(function () {
		var svg = document.querySelector(%q);
		if (!svg) { return -1; }
		return svg.querySelector("rect.seg-done").getBoundingClientRect().width / svg.getBoundingClientRect().width;
	})()`, sel), &f)
	return f
}

// A long job as the UI shows it: running, with a progress bar that moves while the page is open,
// on the job page and the workers page; a caller waiting for its result with Client.WaitJob gets it
// when it ends, and the page then says done. Keyed jobs count as queued, and a batch's page leads to
// its dead members in one click.
func TestBrowserShowsARunningJobsProgressAndItsEnd(t *testing.T) {
	ctx := newBrowser(t)
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	client := work.NewClient(ns, pool)
	enq := work.NewEnqueuer(ns, pool)

	steps := make(chan float64)
	end := make(chan struct{})
	defer func() {
		select {
		case <-end:
		default:
			close(end)
		}
	}()
	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.Job("export_report", func(j *work.Job) error {
		for {
			select {
			case f := <-steps:
				if err := j.SetProgress(f, fmt.Sprintf("table %d of 4 <orders>", int(f*4))); err != nil {
					return err
				}
			case <-end:
				return j.SetResult(map[string]interface{}{"rows": 1200, "file": "report.csv"})
			}
		}
	})
	wp.JobWithOptions("resize", work.JobOptions{MaxFails: 1}, func(j *work.Job) error {
		if j.ArgBool("fail") {
			return errors.New("corrupt image")
		}
		return nil
	})
	wp.Start()
	defer wp.Stop()

	job, err := enq.EnqueueWith("export_report", work.Q{"month": "2024-05"}, work.EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	// A caller waits for the report, as a request would.
	type waited struct {
		rec *work.JobRecord
		err error
	}
	result := make(chan waited, 1)
	go func() {
		wctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		rec, err := client.WaitJob(wctx, job.ID)
		result <- waited{rec, err}
	}()
	sendStep := func(f float64) {
		select {
		case steps <- f:
		case <-time.After(30 * time.Second):
			t.Fatal("the job did not take its step")
		}
	}
	sendStep(0.25)

	srv := httptest.NewServer(webui.NewServerWithOptions(ns, pool, "", webui.Options{RefreshInterval: time.Second}).Handler())
	defer srv.Close()
	p := &tab{t: t, ctx: ctx, dir: screenshotDir(t)}
	dialogs := watchDialogs(ctx)

	// The job page: running, in its pool, a quarter done.
	p.run(chromedp.Navigate(srv.URL+"/ui/job?id="+job.ID), chromedp.WaitVisible("#record-state", chromedp.ByID))
	p.waitText("#record-state", "running")
	p.waitText("#record-progress .pct", "25%")
	if got := p.text("#record-progress .msg"); got != "table 1 of 4 <orders>" {
		t.Errorf("the progress message shows %q", got)
	}
	if got := p.text("#record-running"); !strings.Contains(got, "attempt 1 in pool") {
		t.Errorf("the running attempt shows %q", got)
	}
	if f := p.drawnFraction("#record-progress svg.progress"); math.Abs(f-0.25) > 0.02 {
		t.Errorf("the bar is drawn %.3f done, want 0.25", f)
	}
	p.shot("job-running-25.png")

	// The handler goes on: the open page follows, without a reload.
	sendStep(0.75)
	p.waitText("#record-progress .pct", "75%")
	p.waitText("#record-progress .msg", "table 3 of 4 <orders>")
	if f := p.drawnFraction("#record-progress svg.progress"); math.Abs(f-0.75) > 0.02 {
		t.Errorf("the bar is drawn %.3f done, want 0.75", f)
	}
	p.shot("job-running-75.png")

	// The workers page shows the busy worker's progress.
	row := fmt.Sprintf(`#busy tr[data-job=%q]`, job.ID)
	p.run(chromedp.Navigate(srv.URL+"/ui/workers"), chromedp.WaitVisible("#busy", chromedp.ByID))
	p.waitText(row+` td[data-col="progress"] .pct`, "75%")
	if f := p.drawnFraction(row + ` td[data-col="progress"] svg.progress`); math.Abs(f-0.75) > 0.02 {
		t.Errorf("the workers page's bar is drawn %.3f done, want 0.75", f)
	}
	p.shot("workers-progress.png")

	// The job ends: the waiting caller gets its result, and the page says done.
	select {
	case w := <-result:
		t.Fatalf("WaitJob returned before the job ended: %+v %v", w.rec, w.err)
	default:
	}
	p.run(chromedp.Navigate(srv.URL+"/ui/job?id="+job.ID), chromedp.WaitVisible("#record-state", chromedp.ByID))
	close(end)
	select {
	case w := <-result:
		if w.err != nil || w.rec.State != "done" || !strings.Contains(string(w.rec.Result), `"rows":1200`) {
			t.Fatalf("WaitJob: %+v, %v", w.rec, w.err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("WaitJob did not return")
	}
	p.waitText("#record-state", "done")
	if got := p.text("#record-result"); !strings.Contains(got, `"rows": 1200`) {
		t.Errorf("the result shows %q", got)
	}
	p.waitText("#record-progress .pct", "75%") // the last progress stays
	p.shot("job-done.png")

	// Keyed jobs nobody serves count as queued, on the overview and in the navigation.
	for i := 0; i < 3; i++ {
		if _, err := enq.EnqueueWith("sync_tenant", work.Q{"i": i}, work.EnqueueOptions{Key: "acme"}); err != nil {
			t.Fatal(err)
		}
	}
	p.run(chromedp.Navigate(srv.URL+"/ui/"), chromedp.WaitVisible("#stat-queued", chromedp.ByID))
	p.waitText("#stat-queued", "3")
	p.waitText("#nav-queued", "3")
	p.waitText("#stat-keyed", "3")

	// A batch with a dead member: one click from its page to the member.
	b, members, err := enq.EnqueueInBatch(work.BatchOptions{Description: "thumbnails"}, []work.BatchJob{
		{Name: "resize", Args: work.Q{"n": 1}}, {Name: "resize", Args: work.Q{"n": 2, "fail": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := client.BatchStatus(b.ID)
		if err == nil && st.Dead == 1 && st.Done == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the batch did not end: %+v, %v", st, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	p.run(chromedp.Navigate(srv.URL+"/ui/batches/"+b.ID), chromedp.WaitVisible("#batch-dead-link", chromedp.ByID),
		chromedp.Click("#batch-dead-link", chromedp.ByID), chromedp.WaitVisible("#jobs", chromedp.ByID))
	var ids []string
	p.eval(`Array.prototype.map.call(document.querySelectorAll("#jobs tbody tr"), function (r) { return r.dataset.id; })`, &ids)
	if len(ids) != 1 || ids[0] != members[1].ID {
		t.Errorf("the batch's dead members list %q, want %s", ids, members[1].ID)
	}
	p.shot("batch-dead-members.png")
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d dialogs opened", n)
	}
}
