-- Enqueues one job without a key onto its queue, or into the scheduled set when ARGV[2] is a score,
-- and wakes the pools that may take it. The plain enqueue sends these commands without a script,
-- sharing round trips; this one is for an enqueue that must be one step with others (with_job_id).
--
-- keys: 2
-- uses: none
--
-- KEYS[1] the jobs list, or the scheduled set; KEYS[2] known_jobs set
-- ARGV[1] job payload; ARGV[2] run-at score or ""; ARGV[3] job name; ARGV[4] wake-up channel;
--   ARGV[5] due channel
--
-- Returns 1.

redis.call('sadd', KEYS[2], ARGV[3])
if ARGV[2] ~= '' then
  redis.call('zadd', KEYS[1], ARGV[2], ARGV[1])
  redis.call('publish', ARGV[5], ARGV[2])
elseif redis.call('lpush', KEYS[1], ARGV[1]) == 1 then
  redis.call('publish', ARGV[4], ARGV[3])
end
return 1
