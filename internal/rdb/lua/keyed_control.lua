-- Changes how one key of a job name is served (Client.PauseKey, UnpauseKey, SetKeyLimits,
-- ClearKeyLimits): pauses it, resumes it, or sets or clears its overrides. A key that may run more
-- than before (resumed, a higher limit) and has jobs waiting gets a turn at once, so the change
-- takes effect without waiting for a job of the key to end.
--
-- keys: 1
-- uses: keychecks, keyed
--
-- KEYS[1] the name's conf hash (the other keys of its keyed state are named from ARGV[1], on the
--   same slot)
-- ARGV[1] the name's keyed prefix (<ns>:keyed:<name>:); ARGV[2] the key; ARGV[3] the job name;
-- ARGV[4] wake-up channel; ARGV[5] what to do: 'pause', 'unpause', 'set' or 'clear'; for 'set',
-- ARGV[6..9] the overrides c (concurrency), r ("<jobs>/<period ms>"), w (weight) and m (most jobs
-- waiting), each '' to leave the job name's setting.
--
-- Returns 1.
-- Errors: WRONGTYPE when a key of the name's keyed state holds another type; nothing is changed.

local k = keyedKeys(ARGV[1])
local K, name, channel, op = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
if not keyedTypesOK(k) then
  return redis.error_reply('WRONGTYPE a key of ' .. k.p .. '* holds another type')
end
if op == 'pause' then
  redis.call('hset', k.conf, 'p:' .. K, 1)
  return 1
elseif op == 'unpause' then
  redis.call('hdel', k.conf, 'p:' .. K)
elseif op == 'set' then
  local fields = {'c', 'r', 'w', 'm'}
  for i, f in ipairs(fields) do
    local v = ARGV[5 + i]
    if v == '' then redis.call('hdel', k.conf, f .. ':' .. K) else redis.call('hset', k.conf, f .. ':' .. K, v) end
  end
elseif op == 'clear' then
  redis.call('hdel', k.conf, 'c:' .. K, 'r:' .. K, 'w:' .. K, 'm:' .. K)
else
  return redis.error_reply('ERR unknown operation ' .. op)
end
if not redis.call('hget', k.conf, 'p:' .. K) then
  local q = keyedQueue(k, K)
  if keyType(q) == 'list' and redis.call('llen', q) > 0 then keyedReady(k, K, name, channel) end
end
return 1
