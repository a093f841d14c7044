package main

import (
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// The floor consumer reads the enqueue time straight from the job's JSON; this holds it to the
// JSON that work writes.
func TestArgsTReadsTheEnqueueTimeOfWorkJobs(t *testing.T) {
	raw, err := json.Marshal(&work.Job{Name: "job0", ID: "a1", EnqueuedAt: 1700000000, Args: map[string]interface{}{"t": int64(1700000000123456)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := argsT(raw); got != 1700000000123456 {
		t.Fatalf("argsT(%s) = %d, want 1700000000123456", raw, got)
	}
	for _, raw := range []string{`{"name":"job0","id":"a1","t":1700000000}`, `{"args":{"n":1}}`, `{"args":{"t":`} {
		if got := argsT([]byte(raw)); got != 0 {
			t.Errorf("argsT(%s) = %d, want 0", raw, got)
		}
	}
}

// testRedisAndNames returns the test Redis's address, skipping the test without one, and two job
// names no other run uses.
func testRedisAndNames(t *testing.T, prefix string) (addr string, names []string) {
	addr = os.Getenv("WORK_TEST_REDIS")
	if addr == "" {
		t.Skip("WORK_TEST_REDIS is not set")
	}
	suffix := strconv.FormatInt(time.Now().UnixNano(), 36)
	return addr, []string{prefix + "-a-" + suffix, prefix + "-b-" + suffix}
}

// floor-ack must run every job once and leave nothing in its in-progress lists: otherwise its CPU
// per job would not be that of a consumer that acknowledges each job.
func TestFloorAckRunsAndAcknowledgesEveryJob(t *testing.T) {
	addr, names := testRedisAndNames(t, "floor-ack")
	const n = 200
	var ran atomic.Int64
	all := make(chan struct{})
	lib := floorAckLib{addr: addr}
	c := lib.newConsumer(consumerConfig{names: names, h: func(_ string, ts int64) error {
		if ts == 0 {
			t.Error("a job reached its handler without its enqueue time")
		}
		if ran.Add(1) == n {
			close(all)
		}
		return nil
	}})
	if err := c.start(); err != nil {
		t.Fatal(err)
	}
	p := lib.newProducer(2)
	defer p.close()
	for i := 0; i < n; i++ {
		if err := p.enqueue(names[i%2], argsTimestamp); err != nil {
			t.Fatal(err)
		}
	}
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		t.Fatalf("%d of %d jobs ran", ran.Load(), n)
	}
	c.stop()
	if got := ran.Load(); got != n {
		t.Fatalf("%d runs of %d jobs", got, n)
	}
	conn, err := redigo.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, name := range names {
		keys := []interface{}{workNamespace + ":jobs:" + name, floorAckInProgress(name)}
		for _, key := range keys {
			if l, err := redigo.Int(conn.Do("LLEN", key)); err != nil || l != 0 {
				t.Errorf("LLEN %s = %d, %v; want 0", key, l, err)
			}
		}
		_, _ = conn.Do("DEL", keys...)
	}
}

// floor-enqueue must push every job, once, as a job work's workers can run: otherwise its rate
// would not bound an enqueuer's.
func TestFloorEnqueuePushesEveryJobAsAWorkJob(t *testing.T) {
	addr, names := testRedisAndNames(t, "floor-enqueue")
	const goroutines, each = 10, 50
	p := floorEnqueueLib{addr: addr}.newProducer(goroutines)
	var wg sync.WaitGroup
	for g := 0; g < goroutines; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < each; i++ {
				if err := p.enqueue(names[i%2], argsTimestamp); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	wg.Wait()
	p.close()
	conn, err := redigo.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ids := make(map[string]bool)
	for _, name := range names {
		key := workNamespace + ":jobs:" + name
		raws, err := redigo.ByteSlices(conn.Do("LRANGE", key, 0, -1))
		_, _ = conn.Do("DEL", key)
		if err != nil {
			t.Fatal(err)
		}
		if len(raws) != goroutines*each/2 {
			t.Errorf("%s holds %d jobs, want %d", key, len(raws), goroutines*each/2)
		}
		for _, raw := range raws {
			var job work.Job
			if err := json.Unmarshal(raw, &job); err != nil {
				t.Fatalf("%s: %v", raw, err)
			}
			if job.Name != name || job.ID == "" || job.EnqueuedAt == 0 || ids[job.ID] || argsT(raw) == 0 {
				t.Errorf("job %s: want name %s, a new ID, an enqueue time and args.t", raw, name)
			}
			ids[job.ID] = true
		}
	}
	if err := p.enqueue(names[0], argsNone); err == nil {
		t.Error("an enqueue after close succeeded")
	}
}
