-- Commits what the caller made of claimed schedules (schedule_claim.lua), each only if its record is
-- still the one claimed: the compare-and-set that makes each tick enqueued once, whatever the number
-- of pools, leases run out or replies lost. For a schedule whose record stands, it enqueues the
-- tick's job (as enqueue_due.lua moves a due job: a keyed job to the back of its key's queue, never
-- refused for the key's cap), writes its new record and moves it in the due index, all or nothing. A
-- schedule whose job cannot be queued (its queue key holds another type) is left as it was and due
-- again in a minute. Then each bucket written gets its real score in schedules:due (ending the claim's
-- lease), or leaves it when empty.
--
-- keys: 3
-- uses: keychecks, keyed
--
-- KEYS[1] schedules hash; KEYS[2] schedules:due; KEYS[3] known_jobs
-- ARGV[1] the buckets' key prefix (<ns>:schedules:due:); ARGV[2] the namespace's prefix (<ns>:);
--   ARGV[3] wake-up channel; ARGV[4] the time of the claim, epoch seconds
-- ARGV[5+8(i-1)..12+8(i-1)] schedule i: ID, bucket, the record claimed ("": none), its new record
--   ("": left as it is), its new due score ("": out of the due index), then the job to enqueue: job
--   name ("": none), key ("": none), payload
--
-- Returns {committed, stale (their record changed since the claim), refused (their queue key holds
-- another type), the earliest score left in schedules:due (-1: none)}.

local H, top, known = KEYS[1], KEYS[2], KEYS[3]
local bucketPrefix, prefix, channel, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local n = (#ARGV - 4) / 8
local committed, stale, refused = 0, 0, 0
local ids = {}
for i = 1, n do ids[i] = ARGV[5 + 8 * (i - 1)] end
local curs = {}
for i = 1, n, 1000 do
  local r = redis.call('hmget', H, unpack(ids, i, math.min(n, i + 999)))
  for j = 1, #r do curs[i + j - 1] = r[j] end
end
-- What to write, gathered so that each key is written in a few calls: the records, per bucket the
-- schedules to add (score, ID) and to remove, per job name its jobs.
local hset = {}
local buckets, byBucket = {}, {}
local byName, names = {}, {} -- job name -> {plain payloads, keyed: key -> payloads, keys in order}
-- Per job name: whether its queue is a list (plain jobs); its keyed keys, or false when one of them
-- holds another type (keyed jobs). Looked up once per name, not per tick: a key's own queue is then
-- one TYPE.
local okName, fam = {}, {}
for i = 1, n do
  local a = 5 + 8 * (i - 1)
  local id, b, claimed, rec, due, name, K, payload =
    ARGV[a], ARGV[a + 1], ARGV[a + 2], ARGV[a + 3], ARGV[a + 4], ARGV[a + 5], ARGV[a + 6], ARGV[a + 7]
  local bk = byBucket[b]
  if not bk then
    bk = {add = {}, rem = {}}
    byBucket[b] = bk
    buckets[#buckets + 1] = b
  end
  if (curs[i] or '') ~= claimed then
    stale = stale + 1
  else
    local ok = true
    if name ~= '' then
      if K == '' then
        if okName[name] == nil then okName[name] = isType(prefix .. 'jobs:' .. name, 'list') end
        ok = okName[name]
      else
        local k = fam[name]
        if k == nil then
          k = keyedKeys(prefix .. 'keyed:' .. name .. ':')
          if not keyedTypesOK(k) then k = false end
          fam[name] = k
        end
        ok = k and isType(keyedQueue(k, K), 'list')
      end
    end
    if not ok then
      refused = refused + 1
      bk.add[#bk.add + 1] = now + 60
      bk.add[#bk.add + 1] = id
    else
      committed = committed + 1
      if name ~= '' then
        local g = byName[name]
        if not g then
          g = {plain = {}, keyed = {}, keys = {}}
          byName[name] = g
          names[#names + 1] = name
        end
        if K == '' then
          g.plain[#g.plain + 1] = payload
        else
          if not g.keyed[K] then
            g.keyed[K] = {}
            g.keys[#g.keys + 1] = K
          end
          local q = g.keyed[K]
          q[#q + 1] = payload
        end
      end
      if rec ~= '' then
        hset[#hset + 1] = id
        hset[#hset + 1] = rec
      end
      if due ~= '' then
        bk.add[#bk.add + 1] = due
        bk.add[#bk.add + 1] = id
      else
        bk.rem[#bk.rem + 1] = id
      end
    end
  end
end
for i = 1, #hset, 1000 do redis.call('hset', H, unpack(hset, i, math.min(#hset, i + 999))) end
local topAdd, topRem = {}, {}
for _, b in ipairs(buckets) do
  local key, bk = bucketPrefix .. b, byBucket[b]
  for i = 1, #bk.add, 1000 do redis.call('zadd', key, unpack(bk.add, i, math.min(#bk.add, i + 999))) end
  for i = 1, #bk.rem, 1000 do redis.call('zrem', key, unpack(bk.rem, i, math.min(#bk.rem, i + 999))) end
  local m = redis.call('zrange', key, 0, 0, 'WITHSCORES')
  if m[2] then
    topAdd[#topAdd + 1] = m[2]
    topAdd[#topAdd + 1] = b
  else
    topRem[#topRem + 1] = b
  end
end
for i = 1, #topAdd, 1000 do redis.call('zadd', top, unpack(topAdd, i, math.min(#topAdd, i + 999))) end
for i = 1, #topRem, 1000 do redis.call('zrem', top, unpack(topRem, i, math.min(#topRem, i + 999))) end
for _, name in ipairs(names) do
  local g = byName[name]
  redis.call('sadd', known, name)
  if #g.plain > 0 then
    local q = prefix .. 'jobs:' .. name
    for i = 1, #g.plain, 1000 do redis.call('lpush', q, unpack(g.plain, i, math.min(#g.plain, i + 999))) end
    redis.call('publish', channel, name)
  end
  if #g.keys > 0 then
    local payloads, groups = {}, {}
    for _, K in ipairs(g.keys) do
      local from = #payloads + 1
      for _, p in ipairs(g.keyed[K]) do payloads[#payloads + 1] = p end
      groups[#groups + 1] = {K, from, #payloads}
    end
    keyedPushMany(fam[name], name, groups, payloads, channel)
  end
end
local first = redis.call('zrange', top, 0, 0, 'WITHSCORES')
return {committed, stale, refused, tonumber(first[2]) or -1}
