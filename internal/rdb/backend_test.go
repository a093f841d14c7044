package rdb

import (
	"context"
	"sync/atomic"
	"testing"

	"github.com/gomodule/redigo/redis"
)

// TestPoolBackendDialsWithDialContext: the wake-up subscription dials a connection of its own with
// the pool's DialContext when it has one (found at run time, since redigo v2.0.0+incompatible has
// no such field), and with Dial otherwise.
func TestPoolBackendDialsWithDialContext(t *testing.T) {
	t.Parallel()
	var byContext, byDial atomic.Int32
	withContext := &redis.Pool{DialContext: func(ctx context.Context) (redis.Conn, error) {
		byContext.Add(1)
		return redis.DialContext(ctx, "tcp", testRedisAddr())
	}}
	withDial := &redis.Pool{Dial: func() (redis.Conn, error) {
		byDial.Add(1)
		return redis.Dial("tcp", testRedisAddr())
	}}
	defer withContext.Close()
	defer withDial.Close()
	if PoolDialContext(withDial) != nil {
		t.Errorf("poolDialContext of a pool with Dial only: not nil")
	}
	for _, p := range []*redis.Pool{withContext, withDial} {
		c, err := PoolBackend(p).(*poolBackend).Dial(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Do("PING"); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	if byContext.Load() != 1 || byDial.Load() != 1 {
		t.Errorf("dials through DialContext %d, through Dial %d; want 1 each", byContext.Load(), byDial.Load())
	}
}
