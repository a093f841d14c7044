-- Puts back, at the fetch end of its queue, every entry of this pool's in-progress lists that the
-- pool does not hold: a fetch whose reply was lost (Redis restarted, a connection cut, a failover)
-- leaves such entries, which no worker will ever run. The caller runs it between fetches, passing
-- every payload it holds until its outcome is written. An entry of a keyed in-progress list goes back
-- to the front of its key's queue, and frees its key's slot.
--
-- keys: varies
-- uses: keychecks, keyed
--
-- KEYS[1] the count of hand-offs made to the pool (<ns>:handoffs:<pool>)
-- KEYS[4i-2..4i+1], one group per in-progress list i: the list, the queue its jobs came from (a
--   job name's list, or for keyed jobs the name's ready keys), lock, lock_info
-- ARGV[1] pool ID; ARGV[2] wake-up channel; ARGV[3] the server time, in epoch milliseconds, after
--   which the sweep must not run: its held set may be stale; then per group: the job name, the name's keyed prefix
--   (<ns>:keyed:<name>:) for the list of its keyed jobs or "" for its own, the number c of entries
--   the pool holds in the list, and those c entries
--
-- Returns {the number of entries put back, or -1 when it ran past ARGV[3] and did nothing; the
-- count of hand-offs made to the pool (0: none or unreadable)}: a job handed to the pool is in its
-- in-progress list before the pool reads the message, so the pool leaves the hand-offs of that count
-- or lower that it had not read when it called (their jobs may be among those put back).

local pool, channel = ARGV[1], ARGV[2]
local t = redis.call('time')
if tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) > tonumber(ARGV[3]) then return {-1, 0} end
local handed = redis.pcall('get', KEYS[1])
handed = type(handed) == 'string' and tonumber(handed) or 0
local a = 4 -- the ARGV of the next job name
local moved = 0
for i = 1, (#KEYS - 1) / 4 do
  local k = 1 + 4 * (i - 1)
  local inprogress, jobs, lock, lockInfo = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4]
  local name, prefix, c = ARGV[a], ARGV[a+1], tonumber(ARGV[a+2])
  local held = {}
  for j = a + 3, a + 2 + c do held[ARGV[j]] = (held[ARGV[j]] or 0) + 1 end
  a = a + 3 + c
  local kk = prefix ~= '' and keyedKeys(prefix)
  local ok = kk and keyedTypesOK(kk) or (not kk and isType(jobs, 'list'))
  if ok and isType(inprogress, 'list') and redis.call('llen', inprogress) > c then
    local n = 0
    for _, m in ipairs(redis.call('lrange', inprogress, 0, -1)) do
      if (held[m] or 0) > 0 then
        held[m] = held[m] - 1
      elseif kk then
        local K, payload = keyedSplit(m)
        if K and keyedReturn(kk, K, name, payload, channel) then
          redis.call('lrem', inprogress, 1, m)
          keyedRelease(kk, K, 1, false, name, channel)
          n = n + 1
        end
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
return {moved, handed}
