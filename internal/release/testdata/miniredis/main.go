// Command miniredis runs gocraft/work's API against a miniredis started in the process, as the
// tests of a program moving from gocraft/work do: jobs enqueued plainly, in and at a time, uniquely
// (now and later), a job that fails and succeeds on its retry, one that fails until it is dead and
// is retried from the dead set through the Client, a periodic job and a paused queue; then two of
// the library's newer features, which need a newer server: a keyed job and a schedule. The release
// tests build it against the oldest and the newest miniredis a gocraft/work user may hold. A newer
// feature either works or is refused with an error naming what the server lacks: the program
// prints "refused: <feature>" for each refusal. It prints "ok" and exits 0 when everything ran or
// was refused so; otherwise it says what went wrong and exits 1.
package main

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

type appContext struct{}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "miniredis program:", err)
		os.Exit(1)
	}
	fmt.Println("ok")
}

// ran counts the runs of each job name and signals each run.
type ran struct {
	mu   sync.Mutex
	n    map[string]int
	runs chan string
}

func (r *ran) add(name string) int {
	r.mu.Lock()
	r.n[name]++
	n := r.n[name]
	r.mu.Unlock()
	r.runs <- name
	return n
}

func (r *ran) count(name string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.n[name]
}

// waitFor waits until every name has run at least the given number of times.
func (r *ran) waitFor(d time.Duration, want map[string]int) error {
	deadline := time.After(d)
	for {
		missing := []string{}
		r.mu.Lock()
		for name, n := range want {
			if r.n[name] < n {
				missing = append(missing, fmt.Sprintf("%s (%d of %d runs)", name, r.n[name], n))
			}
		}
		r.mu.Unlock()
		if len(missing) == 0 {
			return nil
		}
		sort.Strings(missing)
		select {
		case <-r.runs:
		case <-deadline:
			return fmt.Errorf("not run within %s: %s", d, strings.Join(missing, ", "))
		}
	}
}

func run() error {
	srv, err := miniredis.Run()
	if err != nil {
		return err
	}
	defer srv.Close()
	pool := &redis.Pool{MaxActive: 20, MaxIdle: 20, Wait: true, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", srv.Addr())
	}}
	defer pool.Close()
	const ns = "mini"

	r := &ran{n: map[string]int{}, runs: make(chan string, 64)}
	record := func(c *appContext, job *work.Job) error {
		r.add(job.Name)
		return nil
	}
	noWait := func(*work.Job) int64 { return 0 }
	// A pool looks at its queues once a second when idle (gocraft/work's option), so that it finds
	// the paused queue resumed soon: a resumption by hand sends no wake-up.
	wp := work.NewWorkerPoolWithOptions(appContext{}, 4, ns, pool, work.WorkerPoolOptions{SleepBackoffs: []int64{0, 1000}})
	for _, name := range []string{"plain", "in", "at", "unique", "unique_in", "periodic", "paused", "keyed", "scheduled"} {
		wp.Job(name, record)
	}
	// flaky fails its first run and succeeds on its retry.
	wp.JobWithOptions("flaky", work.JobOptions{MaxFails: 3, Backoff: noWait}, func(c *appContext, job *work.Job) error {
		if r.add(job.Name) == 1 {
			return errors.New("first run fails")
		}
		return nil
	})
	// doomed fails until it is dead, and succeeds once retried from the dead set.
	wp.JobWithOptions("doomed", work.JobOptions{MaxFails: 2, Backoff: noWait}, func(c *appContext, job *work.Job) error {
		if r.add(job.Name) <= 2 {
			return errors.New("fails until dead")
		}
		return nil
	})
	wp.PeriodicallyEnqueue("* * * * * *", "periodic")

	conn := pool.Get()
	_, err = conn.Do("SET", ns+":jobs:paused:paused", "1")
	conn.Close()
	if err != nil {
		return fmt.Errorf("pausing the queue paused: %v", err)
	}

	enq := work.NewEnqueuer(ns, pool)
	steps := []struct {
		what string
		err  func() error
	}{
		{"Enqueue", func() error { _, err := enq.Enqueue("plain", work.Q{"n": 1}); return err }},
		{"EnqueueIn", func() error { _, err := enq.EnqueueIn("in", 1, work.Q{"n": 2}); return err }},
		{"EnqueueAt", func() error { _, err := enq.EnqueueAt("at", time.Now().Add(time.Second), work.Q{"n": 3}); return err }},
		{"EnqueueUnique", func() error {
			if j, err := enq.EnqueueUnique("unique", work.Q{"n": 4}); err != nil || j == nil {
				return fmt.Errorf("first: job %v, error %v", j, err)
			}
			if j, err := enq.EnqueueUnique("unique", work.Q{"n": 4}); err != nil || j != nil {
				return fmt.Errorf("duplicate: job %v (want none), error %v", j, err)
			}
			return nil
		}},
		{"EnqueueUniqueIn", func() error {
			if j, err := enq.EnqueueUniqueIn("unique_in", 1, work.Q{"n": 5}); err != nil || j == nil {
				return fmt.Errorf("first: job %v, error %v", j, err)
			}
			if j, err := enq.EnqueueUniqueIn("unique_in", 1, work.Q{"n": 5}); err != nil || j != nil {
				return fmt.Errorf("duplicate: job %v (want none), error %v", j, err)
			}
			return nil
		}},
		{"Enqueue of a job that fails once", func() error { _, err := enq.Enqueue("flaky", nil); return err }},
		{"Enqueue of a job that dies", func() error { _, err := enq.Enqueue("doomed", nil); return err }},
		{"Enqueue on a paused queue", func() error { _, err := enq.Enqueue("paused", nil); return err }},
	}
	// The pool starts after the enqueues: a unique job that ran already would no longer hold its
	// lock, and its duplicate would be taken.
	for _, s := range steps {
		if err := s.err(); err != nil {
			return fmt.Errorf("%s: %v", s.what, err)
		}
	}
	wp.Start()
	defer wp.Stop()

	if err := r.waitFor(15*time.Second, map[string]int{
		"plain": 1, "in": 1, "at": 1, "unique": 1, "unique_in": 1, "flaky": 2, "doomed": 2, "periodic": 1,
	}); err != nil {
		return err
	}
	if n := r.count("paused"); n != 0 {
		return fmt.Errorf("a job of the paused queue ran %d times while it was paused", n)
	}

	client := work.NewClient(ns, pool)
	var dead *work.DeadJob
	for deadline := time.Now().Add(5 * time.Second); dead == nil; time.Sleep(20 * time.Millisecond) {
		jobs, _, err := client.DeadJobs(1)
		if err != nil {
			return fmt.Errorf("Client.DeadJobs: %v", err)
		}
		for _, j := range jobs {
			if j.Name == "doomed" {
				dead = j
			}
		}
		if dead == nil && time.Now().After(deadline) {
			return fmt.Errorf("the job that failed twice (MaxFails 2) is not in the dead set: Client.DeadJobs gave %d jobs", len(jobs))
		}
	}
	if err := client.RetryDeadJob(dead.DiedAt, dead.ID); err != nil {
		return fmt.Errorf("Client.RetryDeadJob: %v", err)
	}

	conn = pool.Get()
	_, err = conn.Do("DEL", ns+":jobs:paused:paused")
	conn.Close()
	if err != nil {
		return fmt.Errorf("resuming the queue paused: %v", err)
	}
	if err := r.waitFor(15*time.Second, map[string]int{"doomed": 3, "paused": 1}); err != nil {
		return fmt.Errorf("after the dead job's retry and the queue's resumption: %v", err)
	}
	if err := checkUnique(r); err != nil {
		return err
	}
	return newerFeatures(enq, client, r)
}

// newerFeatures enqueues keyed jobs and sets a schedule: each must run, or be refused with an
// error that names what the server lacks.
func newerFeatures(enq *work.Enqueuer, client *work.Client, r *ran) error {
	want := map[string]int{}
	_, err := enq.EnqueueWith("keyed", nil, work.EnqueueOptions{Key: "k"})
	switch {
	case err == nil:
		// And two jobs each for more keys than the pool has workers: keys with queues of their
		// own, taken a job a key in the pools' first rounds (the script runs in miniredis's Lua).
		var batch []work.BatchJob
		for i := 0; i < 16; i++ {
			batch = append(batch, work.BatchJob{Name: "keyed", Key: fmt.Sprintf("q%d", i%8)})
		}
		if _, err := enq.EnqueueBatch(batch); err != nil {
			return fmt.Errorf("keyed jobs of eight keys: %v", err)
		}
		want["keyed"] = 1 + len(batch)
	case strings.Contains(err.Error(), "ZMSCORE"):
		fmt.Println("refused: keyed jobs")
	default:
		return fmt.Errorf("keyed job: an error that does not say what the server lacks: %v", err)
	}
	err = client.SetSchedule(work.Schedule{ID: "every-second", Spec: "* * * * * *", JobName: "scheduled"})
	switch {
	case err == nil:
		want["scheduled"] = 1
	case strings.Contains(err.Error(), "ZADD with LT"):
		fmt.Println("refused: schedules")
	default:
		return fmt.Errorf("schedule: an error that does not say what the server lacks: %v", err)
	}
	return r.waitFor(10*time.Second, want)
}

// checkUnique checks that each unique job ran once.
func checkUnique(r *ran) error {
	if n := r.count("unique"); n != 1 {
		return fmt.Errorf("the unique job ran %d times, want 1", n)
	}
	if n := r.count("unique_in"); n != 1 {
		return fmt.Errorf("the unique scheduled job ran %d times, want 1", n)
	}
	return nil
}
