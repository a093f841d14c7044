-- Enqueues a job (onto a queue, or into the scheduled set when ARGV[3] is a score) unless its unique
-- lock is held. A duplicate refreshes the lock and, for ByKey jobs, replaces the stored job so the
-- single run uses the latest args.
--
-- keys: 3
-- uses: none
--
-- KEYS[1] jobs list or scheduled set; KEYS[2] unique lock; KEYS[3] known_jobs set
-- ARGV[1] job payload; ARGV[2] lock value ("1", or the job payload for ByKey); ARGV[3] run-at score
--   or ""; ARGV[4] job name; ARGV[5] wake-up channel; ARGV[6] lock TTL in seconds; ARGV[7] due channel
--
-- Returns "ok" when enqueued, "dup" otherwise.

redis.call('sadd', KEYS[3], ARGV[4])
if redis.call('set', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[6]) then
  if ARGV[3] ~= '' then
    redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
    redis.call('publish', ARGV[7], ARGV[3])
  elseif redis.call('lpush', KEYS[1], ARGV[1]) == 1 then
    redis.call('publish', ARGV[5], ARGV[4])
  end
  return 'ok'
end
redis.call('set', KEYS[2], ARGV[2], 'EX', ARGV[6])
return 'dup'
