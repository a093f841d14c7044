-- Puts a dead pool's in-progress jobs back at the fetch end of their queues (oldest first, no retry
-- counted) and releases what it held of each concurrency lock, unless the pool sent a heartbeat after
-- all. Only one of several reapers racing for the same pool does anything.
--
-- keys: varies
-- uses: keychecks
--
-- KEYS[1] worker_pools set; KEYS[2] the dead pool's heartbeat hash
-- KEYS[4i-1..4i+2], one group per job name i: jobs list, the pool's in-progress list, lock, lock_info
-- ARGV[1] dead pool ID; ARGV[2] dead-after seconds (-1: reap whatever the heartbeat says, as a
--   stopping pool does for itself); ARGV[3] wake-up channel; ARGV[3+i] job name i
--
-- Returns the number of jobs requeued, or -1 when the pool turned out to be alive.

local deadPool, deadAfter, channel = ARGV[1], tonumber(ARGV[2]), ARGV[3]
local now = tonumber(redis.call('time')[1])
local at = redis.pcall('hget', KEYS[2], 'heartbeat_at')
if type(at) ~= 'string' then at = nil else at = tonumber(at) end
if at and now - at <= deadAfter then return -1 end
local moved = 0
for i = 1, (#KEYS - 2) / 4 do
  local k = 2 + 4 * (i - 1)
  local jobs, inprogress, lock, lockInfo, name = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4], ARGV[3+i]
  local c = 0
  -- A queue or in-progress key of the wrong type is left alone (nothing can move safely).
  if isType(jobs, 'list') and isType(inprogress, 'list') then
    while true do
      local v = redis.call('lpop', inprogress)
      if not v then break end
      redis.call('rpush', jobs, v)
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
