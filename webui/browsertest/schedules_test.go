package browsertest

import (
	"context"
	"errors"
	"fmt"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/workqueue/work"
	"github.com/workqueue/work/webui"
)

// dialogLog accepts the confirmations the tab asks for (a form with data-confirm) and keeps what
// every dialog said: one that is not a confirmation is page data that ran as script.
type dialogLog struct {
	mu   sync.Mutex
	seen []string // "<type>: <message>"
}

func acceptDialogs(ctx context.Context) *dialogLog {
	l := &dialogLog{}
	chromedp.ListenTarget(ctx, func(ev interface{}) {
		if d, ok := ev.(*page.EventJavascriptDialogOpening); ok {
			l.mu.Lock()
			l.seen = append(l.seen, d.Type.String()+": "+d.Message)
			l.mu.Unlock()
			go chromedp.Run(ctx, page.HandleJavaScriptDialog(d.Type == page.DialogTypeConfirm))
		}
	})
	return l
}

func (l *dialogLog) list() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.seen...)
}

func TestBrowserManagesSchedules(t *testing.T) {
	ctx := newBrowser(t)
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	client := work.NewClient(ns, pool)

	// Schedules of customers (one ID holds HTML), a record another program wrote, and a live pool
	// that declares a periodic job in code. No pool serves report, so the jobs it gets stay waiting.
	htmlID := "report:initech <b>labs</b>"
	err := client.SetSchedules([]work.Schedule{
		{ID: "report:acme", Spec: "0 0 9 * * MON", Location: "Europe/Berlin", JobName: "report", Key: "acme",
			Args: map[string]interface{}{"customer": "acme"}},
		{ID: "report:globex", Spec: "0 0 9 * * MON", Location: "America/New_York", JobName: "report", Key: "globex"},
		{ID: htmlID, Spec: "@daily", JobName: "report", Key: "initech"},
		{ID: "digest", Spec: "0 30 2 * * *", JobName: "digest"},
	})
	if err != nil {
		t.Fatal(err)
	}
	rdo(t, pool, "HSET", ns+":schedules", "broken", "not a record")
	periodic := work.NewWorkerPool(struct{}{}, 1, ns, pool)
	periodic.Job("nightly_digest", func(*work.Job) error { return nil })
	periodic.PeriodicallyEnqueue("0 30 2 * * *", "nightly_digest")
	periodic.Start()
	defer periodic.Stop()
	periodicID := "periodic:nightly_digest:0 30 2 * * *"

	srv := httptest.NewServer(webui.NewServerWithOptions(ns, pool, "", webui.Options{RefreshInterval: time.Second}).Handler())
	defer srv.Close()
	p := &tab{t: t, ctx: ctx, dir: screenshotDir(t)}
	dialogs := acceptDialogs(ctx)
	rows := func() []string {
		t.Helper()
		var ids []string
		p.eval(`Array.from(document.querySelectorAll("#schedules tbody tr")).map(function (r) { return r.dataset.id; })`, &ids)
		return ids
	}

	// The navigation leads to the list: the periodic job first, then the schedules by ID.
	p.run(chromedp.Navigate(srv.URL+"/ui/"), chromedp.Click(`#nav a[href="schedules"]`, chromedp.ByQuery), chromedp.WaitVisible("#schedules", chromedp.ByID))
	want := []string{periodicID, "broken", "digest", "report:acme", "report:globex", htmlID}
	if got := rows(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the list shows %q, want %q", got, want)
	}
	row := func(id string) string { return fmt.Sprintf(`#schedules tr[data-id=%q]`, id) }
	for sel, want := range map[string]string{
		"#total": "5",
		row(periodicID) + ` td[data-col="status"]`:    "in code",
		row("broken") + ` td[data-col="status"]`:      `damaged starts "not a record", want [1,`,
		row("report:acme") + ` td[data-col="status"]`: "active",
		row("report:acme") + ` td[data-col="spec"]`:   "0 0 9 * * MON Europe/Berlin",
		row("report:acme") + ` td[data-col="key"]`:    "acme",
		row(htmlID) + ` td[data-col="id"]`:            htmlID,
	} {
		if got := p.text(sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	acme, err := client.Schedule("report:acme")
	if err != nil {
		t.Fatal(err)
	}
	next := time.Unix(acme.NextRun, 0).UTC().Format("2006-01-02 15:04:05 UTC")
	if got := p.text(row("report:acme") + ` td[data-col="next"]`); !strings.HasPrefix(got, next+" (in ") {
		t.Errorf("report:acme's next run shows %q, want %s and how far ahead", got, next)
	}
	var buttons int
	p.eval(fmt.Sprintf(`document.querySelectorAll(%q).length`, row(periodicID)+" button"), &buttons)
	if buttons != 0 {
		t.Error("the periodic job declared in code has buttons")
	}
	p.shot("schedules.png")

	// The list refreshes itself: a schedule set meanwhile shows up.
	if err := client.SetSchedule(work.Schedule{ID: "report:umbrella", Spec: "@daily", JobName: "report", Key: "umbrella"}); err != nil {
		t.Fatal(err)
	}
	p.waitText(row("report:umbrella")+` td[data-col="status"]`, "active")
	p.waitText("#total", "6")

	// Search: the IDs that start with the text typed.
	p.run(chromedp.SendKeys("#q", "report:", chromedp.ByID), chromedp.Submit("#q", chromedp.ByID),
		chromedp.WaitVisible(`form.search a[href="schedules"]`, chromedp.ByQuery))
	want = []string{"report:acme", "report:globex", htmlID, "report:umbrella"}
	if got := rows(); strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("the search for report: shows %q, want %q", got, want)
	}
	p.run(chromedp.SetValue("#q", "report:acme", chromedp.ByID), chromedp.Submit("#q", chromedp.ByID))
	p.waitText("#schedules tbody tr:first-child td[data-col=\"id\"]", "report:acme")
	var n int
	p.eval(`document.querySelectorAll("#schedules tbody tr").length`, &n)
	if n != 1 {
		t.Errorf("the search for report:acme shows %d rows", n)
	}

	// Its view: definition, next ticks in its zone.
	p.run(chromedp.Click(row("report:acme")+` td[data-col="id"] a`, chromedp.ByQuery), chromedp.WaitVisible("#schedule-detail", chromedp.ByID))
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	for sel, want := range map[string]string{"#schedule-id": "report:acme", "#schedule-zone": "Europe/Berlin", "#schedule-key": "acme",
		"#schedule-status": "active", "#schedule-ticks tbody tr:first-child td:nth-child(2)": time.Unix(acme.NextTick, 0).In(berlin).Format("2006-01-02 15:04:05 MST")} {
		if got := p.text(sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	p.eval(`document.querySelectorAll("#schedule-ticks tbody tr").length`, &n)
	if n != 5 {
		t.Errorf("the view lists %d next ticks, want 5", n)
	}
	p.shot("schedule.png")

	// Pause, resume and run now, with its buttons.
	state := func() *work.ScheduleInfo {
		t.Helper()
		in, err := client.Schedule("report:acme")
		if err != nil {
			t.Fatal(err)
		}
		return in
	}
	p.run(chromedp.Click(`button[data-op="pause_schedule"]`, chromedp.ByQuery))
	p.waitText("#flash", "The schedule is paused: none of its ticks is enqueued until it is resumed.")
	p.waitText("#schedule-status", "paused none of its ticks is enqueued until it is resumed, from its first tick after that")
	if !state().Paused {
		t.Fatal("the click on pause did not pause the schedule")
	}
	p.run(chromedp.Click(`button[data-op="resume_schedule"]`, chromedp.ByQuery))
	p.waitText("#flash", "The schedule is resumed from its next tick; the ticks that fell while it was paused are not enqueued.")
	p.waitText("#schedule-status", "active")
	if state().Paused {
		t.Fatal("the click on resume did not resume the schedule")
	}
	p.run(chromedp.Click(`button[data-op="run_schedule"]`, chromedp.ByQuery))
	p.waitText("#flash", "The schedule's job is enqueued.")
	if k, err := client.Key("report", "acme"); err != nil || k.Waiting != 1 {
		t.Errorf("after the click on run now, key acme has %+v, %v: want its job waiting", k, err)
	}
	if loc := p.location(); strings.Contains(loc, "done=") || !strings.Contains(loc, "id=report") {
		t.Errorf("after the action the address is %s: want the schedule's view without the outcome", loc)
	}

	// Delete, after the confirmation: back to the list, without it.
	p.run(chromedp.Click(`button[data-op="delete_schedule"]`, chromedp.ByQuery))
	p.waitText("#flash", "The schedule is deleted; its jobs already enqueued stay.")
	p.run(chromedp.WaitVisible("#schedules", chromedp.ByID))
	if _, err := client.Schedule("report:acme"); !errors.Is(err, work.ErrScheduleNotFound) {
		t.Errorf("after the click on delete: %v", err)
	}
	p.waitText("#total", "5")
	for _, id := range rows() {
		if id == "report:acme" {
			t.Error("the deleted schedule is still listed")
		}
	}
	if got := dialogs.list(); len(got) != 1 || got[0] != "confirm: Delete this schedule? Its jobs already enqueued stay." {
		t.Errorf("dialogs: %q, want the one confirmation of the delete", got)
	}
	p.shot("schedules-after.png")
}
