-- Looks for waiting jobs: scan (lib/scan.lua) over the timed sets (scheduled, retry,
-- batches_expiry, groups_due, debounces) and the pool's queues.
--
-- keys: varies
-- uses: scan
--
-- KEYS[1] scheduled set; KEYS[2] retry set; KEYS[3] batches_expiry; KEYS[4] groups_due;
--   KEYS[5] debounces; KEYS[6..] per job name its queue and its keyed jobs' ready and delayed keys
-- ARGV none
--
-- Returns scan's reply: {due, i...}, each i a queue (1-based from KEYS[6]) that holds jobs.

return scan(1, #KEYS)
