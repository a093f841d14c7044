-- Enqueues debounced jobs, many in one call (the pushes that concurrent Enqueue calls share): the
-- pending job of a burst (a job name and a debounce ID) waits in the burst's hash until it is due,
-- when the requeuer moves it into the scheduled set (debounce_due.lua); each enqueue of the burst
-- replaces its payload (or keeps the first) and moves its run time to a window after now, but never
-- past the burst's maximum wait after its first enqueue. A burst whose hash is gone (its job is
-- due, running, or was deleted) is over: the next enqueue starts a new one, so a job that has
-- started is never replaced. Entries run in order, so two of one burst in a call act as two calls
-- would. A replacing enqueue within the second of the one before is two commands, the hash's read
-- and write, and neither reads the pending payload.
--
-- keys: varies
-- uses: none
--
-- KEYS[1] scheduled set; KEYS[2] known_jobs set; KEYS[3] the index of pending bursts
--   (<ns>:debounces), scored by run time; KEYS[3+i] entry i's burst hash
--   (<ns>:debounce:<name>:{<id>}), which exists while the burst is pending: pending (the pending
--   payload), first_ms (when the burst began), count (enqueues), run_at (the second it is due),
--   window_ms, max_wait_ms
-- ARGV[1] due channel; then 5 per entry i, from ARGV[5i-3]: the new job's payload, window in ms,
--   maximum wait in ms (0: none), "1" to keep the first payload, the burst's member in the index
--   (<name>\n<id>)
--
-- Returns one value per entry: 1 when it began a burst, 2 when it replaced the burst's pending job,
-- the pending payload when it kept it (KeepFirst). An entry that fails (a key of another type) has
-- its error in its place; it may have written part of its change, as a script stopped by the error
-- would. A call of one entry that fails returns the error itself.

-- The run time counts whole seconds, as the scheduled set does: it is rounded up from the window's
-- end, so that the job waits at least the window after the last enqueue, and down from the maximum
-- wait's end, so that it is due no later than that.
local t = redis.call('time')
local nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local sched, known, index, dueChannel = KEYS[1], KEYS[2], KEYS[3], ARGV[1]

local function enqueue(hash, payload, window, maxWait, replace, indexMember)
  local h
  if replace then
    h = redis.call('hmget', hash, 'run_at', 'first_ms', 'count', 'member')
  else
    h = redis.call('hmget', hash, 'run_at', 'first_ms', 'count', 'member', 'pending')
  end
  local oldRunAt, first, count, pending = tonumber(h[1]), h[2], tonumber(h[3]), h[5]
  if h[4] then
    -- A burst written by a version that kept the pending job in the scheduled set ("member"), and
    -- kept the hash an hour past its run: if its job is still there, the burst goes on, its job
    -- now held here.
    pending = redis.call('zrem', sched, h[4]) == 1 and h[4]
    if pending then
      redis.call('hset', hash, 'pending', pending)
    else
      oldRunAt = nil
    end
    redis.call('hdel', hash, 'member')
    redis.call('persist', hash)
  end
  local new = not (oldRunAt and first and count and (replace or pending))
  local runAt = math.ceil((nowMs + window) / 1000)
  if maxWait > 0 then
    local from = not new and tonumber(first) or nowMs
    runAt = math.min(runAt, math.floor((from + maxWait) / 1000))
  end
  if new then
    local name = string.match(indexMember, '^(.-)\n')
    redis.call('sadd', known, name)
    redis.call('hset', hash, 'pending', payload, 'first_ms', nowMs, 'count', '1', 'run_at', runAt,
      'window_ms', window, 'max_wait_ms', maxWait)
    redis.call('zadd', index, runAt, indexMember)
    redis.call('publish', dueChannel, runAt)
    return 1
  end

  -- A later enqueue of a pending burst: most often within the same second as the one before, so the
  -- run time and the index stay as they are.
  -- Text made here: Redis would format a Lua number with more work, on every call.
  count = string.format('%d', count + 1)
  local out = 2
  if not replace then out = pending end
  if runAt == oldRunAt then
    if replace then
      redis.call('hset', hash, 'pending', payload, 'count', count)
    else
      redis.call('hset', hash, 'count', count)
    end
    return out
  end
  if replace then
    redis.call('hset', hash, 'pending', payload, 'count', count, 'run_at', runAt, 'window_ms', window,
      'max_wait_ms', maxWait)
  else
    redis.call('hset', hash, 'count', count, 'run_at', runAt, 'window_ms', window, 'max_wait_ms', maxWait)
  end
  redis.call('zadd', index, runAt, indexMember)
  -- A shorter window than the burst's before can make the job due sooner.
  if runAt < oldRunAt then redis.call('publish', dueChannel, runAt) end
  return out
end

local out, entries = {}, #KEYS - 3
for i = 1, entries do
  local a = 5 * i - 3
  -- Reading a number from text is not free (strtod): the common "no maximum wait" is not read.
  local maxWait = ARGV[a + 2] == '0' and 0 or tonumber(ARGV[a + 2])
  local ok, r = pcall(enqueue, KEYS[3 + i], ARGV[a], tonumber(ARGV[a + 1]), maxWait, ARGV[a + 3] ~= '1',
    ARGV[a + 4])
  if not ok then
    if not (type(r) == 'table' and r.err) then r = redis.error_reply(tostring(r)) end
    if entries == 1 then return r end
  end
  out[i] = r
end
return out
