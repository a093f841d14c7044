package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

// The tests build the command and run it against the redis-server at WORK_TEST_REDIS (default
// 127.0.0.1:6379), each in a namespace of its own.

var binary string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "work-cli-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binary = filepath.Join(dir, "work")
	build := exec.Command("go", "build", "-o", binary, ".")
	build.Stderr = os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintln(os.Stderr, "building the command:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

var testRedisAddr = redistest.Addr

var nsCounter atomic.Int64

// env is one test's namespace.
type env struct {
	t    *testing.T
	ns   string
	pool *redis.Pool
}

func newEnv(t *testing.T) *env {
	t.Helper()
	addr := testRedisAddr()
	pool := &redis.Pool{MaxActive: 5, Wait: true, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	c := pool.Get()
	if _, err := c.Do("PING"); err != nil {
		t.Fatalf("no test redis at %s: %v", addr, err)
	}
	c.Close()
	e := &env{t: t, ns: fmt.Sprintf("cli-test-%s-%d-%d", t.Name(), os.Getpid(), nsCounter.Add(1)), pool: pool}
	t.Cleanup(func() {
		c := pool.Get()
		keys, _ := redis.Strings(c.Do("KEYS", e.ns+":*"))
		for _, k := range keys {
			c.Do("DEL", k)
		}
		c.Close()
		pool.Close()
	})
	return e
}

func (e *env) do(cmd string, args ...interface{}) interface{} {
	e.t.Helper()
	c := e.pool.Get()
	defer c.Close()
	r, err := c.Do(cmd, args...)
	if err != nil {
		e.t.Fatalf("%s: %v", cmd, err)
	}
	return r
}

func (e *env) strings(cmd string, args ...interface{}) []string {
	e.t.Helper()
	s, _ := redis.Strings(e.do(cmd, args...), nil)
	return s
}

func (e *env) int(cmd string, args ...interface{}) int64 {
	e.t.Helper()
	n, _ := redis.Int64(e.do(cmd, args...), nil)
	return n
}

func (e *env) key(k string) string { return e.ns + ":" + k }

// result is one run of the command.
type result struct {
	code           int
	stdout, stderr string
}

// run runs the command with the namespace and test server, and environ on top of a clean environment.
func (e *env) run(environ []string, args ...string) result {
	e.t.Helper()
	full := append([]string{"--redis", testRedisAddr(), "--ns", e.ns}, args...)
	return runBinary(e.t, environ, full...)
}

func runBinary(t *testing.T, environ []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(binary, args...)
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}, environ...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*exec.ExitError); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	return result{code, out.String(), errb.String()}
}

func (r result) want(t *testing.T, code int, stdout ...string) {
	t.Helper()
	if r.code != code {
		t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", r.code, code, r.stdout, r.stderr)
	}
	for _, s := range stdout {
		if !strings.Contains(r.stdout, s) {
			t.Errorf("stdout lacks %q:\n%s", s, r.stdout)
		}
	}
	if code == 0 && r.stderr != "" {
		t.Errorf("stderr of a success: %s", r.stderr)
	}
	if code != 0 && !strings.HasPrefix(r.stderr, "work: ") {
		t.Errorf("stderr of a failure: %q", r.stderr)
	}
}

func TestUsageErrorsExitWith2(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, args := range [][]string{
		{},
		{"nope"},
		{"queues", "--bogus"},
		{"queues", "extra"},
		{"dead"},
		{"dead", "bogus"},
		{"dead", "retry"},
		{"dead", "retry", "1", "2", "3"},
		{"dead", "retry", "abc", "id"},
		{"dead", "retry", "id", "--all"},
		{"retry", "delete", "--all"},
		{"enqueue"},
		{"enqueue", "x", "--args", "[1]"},
		{"enqueue", "x", "--args", "{"},
		{"enqueue", "x", "--in", "-5s"},
		{"enqueue", "x", "--in", "soon"},
		{"watch", "--interval", "1ms"},
		{"stats", "--since", "0s"},
		{"job"},
		{"cancel"},
		{"cancel", ""},
		{"cancel", "a", "b"},
		{"periodic", "extra"},
		{"pause"},
		{"dead", "list", "--page", "x"},
		{"ui", "--user", "admin"},
		{"--redis", "http://x", "queues"},
	} {
		r := e.run(nil, args...)
		if r.code != 2 || !strings.HasPrefix(r.stderr, "work: ") || !strings.Contains(r.stderr, "--help") || r.stdout != "" {
			t.Errorf("work %q: exit %d, stdout %q, stderr %q; want 2 and a message", args, r.code, r.stdout, r.stderr)
		}
	}
	// Help is no error.
	r := e.run(nil, "--help")
	r.want(t, 0, "Exit status: 0 success, 1 error, 2 bad usage, 3 not found", "enqueue", "watch")
}

func TestUnreachableRedisExitsWith1(t *testing.T) {
	t.Parallel()
	r := runBinary(t, nil, "--redis", "127.0.0.1:1", "queues")
	if r.code != 1 || !strings.Contains(r.stderr, "cannot reach Redis at 127.0.0.1:1") {
		t.Errorf("exit %d, stderr %q", r.code, r.stderr)
	}
	r = runBinary(t, nil, "--redis", "redis://user:hunter2@127.0.0.1:1/0", "stats")
	if r.code != 1 || strings.Contains(r.stderr, "hunter2") || !strings.Contains(r.stderr, "xxxxx") {
		t.Errorf("exit %d, stderr %q: the password must be hidden", r.code, r.stderr)
	}
}

func TestEnqueueAndQueues(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := e.run(nil, "enqueue", "send_email", "--args", `{"to":"a@example.com","big":12345678901234567890}`)
	r.want(t, 0, "enqueued send_email job ")
	q := e.strings("LRANGE", e.key("jobs:send_email"), 0, -1)
	if len(q) != 1 || !strings.Contains(q[0], `"big":12345678901234567890`) || !strings.Contains(q[0], `"to":"a@example.com"`) {
		t.Fatalf("queue %q", q)
	}
	r = e.run(nil, "enqueue", "report", "--in", "90s", "--json")
	r.want(t, 0)
	var res struct {
		Enqueued bool      `json:"enqueued"`
		Job      *work.Job `json:"job"`
		RunAt    int64     `json:"run_at"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || !res.Enqueued || res.Job.Name != "report" || res.RunAt < time.Now().Unix()+80 {
		t.Fatalf("--json: %q, %v", r.stdout, err)
	}
	if e.int("ZCARD", e.key("scheduled")) != 1 {
		t.Error("--in did not schedule")
	}
	e.run(nil, "enqueue", "rebuild", "--unique", "--args", `{"i":1}`).want(t, 0, "enqueued rebuild job")
	e.run(nil, "enqueue", "rebuild", "--unique", "--args", `{"i":1}`).want(t, 0, "not enqueued: a rebuild job with the same arguments is already waiting")
	if e.int("LLEN", e.key("jobs:rebuild")) != 1 {
		t.Error("--unique enqueued a duplicate")
	}
	e.do("SET", e.key("jobs:rebuild:paused"), "1")
	e.do("SET", e.key("jobs:rebuild:lock"), "2")
	e.do("SET", e.key("jobs:rebuild:max_concurrency"), "3")

	r = e.run(nil, "queues")
	r.want(t, 0, "QUEUE", "LATENCY", "IN FLIGHT")
	if !regexp.MustCompile(`(?m)^rebuild\s+1\s+\d+s\s+2\s+3\s+paused$`).MatchString(r.stdout) ||
		!regexp.MustCompile(`(?m)^send_email\s+1\s+\d+s\s+0\s+-\s+running$`).MatchString(r.stdout) {
		t.Errorf("queues table:\n%s", r.stdout)
	}
	r = e.run(nil, "queues", "--json")
	r.want(t, 0)
	var qs []work.QueueStat
	if err := json.Unmarshal([]byte(r.stdout), &qs); err != nil || len(qs) != 3 || qs[1].JobName != "report" || !qs[0].Paused {
		t.Errorf("queues --json: %s (%v)", r.stdout, err)
	}
}

func TestEnvironmentSetsTheConnection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	r := runBinary(t, []string{"WORK_REDIS=redis://" + testRedisAddr() + "/0", "WORK_NS=" + e.ns}, "enqueue", "from_env")
	r.want(t, 0, "enqueued from_env")
	if e.int("LLEN", e.key("jobs:from_env")) != 1 {
		t.Error("WORK_REDIS and WORK_NS were not used")
	}
	// Database 1 through the URL is another keyspace.
	r = runBinary(t, []string{"WORK_NS=" + e.ns}, "--redis", "redis://"+testRedisAddr()+"/1", "queues", "--json")
	r.want(t, 0)
	if strings.Contains(r.stdout, "from_env") {
		t.Errorf("database 1 shows database 0's queues: %s", r.stdout)
	}
}

func TestStats(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	now := time.Now().Unix()
	e.do("SADD", e.key("known_jobs"), "a", "b")
	e.do("LPUSH", e.key("jobs:a"), `{"name":"a","id":"1","t":1}`, `{"name":"a","id":"2","t":1}`)
	e.do("ZADD", e.key("dead"), 1, `{"name":"a","id":"3","t":1}`)
	e.do("ZADD", e.key("retry"), 1, `{"name":"a","id":"4","t":1}`, 2, `{"name":"a","id":"5","t":1}`)
	e.do("HSET", fmt.Sprintf("%s:stats:a:%d", e.ns, now/86400), fmt.Sprintf("p:%d", now/60), 7, fmt.Sprintf("f:%d", now/60), 2)
	r := e.run(nil, "stats")
	r.want(t, 0, "2 in 2 queues (0 paused)", "7 processed, 2 failed", "LAST 1h")
	if !regexp.MustCompile(`(?m)^DEAD\s+1$`).MatchString(r.stdout) || !regexp.MustCompile(`(?m)^RETRY\s+2$`).MatchString(r.stdout) {
		t.Errorf("stats:\n%s", r.stdout)
	}
	r = e.run(nil, "stats", "--json")
	r.want(t, 0)
	var st struct {
		Summary   work.Summary `json:"summary"`
		Processed int64        `json:"processed"`
		Failed    int64        `json:"failed"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &st); err != nil || st.Summary.Dead != 1 || st.Summary.Queued != 2 || st.Processed != 7 || st.Failed != 2 {
		t.Errorf("stats --json: %s (%v)", r.stdout, err)
	}
}

func TestDeadRetryAndScheduledCommands(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	dead := func(score int, name, id string) {
		e.do("ZADD", e.key("dead"), score, fmt.Sprintf(`{"name":%q,"id":%q,"t":1,"args":{"n":%d},"fails":4,"err":"boom %s","failed_at":%d}`, name, id, score, id, score))
	}
	dead(100, "mail", "d1")
	dead(101, "mail", "d2")
	dead(102, "sms", "d3")
	dead(103, "sms", "d4")
	dead(104, "push", "d5")

	r := e.run(nil, "dead", "list")
	r.want(t, 0, "DIED", "SCORE", "ERROR", "boom d1", `{"n":104}`, "page 1 of 1, 5 jobs")
	r = e.run(nil, "dead", "list", "--search", "SMS", "--json")
	r.want(t, 0)
	var list struct {
		Count int64 `json:"count"`
		Jobs  []struct {
			Score int64  `json:"score"`
			ID    string `json:"id"`
			Name  string `json:"name"`
		} `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || list.Count != 2 || list.Jobs[0].ID != "d3" || list.Jobs[0].Score != 102 {
		t.Errorf("dead list --search --json: %s", r.stdout)
	}
	e.run(nil, "dead", "list", "--page", "2").want(t, 0, "no dead jobs (5 in all)")

	e.run(nil, "dead", "retry", "d1").want(t, 0, "retried 1 job")
	if q := e.strings("LRANGE", e.key("jobs:mail"), 0, -1); len(q) != 1 || !strings.Contains(q[0], `"id":"d1"`) || strings.Contains(q[0], "fails") {
		t.Errorf("mail queue after retry: %q", q)
	}
	e.run(nil, "dead", "retry", "d1").want(t, 3)
	e.run(nil, "dead", "retry", "999", "d2").want(t, 3)
	e.run(nil, "dead", "delete", "101", "d2").want(t, 0, "deleted 1 job")
	e.run(nil, "dead", "retry", "--name", "sms", "--json").want(t, 0, `"retried": 2`)
	if e.int("LLEN", e.key("jobs:sms")) != 2 {
		t.Error("--name did not retry the sms jobs")
	}
	dead(105, "push", "d6")
	e.run(nil, "dead", "delete", "--name", "push").want(t, 0, "deleted 2 jobs")
	dead(106, "x", "d7")
	e.run(nil, "dead", "retry", "--all").want(t, 0, "retried all dead jobs")
	dead(107, "x", "d8")
	e.run(nil, "dead", "delete", "--all").want(t, 0, "deleted all dead jobs")
	if e.int("EXISTS", e.key("dead")) != 0 {
		t.Error("dead set not empty")
	}
	e.run(nil, "dead", "delete", "nope").want(t, 3)

	e.do("ZADD", e.key("retry"), 9999999999, `{"name":"mail","id":"r1","t":1,"fails":1,"err":"x"}`)
	e.do("ZADD", e.key("scheduled"), 9999999999, `{"name":"mail","id":"s1","t":1}`, 9999999998, `{"name":"mail","id":"s2","t":1}`)
	e.run(nil, "retry", "list").want(t, 0, "RETRY AT", "r1", "page 1 of 1, 1 job")
	e.run(nil, "retry", "retry", "r1").want(t, 0, "queued 1 job")
	e.run(nil, "retry", "retry", "r1").want(t, 3)
	e.run(nil, "scheduled", "list").want(t, 0, "RUN AT", "s1", "s2")
	e.run(nil, "scheduled", "run", "9999999999", "s1").want(t, 0, "queued 1 job")
	e.run(nil, "scheduled", "delete", "s2").want(t, 0, "deleted 1 job")
	e.run(nil, "scheduled", "delete", "s2").want(t, 3)
	if e.int("ZCARD", e.key("scheduled")) != 0 || e.int("ZCARD", e.key("retry")) != 0 || e.int("LLEN", e.key("jobs:mail")) != 3 {
		t.Error("retry/scheduled commands did not move the jobs")
	}
}

func TestPauseResumeAndJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "pause", "mail").want(t, 0, "paused queue mail")
	if e.int("EXISTS", e.key("jobs:mail:paused")) != 1 {
		t.Error("not paused")
	}
	e.run(nil, "resume", "mail", "--json").want(t, 0, `"status": "resumed"`)
	if e.int("EXISTS", e.key("jobs:mail:paused")) != 0 {
		t.Error("not resumed")
	}

	e.do("SADD", e.key("known_jobs"), "mail")
	e.do("LPUSH", e.key("jobs:mail"), `{"name":"mail","id":"q1","t":1700000000,"args":{"to":"<a@b>"}}`)
	e.do("ZADD", e.key("dead"), 1700000500, `{"name":"mail","id":"x1","t":1,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":"e2Jyb2tlbg=="}`)
	r := e.run(nil, "job", "q1")
	r.want(t, 0, "STATE", "queued", `{"to":"<a@b>"}`, "2023-11-14 22:13:20 UTC")
	r = e.run(nil, "job", "x1", "--json")
	r.want(t, 0)
	var loc work.JobLocation
	if err := json.Unmarshal([]byte(r.stdout), &loc); err != nil || loc.State != "dead" || loc.Score != 1700000500 || string(loc.Job.Raw) != "{broken" {
		t.Errorf("job --json: %s (%v)", r.stdout, err)
	}
	e.run(nil, "job", "x1").want(t, 0, "RAW PAYLOAD", "{broken", "DIED AT")
	r = e.run(nil, "job", "nope")
	r.want(t, 3)
	if !strings.Contains(r.stderr, "no job nope") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestWatchRefreshesABoundedNumberOfTimes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("SADD", e.key("known_jobs"), "mail")
	e.do("LPUSH", e.key("jobs:mail"), `{"name":"mail","id":"q1","t":1}`)
	start := time.Now()
	r := e.run(nil, "watch", "--count", "3", "--interval", "500ms")
	r.want(t, 0, "mail")
	if n := strings.Count(r.stdout, "work watch: namespace"); n != 3 {
		t.Errorf("%d frames, want 3:\n%s", n, r.stdout)
	}
	if strings.Contains(r.stdout, "\x1b[2J") {
		t.Error("the screen is cleared on a pipe")
	}
	if d := time.Since(start); d < time.Second {
		t.Errorf("3 frames 500ms apart took %v", d)
	}
	r = e.run(nil, "watch", "--count", "2", "--interval", "500ms", "--json")
	r.want(t, 0)
	lines := strings.Split(strings.TrimSpace(r.stdout), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d JSON lines", len(lines))
	}
	var f struct {
		Queues []work.QueueStat `json:"queues"`
	}
	if err := json.Unmarshal([]byte(lines[1]), &f); err != nil || len(f.Queues) != 1 || f.Queues[0].Count != 1 {
		t.Errorf("frame %s (%v)", lines[1], err)
	}
}

func TestUIServesUntilSIGTERM(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	cmd := exec.Command(binary, "--redis", testRedisAddr(), "--ns", e.ns, "ui", "--listen", addr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "WORK_WEBUI_TOKEN=t0ken"}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 10)
	go func() {
		s := bufio.NewScanner(stderr)
		for s.Scan() {
			lines <- s.Text()
		}
		close(lines)
	}()
	deadline := time.After(15 * time.Second)
	for ready := false; !ready; {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatal("work ui exited early")
			}
			ready = strings.Contains(l, "web UI on http://"+addr)
		case <-deadline:
			t.Fatal("work ui did not start")
		}
	}
	get := func(token string) int {
		req, _ := http.NewRequest("GET", "http://"+addr+"/queues", nil)
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if code := get(""); code != 401 {
		t.Errorf("without the token: %d", code)
	}
	if code := get("t0ken"); code != 200 {
		t.Errorf("with the token: %d", code)
	}
	cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() {
		for range lines {
		}
		done <- cmd.Wait()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("work ui after SIGTERM: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("work ui did not stop on SIGTERM")
	}
}

// workerPool starts a worker pool of the test's namespace, on a Redis pool of its own (a pool holds
// several connections at once). Handlers blocked on their context are released when the test ends.
func (e *env) workerPool(setup func(wp *work.WorkerPool, release <-chan struct{})) {
	e.t.Helper()
	addr := testRedisAddr()
	rp := &redis.Pool{MaxActive: 20, MaxIdle: 5, Wait: true, Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr) }}
	// The expected failures of cancelled jobs are not worth a log line.
	quiet := slog.New(slog.NewTextHandler(io.Discard, nil))
	wp := work.NewWorkerPoolWithOptions(struct{}{}, 2, e.ns, rp, work.WorkerPoolOptions{Logger: quiet})
	release := make(chan struct{})
	setup(wp, release)
	wp.Start()
	e.t.Cleanup(func() {
		close(release)
		wp.Stop()
		rp.Close()
	})
}

func TestCancelStopsARunningJob(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	started := make(chan string, 2)
	e.workerPool(func(wp *work.WorkerPool, release <-chan struct{}) {
		wp.JobWithOptions("export", work.JobOptions{MaxFails: 5}, func(ctx context.Context, j *work.Job) error {
			started <- j.ID
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-release:
				return errors.New("never cancelled")
			}
		})
	})
	enq := work.NewEnqueuer(e.ns, e.pool)
	first, err := enq.Enqueue("export", nil)
	if err != nil {
		t.Fatal(err)
	}
	second, err := enq.Enqueue("export", nil)
	if err != nil {
		t.Fatal(err)
	}
	<-started
	<-started
	dead := func(id string) bool {
		for _, m := range e.strings("ZRANGE", e.key("dead"), 0, -1) {
			if strings.Contains(m, id) && strings.Contains(m, `"err":"cancelled"`) {
				return true
			}
		}
		return false
	}

	// The pool subscribes when it starts: until then no pool hears the request, which the command
	// says while succeeding.
	var r result
	for deadline := time.Now().Add(10 * time.Second); ; {
		r = e.run(nil, "cancel", first.ID)
		r.want(t, 0, "sent the cancel of job "+first.ID)
		if strings.Contains(r.stdout, "1 worker pool heard it") {
			break
		}
		if !strings.Contains(r.stdout, "no worker pool heard it") || time.Now().After(deadline) {
			t.Fatalf("work cancel: %q", r.stdout)
		}
		time.Sleep(20 * time.Millisecond)
	}
	for deadline := time.Now().Add(10 * time.Second); !dead(first.ID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the cancelled job is not dead with \"cancelled\": %q", e.strings("ZRANGE", e.key("dead"), 0, -1))
		}
	}
	// A job that is no longer running, or that does not exist: exit 3.
	r = e.run(nil, "cancel", first.ID)
	r.want(t, 3)
	if !strings.Contains(r.stderr, "is dead, not running: nothing to cancel") {
		t.Errorf("stderr %q", r.stderr)
	}
	r = e.run(nil, "cancel", "nope")
	r.want(t, 3)
	if !strings.Contains(r.stderr, "no job nope") {
		t.Errorf("stderr %q", r.stderr)
	}

	r = e.run(nil, "cancel", second.ID, "--json")
	r.want(t, 0)
	var res struct {
		JobID string `json:"job_id"`
		Pools int64  `json:"pools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.JobID != second.ID || res.Pools != 1 {
		t.Errorf("cancel --json: %s (%v)", r.stdout, err)
	}
	for deadline := time.Now().Add(10 * time.Second); !dead(second.ID); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the job cancelled with --json is not dead")
		}
	}

}

func TestCancelThatNoPoolHearsSucceedsWithANote(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// A job held by a pool that does not listen (written by hand, as a pool of gocraft/work would),
	// in a namespace where no pool of this library runs: sent, nobody heard, exit 0.
	e.do("SADD", e.key("worker_pools"), "oldpool")
	e.do("HSET", e.key("worker_pools:oldpool"), "heartbeat_at", time.Now().Unix(), "job_names", "legacy", "worker_ids", "w9")
	e.do("SADD", e.key("known_jobs"), "legacy")
	e.do("LPUSH", e.key("jobs:legacy:oldpool:inprogress"), `{"name":"legacy","id":"old1","t":1}`)
	e.run(nil, "cancel", "old1").want(t, 0, "sent the cancel of job old1, but no worker pool heard it")
	r := e.run(nil, "cancel", "old1", "--json")
	r.want(t, 0)
	var res struct {
		JobID string `json:"job_id"`
		Pools *int64 `json:"pools"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &res); err != nil || res.JobID != "old1" || res.Pools == nil || *res.Pools != 0 {
		t.Errorf("cancel --json: %s (%v)", r.stdout, err)
	}
	// Queued, not running: exit 3.
	e.do("LPUSH", e.key("jobs:legacy"), `{"name":"legacy","id":"q1","t":1}`)
	r = e.run(nil, "cancel", "q1")
	r.want(t, 3)
	if !strings.Contains(r.stderr, "job q1 is queued, not running: nothing to cancel") {
		t.Errorf("stderr %q", r.stderr)
	}
}

func TestPeriodicListsThePoolsPeriodicJobs(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.run(nil, "periodic").want(t, 0, "no periodic jobs", "gocraft/work")
	r := e.run(nil, "periodic", "--json")
	r.want(t, 0)
	if strings.TrimSpace(r.stdout) != "[]" {
		t.Errorf("periodic --json without pools: %q", r.stdout)
	}

	e.workerPool(func(wp *work.WorkerPool, _ <-chan struct{}) {
		wp.Job("hourly_report", func(*work.Job) error { return nil })
		wp.PeriodicallyEnqueue("0 0 * * * *", "hourly_report")
	})
	var poolID string
	for deadline := time.Now().Add(10 * time.Second); poolID == ""; time.Sleep(20 * time.Millisecond) {
		if ids := e.strings("SMEMBERS", e.key("worker_pools")); len(ids) == 1 {
			poolID = ids[0]
		} else if time.Now().After(deadline) {
			t.Fatal("the pool did not register")
		}
	}
	r = e.run(nil, "periodic")
	r.want(t, 0, "JOB", "SPEC", "NEXT RUN (UTC)", "WHEN", "POOLS")
	row := regexp.MustCompile(`(?m)^hourly_report\s+0 0 \* \* \* \*\s+\d{4}-\d\d-\d\d \d\d:\d\d:00\s+in \S+\s+` + poolID + `$`)
	if !row.MatchString(r.stdout) {
		t.Errorf("periodic table:\n%s", r.stdout)
	}
	r = e.run(nil, "periodic", "--json")
	r.want(t, 0)
	var pjs []work.PeriodicJob
	if err := json.Unmarshal([]byte(r.stdout), &pjs); err != nil || len(pjs) != 1 {
		t.Fatalf("periodic --json: %s (%v)", r.stdout, err)
	}
	now := time.Now().Unix()
	if pj := pjs[0]; pj.JobName != "hourly_report" || pj.Spec != "0 0 * * * *" || len(pj.WorkerPoolIDs) != 1 || pj.WorkerPoolIDs[0] != poolID ||
		pj.NextRunAt < now-5 || pj.NextRunAt > now+3600 || time.Unix(pj.NextRunAt, 0).Minute() != 0 {
		t.Errorf("periodic --json: %+v", pj)
	}
}

func TestDeadRecordsOfUndecodablePayloadsShowTheirBytes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// As a worker writes them now (text, and base64 for bytes that are not UTF-8), and as earlier
	// versions did (base64 in raw_payload).
	e.do("ZADD", e.key("dead"),
		100, `{"name":"mail","id":"txt","t":1,"args":null,"err":"malformed job payload","failed_at":9,"raw_text":"{\"to\":\"<é>\", broken"}`,
		101, `{"name":"mail","id":"bin","t":1,"args":null,"err":"malformed job payload","failed_at":9,"raw_base64":"/34="}`,
		102, `{"name":"mail","id":"old","t":1,"args":null,"err":"malformed job payload","failed_at":9,"raw_payload":"e2Jyb2tlbg=="}`)

	r := e.run(nil, "job", "txt")
	r.want(t, 0, "RAW PAYLOAD  ", `{"to":"<é>", broken`)
	if strings.Contains(r.stdout, "BASE64") {
		t.Errorf("UTF-8 bytes labelled base64:\n%s", r.stdout)
	}
	e.run(nil, "job", "bin").want(t, 0, "RAW PAYLOAD (BASE64)", "/34=")
	e.run(nil, "job", "old").want(t, 0, "RAW PAYLOAD  ", "{broken")
	e.run(nil, "dead", "list").want(t, 0, `(undecodable) {"to":"<é>", broken`, "(undecodable, base64) /34=", "(undecodable) {broken")

	// JSON shows them as the records do now, and decodes back to the same bytes.
	want := map[string][]string{
		"txt": {`"raw_text": "{\"to\":\"<é>\", broken"`},
		"bin": {`"raw_base64": "/34="`},
		"old": {`"raw_text": "{broken"`},
	}
	raw := map[string]string{"txt": `{"to":"<é>", broken`, "bin": "\xff~", "old": "{broken"}
	for id, fields := range want {
		r := e.run(nil, "job", id, "--json")
		r.want(t, 0, fields...)
		var loc work.JobLocation
		if err := json.Unmarshal([]byte(r.stdout), &loc); err != nil || string(loc.Job.Raw) != raw[id] {
			t.Errorf("job %s --json reads back Raw %q (%v), want %q", id, loc.Job.Raw, err, raw[id])
		}
		var fieldsOf struct {
			Job map[string]json.RawMessage `json:"job"`
		}
		_ = json.Unmarshal([]byte(r.stdout), &fieldsOf)
		if n := rawFields(fieldsOf.Job); n != 1 {
			t.Errorf("job %s --json holds %d raw fields: %s", id, n, r.stdout)
		}
	}
	r = e.run(nil, "dead", "list", "--json")
	r.want(t, 0, want["txt"][0], want["bin"][0], want["old"][0])
	var list struct {
		Jobs []map[string]json.RawMessage `json:"jobs"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &list); err != nil || len(list.Jobs) != 3 {
		t.Fatalf("dead list --json: %s (%v)", r.stdout, err)
	}
	for _, j := range list.Jobs {
		if n := rawFields(j); n != 1 {
			t.Errorf("dead list --json: a job holds %d raw fields: %s", n, r.stdout)
		}
	}
}

// rawFields counts the fields of a job's JSON that hold its raw bytes, in any form.
func rawFields(job map[string]json.RawMessage) int {
	n := 0
	for _, k := range []string{"raw_text", "raw_base64", "raw_payload"} {
		if _, ok := job[k]; ok {
			n++
		}
	}
	return n
}
