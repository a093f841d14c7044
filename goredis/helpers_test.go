package goredis_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work/goredis/internal/redistest"
)

func TestMain(m *testing.M) {
	// The library logs every failure, which the tests provoke on purpose; GOREDIS_TEST_LOG=1 shows them.
	if os.Getenv("GOREDIS_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
		redis.SetLogger(quietLogger{})
	}
	if os.Getenv(crashChildEnv) != "" {
		os.Exit(runCrashChild())
	}
	os.Exit(m.Run())
}

// quietLogger drops go-redis's log lines (reconnections, failovers), which the tests cause on purpose.
type quietLogger struct{}

func (quietLogger) Printf(context.Context, string, ...interface{}) {}

var nsCounter atomic.Int64

// newNamespace returns a fresh namespace; hashTag wraps it in braces, as Redis Cluster needs.
func newNamespace(prefix string, hashTag bool) string {
	ns := fmt.Sprintf("%s-%d-%d", prefix, os.Getpid(), nsCounter.Add(1))
	if hashTag {
		return "{" + ns + "}"
	}
	return ns
}

func eventually(t testing.TB, within time.Duration, what string, cond func() bool) {
	t.Helper()
	redistest.Eventually(t, within, what, cond)
}

// singleClient returns a go-redis client on a fresh server, speaking the given protocol.
func singleClient(t *testing.T, protocol int) (*redis.Client, *redistest.Server) {
	t.Helper()
	s := redistest.StartServer(t)
	c := redis.NewClient(&redis.Options{Addr: s.Addr, Protocol: protocol})
	t.Cleanup(func() { c.Close() })
	return c, s
}

// rdo runs a command through go-redis and fails the test on error (redis.Nil is a nil reply).
func rdo(t testing.TB, c redis.UniversalClient, args ...interface{}) interface{} {
	t.Helper()
	v, err := c.Do(context.Background(), args...).Result()
	if err != nil && err != redis.Nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

func rInt(t testing.TB, c redis.UniversalClient, args ...interface{}) int64 {
	t.Helper()
	switch v := rdo(t, c, args...).(type) {
	case int64:
		return v
	case nil:
		return 0
	case string:
		var n int64
		fmt.Sscan(v, &n)
		return n
	default:
		t.Fatalf("%v: unexpected reply %#v", args, v)
		return 0
	}
}
