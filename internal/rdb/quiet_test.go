package rdb

import (
	"context"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// A quiet write runs without a reply, Confirm learns from the counter that it ran, and a write that
// met a flushed script cache (it ran nothing) is reported as not run; a connection dialled anew
// runs them again.
func TestQuietWritesAreConfirmedAndAWriteThatDidNotRunIsFound(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-quiet"), PoolBackend(pool))
	q := s.NewQueueArgs("a", "pool1", false, RateLimit{})
	inProgress := s.Ks.InProgress("a", "pool1")
	held := func() int {
		t.Helper()
		n, _ := redis.Int(rdo(t, pool, "LLEN", inProgress), nil)
		return n
	}
	qc, err := s.DialQuiet(context.Background(), "pool1")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { qc.Close() }()
	ack := func(entry string) {
		t.Helper()
		x := &Exchange{}
		x.Ops = append(x.Ops, FinishOp{Kind: OpAck, Q: q, Entry: entry})
		if err := s.SendQuiet(qc, "pool1", x); err != nil {
			t.Fatal(err)
		}
	}
	confirm := func(want bool) {
		t.Helper()
		ok, err := qc.Confirm()
		if err != nil {
			t.Fatal(err)
		}
		if ok != want {
			t.Fatalf("Confirm: %v, want %v", ok, want)
		}
	}

	rdo(t, pool, "LPUSH", inProgress, "j1", "j2")
	ack("j1")
	ack("j2")
	confirm(true)
	if n := held(); n != 0 {
		t.Fatalf("%d entries left in progress after two quiet acks confirmed", n)
	}
	if ttl, _ := redis.Int64(rdo(t, pool, "PTTL", s.Ks.QuietWrites("pool1")), nil); ttl <= 0 {
		t.Fatalf("the counter's TTL is %d ms", ttl)
	}

	rdo(t, pool, "SCRIPT", "FLUSH")
	rdo(t, pool, "LPUSH", inProgress, "j3")
	ack("j3") // NOSCRIPT, unseen
	confirm(false)
	if n := held(); n != 1 {
		t.Fatalf("%d entries in progress, want j3's: its write did not run", n)
	}
	// The connection still answers when asked: replies were turned off again after each confirm.
	confirm(true)
	// A connection dialled anew loads the script.
	qc.Close()
	if qc, err = s.DialQuiet(context.Background(), "pool1"); err != nil {
		t.Fatal(err)
	}
	ack("j3")
	confirm(true)
	if n := held(); n != 0 {
		t.Fatalf("%d entries left in progress after the write made again", n)
	}
}
