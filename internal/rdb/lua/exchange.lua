-- The pool's one round trip on the hot path: records the outcomes of finished jobs, then moves jobs
-- from the candidate queues into this pool's in-progress lists. Recording first frees concurrency
-- slots the fetch may then use; a call with no outcomes only fetches, a call that asks for no jobs
-- only records.
--
-- keys: varies
-- uses: keychecks, keyed, workflow
-- loads: keyed, workflow
--
-- A job's outcome is acted on only while the job is still in the in-progress list, so an outcome
-- written twice (its reply was lost and the pool wrote it again) or after a reaper put the job back
-- changes nothing. The concurrency counters (lock, lock_info) are kept for limited queues only: a
-- queue without a MaxConcurrency is never gated by them.
--
-- A rate limit of L jobs per P milliseconds is a GCRA over the queue's rate key, which holds the
-- theoretical arrival time in ms (server clock): a burst of L, then one every P/L ms.
--
-- The call names groups (the queues it fetches from or records outcomes for), numbered g = 1..G in
-- the order given. The groups' keys follow one another in KEYS, their fields in ARGV; each kind of
-- group has its own fields. A group is a job name's queue ('q'), or its keyed jobs ('k': the jobs of
-- the name's keys, taken key by key in turn by keyedTake, lib/keyed.lua), whose in-progress entries
-- are "<key>\n<payload>"; the name's paused flag, MaxConcurrency and RateLimit hold over both.
--
-- KEYS[1] retry set; KEYS[2] dead set; KEYS[3] scheduled set; then the keys of each group in turn
--   (7 keys):
--   q: jobs list, this pool's in-progress list, paused flag, lock counter, lock_info hash,
--     max_concurrency, rate state
--   k: the name's ready keys (sorted set), this pool's keyed in-progress list, then as for q
-- ARGV[1] pool ID; ARGV[2] wake-up channel (<ns>:wake); ARGV[3] G, the number of groups; ARGV[4] the groups'
--   kinds, a character each ("" when every group is a q); ARGV[5] the hand-offs the pool has read
--   (see handed below); ARGV[6] the pool's room, the most jobs it would hold more than it holds now
--   (see handoffTo below); then the fields of each group in turn:
--   q: job name, "1" when the pool counts it against a MaxConcurrency ("h" when it has neither a
--     MaxConcurrency nor a rate limit and the pool waits for hand-offs of it: a fetch that finds
--     the queue empty, and an outcome recorded for it in a call that does not fetch from it (the
--     Go side sends "0" instead when the pool's last fetch left jobs in it), add the pool to
--     <ns>:idle_pools:<name>,
--     named from the wake-up channel's prefix; see hand_off.lua), share (jobs to fetch from
--     it; -1: not a candidate), rate limit jobs and period in ms (0 0: none) (5 fields)
--   k: as for q, then the name's keyed prefix (<ns>:keyed:<name>:), its per-key defaults:
--     KeyConcurrency (0: none), KeyRateLimit jobs and period in ms, and "1" when a job that goes
--     to the retry set keeps its key's slot (KeyRetryInOrder; its member says "key_hold":true),
--     the worker_pools set (whose pools' keyed in-progress lists a recount of the running keys
--     reads, lib/keyed.lua) (11 fields)
--   Candidates are tried in the order given; what a queue cannot give passes to the next ones, so a
--   candidate with a share of 0 may still give jobs.
-- ARGV then outcomes, each an op code and its arguments, to the end of ARGV (g is a group number):
--   A g n p1..pn   n jobs of group g done, by their in-progress entries (a keyed group's name
--                  their keys, read only when the name keeps its keys' running counts)
--   R|D|S g p score member   move job p to the retry, dead or scheduled set as member
--   Q g p          put job p back at the fetch end of its queue
--   X g kind p score member prefix id batch keep tracked ukey err result attempts
--                  job p with workflow state: the move of kind (A, F for dropped, R, D, S or Q),
--                  then, once it is final (A, F, D), its record (kept keep seconds; 0 and not
--                  tracked: none), the jobs waiting for it (tracked), its batch's counters and
--                  callbacks, and the deletion of its unique lock ukey ("" none); see lib/workflow.lua
--   T key ttl n field1 count1 .. fieldn countn   add counts to a per-minute stats hash
--   C key          add one to the counter key (<ns>:quiet:<pool>): the call was sent without a
--                  reply, and the pool reads the counter back to learn that its calls ran (quiet.go)
--
-- Returns {done, status[1..G], counts[1..G], handed, jobs...} (handed: the hand-offs made to the
-- pool so far, <ns>:handoffs:<pool>), one flat array (Redis turns each table of a
-- reply into a reply of its own, with lookups that cost a small fetch more than its commands): done
-- has a character per job of the A, R, D, S, Q and X ops, in order: '1' recorded, '0' no longer
-- held, 'e' a destination holds the wrong type (the job stays in the in-progress list, from where
-- the pool's sweep, its stop or a reaper puts it back);
-- status[g] is 1 when group g gave what was asked (it may hold more), 0 when it ran out, -1 paused,
-- -2 at its concurrency limit, -3 not a candidate, -4 past its rate limit, -5 a key of the wrong
-- type, -6 keyed jobs on a server that lacks what they need (RPOP with a count); counts[g] the jobs
-- taken from it; jobs the payloads, grouped by group in order (oldest first).

local pool, channel, G = ARGV[1], ARGV[2], tonumber(ARGV[3])
-- The namespace's prefix ("<ns>:"), read off the wake-up channel ("<ns>:wake").
local nsPrefix = string.sub(channel, 1, #channel - 4)
local NOW
local function serverNow()
  if not NOW then NOW = tonumber(redis.call('time')[1]) end
  return NOW
end

-- Where each group's keys and fields start: keyAt[g] in KEYS, argAt[g] in ARGV. A group's keys
-- and fields sit at fixed offsets from those starts, named below for a queue. Every group is a
-- queue today. A group of another kind will say so on the wire (at the least cost in one argument
-- that lists the kinds of all groups, rather than one more argument per group), get its own
-- offsets and its own branch in this loop, which then records each group's kind, and the code
-- below will branch on the kind where kinds differ.
local keyAt, argAt = {}, {}
-- A group's keys, from keyAt[g], then its fields, from argAt[g]; a keyed group's own fields follow.
local JOBS, INPROGRESS, PAUSED, LOCK, LOCK_INFO, MAX_CONCURRENCY, RATE = 0, 1, 2, 3, 4, 5, 6
local NAME, LIMITED, SHARE, RATE_JOBS, RATE_PERIOD = 0, 1, 2, 3, 4
local KEYED_PREFIX, KEY_LIMIT, KEY_RATE_JOBS, KEY_RATE_PERIOD, KEY_HOLD, KEY_POOLS = 5, 6, 7, 8, 9, 10
-- keyed[g] is the keyed state of a keyed group (keyedKeys), nil for a queue; released[g] counts the
-- jobs of each of its keys whose hold this call ended; holdOnRetry[g] says that its retries keep
-- their keys' slots.
local keyed, released, holdOnRetry = {}, {}, {}
local a = 7 -- the ARGV read next: the groups' fields, then the outcomes
do
  local k, kinds = 4, ARGV[4]
  for g = 1, G do
    keyAt[g], argAt[g] = k, a
    if string.byte(kinds, g) == 107 then -- 'k'
      ${loadKeyed} -- a call of queues alone makes none of the keyed helpers (see scripts.go)
      keyed[g], released[g] = keyedKeys(ARGV[a + KEYED_PREFIX]), {}
      holdOnRetry[g] = ARGV[a + KEY_HOLD] == '1'
      k, a = k + 7, a + 11
    else
      k, a = k + 7, a + 5
    end
  end
end

-- endKeyed notes that the hold on entry p ("<key>\n<payload>") of keyed group g ended; it returns the
-- key (nil for an entry of another form).
local function endKeyed(g, p)
  local i = string.find(p, '\n', 1, true)
  if not i or i == 1 then return nil end
  local K = string.sub(p, 1, i - 1)
  released[g][K] = (released[g][K] or 0) + 1
  return K
end

-- requeue puts job p of group g back at the fetch end of its queue (its key's, for a keyed group);
-- it returns false when the queue key holds another type.
local function requeue(g, jobs, p, name)
  if keyed[g] then
    local K = endKeyed(g, p)
    if not K then return false end
    local payload = string.sub(p, #K + 2)
    if keyedReturn(keyed[g], K, name, payload, channel) then return true end
    released[g][K] = released[g][K] - 1
    return false
  end
  local n = redis.pcall('rpush', jobs, p)
  if type(n) ~= 'number' then return false end
  if n == 1 then redis.call('publish', channel, name) end
  return true
end

-- ---- Outcomes ----

local done, ended = {}, {} -- ended[g]: the jobs of group g whose hold this call ended
local retrySet, deadSet, scheduledSet = KEYS[1], KEYS[2], KEYS[3]

-- endHold ends the hold on job p of a queue's in-progress list; it returns the LREM reply or nil on
-- a wrong-type key.
local function endHold(inprogress, p)
  local r = redis.pcall('lrem', inprogress, '-1', p)
  if type(r) ~= 'number' then return nil end
  return r
end

while a <= #ARGV do
  local op = ARGV[a]
  if op == 'A' then
    -- A g n p1..pn
    local g, n = tonumber(ARGV[a+1]), tonumber(ARGV[a+2])
    local inprogress, n_ended = KEYS[keyAt[g] + INPROGRESS], 0
    -- A keyed entry's key is cut out only for a name whose keys' running counts are kept (as
    -- keyedReleaseMany judges): the release lowers those counts, and has nothing to do otherwise.
    local byKey = keyed[g] and redis.pcall('hget', keyed[g].meta, 'counts') ~= '0'
    -- endHold, written out: this loop runs once per job done.
    for i = a + 3, a + 2 + n do
      local r = redis.pcall('lrem', inprogress, '-1', ARGV[i])
      if type(r) ~= 'number' then done[#done+1] = 'e'
      elseif r > 0 then
        done[#done+1] = '1'; n_ended = n_ended + 1
        if byKey then endKeyed(g, ARGV[i]) end
      else done[#done+1] = '0' end
    end
    if n_ended > 0 then ended[g] = (ended[g] or 0) + n_ended end
    a = a + 3 + n
  elseif op == 'C' then
    -- C key: count the call, one written without a reply (QuietConn, quiet.go)
    redis.pcall('incr', ARGV[a+1])
    a = a + 2
  elseif op == 'T' then
    -- T key ttl n field1 count1 .. fieldn countn
    local key, ttl, n = ARGV[a+1], ARGV[a+2], tonumber(ARGV[a+3])
    for i = a + 4, a + 2 + 2 * n, 2 do redis.pcall('hincrby', key, ARGV[i], ARGV[i+1]) end
    redis.pcall('expire', key, ttl)
    a = a + 4 + 2 * n
  else
    local g = tonumber(ARGV[a+1])
    local jobs, inprogress, name = KEYS[keyAt[g] + JOBS], KEYS[keyAt[g] + INPROGRESS], ARGV[argAt[g] + NAME]
    if op == 'Q' then
      -- Q g p
      local p = ARGV[a+2]
      local r = endHold(inprogress, p)
      if r and r > 0 then
        if not requeue(g, jobs, p, name) then
          redis.call('lpush', inprogress, p)
          done[#done+1] = 'e'
        else
          done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 3
    elseif op == 'X' then
      -- X g kind p score member prefix id batch keep tracked ukey err result attempts
      -- A job with workflow state: the move of its kind, then its batch, its record, the jobs
      -- waiting for it and its unique lock.
      ${loadWorkflow}
      local kind, p, score, member = ARGV[a+2], ARGV[a+3], ARGV[a+4], ARGV[a+5]
      local prefix, id, batch, keep, tracked = ARGV[a+6], ARGV[a+7], ARGV[a+8], tonumber(ARGV[a+9]), ARGV[a+10] == '1'
      local ukey, err, result, attempts = ARGV[a+11], ARGV[a+12], ARGV[a+13], ARGV[a+14]
      local r = endHold(inprogress, p)
      local ok = r and r > 0
      if ok and (kind == 'R' or kind == 'D' or kind == 'S') then
        local set = scheduledSet
        if kind == 'R' then set = retrySet elseif kind == 'D' then set = deadSet end
        if type(redis.pcall('zadd', set, score, member)) ~= 'number' then
          redis.call('lpush', inprogress, p)
          ok, r = false, nil
        end
      elseif ok and kind == 'Q' then
        if not requeue(g, jobs, p, name) then
          redis.call('lpush', inprogress, p)
          ok, r = false, nil
        end
      end
      if ok and keyed[g] and kind ~= 'Q' and not (kind == 'R' and holdOnRetry[g]) then endKeyed(g, p) end
      if ok then
        done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        local final = kind == 'A' or kind == 'F' or kind == 'D'
        local state = 'queued' -- S, Q
        if kind == 'A' then state = 'done' elseif kind == 'F' then state = 'dropped'
        elseif kind == 'D' then state = 'dead' elseif kind == 'R' then state = 'retrying' end
        local now = serverNow()
        if keep > 0 or tracked then
          record(prefix, id, name, state, final, attempts, pool, err, result, keep, batch, now)
        end
        if final and tracked then
          settle(prefix, prefix .. 'job:' .. id .. ':next', kind == 'A', 'job ' .. id .. ' ' .. state, now, channel)
        end
        if batch ~= '' then
          if kind ~= 'A' and kind ~= 'S' and kind ~= 'Q' then pc('hincrby', prefix .. 'batch:' .. batch, 'failed', 1) end
          if kind == 'A' then batchCount(prefix, batch, -1, now, channel)
          elseif final then batchCount(prefix, batch, WK - 1, now, channel) end
        end
        if final and ukey ~= '' then redis.call('del', ukey) end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 15
    else
      -- R|D|S g p score member
      local p, score, member = ARGV[a+2], ARGV[a+3], ARGV[a+4]
      local set = scheduledSet
      if op == 'R' then set = retrySet elseif op == 'D' then set = deadSet end
      local r = endHold(inprogress, p)
      if r and r > 0 then
        if type(redis.pcall('zadd', set, score, member)) ~= 'number' then
          redis.call('lpush', inprogress, p)
          done[#done+1] = 'e'
        else
          done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
          if keyed[g] and not (op == 'R' and holdOnRetry[g]) then endKeyed(g, p) end
        end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 5
    end
  end
end

-- waitFor registers the pool as one that waits for group g's jobs (hand_off.lua may then give it the
-- next job of an empty queue straight away): for a queue marked 'h' (no limit, no rate).
local idlePrefix = nsPrefix .. 'idle_pools:'
local registered = false -- whether this call added the pool to a name's idle set
local waiting = false -- whether the pool is in an idle set this call looked at (added now or before)
local function waitFor(g)
  if ARGV[argAt[g] + LIMITED] == 'h' and not keyed[g] then
    local added = redis.pcall('sadd', idlePrefix .. ARGV[argAt[g] + NAME], pool)
    if added == 1 then registered = true end
    if type(added) == 'number' then waiting = true end
  end
end

-- handoffTo writes, in the pool's heartbeat hash, the number of hand-offs up to which the pool has
-- room: those it has read (ARGV[5]) and its room (ARGV[6]) less the jobs this call fetched. A
-- hand-off that leaves the pool room keeps it in the name's idle set (hand_off.lua), so that under
-- a steady load the next job of the name is handed too, not pushed for a fetch: with the pool taken
-- off the set by every hand-off until its job's outcome was written, about a fifth of the jobs at
-- 5,000 a second went the fetch's way, and made most of the slowest pickups (benches/results). It
-- is written by the calls that add the pool to an idle set, and by those that fetch and find it in
-- one: fetches are what lower the pool's room while it is registered, besides the hand-offs, which
-- hand_off.lua counts. A fetch that adds the pool to no idle set, nor finds it in one (it left jobs
-- in every queue it took from), writes nothing, which spares pools working through a backlog a
-- write a take (5 % more commands a job for jobs of 1 ms, 14 % for jobs of 10 ms): should the pool
-- wait for another name meanwhile, its count is too high by the jobs fetched. A count too high (so too when the pool's
-- room shrank as its jobs grew longer) hands the pool a job it has no room for, which it puts
-- back. A call that finds the pool registered already and fetches nothing leaves the count as it
-- is, too low by the hand-offs read since: the pool then leaves the set early and the next outcome
-- written adds it back, which is one write of the count a streak rather than one a job.
local function handoffTo(took)
  local room = tonumber(ARGV[6]) or 0
  if registered or (waiting and took > 0 and room > 0) then
    local heartbeat = nsPrefix .. 'worker_pools:' .. pool
    redis.pcall('hset', heartbeat, 'handoff_to', (tonumber(ARGV[5]) or 0) + room - took)
  end
end

-- Release the concurrency slots of limited queues, waking pools that waited for one. A job that
-- ended registers the pool for hand-offs of its queue unless this call fetches from it: the fetch
-- registers it when it finds the queue empty, and a queue that still holds jobs hands none off.
for g, n in pairs(ended) do
  local k, f = keyAt[g], argAt[g]
  if tonumber(ARGV[f + SHARE]) <= 0 then waitFor(g) end
  if ARGV[f + LIMITED] == '1' then
    local lock, lockInfo, maxConcurrency = KEYS[k + LOCK], KEYS[k + LOCK_INFO], KEYS[k + MAX_CONCURRENCY]
    local held = redis.pcall('decrby', lock, n)
    if type(held) == 'number' and held < 0 then redis.call('set', lock, '0') end
    local left = redis.pcall('hincrby', lockInfo, pool, -n)
    if type(left) == 'number' and left <= 0 then redis.call('hdel', lockInfo, pool) end
    local max = intOf(maxConcurrency) or 0
    if max > 0 and type(held) == 'number' and held + n >= max then
      -- The slot may be taken by the name's own jobs or its keyed jobs: both are woken.
      redis.call('publish', channel, ARGV[f + NAME])
      redis.call('publish', channel .. ':keyed', ARGV[f + NAME])
    end
  end
end
-- Release the slots of keys; a key that was left out of ready at its limit, and has jobs waiting,
-- gets a turn again.
-- keyDefaults are a keyed group's per-key defaults, as keyedTake and keyedReleaseMany take them.
local function keyDefaults(f)
  return {limit = tonumber(ARGV[f + KEY_LIMIT]), rateJobs = tonumber(ARGV[f + KEY_RATE_JOBS]),
    ratePeriod = tonumber(ARGV[f + KEY_RATE_PERIOD]), hold = ARGV[f + KEY_HOLD] == '1',
    pools = ARGV[f + KEY_POOLS]}
end
for g, byKey in pairs(released) do
  if next(byKey) then keyedReleaseMany(keyed[g], byKey, keyDefaults(argAt[g]), ARGV[argAt[g] + NAME], channel) end
end

-- ---- Fetch ----

-- jobs is the reply: done, the groups' statuses and counts (written at the end), then the jobs.
local status, counts, jobs = {}, {}, {''}
-- The hand-offs made to this pool so far (hand_off.lua counts them): those the pool has not read
-- yet (it read ARGV[5]) hold room it counted as free, so the fetch takes that many fewer jobs.
local handed = 0
local pausedKeys = {}
local waits = false -- whether hand-offs may come to the pool: only for a queue marked 'h'
for g = 1, G do
  status[g], counts[g] = -3, 0
  jobs[1 + g], jobs[1 + G + g] = 0, 0
  if tonumber(ARGV[argAt[g] + SHARE]) >= 0 then pausedKeys[#pausedKeys+1] = KEYS[keyAt[g] + PAUSED] end
  if ARGV[argAt[g] + LIMITED] == 'h' then waits = true end
end
jobs[2 + 2 * G] = 0
-- reply fills in the head of jobs and returns it.
local function reply()
  handoffTo(#jobs - 2 - 2 * G)
  jobs[1] = table.concat(done)
  for g = 1, G do jobs[1 + g], jobs[1 + G + g] = status[g], counts[g] end
  jobs[2 + 2 * G] = handed
  return jobs
end
if #pausedKeys == 0 then return reply() end
-- One EXISTS over every candidate's paused flag: most fetches find none paused.
local anyPaused = redis.call('exists', unpack(pausedKeys)) > 0
local nowMs
-- clockMs is the server's clock in ms, read once.
local function clockMs()
  if not nowMs then
    local t = redis.call('time')
    nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
  end
  return nowMs
end

-- take moves up to want jobs of queue group g; it returns the number moved and the group's status.
local function take(g, want)
  -- The queue's keys and fields, at the offsets named at the top, written as numbers here: a
  -- function that used those names would capture each of them, a cost paid on every call.
  local k, f = keyAt[g], argAt[g]
  local queue, inprogress, lock, lockInfo, maxConcurrency, rate =
    KEYS[k], KEYS[k+1], KEYS[k+3], KEYS[k+4], KEYS[k+5], KEYS[k+6]
  local limited, limit, period = ARGV[f+1] == '1', tonumber(ARGV[f+3]), tonumber(ARGV[f+4])
  local n = want
  if limited then
    local max, held = intOf(maxConcurrency), intOf(lock)
    if not (max and held and isType(lockInfo, 'hash')) then return 0, -5 end
    if max > 0 and max - held < n then n = max - held end
    if n <= 0 then return 0, -2 end
  end
  local tat, interval
  if limit > 0 then
    tat = numOf(rate)
    if not tat then return 0, -5 end
    clockMs()
    interval = period / limit
    if tat < nowMs then tat = nowMs end
    local allowed = math.floor((nowMs + period - tat) / interval)
    if allowed < n then n = allowed end
    if n <= 0 then return 0, -4 end
  end
  local vals
  if keyed[g] then
    vals = {}
    local took, lacks = keyedTake(keyed[g], n, inprogress, keyDefaults(f), clockMs, vals)
    if not took then return 0, lacks and -6 or -5 end
  elseif n == 1 then
    local v = pcallReply('rpoplpush', queue, inprogress)
    if type(v) == 'table' then return 0, -5 end
    vals = {}
    if v then vals[1] = v end
  else
    vals = pcallReply('rpop', queue, n)
    if type(vals) == 'table' and vals.err then
      if string.find(vals.err, 'WRONGTYPE', 1, true) then return 0, -5 end
      -- A server older than 6.2 has no RPOP count: move them one by one.
      vals = {}
      for i = 1, n do
        local v = pcallReply('rpoplpush', queue, inprogress)
        if type(v) == 'table' then return #vals, -5 end
        if not v then break end
        vals[#vals+1] = v
      end
    elseif not vals then
      vals = {}
    elseif #vals > 0 then
      local r = redis.pcall('lpush', inprogress, unpack(vals, 1, math.min(#vals, 1000)))
      if type(r) == 'table' then
        -- The in-progress key holds the wrong type: put the jobs back where they were.
        for i = #vals, 1, -1 do redis.call('rpush', queue, vals[i]) end
        return 0, -5
      end
      for i = 1001, #vals, 1000 do redis.call('lpush', inprogress, unpack(vals, i, math.min(#vals, i + 999))) end
    end
  end
  local got = #vals
  if got > 0 then
    if limited then
      redis.call('incrby', lock, got)
      redis.call('hincrby', lockInfo, pool, got)
    end
    if tat then redis.call('set', rate, tostring(tat + got * interval), 'PX', math.ceil(period * 2)) end
    for i = 1, got do jobs[#jobs+1] = vals[i] end
  end
  if got < n then return got, 0 end
  return got, 1
end

-- Candidates keep their order in jobs: a second pass, for what the first could not get, appends
-- to a group's jobs only when it is the last group that gave any.
if waits then
  local handedKey = nsPrefix .. 'handoffs:' .. pool
  local handedText = redis.call('get', handedKey)
  handed = tonumber(handedText or '') or 0
end
local carry = -math.max(0, handed - (tonumber(ARGV[5]) or 0))
local order = {}
for g = 1, G do
  local share = tonumber(ARGV[argAt[g] + SHARE])
  if share >= 0 and share + carry > 0 then
    if anyPaused and redis.call('exists', KEYS[keyAt[g] + PAUSED]) == 1 then
      status[g] = -1
      carry = carry + share
    else
      local got, st = take(g, share + carry)
      carry = share + carry - got
      status[g], counts[g] = st, got
      if st == 0 then waitFor(g) end
      if got > 0 then order[#order+1] = g end
    end
  elseif share > 0 then
    -- Room held by hand-offs not yet read absorbs this share: the candidate gave all it was asked.
    carry = carry + share
    status[g] = 1
  end
end
if carry > 0 and #order > 0 and status[order[#order]] == 1 then
  local g = order[#order]
  local got, st = take(g, carry)
  status[g], counts[g] = st, counts[g] + got
end
return reply()
