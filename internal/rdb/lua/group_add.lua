-- Adds jobs to their groups (lib/groups.lua), many in one call (the pushes that concurrent Enqueue
-- calls share): each job waits at the tail of its group's list, stamped with its arrival; while the
-- list holds the name's max size or more, a flush makes a call job of the oldest ones; then the
-- group's entry in the due index says when the rest is due. Entries run in order.
--
-- keys: varies
-- uses: keychecks, keyed, groups
--
-- KEYS[1] group_conf hash; KEYS[2] groups_due sorted set; KEYS[3] known_jobs set; KEYS[4] group_seq
--   counter; KEYS[4+i] entry i's group list (<ns>:group:<name>:{<group>})
-- ARGV[1] the namespace's prefix (<ns>:); ARGV[2] wake-up channel; ARGV[3] due channel; ARGV[4]
--   seconds a group of a name with no conf waits after its first job; then 3 per entry i, from
--   ARGV[3i+2]: the job's payload, job name, group key
--
-- Returns 2 values per entry, one entry after the other: calls pushed, jobs left waiting in the group.
-- An entry refused for a key of another type (a WRONGTYPE error naming it; nothing of that entry is
-- written) has its error in place of its calls, and 0 jobs; a call of one entry that fails returns
-- the error itself.

local confKey, dueKey, knownKey, seqKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local prefix, wakeChannel, dueChannel = ARGV[1], ARGV[2], ARGV[3]
local defaultDelay = tonumber(ARGV[4])
local t = redis.call('time')
local now = tonumber(t[1])
local stamp = (now * 1000 + math.floor(tonumber(t[2]) / 1000)) .. ' '
local confs = {} -- by job name: its conf, or false when it has none

local function add(q, payload, name, group)
  -- The push comes first, so that most adds cost a few commands; what fails after it takes the job
  -- back out (RPOP), so that nothing is written then.
  local n = redis.pcall('rpush', q, stamp .. payload)
  if type(n) ~= 'number' then
    return redis.error_reply('WRONGTYPE the key ' .. q .. ' holds another type; nothing was queued')
  end
  local conf = confs[name]
  if conf == nil then
    conf = groupConf(confKey, name) or false
    confs[name] = conf
  end
  conf = conf or nil
  local size = conf and conf.size or 0
  if n == 1 then
    -- The group's first job: the keys the group's state uses are checked once.
    for i, want in ipairs({'hash', 'zset', 'set', 'string'}) do
      if not isType(KEYS[i], want) then
        redis.call('rpop', q)
        return redis.error_reply('WRONGTYPE the key ' .. KEYS[i] .. ' holds another type; nothing was queued')
      end
    end
    redis.call('sadd', knownKey, name)
  end
  if size > 0 and n >= size then
    local why = groupCheck(prefix, name, group)
    if why then
      redis.call('rpop', q)
      return redis.error_reply('WRONGTYPE ' .. why .. '; nothing was queued')
    end
  end
  local calls = 0
  while size > 0 and n >= size do
    n = n - groupFlush(prefix, name, group, q, size, now, seqKey, wakeChannel)
    calls = calls + 1
  end
  -- The group's due time depends on its oldest job, and with a grace on its newest: it is unchanged
  -- by an add to a group that had jobs, was not flushed, and has no grace.
  if n == 1 or calls > 0 or (conf and conf.grace > 0) then
    groupIndex(dueKey, name .. '\n' .. group, q, conf, defaultDelay, dueChannel)
  end
  return calls, n
end

local out, entries = {}, #KEYS - 4
for i = 1, entries do
  local a, o = 3 * i + 2, 2 * i - 2
  local ok, calls, n = pcall(add, KEYS[4 + i], ARGV[a], ARGV[a + 1], ARGV[a + 2])
  if ok and type(calls) == 'table' then ok, calls = false, calls end
  if not ok then
    local err = calls
    if not (type(err) == 'table' and err.err) then err = redis.error_reply(tostring(err)) end
    if entries == 1 then return err end
    calls, n = err, 0
  end
  out[o + 1], out[o + 2] = calls, n
end
return out
