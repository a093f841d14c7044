package rdb

// Quiet writes: outcomes sent on a connection to which Redis sends no replies.

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/gomodule/redigo/redis"
)

// QuietConn is a connection of the pool's own, outside its pool, on which Redis sends no replies
// (CLIENT REPLY OFF). A pool that waits for hand-offs writes the outcomes of the jobs handed to it
// there: a reply to each would wake the idle process once more per job, which costs it more CPU
// than the job's own round trip. Nothing is learnt from a write, so each also adds one to the pool's
// counter of quiet writes (<ns>:quiet:<pool>), and Confirm reads the counter back: when it moved by
// the writes sent, Redis ran every one (a write that failed, NOSCRIPT, OOM, READONLY, ran nothing,
// so the counter falls short). Not safe for concurrent use.
type QuietConn struct {
	c     redis.Conn
	key   interface{} // the counter
	base  int64       // the counter's value before the writes sent since the last Confirm
	sent  int64
	stale bool // the counter must be read again before it is a base
}

// ErrNoQuiet says that the backend cannot give a connection of the pool's own (a redigo pool with
// neither Dial nor DialContext, or a Backend of another client): outcomes are written with replies.
var ErrNoQuiet = errors.New("work: no connection of the pool's own for quiet writes")

// DialQuiet opens a quiet connection for the pool poolID: it loads exchangeScript on it, then turns
// its replies off.
func (s *Store) DialQuiet(ctx context.Context, poolID string) (*QuietConn, error) {
	b, ok := s.Backend.(*poolBackend)
	if !ok || b.ownDial() == nil {
		return nil, ErrNoQuiet
	}
	c, err := b.ownDial()(ctx)
	if err != nil {
		return nil, err
	}
	// CLIENT REPLY came with Redis 3.2; a server or proxy that refuses it gets no quiet writes.
	if _, err := redis.String(c.Do("CLIENT", "REPLY", "ON")); err != nil {
		c.Close()
		return nil, fmt.Errorf("%w: CLIENT REPLY: %v", ErrNoQuiet, err)
	}
	if err := exchangeScript.Load(c); err != nil {
		c.Close()
		return nil, err
	}
	if err := c.Send("CLIENT", "REPLY", "OFF"); err != nil {
		c.Close()
		return nil, err
	}
	q := &QuietConn{c: c, key: s.Ks.QuietWrites(poolID), stale: true}
	return q, nil
}

// SendQuiet sends x (its outcomes; it fetches nothing and carries no stats) on q and returns at once.
// An error says the connection is broken; x may have run all the same.
func (s *Store) SendQuiet(q *QuietConn, poolID interface{}, x *Exchange) error {
	if q.stale {
		// A base first, read with replies on: the counter may hold anything (a pool's earlier run,
		// a write applied after its connection broke).
		base, err := q.read()
		if err != nil {
			return err
		}
		q.base, q.sent, q.stale = base, 0, false
	}
	x.Count = q.key
	args := s.exchangeArgs(poolID, x)
	defer clear(args)
	if err := exchangeScript.SendHash(q.c, args...); err != nil {
		return err
	}
	if err := q.c.Flush(); err != nil {
		return err
	}
	q.sent++
	return nil
}

// quietTTL is how long a counter outlives its pool's last confirm (a pool that dies leaves it).
const quietTTL = 24 * time.Hour

// read returns the counter, in one round trip with replies on; it renews the counter's TTL.
func (q *QuietConn) read() (int64, error) {
	q.c.Send("CLIENT", "REPLY", "ON")
	q.c.Send("GET", q.key)
	q.c.Send("PEXPIRE", q.key, quietTTL.Milliseconds())
	q.c.Send("CLIENT", "REPLY", "OFF")
	if err := q.c.Flush(); err != nil {
		return 0, err
	}
	if _, err := redis.String(redis.ReceiveWithTimeout(q.c, quietReplyWait)); err != nil {
		return 0, err
	}
	n, err := redis.Int64(redis.ReceiveWithTimeout(q.c, quietReplyWait))
	if err != nil && !errors.Is(err, redis.ErrNil) {
		return 0, err
	}
	if _, err := redis.ReceiveWithTimeout(q.c, quietReplyWait); err != nil {
		return 0, err
	}
	return n, nil
}

// quietReplyWait bounds the wait for a reply on a quiet connection.
const quietReplyWait = 10 * time.Second

// Confirm reports whether every write sent on q since the last Confirm ran, in one round trip. When
// they did not all run, q is best closed: its server may refuse writes for good (a replica after a
// failover) or lack the script. An error says the connection is broken.
func (q *QuietConn) Confirm() (bool, error) {
	if q.sent == 0 {
		return true, nil
	}
	n, err := q.read()
	if err != nil {
		return false, err
	}
	ok := n == q.base+q.sent
	q.base, q.sent = n, 0
	return ok, nil
}

// Close closes q.
func (q *QuietConn) Close() error { return q.c.Close() }
