-- Looks for waiting jobs: scan (lib/scan.lua) over the scheduled set, the retry set and the pool's
-- queues.
--
-- keys: varies
-- uses: scan
--
-- KEYS[1] scheduled set; KEYS[2] retry set; KEYS[3..] the pool's queues
-- ARGV none
--
-- Returns scan's reply: {due, i...}, each i a queue (1-based from KEYS[3]) that holds jobs.

return scan(1, #KEYS)
