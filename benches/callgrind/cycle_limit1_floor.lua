-- The least dispatch that keeps the library's state for KeyConcurrency 1 (a queue per key, the keys
-- with jobs in ready, running counts, the waiting index): pop the keys with the earliest turns,
-- read their running counts, RPOP one job of each key not running and LLEN what it leaves, write
-- the counts, the waiting index and the turn's virtual time, LPUSH the jobs into an in-progress
-- list; then LREM each, drop the keys' counts and give the keys that still have jobs waiting a turn
-- again (ZMSCORE of the waiting index, ZADD NX). The same commands as the library's take and
-- release (cycle_keyed.lua with KeyConcurrency 1) without their checks for overrides, rates, lane
-- jobs and errors. With ARGV[1] "quick", the keys are read without their scores (ZRANGE, then the
-- last one's score) and removed by rank, as a take whose keys all reach their limit could.
--
-- keys: 0; ARGV[1] "quick" or "", ARGV[2] jobs per take, ARGV[3] takes. Returns the jobs taken.
local p = 'cg:keyed:a:'
local ready, running, waiting = p .. 'ready', p .. 'running', p .. 'waiting'
local inprogress = p .. 'pool:inprogress'
local quick, n, rounds = ARGV[1] == 'quick', tonumber(ARGV[2]), tonumber(ARGV[3])
local total = 0
for _ = 1, rounds do
  local keys, vt
  if quick then
    keys = redis.call('zrange', ready, 0, n - 1)
    if #keys == 0 then break end
    vt = redis.call('zscore', ready, keys[#keys])
    redis.call('zremrangebyrank', ready, 0, #keys - 1)
  else
    local popped = redis.call('zpopmin', ready, n)
    if #popped == 0 then break end
    keys = {}
    for i = 1, #popped, 2 do keys[#keys + 1] = popped[i] end
    vt = popped[#popped]
  end
  local run = redis.call('hmget', running, unpack(keys))
  local out, set, upd, gone = {}, {}, {}, {}
  for i, K in ipairs(keys) do
    if not run[i] then
      local q = p .. '{' .. K .. '}'
      local v = redis.call('rpop', q)
      if v then
        out[#out + 1] = K .. '\n' .. v
        set[#set + 1], set[#set + 2] = K, '1'
        local b = redis.call('llen', q)
        if b > 0 then
          upd[#upd + 1], upd[#upd + 2] = b, K
        else
          gone[#gone + 1] = K
        end
      end
    end
  end
  if #out == 0 then break end
  redis.call('hset', running, unpack(set))
  if #upd > 0 then redis.call('zadd', waiting, 'XX', unpack(upd)) end
  if #gone > 0 then redis.call('zrem', waiting, unpack(gone)) end
  redis.call('hset', p .. 'meta', 'vt', vt)
  redis.call('lpush', inprogress, unpack(out))
  local ended = {}
  for i, e in ipairs(out) do
    redis.call('lrem', inprogress, '-1', e)
    ended[i] = set[2 * i - 1]
  end
  redis.call('hmget', running, unpack(ended))
  redis.call('hdel', running, unpack(ended))
  local sc = redis.call('zmscore', waiting, unpack(ended))
  local add = {}
  for i, K in ipairs(ended) do
    if sc[i] then add[#add + 1], add[#add + 2] = vt, K end
  end
  if #add > 0 then redis.call('zadd', ready, 'NX', unpack(add)) end
  total = total + #out
end
return total
