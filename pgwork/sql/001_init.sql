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

-- One notification per inserting statement, which PostgreSQL delivers only when (and if) the
-- transaction commits: the relays wake then, and never for a rolled-back job.
CREATE OR REPLACE FUNCTION work_outbox_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('work_outbox', '');
    RETURN NULL;
END
$$;
DROP TRIGGER IF EXISTS work_outbox_notify_trigger ON work_outbox;
CREATE TRIGGER work_outbox_notify_trigger AFTER INSERT ON work_outbox
    FOR EACH STATEMENT EXECUTE FUNCTION work_outbox_notify();

-- The jobs whose effects RunOnce committed, by job ID; relays delete the rows past a retention.
CREATE TABLE IF NOT EXISTS work_done (
    id      text PRIMARY KEY,
    done_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX IF NOT EXISTS work_done_done_at_idx ON work_done (done_at);
