-- Enqueues debounced jobs, many in one call (the pushes that concurrent Enqueue calls share): the
-- pending job of a burst (a job name and a debounce ID) waits in the burst's hash until it is due,
-- when the requeuer moves it into the scheduled set (debounce_due.lua); each enqueue of the burst
-- replaces its payload (or keeps the first) and moves its run time to a window after now, but never
-- past the burst's maximum wait after its first enqueue. A burst whose job has left its hash (it is
-- due, running, or was deleted) is over: the next enqueue starts a new one, so a job that has
-- started is never replaced. Entries run in order, so two of one burst in a call act as two calls
-- would. A replacing enqueue within the second of the one before is two commands: the hash's read
-- and write.
--
-- keys: varies
-- uses: none
--
-- KEYS[1] scheduled set; KEYS[2] known_jobs set; KEYS[3] the index of pending bursts
--   (<ns>:debounces), scored by run time; KEYS[3+i] entry i's burst hash
--   (<ns>:debounce:<name>:{<id>}): pending (the pending payload; absent once the burst is over),
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

-- The run time counts whole seconds, as the scheduled set does: it is rounded up from the window's
-- end, so that the job waits at least the window after the last enqueue, and down from the maximum
-- wait's end, so that it is due no later than that.
local t = redis.call('time')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sched, known, index, dueChannel = KEYS[1], KEYS[2], KEYS[3], ARGV[1]

local function enqueue(hash, payload, window, maxWait, replace, name, indexMember)
  local h = redis.call('hmget', hash, 'pending', 'first_ms', 'count', 'run_at', 'member')
  local pending, first, count, oldRunAt = h[1], tonumber(h[2]), tonumber(h[3]), tonumber(h[4])
  if not pending and h[5] then
    -- A burst written by a version that kept the pending job in the scheduled set ("member"): if
    -- its job is still there, the burst goes on, its job now held here.
    if redis.call('zrem', sched, h[5]) == 1 then pending = h[5] end
    redis.call('hdel', hash, 'member')
  end
  if not (pending and first and oldRunAt) then
    pending, first, count, oldRunAt = nil, nowMs, 0, nil
  end
  local runAt = math.ceil((nowMs + window) / 1000)
  if maxWait > 0 then runAt = math.min(runAt, math.floor((first + maxWait) / 1000)) end
  count = count + 1

  if not pending then
    -- A new burst. Its hash may live on from a burst that is over, with a lifetime: it has none
    -- while its job waits in it.
    redis.call('sadd', known, name)
    redis.call('hset', hash, 'pending', payload, 'first_ms', first, 'count', count, 'run_at', runAt,
      'window_ms', window, 'max_wait_ms', maxWait)
    redis.call('persist', hash)
    redis.call('zadd', index, runAt, indexMember)
    redis.call('publish', dueChannel, runAt)
    return 'new', '', runAt, count
  end

  -- A later enqueue of a pending burst: most often within the same second as the one before, so the
  -- run time and the index stay as they are.
  local state, kept = 'kept', pending
  if replace then state, kept = 'replaced', '' end
  if runAt == oldRunAt then
    if replace then
      redis.call('hset', hash, 'pending', payload, 'count', count)
    else
      redis.call('hset', hash, 'count', count)
    end
    return state, kept, runAt, count
  end
  redis.call('hset', hash, 'pending', replace and payload or pending, 'count', count, 'run_at', runAt,
    'window_ms', window, 'max_wait_ms', maxWait)
  redis.call('zadd', index, runAt, indexMember)
  -- A shorter window than the burst's before can make the job due sooner.
  if runAt < oldRunAt then redis.call('publish', dueChannel, runAt) end
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
