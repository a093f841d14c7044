-- Removes the oldest members of the dead set beyond a size and older than an age, at most ARGV[3] per
-- call so one call never holds Redis long: O(log n + removed).
--
-- keys: 2
-- uses: none
--
-- KEYS[1] dead set; KEYS[2] dead_trimmed counter
-- ARGV[1] most members to keep (0: no limit); ARGV[2] oldest died-at to keep, epoch s (0: no limit);
--   ARGV[3] most members to remove in this call
--
-- Returns the number removed.

local budget = tonumber(ARGV[3])
local removed = 0
local minScore = tonumber(ARGV[2])
if minScore > 0 then
  local old = redis.call('zcount', KEYS[1], '-inf', '(' .. minScore)
  if old > budget then old = budget end
  if old > 0 then
    removed = removed + redis.call('zremrangebyrank', KEYS[1], 0, old - 1)
    budget = budget - removed
  end
end
local keep = tonumber(ARGV[1])
if keep > 0 and budget > 0 then
  local excess = redis.call('zcard', KEYS[1]) - keep
  if excess > 0 then
    if excess > budget then excess = budget end
    removed = removed + redis.call('zremrangebyrank', KEYS[1], 0, excess - 1)
  end
end
if removed > 0 then redis.call('incrby', KEYS[2], removed) end
return removed
