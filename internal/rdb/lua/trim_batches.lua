-- Removes from the batch index the batches whose status has expired: at most ARGV[1] of those listed
-- in batches_expiry as due by the server's clock, then, in a walk of at most ARGV[2] entries of the
-- index from rank ARGV[3], any entry whose batch hash is gone by another way (completed before
-- batches_expiry existed, deleted by hand). O(log n + ARGV[1] + ARGV[2]) a call, whatever the index
-- holds.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] batches index; KEYS[2] batches_expiry
-- ARGV[1] most due entries to remove; ARGV[2] most entries of the index to check (0: no walk);
--   ARGV[3] the rank to walk the index from; ARGV[4] the prefix of batch keys
--
-- Returns {entries removed, the rank to walk from next time (0 once the walk reached the end)}.

local now = tonumber(redis.call('time')[1])
local budget, walk = tonumber(ARGV[1]), tonumber(ARGV[2])
local removed = 0
local due = redis.call('zrangebyscore', KEYS[2], '-inf', now, 'LIMIT', 0, budget)
if #due > 0 then
  redis.call('zrem', KEYS[1], unpack(due))
  removed = redis.call('zrem', KEYS[2], unpack(due))
end
local start = tonumber(ARGV[3])
if walk <= 0 then return {removed, start} end
local ids = redis.call('zrange', KEYS[1], start, start + walk - 1)
local gone = {}
for _, id in ipairs(ids) do
  if redis.call('exists', ARGV[4] .. id) == 0 then gone[#gone + 1] = id end
end
if #gone > 0 then
  removed = removed + redis.call('zrem', KEYS[1], unpack(gone))
  redis.call('zrem', KEYS[2], unpack(gone))
end
local nextStart = start + #ids - #gone
if #ids < walk then nextStart = 0 end
return {removed, nextStart}
