-- keyed: the state of keyed jobs (keyed.go; docs/redis-layout.md, "Keyed jobs") and the transitions
-- every script that moves a keyed job makes. A job name's keyed state lives under one prefix,
-- <ns>:keyed:<name>:, so that a hash-tagged namespace keeps it on the slot of its other keys:
--
--   ready    sorted set: keys whose turn may come, scored by virtual time (stride scheduling: a
--            turn that takes n jobs moves its key n/weight later; a key that gets jobs again joins
--            at the current time, vt); and the lane: the jobs of keys that need no queue of their
--            own, each a member "<key>\n<payload>" scored by its virtual start (below)
--   lane     hash: key -> the score of its job in the lane, for a key with one there
--   waiting  sorted set: keys with jobs waiting, scored by how many (Client.Keys, busiest first)
--   running  hash: key -> its jobs fetched by a pool and not finished (and those a retry holds,
--            KeyRetryInOrder), kept only while meta's counts field allows (keyedCounting)
--   delayed  sorted set: keys past their rate limit, scored by the millisecond they may go on
--   conf     hash: overrides of one key, set through the Client: c:<key> concurrency (-1: no
--            limit), r:<key> "<jobs>/<period ms>", w:<key> weight, m:<key> most jobs waiting (-1:
--            no limit), p:<key> paused
--   meta     hash: vt, the virtual time of the last turn; waiting, the jobs waiting over all keys;
--            max_waiting, JobOptions.KeyMaxWaiting as the pools registered it; counts, whether
--            running is kept: '1' kept for good, '0' not kept (the in-progress lists say what
--            runs), absent kept until a take finds no use for it (keyedCounting); limits, '1' while
--            the name's pools limit keys (the lane's plan); seq, the lane's step (laneAdd)
--   {<key>}  list: the key's jobs, pushed at the head and taken from the tail (FIFO)
--   {<key>}:rate  string: the key's rate limiter state (GCRA), ms; expires
--   <pool>:inprogress  list: the jobs of the name's keys a pool holds, each "<key>\n<payload>"
--
-- The lane. A queue per key costs Redis a list made and dropped, a waiting entry and a turn for
-- every key that comes and goes: most of what a key of one job costs. Such a key puts its job in
-- ready itself instead, scored by its virtual start (vt, plus a small step so that scores hardly
-- repeat), so one ZPOPMIN serves queue keys and lane jobs in one virtual-time order, and the
-- in-progress entry is the member. A key's job goes to the lane when the push brings it one job
-- and nothing needs its queue: no pool of the name limits keys (meta limits '1', written at
-- registration: KeyConcurrency, KeyRateLimit or KeyRetryInOrder), its counts are not kept for good
-- (meta counts '1'), the key has no pause, concurrency, weight or rate of its own, no job in its
-- queue and none in the lane. A key holds one lane job at most: its next push moves it to the key's
-- queue first (a spill, which finds it by its score), so the key's order holds and a key of many
-- jobs costs what a queue costs. A take that pops a lane job it may no longer serve so (counts
-- kept, a rate, an override set since, jobs in the key's queue) moves it to the back of the key's
-- queue instead (a divert), which keeps the key's limits; a take drops the lane field of every key
-- whose job it popped. A take of a name that needs none of that (no overrides, counts, rate or key
-- with a queue) reads a round of lane jobs alone with ZRANGE and removes it by rank: Redis then
-- formats no score for it but the last one's, which moves vt.
-- The same way, a take whose every key may run one job at most (KeyConcurrency 1, no overrides or
-- rate) reads a round of queue keys alone: no key it serves gets a turn after it, so no score but
-- the last one's is needed, and each key is read, popped and counted in a loop of its own.
--
-- A key with no job waiting or running has none of these but its overrides. The invariant that
-- keeps keys moving: a key with jobs waiting that is not paused, at its concurrency limit or past
-- its rate is in ready or delayed; every change that can make it so (a push, a release of a slot,
-- a resume, an override) gives it a turn (keyedReady), and a fetch drops a key from ready when it
-- finds it paused or at its limit, so ready never needs a scan.
--
-- Keyed jobs need Redis 6.2 (ZMSCORE, RPOP with a count) or miniredis v2.30.3: on an older server
-- their scripts fail with an error that says so (KEYED_NEEDS).
--
-- uses: keychecks
-- defines: keyedNum, keyedCount, keyedKeys, keyedQueue, keyedSplit, keyedTypesOK, keyedReadyMany, keyedReady, keyedCap, laneRead, keyedBacklog, lanePlan, laneSpill, laneScore, laneAdd, laneWrite, keyedCheckMany, keyedPushMany, keyedPush, keyedReturn, keyedRelease, keyedRecount, keyedCounting, keyedReleaseMany, laneSettle, keyedTake

-- KEYED_NEEDS is what keyed jobs need of the server, as an error names it.
local KEYED_NEEDS = 'what keyed jobs need (ZMSCORE and RPOP with a count: Redis 6.2, miniredis v2.30.3)'

-- WIDE_AT is the number of keys in one take or one push from which keyedTake and keyedPushMany
-- make sure that ready, waiting and running are not listpacks. Redis holds a sorted set or hash of
-- up to 128 entries (its default zset- and hash-max-listpack-entries) as a listpack, where every
-- member read or written is a scan and every insert or removal moves the rest: cheap for ten keys,
-- but with takes of 50 to 65 keys among a hundred a keyed job cost Redis more than with 100,000 keys
-- (benches/README.md, "Keyed jobs"). Redis never turns a skiplist or hashtable back into a listpack
-- while the key exists, so one conversion holds until the key empties.
local WIDE_AT = 32
-- WIDE_MEMBER is longer than Redis's default zset- and hash-max-listpack-value (64 bytes): added to
-- a listpack and removed again, it leaves a skiplist or hashtable behind. Keys hold no brace, so it
-- is never a key.
local WIDE_MEMBER = '{' .. string.rep('-', 78) .. '}'

-- keyedWiden converts the name's ready, waiting and running keys out of the listpack encoding
-- (ziplist before Redis 7), each only when it is one: see WIDE_AT. A key that does not exist, and
-- a server that does not answer OBJECT ENCODING, are left alone.
local function keyedWiden(k)
  for _, key in ipairs({k.ready, k.waiting, k.running}) do
    local enc = redis.pcall('object', 'encoding', key)
    if enc == 'listpack' or enc == 'ziplist' then
      if key == k.running then
        redis.pcall('hset', key, WIDE_MEMBER, '0')
        redis.pcall('hdel', key, WIDE_MEMBER)
      else
        redis.pcall('zadd', key, 0, WIDE_MEMBER)
        redis.pcall('zrem', key, WIDE_MEMBER)
      end
    end
  end
end

-- NUMS holds the text of the numbers keyedNum gave in this script's run.
local NUMS = {}
-- keyedNum returns n as the text Redis would make of it, formatting each number once a run: Redis
-- formats a Lua number passed to a command with printf, which costs about as much as a small
-- command, and a take passes the same few counts for key after key.
local function keyedNum(n)
  local t = NUMS[n]
  if not t then
    t = tostring(n)
    NUMS[n] = t
  end
  return t
end

-- COUNTS holds the numbers keyedCount read in this script's run, by their text.
local COUNTS = {}
-- keyedCount returns the number a running count's text holds (0 for none, or for text that is not
-- a number), parsing each text once a run: Lua parses a string with the C library's strtod, and a
-- take or a release reads the same few counts for key after key (remembered, they spare a job of
-- KeyConcurrency 1 about 2,700 of the 65,000 instructions it cost Redis: callgrind/limit1.sh).
local function keyedCount(s)
  if not s then return 0 end
  local c = COUNTS[s]
  if not c then
    c = tonumber(s) or 0
    COUNTS[s] = c
  end
  return c
end

-- keyedKeys returns the keys of a job name's keyed state, from its prefix <ns>:keyed:<name>:.
local function keyedKeys(p)
  return {p = p, ready = p .. 'ready', waiting = p .. 'waiting', running = p .. 'running',
    delayed = p .. 'delayed', conf = p .. 'conf', meta = p .. 'meta', lane = p .. 'lane'}
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
      conf = 'hash', meta = 'hash', lane = 'hash'}) do
    local t = keyType(k[key])
    if t ~= 'none' and t ~= want then return false end
  end
  return true
end

-- keyedReadyMany gives keys (a list) a turn at the current virtual time, those that have none, and
-- publishes name on the keyed wake-up channel (the wake-up channel, channel, followed by ":keyed")
-- when no key of the name was ready before, so that idle pools fetch the name's keyed jobs. A channel
-- of their own spares pools that serve a name without keyed jobs a look at its keys on every wake-up.
-- Writes go through pcall: a script that acknowledges jobs must not stop on state overwritten by hand.
local function keyedReadyMany(k, keys, name, channel)
  if #keys == 0 then return end
  local vt = redis.pcall('hget', k.meta, 'vt')
  if type(vt) ~= 'string' then vt = '0' end
  local add, n = {}, 0
  for _, K in ipairs(keys) do
    add[n + 1], add[n + 2] = vt, K
    n = n + 2
  end
  local before = redis.pcall('zcard', k.ready)
  for i = 1, n, 2000 do redis.pcall('zadd', k.ready, 'NX', unpack(add, i, math.min(n, i + 1999))) end
  if before == 0 then redis.call('publish', channel .. ':keyed', name) end
end

-- keyedReady gives key K a turn, as keyedReadyMany does.
local function keyedReady(k, K, name, channel) keyedReadyMany(k, {K}, name, channel) end

-- keyedCap returns the most jobs key K may have waiting (0: no limit): its override, else the name's.
local function keyedCap(k, K)
  local c = tonumber(redis.call('hget', k.conf, 'm:' .. K) or '')
  if not c then c = tonumber(redis.call('hget', k.meta, 'max_waiting') or '') or 0 end
  if c < 0 then c = 0 end
  return c
end

-- laneRead returns the lane field of keys (a list): key -> the score of its job in the lane, as
-- stored, for the keys that have one. A lane hash of another type reads as none.
local function laneRead(k, keys)
  local st = {}
  for i = 1, #keys, 1000 do
    local v = redis.pcall('hmget', k.lane, unpack(keys, i, math.min(#keys, i + 999)))
    if v.err then return st end
    for j = 1, #v do
      if v[j] then st[keys[i + j - 1]] = v[j] end
    end
  end
  return st
end

-- keyedBacklog returns the jobs key K has waiting, in its queue and in the lane; nil when its queue
-- key holds another type.
local function keyedBacklog(k, K)
  local n = redis.pcall('llen', keyedQueue(k, K))
  if type(n) ~= 'number' then return nil end
  if redis.pcall('hexists', k.lane, K) == 1 then n = n + 1 end
  return n
end

-- CONF_FIELDS are the prefixes of a key's fields in the conf hash that change how it is served (its
-- pause, concurrency, weight and rate; not its cap), in the order lanePlan and keyedConf read them.
local CONF_FIELDS = {'p:', 'c:', 'w:', 'r:'}

-- lanePlan says where jobs pushed now for keys (a list without repeats) go: plan[K] is true when
-- the key's job goes to the lane, false when its jobs go to its queue (see "The lane" above), and
-- spill[K] the score of the key's job in the lane, for a key that has one: it moves to the key's
-- queue ahead of the new jobs (laneSpill). counts and limits are meta's fields of those names;
-- many[i] is true when keys[i] gets more than one job. It reads the lane, the waiting index and the
-- overrides once each for all the keys.
local function lanePlan(k, keys, counts, limits, many)
  local spill = laneRead(k, keys)
  local open = counts ~= '1' and limits ~= '1'
  local listed, conf = {}, nil
  if open and redis.call('exists', k.waiting) == 1 then
    for i = 1, #keys, 1000 do
      local v = pcallReply('zmscore', k.waiting, unpack(keys, i, math.min(#keys, i + 999)))
      if wrongType(v, KEYED_NEEDS) then
        open = false
        break
      end
      for j = 1, #v do listed[i + j - 1] = v[j] end
    end
  end
  if open and redis.call('exists', k.conf) == 1 then
    conf = {}
    for i = 1, #keys, 250 do
      local fields = {}
      for j = i, math.min(#keys, i + 249) do
        for _, f in ipairs(CONF_FIELDS) do fields[#fields + 1] = f .. keys[j] end
      end
      local v = redis.pcall('hmget', k.conf, unpack(fields))
      if v.err then
        open = false
        break
      end
      for j = 1, #v, 4 do conf[i + (j - 1) / 4] = v[j] or v[j + 1] or v[j + 2] or v[j + 3] end
    end
  end
  local plan = {}
  for i, K in ipairs(keys) do
    plan[K] = open and not spill[K] and not listed[i] and not (conf and conf[i]) and not (many and many[i])
  end
  return plan, spill
end

-- laneSpill moves the lane job of each key of spill (key -> its score) to the key's queue, and drops
-- its lane field; it returns the keys moved and their queues' lengths after (a key moved needs a
-- turn and a waiting entry, which the caller gives it). A key's job is found among the members of
-- its score (lane scores hardly repeat: laneAdd). A key whose queue holds another type keeps its
-- job in the lane.
local function laneSpill(k, spill)
  local moved, lens, drop = {}, {}, {}
  for K, s in pairs(spill) do
    local prefix, ok = K .. '\n', true
    local members = redis.pcall('zrangebyscore', k.ready, s, s)
    if members.err then members = {} end
    for _, m in ipairs(members) do
      if ok and string.sub(m, 1, #prefix) == prefix then
        local n = redis.pcall('lpush', keyedQueue(k, K), string.sub(m, #prefix + 1))
        ok = type(n) == 'number'
        if ok then
          redis.call('zrem', k.ready, m)
          moved[#moved + 1], lens[#moved + 1] = K, n
        end
      end
    end
    if ok then drop[#drop + 1] = K end
  end
  for i = 1, #drop, 1000 do redis.call('hdel', k.lane, unpack(drop, i, math.min(#drop, i + 999))) end
  return moved, lens
end

-- LANE_STEPS is the number of steps in one unit of virtual time: each lane job queued at one
-- virtual time gets vt plus a step of its own (meta's seq, counted modulo LANE_STEPS), so that
-- scores hardly repeat and a spill reads one member.
local LANE_STEPS = 1000000

-- TWO_DIGITS are the texts of 0 to 99 with two digits, made once a run when laneScore needs them.
local TWO_DIGITS

-- laneScore returns the text of a lane job's score: vt, floored to a step, plus seq steps. It is
-- written from integers, as the integer part (keyedNum: formatted once a run) and six decimals
-- from TWO_DIGITS, where formatting each score as a number (%.17g) took printf's exact conversion:
-- the most a fired schedule cost Redis in Lua. Any text that Redis parses as a number serves, as
-- ready and the lane field get the same one and scores rise with seq. Beyond the integers a double
-- holds exactly, the number's %.17g.
local function laneScore(vt, seq)
  local u = math.floor(vt * LANE_STEPS) + seq
  if not (u >= 0 and u < 1e15) then return string.format('%.17g', vt + seq / LANE_STEPS) end
  if not TWO_DIGITS then
    TWO_DIGITS = {
      '00', '01', '02', '03', '04', '05', '06', '07', '08', '09',
      '10', '11', '12', '13', '14', '15', '16', '17', '18', '19',
      '20', '21', '22', '23', '24', '25', '26', '27', '28', '29',
      '30', '31', '32', '33', '34', '35', '36', '37', '38', '39',
      '40', '41', '42', '43', '44', '45', '46', '47', '48', '49',
      '50', '51', '52', '53', '54', '55', '56', '57', '58', '59',
      '60', '61', '62', '63', '64', '65', '66', '67', '68', '69',
      '70', '71', '72', '73', '74', '75', '76', '77', '78', '79',
      '80', '81', '82', '83', '84', '85', '86', '87', '88', '89',
      '90', '91', '92', '93', '94', '95', '96', '97', '98', '99'
    }
  end
  local f = u % LANE_STEPS
  return keyedNum((u - f) / LANE_STEPS) .. '.' .. TWO_DIGITS[math.floor(f / 10000) + 1] ..
    TWO_DIGITS[math.floor(f / 100) % 100 + 1] .. TWO_DIGITS[f % 100 + 1]
end

-- laneAdd gathers the lane job of key K, member ("<key>\n<payload>"), into add (score, member
-- pairs, na of them so far) and the key's lane field into set (ns so far), at virtual time vt and
-- step seq. Returns the new na, ns and seq.
local function laneAdd(K, member, vt, seq, add, na, set, ns)
  seq = (seq + 1) % LANE_STEPS
  local s = laneScore(vt, seq)
  add[na + 1], add[na + 2] = s, member
  set[ns + 1], set[ns + 2] = K, s
  return na + 2, ns + 2, seq
end

-- laneWrite writes what laneAdd gathered: the members into ready, the keys' lane fields and meta's
-- seq, and a wake-up on the keyed channel when ready was empty (as keyedReadyMany).
local function laneWrite(k, name, channel, add, na, set, ns, seq)
  if na == 0 then return end
  local before = redis.call('zcard', k.ready)
  for i = 1, na, 2000 do redis.call('zadd', k.ready, unpack(add, i, math.min(na, i + 1999))) end
  for i = 1, ns, 2000 do redis.call('hset', k.lane, unpack(set, i, math.min(ns, i + 1999))) end
  redis.call('hset', k.meta, 'seq', seq)
  if before == 0 then redis.call('publish', channel .. ':keyed', name) end
end

-- keyedCheckMany checks, before anything is written, that jobs may be pushed for the keys of one job
-- name: groups is a list of {key, count}, keys not repeated. It reads the name's state once, and the
-- queue of each key whose job does not go to the lane (its type, and its length against the key's
-- cap). It returns nil and the push's plan (lanePlan, both tables) when all may go, else the index of
-- the group refused for its cap and that cap, or 0 and a message for a key of the wrong type; on a
-- server that lacks what keyed jobs need, it stops the script with an error that says so.
local function keyedCheckMany(k, groups)
  if not keyedTypesOK(k) then return 0, 'a key of ' .. k.p .. '* holds another type' end
  -- A server without ZMSCORE refuses keyed jobs here, before they are queued, rather than when a
  -- pool fetches them.
  wrongType(pcallReply('zmscore', k.waiting, ''), KEYED_NEEDS)
  local m = redis.call('hmget', k.meta, 'max_waiting', 'counts', 'limits')
  local default = tonumber(m[1] or '') or 0
  local keys, many = {}, {}
  for i, grp in ipairs(groups) do keys[i], many[i] = grp[1], grp[2] > 1 end
  local plan, spill = lanePlan(k, keys, m[2], m[3], many)
  local caps = {}
  if redis.call('exists', k.conf) == 1 then
    local fields = {}
    for i, grp in ipairs(groups) do fields[i] = 'm:' .. grp[1] end
    for i = 1, #fields, 1000 do
      local v = redis.call('hmget', k.conf, unpack(fields, i, math.min(#fields, i + 999)))
      for j = 1, #v do caps[i + j - 1] = tonumber(v[j] or '') end
    end
  end
  for i, grp in ipairs(groups) do
    local cap = caps[i] or default
    if not plan[grp[1]] then
      local q = keyedQueue(k, grp[1])
      local n = redis.pcall('llen', q)
      if type(n) ~= 'number' then return 0, 'the queue key ' .. q .. ' holds another type' end
      if spill[grp[1]] then n = n + 1 end
      if cap > 0 and n + grp[2] > cap then return i, cap end
    elseif cap > 0 and grp[2] > cap then
      return i, cap
    end
  end
  return nil, {plan, spill}
end

-- keyedPushMany queues the jobs of several keys of one job name (checked by keyedCheckMany, whose
-- plan it takes, or checked by the caller: plan nil): groups is a list of {key, from, to}, keys not
-- repeated, the payloads being payloads[from..to]. A key's job goes to the lane, or its jobs to the
-- back of its queue (after its job in the lane, moved there first); the name's waiting index,
-- count, ready keys and lane are written once for all.
local function keyedPushMany(k, name, groups, payloads, channel, plan)
  local meta = redis.call('hmget', k.meta, 'vt', 'counts', 'limits', 'seq')
  local spill
  if plan then
    -- Through a local of its own: gopher-lua (miniredis) assigns plan before it reads plan[2].
    local checked = plan
    plan, spill = checked[1], checked[2]
  else
    local keys, many = {}, {}
    for i, grp in ipairs(groups) do keys[i], many[i] = grp[1], grp[3] > grp[2] end
    plan, spill = lanePlan(k, keys, meta[2], meta[3], many)
  end
  local fresh = {}
  for _, K in ipairs((laneSpill(k, spill))) do fresh[K] = true end
  local vt, seq = tonumber(meta[1] or '') or 0, tonumber(meta[4] or '') or 0
  local backlog, ready, total, add, na, set, ns = {}, {}, 0, {}, 0, {}, 0
  for _, grp in ipairs(groups) do
    local K, count = grp[1], grp[3] - grp[2] + 1
    total = total + count
    if plan[K] then
      na, ns, seq = laneAdd(K, K .. '\n' .. payloads[grp[2]], vt, seq, add, na, set, ns)
    else
      local q, n = keyedQueue(k, K), 0
      for i = grp[2], grp[3], 1000 do n = redis.call('lpush', q, unpack(payloads, i, math.min(grp[3], i + 999))) end
      backlog[#backlog + 1] = n
      backlog[#backlog + 1] = K
      if n == count or fresh[K] then ready[#ready + 1] = K end
    end
  end
  laneWrite(k, name, channel, add, na, set, ns, seq)
  for i = 1, #backlog, 2000 do redis.call('zadd', k.waiting, unpack(backlog, i, math.min(#backlog, i + 1999))) end
  redis.call('hincrby', k.meta, 'waiting', total)
  keyedReadyMany(k, ready, name, channel)
  if #groups >= WIDE_AT then keyedWiden(k) end
end

-- keyedPush queues payloads[from..to] for key K, as keyedPushMany does. The caller has checked the
-- types and the cap.
local function keyedPush(k, K, name, payloads, from, to, channel)
  keyedPushMany(k, name, {{K, from, to}}, payloads, channel)
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

-- keyedRecount writes the running hash anew from what the pools of the pools set hold (each pool's
-- keyed in-progress list: a pool joins the set before it holds a job and leaves it once its lists
-- are empty, or a reaper empties them) and keeps it from then on: meta's counts becomes '1'. Run
-- when counts turn on after a time without them (keyedCounting); its cost is one read of every
-- job in flight. A job a retry holds (KeyRetryInOrder) is not in a list: counts stay on wherever
-- such holds are made.
local function keyedRecount(k, pools)
  local n, set = {}, {}
  local ids = redis.pcall('smembers', pools)
  if ids.err then ids = {} end
  for _, id in ipairs(ids) do
    local held = redis.pcall('lrange', k.p .. id .. ':inprogress', 0, -1)
    if not held.err then
      for _, e in ipairs(held) do
        local K = keyedSplit(e)
        if K then n[K] = (n[K] or 0) + 1 end
      end
    end
  end
  redis.pcall('del', k.running)
  for K, c in pairs(n) do
    set[#set + 1] = K
    set[#set + 1] = c
  end
  for i = 1, #set, 2000 do redis.pcall('hset', k.running, unpack(set, i, math.min(#set, i + 1999))) end
  redis.pcall('hset', k.meta, 'counts', '1')
end

-- keyedCounting returns whether a take keeps running counts, given meta's counts field (mode) and
-- the name's defaults d. The counts serve the limits only (the Client can count the in-progress
-- lists), and making and dropping a key's field for each job is about a quarter of what Redis
-- spends on a keyed job whose key has one job: so they are kept for good from the first take whose
-- name has a KeyConcurrency or holds retries (KeyRetryInOrder), with a recount when they were off,
-- and a take without either turns them off when it finds them unused (no field yet: kept by an
-- earlier release) and no job counted. A key's own concurrency override turns them on in keyedTake.
local function keyedCounting(k, mode, d)
  if d.limit > 0 or d.hold then
    if mode == '0' then keyedRecount(k, d.pools)
    elseif mode ~= '1' then redis.pcall('hset', k.meta, 'counts', '1') end
    return true
  end
  if mode == '0' then return false end
  if mode == '1' or redis.call('exists', k.running) == 1 then return true end
  redis.pcall('hset', k.meta, 'counts', '0')
  return false
end

-- keyedConf reads the overrides of keys (a list) from the conf hash in one call: per key, a table
-- {paused, limit, weight, rateJobs, ratePeriod}, each falling back on d, the name's defaults. It
-- returns nil when the conf hash holds another type.
local function keyedConf(k, keys, d)
  local fields = {}
  for _, K in ipairs(keys) do
    for _, f in ipairs(CONF_FIELDS) do fields[#fields + 1] = f .. K end
  end
  local v = redis.pcall('hmget', k.conf, unpack(fields))
  if v.err then return nil end
  local out = {}
  for i, K in ipairs(keys) do
    local b = 4 * (i - 1)
    local o = {paused = v[b + 1] ~= false, limit = d.limit, weight = 1, rateJobs = d.rateJobs, ratePeriod = d.ratePeriod}
    if v[b + 2] then
      o.limit = tonumber(v[b + 2]) or o.limit
      if o.limit < 0 then o.limit = 0 end
    end
    if v[b + 3] then o.weight = math.max(1, math.floor(tonumber(v[b + 3]) or 1)) end
    if v[b + 4] then
      local j, per = string.match(v[b + 4], '^(%d+)/(%d+)$')
      if j then o.rateJobs, o.ratePeriod = tonumber(j), tonumber(per) end
    end
    out[K] = o
  end
  return out
end

-- keyedReleaseMany frees the concurrency slots of keys whose jobs ended (byKey: key -> jobs), in a
-- few calls whatever their number, and gives a turn to each key that may have been left out of ready
-- at its limit and has jobs waiting (d: the name's defaults, whose limit applies without an
-- override). Writes go through pcall: state overwritten by hand must not stop the script that
-- acknowledges jobs.
local function keyedReleaseMany(k, byKey, d, name, channel)
  local keys = {}
  for K, n in pairs(byKey) do
    if n > 0 then keys[#keys + 1] = K end
  end
  if #keys == 0 or redis.pcall('hget', k.meta, 'counts') == '0' then return end
  local had = redis.pcall('hmget', k.running, unpack(keys))
  if had.err then return end
  local set, gone = {}, {}
  for i, K in ipairs(keys) do
    local left = keyedCount(had[i]) - byKey[K]
    if left > 0 then
      set[#set + 1] = K
      set[#set + 1] = keyedNum(left)
    else
      gone[#gone + 1] = K
    end
  end
  if #set > 0 then redis.pcall('hset', k.running, unpack(set)) end
  if #gone > 0 then redis.pcall('hdel', k.running, unpack(gone)) end
  -- Keys at their limit before this release were left out of ready: with jobs waiting, they get a
  -- turn again. A key this pool knows no limit of may have been left out by a pool that has one
  -- (the counts being kept says some pool or override needs them): it gets a turn too.
  local conf
  if redis.call('exists', k.conf) == 1 then conf = keyedConf(k, keys, d) end
  local rearm = {}
  for i, K in ipairs(keys) do
    local limit = d.limit
    if conf and conf[K] then limit = conf[K].limit end
    if limit == 0 or keyedCount(had[i]) >= limit then rearm[#rearm + 1] = K end
  end
  if #rearm == 0 then return end
  local scores = pcallReply('zmscore', k.waiting, unpack(rearm))
  if wrongType(scores, KEYED_NEEDS) then return end
  local waiting = {}
  for i, K in ipairs(rearm) do
    if scores[i] then waiting[#waiting + 1] = K end
  end
  keyedReadyMany(k, waiting, name, channel)
end

-- NONE is an empty table a take reads and never writes: what it holds in place of tables it needs
-- only with lane jobs or running counts.
local NONE = {}

-- laneSettle drops the lane fields of the keys whose lane jobs a take popped (served: key -> jobs
-- served from the lane; div: key -> jobs diverted; more: a list of keys served): a key has one job
-- in the lane at most. With divertedOnly, the keys served keep theirs: the take put their jobs back.
local function laneSettle(k, served, div, more, divertedOnly)
  local del = {}
  for LK in pairs(div) do del[#del + 1] = LK end
  if not divertedOnly then
    for LK in pairs(served) do
      if not div[LK] then del[#del + 1] = LK end
    end
    for _, LK in ipairs(more) do del[#del + 1] = LK end
  end
  for i = 1, #del, 1000 do redis.pcall('hdel', k.lane, unpack(del, i, math.min(#del, i + 999))) end
end

-- keyedTake moves up to n jobs of a job name's keys into the pool's keyed in-progress list, key by
-- key in turn, as entries "<key>\n<payload>", which it also appends to out. It pops the keys with
-- the earliest virtual times (as many as n, at most all those ready) and gives each its share of n
-- over the keys popped (rounded up, at least one job, times its weight), within its concurrency
-- limit and rate; a key then waits for its next turn, unless it has no job left (dropped), is at its
-- limit (dropped until a slot is released: keyedReleaseMany), paused (until resumed) or past its
-- rate (in delayed until it may go on). What it needs of the keys it pops (overrides, running
-- counts) it reads and writes in one call each, and a key's backlog comes with its RPOP, so a take
-- costs a few calls plus one RPOP a key (and at most one RPUSH or LLEN). d holds the name's
-- defaults: limit (0: none), rateJobs and ratePeriod (0 0: none), hold (KeyRetryInOrder) and pools
-- (the worker_pools set). nowMs returns the server's clock in ms. Returns the number of jobs taken,
-- or nil when a key of the name's state holds another type (nothing is taken then), or nil and true
-- when the server lacks RPOP with a count.
local function keyedTake(k, n, inprogress, d, nowMs, out)
  if redis.call('exists', k.delayed) == 1 then
    -- Keys whose rate window reopened get a turn again.
    local due = redis.pcall('zrangebyscore', k.delayed, '-inf', nowMs(), 'LIMIT', 0, 1000)
    if due.err then return nil end
    if #due > 0 then
      local vt = redis.pcall('hget', k.meta, 'vt')
      if type(vt) ~= 'string' then vt = 0 end
      local add = {}
      for _, K in ipairs(due) do
        add[#add + 1] = vt
        add[#add + 1] = K
      end
      if type(redis.pcall('zadd', k.ready, 'NX', unpack(add))) ~= 'number' then return nil end
      redis.call('zrem', k.delayed, unpack(due))
    end
  end
  local got, first = 0, #out + 1 -- the entries go to out[first..]
  local readd, drained, served, backlog = {}, {}, {}, {}
  local taken = {} -- key -> jobs taken
  local vt, waiting, hasConf, counting
  -- The lane jobs popped: per key whether it was looked up in the waiting index (seen) and has
  -- jobs in its queue (listed), and its jobs served from the lane and diverted; laneAt[j] the
  -- score of out[j] when it came from the lane.
  local seen, listed, laneServed, laneDiv = {}, {}, {}, {}
  local laneAt, hasWaiting = {}, nil
  local wide -- whether the first round popped WIDE_AT queue keys or more
  -- plain: whether a lane job is served as it is without a look at its key (no overrides, no
  -- running counts, no rate, no key with a queue). Rounds of lane jobs alone then go through a
  -- loop of their own, which makes no table per key: laneKeys, the keys of the jobs it served, and
  -- quick, per round the index in out of its first job, its jobs and its last score.
  local plain, laneKeys, quick = nil, {}, {}
  -- one: whether every key of the name may run one job at a time and no more (the name's
  -- KeyConcurrency 1, no overrides, no rate): rounds of queue keys alone then go through a loop of
  -- their own, until a round finds a lane job, a score beyond reach or a count below 0. Its keys
  -- served are listed in oneKeys with their backlogs in oneLeft, not in the general round's tables:
  -- a take of one-rounds alone writes its end from these lists (flushOne fills the tables when a
  -- general round or a failed push needs them).
  local one
  local oneKeys, oneLeft = {}, {}
  -- free: whether the name's keys run free of limits (no running counts, overrides or rate), and
  -- each: whether the take's first round was such keys' one job each (see below), its keys served
  -- listed in oneKeys and oneLeft as a one-round's are.
  local free, each
  local function flushOne()
    for i, K in ipairs(oneKeys) do
      taken[K], served[K], backlog[K] = 1, '0', oneLeft[i]
    end
    oneKeys, oneLeft = {}, {}
  end
  -- giveBack returns a round's popped keys to ready at their scores, when the take must stop.
  local function giveBack(popped)
    local add = {}
    for i = 1, #popped, 2 do
      add[i], add[i + 1] = tonumber(popped[i + 1]) or 0, popped[i]
    end
    if #add > 0 then redis.pcall('zadd', k.ready, unpack(add)) end
  end
  while got < n do
    if not vt then
      -- The name's state, read once ready holds keys: whether lane jobs go the quick way (plain)
      -- decides how the rounds pop.
      if redis.call('exists', k.ready) == 0 then break end
      local m = redis.pcall('hmget', k.meta, 'vt', 'waiting', 'counts')
      if m.err then return nil end
      vt, waiting = tonumber(m[1] or '') or 0, tonumber(m[2] or '') or 0
      hasConf = redis.call('exists', k.conf) == 1
      counting = keyedCounting(k, m[3], d)
      free = not hasConf and not counting and not (d.rateJobs > 0 and d.ratePeriod > 0)
      plain = free and redis.call('exists', k.waiting) == 0
      one = counting and not hasConf and d.limit == 1 and not (d.rateJobs > 0 and d.ratePeriod > 0)
    end
    local isQuick, popped = false, nil
    if plain then
      -- A round of lane jobs alone whose scores are all within reach (ZRANGE gives them in
      -- order, so the last one's tells) is served whole: no horizon applies without queue keys.
      -- Read without their scores and removed by rank, they cost Redis no score's text but the
      -- last one's.
      local members = pcallReply('zrange', k.ready, 0, n - got - 1)
      if wrongType(members, KEYED_NEEDS) then return nil end
      if #members == 0 then break end
      local at, nl = #out, #laneKeys
      isQuick = true
      for i, K in ipairs(members) do
        local j = string.find(K, '\n', 1, true)
        if not j then
          isQuick = false
          break
        end
        out[at + i], laneKeys[nl + i] = K, string.sub(K, 1, j - 1)
      end
      local last = isQuick and tonumber(redis.call('zscore', k.ready, members[#members]))
      if last and last <= vt + 1e12 then
        redis.call('zremrangebyrank', k.ready, 0, #members - 1)
        quick[#quick + 1], quick[#quick + 2], quick[#quick + 3] = at + 1, #members, last
        got = got + #members
        if last > vt then vt = last end
        if wide == nil then wide = false end
      else
        -- A queue key among them, or a score beyond reach: this round and the take's next ones
        -- go the general way.
        isQuick, plain = false, false
        for h = #out, at + 1, -1 do out[h] = nil end
        for h = #laneKeys, nl + 1, -1 do laneKeys[h] = nil end
      end
    end
    if not isQuick and one then
      -- A round of keys that may each run one job: those not running give one job each, and none
      -- gets a turn after it (at its limit, or drained), so their scores are not read but the
      -- last one's, which moves vt, and they are removed by rank. Its keys served go to oneKeys
      -- and oneLeft, its drained keys to drained, as the take's end needs them. A lane job, a
      -- score beyond reach or a count below 0 (written by hand: the general round lets such a key
      -- run more) sends this round and the take's next ones the general way.
      local keys = pcallReply('zrange', k.ready, 0, n - got - 1)
      if wrongType(keys, KEYED_NEEDS) then return nil end
      if #keys == 0 then break end
      local last
      for _, K in ipairs(keys) do
        if string.find(K, '\n', 1, true) then
          last = false
          break
        end
      end
      if last == nil then last = tonumber(redis.call('zscore', k.ready, keys[#keys])) end
      local running = last and last <= vt + 1e12 and redis.pcall('hmget', k.running, unpack(keys))
      if running and running.err then return nil end
      if running then
        for i = 1, #keys do
          if keyedCount(running[i]) < 0 then
            running = nil
            break
          end
        end
      end
      if running then
        redis.call('zremrangebyrank', k.ready, 0, #keys - 1)
        isQuick = true
        if last > vt then vt = last end
        if wide == nil then wide = #keys >= WIDE_AT end
        for i, K in ipairs(keys) do
          -- A key is served once a take: a one-round runs before any other round, and no key
          -- it serves goes back in ready during the take.
          if keyedCount(running[i]) == 0 then
            local q = keyedQueue(k, K)
            local v = redis.pcall('rpop', q)
            if type(v) == 'string' then
              out[#out + 1] = K .. '\n' .. v
              local left = redis.call('llen', q)
              if left == 0 then drained[#drained + 1] = K end
              got = got + 1
              local j = #oneKeys + 1
              oneKeys[j], oneLeft[j] = K, left
            else
              -- An empty queue, or one of another type (skipped, as the general round does).
              backlog[K] = 0
              drained[#drained + 1] = K
            end
          end
        end
      else
        one = false
        flushOne()
      end
    end
    if not isQuick then
      -- The keys with the earliest turns, as many as jobs are wanted: each gives one job at least.
      popped = pcallReply('zpopmin', k.ready, n - got)
      if wrongType(popped, KEYED_NEEDS) then return nil end
      if #popped == 0 then break end
      if free and got == 0 and #popped == 2 * n then
        -- A first round of n queue keys free of limits: each gives one job and, when it has more,
        -- goes back at its score plus one, as the general round would do. What a key has left
        -- comes from the waiting index, read for the round in one call (and from an LLEN when the
        -- index counts none left or does not list the key), rather than from a second job popped
        -- and pushed back as the general round does: that push was about a quarter of such a job's
        -- Redis time, and asking for two only where the index counts one cost more than the LLEN
        -- (benches/callgrind). A count the index holds too high (a job deleted by hand) gives the
        -- key a turn that finds it empty, which drops it. Its keys served go to oneKeys and
        -- oneLeft; a later round of the take goes the general way.
        local keys = {}
        for i = 1, #popped, 2 do
          if string.find(popped[i], '\n', 1, true) then
            keys = nil
            break
          end
          keys[#keys + 1] = popped[i]
        end
        local index = keys and pcallReply('zmscore', k.waiting, unpack(keys))
        if index and lacking(index) then
          -- ZMSCORE (Redis 6.2), as RPOP with a count in the general round.
          giveBack(popped)
          return nil, true
        end
        if index and wrongType(index, KEYED_NEEDS) then index = NONE end
        if index then
          isQuick, each = true, true
          if wide == nil then wide = #keys >= WIDE_AT end
          for j, K in ipairs(keys) do
            local s = tonumber(popped[2 * j])
            if not s or s ~= s or s < vt or s > vt + 1e12 then s = vt end
            vt = s
            local q = keyedQueue(k, K)
            local v = redis.pcall('rpop', q)
            if type(v) == 'string' then
              out[#out + 1] = K .. '\n' .. v
              got = got + 1
              local left = (tonumber(index[j] or '') or 1) - 1
              if left <= 0 then left = redis.call('llen', q) end
              if left > 0 then
                -- An integer score's text made once a run (Redis would format each with printf).
                local next = s + 1
                if next % 1 == 0 and next < 1e14 then next = keyedNum(next) end
                readd[#readd + 1] = next
                readd[#readd + 1] = K
              else
                drained[#drained + 1] = K
              end
              local i = #oneKeys + 1
              oneKeys[i], oneLeft[i] = K, left
            else
              -- An empty queue, or one of another type (skipped, as the general round does).
              backlog[K] = 0
              drained[#drained + 1] = K
            end
          end
          if #readd > 0 then
            redis.pcall('zadd', k.ready, unpack(readd))
            readd = {}
          end
        end
      end
    end
    if not isQuick then
      if each then
        each = false
        flushOne()
      end
      local keys, scores = {}, {}
      for i = 1, #popped, 2 do
        keys[#keys + 1] = popped[i]
        scores[#scores + 1] = tonumber(popped[i + 1])
      end
      -- Split the queue keys (kk) from the lane jobs (laneOf[i], their key; rk, those keys; lk,
      -- those new to this take). A round of queue keys alone makes no table of its own.
      local kk, laneOf, lk, rk, inRound = keys, NONE, NONE, NONE, NONE
      for i, K in ipairs(keys) do
        local j = string.find(K, '\n', 1, true)
        if j then
          if laneOf == NONE then
            kk, laneOf, lk, rk, inRound = {unpack(keys, 1, i - 1)}, {}, {}, {}, {}
          end
          local LK = string.sub(K, 1, j - 1)
          laneOf[i] = LK
          if not inRound[LK] then
            inRound[LK] = true
            rk[#rk + 1] = LK
          end
          if not seen[LK] then
            seen[LK] = true
            lk[#lk + 1] = LK
          end
        elseif laneOf ~= NONE then
          kk[#kk + 1] = K
        end
      end
      if wide == nil then wide = #kk >= WIDE_AT end -- lane jobs touch neither waiting nor running
      -- The share is rounded up, so that one round covers n when the keys have the jobs: rounded
      -- down, 65 jobs over 10 keys took 60 in a first round and 5 in a second, whose calls (then
      -- ZPOPMIN, HMGET, ZMSCORE, ZADD and five RPOPs) cost a tenth of the take's instructions. A key
      -- served last may get less than its share; its virtual time moves by what it got, so it loses
      -- no turn.
      local quantum = math.max(1, math.ceil((n - got) / #keys))
      if #lk > 0 then
        if hasWaiting == nil then hasWaiting = redis.call('exists', k.waiting) == 1 end
        if hasWaiting then
          local v = pcallReply('zmscore', k.waiting, unpack(lk))
          if wrongType(v, KEYED_NEEDS) then v = {} end
          for i, LK in ipairs(lk) do
            if v[i] then listed[LK] = true end
          end
        end
      end
      local conf
      if hasConf then
        local ck = kk
        if #rk > 0 then
          ck = {unpack(kk)}
          for _, LK in ipairs(rk) do ck[#ck + 1] = LK end
        end
        conf = #ck > 0 and keyedConf(k, ck, d) or {}
        if not conf then
          giveBack(popped)
          return nil
        end
        if not counting then
          for _, o in pairs(conf) do
            if o.limit > 0 then
              -- A key's own limit needs the counts: those of this take's earlier rounds are read
              -- at its end.
              keyedRecount(k, d.pools)
              counting = true
              break
            end
          end
        end
      end
      local running, runningOf = NONE, NONE
      if counting and #kk > 0 then
        running = redis.pcall('hmget', k.running, unpack(kk))
        if running.err then
          giveBack(popped)
          return nil
        end
        runningOf = {}
        for i, K in ipairs(kk) do runningOf[K] = running[i] end
      end
      -- horizon is the earliest next turn of a queue key served in this round: a lane job beyond it
      -- waits for the next round, so that a key of weight w still gets w jobs a unit of virtual time
      -- while the lane jobs popped with it span many units.
      local horizon
      for i, K in ipairs(keys) do
        local s = scores[i]
        -- A key added by another program with an old score takes its turn now, not many in a row;
        -- one with a score beyond reach (inf, or far ahead) is brought back to now.
        if not s or s ~= s or s < vt or s > vt + 1e12 then s = vt end
        local LK = laneOf[i]
        if LK and (got >= n or (horizon and s > horizon)) then
          readd[#readd + 1] = scores[i] or s
          readd[#readd + 1] = K
        elseif LK then
          -- A lane job: served as it is, unless its key now needs its queue (see "The lane").
          local o = conf and conf[LK]
          local divert = counting or (d.rateJobs > 0 and d.ratePeriod > 0) or listed[LK] or
            (o and (o.paused or o.limit > 0 or o.weight ~= 1 or (o.rateJobs > 0 and o.ratePeriod > 0)))
          if divert then
            local len = redis.pcall('lpush', keyedQueue(k, LK), string.sub(K, #LK + 2))
            if type(len) == 'number' then
              listed[LK] = true
              laneDiv[LK] = (laneDiv[LK] or 0) + 1
              redis.pcall('zadd', k.waiting, len, LK)
              if len == 1 then redis.pcall('zadd', k.ready, 'NX', vt, LK) end
              -- A key this take served and drained has jobs again: the take's end must not drop
              -- its waiting entry.
              if backlog[LK] then backlog[LK] = len end
            else
              divert = false -- a queue of another type: served from the lane after all
            end
          end
          if not divert then
            out[#out + 1] = K
            laneAt[#out] = scores[i] or s
            got = got + 1
            if s > vt then vt = s end
            laneServed[LK] = (laneServed[LK] or 0) + 1
          end
        elseif got >= n then
          -- Not served in this take: it keeps its turn.
          readd[#readd + 1] = s
          readd[#readd + 1] = K
        else
          vt = s
          local o = conf and conf[K]
          local limit, weight, rj, rp = d.limit, 1, d.rateJobs, d.ratePeriod
          if o then limit, weight, rj, rp = o.limit, o.weight, o.rateJobs, o.ratePeriod end
          local run = keyedCount(runningOf[K]) + (taken[K] or 0)
          local m = math.min(quantum * weight, n - got)
          if o and o.paused then
            m = 0 -- left out of ready: resuming the key gives it a turn
          elseif limit > 0 and limit - run < m then
            m = limit - run
          end
          local q = k.p .. '{' .. K .. '}'
          local tat, interval
          if m > 0 and rj > 0 and rp > 0 then
            local v = redis.pcall('get', q .. ':rate')
            tat = type(v) == 'string' and tonumber(v) or 0
            interval = rp / rj
            local now = nowMs()
            if tat < now then tat = now end
            local allowed = math.floor((now + rp - tat) / interval)
            if allowed < m then m = allowed end
            if m <= 0 then
              redis.pcall('zadd', k.delayed, math.ceil(tat - rp + interval), K)
              tat = nil
            end
          end
          if m > 0 then
            -- The backlog, unless an earlier round of the take left the key more than m: a key is
            -- asked for m and, if it gives m, its length. A share of one job (a take over many keys,
            -- most of one job) asks for two instead, and puts the second back if it comes, the
            -- length after it saying how many are left: an LLEN costs about half a push of a job,
            -- and a key that gives one job of two needs neither. A key this turn brings to its limit
            -- gets no turn after it, so it is asked for m. (Reading the backlogs from the waiting
            -- index cost a score a key, which Redis before 7.2 formats with printf: more than either.)
            local b = backlog[K] or -1
            local ask = m
            if b <= m and m == 1 and not (limit > 0 and run + m >= limit) then ask = m + 1 end
            local vals = pcallReply('rpop', q, keyedNum(ask))
            if lacking(vals) and got == 0 then
              -- RPOP with a count (Redis 6.2) fails on the first key a take serves.
              giveBack(popped)
              return nil, true
            end
            if wrongType(vals, KEYED_NEEDS) then vals = false end -- the key is skipped
            local took = vals and math.min(#vals, m) or 0
            if took == 1 then
              out[#out + 1] = K .. '\n' .. vals[1]
            else
              local prefix = K .. '\n'
              for j = 1, took do out[#out + 1] = prefix .. vals[j] end
            end
            local more
            if ask > m then
              more = vals and #vals > m
              b = 0
              if more then b = redis.call('rpush', q, vals[m + 1]) end
            elseif b < 0 then
              b = 0
              if vals and #vals == m then b = redis.call('llen', q) end
              more = b > 0
            else
              b = b - took
              more = took == m and b > 0
            end
            backlog[K] = b
            if more then
              if limit == 0 or run + took < limit then
                local next = s + took / weight
                readd[#readd + 1] = next
                readd[#readd + 1] = K
                if not horizon or next < horizon then horizon = next end
              end
            else
              drained[#drained + 1] = K
            end
            if took > 0 then
              got = got + took
              taken[K] = (taken[K] or 0) + took
              if counting and not served[K] then served[K] = runningOf[K] or '0' end
              if tat then
                redis.pcall('set', q .. ':rate', tostring(tat + took * interval), 'PX', math.ceil(rp * 2))
              end
            end
          end
        end
      end
      if #readd > 0 then
        redis.pcall('zadd', k.ready, unpack(readd))
        readd = {}
      end
    end
  end
  if not vt then return 0 end
  if got == 0 then
    laneSettle(k, laneServed, laneDiv, laneKeys, false)
    redis.pcall('hset', k.meta, 'vt', tostring(vt))
    return 0
  end
  -- The entries into the in-progress list: a list of another type puts every job back, and every
  -- key served back in ready (one drained or at its limit would otherwise get no turn again).
  for i = first, #out, 1000 do
    if type(redis.pcall('lpush', inprogress, unpack(out, i, math.min(#out, i + 999)))) ~= 'number' then
      -- A quick round's jobs go back at its last score: their own were not read.
      for q = 1, #quick, 3 do
        for h = quick[q], quick[q] + quick[q + 1] - 1 do laneAt[h] = quick[q + 2] end
      end
      flushOne()
      for j = #out, first, -1 do
        if laneAt[j] then
          redis.call('zadd', k.ready, laneAt[j], out[j])
        else
          local K, payload = keyedSplit(out[j])
          redis.call('rpush', keyedQueue(k, K), payload)
        end
        out[j] = nil
      end
      local add = {}
      for K in pairs(taken) do
        add[#add + 1] = vt
        add[#add + 1] = K
      end
      if #add > 0 then redis.pcall('zadd', k.ready, 'NX', unpack(add)) end
      laneSettle(k, laneServed, laneDiv, laneKeys, true)
      return nil
    end
  end
  -- The counts of the keys served and their backlogs, the jobs waiting over all keys, the turn.
  local counts, upd, gone = {}, {}, {}
  if one or each then
    -- One-rounds alone: each key served ran no job before (count 1 now, where counted), each key
    -- drained has none left.
    for i, K in ipairs(oneKeys) do
      if one then counts[2 * i - 1], counts[2 * i] = K, '1' end
      if oneLeft[i] > 0 then
        upd[#upd + 1] = keyedNum(oneLeft[i])
        upd[#upd + 1] = K
      end
    end
    gone = drained
  else
    laneSettle(k, laneServed, laneDiv, laneKeys, false)
    if counting then
      -- Counts turned on during the take (a key's own limit): its lane jobs count too.
      for LK, c in pairs(laneServed) do
        taken[LK] = (taken[LK] or 0) + c
        backlog[LK] = backlog[LK] or 0
      end
    end
    local unread = {}
    for K, t in pairs(taken) do
      if counting and not served[K] then unread[#unread + 1] = K end
      if backlog[K] > 0 then
        upd[#upd + 1] = keyedNum(backlog[K])
        upd[#upd + 1] = K
      end
    end
    if #unread > 0 then
      local v = redis.pcall('hmget', k.running, unpack(unread))
      for i, K in ipairs(unread) do served[K] = (not v.err and v[i]) or '0' end
    end
    if counting then
      for K, t in pairs(taken) do
        counts[#counts + 1] = K
        counts[#counts + 1] = keyedNum(keyedCount(served[K]) + t)
      end
    end
    for _, K in ipairs(drained) do
      if backlog[K] <= 0 then gone[#gone + 1] = K end
    end
  end
  if counting then
    if wide and redis.call('exists', k.running) == 0 then
      -- A running hash made here would be a listpack until keyedWiden, each count written a scan
      -- of those before it: WIDE_MEMBER among them makes Redis make it a hashtable first.
      counts[#counts + 1], counts[#counts + 2] = WIDE_MEMBER, '0'
      redis.pcall('hset', k.running, unpack(counts))
      redis.pcall('hdel', k.running, WIDE_MEMBER)
    else
      redis.pcall('hset', k.running, unpack(counts))
    end
  end
  if #gone > 0 then redis.pcall('zrem', k.waiting, unpack(gone)) end
  if #upd > 0 then redis.pcall('zadd', k.waiting, 'XX', unpack(upd)) end
  redis.pcall('hset', k.meta, 'vt', tostring(vt), 'waiting', math.max(waiting - got, 0))
  -- After the writes, so that the keys this take created are converted too.
  if wide then keyedWiden(k) end
  return got
end
