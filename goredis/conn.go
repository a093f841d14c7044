package goredis

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
)

// conn is a redigo connection on top of go-redis. Send queues a command, Flush runs the queue,
// Receive hands out the replies in order, and Do queues, runs and collects, as redigo does. The
// queue runs as go-redis pipelines: a MULTI ... EXEC stretch of it as one TxPipeline, the rest as
// plain pipelines (one command alone as a plain command).
//
// Where the commands run:
//   - *redis.Client (one server, or the Sentinel failover client): on one sticky server connection
//     (client.Conn()), taken at the first command and given back by Close, so a WAIT sees the writes
//     before it.
//   - *redis.ClusterClient: on a sticky connection to the master that owns the first key the conn
//     sees. A later run whose keys belong to another master goes through the cluster client, which
//     routes each command by its key; a WAIT after such a run is refused, since it could not vouch
//     for those writes.
//   - any other UniversalClient: through the client, command by command; WAIT is refused.
type conn struct {
	b   *backend
	ctx context.Context

	queue   []*redis.Cmd // sent, not yet run
	replies []result     // run, not yet received
	err     error        // set once the connection is unusable
	closed  bool

	sticky   *redis.Conn   // the server connection, once taken
	stickyOf *redis.Client // the client sticky belongs to
	routed   bool          // cluster: a command ran off the sticky connection
	watching bool          // a WATCH is in force on sticky
	openTx   []*redis.Cmd  // a MULTI ... whose EXEC has not been sent yet
}

// result is one reply: v in redigo's types, or err (a redigo.Error for an error reply, or the
// failure of the connection).
type result struct {
	v   interface{}
	err error
}

var (
	errClosed      = errors.New("goredis: connection closed")
	errNoReply     = errors.New("goredis: Receive with no reply pending")
	errPubSub      = errors.New("goredis: use Backend.Subscribe for pub/sub, not Conn")
	errOpenMulti   = errors.New("goredis: Receive inside MULTI before EXEC was sent")
	errWaitRouted  = redigo.Error("ERR goredis: WAIT cannot vouch for writes routed off this connection (keys on another cluster master, or a redirect)")
	errWaitNotHere = redigo.Error("ERR goredis: WAIT needs a *redis.Client or *redis.ClusterClient")
	errExecNoMulti = redigo.Error("ERR EXEC without MULTI")
	errDiscNoMulti = redigo.Error("ERR DISCARD without MULTI")
)

const (
	statusOK     = "OK"
	statusQueued = "QUEUED"
	// waitTimeoutSlop is how far below the client's ReadTimeout a WAIT's timeout is kept.
	waitTimeoutSlop = 200 * time.Millisecond
)

func (c *conn) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	if c.sticky != nil {
		if c.watching && c.err == nil {
			c.sticky.Do(context.Background(), "UNWATCH")
		}
		c.sticky.Close()
		c.sticky = nil
	}
	c.queue, c.replies, c.openTx = nil, nil, nil
	return nil
}

func (c *conn) Err() error {
	if c.err != nil {
		return c.err
	}
	if c.closed {
		return errClosed
	}
	return nil
}

func (c *conn) Send(cmd string, args ...interface{}) error {
	if err := c.Err(); err != nil {
		return err
	}
	return c.send(cmd, args)
}

func (c *conn) send(cmd string, args []interface{}) error {
	all := commandArgs(cmd, args)
	switch lowerName(all) {
	case "subscribe", "psubscribe", "ssubscribe", "unsubscribe", "punsubscribe", "sunsubscribe", "monitor":
		return errPubSub
	}
	c.queue = append(c.queue, redis.NewCmd(c.ctx, all...))
	return nil
}

func (c *conn) Flush() error {
	if err := c.Err(); err != nil {
		return err
	}
	c.run(c.ctx)
	return c.err
}

func (c *conn) Receive() (interface{}, error) { return c.ReceiveContext(c.ctx) }

// ReceiveContext returns the next reply, running the queue first when no reply is waiting.
func (c *conn) ReceiveContext(ctx context.Context) (interface{}, error) {
	if len(c.replies) == 0 {
		if err := c.Err(); err != nil {
			return nil, err
		}
		if len(c.queue) == 0 {
			if len(c.openTx) > 0 {
				return nil, errOpenMulti
			}
			return nil, errNoReply
		}
		c.run(ctx)
		if len(c.replies) == 0 {
			if c.err != nil {
				return nil, c.err
			}
			return nil, errOpenMulti
		}
	}
	r := c.replies[0]
	c.replies = c.replies[1:]
	return r.v, r.err
}

func (c *conn) Do(cmd string, args ...interface{}) (interface{}, error) {
	return c.DoContext(c.ctx, cmd, args...)
}

// DoContext runs the queued commands and cmd (unless it is ""), and returns, like redigo: for "",
// every pending reply as a []interface{} (error replies in it as redigo.Error); else cmd's reply and
// the first error reply among all of them.
func (c *conn) DoContext(ctx context.Context, cmd string, args ...interface{}) (interface{}, error) {
	if err := c.Err(); err != nil {
		return nil, err
	}
	if cmd != "" {
		if err := c.send(cmd, args); err != nil {
			return nil, err
		}
	}
	if cmd == "" && len(c.queue) == 0 && len(c.replies) == 0 {
		return nil, nil
	}
	c.run(ctx)
	if c.err != nil {
		c.replies = nil
		return nil, c.err
	}
	rs := c.replies
	c.replies = nil
	if cmd == "" {
		out := make([]interface{}, len(rs))
		for i, r := range rs {
			if r.err != nil {
				out[i] = r.err
			} else {
				out[i] = r.v
			}
		}
		return out, nil
	}
	if len(rs) == 0 {
		// cmd opened a transaction (MULTI ...) whose EXEC is still to come.
		return nil, errOpenMulti
	}
	var first error
	for _, r := range rs {
		if r.err != nil && first == nil {
			first = r.err
		}
	}
	last := rs[len(rs)-1]
	if last.err != nil {
		return last.err, first
	}
	return last.v, first
}

// run executes the queue, appending one reply per command to c.replies. A MULTI whose EXEC (or
// DISCARD) has not been sent yet stays pending in c.openTx.
func (c *conn) run(ctx context.Context) {
	q := c.queue
	c.queue = nil
	if len(c.openTx) > 0 {
		q = append(c.openTx, q...)
		c.openTx = nil
	}
	for i := 0; i < len(q); {
		if c.err != nil {
			for ; i < len(q); i++ {
				c.replies = append(c.replies, result{err: c.err})
			}
			return
		}
		switch lowerName(q[i].Args()) {
		case "multi":
			j := i + 1
			for ; j < len(q); j++ {
				n := lowerName(q[j].Args())
				if n == "exec" || n == "discard" {
					break
				}
			}
			if j == len(q) {
				c.openTx = q[i:]
				return
			}
			c.runTx(ctx, q[i+1:j], lowerName(q[j].Args()) == "discard")
			i = j + 1
		case "exec":
			c.replies = append(c.replies, result{err: errExecNoMulti})
			i++
		case "discard":
			c.replies = append(c.replies, result{err: errDiscNoMulti})
			i++
		default:
			j := i + 1
			for ; j < len(q); j++ {
				n := lowerName(q[j].Args())
				if n == "multi" || n == "exec" || n == "discard" {
					break
				}
			}
			c.runPlain(ctx, q[i:j])
			i = j
		}
	}
}

// executor is what runs commands: a sticky connection or a client.
type executor interface {
	Process(ctx context.Context, cmd redis.Cmder) error
	Pipeline() redis.Pipeliner
	TxPipeline() redis.Pipeliner
}

// target chooses where cmds run, and reports whether that is the sticky connection.
func (c *conn) target(ctx context.Context, cmds []*redis.Cmd) (executor, bool, error) {
	switch {
	case c.b.single != nil:
		if c.sticky == nil {
			c.sticky, c.stickyOf = c.b.single.Conn(), c.b.single
		}
		return c.sticky, true, nil
	case c.b.cluster != nil:
		var node *redis.Client
		for _, cmd := range cmds {
			args := cmd.Args()
			key, ok := firstKey(lowerName(args), args)
			if !ok {
				continue
			}
			n, err := c.b.cluster.MasterForKey(ctx, key)
			if err != nil {
				return nil, false, err
			}
			if node == nil {
				node = n
			} else if n != node {
				return c.b.cluster, false, nil // keys on several masters: let the cluster route them
			}
		}
		switch {
		case node == nil && c.sticky == nil:
			return c.b.cluster, false, nil
		case node == nil:
			return c.sticky, true, nil
		case c.sticky == nil:
			c.sticky, c.stickyOf = node.Conn(), node
			return c.sticky, true, nil
		case node == c.stickyOf:
			return c.sticky, true, nil
		default:
			return c.b.cluster, false, nil
		}
	default:
		return c.b.client, false, nil
	}
}

// runPlain runs commands outside a transaction.
func (c *conn) runPlain(ctx context.Context, cmds []*redis.Cmd) {
	for _, cmd := range cmds {
		if lowerName(cmd.Args()) == "wait" {
			c.runPlainSplitAtWait(ctx, cmds)
			return
		}
	}
	ex, sticky, err := c.target(ctx, cmds)
	if err != nil {
		c.fail(err, len(cmds))
		return
	}
	c.exec(ctx, ex, cmds)
	if !sticky {
		c.routed = true
	} else if c.b.cluster != nil && allRedirected(cmds) {
		// The slot moved (resharding, failover): nothing ran. Let the cluster client follow the
		// redirect and refresh its view; a WAIT on this conn can no longer vouch for the writes.
		c.b.cluster.ReloadState(ctx)
		c.routed = true
		fresh := make([]*redis.Cmd, len(cmds))
		for i, cmd := range cmds {
			fresh[i] = redis.NewCmd(ctx, cmd.Args()...)
		}
		copy(cmds, fresh)
		c.exec(ctx, c.b.cluster, cmds)
	}
	c.collect(ctx, cmds)
}

// runPlainSplitAtWait runs the commands before a WAIT, then the WAIT alone on the same server
// connection (with its timeout kept under the client's read timeout), then the rest.
func (c *conn) runPlainSplitAtWait(ctx context.Context, cmds []*redis.Cmd) {
	for len(cmds) > 0 && c.err == nil {
		w := 0
		for w < len(cmds) && lowerName(cmds[w].Args()) != "wait" {
			w++
		}
		if w > 0 {
			c.runPlainNoWait(ctx, cmds[:w])
			cmds = cmds[w:]
			continue
		}
		c.runWait(ctx, cmds[0])
		cmds = cmds[1:]
	}
	if c.err != nil {
		c.fail(c.err, len(cmds))
	}
}

func (c *conn) runPlainNoWait(ctx context.Context, cmds []*redis.Cmd) {
	c.runPlain(ctx, cmds)
}

func (c *conn) runWait(ctx context.Context, cmd *redis.Cmd) {
	switch {
	case c.b.single == nil && c.b.cluster == nil:
		c.replies = append(c.replies, result{err: errWaitNotHere})
		return
	case c.routed:
		c.replies = append(c.replies, result{err: errWaitRouted})
		return
	case c.sticky == nil && c.b.single != nil:
		c.sticky, c.stickyOf = c.b.single.Conn(), c.b.single
	case c.sticky == nil:
		// Nothing written on this conn yet: any master answers for no writes.
		c.exec(ctx, c.b.cluster, []*redis.Cmd{cmd})
		c.collect(ctx, []*redis.Cmd{cmd})
		return
	}
	args := cmd.Args()
	if len(args) == 3 {
		if rt := c.stickyOf.Options().ReadTimeout; rt > 0 {
			ms, err := strconv.ParseInt(argString(args[2]), 10, 64)
			limit := (rt - waitTimeoutSlop).Milliseconds()
			if limit < 1 {
				limit = 1
			}
			if err == nil && (ms == 0 || ms > limit) {
				cmd = redis.NewCmd(ctx, args[0], args[1], limit)
			}
		}
	}
	c.exec(ctx, c.sticky, []*redis.Cmd{cmd})
	c.collect(ctx, []*redis.Cmd{cmd})
}

// runTx runs MULTI, cmds, EXEC (or DISCARD) and appends the replies redigo would give: "OK" for
// MULTI, "QUEUED" for each command, and EXEC's array (or its error).
func (c *conn) runTx(ctx context.Context, cmds []*redis.Cmd, discard bool) {
	c.replies = append(c.replies, result{v: statusOK})
	if discard || len(cmds) == 0 {
		for range cmds {
			c.replies = append(c.replies, result{v: statusQueued})
		}
		if discard {
			if c.watching && c.sticky != nil {
				c.sticky.Do(ctx, "UNWATCH")
			}
			c.watching = false
			c.replies = append(c.replies, result{v: statusOK})
		} else {
			c.watching = false
			c.replies = append(c.replies, result{v: []interface{}{}})
		}
		return
	}
	ex, sticky, err := c.target(ctx, cmds)
	if err != nil {
		c.fail(err, len(cmds)+1)
		return
	}
	if !sticky {
		c.routed = true
	}
	pipe := ex.TxPipeline()
	for _, cmd := range cmds {
		_ = pipe.Process(ctx, cmd)
	}
	_, err = pipe.Exec(ctx)
	markUnrun(cmds, err)
	c.watching = false
	for range cmds {
		c.replies = append(c.replies, result{v: statusQueued})
	}
	// A failure of the whole transaction shows as the same error on every command.
	first := cmds[0].Err()
	whole := first != nil
	for _, cmd := range cmds[1:] {
		if cmd.Err() != first {
			whole = false
			break
		}
	}
	if whole && first != redis.Nil {
		switch {
		case first == redis.TxFailedErr: // a WATCHed key changed: EXEC answers nil
			c.replies = append(c.replies, result{})
			return
		case !isServerError(first):
			c.setFatal(ctx, first)
			c.replies = append(c.replies, result{err: first})
			return
		case txLevelError(first.Error()):
			if c.b.cluster != nil {
				// A redirect inside a transaction shows as EXECABORT: look at the cluster again.
				c.b.cluster.ReloadState(ctx)
			}
			c.replies = append(c.replies, result{err: toRedigoError(first)})
			return
		}
	}
	out := make([]interface{}, len(cmds))
	for i, cmd := range cmds {
		r := c.convert(ctx, cmd)
		if c.err != nil {
			c.replies = append(c.replies, result{err: c.err})
			return
		}
		if r.err != nil {
			out[i] = r.err
		} else {
			out[i] = r.v
		}
	}
	c.replies = append(c.replies, result{v: out})
}

func txLevelError(msg string) bool {
	for _, p := range []string{"EXECABORT", "CROSSSLOT", "MOVED ", "ASK ", "CLUSTERDOWN", "TRYAGAIN"} {
		if strings.HasPrefix(msg, p) {
			return true
		}
	}
	return false
}

func isRedirect(msg string) bool {
	return strings.HasPrefix(msg, "MOVED ") || strings.HasPrefix(msg, "ASK ")
}

// clusterChanging reports whether an error reply says the cluster's layout is moving.
func clusterChanging(msg string) bool {
	return isRedirect(msg) || strings.HasPrefix(msg, "CLUSTERDOWN") || strings.HasPrefix(msg, "TRYAGAIN")
}

// allRedirected reports whether every command was answered with a MOVED or ASK redirect.
func allRedirected(cmds []*redis.Cmd) bool {
	for _, cmd := range cmds {
		err := cmd.Err()
		if err == nil || !isServerError(err) || !isRedirect(err.Error()) {
			return false
		}
	}
	return len(cmds) > 0
}

// exec runs cmds on ex: one command alone, several as a pipeline.
func (c *conn) exec(ctx context.Context, ex executor, cmds []*redis.Cmd) {
	if len(cmds) == 1 {
		markUnrun(cmds, ex.Process(ctx, cmds[0]))
		return
	}
	pipe := ex.Pipeline()
	for _, cmd := range cmds {
		_ = pipe.Process(ctx, cmd)
	}
	_, err := pipe.Exec(ctx)
	markUnrun(cmds, err)
}

// markUnrun gives the error of a pipeline to its commands that did not run: go-redis leaves them
// untouched when it could not get a connection at all. A command that ran has a value or an error
// (redis.Nil for a nil reply).
func markUnrun(cmds []*redis.Cmd, err error) {
	if err == nil {
		return
	}
	for _, cmd := range cmds {
		if cmd.Err() == nil && cmd.Val() == nil {
			cmd.SetErr(err)
		}
	}
}

// collect appends the replies of cmds.
func (c *conn) collect(ctx context.Context, cmds []*redis.Cmd) {
	for _, cmd := range cmds {
		switch lowerName(cmd.Args()) {
		case "watch":
			c.watching = c.watching || cmd.Err() == nil
		case "unwatch":
			c.watching = false
		}
		c.replies = append(c.replies, c.convert(ctx, cmd))
	}
}

// convert turns one command's outcome into a reply; a failure of the connection makes it unusable.
func (c *conn) convert(ctx context.Context, cmd *redis.Cmd) result {
	if c.err != nil {
		return result{err: c.err}
	}
	v, err := cmd.Result()
	switch {
	case err == nil:
		args := cmd.Args()
		return result{v: convertReply(lowerName(args), args, v)}
	case err == redis.Nil:
		return result{}
	case isServerError(err):
		if c.b.cluster != nil && clusterChanging(err.Error()) {
			c.b.cluster.ReloadState(ctx)
		}
		return result{err: toRedigoError(err)}
	default:
		c.setFatal(ctx, err)
		return result{err: err}
	}
}

func (c *conn) setFatal(ctx context.Context, err error) {
	if c.err == nil {
		c.err = err
	}
	if c.b.cluster != nil {
		// A master may have failed over: look at the cluster again.
		c.b.cluster.ReloadState(ctx)
	}
}

// fail records err as the reply of n commands that could not run.
func (c *conn) fail(err error, n int) {
	if isServerError(err) {
		for i := 0; i < n; i++ {
			c.replies = append(c.replies, result{err: toRedigoError(err)})
		}
		return
	}
	if c.err == nil {
		c.err = err
	}
	for i := 0; i < n; i++ {
		c.replies = append(c.replies, result{err: c.err})
	}
}
