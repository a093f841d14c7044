package browsertest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/workqueue/work"
	"github.com/workqueue/work/webui"
)

// tab is a browser tab driven by a test.
type tab struct {
	t   *testing.T
	ctx context.Context
	dir string
}

// eval evaluates a script and stores its value in out.
func (p *tab) eval(js string, out interface{}) {
	p.t.Helper()
	if err := chromedp.Run(p.ctx, chromedp.Evaluate(js, out)); err != nil {
		p.t.Fatalf("evaluating %s: %v", js, err)
	}
}

// text reads an element's text in one step, so that a refresh replacing the element meanwhile
// cannot fail the read.
func (p *tab) text(sel string) string {
	p.t.Helper()
	var s string
	p.eval(fmt.Sprintf(`(function () { var e = document.querySelector(%q); return e ? e.textContent : "(missing)"; })()`, sel), &s)
	return strings.Join(strings.Fields(s), " ")
}

func (p *tab) waitText(sel, want string) {
	p.t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		got := p.text(sel)
		if got == want {
			return
		}
		if time.Now().After(deadline) {
			p.t.Fatalf("%s shows %q, want %q", sel, got, want)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// location returns the page's address once its scripts have run (see settledLocation).
func (p *tab) location() string {
	p.t.Helper()
	return settledLocation(p.ctx, p.t)
}

func (p *tab) run(actions ...chromedp.Action) {
	p.t.Helper()
	if err := chromedp.Run(p.ctx, actions...); err != nil {
		p.t.Fatal(err)
	}
}

func (p *tab) shot(name string) {
	p.t.Helper()
	var buf []byte
	p.run(chromedp.FullScreenshot(&buf, 100))
	path := filepath.Join(p.dir, name)
	if err := os.WriteFile(path, buf, 0o644); err != nil {
		p.t.Fatal(err)
	}
	p.t.Logf("screenshot: %s", path)
}

// drawnBar is a progress bar as the browser draws it: the width of each part as a share of the bar's,
// and the counts it carries.
type drawnBar struct {
	Done, Dead, Pending    float64 // drawn widths, as shares of the whole bar
	NDone, NDead, NPending int64   // the counts in its data attributes
}

// bar reads the progress bar at sel.
func (p *tab) bar(sel string) drawnBar {
	p.t.Helper()
	js := fmt.Sprintf(`(function () {
		var svg = document.querySelector(%q);
		if (!svg) { return null; }
		var w = svg.getBoundingClientRect().width;
		function part(c) { return svg.querySelector("rect." + c).getBoundingClientRect().width / w; }
		return {Done: part("seg-done"), Dead: part("seg-dead"), Pending: 1 - part("seg-done") - part("seg-dead"),
			NDone: +svg.dataset.done, NDead: +svg.dataset.dead, NPending: +svg.dataset.pending};
	})()`, sel)
	var b *drawnBar
	p.eval(js, &b)
	if b == nil {
		p.t.Fatalf("no progress bar at %s", sel)
	}
	return *b
}

// checkBar checks a drawn bar against a batch's status: its counts, and each part's width within a
// pixel's worth of its share.
func checkBar(t *testing.T, what string, b drawnBar, st *work.BatchStatus) {
	t.Helper()
	if b.NDone != st.Done || b.NDead != st.Dead || b.NPending != st.Pending {
		t.Errorf("%s: bar counts %d done, %d dead, %d pending; the status says %d, %d, %d", what,
			b.NDone, b.NDead, b.NPending, st.Done, st.Dead, st.Pending)
	}
	sum := float64(st.Done + st.Dead + st.Pending)
	for _, part := range []struct {
		name        string
		drawn, want float64
	}{{"done", b.Done, float64(st.Done) / sum}, {"dead", b.Dead, float64(st.Dead) / sum}, {"pending", b.Pending, float64(st.Pending) / sum}} {
		if math.Abs(part.drawn-part.want) > 0.01 {
			t.Errorf("%s: the %s part is drawn %.3f of the bar, want %.3f", what, part.name, part.drawn, part.want)
		}
	}
}

func TestBrowserShowsBatches(t *testing.T) {
	ctx := newBrowser(t)
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	client := work.NewClient(ns, pool)
	e := work.NewEnqueuer(ns, pool)

	// An album batch: 8 resize members that a real pool runs (one dies), 4 archive members that wait
	// in a queue no pool serves yet. A small batch that completes, its callbacks fired.
	var members []work.BatchJob
	for i := 0; i < 8; i++ {
		members = append(members, work.BatchJob{Name: "resize", Args: work.Q{"n": i, "fail": i == 5}})
	}
	for i := 0; i < 4; i++ {
		members = append(members, work.BatchJob{Name: "archive", Args: work.Q{"n": i}})
	}
	album, jobs, err := e.EnqueueInBatch(work.BatchOptions{
		Description: `Album <b>7</b> thumbnails`,
		OnComplete:  &work.BatchCallback{Name: "album_done"},
		OnSuccess:   &work.BatchCallback{Name: "album_ok"},
	}, members)
	if err != nil {
		t.Fatal(err)
	}
	small, _, err := e.EnqueueInBatch(work.BatchOptions{
		Description: "Avatars",
		OnComplete:  &work.BatchCallback{Name: "avatars_done"},
		OnSuccess:   &work.BatchCallback{Name: "avatars_ok"},
	}, []work.BatchJob{{Name: "resize", Args: work.Q{"n": 100}}, {Name: "resize", Args: work.Q{"n": 101}}})
	if err != nil {
		t.Fatal(err)
	}
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool)
	wp.JobWithOptions("resize", work.JobOptions{MaxFails: 1, KeepFinished: time.Hour}, func(j *work.Job) error {
		if j.ArgBool("fail") {
			return errors.New(`corrupt image <script>alert("x")</script>`)
		}
		return j.SetResult(work.Q{"width": 640, "n": j.ArgInt64("n")})
	})
	wp.Start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		a, err1 := client.BatchStatus(album.ID)
		s, err2 := client.BatchStatus(small.ID)
		if err := errors.Join(err1, err2); err != nil {
			t.Fatal(err)
		}
		if a.Done == 7 && a.Dead == 1 && s.State == "complete" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker pool did not settle: %+v %+v", a, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wp.Stop()

	srv := httptest.NewServer(webui.NewServerWithOptions(ns, pool, "", webui.Options{RefreshInterval: time.Second}).Handler())
	defer srv.Close()
	p := &tab{t: t, ctx: ctx, dir: screenshotDir(t)}
	dialogs := watchDialogs(ctx)

	// From the overview, the navigation leads to the batches.
	p.run(chromedp.Navigate(srv.URL+"/ui/"), chromedp.WaitVisible("#stat-queued", chromedp.ByID),
		chromedp.Click(`#nav a[href="batches"]`, chromedp.ByQuery), chromedp.WaitVisible("#batches", chromedp.ByID))
	var rows int
	p.eval(`document.querySelectorAll("#batches tbody tr").length`, &rows)
	if rows != 2 {
		t.Errorf("the batches page lists %d batches, want 2", rows)
	}
	st, err := client.BatchStatus(album.ID)
	if err != nil {
		t.Fatal(err)
	}
	row := fmt.Sprintf(`#batches tr[data-batch=%q]`, album.ID)
	for col, want := range map[string]int64{"done": st.Done, "dead": st.Dead, "pending": st.Pending, "total": st.Total} {
		if got := p.text(row + fmt.Sprintf(` td[data-col=%q]`, col)); got != strconv.FormatInt(want, 10) {
			t.Errorf("the album's %s shows %q, want %d", col, got, want)
		}
	}
	if got := p.text(row + ` [data-col="state"]`); got != "closed" {
		t.Errorf("the album's state shows %q", got)
	}
	if got := p.text(row + " td:nth-child(2)"); got != "Album <b>7</b> thumbnails" {
		t.Errorf("the album's description shows %q, want the tags as text", got)
	}
	checkBar(t, "the album's row", p.bar(row+" svg.progress"), st)
	if got := p.text(row + " td.bar .hint"); got != "66%" { // 8 of 12 ended
		t.Errorf("the album's row says %q ended, want 66%%", got)
	}
	sst, err := client.BatchStatus(small.ID)
	if err != nil {
		t.Fatal(err)
	}
	checkBar(t, "the small batch's row", p.bar(fmt.Sprintf(`#batches tr[data-batch=%q] svg.progress`, small.ID)), sst)
	p.shot("batches.png")

	// The album's page: its counts and bar, as the status has them.
	p.run(chromedp.Click(fmt.Sprintf(`a[href="batches/%s"]`, album.ID), chromedp.ByQuery), chromedp.WaitVisible("#batch-state", chromedp.ByID))
	var loc string
	p.run(chromedp.Location(&loc))
	if !strings.HasSuffix(loc, "/ui/batches/"+album.ID) {
		t.Errorf("the album's link led to %s", loc)
	}
	for sel, want := range map[string]string{
		"#batch-state": "closed", "#batch-done": fmt.Sprint(st.Done), "#batch-dead": fmt.Sprint(st.Dead),
		"#batch-pending": fmt.Sprint(st.Pending), "#batch-total": fmt.Sprint(st.Total), "#batch-percent": "66",
		"#batch-failed":               fmt.Sprintf("%d (each retry and each death of a member)", st.Failed),
		"#batch-description":          "Album <b>7</b> thumbnails",
		`li[data-kind="On complete"]`: "On complete: album_done — not fired yet (it fires once every member has ended)",
		`li[data-kind="On success"]`:  "On success: album_ok — will not fire (a member died)",
	} {
		if got := p.text(sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	checkBar(t, "the album's page", p.bar("section.progress-panel svg.progress"), st)
	// The page below ui/ has its style sheet and script: the header is laid out, and the page
	// refreshes itself.
	var display string
	p.eval(`getComputedStyle(document.querySelector("header.top")).display`, &display)
	if display != "flex" {
		t.Errorf("the batch page is unstyled: the header's display is %q", display)
	}
	p.shot("batch.png")

	// The archive members run: the open page follows the batch to its completion without a reload.
	p.eval(`window.__notReloaded = true`, nil)
	archiver := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	archiver.Job("archive", func(*work.Job) error { return nil })
	archiver.Start()
	defer archiver.Stop()
	p.waitText("#batch-state", "complete")
	var same bool
	p.eval(`window.__notReloaded === true`, &same)
	if !same {
		t.Error("the batch page reloaded instead of refreshing in place")
	}
	if st, err = client.BatchStatus(album.ID); err != nil {
		t.Fatal(err)
	}
	if st.OnCompleteFired == 0 || st.OnSuccessFired != 0 {
		t.Fatalf("the album's callbacks: %+v", st)
	}
	p.waitText("#batch-pending", "0")
	checkBar(t, "the completed album's page", p.bar("section.progress-panel svg.progress"), st)
	if got := p.text(`li[data-kind="On complete"]`); !strings.HasPrefix(got, "On complete: album_done — fired "+
		time.Unix(st.OnCompleteFired, 0).UTC().Format("2006-01-02 15:04:05 UTC")) {
		t.Errorf("the fired callback shows as %q", got)
	}
	p.shot("batch-complete.png")

	// A member's job page shows its record, and links back to its batch.
	p.run(chromedp.Navigate(srv.URL+"/ui/job?id="+jobs[0].ID), chromedp.WaitVisible("#record-state", chromedp.ByID))
	if got := p.text("#record-state"); got != "done" {
		t.Errorf("the member's record state shows %q", got)
	}
	if got := p.text("#record-result"); !strings.Contains(got, `"width": 640`) {
		t.Errorf("the member's result shows %q", got)
	}
	p.shot("job-record.png")
	p.run(chromedp.Click("#record-batch", chromedp.ByID), chromedp.WaitVisible("#batch-state", chromedp.ByID))
	p.run(chromedp.Location(&loc))
	if !strings.HasSuffix(loc, "/ui/batches/"+album.ID) {
		t.Errorf("the member's batch link led to %s", loc)
	}
	// And the batch page's navigation leads back up.
	p.run(chromedp.Click(`#nav a[href="../dead"]`, chromedp.ByQuery), chromedp.WaitVisible("#main", chromedp.ByID))
	p.run(chromedp.Location(&loc))
	if !strings.HasSuffix(loc, "/ui/dead") {
		t.Errorf("the navigation of the batch page led to %s", loc)
	}
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened: job data ran as script", n)
	}
}
