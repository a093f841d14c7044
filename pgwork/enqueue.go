package pgwork

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/workqueue/work"
)

// Execer runs a statement in the caller's transaction: a pgx.Tx (also a *pgx.Conn or a
// *pgxpool.Pool, though then the job is committed at once, with no transaction of the caller's to
// tie it to), or a database/sql transaction through FromSQL.
type Execer interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
}

// SQLExecer is what FromSQL adapts: a *sql.Tx, or anything with database/sql's ExecContext (an
// sqlx transaction, or the *sql.Tx under a GORM transaction: tx.Statement.ConnPool).
type SQLExecer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// FromSQL adapts a database/sql transaction (any driver for PostgreSQL: pgx's stdlib, lib/pq) to
// an Execer, so that Enqueue and EnqueueMany write within it. The statements take one text
// parameter, which every driver passes as it is.
func FromSQL(tx SQLExecer) Execer { return sqlExecer{tx} }

type sqlExecer struct{ tx SQLExecer }

func (s sqlExecer) Exec(ctx context.Context, query string, args ...any) (pgconn.CommandTag, error) {
	res, err := s.tx.ExecContext(ctx, query, args...)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return pgconn.NewCommandTag(fmt.Sprintf("INSERT 0 %d", n)), nil
}

// Job is one job for EnqueueMany: what Enqueuer.EnqueueWith takes.
type Job struct {
	Name    string
	Args    map[string]interface{}
	Options work.EnqueueOptions
}

// Enqueue writes a job with the default tables (Default.Enqueue).
func Enqueue(ctx context.Context, tx Execer, name string, args map[string]interface{}, opts work.EnqueueOptions) (string, error) {
	return Default.Enqueue(ctx, tx, name, args, opts)
}

// EnqueueMany writes jobs with the default tables (Default.EnqueueMany).
func EnqueueMany(ctx context.Context, tx Execer, jobs []Job) ([]string, error) {
	return Default.EnqueueMany(ctx, tx, jobs)
}

// Enqueue writes a job into the outbox within the caller's transaction tx and returns its ID: the
// job exists if and only if tx commits, and a relay then enqueues it in Redis with that ID and
// options, as Enqueuer.EnqueueWith would. The job is checked first with the library's rules
// (work.CheckEnqueue), so that a job Redis would refuse fails here, before anything is written.
// Its ID is opts.ID, else a new one. An ID still waiting in the outbox fails the insert with
// work.ErrDuplicateJobID (and, as any failed statement, aborts tx); one a relay has moved already
// makes no second job while Redis remembers it. opts.IDKeep is the relay's (RelayOptions.IDKeep).
func (o *Outbox) Enqueue(ctx context.Context, tx Execer, name string, args map[string]interface{}, opts work.EnqueueOptions) (string, error) {
	ids, err := o.EnqueueMany(ctx, tx, []Job{{Name: name, Args: args, Options: opts}})
	if err != nil {
		return "", err
	}
	return ids[0], nil
}

// EnqueueMany writes jobs into the outbox within tx, in one statement, and returns their IDs in
// order. Every job is checked before any is written; one bad job fails the call and writes none.
func (o *Outbox) EnqueueMany(ctx context.Context, tx Execer, jobs []Job) ([]string, error) {
	if len(jobs) == 0 {
		return nil, nil
	}
	rows := make([]outboxRow, len(jobs))
	ids := make([]string, len(jobs))
	for i, j := range jobs {
		if err := work.CheckEnqueue(j.Name, j.Args, j.Options); err != nil {
			return nil, fmt.Errorf("pgwork: job %d (%s): %w", i, j.Name, err)
		}
		id := j.Options.ID
		if id == "" {
			id = work.NewJobID()
		}
		args := j.Args
		if args == nil {
			args = map[string]interface{}{}
		}
		rawArgs, err := json.Marshal(args)
		if err != nil {
			return nil, fmt.Errorf("pgwork: job %d (%s): args: %w", i, j.Name, err)
		}
		rawOpts, err := json.Marshal(storeOptions(j.Options))
		if err != nil {
			return nil, fmt.Errorf("pgwork: job %d (%s): options: %w", i, j.Name, err)
		}
		ids[i] = id
		rows[i] = outboxRow{ID: id, Name: j.Name, Args: rawArgs, Options: rawOpts}
	}
	payload, err := json.Marshal(rows)
	if err != nil {
		return nil, fmt.Errorf("pgwork: %w", err)
	}
	// One JSON parameter for all rows: one statement whatever the count, and a plain text
	// parameter any driver passes (arrays would need driver-specific types).
	q := `INSERT INTO ` + o.outbox + ` (id, name, args, options)
SELECT r.id, r.name, r.args, r.options FROM jsonb_to_recordset($1::text::jsonb) AS r(id text, name text, args jsonb, options jsonb)`
	args := []any{string(payload)}
	if o.notifyDue() {
		// The NOTIFY rides in the same statement: no round trip more.
		q = `WITH ins AS (` + q + `) SELECT pg_notify($2, '')`
		args = append(args, o.channel)
	}
	if _, err := tx.Exec(ctx, q, args...); err != nil {
		var pgErr *pgconn.PgError
		if errors.As(err, &pgErr) && pgErr.Code == "23505" && pgErr.TableName == o.outbox {
			return nil, fmt.Errorf("pgwork: enqueue: %w: %s", work.ErrDuplicateJobID, pgErr.Detail)
		}
		return nil, fmt.Errorf("pgwork: enqueue: %w", err)
	}
	return ids, nil
}

// outboxRow is a row as EnqueueMany sends it to jsonb_to_recordset.
type outboxRow struct {
	ID      string          `json:"id"`
	Name    string          `json:"name"`
	Args    json.RawMessage `json:"args"`
	Options json.RawMessage `json:"options"`
}

// storedOptions is the options column: the fields of work.EnqueueOptions but the ID (the row's) and
// IDKeep (the relay's), under names other producers can write too.
type storedOptions struct {
	Key                  string                 `json:"key,omitempty"`
	At                   *time.Time             `json:"at,omitempty"`
	Unique               bool                   `json:"unique,omitempty"`
	UniqueBy             map[string]interface{} `json:"unique_by,omitempty"`
	After                []string               `json:"after,omitempty"`
	AfterBatches         []string               `json:"after_batches,omitempty"`
	RunIfDependencyFails bool                   `json:"run_if_dependency_fails,omitempty"`
	Track                bool                   `json:"track,omitempty"`
	KeepSeconds          float64                `json:"keep_seconds,omitempty"`
	Debounce             *storedDebounce        `json:"debounce,omitempty"`
	Group                string                 `json:"group,omitempty"`
}

type storedDebounce struct {
	ID             string  `json:"id,omitempty"`
	WindowSeconds  float64 `json:"window_seconds"`
	MaxWaitSeconds float64 `json:"max_wait_seconds,omitempty"`
	KeepFirst      bool    `json:"keep_first,omitempty"`
}

func storeOptions(o work.EnqueueOptions) storedOptions {
	s := storedOptions{
		Key: o.Key, Unique: o.Unique, UniqueBy: o.UniqueBy, After: o.After, AfterBatches: o.AfterBatches,
		RunIfDependencyFails: o.RunIfDependencyFails, Track: o.Track, KeepSeconds: o.Keep.Seconds(),
		Group: o.Group,
	}
	if !o.At.IsZero() {
		at := o.At
		s.At = &at
	}
	if d := o.Debounce; d != nil {
		s.Debounce = &storedDebounce{ID: d.ID, WindowSeconds: d.Window.Seconds(), MaxWaitSeconds: d.MaxWait.Seconds(), KeepFirst: d.KeepFirst}
	}
	return s
}

func (s storedOptions) options(id string, idKeep time.Duration) work.EnqueueOptions {
	o := work.EnqueueOptions{
		Key: s.Key, Unique: s.Unique, UniqueBy: s.UniqueBy, After: s.After, AfterBatches: s.AfterBatches,
		RunIfDependencyFails: s.RunIfDependencyFails, Track: s.Track,
		Keep: seconds(s.KeepSeconds),
		ID:   id, IDKeep: idKeep, Group: s.Group,
	}
	if s.At != nil {
		o.At = *s.At
	}
	if d := s.Debounce; d != nil {
		o.Debounce = &work.Debounce{ID: d.ID, Window: seconds(d.WindowSeconds), MaxWait: seconds(d.MaxWaitSeconds), KeepFirst: d.KeepFirst}
	}
	return o
}

func seconds(s float64) time.Duration { return time.Duration(s * float64(time.Second)) }

// errMalformed marks a row that can never become a job.
var errMalformed = errors.New("pgwork: malformed outbox row")
