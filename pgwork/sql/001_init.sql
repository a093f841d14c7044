-- pgwork's tables, with their default names. Migrate runs this file with the names of its Config;
-- a migration tool can run it as it is (or with the names replaced). Running it again is harmless.

-- Jobs written with the application's transactions, waiting for a relay to move them to Redis (a
-- row that cannot become a job goes to the dead set instead, with the reason).
CREATE TABLE IF NOT EXISTS work_outbox (
    id         text PRIMARY KEY,               -- the job's ID, which the job keeps in Redis
    name       text NOT NULL,                  -- the job's name
    args       jsonb NOT NULL DEFAULT '{}',    -- the job's args, a JSON object
    options    jsonb NOT NULL DEFAULT '{}',    -- its enqueue options (see pgwork's documentation)
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS work_outbox_created_at_idx ON work_outbox (created_at);

-- Relays wake on NOTIFY <channel> (the table's name by default), which Enqueue sends in the
-- inserting transaction, so that PostgreSQL delivers it at commit and never for a rollback. It
-- sends one at most every Config.NotifyEvery: a NOTIFY serializes the commits of the transactions
-- that send one, which would halve the rate of small transactions if every one sent it. Another
-- program inserting rows may NOTIFY too, or let the relays' poll find them.
DROP TRIGGER IF EXISTS work_outbox_notify_trigger ON work_outbox;
DROP FUNCTION IF EXISTS work_outbox_notify();

-- The jobs whose effects RunOnce committed, by job ID; relays delete the rows past a retention.
CREATE TABLE IF NOT EXISTS work_done (
    id      text PRIMARY KEY,
    done_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS work_done_done_at_idx ON work_done (done_at);
