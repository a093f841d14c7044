-- Is the pool's one round trip on the hot path: it records the outcomes of finished
-- jobs, then moves jobs from the candidate queues into this pool's in-progress lists. Recording first
-- frees concurrency slots the fetch may then use; a call with no outcomes only fetches, a call that
-- asks for no jobs only records.
--
-- keys: varies
-- uses: keychecks, workflow
--
-- A job's outcome is acted on only while the job is still in the in-progress list, so an outcome
-- written twice (its reply was lost and the pool wrote it again) or after a reaper put the job back
-- changes nothing. The concurrency counters (lock, lock_info) are kept for limited queues only: a
-- queue without a MaxConcurrency is never gated by them.
--
-- A rate limit of L jobs per P milliseconds is a GCRA over the queue's rate key, which holds the
-- theoretical arrival time in ms (server clock): a burst of L, then one every P/L ms.
--
-- KEYS[1] retry set; KEYS[2] dead set; KEYS[3] scheduled set
-- KEYS[7g-3..7g+3], one group per queue g: jobs list, this pool's in-progress list, paused flag,
--   lock counter, lock_info hash, max_concurrency, rate state
-- ARGV[1] pool ID; ARGV[2] wake-up channel; ARGV[3] G, the number of groups
-- ARGV[5g-1..5g+3], per group: job name, "1" when the pool counts it against a MaxConcurrency,
--   share (jobs to fetch from it; -1: not a candidate), rate limit jobs and period in ms (0 0:
--   none). Candidates are tried in the order given; what a queue cannot give passes to the next
--   ones, so a candidate with a share of 0 may still give jobs.
--   then outcomes, each an op code and its arguments, to the end of ARGV:
--   A g n p1..pn   n jobs of group g done, by their in-progress payloads
--   R|D|S g p score member   move job p to the retry, dead or scheduled set as member
--   Q g p          put job p back at the fetch end of its queue
--   X g kind p score member prefix id batch keep tracked ukey err result attempts
--                  job p with workflow state: the move of kind (A, F for dropped, R, D, S or Q),
--                  then, once it is final (A, F, D), its record (kept keep seconds; 0 and not
--                  tracked: none), the jobs waiting for it (tracked), its batch's counters and
--                  callbacks, and the deletion of its unique lock ukey ("" none); see luaWorkflow
--   T key ttl n field1 count1 .. fieldn countn   add counts to a per-minute stats hash
--
-- Returns {done, status, counts, jobs}: done has a character per job of the A, R, D, S and Q ops,
-- in order: '1' recorded, '0' no longer held, 'e' a destination holds the wrong type (the job stays
-- in the in-progress list, from where the pool's sweep, its stop or a reaper puts it back);
-- status[g] is 1 when group g gave what was asked (it may hold more), 0 when it ran out, -1 paused,
-- -2 at its concurrency limit, -3 not a candidate, -4 past its rate limit, -5 a key of the wrong
-- type; counts[g] the jobs taken from it; jobs the payloads, grouped by group in order (oldest first).

local pool, channel = ARGV[1], ARGV[2]
local NOW
local function serverNow()
  if not NOW then NOW = tonumber(redis.call('time')[1]) end
  return NOW
end
local G = tonumber(ARGV[3])
local a = 4 + 5 * G
local done, ended = {}, {}

-- end ends the hold on job p of group g; it returns the LREM reply or nil on a wrong-type key.
local function endHold(b, p)
  local r = redis.pcall('lrem', KEYS[b+2], -1, p)
  if type(r) ~= 'number' then return nil end
  return r
end

while a <= #ARGV do
  local op = ARGV[a]
  if op == 'T' then
    local key, ttl, n = ARGV[a+1], ARGV[a+2], tonumber(ARGV[a+3])
    for i = a + 4, a + 2 + 2 * n, 2 do redis.pcall('hincrby', key, ARGV[i], ARGV[i+1]) end
    redis.pcall('expire', key, ttl)
    a = a + 4 + 2 * n
  else
    local g = tonumber(ARGV[a+1])
    local b = 3 + 7 * (g - 1)
    if op == 'A' then
      local n = tonumber(ARGV[a+2])
      for i = a + 3, a + 2 + n do
        local r = endHold(b, ARGV[i])
        if not r then done[#done+1] = 'e'
        elseif r > 0 then done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        else done[#done+1] = '0' end
      end
      a = a + 3 + n
    elseif op == 'Q' then
      local p = ARGV[a+2]
      local r = endHold(b, p)
      if r and r > 0 then
        local n = redis.pcall('rpush', KEYS[b+1], p)
        if type(n) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          done[#done+1] = 'e'
        else
          if n == 1 then redis.call('publish', channel, ARGV[5*g-1]) end
          done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 3
    elseif op == 'X' then
      -- A job with workflow state: the move of its kind, then its batch, its record, the jobs
      -- waiting for it and its unique lock.
      local kind, p, score, member = ARGV[a+2], ARGV[a+3], ARGV[a+4], ARGV[a+5]
      local prefix, id, batch, keep, tracked = ARGV[a+6], ARGV[a+7], ARGV[a+8], tonumber(ARGV[a+9]), ARGV[a+10]
      local ukey, err, result, attempts = ARGV[a+11], ARGV[a+12], ARGV[a+13], ARGV[a+14]
      local r = endHold(b, p)
      local ok = r and r > 0
      if ok and (kind == 'R' or kind == 'D' or kind == 'S') then
        local set = KEYS[3]
        if kind == 'R' then set = KEYS[1] elseif kind == 'D' then set = KEYS[2] end
        if type(redis.pcall('zadd', set, score, member)) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          ok, r = false, nil
        end
      elseif ok and kind == 'Q' then
        local n = redis.pcall('rpush', KEYS[b+1], p)
        if type(n) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          ok, r = false, nil
        elseif n == 1 then
          redis.call('publish', channel, ARGV[5*g-1])
        end
      end
      if ok then
        done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        local final = kind == 'A' or kind == 'F' or kind == 'D'
        local state = ({A = 'done', F = 'dropped', D = 'dead', R = 'retrying', S = 'queued', Q = 'queued'})[kind]
        local now = serverNow()
        if keep > 0 or tracked == '1' then
          record(prefix, id, ARGV[5*g-1], state, final, attempts, pool, err, result, keep, batch, now)
        end
        if final and tracked == '1' then
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
      local p, score, member = ARGV[a+2], ARGV[a+3], ARGV[a+4]
      local set = KEYS[3]
      if op == 'R' then set = KEYS[1] elseif op == 'D' then set = KEYS[2] end
      local r = endHold(b, p)
      if r and r > 0 then
        if type(redis.pcall('zadd', set, score, member)) ~= 'number' then
          redis.call('lpush', KEYS[b+2], p)
          done[#done+1] = 'e'
        else
          done[#done+1] = '1'; ended[g] = (ended[g] or 0) + 1
        end
      else
        done[#done+1] = r and '0' or 'e'
      end
      a = a + 5
    end
  end
end

-- Release the concurrency slots of limited queues, waking pools that waited for one.
for g, n in pairs(ended) do
  if ARGV[5*g] == '1' then
    local b = 3 + 7 * (g - 1)
    local held = redis.pcall('decrby', KEYS[b+4], n)
    if type(held) == 'number' and held < 0 then redis.call('set', KEYS[b+4], 0) end
    local left = redis.pcall('hincrby', KEYS[b+5], pool, -n)
    if type(left) == 'number' and left <= 0 then redis.call('hdel', KEYS[b+5], pool) end
    local max = intOf(KEYS[b+6]) or 0
    if max > 0 and type(held) == 'number' and held + n >= max then redis.call('publish', channel, ARGV[5*g-1]) end
  end
end

local status, counts, jobs = {}, {}, {}
local pausedKeys = {}
for g = 1, G do
  status[g], counts[g] = -3, 0
  if tonumber(ARGV[5*g+1]) >= 0 then pausedKeys[#pausedKeys+1] = KEYS[7*g-1] end
end
if #pausedKeys == 0 then return {table.concat(done), status, counts, jobs} end
-- One EXISTS over every candidate's paused flag: most fetches find none paused.
local anyPaused = redis.call('exists', unpack(pausedKeys)) > 0
local nowMs

-- take moves up to want jobs of group g; it returns the number moved and the group's status.
local function take(g, want)
  local b, c = 3 + 7 * (g - 1), 5 * g - 1
  local n = want
  if ARGV[c+1] == '1' then
    local max, held = intOf(KEYS[b+6]), intOf(KEYS[b+4])
    if not (max and held and isType(KEYS[b+5], 'hash')) then return 0, -5 end
    if max > 0 and max - held < n then n = max - held end
    if n <= 0 then return 0, -2 end
  end
  local limit, period = tonumber(ARGV[c+3]), tonumber(ARGV[c+4])
  local tat, interval
  if limit > 0 then
    tat = intOf(KEYS[b+7])
    if not tat then return 0, -5 end
    if not nowMs then
      local t = redis.call('time')
      nowMs = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
    end
    interval = period / limit
    if tat < nowMs then tat = nowMs end
    local allowed = math.floor((nowMs + period - tat) / interval)
    if allowed < n then n = allowed end
    if n <= 0 then return 0, -4 end
  end
  local vals
  if n == 1 then
    local v = redis.pcall('rpoplpush', KEYS[b+1], KEYS[b+2])
    if type(v) == 'table' then return 0, -5 end
    vals = {}
    if v then vals[1] = v end
  else
    vals = redis.pcall('rpop', KEYS[b+1], n)
    if type(vals) == 'table' and vals.err then
      if string.find(vals.err, 'WRONGTYPE', 1, true) then return 0, -5 end
      -- A server older than 6.2 has no RPOP count: move them one by one.
      vals = {}
      for i = 1, n do
        local v = redis.pcall('rpoplpush', KEYS[b+1], KEYS[b+2])
        if type(v) == 'table' then return #vals, -5 end
        if not v then break end
        vals[#vals+1] = v
      end
    elseif not vals then
      vals = {}
    elseif #vals > 0 then
      local r = redis.pcall('lpush', KEYS[b+2], unpack(vals, 1, math.min(#vals, 1000)))
      if type(r) == 'table' then
        -- The in-progress key holds the wrong type: put the jobs back where they were.
        for i = #vals, 1, -1 do redis.call('rpush', KEYS[b+1], vals[i]) end
        return 0, -5
      end
      for i = 1001, #vals, 1000 do redis.call('lpush', KEYS[b+2], unpack(vals, i, math.min(#vals, i + 999))) end
    end
  end
  local got = #vals
  if got > 0 then
    if ARGV[c+1] == '1' then
      redis.call('incrby', KEYS[b+4], got)
      redis.call('hincrby', KEYS[b+5], pool, got)
    end
    if tat then redis.call('set', KEYS[b+7], tostring(tat + got * interval), 'PX', math.ceil(period * 2)) end
    for i = 1, got do jobs[#jobs+1] = vals[i] end
  end
  if got < n then return got, 0 end
  return got, 1
end

-- Candidates keep their order in jobs: a second pass, for what the first could not get, appends
-- to a group's jobs only when it is the last group that gave any.
local carry = 0
local order = {}
for g = 1, G do
  local share = tonumber(ARGV[5*g+1])
  if share >= 0 and share + carry > 0 then
    if anyPaused and redis.call('exists', KEYS[7*g-1]) == 1 then
      status[g] = -1
      carry = carry + share
    else
      local got, st = take(g, share + carry)
      carry = share + carry - got
      status[g], counts[g] = st, got
      if got > 0 then order[#order+1] = g end
    end
  end
end
if carry > 0 and #order > 0 and status[order[#order]] == 1 then
  local g = order[#order]
  local got, st = take(g, carry)
  status[g], counts[g] = st, counts[g] + got
end
return {table.concat(done), status, counts, jobs}
