-- Claims the schedules that are due, for the caller to compute their ticks and commit them
-- (schedule_commit.lua): it takes the buckets of schedules:due whose score is due, and from each its
-- due schedules with their records, and leases the bucket (its score moves lease seconds ahead) so
-- that other pools claim other buckets meanwhile; the commit gives the bucket its real score back. A
-- pool that dies holding a lease delays those schedules by the lease: another pool claims them once
-- it ends. A bucket whose score was a stale lower bound (its schedules were deleted, paused or moved
-- later) gets its real score, or leaves schedules:due when empty. The lease only spares work: a
-- schedule's commit succeeds once per tick whoever claimed it.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] schedules hash; KEYS[2] schedules:due
-- ARGV[1] the buckets' key prefix (<ns>:schedules:due:); ARGV[2] the time to claim at, epoch
--   seconds ("": the server's clock); ARGV[3] lease seconds; ARGV[4] at most this many schedules;
--   ARGV[5] at most this many buckets looked at
--
-- Returns {now, earliest score left in schedules:due (-1: none), then per schedule claimed: bucket,
-- ID, due score, record (false when the ID has no record)}; a bucket whose key holds another type is
-- returned as bucket, false, 0, false, and left for a minute.

local H, top, bucketPrefix = KEYS[1], KEYS[2], ARGV[1]
local now = tonumber(ARGV[2]) or tonumber(redis.call('time')[1])
local lease, most, budget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local out = {now, -1}
local got, looked = 0, 0
-- The schedules claimed (bucket, ID, score), and the leases to write: gathered first, so that the
-- records are read and the leases written in a few calls whatever the number of buckets.
local bs, ids, scores, leases = {}, {}, {}, {}
while got < most and looked < budget do
  local buckets = redis.call('zrangebyscore', top, '-inf', now, 'LIMIT', 0, math.min(100, budget - looked))
  if #buckets == 0 then break end
  local leased = {}
  for _, b in ipairs(buckets) do
    looked = looked + 1
    local key = bucketPrefix .. b
    local due = redis.pcall('zrangebyscore', key, '-inf', now, 'WITHSCORES', 'LIMIT', 0, 1000)
    if due.err then
      redis.call('zadd', top, now + 60, b)
      for _, v in ipairs({b, false, 0, false}) do out[#out + 1] = v end
    elseif #due == 0 then
      local m = redis.call('zrange', key, 0, 0, 'WITHSCORES')
      if m[2] then redis.call('zadd', top, m[2], b) else redis.call('zrem', top, b) end
    else
      leased[#leased + 1] = now + lease
      leased[#leased + 1] = b
      for i = 1, #due, 2 do
        bs[#bs + 1], ids[#ids + 1], scores[#scores + 1] = b, due[i], due[i + 1]
      end
      got = got + #due / 2
    end
    if got >= most then break end
  end
  -- Leased now, so that the next round of this loop does not see these buckets due again.
  if #leased > 0 then redis.call('zadd', top, unpack(leased)) end
end
for i = 1, #ids, 1000 do
  local recs = redis.call('hmget', H, unpack(ids, i, math.min(#ids, i + 999)))
  for j = 1, #recs do
    local k = i + j - 1
    out[#out + 1] = bs[k]
    out[#out + 1] = ids[k]
    out[#out + 1] = scores[k]
    out[#out + 1] = recs[j]
  end
end
local first = redis.call('zrange', top, 0, 0, 'WITHSCORES')
if first[2] then out[2] = tonumber(first[2]) end
return out
