package rdb

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/gomodule/redigo/redis"

	"github.com/workqueue/work/internal/redistest"
)

// TestEnqueueManySharesOneScriptCallPerKind: the debounced pushes of one EnqueueMany make one call
// of their script, as do its grouped ones, and each push still gets its own reply or error: a push
// whose key is of another type fails alone. The first round starts with no script loaded, so the
// calls are answered NOSCRIPT and sent again; the second finds them loaded.
func TestEnqueueManySharesOneScriptCallPerKind(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-each"), PoolBackend(pool))
	conn := pool.Get()
	defer conn.Close()
	if _, err := conn.Do("SET", s.Ks.Debounce("mail", "bad"), "x"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("SET", s.Ks.Group("digest", "bad"), "x"); err != nil {
		t.Fatal(err)
	}
	debounce := func(id, payload string) *Push {
		return &Push{Name: "mail", Payload: []byte(payload), Debounce: &DebounceSpec{ID: id, WindowMs: 60000}}
	}
	group := func(g, payload string) *Push {
		return &Push{Name: "digest", Payload: []byte(payload), Group: g, GroupDefaultDelay: 60}
	}
	for round, flush := range []bool{true, false} {
		if flush {
			if _, err := conn.Do("SCRIPT", "FLUSH"); err != nil {
				t.Fatal(err)
			}
		}
		a1, a2, b, bad := debounce("a", fmt.Sprintf(`{"a1":%d}`, round)), debounce("a", fmt.Sprintf(`{"a2":%d}`, round)),
			debounce("b", `{"b":1}`), debounce("bad", `{"bad":1}`)
		g1, g2, gBad := group("g", `{"g1":1}`), group("g", `{"g2":1}`), group("bad", `{"g3":1}`)
		plain := &Push{Name: "plain", Payload: []byte(`{"p":1}`)}
		s.EnqueueMany(context.Background(), ReplicaWait{}, []*Push{a1, g1, plain, a2, bad, g2, b, gBad})

		wantStates := map[*Push]string{a1: "new", a2: "replaced", b: "new"}
		if round == 1 {
			wantStates[a1], wantStates[b] = "replaced", "replaced"
		}
		for p, want := range wantStates {
			if p.Err != nil {
				t.Fatalf("round %d: debounced push %s: %v", round, p.Payload, p.Err)
			}
			r, err := DebounceReply(p.Reply)
			if err != nil || r.State != want {
				t.Errorf("round %d: debounced push %s: state %q (%v), want %q", round, p.Payload, r.State, err, want)
			}
		}
		for i, p := range []*Push{g1, g2} {
			v, err := redis.Int64s(p.Reply, p.Err)
			if want := int64(2*round + i + 1); err != nil || len(v) != 2 || v[1] != want {
				t.Errorf("round %d: grouped push %d: reply %v (%v), want %d jobs waiting", round, i, v, err, want)
			}
		}
		for _, p := range []*Push{bad, gBad} {
			if !errors.Is(p.Err, ErrWrongType) {
				t.Errorf("round %d: push %s onto a key of another type: err %v, want ErrWrongType", round, p.Payload, p.Err)
			}
		}
		if plain.Err != nil || plain.N != int64(round+1) {
			t.Errorf("round %d: plain push: n %d err %v", round, plain.N, plain.Err)
		}
	}
	// A push alone in its call fails alone too.
	for _, p := range []*Push{debounce("bad", `{"alone":1}`), group("bad", `{"alone":2}`)} {
		s.EnqueueMany(context.Background(), ReplicaWait{}, []*Push{p})
		if !errors.Is(p.Err, ErrWrongType) {
			t.Errorf("push %s alone onto a key of another type: err %v, want ErrWrongType", p.Payload, p.Err)
		}
	}
	// With a job ID, a refused push leaves no mark, so the ID may be tried again.
	for i, p := range []*Push{debounce("bad", `{"id":1}`), group("bad", `{"id":2}`)} {
		m := JobIDMark{ID: fmt.Sprintf("refused-%d", i), KeepSeconds: 60}
		s.PushWithID(context.Background(), ReplicaWait{}, p, m)
		if !errors.Is(p.Err, ErrWrongType) {
			t.Errorf("push %s with an ID onto a key of another type: err %v, want ErrWrongType", p.Payload, p.Err)
		}
		if n, err := redis.Int(conn.Do("EXISTS", s.Ks.JobIDMark(m.ID))); err != nil || n != 0 {
			t.Errorf("push %s with an ID was refused but left its mark (%d, %v)", p.Payload, n, err)
		}
	}
	// One pending job per burst, with the last payload, held in its burst; the groups hold their
	// four jobs.
	bursts, err := s.PendingBursts(context.Background(), 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(bursts) != 2 || string(bursts[0].Payload) != `{"a2":1}` && string(bursts[1].Payload) != `{"a2":1}` {
		t.Errorf("pending bursts %+v, want the burst a's last payload and b's", bursts)
	}
	if n, err := redis.Int(conn.Do("ZCARD", s.Ks.Scheduled())); err != nil || n != 0 {
		t.Errorf("the scheduled set holds %d (%v), want none: pending jobs wait in their bursts", n, err)
	}
	if n, err := redis.Int(conn.Do("LLEN", s.Ks.Group("digest", "g"))); err != nil || n != 4 {
		t.Errorf("group g holds %d jobs (%v), want 4", n, err)
	}
	if v, err := redis.String(conn.Do("GET", s.Ks.Debounce("mail", "bad"))); err != nil || v != "x" {
		t.Errorf("the key of another type was changed: %q %v", v, err)
	}
}

// TestDebouncedPushesOfOneCallKeepTheirOwnSettings: debounced pushes that share a call but not a job
// name, window, maximum wait or payload rule each get their own.
func TestDebouncedPushesOfOneCallKeepTheirOwnSettings(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-settings"), PoolBackend(pool))
	conn := pool.Get()
	defer conn.Close()
	type want struct {
		name, id          string
		window, maxWait   int64
		keep              bool
		first, last, kept string // payloads; kept: the one pending at the end
	}
	wants := []want{
		{"mail", "a", 60000, 0, false, `{"a":1}`, `{"a":2}`, `{"a":2}`},
		{"mail", "b", 120000, 0, true, `{"b":1}`, `{"b":2}`, `{"b":1}`},
		{"sms", "a", 60000, 0, false, `{"sa":1}`, `{"sa":2}`, `{"sa":2}`},
		{"mail", "c", 60000, 30000, false, `{"c":1}`, `{"c":2}`, `{"c":2}`},
		{"mail", "d", 60000, 0, false, `{"d":1}`, `{"d":2}`, `{"d":2}`},
	}
	push := func(w want, payload string) *Push {
		return &Push{Name: w.name, Payload: []byte(payload),
			Debounce: &DebounceSpec{ID: w.id, WindowMs: w.window, MaxWaitMs: w.maxWait, KeepFirst: w.keep}}
	}
	var first, second []*Push
	for _, w := range wants {
		first, second = append(first, push(w, w.first)), append(second, push(w, w.last))
	}
	// Both enqueues of every burst in one call, the settings interleaved.
	s.EnqueueMany(context.Background(), ReplicaWait{}, append(first, second...))
	for i, w := range wants {
		for j, p := range []*Push{first[i], second[i]} {
			r, err := DebounceReply(p.Reply)
			if err != nil || p.Err != nil {
				t.Fatalf("%s %s push %d: %v %v", w.name, w.id, j, err, p.Err)
			}
			state := []string{"new", "replaced"}[j]
			if w.keep && j == 1 {
				state = "kept"
			}
			if r.State != state || state == "kept" && string(r.Payload) != w.first {
				t.Errorf("%s %s push %d: state %q (kept %s), want %q", w.name, w.id, j, r.State, r.Payload, state)
			}
		}
		h, err := redis.StringMap(conn.Do("HGETALL", s.Ks.Debounce(w.name, w.id)))
		if err != nil {
			t.Fatal(err)
		}
		if h["pending"] != w.kept || h["count"] != "2" || h["window_ms"] != fmt.Sprint(w.window) || h["max_wait_ms"] != fmt.Sprint(w.maxWait) {
			t.Errorf("%s %s: burst hash %v, want pending %s window %d max wait %d", w.name, w.id, h, w.kept, w.window, w.maxWait)
		}
		if ttl, err := redis.Int(conn.Do("TTL", s.Ks.Debounce(w.name, w.id))); err != nil || ttl != -1 {
			t.Errorf("%s %s: the burst's hash has a lifetime (%d, %v) while its job waits in it", w.name, w.id, ttl, err)
		}
		if _, err := redis.Int64(conn.Do("ZSCORE", s.Ks.Debounces(), w.name+"\n"+w.id)); err != nil {
			t.Errorf("%s %s: not in the index of bursts: %v", w.name, w.id, err)
		}
	}
	if n, err := redis.Int(conn.Do("ZCARD", s.Ks.Debounces())); err != nil || n != len(wants) {
		t.Errorf("%d pending bursts (%v), want %d", n, err, len(wants))
	}
}

// TestPendingBurstsListsThoseWhoseJobWaits: PendingBursts lists the bursts whose job still waits in
// their hash, in run-time order, and drops from the index those that are over (the job left the
// hash, the hash is gone or of another type) and members of another form; an empty index lists
// none.
func TestPendingBurstsListsThoseWhoseJobWaits(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-bursts"), PoolBackend(pool))
	conn := pool.Get()
	defer conn.Close()
	ctx := context.Background()
	if bs, err := s.PendingBursts(ctx, 100); err != nil || len(bs) != 0 {
		t.Fatalf("empty index: %v, %v", bs, err)
	}
	var pushes []*Push
	for i := 0; i < 30; i++ {
		pushes = append(pushes, &Push{Name: "mail", Payload: []byte(fmt.Sprintf(`{"i":%d}`, i)),
			Debounce: &DebounceSpec{ID: fmt.Sprint(i), WindowMs: int64(60000 + 1000*i)}})
	}
	s.EnqueueMany(ctx, ReplicaWait{}, pushes)
	for _, p := range pushes {
		if p.Err != nil {
			t.Fatal(p.Err)
		}
	}
	// Burst 3's job left its hash, burst 4's hash expired; a member of another form.
	if _, err := conn.Do("HDEL", s.Ks.Debounce("mail", "3"), "pending"); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("DEL", s.Ks.Debounce("mail", "4")); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("ZADD", s.Ks.Debounces(), 1, "no newline"); err != nil {
		t.Fatal(err)
	}
	bs, err := s.PendingBursts(ctx, 100)
	if err != nil || len(bs) != 28 {
		t.Fatalf("%d bursts (%v), want 28", len(bs), err)
	}
	for i, b := range bs {
		want := i
		if i >= 3 {
			want = i + 2
		}
		if b.ID != fmt.Sprint(want) || string(b.Payload) != fmt.Sprintf(`{"i":%d}`, want) || b.Count != 1 ||
			b.WindowMs != int64(60000+1000*want) {
			t.Errorf("burst %d: %+v, want burst %d", i, b, want)
		}
	}
	if n, err := redis.Int(conn.Do("ZCARD", s.Ks.Debounces())); err != nil || n != 28 {
		t.Errorf("the index holds %d (%v), want the 28 pending", n, err)
	}
	// A hash of another type holds no job: passed over, as the requeuer passes it over.
	if _, err := conn.Do("SET", s.Ks.Debounce("mail", "0"), "x"); err != nil {
		t.Fatal(err)
	}
	if bs, err := s.PendingBursts(ctx, 100); err != nil || len(bs) != 27 || bs[0].ID != "1" {
		t.Errorf("with a hash of another type: %d bursts (%v), want the 27 others", len(bs), err)
	}
}

// TestEndBurstsMovesDueJobsIntoTheScheduledSet: the requeuer's step for due bursts moves each due
// burst's job into the scheduled set at its run time and ends the burst (its hash goes); a burst not
// yet due gets its index score back, one that is over leaves the index. At once, with the payload
// the caller saw, a burst ends whatever its time, unless it was replaced.
func TestEndBurstsMovesDueJobsIntoTheScheduledSet(t *testing.T) {
	pool := newTestPool(t)
	s := NewStore(redistest.Namespace(t, pool, "rdb-end"), PoolBackend(pool))
	conn := pool.Get()
	defer conn.Close()
	ctx := context.Background()
	var pushes []*Push
	for _, id := range []string{"due", "later", "over", "now"} {
		pushes = append(pushes, &Push{Name: "mail", Payload: []byte(`{"` + id + `":1}`),
			Debounce: &DebounceSpec{ID: id, WindowMs: 3600000}})
	}
	s.EnqueueMany(ctx, ReplicaWait{}, pushes)
	// "due" came due (its run time set back by hand), "later" is listed as due by a stale score,
	// "over" holds no job.
	if _, err := conn.Do("HSET", s.Ks.Debounce("mail", "due"), "run_at", 1000); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Do("HDEL", s.Ks.Debounce("mail", "over"), "pending"); err != nil {
		t.Fatal(err)
	}
	members := [][]byte{[]byte("mail\ndue"), []byte("mail\nlater"), []byte("mail\nover")}
	if n, _, err := s.EndBursts(ctx, members, false, nil); err != nil || n != 1 {
		t.Fatalf("EndBursts = %d, %v; want 1 moved", n, err)
	}
	if score, err := redis.Int64(conn.Do("ZSCORE", s.Ks.Scheduled(), `{"due":1}`)); err != nil || score != 1000 {
		t.Errorf("the due job's score %d (%v), want its run time 1000", score, err)
	}
	idx, err := redis.Strings(conn.Do("ZRANGE", s.Ks.Debounces(), 0, -1))
	if err != nil || len(idx) != 2 || idx[0] != "mail\nlater" && idx[1] != "mail\nlater" {
		t.Errorf("the index holds %q (%v), want later and now", idx, err)
	}
	if n, err := redis.Int(conn.Do("EXISTS", s.Ks.Debounce("mail", "due"))); err != nil || n != 0 {
		t.Errorf("the ended burst's hash is still there (%d, %v)", n, err)
	}
	// At once: not when the job was replaced since, and then yes.
	if ok, _, err := s.EndBurst(ctx, "mail", "now", []byte(`{"other":1}`)); err != nil || ok {
		t.Errorf("EndBurst of a replaced job = %v, %v; want false", ok, err)
	}
	ok, at, err := s.EndBurst(ctx, "mail", "now", []byte(`{"now":1}`))
	if err != nil || !ok {
		t.Errorf("EndBurst = %v, %v; want true", ok, err)
	}
	// The score it reports is the job's in the scheduled set, so that the caller can queue it.
	if score, err := redis.Int64(conn.Do("ZSCORE", s.Ks.Scheduled(), `{"now":1}`)); err != nil || score != at {
		t.Errorf("the job moved at once scores %d (%v), EndBurst said %d", score, err, at)
	}
	if n, err := redis.Int(conn.Do("ZCARD", s.Ks.Scheduled())); err != nil || n != 2 {
		t.Errorf("the scheduled set holds %d (%v), want the two ended bursts' jobs", n, err)
	}
}
