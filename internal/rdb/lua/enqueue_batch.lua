-- Queues many payloads at once, after checking that every queue key is a list (or missing), so that
-- it either queues them all or none.
--
-- keys: varies
-- uses: keychecks
--
-- KEYS[1] known_jobs set; KEYS[1+i] the queue of job name i
-- ARGV[1] wake-up channel; ARGV[2i], ARGV[2i+1] job name i and how many payloads it has;
--   then the payloads, job name by job name
--
-- Returns the number of payloads queued.
-- Errors: WRONGTYPE naming a queue key of the wrong type; nothing is queued then.

for i = 2, #KEYS do
  if not isType(KEYS[i], 'list') then
    return redis.error_reply('WRONGTYPE the queue key ' .. KEYS[i] .. ' holds another type; nothing was queued')
  end
end
local n = #KEYS - 1
local at = 2 + 2 * n
local total = 0
for i = 1, n do
  local name, count = ARGV[2*i], tonumber(ARGV[2*i+1])
  redis.call('sadd', KEYS[1], name)
  local done = 0
  while done < count do
    local chunk = math.min(count - done, 1000)
    redis.call('lpush', KEYS[1+i], unpack(ARGV, at + done, at + done + chunk - 1))
    done = done + chunk
  end
  at = at + count
  total = total + count
  redis.call('publish', ARGV[1], name)
end
return total
