-- Moves members of a sorted set onto the back of their queues under new payloads, each at most once:
-- a member already removed (by a racing client) is skipped, so nothing runs twice. A queue that goes
-- from empty to one job wakes idle pools. A keyed job goes to the back of its key's queue or to the
-- lane (never refused for the key's cap), and its key gets a turn; a keyed retry that kept its key's
-- slot ("key_hold") goes to the front instead, and frees the slot.
--
-- keys: varies
-- uses: keychecks, keyed
--
-- KEYS[1] the sorted set; KEYS[1+i] the queue of member i (its name's, or its key's)
-- ARGV[1] wake-up channel; ARGV[2] the namespace's prefix (<ns>:); ARGV[5i-2..5i+2]: member i,
--   the payload to push, its job name, its key ("" for none), "1" when it holds its key's slot
--
-- Returns the number of members moved.

local channel, prefix = ARGV[1], ARGV[2]
local moved = 0
for i = 2, #KEYS do
  local a = 5 * (i - 1) - 2
  local name, K, hold = ARGV[a+2], ARGV[a+3], ARGV[a+4] == '1'
  local k = K ~= '' and keyedKeys(prefix .. 'keyed:' .. name .. ':')
  -- A queue key of the wrong type leaves its member in the set rather than lose it.
  if isType(KEYS[i], 'list') and (not k or keyedTypesOK(k)) and redis.call('zrem', KEYS[1], ARGV[a]) == 1 then
    if k and hold then
      keyedReturn(k, K, name, ARGV[a+1], channel)
      keyedRelease(k, K, 1, false, name, channel)
    elseif k then
      keyedPush(k, K, name, ARGV, a + 1, a + 1, channel)
    elseif redis.call('lpush', KEYS[i], ARGV[a+1]) == 1 then
      redis.call('publish', channel, name)
    end
    moved = moved + 1
  end
end
return moved
