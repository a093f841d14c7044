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

// `work stats` lists the backlogs relays report under the totals, a report no relay renewed for
// over a minute marked so; with none it prints no backlog table, and --json always has the list.
func TestStatsShowsBacklogs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run(nil, "stats")
	r.want(t, 0)
	if strings.Contains(r.stdout, "BACKLOG") {
		t.Errorf("stats shows backlogs with none reported:\n%s", r.stdout)
	}
	r = e.run(nil, "stats", "--json")
	r.want(t, 0, `"backlogs": []`)

	if err := work.NewEnqueuer(e.ns, e.pool).ReportBacklog("postgres:work_outbox", 42, time.Now().Add(-90*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A relay that stopped five minutes ago (ReportBacklog stamps the present, so write its report).
	now := time.Now()
	e.do("HSET", e.key("backlogs"), "postgres:gone",
		fmt.Sprintf(`{"waiting":7,"oldest_ms":%d,"reported_ms":%d}`, now.Add(-10*time.Minute).UnixMilli(), now.Add(-5*time.Minute).UnixMilli()))

	r = e.run(nil, "stats")
	r.want(t, 0, "BACKLOG", "WAITING", "OLDEST", "REPORTED")
	if !regexp.MustCompile(`(?m)^postgres:gone\s+7\s+5m\s+5m ago \(no relay reported for 5m\)$`).MatchString(r.stdout) {
		t.Errorf("stale source:\n%s", r.stdout)
	}
	if !regexp.MustCompile(`(?m)^postgres:work_outbox\s+42\s+1m30s\s+\ds ago$`).MatchString(r.stdout) {
		t.Errorf("live source:\n%s", r.stdout)
	}
	if strings.Index(r.stdout, "postgres:gone") > strings.Index(r.stdout, "postgres:work_outbox") {
		t.Errorf("sources out of order:\n%s", r.stdout)
	}

	r = e.run(nil, "stats", "--json")
	r.want(t, 0)
	var st struct {
		Backlogs []*work.Backlog `json:"backlogs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || len(st.Backlogs) != 2 {
		t.Fatalf("stats --json: %s (%v)", r.stdout, err)
	}
	if b := st.Backlogs[1]; b.Source != "postgres:work_outbox" || b.Waiting != 42 || b.Age() < 89*time.Second || time.Since(b.ReportedAt) > time.Minute {
		t.Errorf("stats --json backlog %+v", b)
	}
}

// `work stats` counts the pools whose heartbeat is older than they declared as stale.
func TestStatsCountsStalePools(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Now().Unix()
	e.do("SADD", e.key("worker_pools"), "live", "gone", "legacy")
	e.do("HSET", e.key("worker_pools:live"), "heartbeat_at", now, "dead_after", 6)
	e.do("HSET", e.key("worker_pools:gone"), "heartbeat_at", now-30, "dead_after", 6)
	e.do("HSET", e.key("worker_pools:legacy"), "heartbeat_at", now-8)
	r := e.run(nil, "stats")
	r.want(t, 0, "in 3 pools (1 stale)")
	r = e.run(nil, "stats", "--json")
	r.want(t, 0, `"worker_pools": 3`, `"stale_worker_pools": 1`)
}
