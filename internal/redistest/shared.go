package redistest

import (
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gomodule/redigo/redis"
)

// The shared test server: most tests of every module run against one redis-server, whose address
// is in WORK_TEST_REDIS (scripts/test.sh starts one), each test in a namespace of its own.

// Addr returns the shared test server's address: WORK_TEST_REDIS, else 127.0.0.1:6379.
func Addr() string {
	if a := os.Getenv("WORK_TEST_REDIS"); a != "" {
		return a
	}
	return "127.0.0.1:6379"
}

// Pool returns a redigo pool on the shared test server, checked with a PING and closed when the test
// ends. With maxActive > 0, callers wait for one of that many connections; with 0 there is no limit.
func Pool(t testing.TB, maxActive int) *redis.Pool {
	t.Helper()
	addr := Addr()
	pool := &redis.Pool{
		MaxActive:   maxActive,
		MaxIdle:     10,
		Wait:        maxActive > 0,
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

// Namespace returns a namespace no other test uses (prefix, the test's name, the process and a
// counter), and deletes its keys when the test ends.
func Namespace(t testing.TB, pool *redis.Pool, prefix string) string {
	t.Helper()
	name := strings.NewReplacer("/", "-", " ", "_").Replace(t.Name())
	ns := fmt.Sprintf("%s-%s-%d-%d", prefix, name, os.Getpid(), nsCounter.Add(1))
	t.Cleanup(func() { DeleteNamespace(pool, ns) })
	return ns
}

// DeleteNamespace deletes every key of the namespace ns (<ns>:*), ignoring errors.
func DeleteNamespace(pool *redis.Pool, ns string) {
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
}

// Do runs one command on pool and fails the test on error.
func Do(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) interface{} {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	r, err := c.Do(cmd, args...)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return r
}

// Int runs a command answering an integer; a nil reply (a missing key) counts as 0.
func Int(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) int64 {
	t.Helper()
	n, err := redis.Int64(Do(t, pool, cmd, args...), nil)
	if err != nil && err != redis.ErrNil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return n
}

// Strings runs a command answering a list of strings.
func Strings(t testing.TB, pool *redis.Pool, cmd string, args ...interface{}) []string {
	t.Helper()
	s, err := redis.Strings(Do(t, pool, cmd, args...), nil)
	if err != nil {
		t.Fatalf("%s %v: %v", cmd, args, err)
	}
	return s
}

// Eventually polls cond every few milliseconds until it holds, and fails the test if it does not
// within the time given, or within a minute when that is longer: the deadline only ends a test that
// hangs, and on a loaded machine, with the race detector, what takes a second can take many.
func Eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	within = max(within, time.Minute)
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for: %s", within, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
