-- Flushes due groups (lib/groups.lua): each member of the due index given that is still due makes
-- call jobs of its group's jobs, up to the name's max size each, while the rest is due too (the
-- grace after the newest job passed, say), at most 100 calls a group per run; the group is then
-- indexed again by when its rest is due, or leaves the index when it is empty. A member no longer due
-- (flushed by another pool, or by an add that filled the group) is left alone; one whose group is not
-- due under the name's current settings (a pool changed them: RegisterPool) is indexed again.
--
-- keys: 3
-- uses: keychecks, keyed, groups
--
-- KEYS[1] groups_due sorted set; KEYS[2] group_conf hash; KEYS[3] group_seq counter
-- ARGV[1] the namespace's prefix (<ns>:); ARGV[2] wake-up channel; ARGV[3] due channel; ARGV[4]
--   seconds a group of a name with no conf waits after its first job; ARGV[5..] members of the due
--   index ("<name>\n<group>")
--
-- Returns {calls pushed, jobs taken, groups left alone for a key of another type}.

local prefix, defaultDelay = ARGV[1], tonumber(ARGV[4])
local now = tonumber(redis.call('time')[1])
local calls, taken, skipped = 0, 0, 0
for i = 5, #ARGV do
  local member = ARGV[i]
  local score = tonumber(redis.call('zscore', KEYS[1], member) or '')
  local nl = string.find(member, '\n', 1, true)
  if score and score <= now and nl then
    local name, group = string.sub(member, 1, nl - 1), string.sub(member, nl + 1)
    local q = prefix .. 'group:' .. name .. ':{' .. group .. '}'
    local conf = groupConf(KEYS[2], name)
    if groupCheck(prefix, name, group) or not isType(q, 'list') then
      -- Left for a person to mend; looked at again in a minute rather than on every pass.
      redis.call('zadd', KEYS[1], now + 60, member)
      skipped = skipped + 1
    elseif (groupDue(q, conf, defaultDelay) or 0) > now then
      -- Not due under the name's settings now (they changed since it was indexed): index it again.
      groupIndex(KEYS[1], member, q, conf, defaultDelay, ARGV[3])
    else
      local size = conf and conf.size or 0
      for _ = 1, 100 do
        local n = groupFlush(prefix, name, group, q, size, now, KEYS[3], ARGV[2])
        if n == 0 then break end
        calls, taken = calls + 1, taken + n
        local due = groupDue(q, conf, defaultDelay)
        if not due or due > now then break end
      end
      groupIndex(KEYS[1], member, q, conf, defaultDelay, ARGV[3])
    end
  elseif score and score <= now then
    redis.call('zrem', KEYS[1], member) -- not of the form any enqueue writes
  end
end
return {calls, taken, skipped}
