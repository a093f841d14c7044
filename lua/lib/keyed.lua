-- keyed: the state of keyed jobs (keyed.go; docs/redis-layout.md, "Keyed jobs") and the transitions
-- every script that moves a keyed job makes. A job name's keyed state lives under one prefix,
-- <ns>:keyed:<name>:, so that a hash-tagged namespace keeps it on the slot of its other keys:
--
--   ready    sorted set: keys whose turn may come, scored by virtual time (stride scheduling: a
--            turn that takes n jobs moves its key n/weight later; a key that gets jobs again joins
--            at the current time, vt)
--   waiting  sorted set: keys with jobs waiting, scored by how many (Client.Keys, busiest first)
--   running  hash: key -> its jobs fetched by a pool and not finished
--   delayed  sorted set: keys past their rate limit, scored by the millisecond they may go on
--   conf     hash: overrides of one key, set through the Client: c:<key> concurrency (-1: no
--            limit), r:<key> "<jobs>/<period ms>", w:<key> weight, m:<key> most jobs waiting (-1:
--            no limit), p:<key> paused
--   meta     hash: vt, the virtual time of the last turn; waiting, the jobs waiting over all keys;
--            max_waiting, JobOptions.KeyMaxWaiting as the pools registered it
--   {<key>}  list: the key's jobs, pushed at the head and taken from the tail (FIFO)
--   {<key>}:rate  string: the key's rate limiter state (GCRA), ms; expires
--   <pool>:inprogress  list: the jobs of the name's keys a pool holds, each "<key>\n<payload>"
--
-- A key with no job waiting or running has none of these but its overrides. The invariant that
-- keeps keys moving: a key with jobs waiting that is not paused, at its concurrency limit or past
-- its rate is in ready or delayed; every change that can make it so (a push, a release of a slot,
-- a resume, an override) gives it a turn (keyedReady), and a fetch drops a key from ready when it
-- finds it paused or at its limit, so ready never needs a scan.
--
-- uses: none
-- defines: keyedKeys, keyedQueue, keyedSplit, keyedTypesOK, keyedReady, keyedPush, keyedCap, keyedReturn, keyedRelease, keyedTake

-- keyedKeys returns the keys of a job name's keyed state, from its prefix <ns>:keyed:<name>:.
local function keyedKeys(p)
  return {p = p, ready = p .. 'ready', waiting = p .. 'waiting', running = p .. 'running',
    delayed = p .. 'delayed', conf = p .. 'conf', meta = p .. 'meta'}
end

-- keyedQueue is the list of key K's jobs.
local function keyedQueue(k, K) return k.p .. '{' .. K .. '}' end

-- keyedSplit returns the key and the payload of an in-progress entry ("<key>\n<payload>"), or nil
-- for an entry of another form.
local function keyedSplit(entry)
  local i = string.find(entry, '\n', 1, true)
  if not i or i == 1 then return nil end
  return string.sub(entry, 1, i - 1), string.sub(entry, i + 1)
end

-- keyedTypesOK reports whether the name's keyed state keys are missing or of their types: a script
-- that finds one overwritten by another program leaves the name's keyed jobs alone.
local function keyedTypesOK(k)
  for key, want in pairs({ready = 'zset', waiting = 'zset', running = 'hash', delayed = 'zset',
      conf = 'hash', meta = 'hash'}) do
    local t = redis.call('type', k[key]).ok
    if t ~= 'none' and t ~= want then return false end
  end
  return true
end

-- keyedReady gives key K a turn at the current virtual time unless it has one, and publishes name
-- on the keyed wake-up channel (the wake-up channel, channel, followed by ":keyed") when no other key
-- of the name was ready, so that idle pools fetch the name's keyed jobs. A channel of their own
-- spares pools that serve a name without keyed jobs a look at its keys on every wake-up.
local function keyedReady(k, K, name, channel)
  local vt = redis.pcall('hget', k.meta, 'vt')
  if type(vt) ~= 'string' then vt = 0 end
  local added = redis.pcall('zadd', k.ready, 'NX', vt, K)
  if added == 1 and redis.call('zcard', k.ready) == 1 then redis.call('publish', channel .. ':keyed', name) end
end

-- keyedCap returns the most jobs key K may have waiting (0: no limit): its override, else the name's.
local function keyedCap(k, K)
  local c = tonumber(redis.call('hget', k.conf, 'm:' .. K) or '')
  if not c then c = tonumber(redis.call('hget', k.meta, 'max_waiting') or '') or 0 end
  if c < 0 then c = 0 end
  return c
end

-- keyedPush queues payloads[from..to] at the back of key K's queue and gives the key a turn if it
-- had no job waiting. The caller has checked the types and the cap. Returns the queue's length.
local function keyedPush(k, K, name, payloads, from, to, channel)
  local q = keyedQueue(k, K)
  local n = 0
  for i = from, to, 1000 do n = redis.call('lpush', q, unpack(payloads, i, math.min(to, i + 999))) end
  redis.call('zadd', k.waiting, n, K)
  redis.call('hincrby', k.meta, 'waiting', to - from + 1)
  if n == to - from + 1 then keyedReady(k, K, name, channel) end
  return n
end

-- keyedReturn puts a payload back at the front of key K's queue (a job fetched and not run: a stop,
-- a dead pool, a lost reply), with a turn for the key. It returns false, leaving nothing changed,
-- when the queue key holds another type.
local function keyedReturn(k, K, name, payload, channel)
  local n = redis.pcall('rpush', keyedQueue(k, K), payload)
  if type(n) ~= 'number' then return false end
  redis.pcall('zadd', k.waiting, n, K)
  redis.pcall('hincrby', k.meta, 'waiting', 1)
  keyedReady(k, K, name, channel)
  return true
end

-- keyedRelease frees n concurrency slots of key K, and gives the key a turn when rearm is set and
-- it has jobs waiting (it may have been left out of ready at its limit). Writes go through pcall:
-- a running hash overwritten by hand must not stop the script that acknowledges a job.
local function keyedRelease(k, K, n, rearm, name, channel)
  local left = redis.pcall('hincrby', k.running, K, -n)
  if type(left) == 'number' and left <= 0 then redis.pcall('hdel', k.running, K) end
  if rearm then
    local waiting = redis.pcall('llen', keyedQueue(k, K))
    if type(waiting) == 'number' and waiting > 0 then keyedReady(k, K, name, channel) end
  end
end

-- keyedOverrides reads key K's overrides from the conf hash: paused, then its concurrency limit,
-- weight and rate (jobs, period ms), each falling back on d, the name's defaults.
local function keyedOverrides(k, K, d)
  local c = redis.call('hmget', k.conf, 'p:' .. K, 'c:' .. K, 'w:' .. K, 'r:' .. K)
  local limit, weight, rj, rp = d.limit, 1, d.rateJobs, d.ratePeriod
  if c[2] then
    limit = tonumber(c[2]) or limit
    if limit < 0 then limit = 0 end
  end
  if c[3] then weight = math.max(1, math.floor(tonumber(c[3]) or 1)) end
  if c[4] then
    local j, p = string.match(c[4], '^(%d+)/(%d+)$')
    if j then rj, rp = tonumber(j), tonumber(p) end
  end
  return c[1] ~= false, limit, weight, rj, rp
end

-- keyedTake moves up to n jobs of a job name's keys into the pool's keyed in-progress list, key by
-- key in turn, as entries "<key>\n<payload>", which it also appends to out. A turn takes the key
-- with the earliest virtual time and gives it its share of n over the keys ready (at least one
-- job, times its weight), within its concurrency limit and rate; the key then waits for its next
-- turn, unless it has no job left (dropped), is at its limit (dropped until a slot is released) or
-- past its rate (in delayed until it may go on). d holds the name's defaults: limit (0: none),
-- rateJobs and ratePeriod (0 0: none). nowMs returns the server's clock in ms. Returns the number
-- of jobs taken and whether a key of the name is left ready.
local function keyedTake(k, n, inprogress, d, nowMs, out)
  local delayed = redis.call('exists', k.delayed) == 1
  if not delayed and redis.call('exists', k.ready) == 0 then return 0, false end
  local vt = tonumber(redis.call('hget', k.meta, 'vt') or '') or 0
  if delayed then
    -- Keys whose rate window reopened get a turn again.
    local due = redis.call('zrangebyscore', k.delayed, '-inf', nowMs(), 'LIMIT', 0, 1000)
    for _, K in ipairs(due) do redis.call('zadd', k.ready, 'NX', vt, K) end
    if #due > 0 then redis.call('zrem', k.delayed, unpack(due)) end
  end
  local ready = redis.call('zcard', k.ready)
  if ready == 0 then return 0, false end
  local hasConf = redis.call('exists', k.conf) == 1
  local quantum = math.max(1, math.floor(n / ready))
  local got, entries = 0, {}
  while got < n do
    local r = redis.call('zpopmin', k.ready)
    if #r == 0 then break end
    local K, s = r[1], tonumber(r[2])
    -- A key added by another program with an old score takes its turn now, not many in a row; one
    -- with a score beyond reach (inf, or far ahead) is brought back to now.
    if not s or s ~= s or s < vt or s > vt + 1e12 then s = vt end
    vt = s
    local paused, limit, weight, rj, rp = false, d.limit, 1, d.rateJobs, d.ratePeriod
    if hasConf then paused, limit, weight, rj, rp = keyedOverrides(k, K, d) end
    local m = math.min(quantum * weight, n - got)
    local running = 0
    if paused then
      m = 0 -- left out of ready: resuming the key gives it a turn
    elseif limit > 0 then
      running = tonumber(redis.call('hget', k.running, K) or '') or 0
      if limit - running < m then m = limit - running end
    end
    local tat, interval
    if m > 0 and rj > 0 and rp > 0 then
      local rk = keyedQueue(k, K) .. ':rate'
      local v = redis.pcall('get', rk)
      tat = type(v) == 'string' and tonumber(v) or 0
      interval = rp / rj
      local now = nowMs()
      if tat < now then tat = now end
      local allowed = math.floor((now + rp - tat) / interval)
      if allowed < m then m = allowed end
      if m <= 0 then
        redis.call('zadd', k.delayed, math.ceil(tat - rp + interval), K)
        tat = nil
      end
    end
    if m > 0 then
      local q = keyedQueue(k, K)
      local vals = redis.pcall('rpop', q, m)
      if type(vals) == 'table' and vals.err then
        -- The key's queue holds another type (or the server has no RPOP count, before 6.2): the
        -- key is skipped, its state left as it is.
        if string.find(vals.err, 'WRONGTYPE', 1, true) then vals = {} else
          vals = {}
          for i = 1, m do
            local v = redis.call('rpop', q)
            if not v then break end
            vals[i] = v
          end
        end
      end
      local took = vals and #vals or 0
      for i = 1, took do entries[#entries + 1] = K .. '\n' .. vals[i] end
      got = got + took
      if took > 0 then
        redis.call('hincrby', k.running, K, took)
        if tat then redis.call('set', keyedQueue(k, K) .. ':rate', tostring(tat + took * interval), 'PX', math.ceil(rp * 2)) end
      end
      local left = redis.pcall('llen', q)
      if type(left) == 'number' and left > 0 then
        redis.call('zadd', k.waiting, left, K)
        if took > 0 and (limit == 0 or running + took < limit) then
          redis.call('zadd', k.ready, s + took / weight, K)
        end
      else
        redis.call('zrem', k.waiting, K)
      end
    end
  end
  redis.call('hset', k.meta, 'vt', tostring(vt))
  if got > 0 then
    redis.call('hincrby', k.meta, 'waiting', -got)
    for i = 1, #entries, 1000 do redis.call('lpush', inprogress, unpack(entries, i, math.min(#entries, i + 999))) end
    for i = 1, #entries do out[#out + 1] = entries[i] end
  end
  return got, redis.call('exists', k.ready) == 1
end
