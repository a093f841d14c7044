package webui

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

// Tests run against the redis-server at WORK_TEST_REDIS (default 127.0.0.1:6379), each test in a
// namespace of its own.

func TestMain(m *testing.M) {
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

// The shared test server's helpers (internal/redistest), under the names the tests use.
func newTestPool(t testing.TB) *redis.Pool { return redistest.Pool(t, 50) }

func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	return redistest.Namespace(t, pool, "webui-test")
}

var (
	eventually = redistest.Eventually
	rdo        = redistest.Do
	rInt       = redistest.Int
	rStrings   = redistest.Strings
)

func jobJSON(t testing.TB, j *work.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// fixture is a namespace seeded with jobs in every state, and a server on it.
type fixture struct {
	t    *testing.T
	pool *redis.Pool
	ns   string
	srv  *Server
	now  int64
}

func newFixture(t *testing.T, opts Options) *fixture {
	t.Helper()
	pool := newTestPool(t)
	ns := newTestNamespace(t, pool)
	return &fixture{t: t, pool: pool, ns: ns, srv: NewServerWithOptions(ns, pool, "", opts), now: time.Now().Unix()}
}

func (f *fixture) key(k string) string { return f.ns + ":" + k }

// seed fills the namespace: 2 queued send_email jobs, a scheduled, a retry and two dead jobs, a
// worker pool with one busy and one idle worker.
func (f *fixture) seed() {
	t := f.t
	e := work.NewEnqueuer(f.ns, f.pool)
	for i := 0; i < 2; i++ {
		if _, err := e.Enqueue("send_email", work.Q{"to": fmt.Sprintf("user%d@example.com", i)}); err != nil {
			t.Fatal(err)
		}
	}
	rdo(t, f.pool, "SADD", f.key("known_jobs"), "charge_card", "report")
	rdo(t, f.pool, "ZADD", f.key("scheduled"), f.now+3600, jobJSON(t, &work.Job{Name: "report", ID: "sched1", EnqueuedAt: f.now, Args: work.Q{"day": "monday"}}))
	rdo(t, f.pool, "ZADD", f.key("retry"), f.now+60, jobJSON(t, &work.Job{Name: "charge_card", ID: "retry1", EnqueuedAt: f.now - 100, Args: work.Q{"amount": 5}, Fails: 1, LastErr: "card declined", FailedAt: f.now - 5}))
	rdo(t, f.pool, "ZADD", f.key("dead"), f.now-50, jobJSON(t, &work.Job{Name: "charge_card", ID: "dead1", EnqueuedAt: f.now - 500, Args: work.Q{"amount": 7}, Fails: 4, LastErr: "gateway down", FailedAt: f.now - 50}))
	rdo(t, f.pool, "ZADD", f.key("dead"), f.now-40, jobJSON(t, &work.Job{Name: "report", ID: "dead2", EnqueuedAt: f.now - 500, Fails: 4, LastErr: "no data", FailedAt: f.now - 40}))
	rdo(t, f.pool, "SADD", f.key("worker_pools"), "pool1")
	rdo(t, f.pool, "HSET", f.key("worker_pools:pool1"), "heartbeat_at", f.now, "started_at", f.now-300,
		"job_names", "charge_card,send_email", "concurrency", 2, "worker_ids", "w1,w2", "host", "web-1", "pid", 4242)
	rdo(t, f.pool, "HSET", f.key("worker:w1"), "job_name", "send_email", "job_id", "busy1", "started_at", f.now-3,
		"args", `{"to":"x@example.com"}`, "checkin", "halfway", "checkin_at", f.now-1)
	rdo(t, f.pool, "LPUSH", f.key("jobs:send_email:pool1:inprogress"),
		jobJSON(t, &work.Job{Name: "send_email", ID: "busy1", EnqueuedAt: f.now - 4, Args: work.Q{"to": "x@example.com"}}))
}

// do serves one request on the server's handler.
func (f *fixture) do(method, target string, body io.Reader, hdr map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, body)
	if body != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	f.srv.Handler().ServeHTTP(rec, req)
	return rec
}

func (f *fixture) get(target string) *httptest.ResponseRecorder { return f.do("GET", target, nil, nil) }

func (f *fixture) post(target string) *httptest.ResponseRecorder {
	return f.do("POST", target, nil, nil)
}

// form posts a UI form with the server's token.
func (f *fixture) form(vals url.Values, hdr map[string]string) *httptest.ResponseRecorder {
	if _, ok := vals["csrf"]; !ok {
		vals.Set("csrf", f.srv.csrf)
	}
	return f.do("POST", "/ui/action", strings.NewReader(vals.Encode()), hdr)
}

// decode decodes a JSON answer, failing the test on a wrong status or content type.
func decode(t *testing.T, rec *httptest.ResponseRecorder, status int, v interface{}) {
	t.Helper()
	if rec.Code != status {
		t.Fatalf("status %d, want %d; body %s", rec.Code, status, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json; charset=utf-8" {
		t.Fatalf("content type %q", ct)
	}
	if err := json.Unmarshal(rec.Body.Bytes(), v); err != nil {
		t.Fatalf("body %q: %v", rec.Body, err)
	}
}

// wantError checks a JSON error answer.
func wantError(t *testing.T, rec *httptest.ResponseRecorder, status int) {
	t.Helper()
	var e struct {
		Error string `json:"error"`
	}
	decode(t, rec, status, &e)
	if e.Error == "" {
		t.Fatalf("no error message in %s", rec.Body)
	}
}

// errorCase is a request that gets an error answer.
type errorCase struct {
	method, target string
	status         int
}

// wantErrors serves each request and checks that it gets a JSON error with the status.
func (f *fixture) wantErrors(cases []errorCase) {
	f.t.Helper()
	for _, tc := range cases {
		rec := f.do(tc.method, tc.target, nil, nil)
		if rec.Code != tc.status {
			f.t.Errorf("%s %s: status %d, want %d (%s)", tc.method, tc.target, rec.Code, tc.status, rec.Body)
			continue
		}
		wantError(f.t, rec, tc.status)
	}
}
