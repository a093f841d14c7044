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
-- defines: keyedKeys, keyedQueue, keyedSplit, keyedTypesOK, keyedReady, keyedPush, keyedCap, keyedReturn, keyedRelease

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
-- on channel when no other key of the name was ready, so that idle pools fetch.
local function keyedReady(k, K, name, channel)
  local vt = redis.pcall('hget', k.meta, 'vt')
  if type(vt) ~= 'string' then vt = 0 end
  local added = redis.pcall('zadd', k.ready, 'NX', vt, K)
  if added == 1 and redis.call('zcard', k.ready) == 1 then redis.call('publish', channel, name) end
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
