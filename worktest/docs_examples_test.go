package worktest_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/workqueue/work"
	"github.com/workqueue/work/worktest"
)

// The producers in other languages of docs/redis-layout.md (docs/examples) enqueue jobs that a work
// pool runs. Without redis-cli, node or npm the test is skipped, except when CI is set.

var examplesDir = filepath.Join("..", "docs", "examples")

func needTool(t *testing.T, name string) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		missing(t, name+" is not installed; the docs/examples producers cannot be run")
	}
}

func missing(t *testing.T, why string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatal(why)
	}
	t.Skip("skipped: " + why)
}

func runTool(t *testing.T, dir, ns string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "WORK_REDIS="+redisAddr(), "WORK_NS="+ns)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// npmInstall installs the Node example's dependencies (from its lock file) unless they are there.
func npmInstall(t *testing.T, dir string) {
	t.Helper()
	if _, err := os.Stat(filepath.Join(dir, "node_modules", "redis", "package.json")); err == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "npm", "ci", "--no-audit", "--no-fund", "--loglevel=error")
	cmd.Dir = dir
	if out, err := cmd.CombinedOutput(); err != nil {
		missing(t, "npm ci in docs/examples/node failed (is the npm registry reachable?): "+err.Error()+"\n"+string(out))
	}
}

var idRE = regexp.MustCompile(`^[0-9a-f]{24}$`)

func TestDocsExamplesProducers(t *testing.T) {
	needTool(t, "redis-cli")
	needTool(t, "node")
	needTool(t, "npm")
	pool := testPool(t)
	ns := worktest.Namespace(t, pool)

	out := runTool(t, examplesDir, ns, "sh", "enqueue.sh")
	t.Logf("enqueue.sh:\n%s", out)
	nodeDir := filepath.Join(examplesDir, "node")
	npmInstall(t, nodeDir)
	out = runTool(t, nodeDir, ns, "node", "enqueue.js")
	t.Logf("enqueue.js:\n%s", out)
	if !strings.Contains(out, "duplicate rebuild_index true") {
		t.Errorf("the second unique enqueue was not a duplicate:\n%s", out)
	}

	// What they wrote is what the Go enqueuer writes.
	queued := worktest.Enqueued(t, pool, ns, "send_email")
	if len(queued) != 2 || queued[0].ArgString("address") != "cli@example.com" ||
		queued[1].ArgString("address") != "node@example.com" {
		t.Fatalf("send_email queue: %v", queued)
	}
	for _, j := range queued {
		if !idRE.MatchString(j.ID) || j.EnqueuedAt < time.Now().Unix()-60 {
			t.Errorf("job %+v: bad id or t", j)
		}
	}
	if n := len(worktest.Scheduled(t, pool, ns, "send_email")); n != 2 {
		t.Fatalf("%d scheduled send_email jobs, want 2", n)
	}
	uniqueArgs := work.Q{"index": "users", "note": "<a & b>", "shard": 3}
	enq := work.NewEnqueuer(ns, pool)
	if j, err := enq.EnqueueUnique("rebuild_index", uniqueArgs); err != nil || j != nil {
		t.Fatalf("Go's EnqueueUnique of the job Node enqueued = %v, %v; want a duplicate", j, err)
	}
	queues, err := work.NewClient(ns, pool).Queues()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range queues {
		names = append(names, q.JobName)
	}
	if strings.Join(names, ",") != "rebuild_index,send_email" {
		t.Errorf("known job names %v", names)
	}

	// A pool runs them all: two queued and two scheduled emails, one index rebuild.
	var mu sync.Mutex
	var ran []string
	done := make(chan struct{}, 10)
	wp := work.NewWorkerPool(struct{}{}, 2, ns, pool)
	wp.Job("send_email", func(job *work.Job) error {
		addr, subject := job.ArgString("address"), job.ArgString("subject")
		if err := job.ArgError(); err != nil {
			return err
		}
		mu.Lock()
		ran = append(ran, addr+": "+subject)
		mu.Unlock()
		done <- struct{}{}
		return nil
	})
	wp.Job("rebuild_index", func(job *work.Job) error {
		if !worktest.Match(job, uniqueArgs) {
			t.Errorf("rebuild_index args %v", job.Args)
		}
		mu.Lock()
		ran = append(ran, "rebuild_index "+job.ArgString("index"))
		mu.Unlock()
		done <- struct{}{}
		return nil
	})
	wp.Start()
	defer wp.Stop()
	timeout := time.After(15 * time.Second)
	for i := 0; i < 5; i++ {
		select {
		case <-done:
		case <-timeout:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("only %d of 5 jobs ran: %v", i, ran)
		}
	}
	worktest.Drain(t, wp, 0)
	mu.Lock()
	sort.Strings(ran)
	got := strings.Join(ran, "\n")
	mu.Unlock()
	want := strings.Join([]string{
		"cli-later@example.com: scheduled from redis-cli",
		"cli@example.com: hello from redis-cli",
		"node-later@example.com: scheduled from Node.js",
		"node@example.com: hello from Node.js",
		"rebuild_index users",
	}, "\n")
	if got != want {
		t.Fatalf("ran:\n%s\nwant:\n%s", got, want)
	}
	// The worker freed the unique lock as the job started: the same job can be enqueued again.
	if j, err := enq.EnqueueUnique("rebuild_index", uniqueArgs); err != nil || j == nil {
		t.Fatalf("EnqueueUnique after the run = %v, %v; want a new job", j, err)
	}
	if n, _, err := work.NewClient(ns, pool).DeadJobs(1); err != nil || len(n) != 0 {
		t.Fatalf("dead jobs %v, %v", n, err)
	}
}
