package pgwork

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	"github.com/workqueue/work"
)

// A job written in a transaction that commits reaches Redis with its ID and exact args, and a pool
// runs it once.
func TestCommitRunsJob(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(ctx, "CREATE TABLE orders (id bigint PRIMARY KEY)"); err != nil {
		t.Fatal(err)
	}
	const big = int64(1<<62 + 1) // past float64's precision
	id, err := Enqueue(ctx, tx, "receipt", work.Q{"order": big, "to": "a@example.com"}, work.EnqueueOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r, _ := e.startPool(t, "receipt")
	relay := NewRelay(e.db, e.enq, RelayOptions{})
	relay.Start()
	defer relay.Stop()
	r.waitRuns(t, 1, 10*time.Second)
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.byID[id] != 1 {
		t.Fatalf("runs by ID: %v, want job %s once", r.byID, id)
	}
	if got := fmt.Sprint(r.args[id]["order"]); got != fmt.Sprint(big) {
		t.Errorf("order arg %s, want %d", got, big)
	}
}

// A job written in a transaction that rolls back never reaches Redis.
func TestRollbackEnqueuesNothing(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(ctx, tx, "receipt", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(ctx); err != nil {
		t.Fatal(err)
	}
	relay := NewRelay(e.db, e.enq, RelayOptions{})
	if n, err := relay.Pass(ctx); err != nil || n != 0 {
		t.Fatalf("Pass = %d, %v; want 0 rows", n, err)
	}
	if n := e.queued(t, "receipt"); n != 0 {
		t.Fatalf("%d jobs in Redis, want none", n)
	}
}

// EnqueueMany writes all jobs in one statement, or none when one is bad; the relay moves them all.
func TestEnqueueMany(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	jobs := make([]Job, 500)
	for i := range jobs {
		jobs[i] = Job{Name: "bulk", Args: work.Q{"i": i}}
	}
	bad := append(append([]Job{}, jobs...), Job{Name: "", Args: nil})
	if _, err := EnqueueMany(ctx, e.db, bad); err == nil {
		t.Fatal("EnqueueMany accepted a job without a name")
	}
	if n := e.waiting(t); n != 0 {
		t.Fatalf("a refused EnqueueMany wrote %d rows", n)
	}
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := EnqueueMany(ctx, tx, jobs)
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if len(ids) != len(jobs) || ids[0] == ids[1] {
		t.Fatalf("ids: %d, want %d distinct", len(ids), len(jobs))
	}
	if _, err := Enqueue(ctx, e.db, "bulk", nil, work.EnqueueOptions{ID: ids[3]}); !errors.Is(err, work.ErrDuplicateJobID) {
		t.Fatalf("an ID already in the outbox: %v, want ErrDuplicateJobID", err)
	}
	drain(t, NewRelay(e.db, e.enq, RelayOptions{BatchSize: 64}))
	if n := e.queued(t, "bulk"); n != int64(len(jobs)) {
		t.Fatalf("%d jobs in Redis, want %d", n, len(jobs))
	}
}

// A relay that enqueued a batch in Redis and died before its delete committed leaves the rows; the
// next pass relays them again and Redis holds each job once.
func TestRelayAgainAfterLostCommit(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	jobs := make([]Job, 20)
	for i := range jobs {
		jobs[i] = Job{Name: "again", Args: work.Q{"i": i}}
	}
	if _, err := EnqueueMany(ctx, e.db, jobs); err != nil {
		t.Fatal(err)
	}
	dying := NewRelay(e.db, e.enq, RelayOptions{})
	dying.beforeCommit = func() error { return errors.New("the relay died") }
	if _, err := dying.Pass(ctx); err == nil {
		t.Fatal("the dying pass succeeded")
	}
	if n := e.queued(t, "again"); n != 20 {
		t.Fatalf("the dying pass left %d jobs in Redis, want 20", n)
	}
	if n := e.waiting(t); n != 20 {
		t.Fatalf("the dying pass left %d rows, want 20", n)
	}
	drain(t, NewRelay(e.db, e.enq, RelayOptions{}))
	if n := e.queued(t, "again"); n != 20 {
		t.Fatalf("after the second relay %d jobs in Redis, want 20", n)
	}
	if n := e.waiting(t); n != 0 {
		t.Fatalf("%d rows left", n)
	}
}

// Two relays running at once on many rows move each job once.
func TestTwoRelays(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	const n = 1000
	jobs := make([]Job, n)
	for i := range jobs {
		jobs[i] = Job{Name: "pair", Args: work.Q{"i": i}}
	}
	if _, err := EnqueueMany(ctx, e.db, jobs); err != nil {
		t.Fatal(err)
	}
	r, _ := e.startPool(t, "pair")
	for i := 0; i < 2; i++ {
		relay := NewRelay(e.db, e.enq, RelayOptions{BatchSize: 50})
		relay.Start()
		defer relay.Stop()
	}
	r.waitRuns(t, n, 60*time.Second)
	time.Sleep(200 * time.Millisecond) // room for a second run of any job to show
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.byID) != n {
		t.Fatalf("%d jobs ran, want %d", len(r.byID), n)
	}
	for id, c := range r.byID {
		if c != 1 {
			t.Errorf("job %s ran %d times", id, c)
		}
	}
}

// Rows that cannot become jobs go to the dead set with their reason, and the rows behind them are
// relayed.
func TestMalformedRowsGoDead(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	for _, q := range []string{
		`INSERT INTO work_outbox (id, name, args, created_at) VALUES ('bad-args', 'x', '[1, 2]', now() - interval '3 s')`,
		`INSERT INTO work_outbox (id, name, created_at) VALUES ('bad-name', '', now() - interval '2 s')`,
		`INSERT INTO work_outbox (id, name, options, created_at) VALUES ('bad-option', 'x', '{"bogus": 1}', now() - interval '1 s')`,
		`INSERT INTO work_outbox (id, name, created_at) VALUES ('bad id!', 'x', now() - interval '1 s')`,
	} {
		if _, err := e.db.Exec(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Enqueue(ctx, e.db, "good", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	drain(t, NewRelay(e.db, e.enq, RelayOptions{BatchSize: 2}))
	if n := e.queued(t, "good"); n != 1 {
		t.Fatalf("%d good jobs in Redis, want 1", n)
	}
	dead, count, err := e.cl.DeadJobs(1)
	if err != nil {
		t.Fatal(err)
	}
	if count != 4 {
		t.Fatalf("%d dead jobs, want 4", count)
	}
	for _, d := range dead {
		if !strings.HasPrefix(d.LastErr, "pgwork: ") || len(d.Raw) == 0 {
			t.Errorf("dead job %s %q: err %q, raw %q: want the reason and the row", d.ID, d.Name, d.LastErr, d.Raw)
		}
	}
	if n := e.waiting(t); n != 0 {
		t.Fatalf("%d rows left", n)
	}
}

// waitListening waits until a session of the test's database LISTENs.
func waitListening(t *testing.T, e *env) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var n int
		err := e.db.QueryRow(context.Background(), `SELECT count(*) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&n)
		if err != nil {
			t.Fatal(err)
		}
		if n > 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("the relay does not LISTEN")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// A commit's notification wakes the relay at once, long before its next poll.
func TestNotifyWakesRelay(t *testing.T) {
	e := newEnv(t)
	r, _ := e.startPool(t, "woken")
	relay := NewRelay(e.db, e.enq, RelayOptions{PollInterval: time.Hour})
	relay.Start()
	defer relay.Stop()
	waitListening(t, e)
	time.Sleep(50 * time.Millisecond) // the pass that follows LISTEN is over
	if _, err := Enqueue(context.Background(), e.db, "woken", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitRuns(t, 1, 5*time.Second)
}

// Without LISTEN, the poll finds the rows.
func TestPollWithoutListen(t *testing.T) {
	e := newEnv(t)
	r, _ := e.startPool(t, "polled")
	relay := NewRelay(e.db, e.enq, RelayOptions{NoListen: true, PollInterval: 100 * time.Millisecond})
	relay.Start()
	defer relay.Stop()
	time.Sleep(50 * time.Millisecond)
	if _, err := Enqueue(context.Background(), e.db, "polled", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitRuns(t, 1, 5*time.Second)
}

// The relay reports the outbox's backlog to Redis at each pass.
func TestRelayReportsBacklog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := EnqueueMany(ctx, e.db, []Job{{Name: "b"}, {Name: "b"}, {Name: "b"}}); err != nil {
		t.Fatal(err)
	}
	relay := NewRelay(e.db, e.enq, RelayOptions{BatchSize: 1})
	if _, err := relay.Pass(ctx); err != nil {
		t.Fatal(err)
	}
	bs, err := e.cl.Backlogs()
	if err != nil {
		t.Fatal(err)
	}
	if len(bs) != 1 || bs[0].Source != "pgwork:work_outbox" || bs[0].Waiting != 2 || bs[0].Oldest.IsZero() {
		t.Fatalf("backlogs %+v, want pgwork:work_outbox with 2 waiting", bs)
	}
}

// RunOnce runs fn once for a job delivered twice at the same time, and not at all afterwards; a
// failed fn leaves no mark.
func TestRunOnceDuplicateDelivery(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.db.Exec(ctx, "CREATE TABLE effects (job text)"); err != nil {
		t.Fatal(err)
	}
	id := work.NewJobID()
	if ran, err := RunOnce(ctx, e.db, id, func(pgx.Tx) error { return errors.New("boom") }); ran || err == nil {
		t.Fatalf("failing fn: ran %v, err %v", ran, err)
	}
	var wg sync.WaitGroup
	rans := make([]bool, 4)
	for i := range rans {
		wg.Add(1)
		go func(i int) {
			defer wg.Done()
			ran, err := RunOnce(ctx, e.db, id, func(tx pgx.Tx) error {
				_, err := tx.Exec(ctx, "INSERT INTO effects VALUES ($1)", id)
				time.Sleep(100 * time.Millisecond) // the duplicates arrive while this one is open
				return err
			})
			if err != nil {
				t.Error(err)
			}
			rans[i] = ran
		}(i)
	}
	wg.Wait()
	ranCount := 0
	for _, r := range rans {
		if r {
			ranCount++
		}
	}
	var effects int
	if err := e.db.QueryRow(ctx, "SELECT count(*) FROM effects").Scan(&effects); err != nil {
		t.Fatal(err)
	}
	if ranCount != 1 || effects != 1 {
		t.Fatalf("fn ran %d times, %d effects; want 1", ranCount, effects)
	}
	if ran, err := RunOnce(ctx, e.db, id, func(pgx.Tx) error { t.Error("ran again"); return nil }); ran || err != nil {
		t.Fatalf("later delivery: ran %v, err %v", ran, err)
	}
}

// The relay deletes RunOnce's marks past the retention.
func TestRelayPurgesDone(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	if _, err := e.db.Exec(ctx, `INSERT INTO work_done (id, done_at) VALUES ('old', now() - interval '2 hours'), ('new', now())`); err != nil {
		t.Fatal(err)
	}
	if _, err := NewRelay(e.db, e.enq, RelayOptions{DoneRetention: time.Hour}).Pass(ctx); err != nil {
		t.Fatal(err)
	}
	var ids []string
	rows, _ := e.db.Query(ctx, "SELECT id FROM work_done")
	ids, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(ids, []string{"new"}) {
		t.Fatalf("done rows %v, want [new]", ids)
	}
}

// Enqueue works within a database/sql transaction, through FromSQL.
func TestFromSQL(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	sdb, err := sql.Open("pgx", e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer sdb.Close()
	tx, err := sdb.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Enqueue(ctx, FromSQL(tx), "sqljob", work.Q{"n": 1}, work.EnqueueOptions{Key: "k1"}); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	drain(t, NewRelay(e.db, e.enq, RelayOptions{}))
	if e.waiting(t) != 0 {
		t.Fatal("the relay left the row")
	}
}

// Custom table names reach every statement; Migrate may run again.
func TestCustomTables(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	o, err := New(Config{Outbox: "jobs_out", Done: "jobs_done", Channel: "jobs_ready"})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := o.Migrate(ctx, e.db); err != nil {
			t.Fatal(err)
		}
	}
	sqlText := o.MigrationSQL()
	if strings.Contains(sqlText, "work_") {
		t.Fatalf("MigrationSQL keeps a default name:\n%s", sqlText)
	}
	// The enqueue notifies on the configured channel.
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "LISTEN jobs_ready"); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Enqueue(ctx, e.db, "custom", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if n, err := conn.WaitForNotification(wctx); err != nil || n.Channel != "jobs_ready" {
		t.Fatalf("notification %+v, %v; want one on jobs_ready", n, err)
	}
	if _, err := o.NewRelay(e.db, e.enq, RelayOptions{}).Pass(ctx); err != nil {
		t.Fatal(err)
	}
	if n := e.queued(t, "custom"); n != 1 {
		t.Fatalf("%d jobs in Redis, want 1", n)
	}
	if _, err := o.RunOnce(ctx, e.db, "j1", func(pgx.Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []Config{{Outbox: "Bad"}, {Done: "a;b"}, {Outbox: "x", Done: "x"}, {Channel: strings.Repeat("c", 41)}} {
		if _, err := New(bad); err == nil {
			t.Errorf("New(%+v) accepted", bad)
		}
	}
}

// Every enqueue option survives the options column; a field added to work.EnqueueOptions fails
// this test until the column stores it.
func TestOptionsRoundTrip(t *testing.T) {
	at := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	in := work.EnqueueOptions{
		Key: "k", At: at, Unique: true, UniqueBy: map[string]interface{}{"a": json.Number("1")},
		After: []string{"x"}, AfterBatches: []string{"b"}, RunIfDependencyFails: true, Track: true,
		Keep: 90 * time.Second, ID: "id1", IDKeep: time.Minute,
		Debounce: &work.Debounce{ID: "d", Window: 2 * time.Second, MaxWait: time.Minute, KeepFirst: true},
		Group:    "g",
	}
	// Every field must be set above: a zero one would pass unseen.
	v := reflect.ValueOf(in)
	for i := 0; i < v.NumField(); i++ {
		if v.Field(i).IsZero() {
			t.Fatalf("EnqueueOptions.%s is not set in this test: store it in storedOptions and set it here", v.Type().Field(i).Name)
		}
	}
	raw, err := json.Marshal(storeOptions(in))
	if err != nil {
		t.Fatal(err)
	}
	var so storedOptions
	d := json.NewDecoder(strings.NewReader(string(raw)))
	d.UseNumber()
	if err := d.Decode(&so); err != nil {
		t.Fatal(err)
	}
	out := so.options("id1", time.Minute)
	if !out.At.Equal(in.At) {
		t.Errorf("At %v, want %v", out.At, in.At)
	}
	out.At = in.At
	if !reflect.DeepEqual(out, in) {
		t.Errorf("options after the column:\n%+v\nwant\n%+v", out, in)
	}
}

// A relay whose listening connection is cut listens again, and hears the next commit.
func TestListenerReconnects(t *testing.T) {
	e := newEnv(t)
	r, _ := e.startPool(t, "relistened")
	relay := NewRelay(e.db, e.enq, RelayOptions{PollInterval: time.Hour})
	relay.Start()
	defer relay.Stop()
	waitListening(t, e)
	var killed int
	err := e.db.QueryRow(context.Background(), `SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity
WHERE datname = current_database() AND query LIKE 'LISTEN%'`).Scan(&killed)
	if err != nil || killed != 1 {
		t.Fatalf("terminated %d listeners (%v), want 1", killed, err)
	}
	time.Sleep(100 * time.Millisecond) // the terminated session leaves pg_stat_activity
	waitListening(t, e)
	time.Sleep(50 * time.Millisecond)
	if _, err := Enqueue(context.Background(), e.db, "relistened", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitRuns(t, 1, 5*time.Second)
}
