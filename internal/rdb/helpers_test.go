package rdb

import (
	"testing"

	"github.com/gomodule/redigo/redis"
	"go.uber.org/goleak"

	"github.com/workqueue/work/internal/redistest"
)

// Tests run against the real redis-server at WORK_TEST_REDIS (127.0.0.1:6379 without it), each in a
// namespace of its own.

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newTestPool(t testing.TB) *redis.Pool { return redistest.Pool(t, 50) }

var testRedisAddr = redistest.Addr

// rdo runs one command on a connection of pool, failing the test on an error.
func rdo(t testing.TB, pool *redis.Pool, args ...interface{}) interface{} {
	t.Helper()
	c := pool.Get()
	defer c.Close()
	v, err := c.Do(args[0].(string), args[1:]...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
