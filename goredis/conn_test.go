package goredis_test

import (
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	redigo "github.com/gomodule/redigo/redis"
	"github.com/redis/go-redis/v9"
	"github.com/workqueue/work"
	"github.com/workqueue/work/goredis"
)

func TestConnSemanticsSingleNode(t *testing.T) {
	for _, proto := range []int{2, 3} {
		proto := proto
		t.Run(map[int]string{2: "RESP2", 3: "RESP3"}[proto], func(t *testing.T) {
			t.Parallel()
			c, _ := singleClient(t, proto)
			checkConnSemantics(t, goredis.NewBackend(c), newNamespace("conn", false))
		})
	}
}

// checkConnSemantics pins the redigo behaviour the work package relies on: reply types, Send/Flush/
// Receive, Do("") and Do's error, MULTI/EXEC, EVALSHA falling back to EVAL, nil replies.
func checkConnSemantics(t *testing.T, b work.Backend, ns string) {
	t.Helper()
	ctx := context.Background()
	k := func(s string) string { return ns + ":" + s }
	conn, err := b.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, ok := conn.(redigo.ConnWithContext); !ok {
		t.Errorf("Conn does not implement redigo.ConnWithContext")
	}

	expect := func(what string, got, want interface{}) {
		t.Helper()
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: got %#v, want %#v", what, got, want)
		}
	}
	do := func(cmd string, args ...interface{}) interface{} {
		t.Helper()
		v, err := conn.Do(cmd, args...)
		if err != nil {
			t.Fatalf("%s %v: %v", cmd, args, err)
		}
		return v
	}

	expect("SET", do("SET", k("s"), "v"), "OK")
	expect("GET", do("GET", k("s")), []byte("v"))
	expect("GET missing", do("GET", k("missing")), nil)
	expect("INCRBY", do("INCRBY", k("n"), 5), int64(5))
	expect("RPUSH", do("RPUSH", k("l"), "a", []byte("b"), 3, 1.5, true), int64(5))
	expect("LRANGE", do("LRANGE", k("l"), 0, -1), []interface{}{[]byte("a"), []byte("b"), []byte("3"), []byte("1.5"), []byte("1")})
	expect("ZADD", do("ZADD", k("z"), 1700000000, "m", 2.5, "n"), int64(2))
	expect("ZRANGE WITHSCORES", do("ZRANGE", k("z"), 0, -1, "WITHSCORES"),
		[]interface{}{[]byte("n"), []byte("2.5"), []byte("m"), []byte("1700000000")})
	expect("ZRANGEBYSCORE WITHSCORES LIMIT", do("ZRANGEBYSCORE", k("z"), "-inf", "+inf", "WITHSCORES", "LIMIT", 0, 1),
		[]interface{}{[]byte("n"), []byte("2.5")})
	expect("ZSCORE", do("ZSCORE", k("z"), "m"), []byte("1700000000"))
	do("HSET", k("h"), "f", "1")
	expect("HGETALL", do("HGETALL", k("h")), []interface{}{[]byte("f"), []byte("1")})
	expect("HMGET", do("HMGET", k("h"), "f", "g"), []interface{}{[]byte("1"), nil})
	expect("SMEMBERS empty", do("SMEMBERS", k("none")), []interface{}{})
	expect("PING", do("PING"), "PONG")

	// Error replies are redigo errors with the server's text; the connection stays usable.
	if _, err := conn.Do("LPUSH", k("s"), "x"); err == nil || !strings.HasPrefix(err.Error(), "WRONGTYPE") {
		t.Errorf("LPUSH on a string: %v, want WRONGTYPE", err)
	} else if _, ok := err.(redigo.Error); !ok {
		t.Errorf("error reply has type %T, want redigo.Error", err)
	}
	if conn.Err() != nil {
		t.Fatalf("connection unusable after an error reply: %v", conn.Err())
	}

	// Send, Flush, Receive in order.
	conn.Send("SET", k("a"), "1")
	conn.Send("INCR", k("a"))
	conn.Send("GET", k("a"))
	if err := conn.Flush(); err != nil {
		t.Fatal(err)
	}
	for i, want := range []interface{}{"OK", int64(2), []byte("2")} {
		got, err := conn.Receive()
		if err != nil {
			t.Fatal(err)
		}
		expect("Receive", got, want)
		_ = i
	}
	if _, err := conn.Receive(); err == nil {
		t.Errorf("Receive with nothing pending did not fail")
	}

	// Do("") returns every pending reply, error replies inside.
	conn.Send("INCR", k("a"))
	conn.Send("LPUSH", k("s"), "x")
	conn.Send("GET", k("missing"))
	v, err := conn.Do("")
	if err != nil {
		t.Fatal(err)
	}
	all := v.([]interface{})
	if len(all) != 3 || all[0] != int64(3) || all[2] != nil {
		t.Errorf("Do(\"\"): %#v", all)
	} else if e, ok := all[1].(redigo.Error); !ok || !strings.HasPrefix(string(e), "WRONGTYPE") {
		t.Errorf("Do(\"\") error element: %#v", all[1])
	}
	if v, err := conn.Do(""); v != nil || err != nil {
		t.Errorf("Do(\"\") with nothing pending: %v, %v", v, err)
	}

	// Do(cmd) after Sends returns cmd's reply and the first error.
	conn.Send("LPUSH", k("s"), "x")
	if v, err := conn.Do("GET", k("a")); err == nil || !reflect.DeepEqual(v, []byte("3")) {
		t.Errorf("Do after a failing Send: %#v, %v", v, err)
	}

	// MULTI ... EXEC.
	conn.Send("MULTI")
	conn.Send("INCR", k("t"))
	conn.Send("LPUSH", k("tl"), "a", "b")
	conn.Send("GET", k("missing"))
	conn.Send("PUBLISH", k("wake"), "x")
	v, err = conn.Do("EXEC")
	if err != nil {
		t.Fatalf("EXEC: %v", err)
	}
	expect("EXEC", v, []interface{}{int64(1), int64(2), nil, int64(0)})
	conn.Send("MULTI")
	conn.Send("INCR", k("t"))
	conn.Send("INCR", k("s")) // fails at run time, inside the transaction
	v, err = conn.Do("EXEC")
	if err != nil {
		t.Fatalf("EXEC with a failing command: %v", err)
	}
	arr := v.([]interface{})
	if len(arr) != 2 || arr[0] != int64(2) {
		t.Errorf("EXEC with a failing command: %#v", arr)
	} else if _, ok := arr[1].(redigo.Error); !ok {
		t.Errorf("EXEC's failing command: %#v", arr[1])
	}
	// MULTI, replies received one by one, as redigo gives them.
	conn.Send("MULTI")
	conn.Send("INCR", k("t"))
	conn.Send("EXEC")
	conn.Flush()
	for _, want := range []interface{}{"OK", "QUEUED", []interface{}{int64(3)}} {
		got, err := conn.Receive()
		if err != nil {
			t.Fatal(err)
		}
		expect("MULTI Receive", got, want)
	}

	// Scripts: EVALSHA of an unknown script fails with NOSCRIPT, and redigo falls back to EVAL.
	script := redigo.NewScript(2, `redis.call('set', KEYS[1], ARGV[1]); return {redis.call('get', KEYS[1]), redis.call('get', KEYS[2]), tonumber(ARGV[2]), 'x'}`)
	v, err = script.Do(conn, k("sk"), k("missing"), "val", 7)
	if err != nil {
		t.Fatalf("script: %v", err)
	}
	expect("script", v, []interface{}{[]byte("val"), nil, int64(7), []byte("x")})
	v, err = script.Do(conn, k("sk"), k("missing"), "val2", 8) // now through EVALSHA
	if err != nil {
		t.Fatalf("script again: %v", err)
	}
	expect("script again", v, []interface{}{[]byte("val2"), nil, int64(8), []byte("x")})
	str, err := redigo.String(redigo.NewScript(1, `return 'ok'`).Do(conn, k("x")))
	if err != nil || str != "ok" {
		t.Errorf("script string: %q %v", str, err)
	}
	if _, err := redigo.NewScript(1, `return redis.error_reply('BOOM bad')`).Do(conn, k("x")); err == nil || err.Error() != "BOOM bad" {
		t.Errorf("script error: %v", err)
	}

	// redigo's helpers work on the replies.
	if n, err := redigo.Int64(conn.Do("GET", k("a"))); err != nil || n != 3 {
		t.Errorf("redigo.Int64: %d %v", n, err)
	}
	if _, err := redigo.String(conn.Do("GET", k("missing"))); err != redigo.ErrNil {
		t.Errorf("redigo.String of nil: %v, want ErrNil", err)
	}
	if bs, err := redigo.ByteSlices(conn.Do("LRANGE", k("tl"), 0, -1)); err != nil || len(bs) != 2 {
		t.Errorf("redigo.ByteSlices: %q %v", bs, err)
	}

	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("PING"); err == nil {
		t.Errorf("Do after Close did not fail")
	}
}

// TestConnReportsUnreachableServer: when go-redis cannot get a connection at all, every command,
// pipeline and transaction fails with that error (go-redis leaves the commands of a pipeline it could
// not send untouched, which must not read as nil replies).
func TestConnReportsUnreachableServer(t *testing.T) {
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	b := goredis.NewBackend(c)
	conn, err := b.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("SET", "k", "v"); err == nil {
		t.Errorf("Do on an unreachable server did not fail")
	}
	conn.Close()
	conn, _ = b.Conn(context.Background())
	conn.Send("SADD", "a", "x")
	conn.Send("LPUSH", "b", "y")
	if v, err := conn.Do(""); err == nil {
		t.Errorf("pipeline on an unreachable server: %#v, no error", v)
	}
	conn.Close()
	conn, _ = b.Conn(context.Background())
	conn.Send("MULTI")
	conn.Send("LPUSH", "b", "y")
	if v, err := conn.Do("EXEC"); err == nil {
		t.Errorf("transaction on an unreachable server: %#v, no error", v)
	}
	conn.Close()
	e := goredis.NewEnqueuer("down", c)
	if _, err := e.Enqueue("x", nil); err == nil {
		t.Errorf("Enqueue on an unreachable server did not fail")
	}
	if _, err := e.EnqueueBatch([]work.BatchJob{{Name: "x"}, {Name: "y"}}); err == nil {
		t.Errorf("EnqueueBatch on an unreachable server did not fail")
	}
}

// TestRingClient: a client that is neither *redis.Client nor *redis.ClusterClient runs commands
// through itself; jobs flow, and WaitReplicas is refused rather than vouched for.
func TestRingClient(t *testing.T) {
	_, s := singleClient(t, 2)
	ring := redis.NewRing(&redis.RingOptions{Addrs: map[string]string{"a": s.Addr}})
	defer ring.Close()
	ns := newNamespace("ring", true)
	done := make(chan struct{}, 1)
	wp := goredis.NewWorkerPool(tctx{}, 2, ns, ring, fastOpts)
	wp.Job("r", func(*work.Job) error { done <- struct{}{}; return nil })
	wp.Start()
	defer wp.Stop()
	e := goredis.NewEnqueuer(ns, ring)
	if _, err := e.EnqueueBatch([]work.BatchJob{{Name: "r"}}); err != nil {
		t.Fatal(err)
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the job did not run")
	}
	e.WaitReplicas = 1
	if _, err := e.Enqueue("r", nil); err == nil || !strings.Contains(err.Error(), "WAIT") {
		t.Errorf("WaitReplicas on a Ring: %v, want a refusal", err)
	}
}
