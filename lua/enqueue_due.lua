-- Moves members of a sorted set onto the back of the queues named for them, each at most once: a
-- member that another pool moved first is skipped. A keyed job goes to the back of its key's queue
-- (never refused for the key's cap: it was enqueued already), and its key gets a turn.
--
-- keys: varies
-- uses: keychecks, keyed
--
-- KEYS[1] the sorted set; KEYS[1+i] the queue of member i (its name's, or its key's)
-- ARGV[1] wake-up channel; ARGV[2] the namespace's prefix (<ns>:); ARGV[3i], ARGV[3i+1], ARGV[3i+2]
--   member i, its job name and its key ("" for none)
--
-- Returns the number of members moved.

local channel, prefix = ARGV[1], ARGV[2]
local moved = 0
for i = 2, #KEYS do
  local m, name, K = ARGV[3*(i-1)], ARGV[3*(i-1)+1], ARGV[3*(i-1)+2]
  local k = K ~= '' and keyedKeys(prefix .. 'keyed:' .. name .. ':')
  -- A queue key of the wrong type leaves its member in the set rather than lose it.
  if isType(KEYS[i], 'list') and (not k or keyedTypesOK(k)) and redis.call('zrem', KEYS[1], m) == 1 then
    if k then
      keyedPush(k, K, name, {m}, 1, 1, channel)
    elseif redis.call('lpush', KEYS[i], m) == 1 then
      redis.call('publish', channel, name)
    end
    moved = moved + 1
  end
end
return moved
