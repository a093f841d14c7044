-- Enqueues jobs that wait for others: each gets a record (whose 'after' lists the jobs it waits for),
-- and is queued once every job and batch it names has succeeded (at once if they all have).
-- Dependencies are checked before anything is written, so an unknown one changes nothing. A job of
-- the call may name an earlier job of the same call (a chain).
--
-- keys: varies
-- uses: keychecks, keyed, workflow
--
-- KEYS[1] known_jobs
-- ARGV[1] namespace prefix; ARGV[2] wake-up channel; ARGV[3] number of jobs; then per job: ID, job
--   name, payload, keep seconds, policy ('dead' or 'run'), key ("" for none: a keyed job goes to its
--   key's queue or the lane, and its record keeps the key while it waits), dependency count d, then d
--   dependencies, each 'j:<job ID>' or 'b:<batch ID>'
--
-- Returns per job its state: 'queued', 'waiting' or 'dead' (a dependency had died and the policy
-- is dead).
-- Errors: WORKDEP unknown <dependency> (no record: never tracked, or expired), WRONGTYPE.

local prefix, channel, n = ARGV[1], ARGV[2], tonumber(ARGV[3])
local jobs, a = {}, 4
for i = 1, n do
  local j = {id = ARGV[a], name = ARGV[a+1], payload = ARGV[a+2], keep = ARGV[a+3], policy = ARGV[a+4],
    key = ARGV[a+5], deps = {}}
  local d = tonumber(ARGV[a+6])
  for k = 1, d do j.deps[k] = ARGV[a+6+k] end
  a = a + 7 + d
  jobs[i] = j
end
-- Check every dependency first.
local mine = {}
for _, j in ipairs(jobs) do
  local q = prefix .. 'jobs:' .. j.name
  if j.key ~= '' then
    local k = keyedKeys(prefix .. 'keyed:' .. j.name .. ':')
    if not keyedTypesOK(k) then return redis.error_reply('WRONGTYPE a key of ' .. k.p .. '* holds another type') end
    q = keyedQueue(k, j.key)
  end
  if not isType(q, 'list') then
    return redis.error_reply('WRONGTYPE the queue key ' .. q .. ' holds another type')
  end
  for _, dep in ipairs(j.deps) do
    local kind, did = string.sub(dep, 1, 1), string.sub(dep, 3)
    if not (kind == 'j' and mine[did]) then
      local key = prefix .. (kind == 'b' and 'batch:' or 'job:') .. did
      if not isType(key, 'hash') then return redis.error_reply('WRONGTYPE the key ' .. key .. ' holds another type') end
      if not redis.call('hget', key, 'state') then return redis.error_reply('WORKDEP unknown ' .. dep) end
    end
  end
  mine[j.id] = true
end
local now = tonumber(redis.call('time')[1])
local out = {}
for i, j in ipairs(jobs) do
  local waiting, failed = 0, nil
  for _, dep in ipairs(j.deps) do
    local kind, did = string.sub(dep, 1, 1), string.sub(dep, 3)
    local key = prefix .. (kind == 'b' and 'batch:' or 'job:') .. did
    local state = redis.call('hget', key, 'state')
    if kind == 'b' then
      if state == 'complete' then
        local c = tonumber(redis.call('hget', key, 'c') or '0') or 0
        if c >= WK then failed = failed or ('batch ' .. did .. ' had dead members') end
      else
        waiting = waiting + 1
        redis.call('rpush', key .. ':next', j.id)
      end
    elseif state == 'done' then
    elseif state == 'dead' or state == 'dropped' then
      failed = failed or ('job ' .. did .. ' ' .. state)
    else
      waiting = waiting + 1
      redis.call('rpush', key .. ':next', j.id)
    end
  end
  local rk = prefix .. 'job:' .. j.id
  redis.call('sadd', KEYS[1], j.name)
  -- The jobs it waits for, for Job.DependencyResults.
  local after = {}
  for _, dep in ipairs(j.deps) do
    if string.sub(dep, 1, 1) == 'j' then after[#after + 1] = string.sub(dep, 3) end
  end
  if #after > 0 then redis.call('hset', rk, 'after', table.concat(after, ',')) end
  if failed and j.policy ~= 'run' then
    local why = 'dependency failed: ' .. failed
    redis.call('zadd', prefix .. 'dead', now, deadForm(j.payload, why, now))
    redis.call('hset', rk, 'name', j.name, 'state', 'dead', 'enqueued_at', now, 'finished_at', now, 'err', why, 'keep', j.keep)
    redis.call('expire', rk, tonumber(j.keep))
    announceEnd(prefix, j.id)
    settle(prefix, rk .. ':next', false, 'job ' .. j.id .. ' did not run', now, channel)
    out[i] = 'dead'
  elseif waiting > 0 then
    redis.call('hset', rk, 'name', j.name, 'state', 'waiting', 'enqueued_at', now, 'keep', j.keep,
      'payload', j.payload, 'deps', waiting, 'policy', j.policy)
    if j.key ~= '' then redis.call('hset', rk, 'key', j.key) end
    out[i] = 'waiting'
  else
    redis.call('hset', rk, 'name', j.name, 'state', 'queued', 'enqueued_at', now, 'keep', j.keep)
    pushJob(prefix, j.name, j.payload, channel, now, j.key)
    out[i] = 'queued'
  end
end
return out
