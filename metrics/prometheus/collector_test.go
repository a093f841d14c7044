package workprom_test

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
	workprom "github.com/workqueue/work/metrics/prometheus"
)

// The tests run against the Redis at $WORK_TEST_REDIS (default 127.0.0.1:6379), each in a namespace of
// its own that it deletes when it ends.

func TestMain(m *testing.M) {
	// The pools log the failures and panics the tests provoke; WORK_TEST_LOG=1 shows them.
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

func testPool(t *testing.T) *redis.Pool { return redistest.Pool(t, 20) }

func testNamespace(t *testing.T, pool *redis.Pool) string {
	return redistest.Namespace(t, pool, "workprom-test")
}

func do(t *testing.T, pool *redis.Pool, cmd string, args ...interface{}) {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do(cmd, args...); err != nil {
		t.Fatalf("%s: %v", cmd, err)
	}
}

// serve registers c with a pedantic registry and serves it at /metrics until the test ends.
func serve(t *testing.T, c prometheus.Collector) (*prometheus.Registry, *httptest.Server) {
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return reg, srv
}

// scrape GETs /metrics from srv and parses the text exposition.
func scrape(t *testing.T, srv *httptest.Server) map[string]*dto.MetricFamily {
	t.Helper()
	return parse(t, scrapeText(t, srv))
}

// scrapeText GETs /metrics from srv and returns the text exposition.
func scrapeText(t *testing.T, srv *httptest.Server) string {
	t.Helper()
	resp, err := http.Get(srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	var p expfmt.TextParser
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

// value returns the value of the sample of family name whose labels include want ("k=v" pairs), and
// whether there is one. For a histogram it returns the sample count.
func value(fams map[string]*dto.MetricFamily, name string, want ...string) (float64, bool) {
	f := fams[name]
	if f == nil {
		return 0, false
	}
next:
	for _, m := range f.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for _, w := range want {
			k, v, _ := strings.Cut(w, "=")
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.Counter.GetValue(), true
		case m.Gauge != nil:
			return m.Gauge.GetValue(), true
		case m.Histogram != nil:
			return float64(m.Histogram.GetSampleCount()), true
		}
	}
	return 0, false
}

func TestCollectorAfterRealJobs(t *testing.T) {
	pool := testPool(t)
	ns := testNamespace(t, pool)

	failOpts := work.JobOptions{MaxFails: 1}
	panicOpts := work.JobOptions{MaxFails: 3}
	m := workprom.NewCollector(ns, pool)
	reg, srv := serve(t, m)

	// A queue no pool serves, paused, whose oldest job was enqueued two minutes ago.
	enq := work.NewEnqueuer(ns, pool)
	old := time.Now().Unix() - 120
	do(t, pool, "SADD", ns+":known_jobs", "waiting")
	for i := 0; i < 2; i++ {
		do(t, pool, "LPUSH", ns+":jobs:waiting",
			fmt.Sprintf(`{"name":"waiting","id":"00000000000000000000000%d","t":%d,"args":null}`, i, old+int64(i)))
	}
	client := work.NewClient(ns, pool)
	if err := client.PauseQueue("waiting"); err != nil {
		t.Fatal(err)
	}
	if _, err := enq.EnqueueIn("later", 3600, nil); err != nil {
		t.Fatal(err)
	}

	release := make(chan struct{})
	blocking := make(chan struct{}, 1)
	var ended atomic.Int64
	wp := work.NewWorkerPoolWithOptions(struct{}{}, 3, ns, pool, work.WorkerPoolOptions{OnOutcome: m.OnOutcome})
	wp.Middleware(func(job *work.Job, next work.NextMiddlewareFunc) error {
		defer ended.Add(1)
		return next()
	})
	wp.Job("ok", func(job *work.Job) error { time.Sleep(20 * time.Millisecond); return nil })
	wp.JobWithOptions("fail", failOpts, func(job *work.Job) error { return errors.New("boom") })
	wp.JobWithOptions("panic", panicOpts, func(job *work.Job) error { panic("kaboom") })
	wp.Job("failnow", func(job *work.Job) error { return work.FailNow(errors.New("account closed")) })
	wp.Job("snooze", func(job *work.Job) error { return work.Snooze(time.Hour) })
	wp.JobWithOptions("slow", work.JobOptions{Timeout: 5 * time.Millisecond}, func(job *work.Job) error {
		time.Sleep(30 * time.Millisecond) // ignores its context: fails with DeadlineExceeded
		return nil
	})
	wp.Job("block", func(job *work.Job) error {
		blocking <- struct{}{}
		<-release
		return nil
	})
	for i := 0; i < 3; i++ {
		enq.Enqueue("ok", work.Q{"i": i})
	}
	enq.Enqueue("fail", work.Q{"i": 1})
	enq.Enqueue("fail", work.Q{"i": 2})
	enq.Enqueue("panic", nil)
	enq.Enqueue("failnow", nil)
	enq.Enqueue("snooze", nil)
	enq.Enqueue("slow", nil)
	wp.Start()
	defer wp.Stop()

	deadline := time.Now().Add(10 * time.Second)
	for ended.Load() < 9 {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of 9 jobs ended", ended.Load())
		}
		time.Sleep(5 * time.Millisecond)
	}
	enq.Enqueue("block", nil)
	<-blocking

	// Busy workers show up at the pool's next observation write (at most a second later), and the
	// failed jobs in the retry and dead sets once their outcome is acknowledged.
	var fams map[string]*dto.MetricFamily
	deadline = time.Now().Add(10 * time.Second)
	for {
		fams = scrape(t, srv)
		busy, _ := value(fams, "work_workers", "state=busy")
		dead, _ := value(fams, "work_dead_jobs")
		retry, _ := value(fams, "work_retry_jobs")
		if busy == 1 && dead == 3 && retry == 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("busy workers %v, dead %v, retry %v; want 1, 3, 2", busy, dead, retry)
		}
		time.Sleep(50 * time.Millisecond)
	}

	nsl := "namespace=" + ns
	check := func(name string, want float64, labels ...string) {
		t.Helper()
		got, ok := value(fams, name, append(labels, nsl)...)
		if !ok || got != want {
			t.Errorf("%s%v = %v (present %v), want %v", name, labels, got, ok, want)
		}
	}
	absent := func(name string, labels ...string) {
		t.Helper()
		if got, ok := value(fams, name, append(labels, nsl)...); ok {
			t.Errorf("%s%v = %v, want no sample", name, labels, got)
		}
	}

	check("work_jobs_processed_total", 3, "job_name=ok")
	check("work_jobs_processed_total", 2, "job_name=fail")
	check("work_jobs_processed_total", 1, "job_name=panic")
	absent("work_jobs_processed_total", "job_name=block") // still running
	absent("work_jobs_failed_total", "job_name=ok")
	check("work_jobs_failed_total", 2, "job_name=fail")
	check("work_jobs_failed_total", 1, "job_name=panic")
	check("work_jobs_dead_total", 2, "job_name=fail")
	absent("work_jobs_dead_total", "job_name=panic") // 1 failure of 3 allowed: retried
	check("work_jobs_retried_total", 1, "job_name=panic")
	absent("work_jobs_dead_total", "job_name=ok")
	check("work_jobs_failed_total", 1, "job_name=failnow")
	check("work_jobs_dead_total", 1, "job_name=failnow") // FailNow is final whatever MaxFails says
	check("work_jobs_failed_total", 1, "job_name=slow")  // past its Timeout
	check("work_jobs_retried_total", 1, "job_name=slow")
	check("work_jobs_processed_total", 1, "job_name=snooze")
	check("work_jobs_snoozed_total", 1, "job_name=snooze")
	absent("work_jobs_failed_total", "job_name=snooze")
	check("work_job_duration_seconds", 3, "job_name=ok")
	check("work_job_duration_seconds", 1, "job_name=panic")
	if h := fams["work_job_duration_seconds"]; h != nil {
		for _, mm := range h.GetMetric() {
			for _, l := range mm.GetLabel() {
				if l.GetValue() == "ok" && mm.GetHistogram().GetSampleSum() < 3*0.02 {
					t.Errorf("duration sum of ok jobs %v, want at least 0.06", mm.GetHistogram().GetSampleSum())
				}
			}
		}
	}

	check("work_queue_jobs", 2, "job_name=waiting")
	check("work_queue_jobs", 0, "job_name=ok")
	check("work_queue_paused", 1, "job_name=waiting")
	check("work_queue_paused", 0, "job_name=ok")
	if lat, _ := value(fams, "work_queue_latency_seconds", "job_name=waiting"); lat < 119 || lat > 180 {
		t.Errorf("latency of waiting = %v, want about 120", lat)
	}
	check("work_queue_latency_seconds", 0, "job_name=ok")
	check("work_scheduled_jobs", 2) // "later" and the snoozed job
	check("work_retry_jobs", 2)     // panic and slow
	check("work_dead_jobs", 3)      // fail twice and failnow
	check("work_dead_jobs_trimmed_total", 0)
	check("work_worker_pools", 1)
	check("work_workers", 1, "state=busy")
	check("work_workers", 2, "state=idle")
	check("work_jobs_running", 1, "job_name=block")
	check("work_scrape_success", 1)

	close(release)
	wp.Drain()
	// The collector itself passes the registry's consistency checks.
	if n, err := testutil.GatherAndCount(reg, "work_jobs_processed_total"); err != nil || n != 7 {
		t.Errorf("GatherAndCount = %d, %v; want 7 series (ok, fail, panic, failnow, snooze, slow, block)", n, err)
	}
	if got := testutil.ToFloat64(counterOf(t, reg, "block")); got != 1 {
		t.Errorf("processed block = %v, want 1", got)
	}
}

// counterOf returns a collector that yields the processed counter of jobName alone, for
// testutil.ToFloat64.
func counterOf(t *testing.T, reg *prometheus.Registry, jobName string) prometheus.Collector {
	t.Helper()
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() != "work_jobs_processed_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "job_name" && l.GetValue() == jobName {
					c := prometheus.NewCounter(prometheus.CounterOpts{Name: "x"})
					c.Add(m.GetCounter().GetValue())
					return c
				}
			}
		}
	}
	t.Fatalf("no work_jobs_processed_total{job_name=%q}", jobName)
	return nil
}

// Keyed jobs show up per job name, summed over the keys, with no label per key.
func TestCollectorKeyedJobs(t *testing.T) {
	pool := testPool(t)
	ns := testNamespace(t, pool)
	m := workprom.NewCollector(ns, pool)
	_, srv := serve(t, m)

	// sync: tenant-a 4 jobs, tenant-b 2, tenant-c 3 (paused); export: tenant-x 2, served by no pool.
	enq := work.NewEnqueuer(ns, pool)
	var jobs []work.BatchJob
	for key, n := range map[string]int{"tenant-a": 4, "tenant-b": 2, "tenant-c": 3} {
		for i := 0; i < n; i++ {
			jobs = append(jobs, work.BatchJob{Name: "sync", Key: key, Args: work.Q{"i": i}})
		}
	}
	jobs = append(jobs, work.BatchJob{Name: "export", Key: "tenant-x"}, work.BatchJob{Name: "export", Key: "tenant-x"})
	if _, err := enq.EnqueueBatch(jobs); err != nil {
		t.Fatal(err)
	}
	client := work.NewClient(ns, pool)
	if err := client.PauseKey("sync", "tenant-c"); err != nil {
		t.Fatal(err)
	}

	// One job of each key runs at a time, and blocks until release: a and b run one each.
	release := make(chan struct{})
	wp := work.NewWorkerPool(struct{}{}, 10, ns, pool)
	wp.JobWithOptions("sync", work.JobOptions{KeyConcurrency: 1}, func(job *work.Job) error {
		<-release
		return nil
	})
	wp.Start()
	defer wp.Stop()
	released := false
	defer func() {
		if !released {
			close(release)
		}
	}()

	nsl := "namespace=" + ns
	// await scrapes until the gauges of jobName read want (waiting jobs, keys waiting, keys running,
	// largest backlog, paused keys), and returns the last exposition.
	await := func(jobName string, want [5]float64) string {
		t.Helper()
		names := []string{"work_keyed_jobs_waiting", "work_keyed_keys_waiting", "work_keyed_keys_running",
			"work_keyed_largest_backlog_jobs", "work_keyed_keys_paused"}
		var got [5]float64
		deadline := time.Now().Add(10 * time.Second)
		for {
			body := scrapeText(t, srv)
			fams := parse(t, body)
			for i, name := range names {
				got[i] = -1 // no sample
				if v, ok := value(fams, name, "job_name="+jobName, nsl); ok {
					got[i] = v
				}
			}
			success, _ := value(fams, "work_scrape_success", nsl)
			if got == want && success == 1 {
				return body
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: keyed gauges %v, want %v (scrape success %v)", jobName, got, want, success)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	body := await("sync", [5]float64{7, 3, 2, 3, 1})
	await("export", [5]float64{2, 1, 0, 2, 0})
	for _, line := range strings.Split(body, "\n") {
		if strings.HasPrefix(line, "work_keyed_") && strings.Contains(line, "tenant-") {
			t.Errorf("a key in a label: %s", line)
		}
	}

	// Once a and b have drained, only the paused key waits.
	close(release)
	released = true
	await("sync", [5]float64{3, 1, 0, 3, 1})
}

func TestCollectorRedisDown(t *testing.T) {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("no redis") }}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(workprom.NewCollector("down", pool))
	fams, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range fams {
		if f.GetName() == "work_scrape_success" {
			if v := f.GetMetric()[0].GetGauge().GetValue(); v != 0 {
				t.Fatalf("work_scrape_success = %v, want 0", v)
			}
			return
		}
	}
	t.Fatal("no work_scrape_success")
}

func TestWithoutNamespaceMetricsAndPrefix(t *testing.T) {
	pool := &redis.Pool{Dial: func() (redis.Conn, error) { return nil, errors.New("must not dial") }}
	c := workprom.NewCollector("x", pool, workprom.WithoutNamespaceMetrics(), workprom.WithPrefix("jobs"),
		workprom.WithBuckets([]float64{1, 2}))
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	job := &work.Job{Name: "n"}
	c.OnOutcome(work.JobOutcome{Job: job, Result: work.ResultDone})
	c.OnOutcome(work.JobOutcome{Job: job, Result: work.ResultDead, Err: errors.New("p"), Panicked: true})
	want := `
# HELP jobs_jobs_failed_total Job runs in this process that failed: an error, a panic, a timeout or a cancel.
# TYPE jobs_jobs_failed_total counter
jobs_jobs_failed_total{job_name="n",namespace="x"} 1
# HELP jobs_jobs_processed_total Job runs in this process that ended, successful or not.
# TYPE jobs_jobs_processed_total counter
jobs_jobs_processed_total{job_name="n",namespace="x"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "jobs_jobs_processed_total", "jobs_jobs_failed_total"); err != nil {
		t.Fatal(err)
	}
	if n, err := testutil.GatherAndCount(reg); err != nil || n != 4 { // processed, failed, dead, duration
		t.Fatalf("GatherAndCount = %d, %v; want 4", n, err)
	}
}

func TestCollectorBacklogs(t *testing.T) {
	pool := testPool(t)
	ns := testNamespace(t, pool)
	_, srv := serve(t, workprom.NewCollector(ns, pool))
	nsl := "namespace=" + ns

	// No relay reports: no backlog series.
	if body := scrapeText(t, srv); strings.Contains(body, "work_backlog_jobs{") {
		t.Errorf("backlog series with no report:\n%s", body)
	}

	if err := work.NewEnqueuer(ns, pool).ReportBacklog("postgres:work_outbox", 42, time.Now().Add(-90*time.Second)); err != nil {
		t.Fatal(err)
	}
	// A relay that stopped five minutes ago, whose report ReportBacklog could not write (it stamps
	// the present); and an empty source.
	now := time.Now()
	do(t, pool, "HSET", ns+":backlogs", "postgres:gone",
		fmt.Sprintf(`{"waiting":7,"oldest_ms":%d,"reported_ms":%d}`, now.Add(-10*time.Minute).UnixMilli(), now.Add(-5*time.Minute).UnixMilli()))
	if err := work.NewEnqueuer(ns, pool).ReportBacklog("postgres:empty", 0, time.Time{}); err != nil {
		t.Fatal(err)
	}

	fams, within := scrapeGauges(t, srv, nsl, "source",
		"# HELP work_backlog_jobs Jobs waiting in a source to be enqueued, as its relay last reported.",
		"# TYPE work_backlog_jobs gauge",
		"# TYPE work_backlog_oldest_age_seconds gauge",
		"# TYPE work_backlog_report_age_seconds gauge",
	)
	within("work_backlog_jobs", "postgres:work_outbox", 42, 42)
	within("work_backlog_oldest_age_seconds", "postgres:work_outbox", 90, 91)
	within("work_backlog_report_age_seconds", "postgres:work_outbox", 0, 10)
	within("work_backlog_jobs", "postgres:gone", 7, 7)
	within("work_backlog_oldest_age_seconds", "postgres:gone", 300, 300.01)
	within("work_backlog_report_age_seconds", "postgres:gone", 300, 310)
	within("work_backlog_jobs", "postgres:empty", 0, 0)
	within("work_backlog_oldest_age_seconds", "postgres:empty", 0, 0)
	if v, _ := value(fams, "work_scrape_success", nsl); v != 1 {
		t.Errorf("work_scrape_success = %v", v)
	}

	// A forgotten source leaves the exposition.
	if err := work.NewClient(ns, pool).ForgetBacklog("postgres:gone"); err != nil {
		t.Fatal(err)
	}
	if _, ok := value(scrape(t, srv), "work_backlog_jobs", "source=postgres:gone"); ok {
		t.Error("a forgotten source is still exported")
	}
}

func TestCollectorDebouncedBursts(t *testing.T) {
	pool := testPool(t)
	ns := testNamespace(t, pool)
	_, srv := serve(t, workprom.NewCollector(ns, pool))
	nsl := "namespace=" + ns

	// No burst pending: no debounced series.
	if body := scrapeText(t, srv); strings.Contains(body, "work_debounced_pending{") {
		t.Errorf("debounced series with no burst:\n%s", body)
	}

	e := work.NewEnqueuer(ns, pool)
	enqueue := func(name, id string) *work.Job {
		t.Helper()
		j, err := e.EnqueueWith(name, work.Q{"id": id}, work.EnqueueOptions{Debounce: &work.Debounce{ID: id, Window: time.Hour}})
		if err != nil {
			t.Fatal(err)
		}
		return j
	}
	enqueue("reindex", "doc-1")
	enqueue("reindex", "doc-1")
	enqueue("reindex", "doc-2")
	digest := enqueue("digest", "user-7")
	// A burst that began two minutes ago (an enqueue always stamps the present).
	do(t, pool, "HSET", ns+":debounce:reindex:{doc-1}", "first_ms", time.Now().Add(-2*time.Minute).UnixMilli())

	fams, within := scrapeGauges(t, srv, nsl, "job_name",
		"# HELP work_debounced_pending Bursts of debounced enqueues of a job name whose job has not run yet.",
		"# TYPE work_debounced_pending gauge",
		"# TYPE work_debounced_oldest_seconds gauge",
	)
	within("work_debounced_pending", "reindex", 2, 2)
	within("work_debounced_oldest_seconds", "reindex", 120, 130)
	within("work_debounced_pending", "digest", 1, 1)
	within("work_debounced_oldest_seconds", "digest", 0, 10)
	if v, _ := value(fams, "work_scrape_success", nsl); v != 1 {
		t.Errorf("work_scrape_success = %v", v)
	}

	// A burst whose job ran is over: its job name leaves the exposition.
	bursts, err := work.NewClient(ns, pool).PendingBursts()
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range bursts {
		if b.Job.ID == digest.ID {
			if err := work.NewClient(ns, pool).RunScheduledJobNow(b.RunAt.Unix(), digest.ID); err != nil {
				t.Fatal(err)
			}
		}
	}
	fams = scrape(t, srv)
	if _, ok := value(fams, "work_debounced_pending", "job_name=digest"); ok {
		t.Error("a job name with no burst pending is still exported")
	}
	within("work_debounced_pending", "reindex", 2, 2)
}

func TestCollectorGroups(t *testing.T) {
	pool := testPool(t)
	ns := testNamespace(t, pool)
	_, srv := serve(t, workprom.NewCollector(ns, pool))
	nsl := "namespace=" + ns

	// No group with jobs: no group series.
	if body := scrapeText(t, srv); strings.Contains(body, "work_group_jobs{") || strings.Contains(body, "work_groups{") {
		t.Errorf("group series with no group:\n%s", body)
	}

	e := work.NewEnqueuer(ns, pool)
	enqueue := func(name, group string, n int) {
		t.Helper()
		for i := 0; i < n; i++ {
			if _, err := e.EnqueueWith(name, work.Q{"i": i}, work.EnqueueOptions{Group: group}); err != nil {
				t.Fatal(err)
			}
		}
	}
	enqueue("digest", "user-1", 3)
	enqueue("digest", "user-2", 2)
	enqueue("export", "tenant-9", 1)
	// The oldest job of user-2 arrived two minutes ago (an enqueue always stamps the present).
	head := ns + ":group:digest:{user-2}"
	conn := pool.Get()
	raw, err := redis.String(conn.Do("LINDEX", head, 0))
	conn.Close()
	if err != nil {
		t.Fatal(err)
	}
	_, payload, _ := strings.Cut(raw, " ")
	do(t, pool, "LSET", head, 0, strconv.FormatInt(time.Now().Add(-2*time.Minute).UnixMilli(), 10)+" "+payload)

	fams, within := scrapeGauges(t, srv, nsl, "job_name",
		"# HELP work_group_jobs Jobs of a job name waiting in groups to be flushed into calls.",
		"# TYPE work_group_jobs gauge",
		"# TYPE work_groups gauge",
		"# TYPE work_group_oldest_seconds gauge",
	)
	within("work_group_jobs", "digest", 5, 5)
	within("work_groups", "digest", 2, 2)
	within("work_group_oldest_seconds", "digest", 120, 130)
	within("work_group_jobs", "export", 1, 1)
	within("work_groups", "export", 1, 1)
	within("work_group_oldest_seconds", "export", 0, 10)
	if v, _ := value(fams, "work_scrape_success", nsl); v != 1 {
		t.Errorf("work_scrape_success = %v", v)
	}

	// A name whose groups were all flushed leaves the exposition: once a started pool has set a
	// MaxDelay of a second, the next enqueue makes the export group due.
	wp := work.NewWorkerPool(struct{}{}, 1, ns, pool).GroupJob("export", work.GroupOptions{MaxDelay: time.Second}, func([]*work.Job) error { return nil })
	wp.Start()
	defer wp.Stop()
	enqueue("export", "tenant-9", 1)
	deadline := time.Now().Add(15 * time.Second)
	for {
		fams = scrape(t, srv)
		if _, ok := value(fams, "work_group_jobs", "job_name=export"); !ok {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a job name with no group waiting is still exported")
		}
		time.Sleep(50 * time.Millisecond)
	}
	within("work_group_jobs", "digest", 5, 5)
}

// scrapeGauges scrapes srv, checks that the exposition holds each of lines (HELP and TYPE lines), and
// returns the families and a check that a gauge of the namespace (its label nsl) with the given label
// value is within [lo, hi].
func scrapeGauges(t *testing.T, srv *httptest.Server, nsl, label string, lines ...string) (map[string]*dto.MetricFamily, func(name, val string, lo, hi float64)) {
	t.Helper()
	body := scrapeText(t, srv)
	for _, l := range lines {
		if !strings.Contains(body, l) {
			t.Errorf("exposition lacks %q", l)
		}
	}
	fams := parse(t, body)
	return fams, func(name, val string, lo, hi float64) {
		t.Helper()
		v, ok := value(fams, name, label+"="+val, nsl)
		if !ok || v < lo || v > hi {
			t.Errorf("%s{%s=%q} = %v (present %v), want %v to %v", name, label, val, v, ok, lo, hi)
		}
	}
}
