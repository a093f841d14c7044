-- Adds a job to its group (lib/groups.lua): the job waits at the tail of the group's list, stamped
-- with its arrival; while the list holds the name's max size or more, a flush makes a call job of
-- the oldest ones; then the group's entry in the due index says when the rest is due.
--
-- keys: 5
-- uses: keychecks, keyed, groups
--
-- KEYS[1] the group's list (<ns>:group:<name>:{<group>}); KEYS[2] group_conf hash; KEYS[3]
--   groups_due sorted set; KEYS[4] known_jobs set; KEYS[5] group_seq counter
-- ARGV[1] the job's payload; ARGV[2] job name; ARGV[3] group key; ARGV[4] the namespace's prefix
--   (<ns>:); ARGV[5] wake-up channel; ARGV[6] due channel; ARGV[7] seconds a group of a name with no
--   conf waits after its first job
--
-- Returns {calls pushed, jobs left waiting in the group}.
-- Errors: WRONGTYPE naming a key of another type; nothing is written then.

local name, group, prefix = ARGV[2], ARGV[3], ARGV[4]
local defaultDelay = tonumber(ARGV[7])
local t = redis.call('time')
local now = tonumber(t[1])
-- The push comes first, so that most adds cost a few commands; what fails after it takes the job
-- back out (RPOP), so that nothing is written then.
local n = redis.pcall('rpush', KEYS[1], (now * 1000 + math.floor(tonumber(t[2]) / 1000)) .. ' ' .. ARGV[1])
if type(n) ~= 'number' then
  return redis.error_reply('WRONGTYPE the key ' .. KEYS[1] .. ' holds another type; nothing was queued')
end
local conf = groupConf(KEYS[2], name)
local size = conf and conf.size or 0
if n == 1 then
  -- The group's first job: the keys the group's state uses are checked once.
  for i, want in ipairs({'hash', 'zset', 'set', 'string'}) do
    if not isType(KEYS[i + 1], want) then
      redis.call('rpop', KEYS[1])
      return redis.error_reply('WRONGTYPE the key ' .. KEYS[i + 1] .. ' holds another type; nothing was queued')
    end
  end
  redis.call('sadd', KEYS[4], name)
end
if size > 0 and n >= size then
  local why = groupCheck(prefix, name, group)
  if why then
    redis.call('rpop', KEYS[1])
    return redis.error_reply('WRONGTYPE ' .. why .. '; nothing was queued')
  end
end
local calls = 0
while size > 0 and n >= size do
  n = n - groupFlush(prefix, name, group, KEYS[1], size, now, KEYS[5], ARGV[5])
  calls = calls + 1
end
-- The group's due time depends on its oldest job, and with a grace on its newest: it is unchanged
-- by an add to a group that had jobs, was not flushed, and has no grace.
if n == 1 or calls > 0 or (conf and conf.grace > 0) then
  groupIndex(KEYS[3], name .. '\n' .. group, KEYS[1], conf, defaultDelay, ARGV[6])
end
return {calls, n}
