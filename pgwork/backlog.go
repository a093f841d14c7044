package pgwork

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Querier reads: a *pgxpool.Pool, a *pgx.Conn or a pgx.Tx.
type Querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// Backlog is the state of an outbox.
type Backlog struct {
	Waiting int64     // committed rows no relay has moved yet
	Oldest  time.Time // when the oldest of them was written; zero when none waits
}

// Backlog counts the rows waiting for a relay.
func (o *Outbox) Backlog(ctx context.Context, db Querier) (Backlog, error) {
	var b Backlog
	var oldest *time.Time
	err := db.QueryRow(ctx, `SELECT count(*), min(created_at) FROM `+o.outbox).Scan(&b.Waiting, &oldest)
	if err != nil {
		return Backlog{}, fmt.Errorf("pgwork: backlog: %w", err)
	}
	if oldest != nil {
		b.Oldest = *oldest
	}
	return b, nil
}
