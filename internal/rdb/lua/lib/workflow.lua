-- workflow: the transitions of workflow state (batches, dependencies and job records) that more
-- than one script makes. Every write to workflow state goes through pcall: a key another program
-- overwrote with the wrong type must not stop the script that acknowledges a job (its effect is then
-- lost, and Client.BatchStatus reports the damage).
--
-- uses: keychecks, keyed
-- defines: WK, pc, announceEnd, deadForm, pushJob, settle, batchComplete, batchCount, record
--
-- A batch is the hash <ns>:batch:<id>: description, created_at, state (open, closed, complete),
-- total, c, failed, keep, completed_at, the callbacks on_complete and on_success (the head of each
-- callback job's payload, ending inside its args) with their job names, and complete_fired and
-- success_fired once they ran. c counts the members still pending plus WK (2^26) times the members
-- that died, so that a member's end is one HINCRBY. Members carry "batch":"<id>" in their payload;
-- the hash keeps no list of them, so its size does not grow with the batch. <ns>:batches indexes
-- batches by creation time; <ns>:batches_expiry holds the complete ones by when their hash expires,
-- so that the pools' upkeep drops them from the index then (trim_batches.lua).
--
-- A job record is the hash <ns>:job:<id>: name, state (waiting, queued, retrying, done, dead,
-- dropped), enqueued_at, finished_at, attempts, pool, err, result, batch, keep; a job waiting for
-- dependencies also holds its payload, the number of dependencies it waits for (deps) and what it
-- does when one dies (policy: dead or run). <key>:next, for a job record or a batch, lists the IDs
-- of the jobs waiting for it. Tracked jobs ("tracked":true in the payload) have a record from their
-- enqueue; other jobs get one when they finish, if their pool keeps records for their name. While
-- an attempt runs, the pool's observer writes state running, started_at, attempt and the progress
-- (progress, progress_msg, progress_at) into the record (lua/running.lua); a job enqueued with
-- dependencies on jobs lists their IDs in 'after'. The ID of every job whose record takes a final
-- state (done, dead, dropped, deleted) is published on <ns>:ended, by the script that writes it,
-- for Client.WaitJob.

-- WK is the unit of a batch counter's dead members: Go's batchCounterUnit (batch.go), written in by
-- the loader (redis_scripts.go).
local WK = ${batchCounterUnit}
local function pc(...)
  local r = redis.pcall(...)
  if type(r) == 'table' and r.err then return nil end
  return r
end
-- announceEnd tells the waiters of job id (Client.WaitJob) that its record took a final state.
local function announceEnd(prefix, id)
  redis.call('publish', prefix .. 'ended', id)
end
-- deadForm is a payload that never ran as a dead-set member: its failure appended to the object.
local function deadForm(payload, reason, now)
  return string.sub(payload, 1, -2) .. ',"fails":1,"err":' .. cjson.encode(reason) .. ',"failed_at":' .. now .. '}'
end
-- pushJob queues a payload for name (at the back of its key's queue for a keyed job, whose key is
-- K, never refused for the key's cap), waking idle pools; a queue key of the wrong type sends the job
-- to the dead set instead, with the reason.
local function pushJob(prefix, name, payload, channel, now, K)
  if K and K ~= '' then
    local k = keyedKeys(prefix .. 'keyed:' .. name .. ':')
    local q = keyedQueue(k, K)
    local t = keyType(q)
    if keyedTypesOK(k) and (t == 'none' or t == 'list') then
      keyedPush(k, K, name, {payload}, 1, 1, channel)
      return true
    end
    redis.pcall('zadd', prefix .. 'dead', now, deadForm(payload, "its key's queue or state holds the wrong type", now))
    return false
  end
  local n = redis.pcall('lpush', prefix .. 'jobs:' .. name, payload)
  if type(n) ~= 'number' then
    redis.pcall('zadd', prefix .. 'dead', now, deadForm(payload, 'its queue key holds the wrong type', now))
    return false
  end
  if n == 1 then redis.call('publish', channel, name) end
  return true
end
-- settle tells the jobs waiting on something that ended (their IDs are listed at nextKey): with ok,
-- each waits for one dependency fewer and is queued when none is left; otherwise each goes to the
-- dead set with reason (or is queued all the same, when its policy is run), and the jobs waiting on
-- a job that goes to the dead set follow. The lists are small (a job's direct dependants).
local function settle(prefix, nextKey, ok, reason, now, channel)
  local work = {{nextKey, ok, reason}}
  while #work > 0 do
    local item = table.remove(work)
    local ids = pc('lrange', item[1], 0, -1) or {}
    pc('del', item[1])
    for _, id in ipairs(ids) do
      local rk = prefix .. 'job:' .. id
      local f = pc('hmget', rk, 'state', 'payload', 'name', 'policy', 'keep', 'key')
      if f and f[1] == 'waiting' and f[2] and f[3] then
        if item[2] or f[4] == 'run' then
          local left = pc('hincrby', rk, 'deps', -1)
          if not left or left <= 0 then
            pc('hset', rk, 'state', 'queued')
            pc('hdel', rk, 'payload', 'deps')
            pushJob(prefix, f[3], f[2], channel, now, f[6])
          end
        else
          local why = 'dependency failed: ' .. item[3]
          redis.pcall('zadd', prefix .. 'dead', now, deadForm(f[2], why, now))
          pc('hset', rk, 'state', 'dead', 'err', why, 'finished_at', now)
          pc('hdel', rk, 'payload', 'deps')
          pc('expire', rk, tonumber(f[5]) or 86400)
          announceEnd(prefix, id)
          work[#work + 1] = {rk .. ':next', false, 'job ' .. id .. ' did not run'}
        end
      end
    end
  end
end
-- batchComplete fires a closed batch whose members all ended (c is its counter): on_complete, and
-- on_success when none died, each receiving the counts in its args; then the jobs waiting for the
-- batch; then the bookkeeping expires after keep. The state change makes it happen once.
local function batchComplete(prefix, id, c, now, channel)
  local bk = prefix .. 'batch:' .. id
  local f = pc('hmget', bk, 'state', 'total', 'failed', 'on_complete', 'on_complete_name', 'on_success',
    'on_success_name', 'keep')
  if not f or f[1] ~= 'closed' then return false end
  local dead = math.floor(c / WK)
  local total = tonumber(f[2]) or 0
  pc('hset', bk, 'state', 'complete', 'completed_at', now)
  local tail = ',"batch_total":' .. total .. ',"batch_done":' .. (total - dead) .. ',"batch_dead":' .. dead ..
    ',"batch_failed":' .. (tonumber(f[3]) or 0) .. '}}'
  if f[4] and f[5] then
    pushJob(prefix, f[5], f[4] .. tail, channel, now)
    pc('hset', bk, 'complete_fired', now)
  end
  if dead == 0 and f[6] and f[7] then
    pushJob(prefix, f[7], f[6] .. tail, channel, now)
    pc('hset', bk, 'success_fired', now)
  end
  settle(prefix, bk .. ':next', dead == 0, 'batch ' .. id .. ' had ' .. dead .. ' dead members', now, channel)
  local keep = tonumber(f[8]) or 86400
  pc('expire', bk, keep)
  pc('zadd', prefix .. 'batches_expiry', now + keep, id)
  return true
end
-- batchCount adds delta to a batch's counter (-1: a member done; WK - 1: a member died; n: n members
-- added) and completes the batch when no member is left pending. A counter that comes back 0 + delta
-- from a batch with no state (expired, deleted) is removed rather than left behind without expiry.
local function batchCount(prefix, id, delta, now, channel)
  local bk = prefix .. 'batch:' .. id
  local c = pc('hincrby', bk, 'c', delta)
  if not c then return end
  if c == delta and not pc('hget', bk, 'state') then
    pc('del', bk)
    return
  end
  if delta < WK and c % WK == 0 then batchComplete(prefix, id, c, now, channel) end
end
-- record writes a job's record: its latest outcome, kept for the longer of keep and the record's own
-- keep from now.
local function record(prefix, id, name, state, final, attempts, pool, err, result, keep, batch, now)
  local rk = prefix .. 'job:' .. id
  local fields = {'name', name, 'state', state, 'attempts', attempts, 'pool', pool}
  if final then fields[#fields + 1] = 'finished_at'; fields[#fields + 1] = now end
  if err ~= '' then fields[#fields + 1] = 'err'; fields[#fields + 1] = err end
  if result ~= '' then fields[#fields + 1] = 'result'; fields[#fields + 1] = result end
  if batch ~= '' then fields[#fields + 1] = 'batch'; fields[#fields + 1] = batch end
  pc('hset', rk, unpack(fields))
  local own = tonumber(pc('hget', rk, 'keep') or '') or 0
  if own > keep then keep = own end
  if keep > 0 then pc('expire', rk, keep) end
  if final then announceEnd(prefix, id) end
end
