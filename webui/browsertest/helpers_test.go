package browsertest

import (
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work"
	"github.com/workqueue/work/internal/redistest"
)

// The test runs against the redis-server at WORK_TEST_REDIS (default 127.0.0.1:6379), in a namespace
// of its own.

func TestMain(m *testing.M) {
	if os.Getenv("WORK_TEST_LOG") == "" {
		slog.SetDefault(slog.New(slog.NewTextHandler(io.Discard, nil)))
	}
	os.Exit(m.Run())
}

// The shared test server's helpers (internal/redistest), under the names the tests use.
func newTestPool(t testing.TB) *redis.Pool { return redistest.Pool(t, 50) }

func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	return redistest.Namespace(t, pool, "browser-test")
}

var (
	rdo      = redistest.Do
	rInt     = redistest.Int
	rStrings = redistest.Strings
)

func jobJSON(t testing.TB, j *work.Job) string {
	t.Helper()
	b, err := json.Marshal(j)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
