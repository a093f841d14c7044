-- Moves members of a sorted set onto the back of the queues named for them, each at most once: a
-- member that another pool moved first is skipped.
--
-- keys: varies
-- uses: keychecks
--
-- KEYS[1] the sorted set; KEYS[1+i] the queue list for member i
-- ARGV[1] wake-up channel; ARGV[2i], ARGV[2i+1] member i and its job name
--
-- Returns the number of members moved.

local moved = 0
for i = 2, #KEYS do
  local m, name = ARGV[2*(i-1)], ARGV[2*(i-1)+1]
  -- A queue key of the wrong type leaves its member in the set rather than lose it.
  if isType(KEYS[i], 'list') and redis.call('zrem', KEYS[1], m) == 1 then
    if redis.call('lpush', KEYS[i], m) == 1 then redis.call('publish', ARGV[1], name) end
    moved = moved + 1
  end
end
return moved
