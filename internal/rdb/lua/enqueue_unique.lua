-- Enqueues a job (onto a queue, or into the scheduled set when ARGV[3] is a score) unless its unique
-- lock is held. A duplicate refreshes the lock and, for ByKey jobs, replaces the stored job so the
-- single run uses the latest args. A keyed job to run now goes to the back of its key's queue (or
-- the lane: lib/keyed.lua), within the key's cap (KeyMaxWaiting).
--
-- keys: 3
-- uses: keychecks, keyed
-- loads: keyed
--
-- KEYS[1] jobs list (its key's queue for a keyed job) or scheduled set; KEYS[2] unique lock;
--   KEYS[3] known_jobs set
-- ARGV[1] job payload; ARGV[2] lock value ("1", or the job payload for ByKey); ARGV[3] run-at score
--   or ""; ARGV[4] job name; ARGV[5] wake-up channel; ARGV[6] lock TTL in seconds; ARGV[7] due
--   channel; ARGV[8] the job's key ("" for none); ARGV[9] the name's keyed prefix
--   (<ns>:keyed:<name>:)
--
-- Returns "ok" when enqueued, "dup" otherwise.
-- Errors: "WORKKEY full <cap> 1" when the key has as many jobs waiting as its cap; WRONGTYPE for a
-- key of the keyed state of another type. Nothing is written then.

local K = ARGV[8] or ''
-- An unkeyed job (or a keyed one scheduled for later) makes none of keyed's helpers.
if K ~= '' and ARGV[3] == '' then ${loadKeyed} end
local k = K ~= '' and ARGV[3] == '' and keyedKeys(ARGV[9])
if k then
  if not (keyedTypesOK(k) and isType(KEYS[1], 'list')) then
    return redis.error_reply('WRONGTYPE a key of ' .. k.p .. '* holds another type; nothing was queued')
  end
  if not redis.call('get', KEYS[2]) then
    local cap = keyedCap(k, K)
    if cap > 0 and (keyedBacklog(k, K) or 0) >= cap then return redis.error_reply('WORKKEY full ' .. cap .. ' 1') end
  end
end
redis.call('sadd', KEYS[3], ARGV[4])
if redis.call('set', KEYS[2], ARGV[2], 'NX', 'EX', ARGV[6]) then
  if ARGV[3] ~= '' then
    redis.call('zadd', KEYS[1], ARGV[3], ARGV[1])
    redis.call('publish', ARGV[7], ARGV[3])
  elseif k then
    keyedPush(k, K, ARGV[4], ARGV, 1, 1, ARGV[5])
  elseif redis.call('lpush', KEYS[1], ARGV[1]) == 1 then
    redis.call('publish', ARGV[5], ARGV[4])
  end
  return 'ok'
end
redis.call('set', KEYS[2], ARGV[2], 'EX', ARGV[6])
return 'dup'
