-- Moves members of a sorted set onto the back of their queues under new payloads, each at most once:
-- a member already removed (by a racing client) is skipped, so nothing runs twice. A queue that goes
-- from empty to one job wakes idle pools.
--
-- keys: varies
-- uses: none
--
-- KEYS[1] the sorted set; KEYS[1+i] the queue list for member i
-- ARGV[1] wake-up channel; ARGV[3i-1], ARGV[3i], ARGV[3i+1]: member i, the payload to push, its job
--   name
--
-- Returns the number of members moved.

local moved = 0
for i = 2, #KEYS do
  local a = 3 * (i - 1) - 1
  if redis.call('zrem', KEYS[1], ARGV[a]) == 1 then
    if redis.call('lpush', KEYS[i], ARGV[a+1]) == 1 then redis.call('publish', ARGV[1], ARGV[a+2]) end
    moved = moved + 1
  end
end
return moved
