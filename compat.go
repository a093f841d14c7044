package work

// Calls that gocraft/work accepts with odd inputs, kept working here.

import (
	"context"
	"errors"

	"github.com/gomodule/redigo/redis"
)

// errNoPool is the error of every method of a Client made with a nil *redis.Pool. gocraft/work's
// NewClient took nil (its methods then panicked), so programs build Clients they may never use.
var errNoPool = errors.New("work: the Client has no Redis pool (NewClient was given nil)")

// noPool is the Backend of a Client made with a nil *redis.Pool: it refuses every call.
type noPool struct{}

func (noPool) Conn(context.Context) (redis.Conn, error) { return nil, errNoPool }

func (noPool) Subscribe(context.Context, []string, func(), func(string, []byte)) error {
	return errNoPool
}
