package work

import (
	"io"
	"log/slog"
	"net"
	"os"
	"testing"

	"github.com/gomodule/redigo/redis"
	"github.com/workqueue/work/internal/redistest"
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

// The shared test server's helpers (internal/redistest), under the names the tests use.
func newTestPool(t testing.TB) *redis.Pool { return redistest.Pool(t, 50) }

func newTestNamespace(t testing.TB, pool *redis.Pool) string {
	return redistest.Namespace(t, pool, "test")
}

var (
	testRedisAddr = redistest.Addr
	eventually    = redistest.Eventually
	rdo           = redistest.Do
	rInt          = redistest.Int
	rStrings      = redistest.Strings
)

// wrappedPool is a pool of size connections to the test server whose network connections pass
// through wrap (to count or hold up what the library writes).
func wrappedPool(tb testing.TB, size int, wrap func(net.Conn) net.Conn) *redis.Pool {
	addr := testRedisAddr()
	dial := redis.DialNetDial(func(network, address string) (net.Conn, error) {
		c, err := net.Dial(network, address)
		if err != nil {
			return nil, err
		}
		return wrap(c), nil
	})
	pool := &redis.Pool{MaxActive: size, MaxIdle: size, Wait: true, Dial: func() (redis.Conn, error) {
		return redis.Dial("tcp", addr, dial)
	}}
	tb.Cleanup(func() { pool.Close() })
	return pool
}

// rKeyBacklog returns the jobs a key of a job name has waiting: in its queue and in the lane (one at
// most, whose score the key's lane field holds: lib/keyed.lua).
func rKeyBacklog(t testing.TB, pool *redis.Pool, ns, name, key string) int64 {
	t.Helper()
	p := ns + ":keyed:" + name + ":"
	return rInt(t, pool, "LLEN", p+"{"+key+"}") + rInt(t, pool, "HEXISTS", p+"lane", key)
}

// limitKeys marks a job name as served by pools that limit its keys, as their registration does,
// so that its keyed jobs queue per key rather than in the lane.
func limitKeys(t testing.TB, pool *redis.Pool, ns, name string) {
	t.Helper()
	rdo(t, pool, "HSET", ns+":keyed:"+name+":meta", "limits", "1")
}
