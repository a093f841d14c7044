-- Records that this pool is alive (in Redis server time), squares the pool's concurrency counters
-- with what it actually holds for the job names given, reports the other pools whose heartbeat is
-- older than the dead-after limit or missing, and the earliest heartbeat among the others that are
-- late (older than the late-after limit), so the caller can look again when that one would be dead,
-- and looks for waiting jobs (scan, lib/scan.lua), so an idle pool needs no other command. It reads
-- other pools' heartbeat hashes by name (ARGV[9] is their key prefix); with a hash-tagged namespace
-- they share the slot of KEYS[1].
--
-- keys: varies
-- uses: keychecks, scan
--
-- KEYS[1] worker_pools set; KEYS[2] this pool's heartbeat hash
-- KEYS[3..e] (e = ARGV[13]) scheduled set, retry set, batches_expiry, groups_due, then per job
--   name its queue and its keyed jobs' ready and delayed keys (scan's keys)
-- KEYS[e+5i-4..e+5i], one group per job name i to square: in-progress list, keyed in-progress list
--   (the pool's jobs of the name's keys, which count against MaxConcurrency too), lock counter,
--   lock_info hash, max_concurrency
-- ARGV[1] pool ID; ARGV[2] started_at; ARGV[3] job_names; ARGV[4] concurrency; ARGV[5] worker_ids;
--   ARGV[6] host; ARGV[7] pid (the fields of the heartbeat hash)
-- ARGV[8] dead-after seconds; ARGV[9] heartbeat key prefix; ARGV[10] late-after seconds
-- ARGV[11] "1" to recompute every lock of the groups from its lock_info (else only the locks of
--   limited queues and those whose lock_info entry of this pool changed)
-- ARGV[12] the jobs-key prefix (to name the job of a lock_info key); ARGV[13] e
-- ARGV[14] periodic_jobs ("" when none); ARGV[14+i] the MaxConcurrency of group i (also written
--   back if its key was overwritten)
--
-- Returns {now, earliest late heartbeat (0: none), scan reply, stale pool ID 1, its job_names (or
-- ""), ...}; a pool with a lock_info entry but no registration is reported as stale with that one
-- job name.

local pool, startedAt, jobNames, concurrency, workerIDs, host, pid =
  ARGV[1], ARGV[2], ARGV[3], ARGV[4], ARGV[5], ARGV[6], ARGV[7]
local deadAfter, heartbeatPrefix, lateAfter, fullReconcile =
  tonumber(ARGV[8]), ARGV[9], tonumber(ARGV[10]), ARGV[11] == '1'
local jobsPrefix, scanEnd, periodicJobs = ARGV[12], tonumber(ARGV[13]), ARGV[14]

local now = tonumber(redis.call('time')[1])
local unregistered = {}
local fields = {'heartbeat_at', now, 'started_at', startedAt, 'job_names', jobNames, 'concurrency', concurrency,
  'worker_ids', workerIDs, 'host', host, 'pid', pid}
if periodicJobs ~= '' then
  fields[#fields + 1] = 'periodic_jobs'
  fields[#fields + 1] = periodicJobs
end
redis.call('hset', KEYS[2], unpack(fields))
local pools, registered = redis.call('smembers', KEYS[1]), {}
for _, id in ipairs(pools) do registered[id] = true end
if not registered[pool] then
  redis.call('sadd', KEYS[1], pool)
  registered[pool] = true
end
-- The groups to square: five keys each after the scan's keys, their MaxConcurrency after ARGV[14].
for i = 1, (#KEYS - scanEnd) / 5 do
  local k = scanEnd + 5 * (i - 1)
  local inprogress, keyedInprogress, lock, lockInfo, maxKey = KEYS[k+1], KEYS[k+2], KEYS[k+3], KEYS[k+4], KEYS[k+5]
  local max = tonumber(ARGV[14 + i])
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
        if not registered[entries[j]] then
          unregistered[#unregistered + 1] = entries[j]
          -- The job name: the key without the jobs prefix and ':lock_info'.
          unregistered[#unregistered + 1] = string.sub(lockInfo, #jobsPrefix + 1, -11)
        end
      end
      redis.call('set', lock, sum)
    end
  end
end
local out = {now, 0, scan(3, scanEnd, now)}
for j = 1, #unregistered do out[#out + 1] = unregistered[j] end
for _, id in ipairs(pools) do
  if id ~= pool then
    local hb = redis.pcall('hmget', heartbeatPrefix .. id, 'heartbeat_at', 'job_names')
    if hb.err then hb = {false, false} end
    local at = tonumber(hb[1] or '')
    if not at or now - at > deadAfter then
      out[#out + 1] = id
      out[#out + 1] = hb[2] or ''
    elseif now - at > lateAfter and (out[2] == 0 or at < out[2]) then
      out[2] = at
    end
  end
end
return out
