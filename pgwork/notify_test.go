package pgwork

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/workqueue/work"
)

// An enqueue within NotifyEvery of a notifying one sends no NOTIFY, and is still moved at once: the
// relay looks again shortly after each notification. With an hour's poll, only that look can move
// the second job, whose transaction commits after the first one's notification was handled.
func TestThrottledEnqueueIsRelayedByTheFollowUpLook(t *testing.T) {
	e := newEnv(t)
	o := MustNew(Config{NotifyEvery: 300 * time.Millisecond})
	r, _ := e.startPool(t, "first", "second")
	relay := o.NewRelay(e.db, e.enq, RelayOptions{PollInterval: time.Hour})
	relay.Start()
	defer relay.Stop()
	waitListening(t, e)
	time.Sleep(50 * time.Millisecond) // the pass that follows LISTEN is over
	ctx := context.Background()
	tx, err := e.db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(ctx)
	if _, err := o.Enqueue(ctx, e.db, "first", nil, work.EnqueueOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := o.Enqueue(ctx, tx, "second", nil, work.EnqueueOptions{}); err != nil { // no NOTIFY
		t.Fatal(err)
	}
	r.waitRuns(t, 1, 5*time.Second)
	time.Sleep(100 * time.Millisecond)
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	r.waitRuns(t, 2, 5*time.Second)
}

// Enqueues in quick succession send one NOTIFY per NotifyEvery, not one each.
func TestNotifyEveryBoundsTheNotifications(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, e.dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	o := MustNew(Config{Outbox: "quiet_outbox", NotifyEvery: time.Hour})
	if err := o.Migrate(ctx, e.db); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Exec(ctx, "LISTEN quiet_outbox"); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 50; i++ {
		if _, err := o.Enqueue(ctx, e.db, "j", work.Q{"i": i}, work.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := drainNotifications(ctx, conn); got != 1 {
		t.Errorf("%d notifications for 50 enqueues within NotifyEvery, want 1", got)
	}
	every := MustNew(Config{Outbox: "quiet_outbox", NotifyEvery: -1})
	for i := 0; i < 3; i++ {
		if _, err := every.Enqueue(ctx, e.db, "j", nil, work.EnqueueOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// PostgreSQL folds identical notifications of one transaction, not of three.
	if got := drainNotifications(ctx, conn); got != 3 {
		t.Errorf("%d notifications for 3 enqueues with NotifyEvery < 0, want 3", got)
	}
}

// drainNotifications counts the notifications conn receives until none comes for 300 ms.
func drainNotifications(ctx context.Context, conn *pgx.Conn) int {
	got := 0
	for {
		wctx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
		_, err := conn.WaitForNotification(wctx)
		cancel()
		if err != nil {
			return got
		}
		got++
	}
}
