package pgwork

import (
	"context"
	_ "embed"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5"
)

// initSQL creates the tables with their default names; Config renders it with its own.
//
//go:embed sql/001_init.sql
var initSQL string

// Default names of the tables and of the notification channel.
const (
	DefaultOutboxTable = "work_outbox"
	DefaultDoneTable   = "work_done"
)

// Config names pgwork's tables. The zero Config is the default one. Names are plain lowercase SQL
// identifiers (letters, digits, underscores), so that they need no quoting; a table in another
// schema is reached through the connection's search_path.
type Config struct {
	// Outbox is the table of jobs waiting to be moved to Redis. "": work_outbox.
	Outbox string
	// Done is the table of jobs RunOnce saw commit. "": work_done.
	Done string
	// Channel is the channel of the NOTIFY sent when jobs are inserted. "": the Outbox table's name.
	Channel string
	// NotifyEvery is the least time between two NOTIFYs this Outbox sends with its enqueues; the
	// enqueues in between send none. A NOTIFY makes PostgreSQL commit the transactions that send
	// one one at a time, so sending it with every small transaction halves their rate; relays keep
	// passing while they find rows, and look again 2×NotifyEvery after a notification, so the
	// enqueues that sent none are still moved within milliseconds of their commit (a transaction
	// that commits long after its enqueue may wait for the next notification or poll). 0: 10 ms;
	// negative: every enqueue notifies.
	NotifyEvery time.Duration
}

// defaultNotifyEvery is Config.NotifyEvery's default.
const defaultNotifyEvery = 10 * time.Millisecond

// Outbox is pgwork on a set of tables: it enqueues jobs in transactions, reads and repairs the
// outbox, runs RunOnce, and makes relays. It holds no connection and may be shared.
type Outbox struct {
	outbox, done, channel string
	notifyEvery           time.Duration
	lastNotify            atomic.Int64 // Unix ns of the last NOTIFY an enqueue sent
}

// Default is the Outbox of the default tables, which the package-level functions use.
var Default = MustNew(Config{})

var identRE = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,39}$`)

// New returns the Outbox of cfg's tables, after checking their names.
func New(cfg Config) (*Outbox, error) {
	o := &Outbox{outbox: cfg.Outbox, done: cfg.Done, channel: cfg.Channel, notifyEvery: cfg.NotifyEvery}
	if o.notifyEvery == 0 {
		o.notifyEvery = defaultNotifyEvery
	}
	if o.outbox == "" {
		o.outbox = DefaultOutboxTable
	}
	if o.done == "" {
		o.done = DefaultDoneTable
	}
	if o.channel == "" {
		o.channel = o.outbox
	}
	// 40 characters leave room for the suffixes of the derived names within PostgreSQL's 63.
	for _, n := range []string{o.outbox, o.done, o.channel} {
		if !identRE.MatchString(n) {
			return nil, fmt.Errorf("pgwork: table or channel name %q: want 1 to 40 lowercase letters, digits or underscores, not starting with a digit", n)
		}
	}
	if o.outbox == o.done {
		return nil, fmt.Errorf("pgwork: the outbox and done tables are both %q", o.outbox)
	}
	return o, nil
}

// MustNew is New that panics on a bad name, for package-level variables.
func MustNew(cfg Config) *Outbox {
	o, err := New(cfg)
	if err != nil {
		panic(err)
	}
	return o
}

// Tables returns the names of the outbox and done tables and of the channel.
func (o *Outbox) Tables() Config {
	return Config{Outbox: o.outbox, Done: o.done, Channel: o.channel, NotifyEvery: o.notifyEvery}
}

var nameRE = regexp.MustCompile(`'work_outbox'|\bwork_outbox(\w*)|\bwork_done(\w*)`)

// MigrationSQL returns the SQL that creates the tables and their indexes under this Outbox's names.
// It can be run any number of times.
func (o *Outbox) MigrationSQL() string {
	return nameRE.ReplaceAllStringFunc(initSQL, func(m string) string {
		switch {
		case m == "'work_outbox'":
			return "'" + o.channel + "'"
		case strings.HasPrefix(m, DefaultOutboxTable):
			return o.outbox + strings.TrimPrefix(m, DefaultOutboxTable)
		default:
			return o.done + strings.TrimPrefix(m, DefaultDoneTable)
		}
	})
}

// Beginner starts transactions: a *pgxpool.Pool, a *pgx.Conn, or a pgx.Tx (a savepoint).
type Beginner interface {
	Begin(ctx context.Context) (pgx.Tx, error)
}

// Migrate creates the tables of the default Config when they are missing (Default.Migrate).
func Migrate(ctx context.Context, db Beginner) error { return Default.Migrate(ctx, db) }

// Migrate creates this Outbox's tables when they are missing, in one transaction. Processes
// migrating at once take turns on an advisory lock, since CREATE ... IF NOT EXISTS alone can still
// collide on the catalog.
func (o *Outbox) Migrate(ctx context.Context, db Beginner) error {
	tx, err := db.Begin(ctx)
	if err != nil {
		return fmt.Errorf("pgwork: migrate: %w", err)
	}
	defer tx.Rollback(ctx)
	if _, err := tx.Exec(ctx, "SELECT pg_advisory_xact_lock(hashtext($1))", "pgwork:"+o.outbox); err != nil {
		return fmt.Errorf("pgwork: migrate: %w", err)
	}
	// Without arguments, pgx sends the script as one simple query, several statements and all.
	if _, err := tx.Exec(ctx, o.MigrationSQL()); err != nil {
		return fmt.Errorf("pgwork: migrate: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("pgwork: migrate: %w", err)
	}
	return nil
}

// notifyDue reports whether an enqueue now should send the NOTIFY, and if so counts it as sent.
func (o *Outbox) notifyDue() bool {
	if o.notifyEvery < 0 {
		return true
	}
	now := time.Now().UnixNano()
	last := o.lastNotify.Load()
	return now-last >= int64(o.notifyEvery) && o.lastNotify.CompareAndSwap(last, now)
}
