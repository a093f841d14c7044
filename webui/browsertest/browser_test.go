package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/workqueue/work"
	"github.com/workqueue/work/webui"
)

// watchDialogs counts the JavaScript dialogs the tab opens: page data that ran as script (an
// alert planted in a job's args, say) opens one.
func watchDialogs(ctx context.Context) *atomic.Int32 {
	var n atomic.Int32
	chromedp.ListenTarget(ctx, func(ev interface{}) {
		if _, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			n.Add(1)
		}
	})
	return &n
}

// chromiumPath finds a Chromium or Chrome binary: $WORK_CHROMIUM, else the usual names on PATH.
func chromiumPath() string {
	if p := os.Getenv("WORK_CHROMIUM"); p != "" {
		if p, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// newBrowser starts a headless Chromium with a fresh profile and no network use of its own.
func newBrowser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath()
	if path == "" {
		if os.Getenv("CI") != "" {
			t.Fatal("Chromium is not installed, and CI must run the browser test: run scripts/ensure-chromium.sh")
		}
		t.Skip("Chromium is not installed (scripts/ensure-chromium.sh installs it): skipping the browser test")
	}
	// A fresh profile, removed once the browser is gone (its helper processes may still be writing
	// to it for a moment after the browser exits).
	profile, err := os.MkdirTemp("", "work-chromium-profile-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for i := 0; i < 50; i++ {
			if os.RemoveAll(profile) == nil {
				return
			}
			time.Sleep(100 * time.Millisecond)
		}
	})
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-extensions", true),
		chromedp.Flag("disable-default-apps", true),
		chromedp.Flag("metrics-recording-only", true),
		chromedp.Flag("hide-scrollbars", true),
		chromedp.Flag("mute-audio", true),
		chromedp.UserDataDir(profile),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancelAlloc)
	ctx, cancelCtx := chromedp.NewContext(actx, chromedp.WithErrorf(func(format string, args ...interface{}) {
		// Newer browsers send protocol values this client does not know; such events are skipped.
		if msg := fmt.Sprintf(format, args...); !strings.Contains(msg, "could not unmarshal event") {
			t.Logf("chromedp: %s", msg)
		}
	}))
	t.Cleanup(cancelCtx)
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	t.Cleanup(cancel)
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("starting %s: %v", path, err)
	}
	return ctx
}

// screenshotDir is where the browser test saves its screenshots: $WORK_SCREENSHOT_DIR, else a
// temporary directory.
func screenshotDir(t *testing.T) string {
	if d := os.Getenv("WORK_SCREENSHOT_DIR"); d != "" {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		return d
	}
	return t.TempDir()
}

func TestBrowserShowsCountsAndRetriesADeadJob(t *testing.T) {
	ctx := newBrowser(t)
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	client := work.NewClient(ns, pool)

	// A real worker pool produces the jobs of every state: successes, failures waiting for a retry,
	// and dead jobs.
	wp := work.NewWorkerPool(struct{}{}, 4, ns, pool)
	wp.Job("send_email", func(*work.Job) error { return nil })
	wp.JobWithOptions("charge_card", work.JobOptions{MaxFails: 1}, func(*work.Job) error {
		return errors.New(`card declined <script>alert("x")</script>`)
	})
	wp.JobWithOptions("sync_account", work.JobOptions{MaxFails: 5, Backoff: func(*work.Job) int64 { return 3600 }},
		func(*work.Job) error { return errors.New("upstream timeout") })
	e := work.NewEnqueuer(ns, pool)
	enqueue := func(name string, n int) {
		for i := 0; i < n; i++ {
			if _, err := e.Enqueue(name, work.Q{"n": i, "note": "<b>not bold</b>"}); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue("send_email", 12)
	enqueue("charge_card", 3)
	enqueue("sync_account", 2)
	wp.Start()
	deadline := time.Now().Add(30 * time.Second)
	for {
		sum, err := client.Summary()
		if err != nil {
			t.Fatal(err)
		}
		if sum.Dead == 3 && sum.Retry == 2 && sum.Queued == 0 && sum.InFlight == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the worker pool did not settle: %+v", sum)
		}
		time.Sleep(20 * time.Millisecond)
	}
	wp.Stop()
	// Jobs no pool serves stay queued.
	enqueue("export_report", 5)

	srv := httptest.NewServer(webui.NewServerWithOptions(ns, pool, "", webui.Options{RefreshInterval: time.Second}).Handler())
	defer srv.Close()
	dir := screenshotDir(t)

	dialogs := watchDialogs(ctx)

	// text reads an element's text in one step, so that a refresh replacing the element meanwhile
	// cannot fail the read.
	text := func(sel string) string {
		t.Helper()
		var s string
		js := fmt.Sprintf(`(function () { var e = document.querySelector(%q); return e ? e.textContent : "(missing)"; })()`, sel)
		if err := chromedp.Run(ctx, chromedp.Evaluate(js, &s)); err != nil {
			t.Fatalf("reading %s: %v", sel, err)
		}
		return strings.TrimSpace(s)
	}
	waitText := func(sel, want string) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for {
			got := text(sel)
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s shows %q, want %q", sel, got, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	shot := func(name string) {
		t.Helper()
		var buf []byte
		if err := chromedp.Run(ctx, chromedp.FullScreenshot(&buf, 100)); err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, buf, 0o644); err != nil {
			t.Fatal(err)
		}
		t.Logf("screenshot: %s", p)
	}

	// The overview shows the counts.
	if err := chromedp.Run(ctx, chromedp.Navigate(srv.URL+"/"), chromedp.WaitVisible("#stat-dead", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	var loc string
	if err := chromedp.Run(ctx, chromedp.Location(&loc)); err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(loc, "/ui/") {
		t.Errorf("the root led to %s, want the overview at /ui/", loc)
	}
	for sel, want := range map[string]string{
		"#stat-queued": "5", "#stat-dead": "3", "#stat-retry": "2", "#stat-scheduled": "0",
		"#stat-processed": "12", "#stat-failed": "5", "#nav-dead": "3",
		`tr[data-queue="export_report"] td[data-col="count"]`: "5",
	} {
		if got := text(sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	var bars int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("figure.chart rect").length`, &bars)); err != nil {
		t.Fatal(err)
	}
	if bars == 0 {
		t.Error("the throughput chart has no bars")
	}
	shot("overview.png")

	// The page refreshes itself: a job that dies now shows up without a reload.
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__notReloaded = true`, nil)); err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "ZADD", ns+":dead", time.Now().Unix(),
		jobJSON(t, &work.Job{Name: "sync_account", ID: "late1", EnqueuedAt: 1, Fails: 5, LastErr: "gave up", FailedAt: 1}))
	waitText("#stat-dead", "4")
	var same bool
	if err := chromedp.Run(ctx, chromedp.Evaluate(`window.__notReloaded === true`, &same)); err != nil {
		t.Fatal(err)
	}
	if !same {
		t.Error("the page reloaded instead of refreshing in place")
	}

	// Refreshing pauses at a click on its button (so that the clicks below hit elements no refresh
	// replaces), and stays paused on the next pages.
	if err := chromedp.Run(ctx, chromedp.Click("#refresh-toggle", chromedp.ByID)); err != nil {
		t.Fatal(err)
	}
	waitText("#live", "paused")
	waitText("#refresh-toggle", "Resume refresh")

	// The dead list: retry one charge_card job with its button.
	dead, _, err := client.DeadJobs(1)
	if err != nil {
		t.Fatal(err)
	}
	var target *work.DeadJob
	for _, d := range dead {
		if d.Name == "charge_card" {
			target = d
			break
		}
	}
	if target == nil {
		t.Fatal("no dead charge_card job")
	}
	if err := chromedp.Run(ctx,
		chromedp.Click(`#nav a[href="dead"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#jobs", chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	var rows int
	if err := chromedp.Run(ctx, chromedp.Evaluate(`document.querySelectorAll("#jobs tbody tr").length`, &rows)); err != nil {
		t.Fatal(err)
	}
	if rows != 4 {
		t.Errorf("the dead list shows %d jobs, want 4", rows)
	}
	waitText("#live", "paused") // on the next page too
	if got := text(fmt.Sprintf(`tr[data-id=%q] td.err`, target.ID)); !strings.Contains(got, `<script>alert("x")</script>`) {
		t.Errorf("the error shows as %q, want the script tag as text", got)
	}
	shot("dead-before.png")
	button := fmt.Sprintf(`button[data-op="retry_dead"][data-id=%q]`, target.ID)
	if err := chromedp.Run(ctx,
		chromedp.Click(button, chromedp.ByQuery),
		chromedp.WaitVisible("#flash", chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	if got := text("#flash"); got != "The job is back in its queue." {
		t.Errorf("flash %q", got)
	}
	queued := rStrings(t, pool, "LRANGE", ns+":jobs:charge_card", 0, -1)
	if len(queued) != 1 || !strings.Contains(queued[0], target.ID) {
		t.Fatalf("charge_card queue after the click: %q, want the retried job", queued)
	}
	if n := rInt(t, pool, "ZCARD", ns+":dead"); n != 3 {
		t.Errorf("dead set holds %d jobs after the retry, want 3", n)
	}
	waitText("#total", "3")
	if loc = settledLocation(ctx, t); strings.Contains(loc, "done=") {
		t.Errorf("the outcome stays in the address %s, so a reload would show it again", loc)
	}
	shot("dead-after.png")

	// The job page of a dead job shows its error and args as text.
	var other string
	for _, d := range dead {
		if d.Name == "charge_card" && d.ID != target.ID {
			other = d.ID
		}
	}
	if err := chromedp.Run(ctx,
		chromedp.Navigate(srv.URL+"/ui/job?id="+other),
		chromedp.WaitVisible("#job-state", chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	if got := text("#job-args"); !strings.Contains(got, "<b>not bold</b>") {
		t.Errorf("job args show as %q", got)
	}
	shot("job.png")

	// The periodic page lists what a live pool declares.
	periodic := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	periodic.Job("nightly_digest", func(*work.Job) error { return nil })
	periodic.PeriodicallyEnqueue("0 30 2 * * *", "nightly_digest")
	periodic.Start()
	defer periodic.Stop()
	if err := chromedp.Run(ctx,
		chromedp.Click(`#nav a[href="periodic"]`, chromedp.ByQuery),
		chromedp.WaitVisible("#periodic", chromedp.ByID),
	); err != nil {
		t.Fatal(err)
	}
	row := `#periodic tr[data-job="nightly_digest"]`
	if got := text(row + " td:nth-child(2)"); got != "0 30 2 * * *" {
		t.Errorf("the periodic job's spec shows as %q", got)
	}
	pjs, err := client.PeriodicJobs()
	if err != nil || len(pjs) != 1 {
		t.Fatalf("periodic jobs %+v, %v", pjs, err)
	}
	next := time.Unix(pjs[0].NextRunAt, 0).UTC().Format("2006-01-02 15:04:05 UTC")
	if got := text(row + " td:nth-child(3)"); !strings.HasPrefix(got, next+" (in ") {
		t.Errorf("the periodic job's next run shows as %q, want %s and how far ahead", got, next)
	}
	t.Logf("periodic page row: %q", text(row))
	shot("periodic.png")
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened: job data ran as script", n)
	}
}

// settledLocation returns the page's address once its scripts have run: app.js is deferred, so a
// page whose server-rendered content is already shown may not have dropped an action's outcome from
// its address yet.
func settledLocation(ctx context.Context, t *testing.T) string {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var ready string
		if err := chromedp.Run(ctx, chromedp.Evaluate(`document.readyState`, &ready)); err != nil {
			t.Fatal(err)
		}
		if ready == "complete" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the page is still %q", ready)
		}
		time.Sleep(20 * time.Millisecond)
	}
	var loc string
	if err := chromedp.Run(ctx, chromedp.Location(&loc)); err != nil {
		t.Fatal(err)
	}
	return loc
}
