-- Edits the pending job of a burst of debounced enqueues by hand (the Client's reschedule, new args
-- or delete), if it is still the job the caller saw. A rescheduled job stays its burst's: later
-- enqueues of the burst still replace it and move its time.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] the burst's hash (<ns>:debounce:<name>:{<id>}); KEYS[2] the index of pending bursts
--   (<ns>:debounces)
-- ARGV[1] the pending payload the caller saw; ARGV[2] "set" or "delete"; for "set": ARGV[3] the new
--   payload, ARGV[4] its run time (epoch seconds); ARGV[5] the burst's member in the index
--   (<name>\n<id>); ARGV[6] the due channel
--
-- Returns 1 when edited, 0 when the burst holds another job or none (it was replaced, is due, or
-- is over).

if redis.call('hget', KEYS[1], 'pending') ~= ARGV[1] then return 0 end
if ARGV[2] == 'delete' then
  redis.call('del', KEYS[1])
  redis.call('zrem', KEYS[2], ARGV[5])
  return 1
end
redis.call('hset', KEYS[1], 'pending', ARGV[3], 'run_at', ARGV[4])
redis.call('zadd', KEYS[2], ARGV[4], ARGV[5])
-- Pools waiting for due work learn of a sooner time at once, as when a job is scheduled.
redis.call('publish', ARGV[6], ARGV[4])
return 1
