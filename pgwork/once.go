package pgwork

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// RunOnce runs fn with the default tables (Default.RunOnce).
func RunOnce(ctx context.Context, db Beginner, jobID string, fn func(tx pgx.Tx) error) (ran bool, err error) {
	return Default.RunOnce(ctx, db, jobID, fn)
}

// RunOnce makes a job's effects on the database happen once, however many times the job is
// delivered (a job runs at least once: a pool that dies mid-job has it run again). In one
// transaction it records jobID in the done table and runs fn; when the ID is there already, it
// runs nothing and returns ran == false with a nil error: the job's work committed before. fn's
// writes commit with the record, or neither does (fn's error, or a failed commit, rolls both
// back and is returned, and a later delivery runs fn again). A duplicate running concurrently waits
// on the first one's uncommitted record, then sees it committed (ran == false) or rolled back (it
// runs fn itself).
//
// Only what fn does through tx is covered: an email sent or an HTTP call made from fn may still
// happen twice. Call it from the job's handler with job.ID. Marks are kept for
// RelayOptions.DoneRetention (a relay deletes older ones).
func (o *Outbox) RunOnce(ctx context.Context, db Beginner, jobID string, fn func(tx pgx.Tx) error) (ran bool, err error) {
	if jobID == "" {
		return false, fmt.Errorf("pgwork: RunOnce: empty job ID")
	}
	tx, err := db.Begin(ctx)
	if err != nil {
		return false, fmt.Errorf("pgwork: RunOnce: %w", err)
	}
	defer tx.Rollback(context.Background())
	tag, err := tx.Exec(ctx, `INSERT INTO `+o.done+` (id) VALUES ($1) ON CONFLICT (id) DO NOTHING`, jobID)
	if err != nil {
		return false, fmt.Errorf("pgwork: RunOnce: %w", err)
	}
	if tag.RowsAffected() == 0 {
		return false, nil
	}
	if err := fn(tx); err != nil {
		return false, err
	}
	if err := tx.Commit(ctx); err != nil {
		return false, fmt.Errorf("pgwork: RunOnce: commit: %w", err)
	}
	return true, nil
}
