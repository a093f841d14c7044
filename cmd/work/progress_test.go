package main

import (
	"strings"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

func TestJobShowsARunningJobsProgressAndWaitsForItsEnd(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	gate := make(chan struct{})
	t.Cleanup(func() {
		select {
		case <-gate:
		default:
			close(gate)
		}
	})
	wp := work.NewWorkerPool(struct{}{}, 1, e.ns, e.pool).Job("render", func(j *work.Job) error {
		if err := j.SetProgress(0.4, "page 4 of 10"); err != nil {
			return err
		}
		<-gate
		return j.SetResult(map[string]int{"pages": 10})
	})
	wp.Start()
	t.Cleanup(wp.Stop)
	job, err := work.NewEnqueuer(e.ns, e.pool).EnqueueWith("render", nil, work.EnqueueOptions{Track: true})
	if err != nil {
		t.Fatal(err)
	}
	c := work.NewClient(e.ns, e.pool)
	deadline := time.Now().Add(15 * time.Second)
	for {
		rec, err := c.JobRecord(job.ID)
		if err == nil && rec.Progress != nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no progress in the record: %+v, %v", rec, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
	e.run(nil, "job", job.ID).want(t, 0, "STATE      running (attempt 1)\n", "STARTED    ", "PROGRESS   40% page 4 of 10 (", "POOL       ", "WHERE      in_progress")

	waited := make(chan result, 1)
	go func() { waited <- e.run(nil, "job", job.ID, "--wait") }()
	for numSub := int64(0); numSub != 1; {
		v, _ := redis.Values(e.do("PUBSUB", "NUMSUB", e.key("ended")), nil)
		numSub, _ = redis.Int64(v[1], nil)
		if time.Now().After(deadline) {
			t.Fatal("work job --wait did not subscribe")
		}
		time.Sleep(20 * time.Millisecond)
	}
	select {
	case r := <-waited:
		t.Fatalf("work job --wait returned before the job ended: %+v", r)
	default:
	}
	close(gate)
	select {
	case r := <-waited:
		r.want(t, 0, "STATE     done\n", `RESULT    {"pages":10}`, "PROGRESS  40% page 4 of 10")
		if strings.Contains(r.stdout, "attempt 1") {
			t.Errorf("a done job shows its running attempt:\n%s", r.stdout)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("work job --wait did not return")
	}

	// Nothing to wait for: exit 3 at once.
	r := e.run(nil, "job", "no-such-job", "--wait")
	r.want(t, 3)
	if !strings.Contains(r.stderr, "has no record") {
		t.Errorf("stderr: %s", r.stderr)
	}
}
