-- Queues keyed jobs, and jobs without a key with them, all or none: every key's state is checked
-- (types, and the cap on jobs waiting, KeyMaxWaiting) before anything is written. A keyed job goes to
-- the back of its key's queue, and a key that had no job waiting gets a turn, or to the lane after
-- the key's jobs there (lib/keyed.lua, "The lane"); a job without a key
-- goes onto its name's queue, as enqueue_batch.lua would push it. A job name's state is read and
-- written once per call, whatever the number of its keys.
--
-- keys: 1
-- uses: keychecks, keyed
--
-- KEYS[1] known_jobs set
-- ARGV[1] wake-up channel; ARGV[2] the namespace's prefix (<ns>:); ARGV[3] G, the number of
--   groups; then per group: job name, key ("": jobs without a key), how many payloads; then the
--   payloads, group by group. A (job name, key) pair appears in one group at most.
--
-- Returns 1.
-- Errors: "WORKKEY full <cap> <group>" when group (1-based) would leave its key with more jobs
-- waiting than its cap; WRONGTYPE naming a key of the wrong type. Nothing is written then.

local channel, prefix, G = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- The groups by job name: per name, its plain group (if any) and its keyed groups.
local names, byName = {}, {}
local at = 4 + 3 * G
for g = 1, G do
  local a = 3 + 3 * (g - 1)
  local name, K, count = ARGV[a + 1], ARGV[a + 2], tonumber(ARGV[a + 3])
  local nm = byName[name]
  if not nm then
    nm = {keyed = {}, index = {}}
    byName[name] = nm
    names[#names + 1] = name
  end
  if K == '' then
    nm.plain = {from = at, to = at + count - 1}
  else
    nm.keyed[#nm.keyed + 1] = {K, at, at + count - 1}
    nm.index[#nm.index + 1] = g
  end
  at = at + count
end
for _, name in ipairs(names) do
  local nm = byName[name]
  if nm.plain then
    local q = prefix .. 'jobs:' .. name
    if not isType(q, 'list') then
      return redis.error_reply('WRONGTYPE the queue key ' .. q .. ' holds another type; nothing was queued')
    end
  end
  if #nm.keyed > 0 then
    nm.k = keyedKeys(prefix .. 'keyed:' .. name .. ':')
    local counts = {}
    for i, grp in ipairs(nm.keyed) do counts[i] = {grp[1], grp[3] - grp[2] + 1} end
    local bad, why = keyedCheckMany(nm.k, counts)
    if bad == 0 then return redis.error_reply('WRONGTYPE ' .. why .. '; nothing was queued') end
    if bad then return redis.error_reply('WORKKEY full ' .. why .. ' ' .. nm.index[bad]) end
    nm.plan = why
  end
end
for _, name in ipairs(names) do
  local nm = byName[name]
  redis.call('sadd', KEYS[1], name)
  if nm.plain then
    local q, p = prefix .. 'jobs:' .. name, nm.plain
    for i = p.from, p.to, 1000 do redis.call('lpush', q, unpack(ARGV, i, math.min(p.to, i + 999))) end
    redis.call('publish', channel, name)
  end
  if nm.k then keyedPushMany(nm.k, name, nm.keyed, ARGV, channel, nm.plan) end
end
return 1
