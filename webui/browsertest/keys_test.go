package browsertest

import (
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/workqueue/work"
	"github.com/workqueue/work/webui"
)

func TestBrowserManagesKeys(t *testing.T) {
	ctx := newBrowser(t)
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	client := work.NewClient(ns, pool)
	e := work.NewEnqueuer(ns, pool)

	// Keyed jobs of sync_account that no pool serves, so they stay waiting: five tenants with
	// backlogs of different sizes (one key holds HTML), and two jobs without a key.
	tenants := []struct {
		key  string
		jobs int
	}{{"acme", 12}, {"globex", 7}, {"initech <b>labs</b>", 4}, {"umbrella", 2}, {"hooli", 1}}
	for _, tn := range tenants {
		for i := 0; i < tn.jobs; i++ {
			if _, err := e.EnqueueWith("sync_account", work.Q{"n": i}, work.EnqueueOptions{Key: tn.key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := 0; i < 2; i++ {
		if _, err := e.Enqueue("sync_account", work.Q{"n": i}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := e.Enqueue("send_email", nil); err != nil {
		t.Fatal(err)
	}

	srv := httptest.NewServer(webui.NewServerWithOptions(ns, pool, "", webui.Options{RefreshInterval: time.Second}).Handler())
	defer srv.Close()
	p := &tab{t: t, ctx: ctx, dir: screenshotDir(t)}
	dialogs := watchDialogs(ctx)

	// The queues page links the name that has keyed jobs, and sums them up.
	p.run(chromedp.Navigate(srv.URL+"/ui/queues"), chromedp.WaitVisible("#key-stats", chromedp.ByID))
	stat := `#key-stats tr[data-keyed="sync_account"]`
	for col, want := range map[string]string{"waiting": "26", "waiting-keys": "5", "running": "0", "largest": "acme 12 waiting"} {
		if got := p.text(stat + fmt.Sprintf(` td[data-col=%q]`, col)); got != want {
			t.Errorf("the keyed summary's %s shows %q, want %q", col, got, want)
		}
	}
	var links int
	p.eval(`document.querySelectorAll('#queues tr[data-queue="send_email"] a').length`, &links)
	if links != 0 {
		t.Error("a name without keyed jobs links to keys")
	}
	p.shot("queues-keyed.png")

	// The name's link leads to its keys, busiest first.
	p.run(chromedp.Click(`#queues tr[data-queue="sync_account"] a`, chromedp.ByQuery), chromedp.WaitVisible("#keys", chromedp.ByID))
	var order []string
	p.eval(`Array.from(document.querySelectorAll("#keys tbody tr")).map(function (r) { return r.dataset.key; })`, &order)
	var want []string
	for _, tn := range tenants {
		want = append(want, tn.key)
	}
	if strings.Join(order, "|") != strings.Join(want, "|") {
		t.Errorf("the keys page lists %q, want %q", order, want)
	}
	for _, tn := range tenants {
		if got := p.text(fmt.Sprintf(`#keys tr[data-key=%q] td[data-col="waiting"]`, tn.key)); got != strconv.Itoa(tn.jobs) {
			t.Errorf("key %s shows %s waiting, want %d", tn.key, got, tn.jobs)
		}
	}
	for sel, want := range map[string]string{"#stat-waiting": "26", "#stat-waiting-keys": "5", "#stat-largest .num": "12",
		"#stat-largest .label": "largest backlog: acme", "#page-info": "Page 1 of 1", "#total": "5"} {
		if got := p.text(sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}
	p.shot("keys.png")

	// The search box finds one key; it has the focus, so no refresh replaces what is typed.
	key := "initech <b>labs</b>"
	p.run(chromedp.SendKeys("#q", key, chromedp.ByID), chromedp.Submit("#q", chromedp.ByID), chromedp.WaitVisible("#key-name", chromedp.ByID))
	for sel, want := range map[string]string{"#key-name": key, "#key-waiting": "4 jobs", "#key-running": "0 jobs"} {
		if got := p.text(sel); got != want {
			t.Errorf("%s shows %q, want %q", sel, got, want)
		}
	}

	// Pause it with its button.
	p.run(chromedp.Click(`button[data-op="pause_key"]`, chromedp.ByQuery), chromedp.WaitVisible("#flash", chromedp.ByID))
	if got := p.text("#flash"); got != "The key is paused: its jobs wait until it is resumed." {
		t.Errorf("flash %q", got)
	}
	p.waitText("#key-status", "paused its jobs wait until it is resumed")
	if k, err := client.Key("sync_account", key); err != nil || !k.Paused {
		t.Fatalf("after the click on pause: %+v, %v", k, err)
	}
	if loc := p.location(); strings.Contains(loc, "done=") || !strings.Contains(loc, "q=") {
		t.Errorf("after the action the address is %s: want the key's view without the outcome", loc)
	}

	// Set overrides. A form being filled in survives the refreshes, even without the focus.
	p.run(chromedp.SendKeys("#concurrency", "2", chromedp.ByID), chromedp.SendKeys("#rate", "10/1m", chromedp.ByID),
		chromedp.SendKeys("#weight", "3", chromedp.ByID), chromedp.Blur("#weight", chromedp.ByID))
	time.Sleep(2500 * time.Millisecond) // two refresh intervals
	var filled []string
	p.eval(`["concurrency", "rate", "weight"].map(function (id) { return document.getElementById(id).value; })`, &filled)
	if strings.Join(filled, " ") != "2 10/1m 3" {
		t.Fatalf("a refresh undid the form: its fields hold %q", filled)
	}
	p.shot("key-form.png")
	p.run(chromedp.Click(`#key-limits button[type="submit"]`, chromedp.ByQuery))
	p.waitText("#flash", "The key's overrides are set.")
	k, err := client.Key("sync_account", key)
	if err != nil {
		t.Fatal(err)
	}
	wantLimits := work.KeyLimits{Concurrency: 2, RateLimit: work.RateLimit{Jobs: 10, Period: time.Minute}, Weight: 3}
	if k.Limits != wantLimits || !k.Paused {
		t.Errorf("after saving the overrides: %+v", k)
	}
	p.waitText("#key-overrides", "2 at once 10 per 1m weight 3")
	var values []string
	p.eval(`["concurrency", "rate", "weight", "max_waiting"].map(function (id) { return document.getElementById(id).value; })`, &values)
	if strings.Join(values, "|") != "2|10/1m|3|" {
		t.Errorf("the form shows the overrides as %q", values)
	}
	p.shot("key.png")

	// Back on the list the key shows paused, with its overrides; the page goes on refreshing.
	p.run(chromedp.Click(`a[href="keys?name=sync_account"]`, chromedp.ByQuery), chromedp.WaitVisible("#keys", chromedp.ByID))
	row := fmt.Sprintf(`#keys tr[data-key=%q]`, key)
	if got := p.text(row + ` td[data-col="status"]`); got != "paused" {
		t.Errorf("the paused key's status shows %q", got)
	}
	if got := p.text(row + ` td[data-col="overrides"]`); got != "2 at once 10 per 1m weight 3" {
		t.Errorf("the key's overrides show as %q", got)
	}
	if _, err := e.EnqueueWith("sync_account", nil, work.EnqueueOptions{Key: "hooli"}); err != nil {
		t.Fatal(err)
	}
	p.waitText(`#keys tr[data-key="hooli"] td[data-col="waiting"]`, "2")
	p.waitText("#stat-paused", "1")
	p.shot("keys-after.png")
	if n := dialogs.Load(); n != 0 {
		t.Errorf("%d JavaScript dialogs opened: a key ran as script", n)
	}
}
