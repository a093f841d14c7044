package rdb

import (
	"context"
	"strconv"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// A pool stays in a name's idle set through hand-offs while they stay below the handoff_to written
// by its calls that add it to an idle set, or fetch and find it in one (what it has read plus its
// room, less what the call fetched), and leaves it with the hand-off that reaches that number; with
// no room declared (or none written), one hand-off takes it off, as does a message it does not
// receive.
func TestAHandOffKeepsThePoolWaitingWhileItHasRoom(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-handoff"), PoolBackend(pool))
	q := s.NewQueueArgs("a", "pool1", false, RateLimit{})
	idle, queue := s.Ks.IdlePools("a"), s.Ks.Jobs("a")
	rdo(t, pool, "HSET", s.Ks.Heartbeat("pool1"), "epoch", "0")

	// The pool listens on its hand-off channel: a hand-off goes only to a pool that receives it.
	sub := redis.PubSubConn{Conn: pool.Get()}
	defer sub.Close()
	if err := sub.Subscribe(s.Ks.HandOffChannel("pool1")); err != nil {
		t.Fatal(err)
	}
	if _, ok := sub.Receive().(redis.Subscription); !ok {
		t.Fatal("no subscription reply")
	}

	exchange := func(fetch int, handedIn int64, room int, acks ...string) *Exchange {
		t.Helper()
		x := &Exchange{HandedIn: handedIn, Room: room}
		if fetch > 0 {
			x.Fetch = append(x.Fetch, FetchShare{Q: q, Share: fetch})
		}
		for _, e := range acks {
			x.Ops = append(x.Ops, FinishOp{Kind: OpAck, Q: q, Entry: e})
		}
		if err := s.RunExchange(context.Background(), "pool1", x); err != nil {
			t.Fatal(err)
		}
		return x
	}
	handoffTo := func() string {
		t.Helper()
		v, _ := redis.String(rdo(t, pool, "HGET", s.Ks.Heartbeat("pool1"), "handoff_to"), nil)
		return v
	}
	waiting := func() bool {
		t.Helper()
		ok, _ := redis.Bool(rdo(t, pool, "SISMEMBER", idle, "pool1"), nil)
		return ok
	}
	// push enqueues one job by the hand-off script; it reports whether the job was handed.
	n := 0
	push := func() bool {
		t.Helper()
		n++
		p := &Push{Name: "a", Payload: []byte("j" + strconv.Itoa(n)), Publish: true}
		s.EnqueueMany(context.Background(), ReplicaWait{}, []*Push{p})
		if p.Err != nil {
			t.Fatal(p.Err)
		}
		return p.N == 0
	}

	// A fetch that finds the queue empty registers the pool with room for three.
	exchange(5, 0, 3)
	if got := handoffTo(); got != "3" || !waiting() {
		t.Fatalf("after the first fetch: handoff_to %q, waiting %v; want 3, true", got, waiting())
	}
	for i := 1; i <= 3; i++ {
		if !push() {
			t.Fatalf("job %d was not handed to the pool", i)
		}
		if want := i < 3; waiting() != want {
			t.Fatalf("after hand-off %d: waiting %v, want %v", i, waiting(), want)
		}
	}
	if push() {
		t.Fatal("a fourth job was handed to a pool with room for three")
	}

	// A fetch that takes the queued job and finds the queue empty: 3 read + room 10 - 1 fetched.
	if x := exchange(10, 3, 10); len(x.Jobs) != 1 {
		t.Fatalf("the fetch took %d jobs, want 1", len(x.Jobs))
	}
	if got := handoffTo(); got != "12" || !waiting() {
		t.Fatalf("after the second fetch: handoff_to %q, waiting %v; want 12, true", got, waiting())
	}
	if !push() || !waiting() {
		t.Fatalf("a hand-off below handoff_to: waiting %v, want true", waiting())
	}

	// A write of outcomes alone that finds the pool registered leaves the count as it is.
	exchange(0, 4, 0, "j1")
	if got := handoffTo(); got != "12" || !waiting() {
		t.Fatalf("after an ack of a registered pool: handoff_to %q, waiting %v; want 12, true", got, waiting())
	}
	// One that registers it writes its room: none here.
	rdo(t, pool, "SREM", idle, "pool1")
	exchange(0, 4, 0, "j2")
	if got := handoffTo(); got != "4" || !waiting() {
		t.Fatalf("after an ack with no room: handoff_to %q, waiting %v; want 4, true", got, waiting())
	}
	if !push() || waiting() {
		t.Fatalf("one hand-off when the pool declared no room: waiting %v, want false", waiting())
	}

	// A heartbeat without handoff_to (a pool that does not write it): one hand-off a registration.
	rdo(t, pool, "HDEL", s.Ks.Heartbeat("pool1"), "handoff_to")
	rdo(t, pool, "SADD", idle, "pool1")
	if !push() || waiting() {
		t.Fatalf("one hand-off to a pool without handoff_to: waiting %v, want false", waiting())
	}

	// A pool that does not receive the message leaves the set, and the job goes to the queue.
	exchange(0, 6, 50, "j3")
	sub.Unsubscribe()
	for {
		if _, ok := sub.Receive().(redis.Subscription); ok {
			break
		}
	}
	if !waiting() {
		t.Fatal("the ack did not register the pool")
	}
	before, _ := redis.Int(rdo(t, pool, "LLEN", queue), nil)
	if push() || waiting() {
		t.Fatalf("a hand-off to a pool not listening: waiting %v, want false", waiting())
	}
	if after, _ := redis.Int(rdo(t, pool, "LLEN", queue), nil); after != before+1 {
		t.Fatalf("queue length %d after a push no pool took, want %d", after, before+1)
	}

	// A fetch that leaves jobs in the queue adds the pool to no idle set and leaves the count as it
	// is; one that empties the queue and finds the pool in the set already (the job was pushed by
	// another program) writes it.
	rdo(t, pool, "HSET", s.Ks.Heartbeat("pool1"), "handoff_to", "7")
	rdo(t, pool, "DEL", queue)
	rdo(t, pool, "LPUSH", queue, "k1", "k2")
	if x := exchange(1, 6, 50); len(x.Jobs) != 1 {
		t.Fatalf("the fetch took %d jobs, want 1", len(x.Jobs))
	}
	if got := handoffTo(); got != "7" || waiting() {
		t.Fatalf("after a fetch that left a job: handoff_to %q, waiting %v; want 7, false", got, waiting())
	}
	rdo(t, pool, "SADD", idle, "pool1")
	if x := exchange(5, 6, 50); len(x.Jobs) != 1 {
		t.Fatalf("the fetch took %d jobs, want 1", len(x.Jobs))
	}
	if got := handoffTo(); got != "55" || !waiting() {
		t.Fatalf("after a fetch that emptied the queue of a registered pool: handoff_to %q, waiting %v; want 55, true", got, waiting())
	}
}
