-- Records that this pool is alive (in Redis server time), squares the pool's concurrency counters
-- with what it actually holds for the job names given, reports, among the other pools it looks at
-- (every one, or the few after it: see below), those whose heartbeat is older than their dead-after
-- limit or missing, and the earliest heartbeat among those that are late (older than the late-after
-- limit), so the caller can look again when that one would be dead, and looks for waiting jobs
-- (scan, lib/scan.lua), so an idle pool needs no other command. It reads other pools' heartbeat
-- hashes by name (ARGV[9] is their key prefix); with a hash-tagged namespace they share the slot of
-- KEYS[1].
--
-- A pool's dead-after limit is the larger of ARGV[8] and the dead_after its hash declares (the time
-- within which it stops starting jobs while its heartbeats fail, longer while it is idle); a hash that
-- declares none (a pool of gocraft/work or of an earlier version) gets at least ${legacyDeadAfter}
-- seconds. An idle pool (its field idle is 1: it holds no job) beats less often; the reply says
-- whether a live-looking pool looked at is not idle, so that the caller keeps beating often while a
-- pool it watches may hold jobs. The other pools
-- whose process field says they run on this pool's machine and in its PID namespace (ARGV[17] is
-- that prefix) are reported too, so that the caller can check whether their processes still exist.
--
-- keys: varies
-- uses: keychecks, scan
--
-- KEYS[1] worker_pools set; KEYS[2] this pool's heartbeat hash
-- KEYS[3..e] (e = ARGV[13]) scheduled set, retry set, batches_expiry, groups_due, debounces, then
--   per job name its queue and its keyed jobs' ready and delayed keys (scan's keys)
-- KEYS[e+5i-4..e+5i], one group per job name i to square: in-progress list, keyed in-progress list
--   (the pool's jobs of the name's keys, which count against MaxConcurrency too), lock counter,
--   lock_info hash, max_concurrency
-- ARGV[1] pool ID; ARGV[2] started_at; ARGV[3] job_names; ARGV[4] concurrency; ARGV[5] worker_ids;
--   ARGV[6] host; ARGV[7] pid (the fields of the heartbeat hash)
-- ARGV[8] dead-after seconds (also written as dead_after); ARGV[9] heartbeat key prefix;
--   ARGV[10] late-after seconds
-- ARGV[11] "1" to recompute every lock of the groups from its lock_info (else only the locks of
--   limited queues and those whose lock_info entry of this pool changed)
-- ARGV[12] the jobs-key prefix (to name the job of a lock_info key); ARGV[13] e
-- ARGV[14] periodic_jobs ("" when none); ARGV[15] process (the pool's process identity, "" when
--   unknown); ARGV[16] "1" when this pool's heartbeat was written before (its hash missing then
--   means a reaper took its jobs back); ARGV[17] the process prefix of this machine and PID
--   namespace ("" when unknown); ARGV[18] the pool's epoch (how many times it found itself reaped,
--   written as the field epoch by the first beat, and plus one by a beat that finds it reaped);
--   ARGV[19] the digest of the registered pools' IDs that a beat of this pool returned before ("":
--   none); ARGV[20] the dead-after seconds the pool declares while it is idle ("": it is not idle,
--   and declares ARGV[8]); ARGV[20+i] the MaxConcurrency of group i (also written back if its key
--   was overwritten)
--
-- Returns {now, earliest late heartbeat (0: none), scan reply, reaped (1: this pool's hash, or its
-- epoch, was gone, or it holds a later epoch than ARGV[18]: a beat that found it gone lost its
-- reply), the digest of the registered pools' IDs (for ARGV[19] of the next beat), 1 when a
-- live-looking pool looked at is not idle (else 0), then a triple per pool to report: its ID, its job_names (or ""), and "" when it is stale or its process
-- field when it is a live-looking pool of this machine}; a pool with a lock_info entry but no
-- registration is reported as stale with that one job name.

local pool, startedAt, jobNames, concurrency, workerIDs, host, pid =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local deadAfter, heartbeatPrefix, lateAfter, fullReconcile =
  tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10]), ARGV[11] == '1'
local jobsPrefix, scanEnd, periodicJobs = ARGV[12], tonumber(ARGV[13]), ARGV[14]
local process, wasRegistered, machine, epoch = ARGV[15], ARGV[16] == '1', ARGV[17], tonumber(ARGV[18])
local idleDeadAfter = ARGV[20]
local legacyDeadAfter = math.max(deadAfter, ${legacyDeadAfter})

local now = tonumber(redis.call('time')[1])
local unregistered = {}
local fields = {'heartbeat_at', now, 'started_at', startedAt, 'job_names', jobNames, 'concurrency', concurrency,
  'worker_ids', workerIDs, 'host', host, 'pid', pid, 'dead_after', deadAfter, 'idle', '0'}
if idleDeadAfter ~= '' then
  fields[16], fields[18] = idleDeadAfter, '1'
end
if process ~= '' then
  fields[#fields + 1] = 'process'
  fields[#fields + 1] = process
end
if periodicJobs ~= '' then
  fields[#fields + 1] = 'periodic_jobs'
  fields[#fields + 1] = periodicJobs
end
-- One HSET a beat, of every field but the epoch, with 'epoch_seen', which a beat that counts the
-- epoch up removes. Its reply counts the fields it added: none, and nothing that the pool must learn
-- can have changed. Some: the epoch is read. None there: the hash was gone (its pool was reaped, when
-- it had written it before). A later one than the pool's: a beat that found the pool reaped wrote it,
-- and its reply was lost. (An idle pool's beats are most of its commands.)
fields[#fields + 1] = 'epoch_seen'
fields[#fields + 1] = '1'
local reaped = 0
if redis.call('hset', KEYS[2], unpack(fields)) > 0 then
  local held = tonumber(redis.call('hget', KEYS[2], 'epoch') or '')
  if (not held and wasRegistered) or (held and held > epoch) then reaped = 1 end
  -- The epoch the pool counts once it reads this reply: hand-offs carry it (hand_off.lua).
  if reaped == 1 or not held then redis.call('hset', KEYS[2], 'epoch', tostring(epoch + reaped)) end
  if reaped == 1 then redis.call('hdel', KEYS[2], 'epoch_seen') end
end
-- A worker_pools of the wrong type lists no pool (none can be reaped, none is registered) and does
-- not stop the heartbeat: the pool goes on running jobs.
local pools, registered, listed = redis.pcall('smembers', KEYS[1]), {}, true
if type(pools) ~= 'table' or pools.err then pools, listed = {}, false end
for _, id in ipairs(pools) do registered[id] = true end
if listed and not registered[pool] then
  redis.call('sadd', KEYS[1], pool)
  registered[pool] = true
  pools[#pools + 1] = pool
end
-- The groups to square: five keys each after the scan's keys, their MaxConcurrency after ARGV[20].
for i = 1, (#KEYS - scanEnd) / 5 do
  local k = scanEnd + 5 * (i - 1)
  local inprogress, keyedInprogress, lock, lockInfo, maxKey = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4], KEYS[k+5]
  local max = tonumber(ARGV[20 + i])
  -- Derived counters of the wrong type are repaired: other pools re-add their lock_info entries
  -- with their own heartbeats.
  local repaired = false
  -- Only strings are ever rewritten: a key of another type may be the queue of a colliding job name.
  local infoType = keyType(lockInfo)
  if infoType == 'string' then redis.call('del', lockInfo); repaired = true end
  local lockType = keyType(lock)
  local lockOK = lockType == 'none' or lockType == 'string'
  if not intOf(lock) then repaired = true end
  local maxType = keyType(maxKey)
  if not intOf(maxKey) and maxType == 'string' then redis.call('set', maxKey, max) end
  if max > 0 then repaired = true end
  if infoType ~= 'none' and infoType ~= 'hash' and infoType ~= 'string' then lockOK = false end
  if lockOK then
    local held = redis.pcall('llen', inprogress)
    local keyedHeld = redis.pcall('llen', keyedInprogress)
    if type(held) ~= 'number' then held = 0 end
    if type(keyedHeld) == 'number' then held = held + keyedHeld end
    -- Only a limited queue's jobs are counted (the exchange counts no others).
    if max == 0 then held = 0 end
    local had = tonumber(redis.call('hget', lockInfo, pool) or 0) or 0
    if held ~= had then
      if held > 0 then redis.call('hset', lockInfo, pool, held) else redis.call('hdel', lockInfo, pool) end
    end
    if held ~= had or repaired or fullReconcile then
      -- lock is the sum of the entries; an entry of a pool that is not registered is reported as a
      -- stale pool, whose reaping puts its in-progress jobs back and drops the entry.
      local sum = 0
      local entries = redis.call('hgetall', lockInfo)
      for j = 1, #entries, 2 do
        sum = sum + (tonumber(entries[j+1]) or 0)
        if listed and not registered[entries[j]] then
          unregistered[#unregistered + 1] = entries[j]
          -- The job name: the key without the jobs prefix and ':lock_info'.
          unregistered[#unregistered + 1] = string.sub(lockInfo, #jobsPrefix + 1, -11)
        end
      end
      redis.call('set', lock, sum)
    end
  end
end
local out = {now, 0, scan(3, scanEnd, now), reaped, '', 0}
for j = 1, #unregistered, 2 do
  out[#out + 1] = unregistered[j]
  out[#out + 1] = unregistered[j + 1]
  out[#out + 1] = ''
end
-- Each pool looks at the pools that follow it in the order of their IDs (after the last, the first),
-- up to ${watchedPeers} that look alive (neither dead nor late) and every one before those: so a pool
-- that dies is looked at by the ${watchedPeers} nearest live pools before it at each of their beats,
-- and a beat costs as much with a thousand pools as with three. A beat looks at every pool when the
-- pools are not those the caller knew (ARGV[19], the digest of their IDs this returned before): the
-- caller learns of each live-looking pool of this machine, whose process it checks at each beat.
local order = {}
for i, id in ipairs(pools) do order[i] = id end
table.sort(order)
local members = redis.sha1hex(table.concat(order, '\n'))
local from
for i, id in ipairs(order) do
  if id == pool then from = i end
end
-- Reads a pool's heartbeat, reports it (dead, or of this machine) and says whether it looks alive.
local function look(id)
  local hb = redis.pcall('hmget', heartbeatPrefix .. id, 'heartbeat_at', 'job_names', 'dead_after', 'process', 'idle')
  if hb.err then hb = {false, false, false, false, false} end
  local at = tonumber(hb[1] or '')
  local limit = math.max(deadAfter, tonumber(hb[3] or '') or legacyDeadAfter)
  if not at or now - at > limit then
    out[#out + 1] = id
    out[#out + 1] = hb[2] or ''
    out[#out + 1] = ''
    return false
  end
  local p = hb[4]
  if machine ~= '' and type(p) == 'string' and string.sub(p, 1, #machine) == machine then
    out[#out + 1] = id
    out[#out + 1] = hb[2] or ''
    out[#out + 1] = p
  end
  if now - at > lateAfter + limit - deadAfter then
    if out[2] == 0 or at + limit - deadAfter < out[2] then
      -- Reported as the heartbeat a pool of this one's limit would have, to be dead at the same time.
      out[2] = at + limit - deadAfter
    end
    return false
  end
  if hb[5] ~= '1' then out[6] = 1 end
  return true
end
if members ~= ARGV[19] or not from then
  for _, id in ipairs(order) do
    if id ~= pool then look(id) end
  end
else
  local alive = 0
  for step = 1, #order - 1 do
    if look(order[(from + step - 1) % #order + 1]) then
      alive = alive + 1
      if alive == ${watchedPeers} then break end
    end
  end
end
out[5] = members
return out
