package main

import (
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/workqueue/work"
)

// debounce enqueues n jobs of one burst, the i-th with args {"v": i}, and returns the pending job.
func (e *env) debounce(name, id string, n int, d work.Debounce) *work.Job {
	e.t.Helper()
	enq := work.NewEnqueuer(e.ns, e.pool)
	d.ID = id
	var j *work.Job
	for i := 1; i <= n; i++ {
		var err error
		if j, err = enq.EnqueueWith(name, work.Q{"v": i}, work.EnqueueOptions{Debounce: &d}); err != nil {
			e.t.Fatal(err)
		}
	}
	return j
}

// pendingJSON is a burst as `work debounced --json` prints it.
type pendingJSON struct {
	Name     string    `json:"name"`
	ID       string    `json:"id"`
	Job      *work.Job `json:"job"`
	First    time.Time `json:"first"`
	RunAt    time.Time `json:"run_at"`
	Enqueues int64     `json:"enqueues"`
}

func (e *env) pending() []pendingJSON {
	e.t.Helper()
	var bs []pendingJSON
	decodeJSON(e.t, e.run(nil, "debounced", "--json"), &bs)
	return bs
}

func TestDebouncedListsPendingBursts(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "debounced").want(t, 0, "no pending bursts")
	e.run(nil, "debounced", "--json").want(t, 0, "[]")

	doc := e.debounce("reindex", "doc-1", 3, work.Debounce{Window: time.Hour, MaxWait: 2 * time.Hour})
	mail := e.debounce("digest", "user-7", 1, work.Debounce{Window: 30 * time.Second})
	r := e.run(nil, "debounced")
	r.want(t, 0, "JOB ", " DEBOUNCE ID ", " ENQUEUES ", " FIRST ", " RUNS AT (UTC) ", " WINDOW ", " MAX WAIT ", " JOB ID ", " ARGS\n",
		doc.ID, mail.ID, `{"v":3}`, "2 pending bursts\n")
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 4 || !strings.HasPrefix(lines[1], "digest ") || !strings.HasPrefix(lines[2], "reindex ") {
		t.Fatalf("want the digest first, then the reindex:\n%s", r.stdout)
	}
	for _, want := range []string{" doc-1 ", " 3 ", " 1h ", " 2h "} {
		if !strings.Contains(lines[2], want) {
			t.Errorf("the reindex line lacks %q: %s", want, lines[2])
		}
	}
	if !regexp.MustCompile(` in (59m\d+s|1h) `).MatchString(lines[2]) {
		t.Errorf("the reindex line does not say it runs in an hour: %s", lines[2])
	}
	if f := strings.Fields(lines[1]); !strings.Contains(lines[1], " 30s ") || !strings.Contains(lines[1], " none ") {
		t.Errorf("the digest line: %q", f)
	}

	bs := e.pending()
	if len(bs) != 2 || bs[1].Name != "reindex" || bs[1].ID != "doc-1" || bs[1].Enqueues != 3 || bs[1].Job.ID != doc.ID ||
		bs[1].Job.ArgInt64("v") != 3 || bs[1].First.IsZero() || bs[1].RunAt.Before(bs[1].First) {
		t.Errorf("debounced --json: %+v", bs)
	}
}

func TestRescheduleAndReplaceArgs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	j := e.debounce("reindex", "doc-1", 2, work.Debounce{Window: time.Hour})

	at := time.Now().Add(3 * time.Hour).UTC().Truncate(time.Second)
	inHours := func(r result, h int) {
		t.Helper()
		r.want(t, 0, "job "+j.ID+" runs at ")
		if !regexp.MustCompile(fmt.Sprintf(`UTC \(in (%dh59m|%dh)\)`, h-1, h)).MatchString(r.stdout) {
			t.Errorf("want it to run in %dh: %s", h, r.stdout)
		}
	}
	r := e.run(nil, "reschedule", j.ID, at.Format(time.RFC3339))
	r.want(t, 0, at.Format("2006-01-02 15:04:05")+" UTC")
	inHours(r, 3)
	if bs := e.pending(); len(bs) != 1 || !bs[0].RunAt.Equal(at) {
		t.Errorf("after reschedule to %v: %+v", at, bs)
	}
	at = at.Add(time.Hour)
	inHours(e.run(nil, "reschedule", j.ID, at.Format("2006-01-02 15:04:05")), 4)
	r = e.run(nil, "reschedule", j.ID, "+90m", "--json")
	var ans struct {
		JobID  string    `json:"job_id"`
		Status string    `json:"status"`
		RunAt  time.Time `json:"run_at"`
	}
	decodeJSON(t, r, &ans)
	if ans.JobID != j.ID || ans.Status != "rescheduled" || time.Until(ans.RunAt) < 89*time.Minute || time.Until(ans.RunAt) > 91*time.Minute {
		t.Errorf("reschedule +90m --json: %s", r.stdout)
	}
	if bs := e.pending(); len(bs) != 1 || !bs[0].RunAt.Equal(ans.RunAt) {
		t.Errorf("after reschedule +90m: %+v, want %v", bs, ans.RunAt)
	}

	e.run(nil, "replace-args", j.ID, `{"v": 42, "big": 12345678901234567890}`).want(t, 0, "job "+j.ID+" has new args: ", `"v":42`)
	bs := e.pending()
	if len(bs) != 1 || bs[0].Job.ArgInt64("v") != 42 || bs[0].Enqueues != 2 {
		t.Errorf("after replace-args: %+v", bs)
	}
	var raw map[string]json.RawMessage
	decodeJSON(t, e.run(nil, "replace-args", j.ID, `{"big": 12345678901234567890}`, "--json"), &raw)
	if string(raw["status"]) != `"replaced"` || !strings.Contains(string(raw["args"]), "12345678901234567890") {
		t.Errorf("replace-args --json: %s", raw)
	}
	// The job stays its burst's: the next enqueue replaces it.
	e.debounce("reindex", "doc-1", 1, work.Debounce{Window: time.Hour})
	if bs := e.pending(); len(bs) != 1 || bs[0].Enqueues != 3 || bs[0].Job.ArgInt64("v") != 1 || e.int("ZCARD", e.key("debounces")) != 1 {
		t.Errorf("after another enqueue: %+v", bs)
	}

	// A plain scheduled job, and a retry job, can be moved too.
	e.do("ZADD", e.key("retry"), 9999999999, `{"name":"mail","id":"r1","t":1,"fails":1,"err":"x"}`)
	e.run(nil, "reschedule", "r1", "2030-01-02T03:04:05Z").want(t, 0, "runs at 2030-01-02 03:04:05 UTC")
	if s := e.int("ZSCORE", e.key("retry"), e.strings("ZRANGE", e.key("retry"), 0, 0)[0]); s != 1893553445 {
		t.Errorf("the retry job's score is %d", s)
	}

	// Mistakes: usage (2) before any round trip, an ID no job waits under (3).
	for _, bad := range [][]string{
		{"reschedule", j.ID, "tomorrow"}, {"reschedule", j.ID, "+soon"}, {"reschedule", j.ID}, {"reschedule", "", "+1m"},
		{"replace-args", j.ID, "[1]"}, {"replace-args", j.ID, `{"v":`}, {"replace-args", j.ID},
	} {
		e.run(nil, bad...).want(t, 2)
	}
	e.run(nil, "reschedule", "nosuchjob", "+1m").want(t, 3)
	e.run(nil, "replace-args", "nosuchjob", "{}").want(t, 3)
	e.do("LPUSH", e.key("jobs:mail"), `{"name":"mail","id":"q1","t":1}`)
	r = e.run(nil, "reschedule", "q1", "+1m")
	r.want(t, 3)
	if !strings.HasPrefix(r.stderr, "work: job not found") || strings.Contains(r.stderr, "work: work:") || !strings.Contains(r.stderr, "cannot be edited") {
		t.Errorf("stderr of a queued job: %q", r.stderr)
	}
}
