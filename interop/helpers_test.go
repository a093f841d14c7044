package interop

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/redistest"
)

// The tests run against a real redis-server whose address is in WORK_TEST_REDIS (default
// 127.0.0.1:6379). Each test gets a namespace of its own, deleted when it ends.

func rStringMap(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) map[string]string {
	t.Helper()
	m, err := redis.StringMap(rdo(t, pool, cmd, args...), nil)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return m
}

// The shared test server's helpers (internal/redistest), under the names the tests use.
// newTestPool sets no MaxActive: gocraft/work takes connections without waiting for a free one.
func newTestPool(t testing.TB) *redis.Pool { return redistest.Pool(t, 0) }

func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	return redistest.Namespace(t, pool, "interop")
}

var (
	testRedisAddr = redistest.Addr
	eventually    = redistest.Eventually
	rdo           = redistest.Do
	rInt          = redistest.Int
	rStrings      = redistest.Strings
)

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
