package interop

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The tests run against a real redis-server whose address is in WORK_TEST_REDIS (default
// 127.0.0.1:6379). Each test gets a namespace of its own, deleted when it ends.

func testRedisAddr() string {
	if a := os.Getenv("WORK_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// newTestPool returns a redigo pool on the test server, closed when the test ends. It sets no
// MaxActive: gocraft/work takes connections without waiting for a free one.
func newTestPool(t testing.TB) *redis.Pool {
	t.Helper()
	addr := testRedisAddr()
	pool := &redis.Pool{
		MaxIdle:     20,
		IdleTimeout: time.Minute,
		Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialConnectTimeout(5*time.Second))
		},
	}
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("PING"); err != nil {
		t.Fatalf("no test redis at %s: %v", addr, err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

var nsCounter atomic.Int64

// newTestNamespace returns a namespace no other test uses, and deletes its keys when the test ends
// (after the test's deferred pool stops, before the redis pool closes).
func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	ns := fmt.Sprintf("interop-%s-%d-%d", name, os.Getpid(), nsCounter.Add(1))
	t.Cleanup(func() { deleteNamespace(pool, ns) })
	return ns
}

func deleteNamespace(pool *redis.Pool, ns string) {
	c := pool.Get()
	defer c.Close()
	iter := 0
	for {
		r, err := redis.Values(c.Do("SCAN", iter, "MATCH", ns+":*", "COUNT", 1000))
		if err != nil {
			return
		}
		iter, _ = redis.Int(r[0], nil)
		keys, _ := redis.Strings(r[1], nil)
		for _, k := range keys {
			c.Do("DEL", k)
		}
		if iter == 0 {
			return
		}
	}
}

// eventually polls cond every few milliseconds until it holds or the deadline passes.
func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func rdo(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) interface{} {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	r, err := c.Do(cmd, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return r
}

// rInt runs a command answering an integer (a missing key counts as 0).
func rInt(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) int64 {
	t.Helper()
	n, err := redis.Int64(rdo(t, pool, cmd, args...), nil)
	if err != nil && err != redis.ErrNil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return n
}

func rStrings(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) []string {
	t.Helper()
	s, err := redis.Strings(rdo(t, pool, cmd, args...), nil)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return s
}

func rStringMap(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) map[string]string {
	t.Helper()
	m, err := redis.StringMap(rdo(t, pool, cmd, args...), nil)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return m
}

// keysMatching lists the keys of a pattern.
func keysMatching(t testing.TB, pool *redis.Pool, pattern string) []string {
	t.Helper()
	var out []string
	iter := 0
	for {
		r, err := redis.Values(rdo(t, pool, "SCAN", iter, "MATCH", pattern, "COUNT", 1000), nil)
		if err != nil {
			t.Fatal(err)
		}
		iter, _ = redis.Int(r[0], nil)
		keys, _ := redis.Strings(r[1], nil)
		out = append(out, keys...)
		if iter == 0 {
			sort.Strings(out)
			return out
		}
	}
}

// uniqueKey is the layout's unique-lock key: "<ns>:unique:<name>:" then the json.Encoder output of
// the args (or key map), trailing newline included.
func uniqueKey(t testing.TB, ns, name string, args map[string]interface{}) string {
	t.Helper()
	var buf bytes.Buffer
	buf.WriteString(ns + ":unique:" + name + ":")
	if args != nil {
		if err := json.NewEncoder(&buf).Encode(args); err != nil {
			t.Fatal(err)
		}
	}
	return buf.String()
}

// run is one execution of a job by a handler, in either library.
type run struct {
	pool    string // "gocraft" or "work"
	id      string
	name    string
	args    map[string]interface{}
	fails   int64
	lastErr string
	at      time.Time
}

// recorder collects the runs of every handler of a test, from any goroutine.
type recorder struct {
	mu   sync.Mutex
	runs []run
}

func (r *recorder) add(x run) {
	x.at = time.Now()
	copied := make(map[string]interface{}, len(x.args))
	for k, v := range x.args {
		copied[k] = v
	}
	if x.args == nil {
		copied = nil
	}
	x.args = copied
	r.mu.Lock()
	r.runs = append(r.runs, x)
	r.mu.Unlock()
}

func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.runs)
}

func (r *recorder) byID() map[string][]run {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := make(map[string][]run)
	for _, x := range r.runs {
		m[x.id] = append(m[x.id], x)
	}
	return m
}

func (r *recorder) all() []run {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]run(nil), r.runs...)
}

// onlyRun returns the single run of a job ID, failing the test when it ran another number of times.
func onlyRun(t testing.TB, runs map[string][]run, id string) run {
	t.Helper()
	if n := len(runs[id]); n != 1 {
		t.Fatalf("job %s ran %d times, want exactly once", id, n)
	}
	return runs[id][0]
}

// gocraftMasterJob is gocraft/work's Job after its last tag (the unreleased master that added
// EnqueueUniqueByKey), field for field and tag for tag, so that json.Marshal writes the bytes that
// version writes.
type gocraftMasterJob struct {
	Name       string                 `json:"name,omitempty"`
	ID         string                 `json:"id"`
	EnqueuedAt int64                  `json:"t"`
	Args       map[string]interface{} `json:"args"`
	Unique     bool                   `json:"unique,omitempty"`
	UniqueKey  string                 `json:"unique_key,omitempty"`
	Fails      int64                  `json:"fails,omitempty"`
	LastErr    string                 `json:"err,omitempty"`
	FailedAt   int64                  `json:"failed_at,omitempty"`
}

// gocraftMasterEnqueueUnique is that version's redisLuaEnqueueUnique, verbatim.
var gocraftMasterEnqueueUnique = redis.NewScript(2, `
if redis.call('set', KEYS[2], ARGV[2], 'NX', 'EX', '86400') then
  redis.call('lpush', KEYS[1], ARGV[1])
  return 'ok'
else
  redis.call('set', KEYS[2], ARGV[2], 'EX', '86400')
end
return 'dup'
`)

// gocraftMasterEnqueueUniqueByKey writes what gocraft/work master's EnqueueUniqueByKey writes: the
// job (with unique_key) onto the queue, and the same job JSON as the lock value; a duplicate replaces
// the lock value with its own job JSON. It returns the job, or nil for a duplicate.
func gocraftMasterEnqueueUniqueByKey(t testing.TB, pool *redis.Pool, ns, name string, args, keyMap map[string]interface{}) *gocraftMasterJob {
	t.Helper()
	key := uniqueKey(t, ns, name, keyMap)
	var id [12]byte
	if _, err := rand.Read(id[:]); err != nil {
		t.Fatal(err)
	}
	job := &gocraftMasterJob{Name: name, ID: hex.EncodeToString(id[:]), EnqueuedAt: time.Now().Unix(),
		Args: args, Unique: true, UniqueKey: key}
	raw, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("SADD", ns+":known_jobs", name); err != nil {
		t.Fatal(err)
	}
	res, err := redis.String(gocraftMasterEnqueueUnique.Do(c, ns+":jobs:"+name, key, raw, raw))
	if err != nil {
		t.Fatal(err)
	}
	if res != "ok" {
		return nil
	}
	return job
}
