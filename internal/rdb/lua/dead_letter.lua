-- Adds a record to the dead set for something that cannot become a job (a row of another store
-- whose name or args are malformed, say), so that it can be seen and dealt with there. Used wrapped
-- by with_job_id, so that sending the same record twice adds it once.
--
-- keys: 1
-- uses: none
--
-- KEYS[1] dead set
-- ARGV[1] score (when it died, Unix seconds); ARGV[2] the record (job JSON with its err and raw bytes)
--
-- Returns 1.

redis.call('zadd', KEYS[1], ARGV[1], ARGV[2])
return 1
