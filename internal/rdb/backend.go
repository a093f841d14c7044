package rdb

// The connection to Redis: the Backend interface the store talks through, and the Backend of a
// redigo pool. Which keys and scripts go over it is the store's business.

import (
	"context"
	"errors"
	"net"
	"reflect"
	"sync/atomic"
	"time"

	"github.com/gomodule/redigo/redis"
)

// Backend is how the package reaches Redis. NewEnqueuer, NewWorkerPool and NewClient use a redigo
// *redis.Pool (see PoolBackend); the ...WithBackend constructors take any Backend, so that an adapter
// for another client (Redis Cluster, Sentinel) can sit behind the same code. Implementations must be
// safe for concurrent use.
type Backend interface {
	// Conn returns a connection for a command or a pipeline of commands (redigo's Send, Flush,
	// Receive and Do("") semantics, MULTI/EXEC included) and for EVALSHA/EVAL. Its commands run on
	// one server connection, in order; WAIT relies on it, so a Conn that cannot promise it for a
	// WAIT (writes spread over several Cluster masters) must return an error for the WAIT. Replies follow
	// redigo's types: int64, []byte, []interface{}, nil, redis.Error. The caller closes it.
	Conn(ctx context.Context) (redis.Conn, error)

	// Subscribe listens on the given pub/sub channels until ctx is done or the subscription fails,
	// calling subscribed once it listens (again after each reconnection, if it reconnects by itself)
	// and message for every message. It returns ctx's error or the failure.
	Subscribe(ctx context.Context, channels []string, subscribed func(), message func(channel string, data []byte)) error
}

// PoolBackend returns the Backend of a redigo pool: the one the gocraft-compatible constructors use.
func PoolBackend(pool *redis.Pool) Backend { return &poolBackend{pool: pool} }

type poolBackend struct {
	pool *redis.Pool
	// pingEvery keeps a subscription alive on connections dialled with a read timeout: it is learnt
	// from the first subscription that timed out while idle (half its quiet time). 0: no pings.
	pingEvery atomic.Int64
}

func (b *poolBackend) Conn(ctx context.Context) (redis.Conn, error) { return b.pool.GetContext(ctx) }

// Dial opens a connection of the pool's own outside the pool, for a subscription: closing it from
// another goroutine ends a blocked receive at once, so no goroutine has to wait on each message.
func (b *poolBackend) Dial(ctx context.Context) (redis.Conn, error) {
	if dial := b.ownDial(); dial != nil {
		return dial(ctx)
	}
	return b.pool.GetContext(ctx)
}

// ownDial returns how the pool dials a connection outside itself: its DialContext, or its Dial; nil
// when it has neither.
func (b *poolBackend) ownDial() func(context.Context) (redis.Conn, error) {
	if dialContext := PoolDialContext(b.pool); dialContext != nil {
		return dialContext
	}
	if b.pool.Dial != nil {
		return func(context.Context) (redis.Conn, error) { return b.pool.Dial() }
	}
	return nil
}

// PoolDialContext returns the pool's DialContext, or nil when it has none. The field came with
// redigo v1.8.0; programs that moved from gocraft/work often hold v2.0.0+incompatible, an older
// tag that minimal version selection ranks above every v1 release, so the field is looked up at
// run time: naming it would not compile against that tag.
func PoolDialContext(p *redis.Pool) func(context.Context) (redis.Conn, error) {
	f := reflect.ValueOf(p).Elem().FieldByName("DialContext")
	if !f.IsValid() || f.IsNil() {
		return nil
	}
	fn, _ := f.Interface().(func(context.Context) (redis.Conn, error))
	return fn
}

func (b *poolBackend) Subscribe(ctx context.Context, channels []string, subscribed func(), message func(string, []byte)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	c, err := b.Dial(ctx)
	if err != nil {
		return err
	}
	psc := redis.PubSubConn{Conn: c}
	defer psc.Close()
	args := make([]interface{}, len(channels))
	for i, ch := range channels {
		args[i] = ch
	}
	if err := psc.Subscribe(args...); err != nil {
		return err
	}
	pingerDone := make(chan struct{})
	defer func() { cancel(); <-pingerDone }()
	go func() {
		// redigo allows one goroutine sending while another receives: the pings never race the
		// receiver.
		defer close(pingerDone)
		defer c.Close() // ends the receive below once ctx is done
		every := time.Duration(b.pingEvery.Load())
		if every <= 0 {
			<-ctx.Done()
			return
		}
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if psc.Ping("") != nil {
					return
				}
			}
		}
	}()
	confirmed := 0
	quietSince := time.Now()
	for {
		// Only this goroutine receives: when ctx is done, the pinger closes the connection.
		switch v := psc.Receive().(type) {
		case redis.Message:
			quietSince = time.Now()
			message(v.Channel, v.Data)
		case redis.Subscription:
			if confirmed++; confirmed == len(channels) {
				subscribed()
			}
		case redis.Pong:
			quietSince = time.Now()
		case error:
			if ctx.Err() != nil {
				return ctx.Err()
			}
			var ne net.Error
			if errors.As(v, &ne) && ne.Timeout() {
				// An idle subscription met the connection's read timeout (or, pinging already, a
				// pong came late on a busy machine): subscribe again, pinging often enough from now
				// on. A server that is really gone fails the new subscription with its own error.
				every := int64(max(time.Since(quietSince)/3, 50*time.Millisecond))
				if cur := b.pingEvery.Load(); cur == 0 || every < cur {
					b.pingEvery.Store(every)
				}
				return ErrSubscriptionTimedOut
			}
			return v
		}
	}
}

// ErrSubscriptionTimedOut reports that an idle subscription hit the connection's read timeout; the
// next one pings often enough to stay alive.
var ErrSubscriptionTimedOut = errors.New("work: the idle wake-up subscription hit the connection's read timeout; subscribing again, pinging more often")

// RefusingBackend returns a Backend that fails every call with err: the Backend of a Client made
// without a Redis pool.
func RefusingBackend(err error) Backend { return refusing{err} }

type refusing struct{ err error }

func (r refusing) Conn(context.Context) (redis.Conn, error) { return nil, r.err }

func (r refusing) Subscribe(context.Context, []string, func(), func(string, []byte)) error {
	return r.err
}
