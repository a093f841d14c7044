-- scan: answers "what is waiting?" for a pool's sets and queues. An idle namespace costs one EXISTS
-- (an empty set or list does not exist), whatever the number of queues; TIME is read only when needed.
--
-- uses: none
-- defines: scan
--
-- scan(s, e, now) looks at KEYS[s..s+4] (the timed sets: scheduled, retry, batches_expiry, whose
-- members are batches that leave the batch index when due, groups_due, whose members are groups
-- of grouped jobs to flush, and debounces, whose members are bursts of debounced enqueues whose job
-- is to move into the scheduled set) and the queues KEYS[s+5..e]; now is the
-- server's clock in epoch seconds, or nil to read it when needed. It leaves schedules:due out: only
-- this library writes it, and says when it makes a schedule due sooner (the due channel), so a pool
-- reads it when it (re)subscribes and when a schedule is due, and an idle pool pays nothing for
-- schedules.
--
-- It returns {due, i...}: due is -1 when the timed sets are empty, else the whole seconds until
-- their earliest member is due, less one (0: due within a second; at most 3600, a look comes sooner
-- anyway), so that the requeuer's pass then, early by up to a second, learns the due time to the
-- millisecond (due.lua) instead of coming up to a second late; each i (1-based from KEYS[s+5]) is a
-- queue that holds jobs.
local function scan(s, e, now)
  local out = {-1}
  local total = 0
  for i = s, e, 1000 do total = total + redis.call('exists', unpack(KEYS, i, math.min(i + 999, e))) end
  if total == 0 then return out end
  local sets = redis.call('exists', KEYS[s], KEYS[s + 1], KEYS[s + 2], KEYS[s + 3], KEYS[s + 4])
  if sets > 0 then
    now = now or tonumber(redis.call('time')[1])
    for i = s, s + 4 do
      local m = redis.pcall('zrange', KEYS[i], 0, 0, 'WITHSCORES')
      local at = type(m) == 'table' and tonumber(m[2])
      if at then
        local d = at - now - 1
        -- Scores are anyone's to write: NaN, negative and huge ones are clamped.
        if d ~= d or d < 0 then d = 0 elseif d > 3600 then d = 3600 end
        d = math.floor(d)
        if out[1] < 0 or d < out[1] then out[1] = d end
      end
    end
  end
  local lists = total - sets
  for i = s + 5, e do
    if lists <= 0 then break end
    local n = redis.pcall('llen', KEYS[i])
    -- A sorted set of keyed jobs (keys ready, keys delayed) is counted as a queue.
    if type(n) ~= 'number' then n = redis.pcall('zcard', KEYS[i]) end
    if type(n) ~= 'number' then
      lists = lists - 1 -- a key of another type exists too: counted off, not reported
    elseif n > 0 then
      out[#out + 1] = i - s - 4
      lists = lists - 1
    end
  end
  return out
end
