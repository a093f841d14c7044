-- Replaces a member of the scheduled or retry set by hand (a new run time, new args), if it is still
-- there, and keeps a debounced job its burst's pending job, so that later enqueues of the burst
-- still replace it.
--
-- keys: 3
-- uses: none
--
-- KEYS[1] the set; KEYS[2] the burst's hash (<ns>:debounce:<name>:{<id>}) and KEYS[3] the index of
--   bursts (<ns>:debounces), for a job of a burst; else any keys, which are not read
-- ARGV[1] the member; ARGV[2] the new score; ARGV[3] the new member; ARGV[4] the burst's member in
--   the index (<name>\n<id>), or "" for a job of no burst; ARGV[5] the due channel
--
-- Returns 1 when replaced, 0 when the member was gone (it is due, or running, or was deleted).

if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[3])
if ARGV[4] ~= '' and redis.call('hget', KEYS[2], 'member') == ARGV[1] then
  local now = tonumber(redis.call('time')[1])
  redis.call('hset', KEYS[2], 'member', ARGV[3], 'run_at', ARGV[2])
  redis.call('expire', KEYS[2], math.max(tonumber(ARGV[2]) - now, 0) + 3600)
  redis.call('zadd', KEYS[3], ARGV[2], ARGV[4])
end
-- Pools waiting for due work learn of a sooner time at once, as when a job is scheduled.
redis.call('publish', ARGV[5], ARGV[2])
return 1
