-- Claims the schedules that are due, for the caller to compute their ticks and commit them
-- (schedule_commit.lua): it takes the buckets of schedules:due whose score is due, and from each its
-- due schedules with their records, and leases the bucket (its score moves lease seconds ahead) so
-- that other pools claim other buckets meanwhile; the commit gives the bucket its real score back. A
-- pool that dies holding a lease delays those schedules by the lease: another pool claims them once
-- it ends. A bucket whose score was a stale lower bound (its schedules were deleted, paused or moved
-- later) gets its real score, or leaves schedules:due when empty.
--
-- The lease's score is also the claim's token: the lease's last second, and the claim's microsecond
-- (TIME's, never 0) as six decimals, so that a claim at the lease's end takes the bucket. Every other
-- write of a schedule a claim may hold writes its bucket's score in schedules:due without decimals
-- (another claim, a commit, schedule_set.lua, schedule_control.lua), so a commit that finds its
-- token still there knows that nothing it claimed changed since, and compares no record: each tick
-- is committed once whoever claimed it.
--
-- The reply holds what the caller plans with and nothing else: a bucket once for all its schedules,
-- no due scores (the record holds the tick), each record once.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] schedules hash; KEYS[2] schedules:due
-- ARGV[1] the buckets' key prefix (<ns>:schedules:due:); ARGV[2] the time to claim at, epoch
--   seconds ("": the server's clock); ARGV[3] lease seconds; ARGV[4] at most this many schedules;
--   ARGV[5] at most this many buckets looked at
--
-- Returns {now, earliest score left in schedules:due (-1: none), the number of buckets claimed, the
-- token (the leased buckets' score, as text), then per bucket: bucket, n, then its n IDs; then the
-- records of all those IDs in the same order (false when the ID has no record)}; a bucket whose key
-- holds another type is returned as bucket, -1 (no IDs), and left for a minute.

local H, top, bucketPrefix = KEYS[1], KEYS[2], ARGV[1]
local clock = redis.call('time')
local now = tonumber(ARGV[2]) or tonumber(clock[1])
local lease, most, budget = tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
-- Numbers go to Redis as text made once: Lua formats a number for each call it is passed to.
local usec = tonumber(clock[2]) % 1000000
if usec == 0 then usec = 1 end
-- The token: the lease's last second, and the claim's microsecond; the lease ends at now + lease.
local nowText, leaseAt = tostring(now), string.format('%d.%06d', now + lease - 1, usec)
local out, no = {now, -1, 0, leaseAt}, 4
local nbuckets, got, looked = 0, 0, 0
-- The IDs claimed, in the order of the reply: their records are read in a few calls at the end.
local ids, ni = {}, 0
while got < most and looked < budget do
  local buckets = redis.call('zrangebyscore', top, '-inf', nowText, 'LIMIT', '0', math.min(100, budget - looked))
  if #buckets == 0 then break end
  local leased, nl = {}, 0
  for _, b in ipairs(buckets) do
    looked = looked + 1
    local key = bucketPrefix .. b
    local due = redis.pcall('zrangebyscore', key, '-inf', nowText, 'LIMIT', '0', '1000')
    if due.err then
      redis.call('zadd', top, now + 60, b)
      out[no + 1], out[no + 2] = b, -1
      no, nbuckets = no + 2, nbuckets + 1
    elseif #due == 0 then
      local m = redis.call('zrange', key, '0', '0', 'WITHSCORES')
      if m[2] then redis.call('zadd', top, m[2], b) else redis.call('zrem', top, b) end
    else
      leased[nl + 1], leased[nl + 2] = leaseAt, b
      nl = nl + 2
      local n = #due
      out[no + 1], out[no + 2] = b, n
      no, nbuckets = no + 2, nbuckets + 1
      for i = 1, n do
        out[no + i] = due[i]
        ids[ni + i] = due[i]
      end
      no, ni, got = no + n, ni + n, got + n
    end
    if got >= most then break end
  end
  -- Leased now, so that the next round of this loop does not see these buckets due again.
  if nl > 0 then redis.call('zadd', top, unpack(leased, 1, nl)) end
end
out[3] = nbuckets
for i = 1, ni, 1000 do
  local recs = redis.call('hmget', H, unpack(ids, i, math.min(ni, i + 999)))
  for j = 1, #recs do out[no + j] = recs[j] end
  no = no + #recs
end
local first = redis.call('zrange', top, '0', '0', 'WITHSCORES')
if first[2] then out[2] = tonumber(first[2]) end
return out
