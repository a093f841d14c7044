-- Adds periodic jobs to the scheduled set for run-at times still in the future on the server's
-- clock, so a job already moved to its queue is never added a second time. Every pool writes the same
-- bytes for the same tick, so ZADD makes the add idempotent across pools.
--
-- keys: 2
-- uses: none
--
-- KEYS[1] scheduled set; KEYS[2] last_periodic_enqueue
-- ARGV[2i-1], ARGV[2i]: run-at score and payload of job i
--
-- Returns the number of jobs newly added.

local now = tonumber(redis.call('time')[1])
local added = 0
for i = 1, #ARGV, 2 do
  if tonumber(ARGV[i]) > now then
    added = added + redis.call('zadd', KEYS[1], ARGV[i], ARGV[i+1])
  end
end
redis.call('set', KEYS[2], now)
return added
