package work

import (
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"
)

// Tests run against a real redis-server whose address is in WORK_TEST_REDIS (scripts/test.sh starts
// one); without it they use 127.0.0.1:6379. Each test gets its own namespace, so tests run in parallel.

func TestMain(m *testing.M) {
	// The library logs every failure and panic, which tests provoke on purpose; WORK_TEST_LOG=1 shows them.
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	goleak.VerifyTestMain(m)
}

func testRedisAddr() string {
	if a := os.Getenv("WORK_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// newTestPool returns a redigo pool on the test server, closed when the test ends.
func newTestPool(t testing.TB) *redis.Pool {
	t.Helper()
	addr := testRedisAddr()
	pool := &redis.Pool{
		MaxActive:   50,
		MaxIdle:     10,
		Wait:        true,
		IdleTimeout: time.Minute,
		Dial: func() (redis.Conn, error) {
			return redis.Dial("tcp", addr, redis.DialConnectTimeout(5*time.Second))
		},
	}
	c := pool.Get()
	defer c.Close()
	if _, err := c.Do("PING"); err != nil {
		t.Fatalf("no test redis at %s (run scripts/test.sh): %v", addr, err)
	}
	t.Cleanup(func() { pool.Close() })
	return pool
}

var nsCounter atomic.Int64

// newTestNamespace returns a namespace no other test uses, and deletes its keys when the test ends.
func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	ns := fmt.Sprintf("test-%s-%d-%d", name, os.Getpid(), nsCounter.Add(1))
	t.Cleanup(func() { deleteNamespace(pool, ns) })
	return ns
}

func deleteNamespace(pool *redis.Pool, ns string) {
	c := pool.Get()
	defer c.Close()
	iter := 0
	for {
		r, err := redis.Values(c.Do("SCAN", iter, "MATCH", redisNamespacePrefix(ns)+"*", "COUNT", 1000))
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

// rdo runs one command on the test pool and fails the test on error.
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
