-- Puts a dead pool's in-progress jobs back at the fetch end of their queues (oldest first, no retry
-- counted) and releases what it held of each concurrency lock, unless the pool sent a heartbeat after
-- all. Only one of several reapers racing for the same pool does anything. Its keyed jobs go back to
-- the front of their keys' queues and free their keys' slots.
--
-- keys: varies
-- uses: keychecks, keyed
--
-- KEYS[1] worker_pools set; KEYS[2] the dead pool's heartbeat hash
-- KEYS[5i-2..5i+2], one group per job name i: jobs list, the pool's in-progress list, lock,
--   lock_info, the pool's keyed in-progress list
-- ARGV[1] dead pool ID; ARGV[2] dead-after seconds (-1: reap whatever the heartbeat says, as a
--   stopping pool does for itself, or a pool that found the dead pool's process gone); the larger of
--   it and the dead_after the heartbeat declares applies (at least ${legacyDeadAfter} when it
--   declares none, as heartbeat.lua judges); ARGV[3] wake-up channel; ARGV[2+2i], ARGV[3+2i] job name i and
--   its keyed prefix (<ns>:keyed:<name>:); then the namespace prefix
--
-- A job put back whose record says it runs in the dead pool (lua/running.lua) is queued again, as
-- its record then says.
--
-- Returns the number of jobs requeued, or -1 when the pool turned out to be alive.

local deadPool, deadAfter, channel = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local prefix = ARGV[4 + 2 * (#KEYS - 2) / 5]

-- notRunning sets the record of a job put back to queued when it says the job runs in the dead pool.
-- Reaps are rare, so decoding each payload for its ID costs little.
local function notRunning(payload)
  if not prefix then return end
  local ok, job = pcall(cjson.decode, payload)
  if not ok or type(job) ~= 'table' or type(job.id) ~= 'string' or job.id == '' then return end
  local rk = prefix .. 'job:' .. job.id
  local f = redis.pcall('hmget', rk, 'state', 'pool')
  if type(f) == 'table' and f[1] == 'running' and f[2] == deadPool then
    redis.call('hset', rk, 'state', 'queued')
    redis.call('hdel', rk, 'attempt')
  end
end
local now = tonumber(redis.call('time')[1])
if deadAfter >= 0 then
  local hb = redis.pcall('hmget', KEYS[2], 'heartbeat_at', 'dead_after')
  if type(hb) ~= 'table' then hb = {false, false} end
  local at = tonumber(hb[1] or '')
  local limit = math.max(deadAfter, tonumber(hb[2] or '') or math.max(deadAfter, ${legacyDeadAfter}))
  if at and now - at <= limit then return -1 end
end
local moved = 0
for i = 1, (#KEYS - 2) / 5 do
  local k = 2 + 5 * (i - 1)
  local jobs, inprogress, lock, lockInfo, keyedInprogress = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4], KEYS[k+5]
  local name, kk = ARGV[2+2*i], keyedKeys(ARGV[3+2*i])
  local c = 0
  -- Keyed jobs, newest first, so that the oldest is at the front of its key's queue.
  if redis.call('exists', keyedInprogress) == 1 and isType(keyedInprogress, 'list') and keyedTypesOK(kk) then
    local kept, freed = {}, {}
    while true do
      local v = redis.call('lpop', keyedInprogress)
      if not v then break end
      local K, payload = keyedSplit(v)
      if K and keyedReturn(kk, K, name, payload, channel) then
        notRunning(payload)
        freed[K] = (freed[K] or 0) + 1
        moved = moved + 1
      else
        kept[#kept + 1] = v -- a key queue of the wrong type: left where it was
      end
    end
    for j = #kept, 1, -1 do redis.call('lpush', keyedInprogress, kept[j]) end
    for K, n in pairs(freed) do keyedRelease(kk, K, n, false, name, channel) end
  end
  -- A queue or in-progress key of the wrong type is left alone (nothing can move safely).
  if isType(jobs, 'list') and isType(inprogress, 'list') then
    while true do
      local v = redis.call('lpop', inprogress)
      if not v then break end
      redis.call('rpush', jobs, v)
      notRunning(v)
      c = c + 1
    end
  end
  if isType(lockInfo, 'hash') then
    local held = tonumber(redis.call('hget', lockInfo, deadPool) or 0) or 0
    redis.call('hdel', lockInfo, deadPool)
    if held ~= 0 then
      local left = redis.pcall('decrby', lock, held)
      if type(left) == 'number' and left < 0 then redis.call('set', lock, 0) end
    end
  end
  if c > 0 then
    redis.call('publish', channel, name)
    moved = moved + c
  end
end
redis.call('del', KEYS[2])
redis.call('srem', KEYS[1], deadPool)
return moved
