// Package pgwork enqueues work jobs inside the application's PostgreSQL transactions: a job
// written with a transaction exists if and only if the transaction commits, and a relay then moves
// it to Redis, where worker pools run it as any other job.
//
// Writing the job to Redis directly beside a database transaction leaves two failure windows: a
// job enqueued for a transaction that then rolls back (a receipt for an order that does not
// exist), or a transaction that commits while the enqueue fails (an order without its receipt).
// pgwork closes both with an outbox table:
//
//   - Migrate (or the SQL of MigrationSQL, for a migration tool) creates the outbox table
//     (work_outbox: id, name, args, options, created_at) and the done table RunOnce uses
//     (work_done). The names are configurable with New(Config{...}).
//   - Enqueue and EnqueueMany write jobs within the caller's transaction: a pgx.Tx, or a
//     database/sql transaction (lib/pq, pgx's stdlib, sqlx, GORM) through FromSQL. Each job is
//     checked with the library's rules (work.CheckEnqueue) before anything is written, and gets
//     its job ID then (work.NewJobID, or EnqueueOptions.ID), which Enqueue returns and the job
//     keeps in Redis. EnqueueMany writes any number of jobs in one statement.
//   - A Relay (Run, or Start and Stop beside a WorkerPool) claims committed rows in batches
//     (FOR UPDATE SKIP LOCKED, so that any number of relays share the work), enqueues each in
//     Redis under its row's ID, deletes the rows and commits. The enqueue by ID is idempotent: when
//     a relay dies between Redis and its commit, the next pass enqueues the same rows again and
//     Redis refuses the duplicates (work.ErrDuplicateJobID), so each row becomes one job. A row
//     that can never become a job (a bad name, malformed args or options, written by hand or by
//     another program) goes to the dead set with the reason instead of blocking the rows behind
//     it. Enqueues send a NOTIFY in their transaction (delivered at commit only), at most one every
//     Config.NotifyEvery, since a NOTIFY serializes commits; relays wake on it, keep passing while
//     they find rows, and poll every second in case a notification was missed. Each pass reports
//     the outbox's backlog (Client.Backlogs, the web UI, the metrics).
//   - RunOnce makes a job's database effects happen once although the job may run more than once
//     (at-least-once delivery): it records the job's ID in the done table in the same transaction
//     as the effects, and skips a job whose ID is there.
//
// docs/transactional-enqueue.md in the repository says exactly what is and is not guaranteed, and
// how to move from River's InsertTx and InsertManyTx.
package pgwork
