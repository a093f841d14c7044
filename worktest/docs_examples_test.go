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
	enq := work.NewEnqueuer(ns, pool)
	client := work.NewClient(ns, pool)

	// The customer globex may have one export waiting, and has one already: Node's must be refused.
	if err := client.SetKeyLimits("export_report", "globex", work.KeyLimits{MaxWaiting: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := enq.EnqueueWith("export_report", work.Q{"month": "2024-03"}, work.EnqueueOptions{Key: "globex"}); err != nil {
		t.Fatal(err)
	}

	out := runTool(t, examplesDir, ns, "sh", "enqueue.sh")
	t.Logf("enqueue.sh:\n%s", out)
	nodeDir := filepath.Join(examplesDir, "node")
	npmInstall(t, nodeDir)
	out = runTool(t, nodeDir, ns, "node", "enqueue.js")
	t.Logf("enqueue.js:\n%s", out)
	if !strings.Contains(out, "duplicate rebuild_index true") {
		t.Errorf("the second unique enqueue was not a duplicate:\n%s", out)
	}
	if !strings.Contains(out, "globex is at its cap: not enqueued") {
		t.Errorf("the keyed job of a key at its cap was enqueued:\n%s", out)
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
	if j, err := enq.EnqueueUnique("rebuild_index", uniqueArgs); err != nil || j != nil {
		t.Fatalf("Go's EnqueueUnique of the job Node enqueued = %v, %v; want a duplicate", j, err)
	}
	queues, err := client.Queues()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, q := range queues {
		names = append(names, q.JobName)
	}
	if strings.Join(names, ",") != "export_report,rebuild_index,send_email" {
		t.Errorf("known job names %v", names)
	}
	// The keyed jobs wait in their keys' queues, counted as the Go enqueuer counts them.
	for key, want := range map[string]int64{"acme": 3, "globex": 1} {
		if k, err := client.Key("export_report", key); err != nil || k.Waiting != want {
			t.Errorf("key %s: %+v, %v; want %d waiting", key, k, err, want)
		}
	}
	if st, err := client.KeyStats(); err != nil || len(st) != 1 || st[0].Waiting != 4 || st[0].WaitingKeys != 2 ||
		st[0].LargestBacklogKey != "acme" {
		t.Errorf("key stats %+v, %v; want 4 jobs of 2 keys waiting, acme the largest backlog", st, err)
	}

	// A pool runs them all: two queued and two scheduled emails, one index rebuild, four exports of
	// two customers, each customer's one at a time and in the order enqueued.
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
	wp.JobWithOptions("export_report", work.JobOptions{KeyConcurrency: 1}, func(job *work.Job) error {
		month := job.ArgString("month")
		if err := job.ArgError(); err != nil {
			return err
		}
		mu.Lock()
		ran = append(ran, "export_report "+job.Key+" "+month)
		mu.Unlock()
		done <- struct{}{}
		return nil
	})
	wp.Start()
	defer wp.Stop()
	timeout := time.After(15 * time.Second)
	for i := 0; i < 9; i++ {
		select {
		case <-done:
		case <-timeout:
			mu.Lock()
			defer mu.Unlock()
			t.Fatalf("only %d of 9 jobs ran: %v", i, ran)
		}
	}
	worktest.Drain(t, wp, 0)
	mu.Lock()
	// A stable sort keeps each customer's exports in the order they ran.
	sort.SliceStable(ran, func(i, j int) bool { return sortPrefix(ran[i]) < sortPrefix(ran[j]) })
	got := strings.Join(ran, "\n")
	mu.Unlock()
	want := strings.Join([]string{
		"cli-later@example.com: scheduled from redis-cli",
		"cli@example.com: hello from redis-cli",
		"export_report acme 2024-04",
		"export_report acme 2024-05",
		"export_report acme 2024-06",
		"export_report globex 2024-03",
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
	if n, _, err := client.DeadJobs(1); err != nil || len(n) != 0 {
		t.Fatalf("dead jobs %v, %v", n, err)
	}
}

// sortPrefix is what the run log is sorted by: an export's job name and key, without its month (the
// order of a key's exports is the order they ran); anything else whole.
func sortPrefix(line string) string {
	if rest, ok := strings.CutPrefix(line, "export_report "); ok {
		key, _, _ := strings.Cut(rest, " ")
		return "export_report " + key
	}
	return line
}
