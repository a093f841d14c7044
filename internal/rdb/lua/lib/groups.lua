-- groups: grouped jobs (group.go; docs/redis-layout.md, "Grouped jobs"). A job enqueued into a
-- group (a job name and a group key) waits in the group's list, <ns>:group:<name>:{<group>}, as
-- "<arrival ms> <payload>", pushed at the tail, so the head is the oldest. <ns>:groups_due indexes
-- the groups with jobs waiting by the epoch second they are due ("<name>\n<group>"; +inf for a
-- group that only a full size flushes), and <ns>:group_conf holds each name's
-- "<max size> <max delay s> <grace s>" (0: not set), written by the pools. A flush takes up to max
-- size jobs from the head into one call job, pushed as a keyed job of the name with the group as its
-- key, so the keyed limits and turns apply to calls.
--
-- uses: keychecks, keyed
-- defines: groupConf, groupDue, groupIndex, groupCheck, groupFlush

-- GROUP_MAX_TAKE bounds a call's jobs when the name has no max size (a due flush takes the rest).
local GROUP_MAX_TAKE = 10000

-- groupConf returns a name's {size, delay, grace} (0: not set) from the conf hash, or nil when the
-- name has none (or a malformed one).
local function groupConf(confKey, name)
  local v = redis.pcall('hget', confKey, name)
  if type(v) ~= 'string' then return nil end
  local a, b, c = string.match(v, '^(%d+) (%d+) (%d+)$')
  if not a then return nil end
  return {size = tonumber(a), delay = tonumber(b), grace = tonumber(c)}
end

-- groupArrival is the arrival millisecond of a list entry (0 for an entry of another form).
local function groupArrival(entry)
  return tonumber(string.match(entry or '', '^(%d+) ') or '0') or 0
end

-- groupDue returns when the group list q is due, in epoch seconds (math.huge: never by time), or
-- nil when it is empty: the oldest job's arrival plus the max delay, or the newest's plus the
-- grace, whichever is sooner; without a conf, the oldest's plus defaultDelay seconds.
local function groupDue(q, conf, defaultDelay)
  local head = redis.call('lindex', q, 0)
  if not head then return nil end
  local oldest = groupArrival(head)
  if not conf then return math.ceil((oldest + defaultDelay * 1000) / 1000) end
  local due = math.huge
  if conf.delay > 0 then due = oldest + conf.delay * 1000 end
  if conf.grace > 0 then
    due = math.min(due, groupArrival(redis.call('lindex', q, -1)) + conf.grace * 1000)
  end
  if due == math.huge then return due end
  return math.ceil(due / 1000)
end

-- groupIndex sets the group's member in the due index (dueKey) to when q is due, or drops it when
-- q is empty; it publishes the time on the due channel when it is sooner than the member's was, so
-- that idle pools set their alarm.
local function groupIndex(dueKey, member, q, conf, defaultDelay, dueChannel)
  local due = groupDue(q, conf, defaultDelay)
  if not due then
    redis.call('zrem', dueKey, member)
    return
  end
  local old = tonumber(redis.call('zscore', dueKey, member) or '')
  if due == math.huge then
    redis.call('zadd', dueKey, '+inf', member)
    return
  end
  redis.call('zadd', dueKey, due, member)
  if not old or due < old then redis.call('publish', dueChannel, due) end
end

-- groupCheck returns nil when a call of name may be pushed for group (the name's keyed state is of
-- its types, the group's keyed queue a list), else a message; on a server without what keyed jobs
-- need, it stops the script with an error that says so.
local function groupCheck(prefix, name, group)
  local bad, why = keyedCheckMany(keyedKeys(prefix .. 'keyed:' .. name .. ':'), {{group, 0}})
  if bad == 0 then return why end
  return nil
end

-- groupFlush takes up to size jobs (all, up to GROUP_MAX_TAKE, when size is 0) from the head of q
-- and pushes them as one call job of name, keyed by group (checked by groupCheck). The call's ID is
-- the server's second and seqKey's next value in hex (24 digits); its payload is built by
-- concatenation, so each job's JSON is carried byte for byte. Returns how many jobs it took.
local function groupFlush(prefix, name, group, q, size, now, seqKey, wakeChannel)
  if size <= 0 then size = GROUP_MAX_TAKE end
  local entries = redis.call('lrange', q, 0, size - 1)
  if #entries == 0 then return 0 end
  redis.call('ltrim', q, #entries, -1)
  for i, e in ipairs(entries) do
    local sp = string.find(e, ' ', 1, true)
    entries[i] = string.sub(e, (sp or 0) + 1)
  end
  local id = string.format('%08x%016x', now, redis.call('incr', seqKey))
  local g = cjson.encode(group)
  local call = '{"name":' .. cjson.encode(name) .. ',"id":"' .. id .. '","t":' .. now ..
    ',"args":{"jobs":[' .. table.concat(entries, ',') .. ']},"key":' .. g .. ',"group":' .. g .. '}'
  keyedPush(keyedKeys(prefix .. 'keyed:' .. name .. ':'), group, name, {call}, 1, 1, wakeChannel)
  return #entries
end
