-- Replaces a member of the scheduled or retry set by hand (a new run time, new args), if it is still
-- there, and keeps a debounced job its burst's pending job, so that later enqueues of the burst
-- still replace it.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] the set; KEYS[2] the burst's hash (<ns>:debounce:<name>:{<id>}), for a job of a burst;
--   else any key, which is not read
-- ARGV[1] the member; ARGV[2] the new score; ARGV[3] the new member; ARGV[4] "1" for a job of a burst
--
-- Returns 1 when replaced, 0 when the member was gone (it is due, or running, or was deleted).

if redis.call('zrem', KEYS[1], ARGV[1]) == 0 then return 0 end
redis.call('zadd', KEYS[1], ARGV[2], ARGV[3])
if ARGV[4] == '1' and redis.call('hget', KEYS[2], 'member') == ARGV[1] then
  local now = tonumber(redis.call('time')[1])
  redis.call('hset', KEYS[2], 'member', ARGV[3], 'run_at', ARGV[2])
  redis.call('expire', KEYS[2], math.max(tonumber(ARGV[2]) - now, 0) + 3600)
end
return 1
