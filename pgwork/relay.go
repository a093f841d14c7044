package pgwork

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/workqueue/work"
)

// RelayOptions tune a Relay. The zero value is a good default.
type RelayOptions struct {
	// BatchSize is how many rows a pass claims at most. 0: 100.
	BatchSize int
	// PollInterval is how often the relay looks at the outbox without being notified, in case a
	// notification was lost (its listening connection was down). 0: 1 s.
	PollInterval time.Duration
	// NoListen turns LISTEN off: the relay only polls (for a connection pooler in transaction mode,
	// which cannot carry LISTEN).
	NoListen bool
	// IDKeep is how long Redis remembers a relayed job's ID (work.EnqueueOptions.IDKeep), which makes
	// a second relay of the same row a no-op. The relay asks Redis to forget the IDs once their rows'
	// delete has committed, so this only bounds what a relay that died in between leaves behind.
	// 0: the library's default (24 h).
	IDKeep time.Duration
	// DoneRetention is how long RunOnce's marks are kept. It must exceed the time a job can be
	// delivered again (its retries and their backoff). 0: 7 days.
	DoneRetention time.Duration
	// Parallel is how many jobs of a batch are enqueued in Redis at once. 0: 16.
	Parallel int
	// Logger receives the relay's errors. nil: slog.Default().
	Logger *slog.Logger
}

// Relay moves committed jobs from the outbox to Redis. Any number of relays, in any processes, may
// run on one outbox: each pass claims its rows with FOR UPDATE SKIP LOCKED.
type Relay struct {
	o    *Outbox
	db   *pgxpool.Pool
	enq  *work.Enqueuer
	opts RelayOptions
	log  *slog.Logger

	wake chan struct{} // a notification or a reconnect: look now

	mu     sync.Mutex
	cancel context.CancelFunc
	done   chan struct{}

	purgeMu   sync.Mutex
	lastPurge time.Time

	// beforeCommit, for tests, runs after the jobs reached Redis and before the delete commits.
	beforeCommit func() error
}

// NewRelay returns a relay of the default tables (Default.NewRelay).
func NewRelay(db *pgxpool.Pool, enq *work.Enqueuer, opts RelayOptions) *Relay {
	return Default.NewRelay(db, enq, opts)
}

// NewRelay returns a relay that moves this outbox's committed jobs to Redis with enq. It does
// nothing until Run or Start.
func (o *Outbox) NewRelay(db *pgxpool.Pool, enq *work.Enqueuer, opts RelayOptions) *Relay {
	if opts.BatchSize <= 0 {
		opts.BatchSize = 100
	}
	if opts.PollInterval <= 0 {
		opts.PollInterval = time.Second
	}
	if opts.DoneRetention <= 0 {
		opts.DoneRetention = 7 * 24 * time.Hour
	}
	if opts.Parallel <= 0 {
		opts.Parallel = 16
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Relay{o: o, db: db, enq: enq, opts: opts, log: log.With("component", "pgwork.relay", "outbox", o.outbox),
		wake: make(chan struct{}, 1)}
}

// Run relays until ctx is done, then returns ctx's error. It passes over the outbox whenever a
// notification arrives (and again 2×Config.NotifyEvery later), every PollInterval, and again at
// once while passes find rows.
// Errors (PostgreSQL or Redis unreachable) are logged and retried at the next poll.
func (r *Relay) Run(ctx context.Context) error {
	var wg sync.WaitGroup
	if !r.opts.NoListen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r.listen(ctx)
		}()
	}
	defer wg.Wait()
	poll := time.NewTimer(0)
	defer poll.Stop()
	// followUp looks again shortly after a notification: the enqueues that came within NotifyEvery
	// of the notifying one sent none, and may commit just after this pass.
	followUp := time.NewTimer(time.Hour)
	followUp.Stop()
	defer followUp.Stop()
	for {
		woken := false
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-poll.C:
		case <-followUp.C:
		case <-r.wake:
			woken = true
		}
		// Pass while passes find rows: under a steady load the relay keeps up without waiting for
		// notifications, which the enqueues send at most every NotifyEvery.
		for {
			n, err := r.Pass(ctx)
			if err != nil {
				if ctx.Err() == nil {
					r.log.Error("relay pass failed", "err", err)
				}
				break
			}
			if n == 0 {
				break
			}
		}
		if woken && r.o.notifyEvery > 0 {
			followUp.Reset(2 * r.o.notifyEvery)
		}
		if !poll.Stop() {
			select {
			case <-poll.C:
			default:
			}
		}
		poll.Reset(r.opts.PollInterval)
	}
}

// Start runs the relay in a goroutine until Stop: the way to run it beside a WorkerPool's Start
// and Stop. Starting a started relay does nothing.
func (r *Relay) Start() {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cancel != nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel, r.done = cancel, make(chan struct{})
	go func(done chan struct{}) {
		defer close(done)
		r.Run(ctx)
	}(r.done)
}

// Stop stops a relay Start started, waiting for its pass in progress (whose transaction is rolled
// back if it has not committed: its rows wait for the next relay). It is a no-op otherwise.
func (r *Relay) Stop() {
	r.mu.Lock()
	cancel, done := r.cancel, r.done
	r.cancel, r.done = nil, nil
	r.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// listen holds a connection of its own that LISTENs on the channel, and wakes the relay on each
// notification, until ctx is done. After a reconnection it wakes the relay too: notifications sent
// while it was away are lost.
func (r *Relay) listen(ctx context.Context) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		err := r.listenOnce(ctx, func() { backoff = 100 * time.Millisecond })
		if ctx.Err() != nil {
			return
		}
		r.log.Warn("relay listener lost its connection; reconnecting", "err", err, "in", backoff)
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		if backoff *= 2; backoff > 10*time.Second {
			backoff = 10 * time.Second
		}
	}
}

func (r *Relay) listenOnce(ctx context.Context, connected func()) error {
	conn, err := pgx.ConnectConfig(ctx, r.db.Config().ConnConfig.Copy())
	if err != nil {
		return err
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		conn.Close(cctx)
	}()
	if _, err := conn.Exec(ctx, "LISTEN "+r.o.channel); err != nil {
		return err
	}
	connected()
	r.poke()
	for {
		if _, err := conn.WaitForNotification(ctx); err != nil {
			return err
		}
		r.poke()
	}
}

// poke wakes Run, once however many times it is called before Run looks.
func (r *Relay) poke() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// claimed is one outbox row a pass holds.
type claimed struct {
	id, name      string
	args, options []byte
	createdAt     time.Time
}

// Pass moves one batch of committed rows to Redis and returns how many rows it claimed. In one
// transaction it claims up to BatchSize rows no other relay holds, enqueues each in Redis under
// its row's ID (a job already there from a pass that died before its commit is not enqueued
// again), deletes the moved rows and commits; then Redis forgets the moved IDs. A row that can never become a job (a bad name,
// malformed args or options) goes to the dead set with the reason, and is deleted too; rows whose
// enqueue failed otherwise wait for the next pass. Run calls Pass; call it directly to relay without a goroutine (a cron, a test).
func (r *Relay) Pass(ctx context.Context) (int, error) {
	tx, err := r.db.Begin(ctx)
	if err != nil {
		return 0, fmt.Errorf("pgwork: relay: %w", err)
	}
	defer tx.Rollback(context.Background())
	rows, err := tx.Query(ctx, `SELECT id, name, args::text, options::text, created_at FROM `+r.o.outbox+`
ORDER BY created_at LIMIT $1 FOR UPDATE SKIP LOCKED`, r.opts.BatchSize)
	if err != nil {
		return 0, fmt.Errorf("pgwork: relay: claim: %w", err)
	}
	var batch []claimed
	for rows.Next() {
		var c claimed
		if err := rows.Scan(&c.id, &c.name, &c.args, &c.options, &c.createdAt); err != nil {
			rows.Close()
			return 0, fmt.Errorf("pgwork: relay: claim: %w", err)
		}
		batch = append(batch, c)
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("pgwork: relay: claim: %w", err)
	}

	outcomes := r.enqueueAll(batch)
	var moved []string
	var firstErr error
	for i, err := range outcomes {
		switch {
		case err == nil:
			moved = append(moved, batch[i].id)
		case firstErr == nil:
			firstErr = err
		}
	}
	if len(moved) > 0 {
		if _, err := tx.Exec(ctx, `DELETE FROM `+r.o.outbox+` WHERE id = ANY($1)`, moved); err != nil {
			return 0, fmt.Errorf("pgwork: relay: delete: %w", err)
		}
	}
	if err := r.purgeDone(ctx, tx); err != nil {
		return 0, err
	}
	if r.beforeCommit != nil {
		if err := r.beforeCommit(); err != nil {
			return 0, err
		}
	}
	if err := tx.Commit(ctx); err != nil {
		return 0, fmt.Errorf("pgwork: relay: commit: %w", err)
	}
	if len(moved) > 0 {
		// Only now, with the rows gone for good, may Redis forget the IDs; should this fail, the
		// marks expire after IDKeep.
		if err := r.enq.ForgetJobIDs(moved...); err != nil {
			r.log.Warn("relay could not make Redis forget relayed job IDs", "err", err)
		}
	}
	r.reportBacklog(ctx)
	if firstErr != nil {
		return len(batch), fmt.Errorf("pgwork: relay: enqueue: %w", firstErr)
	}
	return len(batch), nil
}

// reportBacklog tells Redis how many rows wait and since when, after each pass, for the web UI,
// the CLI and the metrics (Client.Backlogs).
func (r *Relay) reportBacklog(ctx context.Context) {
	b, err := r.o.Backlog(ctx, r.db)
	if err != nil {
		r.log.Warn("relay could not read the outbox's backlog", "err", err)
		return
	}
	if err := r.enq.ReportBacklog(r.source(), b.Waiting, b.Oldest); err != nil {
		r.log.Warn("relay could not report the outbox's backlog", "err", err)
	}
}

// source names the outbox in backlog reports.
func (r *Relay) source() string { return "pgwork:" + r.o.outbox }

// enqueueAll enqueues the batch in Redis, Parallel at a time: concurrent calls share round trips in
// the Enqueuer.
// Each row's error is nil when it is in Redis now (as a job, or in the dead set), else why it waits
// for a later pass (Redis unreachable, say).
func (r *Relay) enqueueAll(batch []claimed) []error {
	out := make([]error, len(batch))
	sem := make(chan struct{}, r.opts.Parallel)
	var wg sync.WaitGroup
	for i := range batch {
		sem <- struct{}{}
		wg.Add(1)
		go func(i int) {
			defer func() { <-sem; wg.Done() }()
			out[i] = r.enqueue(batch[i])
		}(i)
	}
	wg.Wait()
	return out
}

func (r *Relay) enqueue(c claimed) error {
	name, args, opts, err := decodeRow(c, r.opts.IDKeep)
	if err != nil {
		return r.bury(c, err.Error())
	}
	if _, err := r.enq.EnqueueWith(name, args, opts); err != nil && !errors.Is(err, work.ErrDuplicateJobID) {
		return fmt.Errorf("job %s: %w", c.id, err)
	}
	// A duplicate was enqueued by a pass that died before its commit.
	return nil
}

// bury puts a row that can never become a job into the dead set, with the reason and the row as its
// raw payload, so that it neither blocks the rows behind it nor vanishes. Under the row's ID when
// that is a valid job ID (a second pass's duplicate is then a no-op), else under a new one.
func (r *Relay) bury(c claimed, reason string) error {
	raw, err := json.Marshal(struct {
		ID      string          `json:"id"`
		Name    string          `json:"name"`
		Args    json.RawMessage `json:"args"`
		Options json.RawMessage `json:"options"`
	}{c.id, c.name, c.args, c.options})
	if err != nil {
		return err
	}
	id := c.id
	if work.CheckEnqueue("pgwork", nil, work.EnqueueOptions{ID: id}) != nil {
		id = ""
	}
	r.log.Error("outbox row cannot become a job; it goes to the dead set", "id", c.id, "name", c.name, "reason", reason)
	if err := r.enq.EnqueueDead(id, c.name, raw, "pgwork: "+reason); err != nil && !errors.Is(err, work.ErrDuplicateJobID) {
		return fmt.Errorf("job %s: to the dead set: %w", c.id, err)
	}
	return nil
}

// decodeRow turns a row into EnqueueWith's arguments, or says why it never can. Numbers stay
// json.Number, so that args keep the precision they were written with.
func decodeRow(c claimed, idKeep time.Duration) (string, map[string]interface{}, work.EnqueueOptions, error) {
	var args map[string]interface{}
	d := json.NewDecoder(bytes.NewReader(c.args))
	d.UseNumber()
	if err := d.Decode(&args); err != nil {
		return "", nil, work.EnqueueOptions{}, fmt.Errorf("%w: args: %v", errMalformed, err)
	}
	var so storedOptions
	d = json.NewDecoder(bytes.NewReader(c.options))
	d.UseNumber()
	d.DisallowUnknownFields() // an option this version does not know must not be dropped silently
	if err := d.Decode(&so); err != nil {
		return "", nil, work.EnqueueOptions{}, fmt.Errorf("%w: options: %v", errMalformed, err)
	}
	opts := so.options(c.id, idKeep)
	if err := work.CheckEnqueue(c.name, args, opts); err != nil {
		return "", nil, work.EnqueueOptions{}, fmt.Errorf("%w: %v", errMalformed, err)
	}
	return c.name, args, opts, nil
}

// purgeDone deletes RunOnce's marks past the retention, at most once a minute per relay.
func (r *Relay) purgeDone(ctx context.Context, tx pgx.Tx) error {
	r.purgeMu.Lock()
	defer r.purgeMu.Unlock()
	if time.Since(r.lastPurge) < time.Minute {
		return nil
	}
	if _, err := tx.Exec(ctx, `DELETE FROM `+r.o.done+` WHERE done_at < now() - $1::interval`,
		fmt.Sprintf("%d microseconds", r.opts.DoneRetention.Microseconds())); err != nil {
		return fmt.Errorf("pgwork: relay: purge %s: %w", r.o.done, err)
	}
	r.lastPurge = time.Now()
	return nil
}
