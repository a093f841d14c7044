-- Enqueues debounced jobs, many in one call (the pushes that concurrent Enqueue calls share): the
-- pending job of a burst (a job name and a debounce ID) waits in the scheduled set; each enqueue of
-- the burst replaces its payload (or keeps the first) and moves its run time to a window after now,
-- but never past the burst's maximum wait after its first enqueue. A burst whose job has left the
-- scheduled set (it is due, running, or was deleted) is over: the next enqueue starts a new one, so
-- a job that has started is never replaced. Entries run in order, so two of one burst in a call act
-- as two calls would.
--
-- keys: varies
-- uses: none
--
-- KEYS[1] scheduled set; KEYS[2] known_jobs set; KEYS[3] the index of bursts (<ns>:debounces);
--   KEYS[3+i] entry i's burst hash (<ns>:debounce:<name>:{<id>}): member (the pending payload),
--   first_ms (when the burst began), count (enqueues), run_at (the second it is due), window_ms,
--   max_wait_ms
-- ARGV[1] due channel; then 6 per entry i, from ARGV[6i-4]: the new job's payload, window in ms,
--   maximum wait in ms (0: none), "1" to keep the first payload, job name, the burst's member in the
--   index (<name>\n<id>)
--
-- Returns 4 values per entry, one entry after the other: state ("new", "replaced" or "kept"), the
-- pending payload when it is not the new one (else ""), run-at second, enqueues in the burst so far.
-- An entry that fails (a key of another type) has its error in place of its state, and its other
-- values are 0; it may have written part of its change, as a script stopped by the error would. A
-- call of one entry that fails returns the error itself.

-- The scheduled set counts whole seconds: the run time is rounded up from the window's end, so that
-- the job waits at least the window after the last enqueue, and down from the maximum wait's end,
-- so that it is due no later than that.
local t = redis.call('time')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local now = tonumber(t[1])
local sched, known, index, dueChannel = KEYS[1], KEYS[2], KEYS[3], ARGV[1]

local function enqueue(hash, payload, window, maxWait, replace, name, indexMember)
  local h = redis.call('hmget', hash, 'member', 'first_ms', 'count', 'run_at')
  local member, first, count, oldRunAt = h[1], tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  -- The burst is pending while its job is in the scheduled set. A replacing enqueue finds that out
  -- by taking the job out, which it does anyway.
  local pending = member and first and oldRunAt
  if pending and replace then
    pending = redis.call('zrem', sched, member) == 1
  elseif pending then
    pending = redis.call('zscore', sched, member)
  end
  if not pending then
    member, first, count, oldRunAt = nil, nowMs, 0, nil
  end
  local runAt = math.ceil((nowMs + window) / 1000)
  if maxWait > 0 then runAt = math.min(runAt, math.floor((first + maxWait) / 1000)) end
  -- A number given to redis.call is formatted on every call, as much work as a small command: an
  -- unchanged run time goes as the text it was read as.
  local runAtText = runAt
  if runAt == oldRunAt then runAtText = h[4] end
  count = count + 1

  if not member then
    -- A new burst.
    redis.call('zadd', sched, runAt, payload)
    redis.call('sadd', known, name)
    redis.call('hset', hash, 'member', payload, 'first_ms', first, 'count', count, 'run_at', runAt,
      'window_ms', window, 'max_wait_ms', maxWait)
    -- The hash outlives its job's run by an hour, for the Client to tell. The index drops bursts
    -- whose run was over an hour ago here (their hashes have expired), and those over sooner when
    -- read.
    redis.call('expire', hash, runAt - now + 3600)
    redis.call('zadd', index, runAt, indexMember)
    redis.call('zremrangebyscore', index, '-inf', now - 3600)
    redis.call('publish', dueChannel, runAt)
    return 'new', '', runAt, count
  end

  -- A later enqueue of a pending burst: most often within the same second as the one before, so the
  -- run time, the hash's lifetime and the index stay as they are.
  local state, kept = 'kept', member
  if replace then
    state, kept = 'replaced', ''
    redis.call('zadd', sched, runAtText, payload)
    redis.call('hset', hash, 'member', payload, 'count', count)
  elseif runAt ~= oldRunAt then
    redis.call('zadd', sched, runAt, member)
    redis.call('hset', hash, 'count', count)
  else
    redis.call('hset', hash, 'count', count)
  end
  if runAt ~= oldRunAt then
    redis.call('hset', hash, 'run_at', runAt, 'window_ms', window, 'max_wait_ms', maxWait)
    redis.call('expire', hash, runAt - now + 3600)
    redis.call('zadd', index, runAt, indexMember)
    -- A shorter window than the burst's before can make the job due sooner.
    if runAt < oldRunAt then redis.call('publish', dueChannel, runAt) end
  end
  return state, kept, runAt, count
end

local out, entries = {}, #KEYS - 3
for i = 1, entries do
  local a, o = 6 * i - 4, 4 * i - 4
  local ok, state, kept, runAt, count = pcall(enqueue, KEYS[3 + i], ARGV[a], tonumber(ARGV[a + 1]),
    tonumber(ARGV[a + 2]), ARGV[a + 3] ~= '1', ARGV[a + 4], ARGV[a + 5])
  if not ok then
    local err = state
    if not (type(err) == 'table' and err.err) then err = redis.error_reply(tostring(err)) end
    if entries == 1 then return err end
    state, kept, runAt, count = err, '', 0, 0
  end
  out[o + 1], out[o + 2], out[o + 3], out[o + 4] = state, kept, runAt, count
end
return out
