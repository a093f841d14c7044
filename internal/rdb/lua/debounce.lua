-- Enqueues a debounced job: the pending job of its burst (a job name and a debounce ID) waits in the
-- scheduled set; each enqueue of the burst replaces its payload (or keeps the first) and moves its
-- run time to a window after now, but never past the burst's maximum wait after its first enqueue.
-- A burst whose job has left the scheduled set (it is due, running, or was deleted) is over: the
-- next enqueue starts a new one, so a job that has started is never replaced.
--
-- keys: 4
-- uses: none
--
-- KEYS[1] the burst's hash (<ns>:debounce:<name>:{<id>}): member (the pending payload), first_ms
--   (when the burst began), count (enqueues), run_at (the second it is due), window_ms,
--   max_wait_ms; KEYS[2] scheduled set; KEYS[3] known_jobs set; KEYS[4] the index of bursts
--   (<ns>:debounces)
-- ARGV[1] the new job's payload; ARGV[2] window, ms; ARGV[3] maximum wait, ms (0: none);
--   ARGV[4] "1" to keep the first payload; ARGV[5] job name; ARGV[6] due channel; ARGV[7] the
--   burst's member in the index (<name>\n<id>)
--
-- Returns {state, the pending payload when it is not the new one (else ""), run-at second, enqueues in
-- the burst}; state is "new", "replaced" or "kept".

-- The scheduled set counts whole seconds: the run time is rounded up from the window's end, so that
-- the job waits at least the window after the last enqueue, and down from the maximum wait's end,
-- so that it is due no later than that.
local t = redis.call('time')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = tonumber(t[1])
local window, maxWait = tonumber(ARGV[2]), tonumber(ARGV[3])
local h = redis.call('hmget', KEYS[1], 'member', 'first_ms', 'count', 'run_at')
local member, first, count, oldRunAt = h[1], tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
if not (member and first and oldRunAt and redis.call('zscore', KEYS[2], member)) then
  member, first, count, oldRunAt = nil, nowMs, 0, nil
end
local runAt = math.ceil((nowMs + window) / 1000)
if maxWait > 0 then runAt = math.min(runAt, math.floor((first + maxWait) / 1000)) end
count = count + 1

if not member then
  -- A new burst.
  redis.call('zadd', KEYS[2], runAt, ARGV[1])
  redis.call('sadd', KEYS[3], ARGV[5])
  redis.call('hset', KEYS[1], 'member', ARGV[1], 'first_ms', first, 'count', count, 'run_at', runAt,
    'window_ms', window, 'max_wait_ms', maxWait)
  -- The hash outlives its job's run by an hour, for the Client to tell. The index drops bursts
  -- whose run was over an hour ago here (their hashes have expired), and those over sooner when read.
  redis.call('expire', KEYS[1], runAt - now + 3600)
  redis.call('zadd', KEYS[4], runAt, ARGV[7])
  redis.call('zremrangebyscore', KEYS[4], '-inf', now - 3600)
  redis.call('publish', ARGV[6], runAt)
  return {'new', '', runAt, count}
end

-- A later enqueue of a pending burst: most often within the same second as the one before, so the
-- run time, the hash's lifetime and the index stay as they are.
local state = 'kept'
if ARGV[4] ~= '1' then
  state = 'replaced'
  redis.call('zrem', KEYS[2], member)
  redis.call('zadd', KEYS[2], runAt, ARGV[1])
  redis.call('hset', KEYS[1], 'member', ARGV[1], 'count', count)
elseif runAt ~= oldRunAt then
  redis.call('zadd', KEYS[2], runAt, member)
  redis.call('hset', KEYS[1], 'count', count)
else
  redis.call('hset', KEYS[1], 'count', count)
end
if runAt ~= oldRunAt then
  redis.call('hset', KEYS[1], 'run_at', runAt, 'window_ms', window, 'max_wait_ms', maxWait)
  redis.call('expire', KEYS[1], runAt - now + 3600)
  redis.call('zadd', KEYS[4], runAt, ARGV[7])
  -- A shorter window than the burst's before can make the job due sooner.
  if runAt < oldRunAt then redis.call('publish', ARGV[6], runAt) end
end
if state == 'kept' then return {state, member, runAt, count} end
return {state, '', runAt, count}
