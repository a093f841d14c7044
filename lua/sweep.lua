-- Puts back, at the fetch end of its queue, every entry of this pool's in-progress lists that the
-- pool does not hold: a fetch whose reply was lost (Redis restarted, a connection cut, a failover)
-- leaves such entries, which no worker will ever run. The caller runs it between fetches, passing
-- every payload it holds until its outcome is written.
--
-- keys: varies
-- uses: keychecks
--
-- KEYS[4i-3..4i], one group per job name i: in-progress list, jobs list, lock, lock_info
-- ARGV[1] pool ID; ARGV[2] wake-up channel; then per job name: its name, the number c of payloads
--   the pool holds for it, and those c payloads
--
-- Returns the number of entries put back.

local pool, channel = ARGV[1], ARGV[2]
local a = 3 -- the ARGV of the next job name
local moved = 0
for i = 1, #KEYS / 4 do
  local k = 4 * (i - 1)
  local inprogress, jobs, lock, lockInfo = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4]
  local name, c = ARGV[a], tonumber(ARGV[a+1])
  local held = {}
  for j = a + 2, a + 1 + c do held[ARGV[j]] = (held[ARGV[j]] or 0) + 1 end
  a = a + 2 + c
  if isType(inprogress, 'list') and isType(jobs, 'list') and redis.call('llen', inprogress) > c then
    local n = 0
    for _, m in ipairs(redis.call('lrange', inprogress, 0, -1)) do
      if (held[m] or 0) > 0 then
        held[m] = held[m] - 1
      else
        redis.call('lrem', inprogress, 1, m)
        redis.call('rpush', jobs, m)
        n = n + 1
      end
    end
    if n > 0 then
      local left = redis.pcall('hincrby', lockInfo, pool, -n)
      if type(left) == 'number' and left <= 0 then redis.call('hdel', lockInfo, pool) end
      local l = redis.pcall('decrby', lock, n)
      if type(l) == 'number' and l < 0 then redis.call('set', lock, 0) end
      redis.call('publish', channel, name)
      moved = moved + n
    end
  end
end
return moved
