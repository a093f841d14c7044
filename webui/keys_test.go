package webui

import (
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// seedKeys enqueues keyed jobs of "sync" that no pool serves, so they stay waiting: 5 of acme, 3 of
// globex, 1 of initech; and marks one job of the key busy as running (as a pool that fetched it
// would), so that busy has a job running and none waiting.
func (f *fixture) seedKeys() {
	t := f.t
	e := work.NewEnqueuer(f.ns, f.pool)
	for key, n := range map[string]int{"acme": 5, "globex": 3, "initech": 1} {
		for i := 0; i < n; i++ {
			if _, err := e.EnqueueWith("sync", work.Q{"i": i}, work.EnqueueOptions{Key: key}); err != nil {
				t.Fatal(err)
			}
		}
	}
	rdo(t, f.pool, "HSET", f.key("keyed:sync:running"), "busy", 1)
}

// keysAnswer is the answer of GET /keys/<name>.
type keysAnswer struct {
	Count int64           `json:"count"`
	Keys  []*work.KeyInfo `json:"keys"`
}

func keyNames(keys []*work.KeyInfo) []string {
	var out []string
	for _, k := range keys {
		out = append(out, k.Key)
	}
	return out
}

func TestKeyEndpoints(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	var stats []*work.KeyStat
	decode(t, f.get("/key_stats"), 200, &stats)
	if stats == nil || len(stats) != 0 {
		t.Errorf("/key_stats of a namespace without keyed jobs: %s, want []", f.get("/key_stats").Body)
	}
	f.seedKeys()

	decode(t, f.get("/key_stats"), 200, &stats)
	want := work.KeyStat{JobName: "sync", Waiting: 9, WaitingKeys: 3, Running: 1, RunningKeys: 1, LargestBacklog: 5, LargestBacklogKey: "acme"}
	if len(stats) != 1 || *stats[0] != want {
		t.Errorf("/key_stats: %s", f.get("/key_stats").Body)
	}
	var page keysAnswer
	decode(t, f.get("/keys/sync"), 200, &page)
	if page.Count != 4 || strings.Join(keyNames(page.Keys), ",") != "acme,globex,initech,busy" ||
		page.Keys[0].Waiting != 5 || page.Keys[3].Running != 1 || page.Keys[3].Waiting != 0 {
		t.Errorf("/keys/sync: %s", f.get("/keys/sync").Body)
	}
	raw := f.get("/keys/sync?page=2").Body.String()
	decode(t, f.get("/keys/sync?page=2"), 200, &page)
	if page.Count != 4 || len(page.Keys) != 0 || !strings.Contains(raw, `"keys": []`) {
		t.Errorf("/keys/sync?page=2: %s", raw)
	}
	decode(t, f.get("/keys/nothing"), 200, &page)
	if page.Count != 0 || len(page.Keys) != 0 {
		t.Errorf("/keys/nothing: %+v", page)
	}
	var k work.KeyInfo
	decode(t, f.get("/key/sync?key=acme"), 200, &k)
	if k.Key != "acme" || k.Waiting != 5 || k.Paused {
		t.Errorf("/key/sync?key=acme: %+v", k)
	}

	// The actions, with the key in the query or in a form body.
	client := work.NewClient(f.ns, f.pool)
	key := func(name string) *work.KeyInfo {
		t.Helper()
		k, err := client.Key("sync", name)
		if err != nil {
			t.Fatal(err)
		}
		return k
	}
	var status map[string]string
	decode(t, f.post("/pause_key/sync?key=acme"), 200, &status)
	if status["status"] != "ok" || !key("acme").Paused {
		t.Errorf("pause_key: %v, key %+v", status, key("acme"))
	}
	decode(t, f.do("POST", "/unpause_key/sync", strings.NewReader("key=acme"), nil), 200, &status)
	if key("acme").Paused {
		t.Error("unpause_key left the key paused")
	}
	decode(t, f.post("/set_key_limits/sync?key=acme&concurrency=2&rate=10/1m&weight=3&max_waiting=none"), 200, &status)
	wantLimits := work.KeyLimits{Concurrency: 2, RateLimit: work.RateLimit{Jobs: 10, Period: time.Minute}, Weight: 3, MaxWaiting: work.KeyNoLimit}
	if got := key("acme").Limits; got != wantLimits {
		t.Errorf("set_key_limits: %+v, want %+v", got, wantLimits)
	}
	// Setting replaces every override.
	decode(t, f.post("/set_key_limits/sync?key=acme&rate=5/s"), 200, &status)
	if got := key("acme").Limits; got != (work.KeyLimits{RateLimit: work.RateLimit{Jobs: 5, Period: time.Second}}) {
		t.Errorf("set_key_limits again: %+v", got)
	}
	decode(t, f.post("/clear_key_limits/sync?key=acme"), 200, &status)
	if got := key("acme").Limits; got != (work.KeyLimits{}) {
		t.Errorf("clear_key_limits: %+v", got)
	}
	// A key with no job yet may be paused and given overrides ahead of its jobs.
	decode(t, f.post("/set_key_limits/sync?key=newcomer&concurrency=1"), 200, &status)
	decode(t, f.get("/key/sync?key=newcomer"), 200, &k)
	if k.Limits.Concurrency != 1 || k.Waiting != 0 {
		t.Errorf("/key/sync?key=newcomer: %+v", k)
	}
	decode(t, f.get("/key_stats"), 200, &stats)
	if len(stats) != 1 || stats[0].OverriddenKeys != 1 {
		t.Errorf("/key_stats after an override: %s", f.get("/key_stats").Body)
	}
}

func TestKeyEndpointsRefuseBadRequests(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seedKeys()
	// Another program overwrote a key of broken's keyed state with a string.
	rdo(t, f.pool, "SADD", f.key("known_jobs"), "broken")
	rdo(t, f.pool, "SET", f.key("keyed:broken:waiting"), "garbage")
	f.wantErrors([]errorCase{
		{"GET", "/keys", 400},
		{"GET", "/keys/", 400},
		{"GET", "/keys/sync?page=x", 400},
		{"GET", "/keys/sync:lock", 400},
		{"GET", "/keys/broken", 409},
		{"GET", "/key/sync", 400},
		{"GET", "/key/?key=acme", 400},
		{"GET", "/key/sync?key=a%7Bb%7D", 400},
		{"GET", "/key/sync?key=" + strings.Repeat("k", 201), 400},
		{"GET", "/key/sync?key=a%0Ab", 400},
		{"GET", "/key/x:paused?key=a", 400},
		{"GET", "/key_stats/extra", 404},
		{"POST", "/keys/sync", 405},
		{"POST", "/key_stats", 405},
		{"GET", "/pause_key/sync?key=acme", 405},
		{"POST", "/pause_key/sync", 400},
		{"POST", "/pause_key?key=acme", 400},
		{"POST", "/unpause_key/sync?key=%7B", 400},
		{"POST", "/pause_key/broken?key=acme", 409},
		{"POST", "/set_key_limits/sync?key=acme&weight=1001", 400},
		{"POST", "/set_key_limits/sync?key=acme&weight=-1", 400},
		{"POST", "/set_key_limits/sync?key=acme&concurrency=-2", 400},
		{"POST", "/set_key_limits/sync?key=acme&concurrency=lots", 400},
		{"POST", "/set_key_limits/sync?key=acme&max_waiting=1.5", 400},
		{"POST", "/set_key_limits/sync?key=acme&rate=10", 400},
		{"POST", "/set_key_limits/sync?key=acme&rate=0/1m", 400},
		{"POST", "/set_key_limits/sync?key=acme&rate=10/0s", 400},
		{"POST", "/set_key_limits/sync?key=acme&rate=10/soon", 400},
		{"POST", "/clear_key_limits/sync:rate?key=acme", 400},
	})
	if body := f.get("/key/sync?key=a%7Bb%7D").Body.String(); !strings.Contains(body, "malformed key") {
		t.Errorf("malformed key: %s", body)
	}
	if body := f.get("/keys/broken").Body.String(); !strings.Contains(body, "another Redis type") {
		t.Errorf("overwritten keyed state: %s", body)
	}
	if body := f.post("/set_key_limits/sync?key=acme&weight=1001").Body.String(); !strings.Contains(body, "bad weight") {
		t.Errorf("bad weight: %s", body)
	}
	// Nothing was changed by the refused requests.
	k, err := work.NewClient(f.ns, f.pool).Key("sync", "acme")
	if err != nil || k.Paused || k.Limits != (work.KeyLimits{}) {
		t.Errorf("after the refused requests: %+v, %v", k, err)
	}
}

func TestKeyLimitParsers(t *testing.T) {
	// The form is read by the library's parsers (their cases are the library's tests); a value they
	// refuse is the caller's mistake, named by its field.
	for field, v := range map[string]string{"concurrency": "-2", "rate": "10", "weight": "1001", "max waiting": "1.5"} {
		form := map[string]string{strings.ReplaceAll(field, " ", "_"): v}
		_, err := keyLimitsOf(func(k string) string { return form[k] })
		var bad badLimits
		if !errors.As(err, &bad) || !strings.HasPrefix(err.Error(), "bad "+field+": ") {
			t.Errorf("%s %q: %v, want a badLimits naming the field", field, v, err)
		}
	}
	for d, want := range map[time.Duration]string{time.Minute: "1m", time.Hour: "1h", 90 * time.Minute: "1h30m",
		90 * time.Second: "1m30s", 500 * time.Millisecond: "500ms", 2 * time.Second: "2s"} {
		if got := periodText(d); got != want {
			t.Errorf("periodText(%v) = %q, want %q", d, got, want)
		}
	}
	// What the pages show is what the form takes back, and the library keeps it.
	l := work.KeyLimits{Concurrency: work.KeyNoLimit, RateLimit: work.RateLimit{Jobs: 4, Period: 90 * time.Second}, Weight: 2, MaxWaiting: 50}
	row := newKeyRow("sync", &work.KeyInfo{Key: "k", Limits: l})
	form := map[string]string{"concurrency": row.Form.Concurrency, "rate": row.Form.Rate, "weight": row.Form.Weight, "max_waiting": row.Form.MaxWaiting}
	if back, err := keyLimitsOf(func(k string) string { return form[k] }); err != nil || back != l {
		t.Errorf("the form of %+v reads back as %+v, %v", l, back, err)
	}
	if strings.Join(row.Overrides, ", ") != "no concurrency limit, 4 per 1m30s, weight 2, at most 50 waiting" {
		t.Errorf("overrides in words: %q", row.Overrides)
	}
}

// TestJobNameRuleMatchesTheLibrarys keeps the UI's check of job names in step with the library's:
// a name the UI refuses is one the client refuses too.
func TestJobNameRuleMatchesTheLibrarys(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	for _, name := range []string{"", "a", "sync", "x:lock", "x:lock_info", "x:max_concurrency", "x:paused", "x:rate",
		"x:lockx", "lock", ":rate", "x:rate:y", "<b>", "a/b", "é"} {
		_, _, err := f.srv.client.Keys(name, 1)
		if uiOK := checkJobName(name) == nil; uiOK != (err == nil) {
			t.Errorf("job name %q: the UI accepts it %v, the library's Keys says %v", name, uiOK, err)
		}
	}
}

func TestKeysPages(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	check := func(page string, status int, want ...string) string {
		t.Helper()
		rec := f.get(page)
		body := rec.Body.String()
		if rec.Code != status || !strings.Contains(rec.Header().Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d %q, want %d html\n%s", page, rec.Code, rec.Header().Get("Content-Type"), status, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("%s lacks %q", page, w)
			}
		}
		if regexp.MustCompile(`<script>|style=|onclick=|onsubmit=`).MatchString(body) {
			t.Errorf("%s holds inline script or style", page)
		}
		return body
	}
	check("/ui/keys", 200, "Keyed jobs", `id="keyed-empty"`, `href="queues" class="active"`)
	if body := check("/ui/queues", 200); strings.Contains(body, "key-stats") || strings.Contains(body, "keys?") {
		t.Error("the queues page shows keyed jobs where there are none")
	}
	f.seedKeys()

	// The queues page and the overview lead to the keys of the names that have some.
	check("/ui/queues", 200, `<a href="keys?name=sync" title="Its keys, busiest first">sync</a>`, `<table class="data" id="key-stats">`,
		`<tr data-keyed="sync">`, `data-col="waiting">9<`, `data-col="waiting-keys">3<`, `data-col="running">1<`,
		`data-col="running-keys">1<`, `href="keys?name=sync&amp;q=acme">acme</a> <span class="hint">5 waiting`)
	check("/ui/", 200, `<a href="keys?name=sync"`)
	check("/ui/keys", 200, `<tr data-keyed="sync">`, `href="keys?name=sync"`)

	// A name's keys, busiest first, with their actions.
	body := check("/ui/keys?name=sync", 200, `<title>Keys of sync · work`, `id="stat-waiting">9<`, `id="stat-waiting-keys">3<`,
		`id="stat-running">1<`, `largest backlog: <span class="mono">acme</span>`, `id="stat-paused">0<`,
		`<tr data-key="acme">`, `value="pause_key"`, `data-op="pause_key" data-name="sync" data-key="acme"`,
		`<a class="btn" href="keys?name=sync&amp;q=acme">Overrides…</a>`, `name="q" type="search"`,
		`<input type="hidden" name="name" value="sync">`, `id="page-info">Page 1 of 1<`, `title="Keys with jobs waiting or running">4<`, `href="queues" class="active"`)
	order := regexp.MustCompile(`<tr data-key="([^"]+)"`).FindAllStringSubmatch(body, -1)
	var keys []string
	for _, m := range order {
		keys = append(keys, m[1])
	}
	if strings.Join(keys, ",") != "acme,globex,initech,busy" {
		t.Errorf("the keys page lists %q, want the busiest first", keys)
	}
	if !regexp.MustCompile(`(?s)<tr data-key="busy">.*?data-col="running">1<.*?badge ok">running<`).MatchString(body) {
		t.Error("the running key does not show as running")
	}

	// One key, looked up: its detail and the form of its overrides.
	client := work.NewClient(f.ns, f.pool)
	if err := client.SetKeyLimits("sync", "acme", work.KeyLimits{Concurrency: 2, RateLimit: work.RateLimit{Jobs: 10, Period: time.Minute}}); err != nil {
		t.Fatal(err)
	}
	if err := client.PauseKey("sync", "acme"); err != nil {
		t.Fatal(err)
	}
	check("/ui/keys?name=sync&q=acme", 200, `id="key-name">acme<`, `id="key-waiting">5 jobs<`, `id="key-running">0 jobs<`,
		`badge warn">paused<`, `<span class="badge override">2 at once</span>`, `<span class="badge override">10 per 1m</span>`,
		`value="resume_key"`, `value="clear_key_limits"`, `<form method="post" action="action" class="limits" id="key-limits">`,
		`name="concurrency" value="2"`, `name="rate" value="10/1m"`, `name="weight" value=""`, `name="max_waiting" value=""`,
		`<input type="hidden" name="back" value="keys?name=sync&amp;q=acme">`, `href="keys?name=sync">All keys`,
		`id="stat-paused">1<`, `id="stat-overridden">1<`)
	check("/ui/keys?name=sync", 200, `<tr data-key="acme" class="paused">`, `value="resume_key"`, `10 per 1m`, `data-op="clear_key_limits"`)
	check("/ui/keys?name=sync&q=nobody", 200, `id="key-name">nobody<`, `id="key-waiting">0 jobs<`, "no job of the key is waiting or running",
		`value="pause_key"`, "(the job name's settings apply)")
	check("/ui/keys?name=nothing", 200, `id="keys-empty"`, "No key of nothing has jobs waiting or running")
	check("/ui/keys?name=sync&page=3", 200, "No keys on this page")

	// Paging: 25 more keys make two pages.
	e := work.NewEnqueuer(f.ns, f.pool)
	for i := 0; i < 25; i++ {
		if _, err := e.EnqueueWith("sync", nil, work.EnqueueOptions{Key: fmt.Sprintf("k%02d", i)}); err != nil {
			t.Fatal(err)
		}
	}
	check("/ui/keys?name=sync&page=2", 200, `id="page-info">Page 2 of 2<`, `>29</span>`, `href="keys?name=sync&amp;page=1"`)
	check("/ui/keys?name=sync", 200, `href="keys?name=sync&amp;page=2"`)

	// Bad parameters get a 4xx page.
	rdo(t, f.pool, "SET", f.key("keyed:broken:waiting"), "garbage")
	for target, status := range map[string]int{
		"/ui/keys?name=sync:lock": 400, "/ui/keys?name=sync&q=a%7Db": 400, "/ui/keys?name=sync&page=x": 400,
		"/ui/keys?name=broken": 409,
	} {
		check(target, status)
	}
}

func TestKeyFormActions(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{})
	f.seedKeys()
	client := work.NewClient(f.ns, f.pool)
	act := func(vals url.Values, wantLocation string) {
		t.Helper()
		rec := f.form(vals, nil)
		if rec.Code != 303 || rec.Header().Get("Location") != wantLocation {
			t.Fatalf("%v: %d %q, want 303 to %q", vals, rec.Code, rec.Header().Get("Location"), wantLocation)
		}
	}
	back := "keys?name=sync&q=acme"
	act(url.Values{"op": {"pause_key"}, "name": {"sync"}, "key": {"acme"}, "back": {back}}, back+"&done=key_paused")
	if k, _ := client.Key("sync", "acme"); !k.Paused {
		t.Error("not paused")
	}
	act(url.Values{"op": {"resume_key"}, "name": {"sync"}, "key": {"acme"}, "back": {"keys?name=sync&page=1"}}, "keys?name=sync&page=1&done=key_resumed")
	act(url.Values{"op": {"set_key_limits"}, "name": {"sync"}, "key": {"acme"}, "back": {back}, "concurrency": {"3"},
		"rate": {"20/1h"}, "weight": {"4"}, "max_waiting": {"none"}}, back+"&done=key_limits_set")
	want := work.KeyLimits{Concurrency: 3, RateLimit: work.RateLimit{Jobs: 20, Period: time.Hour}, Weight: 4, MaxWaiting: work.KeyNoLimit}
	if k, _ := client.Key("sync", "acme"); k.Paused || k.Limits != want {
		t.Errorf("after set: %+v", k)
	}
	for _, bad := range []url.Values{{"weight": {"2000"}}, {"rate": {"fast"}}, {"concurrency": {"-5"}}, {"max_waiting": {"x"}}} {
		vals := url.Values{"op": {"set_key_limits"}, "name": {"sync"}, "key": {"acme"}, "back": {back}}
		for k, v := range bad {
			vals[k] = v
		}
		act(vals, back+"&fail=bad_limits")
	}
	if k, _ := client.Key("sync", "acme"); k.Limits != want {
		t.Errorf("a refused form changed the overrides: %+v", k)
	}
	act(url.Values{"op": {"clear_key_limits"}, "name": {"sync"}, "key": {"acme"}, "back": {back}}, back+"&done=key_limits_cleared")
	if k, _ := client.Key("sync", "acme"); k.Limits != (work.KeyLimits{}) {
		t.Errorf("after clear: %+v", k)
	}
	// Missing or malformed fields, and keyed state another program overwrote.
	act(url.Values{"op": {"pause_key"}, "name": {"sync"}, "back": {back}}, back+"&fail=bad")
	act(url.Values{"op": {"pause_key"}, "key": {"acme"}, "back": {back}}, back+"&fail=bad")
	act(url.Values{"op": {"pause_key"}, "name": {"sync"}, "key": {"{x}"}, "back": {back}}, back+"&fail=bad")
	rdo(t, f.pool, "SET", f.key("keyed:broken:conf"), "garbage")
	act(url.Values{"op": {"pause_key"}, "name": {"broken"}, "key": {"a"}, "back": {"keys?name=broken"}}, "keys?name=broken&fail=unreadable")
	// The flashes read.
	for q, want := range map[string]string{
		"done=key_paused": "The key is paused", "done=key_limits_set": "The key&#39;s overrides are set.",
		"fail=bad_limits": "a rate is jobs per period, as 10/1m", "fail=unreadable": "holds another type",
	} {
		if body := f.get("/ui/keys?name=sync&" + q).Body.String(); !strings.Contains(body, want) {
			t.Errorf("flash of %s lacks %q", q, want)
		}
	}
}

func TestKeysPagesReadOnlyAndEscaped(t *testing.T) {
	t.Parallel()
	f := newFixture(t, Options{ReadOnly: true})
	evilName, evilKey := `<b>name</b>`, `<img src=x onerror=alert(1)>"'`
	e := work.NewEnqueuer(f.ns, f.pool)
	for _, key := range []string{evilKey, "plain"} {
		if _, err := e.EnqueueWith(evilName, work.Q{"x": 1}, work.EnqueueOptions{Key: key}); err != nil {
			t.Fatal(err)
		}
	}
	client := work.NewClient(f.ns, f.pool)
	if err := client.SetKeyLimits(evilName, evilKey, work.KeyLimits{Weight: 2}); err != nil {
		t.Fatal(err)
	}
	bad := regexp.MustCompile(`<img|<b>name`)
	for _, page := range []string{"/ui/", "/ui/queues", "/ui/keys", "/ui/keys?name=" + url.QueryEscape(evilName),
		"/ui/keys?name=" + url.QueryEscape(evilName) + "&q=" + url.QueryEscape(evilKey)} {
		rec := f.get(page)
		body := rec.Body.String()
		if rec.Code != 200 {
			t.Errorf("%s: %d", page, rec.Code)
		}
		if m := bad.FindString(body); m != "" {
			t.Errorf("%s holds unescaped data %q", page, m)
		}
		if strings.Contains(body, `name="op"`) || strings.Contains(body, `id="key-limits"`) || !strings.Contains(body, "read-only") {
			t.Errorf("%s: a read-only page shows actions", page)
		}
		if !strings.Contains(body, "&lt;b&gt;name&lt;/b&gt;") {
			t.Errorf("%s does not show the name as text", page)
		}
	}
	if body := f.get("/ui/keys?name=" + url.QueryEscape(evilName)).Body.String(); !strings.Contains(body, "&lt;img src=x onerror=alert(1)&gt;&#34;&#39;") {
		t.Errorf("the key is not shown as text:\n%s", body)
	}
	for _, target := range []string{"/pause_key/sync?key=a", "/set_key_limits/sync?key=a&weight=2", "/clear_key_limits/sync?key=a"} {
		wantError(t, f.post(target), http.StatusForbidden)
	}
	if rec := f.form(url.Values{"op": {"pause_key"}, "name": {evilName}, "key": {"plain"}}, nil); rec.Code != http.StatusForbidden {
		t.Errorf("read-only form: %d", rec.Code)
	}
	if k, err := client.Key(evilName, "plain"); err != nil || k.Paused {
		t.Errorf("a read-only server paused a key: %+v, %v", k, err)
	}
	// Reading works: the JSON is escaped.
	if b := f.get("/keys/" + url.PathEscape(evilName)).Body.String(); strings.Contains(b, "<img") || !strings.Contains(b, `"count": 2`) {
		t.Errorf("/keys of the evil name: %s", b)
	}
}
