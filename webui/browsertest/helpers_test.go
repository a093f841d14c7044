package browsertest

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
)

// The test runs against the redis-server at WORK_TEST_REDIS (default 127.0.0.1:6379), in a namespace
// of its own.

func TestMain(m *testing.M) {
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

func newTestPool(t testing.TB) *redis.Pool {
	t.Helper()
	addr := os.Getenv("WORK_TEST_REDIS")
	if addr == "" {
		addr = "127.0.0.1:6379"
	}
	pool := &redis.Pool{
		MaxActive: 20, MaxIdle: 5, Wait: true, IdleTimeout: time.Minute,
		Dial: func() (redis.Conn, error) { return redis.Dial("tcp", addr, redis.DialConnectTimeout(5*time.Second)) },
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

// newTestNamespace returns a namespace no other test uses, and deletes its keys when the test ends.
func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	t.Helper()
	ns := fmt.Sprintf("browser-test-%s-%d-%d", strings.ReplaceAll(t.Name(), "/", "-"), os.Getpid(), nsCounter.Add(1))
	t.Cleanup(func() {
		c := pool.Get()
		defer c.Close()
		cursor := 0
		for {
			r, err := redis.Values(c.Do("SCAN", cursor, "MATCH", ns+":*", "COUNT", 1000))
			if err != nil {
				return
			}
			cursor, _ = redis.Int(r[0], nil)
			keys, _ := redis.Strings(r[1], nil)
			for _, k := range keys {
				c.Do("DEL", k)
			}
			if cursor == 0 {
				return
			}
		}
	})
	return ns
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

func rInt(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) int64 {
	t.Helper()
	n, _ := redis.Int64(rdo(t, pool, cmd, args...), nil)
	return n
}

func rStrings(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) []string {
	t.Helper()
	s, err := redis.Strings(rdo(t, pool, cmd, args...), nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func jobJSON(t testing.TB, j *work.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
