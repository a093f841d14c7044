-- Moves members of a sorted set onto the back of their queues under new payloads, each at most once:
-- a member already removed (by a racing client) is skipped, so nothing runs twice. A queue that goes
-- from empty to one job wakes idle pools. A keyed job goes to the back of its key's queue (never
-- refused for the key's cap), and its key gets a turn.
--
-- keys: varies
-- uses: keychecks, keyed
--
-- KEYS[1] the sorted set; KEYS[1+i] the queue of member i (its name's, or its key's)
-- ARGV[1] wake-up channel; ARGV[2] the namespace's prefix (<ns>:); ARGV[4i-1], ARGV[4i],
--   ARGV[4i+1], ARGV[4i+2]: member i, the payload to push, its job name, its key ("" for none)
--
-- Returns the number of members moved.

local channel, prefix = ARGV[1], ARGV[2]
local moved = 0
for i = 2, #KEYS do
  local a = 4 * (i - 1) - 1
  local name, K = ARGV[a+2], ARGV[a+3]
  local k = K ~= '' and keyedKeys(prefix .. 'keyed:' .. name .. ':')
  -- A queue key of the wrong type leaves its member in the set rather than lose it.
  if isType(KEYS[i], 'list') and (not k or keyedTypesOK(k)) and redis.call('zrem', KEYS[1], ARGV[a]) == 1 then
    if k then
      keyedPush(k, K, name, ARGV, a + 1, a + 1, channel)
    elseif redis.call('lpush', KEYS[i], ARGV[a+1]) == 1 then
      redis.call('publish', channel, name)
    end
    moved = moved + 1
  end
end
return moved
