-- Opens a batch, adds jobs to it and closes it, or any of these in that order, at once: the jobs
-- of one call are queued together or not at all, and a closed batch whose members all ended fires
-- its callbacks (batchComplete, lib/workflow.lua).
--
-- keys: varies
-- uses: keychecks, workflow, keyed
--
-- KEYS[1] the batch hash; KEYS[2] the batches index; KEYS[3] known_jobs; KEYS[3+i] the queue of
--   group i: its job name's, or its key's for keyed members (which go to the back of their key's
--   queue within its cap, KeyMaxWaiting, and give their key a turn)
-- ARGV[1] steps: 'o' open, 'a' add, 'c' close, in that order ("oac" does all three)
-- ARGV[2] namespace prefix; ARGV[3] wake-up channel; ARGV[4] batch ID
-- ARGV[5..10] (open) description, keep seconds, on_complete head, its job name, on_success head,
--   its job name ("" for none)
-- ARGV[11..] (add) per group i: job name, key ("" for members without one), count; then the
--   payloads, group by group
--
-- Returns "complete" when the close fired the callbacks at once, else "ok".
-- Errors: WORKBATCH exists / unknown / complete / empty (close of a batch without members),
-- WRONGTYPE for a queue or batch key of another type, "WORKKEY full <cap> <group>" for a key that
-- would have more members waiting than its cap; nothing is changed then.

local steps, prefix, channel, id = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local bk = KEYS[1]
if not isType(bk, 'hash') then
  return redis.error_reply('WRONGTYPE the batch key ' .. bk .. ' holds another type')
end
local state = redis.call('hget', bk, 'state')
if string.find(steps, 'o', 1, true) then
  if redis.call('exists', bk) == 1 then return redis.error_reply('WORKBATCH exists') end
  state = 'open'
elseif not state then
  return redis.error_reply('WORKBATCH unknown')
elseif state == 'complete' then
  return redis.error_reply('WORKBATCH complete')
end
local n = #KEYS - 3
local groups = {}
for i = 1, n do
  local name, K, count = ARGV[8 + 3*i], ARGV[9 + 3*i], tonumber(ARGV[10 + 3*i])
  groups[i] = {name = name, key = K, count = count, k = K ~= '' and keyedKeys(prefix .. 'keyed:' .. name .. ':')}
end
if string.find(steps, 'a', 1, true) then
  for i = 4, #KEYS do
    if not isType(KEYS[i], 'list') then
      return redis.error_reply('WRONGTYPE the queue key ' .. KEYS[i] .. ' holds another type; nothing was queued')
    end
    local grp = groups[i - 3]
    if grp.k then
      if not keyedTypesOK(grp.k) then
        return redis.error_reply('WRONGTYPE a key of ' .. grp.k.p .. '* holds another type; nothing was queued')
      end
      local cap = keyedCap(grp.k, grp.key)
      if cap > 0 and (keyedBacklog(grp.k, grp.key) or 0) + grp.count > cap then
        return redis.error_reply('WORKKEY full ' .. cap .. ' ' .. (i - 3))
      end
    end
  end
end
local c = tonumber(redis.call('hget', bk, 'c') or '0') or 0
local total = tonumber(redis.call('hget', bk, 'total') or '0') or 0
local added = 0
for i = 1, n do added = added + groups[i].count end
if string.find(steps, 'c', 1, true) and total + added == 0 then return redis.error_reply('WORKBATCH empty') end
local now = tonumber(redis.call('time')[1])
if string.find(steps, 'o', 1, true) then
  local fields = {'state', 'open', 'created_at', now, 'description', ARGV[5], 'keep', ARGV[6], 'total', 0, 'c', 0, 'failed', 0}
  if ARGV[7] ~= '' then
    fields[#fields+1] = 'on_complete'; fields[#fields+1] = ARGV[7]
    fields[#fields+1] = 'on_complete_name'; fields[#fields+1] = ARGV[8]
  end
  if ARGV[9] ~= '' then
    fields[#fields+1] = 'on_success'; fields[#fields+1] = ARGV[9]
    fields[#fields+1] = 'on_success_name'; fields[#fields+1] = ARGV[10]
  end
  redis.call('hset', bk, unpack(fields))
  redis.call('zadd', KEYS[2], now, id)
end
if added > 0 then
  local at = 11 + 3 * n
  for i = 1, n do
    local grp = groups[i]
    redis.call('sadd', KEYS[3], grp.name)
    if grp.k then
      keyedPush(grp.k, grp.key, grp.name, ARGV, at, at + grp.count - 1, channel)
    else
      local done = 0
      while done < grp.count do
        local chunk = math.min(grp.count - done, 1000)
        redis.call('lpush', KEYS[3+i], unpack(ARGV, at + done, at + done + chunk - 1))
        done = done + chunk
      end
      redis.call('publish', channel, grp.name)
    end
    at = at + grp.count
  end
  c = redis.call('hincrby', bk, 'c', added)
  redis.call('hincrby', bk, 'total', added)
end
if string.find(steps, 'c', 1, true) and state == 'open' then
  redis.call('hset', bk, 'state', 'closed')
  if c % WK == 0 and batchComplete(prefix, id, c, now, channel) then return 'complete' end
end
return 'ok'
