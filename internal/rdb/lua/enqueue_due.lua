-- Moves members of a sorted set onto the back of the queues named for them, each at most once: a
-- member that another pool moved first is skipped. A keyed job goes to the back of its key's queue
-- or to the lane (never refused for the key's cap: it was enqueued already), and its key gets a
-- turn; a keyed retry that kept its key's slot ("key_hold") goes to the front instead, and frees the
-- slot.
--
-- keys: varies
-- uses: keychecks, keyed
-- loads: keyed
--
-- KEYS[1] the sorted set; KEYS[1+i] the queue of member i (its name's, or its key's)
-- ARGV[1] wake-up channel; ARGV[2] the namespace's prefix (<ns>:); ARGV[4i-1..4i+2] member i, its
--   job name, its key ("" for none) and "1" when it holds its key's slot
--
-- Returns the number of members moved.

local channel, prefix = ARGV[1], ARGV[2]
local moved = 0
for i = 2, #KEYS do
  local a = 4 * (i - 1) - 1
  local m, name, K, hold = ARGV[a], ARGV[a+1], ARGV[a+2], ARGV[a+3] == '1'
  if K ~= '' then ${loadKeyed} end -- a call of unkeyed jobs alone makes none of keyed's helpers
  local k = K ~= '' and keyedKeys(prefix .. 'keyed:' .. name .. ':')
  -- A queue key of the wrong type leaves its member in the set rather than lose it.
  if isType(KEYS[i], 'list') and (not k or keyedTypesOK(k)) and redis.call('zrem', KEYS[1], m) == 1 then
    if k and hold then
      keyedReturn(k, K, name, m, channel)
      keyedRelease(k, K, 1, false, name, channel)
    elseif k then
      keyedPush(k, K, name, {m}, 1, 1, channel)
    elseif redis.call('lpush', KEYS[i], m) == 1 then
      redis.call('publish', channel, name)
    end
    moved = moved + 1
  end
end
return moved
