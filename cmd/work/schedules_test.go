package main

import (
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// The periodic job that seedSchedules makes a live pool declare, and its ID among the schedules.
const periodicID = "periodic:cleanup:0 0 * * * *"

// seedSchedules stores four schedules: report:acme (Mondays at 9:00 in Berlin, keyed, with args and
// jitter), report:globex (paused), digest (run-latest) and broken (a record another program wrote);
// and makes a live pool declare the periodic job cleanup.
func seedSchedules(t *testing.T, e *env) *work.Client {
	t.Helper()
	c := work.NewClient(e.ns, e.pool)
	err := c.SetSchedules([]work.Schedule{
		{ID: "report:acme", Spec: "0 0 9 * * MON", Location: "Europe/Berlin", JobName: "report", Key: "acme",
			Args: map[string]interface{}{"customer": "acme"}, Jitter: 30 * time.Second},
		{ID: "report:globex", Spec: "@every 1h", JobName: "report", Key: "globex"},
		{ID: "digest", Spec: "0 30 2 * * *", JobName: "digest", Missed: work.MissedRunLatest},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := c.PauseSchedule("report:globex"); err != nil {
		t.Fatal(err)
	}
	e.do("HSET", e.key("schedules"), "broken", "garbage")
	e.do("SADD", e.key("worker_pools"), "pool1")
	e.do("HSET", e.key("worker_pools:pool1"), "heartbeat_at", time.Now().Unix(), "periodic_jobs", `[{"job_name":"cleanup","spec":"0 0 * * * *"}]`)
	return c
}

// schedulesJSON is what `work schedules list --json` prints.
type schedulesJSON struct {
	Schedules []*work.ScheduleInfo `json:"schedules"`
	Next      string               `json:"next"`
	Stored    int64                `json:"stored"`
}

// scheduleShownJSON is what `work schedules show --json` prints.
type scheduleShownJSON struct {
	work.ScheduleInfo
	NextTicks []int64 `json:"next_ticks"`
}

func idsOf(list []*work.ScheduleInfo) string {
	var ids []string
	for _, s := range list {
		ids = append(ids, s.ID)
	}
	return strings.Join(ids, ",")
}

func TestSchedulesListAndShow(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "schedules", "list").want(t, 0, "no schedules: none is stored, and no live worker pool declares a periodic job\n")
	r := e.run(nil, "schedules", "list", "--json")
	var page schedulesJSON
	decodeJSON(t, r, &page)
	if page.Stored != 0 || page.Schedules == nil || len(page.Schedules) != 0 || page.Next != "" {
		t.Errorf("schedules list --json of none: %s", r.stdout)
	}
	seedSchedules(t, e)

	// The periodic job first, then the schedules by ID.
	r = e.run(nil, "schedules", "list")
	r.want(t, 0, "ID ", " JOB ", " SPEC ", " LOCATION ", " KEY ", " NEXT RUN (UTC) ", " WHEN ", " LAST TICK (UTC) ", " STATUS\n",
		"in code\n", `damaged: starts "garbage", want [1,`, "0 0 9 * * MON  Europe/Berlin  acme", "paused\n", "4 schedules stored\n")
	var order []string
	for _, line := range strings.Split(strings.TrimSpace(r.stdout), "\n")[1:5] {
		order = append(order, strings.Fields(line)[0])
	}
	if strings.Join(order, ",") != "periodic:cleanup:0,broken,digest,report:acme" {
		t.Errorf("list order %q:\n%s", order, r.stdout)
	}
	decodeJSON(t, e.run(nil, "schedules", "list", "--json"), &page)
	if idsOf(page.Schedules) != periodicID+",broken,digest,report:acme,report:globex" || page.Stored != 4 || !page.Schedules[0].Periodic {
		t.Errorf("schedules list --json: %s", idsOf(page.Schedules))
	}
	decodeJSON(t, e.run(nil, "schedules", "list", "--prefix", "report:", "--json"), &page)
	if idsOf(page.Schedules) != "report:acme,report:globex" {
		t.Errorf("schedules list --prefix report: lists %s", idsOf(page.Schedules))
	}
	decodeJSON(t, e.run(nil, "schedules", "list", "--stored-only", "--json"), &page)
	if idsOf(page.Schedules) != "broken,digest,report:acme,report:globex" {
		t.Errorf("schedules list --stored-only lists %s", idsOf(page.Schedules))
	}
	e.run(nil, "schedules", "list", "--prefix", "nobody").want(t, 0, "no schedule's ID starts with nobody\n")

	// One schedule: its definition, state and next ticks, in UTC and in its zone.
	c := work.NewClient(e.ns, e.pool)
	acme, err := c.Schedule("report:acme")
	if err != nil {
		t.Fatal(err)
	}
	berlin, err := time.LoadLocation("Europe/Berlin")
	if err != nil {
		t.Fatal(err)
	}
	tick := time.Unix(acme.NextTick, 0)
	e.run(nil, "schedules", "show", "report:acme").want(t, 0, "ID          report:acme\n", "STATUS      active\n", "JOB         report\n",
		"SPEC        0 0 9 * * MON\n", "LOCATION    Europe/Berlin\n", "KEY         acme\n", `ARGS        {"customer":"acme"}`+"\n",
		"JITTER      30s\n", "MISSED      skip\n", "LAST TICK   -\n",
		"NEXT TICKS  "+tick.UTC().Format("2006-01-02 15:04:05")+" UTC (in ", tick.In(berlin).Format("2006-01-02 15:04:05 MST")+"\n")
	var one scheduleShownJSON
	decodeJSON(t, e.run(nil, "schedules", "show", "report:acme", "--json"), &one)
	if one.ID != "report:acme" || one.Key != "acme" || len(one.NextTicks) != 5 || one.NextTicks[0] != acme.NextTick {
		t.Errorf("schedules show --json: %+v", one)
	}
	for _, tk := range one.NextTicks {
		if lt := time.Unix(tk, 0).In(berlin); lt.Weekday() != time.Monday || lt.Hour() != 9 || lt.Minute() != 0 {
			t.Errorf("a next tick of report:acme is %v", lt)
		}
	}
	e.run(nil, "schedules", "show", "report:globex").want(t, 0, "STATUS     paused\n", "NEXT RUN   -\n")
	e.run(nil, "schedules", "show", "digest").want(t, 0, "MISSED      run-latest\n", "LOCATION    -\n")
	e.run(nil, "schedules", "show", "broken").want(t, 0, `STATUS  damaged: starts "garbage", want [1,`, "it does not fire until it is set again")
	decodeJSON(t, e.run(nil, "schedules", "show", "broken", "--json"), &one)
	if one.Damaged == "" || one.NextTicks == nil || len(one.NextTicks) != 0 {
		t.Errorf("schedules show broken --json: %+v", one)
	}
	e.run(nil, "schedules", "show", periodicID).want(t, 0, "STATUS      in code\n", "declared in code (WorkerPool.PeriodicallyEnqueue) by the pools pool1")
	r = e.run(nil, "schedules", "show", "nope")
	r.want(t, 3)
	if r.stderr != "work: schedule not found: \"nope\"\n" {
		t.Errorf("show of an unknown schedule: %q", r.stderr)
	}

	// The schedules' hash, overwritten by another program with another type.
	g := newEnv(t)
	g.do("SET", g.key("schedules"), "garbage")
	r = g.run(nil, "schedules", "list")
	r.want(t, 1)
	if !strings.Contains(r.stderr, "another Redis type") {
		t.Errorf("list of overwritten schedules: %q", r.stderr)
	}
}

func TestSchedulesListPages(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := seedSchedules(t, e)
	// More schedules, and longer records, than Redis keeps in a hash's compact encoding, so that a
	// scan takes pages.
	var list []work.Schedule
	for i := 0; i < 600; i++ {
		list = append(list, work.Schedule{ID: fmt.Sprintf("tenant:%03d", i), Spec: "@daily", JobName: "report",
			Args: map[string]interface{}{"note": strings.Repeat("x", 80)}})
	}
	if err := c.SetSchedules(list); err != nil {
		t.Fatal(err)
	}
	r := e.run(nil, "schedules", "list")
	r.want(t, 0, "604 schedules stored; next page: --cursor ")
	if n := strings.Count(r.stdout, "\n"); n < 50 || n > 200 {
		t.Errorf("a page of %d lines", n)
	}
	seen := map[string]int{}
	cursor, pages := "", 0
	for ; pages < 100; pages++ {
		var page schedulesJSON
		args := []string{"schedules", "list", "--count", "100", "--json"}
		if cursor != "" {
			args = append(args, "--cursor", cursor)
		}
		decodeJSON(t, e.run(nil, args...), &page)
		for _, s := range page.Schedules {
			seen[s.ID]++
		}
		if cursor = page.Next; cursor == "" {
			break
		}
	}
	if len(seen) != 605 || seen[periodicID] != 1 || pages < 2 {
		t.Errorf("walking the pages saw %d of 605 in %d pages (the periodic job %d times)", len(seen), pages+1, seen[periodicID])
	}
	var all schedulesJSON
	decodeJSON(t, e.run(nil, "schedules", "list", "--all", "--stored-only", "--json"), &all)
	ids := map[string]bool{}
	for _, s := range all.Schedules {
		ids[s.ID] = true
	}
	if len(ids) != 604 || all.Next != "" || all.Stored != 604 || !sort.SliceIsSorted(all.Schedules, func(i, j int) bool { return all.Schedules[i].ID < all.Schedules[j].ID }) {
		t.Errorf("list --all: %d schedules, next %q, stored %d", len(ids), all.Next, all.Stored)
	}
}

func TestScheduleControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := seedSchedules(t, e)
	get := func(id string) *work.ScheduleInfo {
		t.Helper()
		s, err := c.Schedule(id)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	// set creates a schedule, or replaces its whole definition.
	e.run(nil, "schedules", "set", "report:initech", "--spec", "0 0 9 * * *", "--location", "Asia/Tokyo", "--job", "report",
		"--args", `{"customer":"initech","n":12345678901234567890}`, "--key", "initech", "--jitter", "1m", "--missed", "run-latest").want(t, 0,
		"ID          report:initech\n", "STATUS      active\n", "LOCATION    Asia/Tokyo\n", "JITTER      1m\n", "MISSED      run-latest\n", " JST\n")
	s := get("report:initech")
	if s.Spec != "0 0 9 * * *" || s.Location != "Asia/Tokyo" || s.JobName != "report" || s.Key != "initech" || s.Jitter != time.Minute ||
		s.Missed != work.MissedRunLatest || fmt.Sprint(s.Args["n"]) != "12345678901234567890" {
		t.Errorf("after set: %+v", s)
	}
	var shown scheduleShownJSON
	decodeJSON(t, e.run(nil, "schedules", "set", "report:initech", "--spec", "@daily", "--job", "digest", "--json"), &shown)
	if s := get("report:initech"); s.Spec != "@daily" || s.JobName != "digest" || s.Key != "" || s.Args != nil || s.Location != "" ||
		s.Jitter != 0 || s.Missed != work.MissedSkip || shown.ID != "report:initech" || len(shown.NextTicks) != 5 {
		t.Errorf("after set again: %+v, printed %+v", s, shown)
	}

	e.run(nil, "schedules", "pause", "report:acme").want(t, 0, "paused schedule report:acme\n")
	if !get("report:acme").Paused {
		t.Fatal("not paused")
	}
	e.run(nil, "schedules", "list", "--prefix", "report:acme").want(t, 0, "paused\n")
	var res scheduleResult
	decodeJSON(t, e.run(nil, "schedules", "resume", "report:acme", "--json"), &res)
	if res.ID != "report:acme" || res.Status != "resumed" || res.Job != nil || get("report:acme").Paused {
		t.Errorf("schedules resume --json: %+v", res)
	}
	e.run(nil, "schedules", "unpause", "report:acme").want(t, 0, "resumed schedule report:acme from its next tick")

	// run enqueues the schedule's job, paused or not.
	r := e.run(nil, "schedules", "run", "report:globex")
	r.want(t, 0, "enqueued report job ", " of key globex for schedule report:globex (tick ")
	decodeJSON(t, e.run(nil, "schedules", "run", "report:acme", "--json"), &res)
	if res.Status != "run" || res.Job == nil || res.Job.ScheduleID != "report:acme" || res.Job.Key != "acme" || res.Job.Args["customer"] != "acme" {
		t.Errorf("schedules run --json: %+v", res.Job)
	}
	for _, key := range []string{"acme", "globex"} {
		if k, err := c.Key("report", key); err != nil || k.Waiting != 1 {
			t.Errorf("after run, key %s has %+v, %v; want its job waiting", key, k, err)
		}
	}
	if s := get("report:globex"); !s.Paused || s.LastTick != 0 {
		t.Errorf("run changed the schedule: %+v", s)
	}

	e.run(nil, "schedules", "delete", "digest").want(t, 0, "deleted schedule digest\n")
	decodeJSON(t, e.run(nil, "schedules", "delete", "broken", "--json"), &res)
	if res.Status != "deleted" {
		t.Errorf("schedules delete --json: %+v", res)
	}
	var page schedulesJSON
	decodeJSON(t, e.run(nil, "schedules", "list", "--stored-only", "--json"), &page)
	if idsOf(page.Schedules) != "report:acme,report:globex,report:initech" {
		t.Errorf("after the deletes: %s", idsOf(page.Schedules))
	}

	// What cannot be done says why: an unknown schedule exits with 3, a damaged one or a full key 1.
	for _, args := range [][]string{{"delete", "digest"}, {"pause", "nope"}, {"resume", "nope"}, {"run", "nope"}, {"show", "nope"},
		{"pause", periodicID}} {
		r := e.run(nil, append([]string{"schedules"}, args...)...)
		r.want(t, 3)
		if !strings.HasPrefix(r.stderr, "work: schedule not found: ") {
			t.Errorf("schedules %q: %q", args, r.stderr)
		}
	}
	if r := e.run(nil, "schedules", "pause", periodicID); !strings.Contains(r.stderr, "changes with the code only") {
		t.Errorf("pause of a periodic job: %q", r.stderr)
	}
	e.do("HSET", e.key("schedules"), "broken", "garbage")
	for _, op := range []string{"pause", "resume", "run"} {
		r := e.run(nil, "schedules", op, "broken")
		r.want(t, 1)
		if !strings.HasPrefix(r.stderr, "work: damaged schedule record: ") || !strings.Contains(r.stderr, "delete the schedule, or set it again") {
			t.Errorf("schedules %s of a damaged record: %q", op, r.stderr)
		}
	}
	if err := c.SetKeyLimits("report", "acme", work.KeyLimits{MaxWaiting: 1}); err != nil {
		t.Fatal(err)
	}
	r = e.run(nil, "schedules", "run", "report:acme")
	r.want(t, 1)
	if !strings.HasPrefix(r.stderr, "work: too many jobs of the key waiting: ") {
		t.Errorf("run with a full key: %q", r.stderr)
	}
}

func TestSchedulesUsageErrorsExitWith2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	seedSchedules(t, e)
	long := strings.Repeat("s", work.MaxScheduleIDLen+1)
	set := []string{"schedules", "set", "x", "--spec", "@daily", "--job", "report"}
	for _, tc := range []struct {
		args []string
		want string // in the message
		flag string // the flag the library's refusal is about, named after it
	}{
		{[]string{"schedules"}, "needs a subcommand", ""},
		{[]string{"schedules", "nope"}, "unknown subcommand", ""},
		{[]string{"schedules", "list", "extra"}, "", ""},
		{[]string{"schedules", "list", "--cursor", "x"}, "page cursor \"x\"", ""},
		{[]string{"schedules", "list", "--count", "0"}, "--count", ""},
		{[]string{"schedules", "list", "--all", "--cursor", "5"}, "--all", ""},
		{[]string{"schedules", "list", "--prefix", "a\x01"}, "malformed schedule", "(--prefix)"},
		{[]string{"schedules", "show"}, "", ""},
		{[]string{"schedules", "show", "a", "b"}, "", ""},
		{[]string{"schedules", "show", ""}, "malformed schedule: ID \"\": empty", ""},
		{[]string{"schedules", "show", long}, "more than 200", ""},
		{[]string{"schedules", "pause", "a\nb"}, "control character", ""},
		{[]string{"schedules", "delete"}, "", ""},
		{[]string{"schedules", "run", "a", "b"}, "", ""},
		{[]string{"schedules", "set", "x", "--spec", "@daily"}, "--job is required", ""},
		{[]string{"schedules", "set", "x", "--job", "report"}, "--spec is required", ""},
		{append(set[:3:3], "--spec", "every day", "--job", "report"), "malformed spec", "(--spec)"},
		{append(set[:3:3], "--spec", "TZ=UTC @daily", "--job", "report"), "malformed spec", "(--spec)"},
		{append(set, "--location", "Mars/Olympus"), "unknown time zone", "(--location)"},
		{append(set, "--location", "Local"), "unknown time zone", "(--location)"},
		{append(set[:5:5], "--job", "x:lock"), "malformed job name", "(--job)"},
		{append(set, "--key", "{x}"), "malformed key", "(--key)"},
		{append(set, "--args", "[1]"), "malformed args", "(--args)"},
		{append(set, "--args", "{"), "malformed args", "(--args)"},
		{append(set, "--jitter", "48h"), "malformed schedule", "(--jitter)"},
		{append(set, "--jitter", "-1s"), "malformed schedule", "(--jitter)"},
		{append(set, "--jitter", "soon"), "jitter", ""},
		{append(set, "--missed", "maybe"), "malformed schedule", "(--missed)"},
		{[]string{"schedules", "set", "", "--spec", "@daily", "--job", "report"}, "malformed schedule", ""},
	} {
		r := e.run(nil, tc.args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "work: ") || !strings.Contains(r.stderr, "--help") || r.stdout != "" ||
			!strings.Contains(r.stderr, tc.want) || !strings.Contains(r.stderr, tc.flag) {
			t.Errorf("work %q: exit %d, stdout %q, stderr %q; want 2 and a message with %q %s", tc.args, r.code, r.stdout, r.stderr, tc.want, tc.flag)
		}
	}
	// Nothing was changed by the refused commands.
	var page schedulesJSON
	decodeJSON(t, e.run(nil, "schedules", "list", "--stored-only", "--json"), &page)
	if idsOf(page.Schedules) != "broken,digest,report:acme,report:globex" {
		t.Errorf("after the refused commands: %s", idsOf(page.Schedules))
	}
	e.run(nil, "schedules", "--help").want(t, 0, "list", "show", "set", "delete", "pause", "resume", "run", "exits with status 3")
	e.run(nil, "schedules", "set", "--help").want(t, 0, "--spec", "--location", "--job", "--args", "--key", "--jitter", "--missed", "run-latest")
	e.run(nil, "--help").want(t, 0, "schedules")
}

// The JSON of the list is the Client's page, sorted.
func TestSchedulesJSONIsTheClients(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	c := seedSchedules(t, e)
	want, err := c.Schedules(work.ScheduleQuery{Prefix: "report:"})
	if err != nil {
		t.Fatal(err)
	}
	r := e.run(nil, "schedules", "list", "--prefix", "report:", "--json")
	r.want(t, 0)
	sort.Slice(want.Schedules, func(i, j int) bool { return want.Schedules[i].ID < want.Schedules[j].ID })
	b, err := json.Marshal(want)
	if err != nil {
		t.Fatal(err)
	}
	var got, exp interface{}
	if json.Unmarshal([]byte(r.stdout), &got) != nil || json.Unmarshal(b, &exp) != nil || fmt.Sprint(got) != fmt.Sprint(exp) {
		t.Errorf("list --json:\n%s\nthe Client's page:\n%s", r.stdout, b)
	}
}
