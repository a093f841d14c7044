-- Commits what the caller made of claimed schedules (schedule_claim.lua), each only if nothing of it
-- changed since the claim: the compare-and-set that makes each tick enqueued once, whatever the
-- number of pools, leases run out or replies lost. A run of a firing claim carries the claim's token
-- and is committed whole if its bucket's score in schedules:due is still that token (nothing of the
-- bucket was written since: see schedule_claim.lua), else not at all; a run without a token (a
-- Client's change of one schedule, which claims nothing) carries each schedule's record as it read
-- it, and a schedule is committed if its record is still that one. For a schedule committed, it
-- enqueues the tick's job (as enqueue_due.lua moves a due job: a keyed job to the back of its key's
-- queue or to the lane, never refused for the key's cap), writes its new record and moves it in the
-- due index, all or nothing. A schedule whose job cannot be queued (its queue key holds another
-- type) is left as it was and due again in a minute. Then each bucket of the commit gets its real
-- score in schedules:due (ending the claim's lease, or another claim's whose token it breaks), or
-- leaves it when empty.
--
-- A commit carries hundreds of ticks: its loop over them creates no table per tick and calls
-- Redis only for a keyed job's own queue (not for one that goes to the lane); everything else is
-- gathered into a few calls per job name.
-- Schedules come in runs of one bucket (as the claim returns them), the bucket named once a run.
--
-- keys: 3
-- uses: keychecks, keyed
--
-- KEYS[1] schedules hash; KEYS[2] schedules:due; KEYS[3] known_jobs
-- ARGV[1] the buckets' key prefix (<ns>:schedules:due:); ARGV[2] the namespace's prefix (<ns>:);
--   ARGV[3] wake-up channel; ARGV[4] the time of the claim, epoch seconds
-- ARGV[5..] runs of schedules of one bucket: the bucket, the number of schedules n, the claim's
--   token ("": none, the records are compared), then 7 fields a schedule: ID, the record read
--   (compared without a token; "": none), its new record ("": left as it is), its new due score
--   ("": out of the due index), then the job to enqueue: job name ("": none), key ("": none),
--   payload (for a keyed job, its in-progress entry "<key>\n<payload>", which is also its lane member)
--
-- Returns {committed, stale (their bucket or record changed since the claim), refused (their queue
-- key holds another type), the earliest score left in schedules:due (-1: none)}.

local H, top, known = KEYS[1], KEYS[2], KEYS[3]
local bucketPrefix, prefix, channel, now = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])
local argc = #ARGV
-- The runs' tokens checked first: runs[r] is false for a run whose bucket changed since its claim.
-- ids and at: the IDs of the runs without a token, and the index of each among all schedules.
-- held[token][bucket]: the buckets whose score is still the token, read once a token (a commit
-- normally carries one claim's): members read by score, whose text Redis does not format.
local runs, held, nruns = {}, {}, 0
local ids, at, nids = {}, {}, 0
local a, n = 5, 0
while a <= argc do
  local c, token = tonumber(ARGV[a + 1]), ARGV[a + 2]
  nruns = nruns + 1
  if token ~= '' then
    local h = held[token]
    if not h then
      h = {}
      for _, b in ipairs(redis.call('zrangebyscore', top, token, token)) do h[b] = true end
      held[token] = h
    end
    runs[nruns] = h[ARGV[a]] == true
  else
    runs[nruns] = true
    for j = 0, c - 1 do
      nids = nids + 1
      ids[nids], at[nids] = ARGV[a + 3 + 7 * j], n + j + 1
    end
  end
  n, a = n + c, a + 3 + 7 * c
end
local curs = {}
for i = 1, nids, 1000 do
  local r = redis.call('hmget', H, unpack(ids, i, math.min(nids, i + 999)))
  for j = 1, #r do curs[at[i + j - 1]] = r[j] or '' end
end
-- The keys of each job name's keyed jobs, once each (seenOf[name]: key -> its index), and whether a
-- key gets more than one job, for the lane's plan (lanePlan). Runs refused are left out.
local keysOf, manyOf, seenOf = {}, {}, {}
a = 5
for r = 1, nruns do
  local c = tonumber(ARGV[a + 1])
  a = a + 3
  for j = 0, (runs[r] and c or 0) - 1 do
    local f = a + 7 * j
    local name, K = ARGV[f + 4], ARGV[f + 5]
    if name ~= '' and K ~= '' then
      local seen = seenOf[name]
      if not seen then
        seen = {}
        seenOf[name], keysOf[name], manyOf[name] = seen, {}, {}
      end
      local at = seen[K]
      if at then
        manyOf[name][at] = true
      else
        local l = keysOf[name]
        l[#l + 1] = K
        seen[K] = #l
      end
    end
  end
  a = a + 7 * c
end
local committed, stale, refused = 0, 0, 0
-- What to write: the records; per job name its plain jobs, or its keyed state and the keys pushed;
-- per bucket run the schedules to add (score, ID) and to remove; the buckets' real scores.
local hset, nh = {}, 0
local plain, keyed, names, nn = {}, {}, {}, 0
local topAdd, nta, topRem, ntr = {}, 0, {}, 0
-- commitOne commits schedule i, whose fields start at ARGV[a], into the writes gathered, the
-- bucket's among them (add, rem); it returns the bucket's new counts.
local function commitOne(i, a, add, na, rem, nr)
  local id = ARGV[a]
  local cur = curs[i]
  if cur and cur ~= ARGV[a + 1] then
    stale = stale + 1
    return na, nr
  end
  local name, ok = ARGV[a + 4], true
  if name ~= '' then
    local K = ARGV[a + 5]
    if K == '' then
      local g = plain[name]
      if g == nil then
        g = isType(prefix .. 'jobs:' .. name, 'list') and {n = 0}
        plain[name] = g
        if g then
          nn = nn + 1
          names[nn] = name
        end
      end
      if g then
        g.n = g.n + 1
        g[g.n] = ARGV[a + 6]
      else
        ok = false
      end
    else
      local g = keyed[name]
      if g == nil then
        local k = keyedKeys(prefix .. 'keyed:' .. name .. ':')
        g = keyedTypesOK(k) and
          {k = k, backlog = {}, nb = 0, fresh = {}, nf = 0, total = 0, add = {}, na = 0, set = {}, ns = 0}
        keyed[name] = g
        if g then
          local m = redis.call('hmget', k.meta, 'vt', 'counts', 'limits', 'seq')
          g.vt, g.seq = tonumber(m[1] or '') or 0, tonumber(m[4] or '') or 0
          local spill
          g.plan, spill = lanePlan(k, keysOf[name], m[2], m[3], manyOf[name])
          -- A key's job in the lane goes to its queue ahead of the new ones, with a turn.
          local moved, lens = laneSpill(k, spill)
          for i, mk in ipairs(moved) do
            g.backlog[g.nb + 1], g.backlog[g.nb + 2] = lens[i], mk
            g.nb, g.nf = g.nb + 2, g.nf + 1
            g.fresh[g.nf] = mk
          end
          nn = nn + 1
          names[nn] = name
        end
      end
      local lane = g and g.plan[K]
      -- The push itself tells a queue key of another type: nothing is written then.
      local len = g and not lane and redis.pcall('lpush', g.k.p .. '{' .. K .. '}', string.sub(ARGV[a + 6], #K + 2))
      if lane then
        g.na, g.ns, g.seq = laneAdd(K, ARGV[a + 6], g.vt, g.seq, g.add, g.na, g.set, g.ns)
        g.total = g.total + 1
      elseif type(len) == 'number' then
        local bl = g.backlog
        -- Text, as Redis takes it: Lua would format the number on each call.
        bl[g.nb + 1], bl[g.nb + 2] = len == 1 and '1' or tostring(len), K
        g.nb, g.total = g.nb + 2, g.total + 1
        if len == 1 then
          g.nf = g.nf + 1
          g.fresh[g.nf] = K
        end
      else
        ok = false
      end
    end
  end
  if not ok then
    refused = refused + 1
    add[na + 1], add[na + 2] = now + 60, id
    return na + 2, nr
  end
  committed = committed + 1
  local rec, due = ARGV[a + 2], ARGV[a + 3]
  if rec ~= '' then
    hset[nh + 1], hset[nh + 2] = id, rec
    nh = nh + 2
  end
  if due == '' then
    rem[nr + 1] = id
    return na, nr + 1
  end
  add[na + 1], add[na + 2] = due, id
  return na + 2, nr
end
local i = 0
a = 5
for r = 1, nruns do
  local b, c = ARGV[a], tonumber(ARGV[a + 1])
  a = a + 3
  local add, na, rem, nr = {}, 0, {}, 0
  if runs[r] then
    for _ = 1, c do
      i = i + 1
      na, nr = commitOne(i, a, add, na, rem, nr)
      a = a + 7
    end
  else
    stale, i, a = stale + c, i + c, a + 7 * c
  end
  -- The bucket's writes, and its real score for schedules:due.
  local key = bucketPrefix .. b
  for j = 1, na, 2000 do redis.call('zadd', key, unpack(add, j, math.min(na, j + 1999))) end
  for j = 1, nr, 1000 do redis.call('zrem', key, unpack(rem, j, math.min(nr, j + 999))) end
  local m = redis.call('zrange', key, '0', '0', 'WITHSCORES')
  if m[2] then
    topAdd[nta + 1], topAdd[nta + 2] = m[2], b
    nta = nta + 2
  else
    ntr = ntr + 1
    topRem[ntr] = b
  end
end
for i = 1, nh, 2000 do redis.call('hset', H, unpack(hset, i, math.min(nh, i + 1999))) end
for i = 1, nta, 2000 do redis.call('zadd', top, unpack(topAdd, i, math.min(nta, i + 1999))) end
for i = 1, ntr, 1000 do redis.call('zrem', top, unpack(topRem, i, math.min(ntr, i + 999))) end
for j = 1, nn do
  local name = names[j]
  local p, g = plain[name], keyed[name]
  if (p and p.n > 0) or (g and g.total > 0) then redis.call('sadd', known, name) end
  if p and p.n > 0 then
    local q = prefix .. 'jobs:' .. name
    for i = 1, p.n, 1000 do redis.call('lpush', q, unpack(p, i, math.min(p.n, i + 999))) end
    redis.call('publish', channel, name)
  end
  if g and (g.total > 0 or g.nb > 0) then
    local k = g.k
    laneWrite(k, name, channel, g.add, g.na, g.set, g.ns, g.seq)
    for i = 1, g.nb, 2000 do redis.call('zadd', k.waiting, unpack(g.backlog, i, math.min(g.nb, i + 1999))) end
    redis.call('hincrby', k.meta, 'waiting', g.total)
    keyedReadyMany(k, g.fresh, name, channel)
  end
end
local first = redis.call('zrange', top, '0', '0', 'WITHSCORES')
return {committed, stale, refused, tonumber(first[2]) or -1}
