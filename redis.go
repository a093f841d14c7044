package work

// The root's door to Redis. Everything that knows Redis — the key names of the documented layout,
// the Lua scripts, the round trips and the subscriptions — lives in internal/rdb; the rest of the
// package calls its Store's named operations and never builds a key or sends a command
// (boundary_test.go checks it). This file opens a store on a Backend and names what a caller of the
// package sees of that layer.

import (
	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/rdb"
)

// Backend is how the package reaches Redis. NewEnqueuer, NewWorkerPool and NewClient use a redigo
// *redis.Pool (see PoolBackend); the ...WithBackend constructors take any Backend, so that an adapter
// for another client (Redis Cluster, Sentinel) can sit behind the same code. Implementations must be
// safe for concurrent use.
//
// Conn returns a connection for a command or a pipeline of commands (redigo's Send, Flush, Receive
// and Do("") semantics, MULTI/EXEC included) and for EVALSHA/EVAL. Its commands run on one server
// connection, in order; WAIT relies on it, so a Conn that cannot promise it for a WAIT (writes spread
// over several Cluster masters) must return an error for the WAIT. Replies follow redigo's types:
// int64, []byte, []interface{}, nil, redis.Error. The caller closes it.
//
// Subscribe listens on the given pub/sub channels until ctx is done or the subscription fails,
// calling subscribed once it listens (again after each reconnection, if it reconnects by itself) and
// message for every message. It returns ctx's error or the failure.
type Backend = rdb.Backend

// PoolBackend returns the Backend of a redigo pool: the one the gocraft-compatible constructors use.
func PoolBackend(pool *redis.Pool) Backend { return rdb.PoolBackend(pool) }
