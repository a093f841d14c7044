-- Creates or replaces schedules, each atomically: a schedule whose definition is unchanged is left as
-- it is (its next and last ticks, whether it is paused), so setting the same schedules again, as
-- every deploy may, changes nothing. A changed definition replaces the old one and keeps its last
-- tick and pause; its next tick must come after that last tick, so no tick is enqueued twice: when
-- it does not, the schedule is left alone and its last tick returned, for the caller to compute the
-- next tick after it and ask again. Each written schedule not paused enters its bucket of the due
-- index, and the bucket's score in schedules:due is lowered to it if it is earlier; when that makes
-- a schedule due sooner than any before, its due time is published on the due channel, so pools wake
-- for it. A claim holding the bucket of a schedule replaced, or of one created that was in the index
-- already (a claim found it without a record), loses its token (scheduleUnclaim): its commit writes
-- nothing of the bucket, whose schedules are claimed again as they now are. A schedule new to the
-- index was in no claim, so creating schedules in bulk reads no token.
--
-- keys: 2
-- uses: keychecks, schedules
--
-- KEYS[1] schedules hash; KEYS[2] schedules:due
-- ARGV[1] the buckets' key prefix (<ns>:schedules:due:); ARGV[2] the due channel
-- ARGV[3+4(i-1)..6+4(i-1)] schedule i: ID, bucket, record as a new schedule's (its last tick 0, not
--   paused), due (epoch second its next tick is due, jitter included; "" when it has none)
--
-- Returns, per schedule: "c" created, "r" replaced, "u" unchanged, or the epoch second of its last
-- tick (not written: its next tick must come after it).

local H, top, bucketPrefix, channel = KEYS[1], KEYS[2], ARGV[1], ARGV[2]
-- Lowering a bucket's score takes ZADD with LT, and breaking a claim's token ZMSCORE (Redis 6.2,
-- miniredis v2.30.3): a server without them refuses these calls, which change nothing (XX, and no
-- member is ever ""), before anything is written.
local NEEDS = 'what schedules need (ZADD with LT, ZMSCORE: Redis 6.2, miniredis v2.30.3)'
wrongType(pcallReply('zadd', top, 'XX', 'LT', 0, ''), NEEDS)
wrongType(pcallReply('zmscore', top, ''), NEEDS)
local n = (#ARGV - 2) / 4
local ids = {}
for i = 1, n do ids[i] = ARGV[3 + 4 * (i - 1)] end
local olds = {}
for i = 1, n, 1000 do
  local r = redis.call('hmget', H, unpack(ids, i, math.min(n, i + 999)))
  for j = 1, #r do olds[i + j - 1] = r[j] end
end
local first = redis.call('zrange', top, 0, 0, 'WITHSCORES')
local earliest = tonumber(first[2])
local out, hset, lower, written = {}, {}, {}, {}
local soonest
for i = 1, n do
  local a = 3 + 4 * (i - 1)
  local id, b, rec, due = ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3]
  local old, paused, status = olds[i], false, 'c'
  if old then
    local _, ol, of, odef = scheduleHead(old)
    local nxt, _, _, def = scheduleHead(rec)
    status = 'r'
    if odef == def then
      status = 'u'
    elseif odef then
      paused = of == '1'
      rec = scheduleRecord(nxt, ol, of, def)
      if tonumber(nxt) ~= 0 and tonumber(nxt) <= tonumber(ol) then status = ol end
    end
  end
  out[i] = status
  if status == 'c' or status == 'r' then
    hset[#hset + 1] = id
    hset[#hset + 1] = rec
    if not paused and due ~= '' then
      -- A schedule already in the index may be held by a claim: one replaced, or one the claim
      -- found without a record.
      if redis.call('zadd', bucketPrefix .. b, due, id) == 0 or status == 'r' then written[#written + 1] = b end
      lower[#lower + 1] = due
      lower[#lower + 1] = b
      local d = tonumber(due)
      if not soonest or d < soonest then soonest = d end
    else
      if redis.call('zrem', bucketPrefix .. b, id) == 1 or status == 'r' then written[#written + 1] = b end
    end
  end
end
for i = 1, #hset, 1000 do redis.call('hset', H, unpack(hset, i, math.min(#hset, i + 999))) end
scheduleUnclaim(top, written)
-- NX adds the buckets not in the index, LT lowers those that are: LT alone would do both, but
-- miniredis before v2.30.4 never adds a member with it.
for i = 1, #lower, 1000 do
  local part = {unpack(lower, i, math.min(#lower, i + 999))}
  redis.call('zadd', top, 'NX', unpack(part))
  redis.call('zadd', top, 'LT', unpack(part))
end
if soonest and (not earliest or soonest < earliest) then redis.call('publish', channel, soonest) end
return out
