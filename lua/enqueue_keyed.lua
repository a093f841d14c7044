-- Queues keyed jobs, and jobs without a key with them, all or none: every key's state is checked
-- (types, and the cap on jobs waiting, KeyMaxWaiting) before anything is written. A keyed job goes to
-- the back of its key's queue, and a key that had no job waiting gets a turn; a job without a key
-- goes onto its name's queue, as enqueue_batch.lua would push it.
--
-- keys: 1
-- uses: keychecks, keyed
--
-- KEYS[1] known_jobs set
-- ARGV[1] wake-up channel; ARGV[2] the namespace's prefix (<ns>:); ARGV[3] G, the number of
--   groups; then per group: job name, key ("": jobs without a key), how many payloads; then the
--   payloads, group by group. A (job name, key) pair appears in one group at most.
--
-- Returns the length of the last group's queue.
-- Errors: "WORKKEY full <cap> <group>" when group (1-based) would leave its key with more jobs
-- waiting than its cap; WRONGTYPE naming a key of the wrong type. Nothing is written then.

local channel, prefix, G = ARGV[1], ARGV[2], tonumber(ARGV[3])
local groups = {}
for g = 1, G do
  local a = 3 + 3 * (g - 1)
  local name, K, count = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local grp = {name = name, key = K, count = count}
  if K == '' then
    grp.q = prefix .. 'jobs:' .. name
  else
    grp.k = keyedKeys(prefix .. 'keyed:' .. name .. ':')
    if not keyedTypesOK(grp.k) then
      return redis.error_reply('WRONGTYPE a key of ' .. grp.k.p .. '* holds another type; nothing was queued')
    end
    grp.q = keyedQueue(grp.k, K)
  end
  if not isType(grp.q, 'list') then
    return redis.error_reply('WRONGTYPE the queue key ' .. grp.q .. ' holds another type; nothing was queued')
  end
  if grp.k then
    local cap = keyedCap(grp.k, K)
    if cap > 0 and redis.call('llen', grp.q) + count > cap then
      return redis.error_reply('WORKKEY full ' .. cap .. ' ' .. g)
    end
  end
  groups[g] = grp
end
local at, n = 4 + 3 * G, 0
for _, grp in ipairs(groups) do
  redis.call('sadd', KEYS[1], grp.name)
  local last = at + grp.count - 1
  if grp.k then
    n = keyedPush(grp.k, grp.key, grp.name, ARGV, at, last, channel)
  else
    for i = at, last, 1000 do n = redis.call('lpush', grp.q, unpack(ARGV, i, math.min(last, i + 999))) end
    redis.call('publish', channel, grp.name)
  end
  at = last + 1
end
return n
