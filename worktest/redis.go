package worktest

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

func newID() string {
	var b [12]byte
	_, _ = io.ReadFull(rand.Reader, b[:])
	return hex.EncodeToString(b[:])
}

var nsSeq atomic.Int64

// Namespace returns a namespace that no other test of any process uses, and deletes all its keys
// when the test ends, so that tests can run in parallel on one Redis.
func Namespace(t testing.TB, pool *redis.Pool) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_", ":", "_").Replace(t.Name())
	ns := fmt.Sprintf("worktest-%s-%d-%d-%s", name, os.Getpid(), nsSeq.Add(1), newID()[:6])
	t.Cleanup(func() {
		if err := DeleteNamespace(pool, ns); err != nil {
			t.Errorf("worktest: deleting namespace %s: %v", ns, err)
		}
	})
	return ns
}

// DeleteNamespace deletes every key of the namespace ns.
func DeleteNamespace(pool *redis.Pool, ns string) error {
	c := pool.Get()
	defer c.Close()
	cursor := "0"
	for {
		r, err := redis.Values(c.Do("SCAN", cursor, "MATCH", globEscape(keyPrefix(ns))+"*", "COUNT", 1000))
		if err != nil {
			return err
		}
		cursor, _ = redis.String(r[0], nil)
		keys, _ := redis.Values(r[1], nil)
		if len(keys) > 0 {
			if _, err := c.Do("DEL", keys...); err != nil {
				return err
			}
		}
		if cursor == "0" {
			return nil
		}
	}
}

func globEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		if strings.ContainsRune(`*?[]\`, r) {
			b.WriteByte('\\')
		}
		b.WriteRune(r)
	}
	return b.String()
}

// keyPrefix is the prefix of a namespace's keys: the namespace plus ":" unless it already ends in
// ":"; the empty namespace has none.
func keyPrefix(ns string) string {
	if ns == "" || strings.HasSuffix(ns, ":") {
		return ns
	}
	return ns + ":"
}

// DecodeJob decodes a job payload as a worker does: numbers in args become float64, except integers
// that a float64 cannot hold exactly, which stay json.Number (see work.Job.UnmarshalJSON).
func DecodeJob(raw []byte) (*work.Job, error) {
	var j work.Job
	if err := json.Unmarshal(raw, &j); err != nil {
		return nil, fmt.Errorf("worktest: malformed job payload %q: %w", raw, err)
	}
	return &j, nil
}

// Jobs returns the jobs waiting in the queue of jobName in namespace ns, oldest (next to run) first,
// decoded as a worker decodes them. Jobs scheduled for later are not in the queue: see Scheduled.
func Jobs(pool *redis.Pool, ns, jobName string) ([]*work.Job, error) {
	c := pool.Get()
	defer c.Close()
	raws, err := redis.ByteSlices(c.Do("LRANGE", keyPrefix(ns)+"jobs:"+jobName, 0, -1))
	if err != nil {
		return nil, fmt.Errorf("worktest: reading the queue of %s in %s: %w", jobName, ns, err)
	}
	jobs := make([]*work.Job, 0, len(raws))
	for i := len(raws) - 1; i >= 0; i-- { // LPUSH adds at the head; workers take from the tail
		j, err := DecodeJob(raws[i])
		if err != nil {
			return nil, err
		}
		jobs = append(jobs, j)
	}
	return jobs, nil
}

// Enqueued returns the jobs waiting in the queue of jobName in namespace ns, as Jobs does, and fails
// the test when Redis cannot be read or a payload cannot be decoded.
func Enqueued(t testing.TB, pool *redis.Pool, ns, jobName string) []*work.Job {
	t.Helper()
	jobs, err := Jobs(pool, ns, jobName)
	if err != nil {
		t.Fatal(err)
	}
	return jobs
}

// Scheduled returns the jobs of jobName (every name when jobName is "") in the scheduled set of
// namespace ns, soonest first.
func Scheduled(t testing.TB, pool *redis.Pool, ns, jobName string) []*work.ScheduledJob {
	t.Helper()
	client := work.NewClient(ns, pool)
	var out []*work.ScheduledJob
	for page := uint(1); ; page++ {
		jobs, total, err := client.ScheduledJobs(page)
		if err != nil {
			t.Fatalf("worktest: reading the scheduled jobs of %s: %v", ns, err)
		}
		for _, j := range jobs {
			if jobName == "" || j.Name == jobName {
				out = append(out, j)
			}
		}
		if len(jobs) == 0 || int64(page)*int64(len(jobs)) >= total {
			return out
		}
	}
}

// Match reports whether job's args include every key of args with an equal value, comparing the
// values as their JSON encodings (so 3, int64(3) and 3.0 are equal). Nil args match any job.
func Match(job *work.Job, args map[string]interface{}) bool {
	for k, want := range args {
		got, ok := job.Args[k]
		if !ok || !sameJSON(got, want) {
			return false
		}
	}
	return true
}

func sameJSON(a, b interface{}) bool {
	ja, err1 := json.Marshal(a)
	jb, err2 := json.Marshal(b)
	if err1 != nil || err2 != nil {
		return reflect.DeepEqual(a, b)
	}
	if bytes.Equal(ja, jb) {
		return true
	}
	// Numbers written differently (3 and 3.0): compare decoded and normalized.
	var da, db interface{}
	if json.Unmarshal(ja, &da) != nil || json.Unmarshal(jb, &db) != nil {
		return false
	}
	return reflect.DeepEqual(da, db)
}

// AssertEnqueued fails the test (without stopping it) unless the queue of jobName in namespace ns
// holds a job whose args include args (see Match), and returns the first such job, or nil. The
// failure message lists the jobs that are in the queue.
func AssertEnqueued(t testing.TB, pool *redis.Pool, ns, jobName string, args map[string]interface{}) *work.Job {
	t.Helper()
	jobs := Enqueued(t, pool, ns, jobName)
	for _, j := range jobs {
		if Match(j, args) {
			return j
		}
	}
	t.Errorf("worktest: no %s job with args %s in namespace %s; the queue holds %s",
		jobName, argsString(args), ns, jobsString(jobs))
	return nil
}

// AssertNotEnqueued fails the test (without stopping it) when the queue of jobName in namespace ns
// holds a job whose args include args (see Match); with nil args, when it holds any job.
func AssertNotEnqueued(t testing.TB, pool *redis.Pool, ns, jobName string, args map[string]interface{}) {
	t.Helper()
	for _, j := range Enqueued(t, pool, ns, jobName) {
		if Match(j, args) {
			t.Errorf("worktest: found %s job %s with args %s in namespace %s, want none",
				jobName, j.ID, argsString(j.Args), ns)
			return
		}
	}
}

func argsString(args map[string]interface{}) string {
	b, err := json.Marshal(args)
	if err != nil {
		return fmt.Sprint(args)
	}
	return string(b)
}

func jobsString(jobs []*work.Job) string {
	if len(jobs) == 0 {
		return "no job"
	}
	parts := make([]string, len(jobs))
	for i, j := range jobs {
		parts[i] = argsString(j.Args)
	}
	return fmt.Sprintf("%d job(s) with args %s", len(jobs), strings.Join(parts, ", "))
}

// DefaultDrainTimeout is how long Drain waits when given no timeout.
const DefaultDrainTimeout = 10 * time.Second

// Drain waits until the started pool wp has found its queues empty and finished every job it
// fetched (WorkerPool.Drain), and fails the test when that takes longer than timeout
// (DefaultDrainTimeout when timeout is 0 or less). Like WorkerPool.Drain, it does not wait for
// scheduled jobs or retries, and returns at once for a pool that is not started.
func Drain(t testing.TB, wp *work.WorkerPool, timeout time.Duration) {
	t.Helper()
	if timeout <= 0 {
		timeout = DefaultDrainTimeout
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if err := DrainContext(ctx, wp); err != nil {
		t.Fatalf("worktest: the pool did not drain within %v", timeout)
	}
}

// DrainContext is WorkerPool.Drain bounded by ctx: it returns nil once the pool has drained, or
// ctx.Err() when ctx is done first (the Drain call then goes on in the background until the pool
// drains or stops).
func DrainContext(ctx context.Context, wp *work.WorkerPool) error {
	done := make(chan struct{})
	go func() {
		defer close(done)
		wp.Drain()
	}()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
